"""``rag chat``: a conversation with the notes in the terminal, on named threads that last.

Every question runs the graph ``rag ask`` runs, on a LangGraph thread whose checkpoints live
in a local SQLite file beside the default index (``$XDG_DATA_HOME/notes-rag/chats.sqlite``).
The graph's ``messages`` channel holds the conversation, so ``retrieve`` rewrites a follow-up
from it and ``rag chat --thread NAME`` resumes it after a restart.

Lines starting with ``/`` are commands (``/help``). Ctrl-C during an answer stops that answer
and leaves its question out of the thread; at the prompt it clears the line. Ctrl-D or
``/quit`` leaves with exit status 0. On a terminal, lines are edited with readline and kept
in ``$XDG_STATE_HOME/notes-rag/chat_history``.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.cli import output
from app.cli.output import say, warn
from graph.context import default_chroma_dir
from graph.errors import ConfigError, RagError, find_cause
from graph.index.private import app_folder, private_file
from graph.stopping import Stop

if TYPE_CHECKING:
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.types import StateSnapshot

    from graph.context import Context
    from graph.models import ModelProvider

#: The prompt on a terminal; piped input gets none, so stdout holds only the answers.
PROMPT = "> "
#: Lines of input history kept across sessions.
HISTORY_LINES = 1000
#: The commands, as ``/help`` shows them.
HELP = """\
/sources      the notes the last answer came from
/new [NAME]   start a new conversation (named after the time unless NAME is given)
/quit         leave (Ctrl-D too); `rag chat --thread NAME` resumes a conversation
Ctrl-C stops an answer; the arrow keys edit the line and recall earlier ones."""
COMMAND_NAMES = ("/help", "/sources", "/new", "/quit", "/exit")


def add_chat_parser(commands: Any) -> argparse.ArgumentParser:
    """The ``chat`` subcommand's parser, added to ``commands`` (``add_subparsers``' result)."""
    chat = commands.add_parser(
        "chat", help="a conversation with your notes in the terminal (kept, resumable)"
    )
    which = chat.add_mutually_exclusive_group()
    which.add_argument(
        "-t",
        "--thread",
        metavar="NAME",
        help="resume the conversation NAME, or start one under that name",
    )
    which.add_argument(
        "-c",
        "--continue",
        dest="resume",
        action="store_true",
        help="resume the latest conversation",
    )
    which.add_argument(
        "--list",
        action="store_true",
        help="list the conversations: name, time, questions and the last one",
    )
    chat.add_argument(
        "-v", "--verbose", action="store_true", help="show the path through the graph"
    )
    return chat


def chats_file() -> Path:
    """The conversations' SQLite file, beside the default index in the XDG data folder."""
    return Path(default_chroma_dir()).parent / "chats.sqlite"


def history_file() -> Path:
    """The input history (``$XDG_STATE_HOME``: history is state, not data, for XDG)."""
    return app_folder("XDG_STATE_HOME") / "chat_history"


def new_thread_name(taken: set[str], now: datetime | None = None) -> str:
    """A name after the local time (``2026-11-30-1405``), with a suffix if it is taken."""
    base = (now or datetime.now()).strftime("%Y-%m-%d-%H%M")
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    return name


def checked_name(name: str) -> str:
    """A thread name as given, if it is one: non-empty printable text."""
    name = name.strip()
    if not name or output.terminal_text(name) != name:
        raise ConfigError(f"a conversation's name is printable text, got {name!r}")
    return name


class AnswerStopped(Exception):
    """Raised inside a run, by :class:`StopSwitch`, once Ctrl-C asked to stop the answer."""


