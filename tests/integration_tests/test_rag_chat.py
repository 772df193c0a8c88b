"""`rag chat` through a pseudo-terminal: the real console script, readline, the SQLite store.

A person's keys go in (Enter, Ctrl-A, the up arrow, Ctrl-C, Ctrl-D) and what the terminal
would show comes out; the stand-in answers every model call with a fixed text, so each
answer is recognisable. Reads wait for what is expected with a deadline, never a sleep.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import stat
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from graph.builder import build_graph
from tests.integration_tests.conftest import ERASED, ROOT, rag, rag_on_terminal, said_in_order

RAG = Path(sys.executable).parent / "rag"
#: Escape sequences (CSI, OSC, two-character ones) and carriage returns a terminal acts on.
TERMINAL_CODES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[=>()][0-9A-B]?|\r")
#: Every model call answers this: the grader reads "Yes", so each retrieved chunk is kept.
ONE = "Yes: practise on a real whiteboard."
TWO = "Yes: use the STAR method."
THREE = "Yes: tell a story with a result."
CTRL_A, CTRL_C, CTRL_D, UP = "\x01", "\x03", "\x04", "\x1b[A"


def _controlling_terminal() -> None:
    """In the child: make its pseudo-terminal (fd 0) the session's controlling terminal,
    so Ctrl-C becomes SIGINT as it does in a shell, and start it with the signal handling a
    shell gives a program: the test worker's own (``tests/cli_launcher.py`` ignores SIGCHLD
    in it) is inherited across exec otherwise."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    for number in (signal.SIGINT, signal.SIGCHLD):
        signal.signal(number, signal.SIG_DFL)