class StopSwitch(Stop):
    """Ends a run at its next step, model call or token once :meth:`request` is called.

    LangGraph waits for a run's running tasks before its stream ends, so without this a
    stopped answer would still be generated to the end, unseen. Raising from a callback
    (``raise_error``) ends the task in the thread that does the work; as a
    ``graph.stopping.Stop`` it also aborts the model call in flight, which may be reading
    its prompt for seconds before its first token.
    """

    raise_error = True

    def __init__(self) -> None:
        super().__init__()
        self.requested = threading.Event()

    def request(self) -> None:
        """Stop the answer: the call in flight is aborted, the run ends at its next step."""
        self.requested.set()
        self.stop()

    def _check(self, *args: Any, **kwargs: Any) -> None:
        if self.requested.is_set():
            raise AnswerStopped

    on_chain_start = _check
    on_chat_model_start = _check
    on_llm_start = _check
    on_llm_new_token = _check


class _QuietStop(logging.Filter):
    """Drops langchain's warning that a callback raised, for :class:`StopSwitch` only.

    langchain logs every callback error before re-raising it; unconfigured, Python's
    last-resort handler would print that warning under each stopped answer.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return f"Error in {StopSwitch.__name__}." not in record.getMessage()


@contextmanager
def ctrl_c_stops(switch: StopSwitch) -> Iterator[None]:
    """While answering, Ctrl-C flips ``switch``; a second Ctrl-C interrupts as usual."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread can handle signals
        return

    def handler(signum: int, frame: Any) -> None:
        if switch.requested.is_set():
            raise KeyboardInterrupt
        switch.request()

    previous = signal.signal(signal.SIGINT, handler)
    callbacks_log, quiet = logging.getLogger("langchain_core.callbacks.manager"), _QuietStop()
    callbacks_log.addFilter(quiet)
    try:
        yield
    finally:
        callbacks_log.removeFilter(quiet)
        signal.signal(signal.SIGINT, previous)


def complete_command(text: str, state: int) -> str | None:
    """Readline's completer: the ``state``-th command starting with ``text``."""
    matches = [name for name in COMMAND_NAMES if name.startswith(text)]
    return matches[state] if state < len(matches) else None


@contextmanager
def line_editing(enabled: bool) -> Iterator[None]:
    """Readline editing and a history kept across sessions, when a person types the input."""
    if not enabled:
        yield
        return
    try:
        import readline
    except ImportError:  # a Python built without readline: plain input still works
        yield
        return
    path = history_file()
    try:
        readline.read_history_file(path)
    except OSError:  # no history yet, or unreadable: start without
        pass
    readline.set_completer(complete_command)
    readline.set_completer_delims(" \t\n")
    readline.parse_and_bind("tab: complete")
    start = readline.get_current_history_length()
    try:
        yield
    finally:
        added = readline.get_current_history_length() - start
        try:
            private_file(path)  # the questions asked; readline appends only to a file that exists
            readline.set_history_length(HISTORY_LINES)  # append_history_file truncates to it
            readline.append_history_file(added, path)
        except OSError as exc:
            warn(f"rag: could not keep the input history in {path}: {exc}")


def thread_names(saver: SqliteSaver) -> list[str]:
    """Every conversation in the store, the most recently active first."""
    # The saver has no call listing threads; its table is keyed by thread, and checkpoint
    # ids (uuid6) sort by time.
    with saver.cursor(transaction=False) as cursor:
        cursor.execute(
            "SELECT thread_id FROM checkpoints WHERE checkpoint_ns = '' "
            "GROUP BY thread_id ORDER BY MAX(checkpoint_id) DESC"
        )
        return [row[0] for row in cursor.fetchall()]


def questions_of(snapshot: StateSnapshot) -> list[str]:
    """The questions asked on a thread, in order."""
    from langchain_core.messages import HumanMessage

    from graph.llm import message_text

    messages = snapshot.values.get("messages", [])
    return [message_text(m) for m in messages if isinstance(m, HumanMessage)]


def when(snapshot: StateSnapshot) -> str:
    """The local time of a thread's last checkpoint."""
    if not snapshot.created_at:
        return "?"
    return datetime.fromisoformat(snapshot.created_at).astimezone().strftime("%Y-%m-%d %H:%M")


def one_line(text: str, width: int = 80) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


class Chat:
    """One terminal session: the thread it is on, and the commands and questions typed."""

    def __init__(
        self, app: Any, saver: SqliteSaver, context: Context, args: argparse.Namespace
    ) -> None:
        self.app = app
        self.saver = saver
        self.context = context
        self.verbose = args.verbose
        self.interactive = output.interactive()
        self.thread = ""
        self.cited = False
        """Whether the current answer's sources were named as soon as it was written."""

    def config(self) -> dict[str, Any]:
        """The thread's config (its newest checkpoint)."""
        return {"configurable": {"thread_id": self.thread}}

    def snapshot(self) -> StateSnapshot:
        """The thread's state now."""
        return self.app.get_state(self.config())

    def switch_to(self, name: str) -> None:
        """Continue on thread ``name``, saying whether it is new or resumed."""
        self.thread = name
        state = self.snapshot()
        asked = questions_of(state)
        if not asked:
            warn(f"new conversation '{name}' (/help lists commands; Ctrl-D leaves)")
            return
        warn(
            f"resuming '{name}': {len(asked)} question(s), the last on {when(state)}: "
            f"{one_line(asked[-1])}"
        )

    def run(self) -> int:
        """Read and answer lines until Ctrl-D or ``/quit``."""
        with line_editing(self.interactive):
            while True:
                try:
                    line = output.ask(PROMPT if self.interactive else "").strip()
                except EOFError:
                    if self.interactive:
                        say()  # the shell's prompt starts on a line of its own
                    return 0
                except KeyboardInterrupt:  # at the prompt: drop the line, as shells do
                    say()
                    continue
                if not line:
                    continue
                if line.startswith("/"):
                    if not self.command(line):
                        return 0
                    continue
                self.answer(line)

    def command(self, line: str) -> bool:
        """Do ``/command``; False when it ends the session."""
        name, _, rest = line.partition(" ")
        if name in ("/quit", "/exit"):
            return False
        if name == "/help":
            say(HELP)
        elif name == "/sources":
            self.show_sources()
        elif name == "/new":
            try:
                chosen = checked_name(rest) if rest.strip() else None
            except ConfigError as exc:  # a typo in a name need not end the session
                output.error(str(exc))
                return True
            self.switch_to(chosen or new_thread_name(set(thread_names(self.saver))))
        else:
            warn(f"unknown command {name}: /help lists the commands")
        return True

    def show_sources(self) -> None:
        """The sources of the thread's last answer (kept in its state, so after a resume too)."""
        values = self.snapshot().values
        if not values.get("answer"):
            say("no answer yet in this conversation")
            return
        sources = values.get("sources") or []
        if not sources:
            say("the last answer cites no notes")
        output.sources(sources)

    def answer(self, question: str) -> None:
        """Stream the answer to ``question``; a stopped or failed turn leaves no trace."""
        from graph.state import unstreamed_tail

        before = self.snapshot()
        switch = StopSwitch()
        try:
            with ctrl_c_stops(switch):
                final, streamed = self.stream(question, switch)
            if switch.requested.is_set():  # finished before a callback could stop it
                raise AnswerStopped
        except Exception as exc:
            self.forget_turn(before)
            if switch.requested.is_set() or find_cause(exc, AnswerStopped):
                say()
                warn("[stopped; the question is left out of the conversation]")
                return
            cause = find_cause(exc, RagError)
            if cause is None or not self.interactive:
                raise  # piped input stops at the first failure, with its exit status
            output.error(str(cause))  # a person reads it and may ask again
            return
        if not streamed:
            say(final.get("answer", ""))
        elif tail := unstreamed_tail(final.get("answer") or "", streamed):
            say(f"\n{tail}")
        if (sources := final.get("sources")) and not self.cited:
            warn(sources_note(sources))

    def stream(self, question: str, switch: StopSwitch) -> tuple[dict[str, Any], str]:
        """Run the graph on the thread, printing answer tokens as they come (as ``rag ask``).

        Returns the final state and the answer text shown while streaming (its line ended).
        On a terminal a status line says what the graph is doing meanwhile; the number of
        sources is said once the answer is written, while it is checked (``cited``).
        """
        from graph.llm import ReasoningFilter
        from graph.progress import describe
        from graph.state import NEW_RUN
        from graph.tracing import run_config

        config: Any = {
            **run_config(self.context, entry_point="rag chat"),
            **self.config(),
            "callbacks": [switch],
        }
        modes: Any = ["custom", "messages", "values"] + (["updates"] if self.verbose else [])
        final: dict[str, Any] = {}
        streamed = ""
        line_open = False
        self.cited = False
        filters: dict[str, ReasoningFilter] = {}  # one per answering node
        payload: Any
        with output.StatusLine() as status:
            for mode, payload in self.app.stream(
                {"question": question}, config, context=self.context, stream_mode=modes
            ):
                if switch.requested.is_set():
                    status.hide()
                    continue  # Ctrl-C: nothing more is shown while the run unwinds
                if mode == "values":
                    final = payload
                elif mode == "custom":
                    if payload["stage"] == "written" and streamed:
                        status.hide()
                        if line_open:
                            say()
                            line_open = False
                        if sources := payload.get("sources"):
                            warn(sources_note(sources))
                        self.cited = True
                    status.show(describe(payload))
                elif mode == "messages":
                    text = output.answer_piece(payload, filters, status, self.context.show_thinking)
                    if text:
                        streamed += text
                        line_open = not text.endswith("\n")
                elif mode == "updates":
                    for update in payload.values():
                        for step in (update or {}).get("steps", []):
                            if step == NEW_RUN:
                                continue
                            with status.above():
                                if line_open:  # a step after the answer: a line of its own
                                    say()
                                    line_open = False
                                warn(f"  [{step}]")
        if line_open and not switch.requested.is_set():  # a stopped answer's line: answer()
            say()
        return final, streamed

    def forget_turn(self, before: StateSnapshot) -> None:
        """Put the thread back as it was before an unfinished question.

        Its newest checkpoint becomes a copy of the one before the question, so the next
        question and a later resume see only finished turns.
        """
        if before.created_at is None:  # the thread's first question: no thread before it
            self.saver.delete_thread(self.thread)
        else:
            self.app.update_state(before.config, None, as_node="__copy__")