def _readable(fd: int, seconds: float) -> bool:
    """Whether ``fd`` has something to read within ``seconds``. poll(), not select(): a
    test worker with a browser and servers open has descriptors above select's 1024."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(seconds * 1000))


class Terminal:
    """`rag chat ARGS` on a pseudo-terminal: keys typed in, the screen's text read out."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        primary, secondary = os.openpty()
        fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))
        self.proc = subprocess.Popen(
            [str(RAG), "chat", *args],
            stdin=secondary,
            stdout=secondary,
            stderr=secondary,
            env=env,
            cwd=ROOT,
            start_new_session=True,
            preexec_fn=_controlling_terminal,
        )
        os.close(secondary)
        self.fd = primary
        self.raw = ""  # everything written to the terminal
        self.mark = 0  # where in the screen's text the next expect() starts looking

    @property
    def screen(self) -> str:
        """The text shown, without terminal codes (removed from the whole: a read may cut
        a code in two) and without what was erased."""
        return TERMINAL_CODES.sub("", ERASED.sub("", self.raw))

    def _read(self, seconds: float) -> bool:
        if not _readable(self.fd, seconds):
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the command has exited and closed the terminal
            return False
        if not data:
            return False
        self.raw += data.decode(errors="replace")
        return True

    def expect(self, text: str, timeout: float = 120) -> str:
        """Wait until ``text`` is shown after the last match; returns what came before it."""
        deadline = time.monotonic() + timeout
        while text not in self.screen[self.mark :]:
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(min(left, 1.0)):
                pytest.fail(f"{text!r} never shown; the terminal showed:\n{self.screen}")
        screen = self.screen
        found = screen.index(text, self.mark)
        before, self.mark = screen[self.mark : found], found + len(text)
        return before

    def prompt(self) -> str:
        """Wait for the prompt at the start of a line; returns what was shown before it."""
        return self.expect("\n> ")

    def ask(self, keys: str) -> str:
        """Type a line and wait for the next prompt; returns what was shown in between."""
        self.type(keys)
        return self.prompt()

    def type(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def interrupt_prompt(self) -> str:
        """Ctrl-C at the prompt; returns what was shown before the next prompt.

        CPython's readline looks for a signal only when its wait for a key is interrupted,
        so a Ctrl-C that lands in the microseconds between drawing the prompt and starting
        that wait is seen at the next signal. A person cannot type that fast; this test can,
        when its read of the prompt preempts the command. So a Ctrl-C that shows nothing
        within a few seconds is sent once more: the two make one KeyboardInterrupt.
        """
        # A person's Ctrl-C comes long after the prompt is drawn: so does this one. Sent at
        # once, on a loaded machine (a langgraph dev starting beside it), it could land in
        # that window, and the process was seen to end instead of drawing a fresh prompt.
        time.sleep(0.5)
        self.type(CTRL_C)
        deadline = time.monotonic() + 5
        while "\n> " not in self.screen[self.mark :] and time.monotonic() < deadline:
            if not self._read(0.2):
                break
        if "\n> " not in self.screen[self.mark :]:
            self.type(CTRL_C)
        return self.prompt()

    def exit_status(self, timeout: float = 60) -> int | None:
        """The command's exit status once it has exited (None if it has not in time)."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self._read(0.2)
        while _readable(self.fd, 0) and self._read(0):
            pass  # what it wrote last
        return self.proc.poll()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def terminal(tmp_path, ollama_url, workdir, loaded_notes):
    """Starts `rag chat` on the loaded sample notes, in a data and state folder of its own."""
    env = {
        **os.environ,
        "OLLAMA_HOST": ollama_url,
        "XDG_DATA_HOME": str(tmp_path / "data"),  # the conversations' store
        "XDG_STATE_HOME": str(tmp_path / "state"),  # the input history
        "XDG_CACHE_HOME": str(workdir / "cache"),
        "PYTHONPATH": str(ROOT),
        "TERM": "xterm",
        "INPUTRC": "/dev/null",  # no key bindings of the machine's
    }
    index = ["-n", "notes", "--persist-dir", str(workdir / "data" / "notes-rag" / "chroma")]
    started: list[Terminal] = []

    def start(*args: str) -> Terminal:
        term = Terminal([*args, *index, "--threshold", "0", "-k", "2", "-v"], env)
        started.append(term)
        return term

    yield start
    for term in started:
        term.close()


def conversation(tmp_path: Path, thread: str) -> list[tuple[str, str]]:
    """The thread as the store keeps it: (kind, text) of each message."""
    store = tmp_path / "data" / "notes-rag" / "chats.sqlite"
    with SqliteSaver.from_conn_string(str(store)) as saver:
        state = build_graph(checkpointer=saver).get_state({"configurable": {"thread_id": thread}})
    return [(m.type, m.content) for m in state.values.get("messages", [])]


def test_two_questions_on_a_thread_resumed_after_a_restart_and_ctrl_d_exits_0(
    terminal, faults, tmp_path, ollama_url, workdir
):
    faults(reply=ONE)
    chat = terminal("-t", "daily")
    chat.expect("new conversation 'daily'")
    chat.prompt()
    # readline edits the line: Ctrl-A goes back to its start before the rest is typed
    turn = chat.ask(f"practise whiteboarding{CTRL_A}How do I \r")
    assert f"\n{ONE}\n" in turn, chat.screen  # the answer, on a line of its own
    faults(reply=TWO)
    turn = chat.ask("and what about behavioral questions?\r")
    assert "[retrieve: rewrote follow-up as" in turn  # the first turn is the history
    assert f"\n{TWO}\n" in turn and "(2 source(s): /sources lists them)" in turn
    chat.type(CTRL_D)
    assert chat.exit_status() == 0, chat.screen
    assert conversation(tmp_path, "daily") == [
        ("human", "How do I practise whiteboarding"),
        ("ai", ONE),
        ("human", "and what about behavioral questions?"),
        ("ai", TWO),
    ]

    # a new process: the thread comes back from the store, the last line from the history
    faults(reply=THREE)
    again = terminal("--thread", "daily")
    again.expect("resuming 'daily': 2 question(s)")
    again.prompt()
    turn = again.ask(f"{UP}\r")  # the up arrow recalls the earlier session's last question
    assert "[retrieve: rewrote follow-up as" in turn and f"\n{THREE}\n" in turn
    assert re.search(r"^  \[1\] \S+\.md", again.ask("/sources\r"), re.MULTILINE), again.screen
    again.type(CTRL_D)
    assert again.exit_status() == 0, again.screen
    assert conversation(tmp_path, "daily")[4:] == [
        ("human", "and what about behavioral questions?"),
        ("ai", THREE),
    ]
    history_file = tmp_path / "state" / "notes-rag" / "chat_history"
    history = history_file.read_text().splitlines()
    # questions, answers and the notes they cite are the user's alone (root reads anything:
    # the mode bits are what is asserted)
    store = tmp_path / "data" / "notes-rag"
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    assert stat.S_IMODE((store / "chats.sqlite").stat().st_mode) == 0o600
    assert stat.S_IMODE(history_file.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(history_file.stat().st_mode) == 0o600
    # both sessions' lines, in order (readline does not repeat the line recalled)
    assert history == [
        "How do I practise whiteboarding",
        "and what about behavioral questions?",
        "/sources",
    ]

    listed = rag(
        "chat", "--list", url=ollama_url, workdir=workdir, XDG_DATA_HOME=str(tmp_path / "data")
    )
    assert listed.returncode == 0, listed.stderr
    name, _, asked, last = listed.stdout.splitlines()[0].split("\t")
    assert (name, asked, last) == ("daily", "3 question(s)", "and what about behavioral questions?")


def test_ctrl_c_stops_an_answer_and_the_chat_goes_on(terminal, faults, tmp_path):
    faults(reply=ONE)
    chat = terminal("-t", "stopped")
    chat.prompt()
    assert chat.interrupt_prompt() == ""  # at the prompt: a fresh line, nothing else
    faults(reply=ONE, answer_delay=3)  # the answer's request waits: it is still to come
    chat.type("How do I practise whiteboarding?\r")
    chat.expect("[grade_documents:")  # graded: the answer's request is on its way
    chat.type(CTRL_C)
    turn = chat.prompt()
    assert "[stopped; the question is left out of the conversation]" in turn, chat.screen
    assert ONE not in turn
    faults(reply=TWO)
    turn = chat.ask("and what about behavioral questions?\r")
    assert f"\n{TWO}\n" in turn
    assert "rewrote follow-up" not in turn  # the stopped question left no history
    chat.type(CTRL_D)
    assert chat.exit_status() == 0, chat.screen
    assert conversation(tmp_path, "stopped") == [
        ("human", "and what about behavioral questions?"),
        ("ai", TWO),
    ]


def test_a_status_line_says_what_the_graph_does_and_leaves_only_the_answer(terminal, faults):
    faults(reply=ONE, delay=0.3)  # each model call takes a moment: the stages can be seen
    chat = terminal("-t", "status")
    chat.prompt()
    turn = chat.ask("How do I practise whiteboarding?\r")
    said_in_order(chat.raw)
    # The sources are named once the answer is written, while the check runs.
    named = chat.raw.index("(2 source(s): /sources lists them)")
    assert named < chat.raw.rindex("] checking against your notes")
    # Erased: only the answer, its steps (-v) and the sources' line stay on the screen.
    assert f"\n{ONE}\n" in turn and "grading" not in turn.replace("[grade_documents", "")
    assert "checking against" not in turn and " s] " not in turn
    chat.type(CTRL_D)
    assert chat.exit_status() == 0, chat.screen


def test_no_status_line_when_the_answers_are_piped(
    tmp_path, ollama_url, workdir, loaded_notes, faults
):
    faults(reply=ONE, delay=0.3)
    raw, piped, status = rag_on_terminal(
        *("chat", "-n", "notes", "--threshold", "0", "-k", "2"),
        *("--persist-dir", str(workdir / "data" / "notes-rag" / "chroma")),
        url=ollama_url,
        workdir=workdir,
        stdout_piped=True,  # stderr stays on the terminal
        stdin="How do I practise whiteboarding?\n",
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_STATE_HOME=str(tmp_path / "state"),
    )
    assert status == 0, raw
    assert ONE in piped and "(2 source(s)" in raw
    assert "\x1b" not in raw + piped and "grading" not in raw