def sources_note(sources: list[Any]) -> str:
    """What ``rag chat`` says of an answer's sources (``/sources`` lists them)."""
    return f"({len(sources)} source(s): /sources lists them)"


def list_threads(app: Any, saver: SqliteSaver) -> int:
    """``rag chat --list``: name, time of the last turn, questions asked, the last question."""
    names = thread_names(saver)
    if not names:
        say("no conversations yet: `rag chat` starts one")
    for name in names:
        state = app.get_state({"configurable": {"thread_id": name}})
        asked = questions_of(state)
        last = one_line(asked[-1]) if asked else ""
        say(f"{name}\t{when(state)}\t{len(asked)} question(s)\t{last}")
    return 0


def cmd_chat(args: argparse.Namespace, models: ModelProvider) -> int:
    """``rag chat``: open the conversations' store, pick the thread, then chat."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from app.cli.settings import make_context
    from graph.builder import build_graph
    from graph.index.vectorstore import with_embedding_model

    context = make_context(args)
    name = checked_name(args.thread) if args.thread is not None else None
    path = private_file(chats_file())  # questions, answers and the notes they cite
    with SqliteSaver.from_conn_string(str(path)) as saver:
        app = build_graph(checkpointer=saver, models=models)
        if args.list:
            return list_threads(app, saver)
        chat = Chat(app, saver, with_embedding_model(context), args)
        taken = thread_names(saver)
        if name is None:
            name = taken[0] if args.resume and taken else new_thread_name(set(taken))
        chat.switch_to(name)
        return chat.run()
