"""`rag chat` driven through main() with fake models and scripted input.

Piped input (a StringIO) is what a script gives: no prompt, answers alone on stdout. The
conversations' store is the real SQLite checkpointer, in each test's own XDG data folder;
a "restart" is a second main() call with new fakes, sharing nothing but that file.
"""

from __future__ import annotations

import io
import os
import signal
import threading
import time
from datetime import datetime

import pytest
from langchain_core.messages import AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk
from langgraph.checkpoint.sqlite import SqliteSaver

from app.cli.chat import chats_file, new_thread_name
from app.cli.main import main
from graph.builder import build_graph
from tests.fakes import FakeModels, ScriptedChatModel, prompt_text

FIRST = "How should I prepare for interviews?"
FOLLOW_UP = "and what about whiteboarding?"
REWRITTEN = "How do I practise whiteboarding interviews?"


class Tty(io.StringIO):
    """Typed input: a person at a terminal (prompts shown, failures reported, chat goes on)."""

    def isatty(self):
        return True


@pytest.fixture
def db(tmp_path, sample_notes):
    argv = ["--persist-dir", str(tmp_path / "db"), "-e", "fake-embed", "-n", "notes"]
    assert main(["load", "-f", str(sample_notes), *argv], models=FakeModels()) == 0
    return [*argv, "--threshold", "0.1"]


@pytest.fixture(autouse=True)
def _state_home(tmp_path, monkeypatch):
    # readline's history file goes to XDG_STATE_HOME: never the real one
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))


def chat(argv, lines, models, capsys, monkeypatch, stdin=io.StringIO):
    monkeypatch.setattr("sys.stdin", stdin("".join(f"{line}\n" for line in lines)))
    capsys.readouterr()
    code = main(["chat", *argv], models=models)
    out, err = capsys.readouterr()
    return code, out, err


def stored_messages(thread: str) -> list:
    """The conversation kept on ``thread`` in the store, read back without the CLI."""
    with SqliteSaver.from_conn_string(str(chats_file())) as saver:
        state = build_graph(checkpointer=saver).get_state({"configurable": {"thread_id": thread}})
    return state.values.get("messages", [])


def turns(thread: str) -> list[tuple[str, str]]:
    return [(m.type, m.content) for m in stored_messages(thread)]


def test_two_questions_on_one_thread_the_follow_up_rewritten_from_the_first(
    db, capsys, monkeypatch
):
    models = FakeModels({"rewrite": REWRITTEN, "generate": ["Practise daily.", "Use a pen."]})
    code, out, err = chat(["-t", "work", *db], [FIRST, FOLLOW_UP], models, capsys, monkeypatch)
    assert code == 0, err
    assert out == "Practise daily.\nUse a pen.\n"  # piped: no prompt, answers only
    assert "new conversation 'work'" in err
    assert models.calls("rewrite") == 1  # only the follow-up, from the history
    assert (
        FIRST in models.prompts("rewrite")[0] and "Practise daily." in models.prompts("rewrite")[0]
    )
    assert REWRITTEN in models.prompts("generate")[1]
    assert turns("work") == [
        ("human", FIRST),
        ("ai", "Practise daily."),
        ("human", FOLLOW_UP),
        ("ai", "Use a pen."),
    ]


def test_a_thread_resumes_after_a_restart(db, capsys, monkeypatch):
    first = FakeModels({"generate": "Practise daily."})
    assert chat(["-t", "work", *db], [FIRST], first, capsys, monkeypatch)[0] == 0
    # a new process: new models, only the store on disk in common
    later = FakeModels({"rewrite": REWRITTEN, "generate": "Use a pen."})
    code, out, err = chat(["--thread", "work", *db], [FOLLOW_UP], later, capsys, monkeypatch)
    assert code == 0, err
    assert out == "Use a pen.\n"
    banner = err.splitlines()[0]
    assert banner.startswith("resuming 'work': 1 question(s), the last on ")
    assert banner.endswith(f": {FIRST}")
    assert later.calls("rewrite") == 1
    assert FIRST in later.prompts("rewrite")[0]
    assert len(stored_messages("work")) == 4


def test_continue_resumes_the_latest_conversation_and_a_new_one_is_named_after_the_time(
    db, capsys, monkeypatch
):
    models = FakeModels({"generate": "Noted."})
    assert chat(["-t", "old", *db], [FIRST], models, capsys, monkeypatch)[0] == 0
    code, _, err = chat(db, ["wireguard port forwarding"], models, capsys, monkeypatch)
    assert code == 0, err
    named = err.split("new conversation '")[1].split("'")[0]
    assert datetime.strptime(named[:15], "%Y-%m-%d-%H%M")  # 2026-11-30-1405
    code, _, err = chat(["-c", *db], [FOLLOW_UP], models, capsys, monkeypatch)
    assert f"resuming '{named}': 1 question(s)" in err
    assert len(stored_messages(named)) == 4 and len(stored_messages("old")) == 2


def test_a_generated_name_that_is_taken_gets_a_suffix():
    now = datetime(2026, 11, 30, 14, 5)
    assert new_thread_name(set(), now) == "2026-11-30-1405"
    assert new_thread_name({"2026-11-30-1405"}, now) == "2026-11-30-1405-2"
    assert new_thread_name({"2026-11-30-1405", "2026-11-30-1405-2"}, now) == "2026-11-30-1405-3"


def test_list_shows_each_thread_its_questions_and_the_last_one_newest_first(
    db, capsys, monkeypatch
):
    models = FakeModels({"rewrite": REWRITTEN})
    code, out, _ = chat(["--list", *db], [], models, capsys, monkeypatch)
    assert (code, out) == (0, "no conversations yet: `rag chat` starts one\n")
    chat(["-t", "career", *db], [FIRST, FOLLOW_UP], models, capsys, monkeypatch)
    chat(["-t", "bread", *db], ["sourdough starter feeding"], models, capsys, monkeypatch)
    code, out, _ = chat(["--list", *db], [], models, capsys, monkeypatch)
    assert code == 0
    rows = [line.split("\t") for line in out.splitlines()]
    assert [(r[0], r[2], r[3]) for r in rows] == [
        ("bread", "1 question(s)", "sourdough starter feeding"),
        ("career", "2 question(s)", FOLLOW_UP),
    ]
    for row in rows:  # the local time of the last turn
        assert abs(datetime.strptime(row[1], "%Y-%m-%d %H:%M") - datetime.now()).seconds < 600


def test_sources_lists_the_last_answers_notes_even_after_a_resume(db, capsys, monkeypatch):
    models = FakeModels()
    lines = ["/sources", "How do I practise whiteboarding interviews?", "/sources"]
    code, out, err = chat(["-t", "work", *db], lines, models, capsys, monkeypatch)
    assert code == 0, err
    before, after = out.split("Based on your notes: the answer is in the context.\n")
    assert before == "no answer yet in this conversation\n"
    assert "  [1] career/interviews.md — Interviews > Whiteboarding\n" in after
    assert "source(s): /sources lists them" in err
    code, again, _ = chat(["-t", "work", *db], ["/sources"], models, capsys, monkeypatch)
    assert again == after


def test_new_starts_a_thread_without_the_earlier_history(db, capsys, monkeypatch):
    models = FakeModels({"generate": "Noted."})
    lines = [FIRST, "/new fresh", FOLLOW_UP]
    code, _, err = chat(["-t", "work", *db], lines, models, capsys, monkeypatch)
    assert code == 0, err
    assert "new conversation 'fresh'" in err
    assert models.calls("rewrite") == 0  # the follow-up had no history on the new thread
    assert turns("fresh") == [("human", FOLLOW_UP), ("ai", "Noted.")]
    assert len(stored_messages("work")) == 2


def test_quit_ends_the_session_and_unknown_commands_are_not_questions(db, capsys, monkeypatch):
    models = FakeModels()
    lines = ["/help", "/frobnicate", "/new bad\x1bname", "/quit", FIRST]
    code, out, err = chat(["-t", "work", *db], lines, models, capsys, monkeypatch)
    assert code == 0
    assert "/sources" in out and "/new [NAME]" in out
    assert "unknown command /frobnicate" in err
    assert "rag: error: a conversation's name is printable text" in err  # and it goes on
    assert models.calls() == 0 and stored_messages("work") == []


def test_a_calculation_is_answered_without_streaming(db, capsys, monkeypatch):
    code, out, _ = chat(["-t", "sums", *db], ["calculate: 6*7"], FakeModels(), capsys, monkeypatch)
    assert (code, out) == (0, "6*7 = 42\n")


def test_on_a_terminal_a_prompt_is_shown_and_ctrl_d_leaves_with_0(db, capsys, monkeypatch):
    models = FakeModels({"generate": "Practise daily."})
    code, out, _ = chat(["-t", "work", *db], [FIRST], models, capsys, monkeypatch, stdin=Tty)
    assert code == 0
    assert out == "> Practise daily.\n> \n"  # the end of input leaves a newline behind


def failing_then(answer):
    """A generate script whose first call finds Ollama down and the next answers."""
    calls = []

    def generate(prompt):
        calls.append(prompt)
        if len(calls) == 1:
            raise ConnectionError("connection refused")
        return answer

    return generate


def test_piped_input_stops_at_a_failure_with_its_exit_status(db, capsys, monkeypatch):
    models = FakeModels({"generate": failing_then("never asked")})
    code, out, err = chat(["-t", "work", *db], [FIRST, FOLLOW_UP], models, capsys, monkeypatch)
    assert code == 3
    assert "rag: error: cannot reach Ollama" in err
    assert out == "" and models.calls("generate") == 1
    assert stored_messages("work") == []  # the failed question is not in the thread


def test_on_a_terminal_a_failure_is_reported_and_the_chat_goes_on(db, capsys, monkeypatch):
    models = FakeModels({"generate": failing_then("Practise daily.")})
    lines = [FIRST, FIRST]
    code, out, err = chat(["-t", "work", *db], lines, models, capsys, monkeypatch, stdin=Tty)
    assert code == 0
    assert "rag: error: cannot reach Ollama" in err
    assert out.endswith("> Practise daily.\n> \n")
    assert models.calls("rewrite") == 0  # the failed turn left no history behind
    assert turns("work") == [("human", FIRST), ("ai", "Practise daily.")]


class GoesOnUntilStopped(ScriptedChatModel):
    """Streams a first word, then more until a token's callback raises (or 20 s pass).

    The stop must come through the run's callbacks (langchain calls them for each token
    this yields): a model the chat had to wait for would finish its answer unseen, and the
    prompt would come back only then.
    """

    tokens_after_first: int = 0
    ran_to_the_end: bool = False

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        self.calls.append(prompt_text(messages))
        yield ChatGenerationChunk(message=AIMessageChunk(content="Partial "))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            self.tokens_after_first += 1
            yield ChatGenerationChunk(message=AIMessageChunk(content="more "))
        self.ran_to_the_end = True
        yield ChatGenerationChunk(message=AIMessageChunk(content="NOT STOPPED"))


class Interrupted(FakeModels):
    """Fakes whose first answer goes on until stopped; later ones are scripted as usual."""

    def __init__(self, answers):
        super().__init__(answers)
        self.interrupting = GoesOnUntilStopped(answer="")

    def chat(self, context, purpose):
        if purpose == "generate" and not self.interrupting.calls:
            return self.interrupting
        return super().chat(context, purpose)


class PressesCtrlC(io.StringIO):
    """Standard output read by a person who presses Ctrl-C once "Partial " is shown."""

    def write(self, text):
        written = super().write(text)
        if "Partial " in text:
            signal.raise_signal(signal.SIGINT)
        return written


def chat_stopped(argv, lines, models, capsys, monkeypatch):
    screen = PressesCtrlC()
    with monkeypatch.context() as only_here:
        only_here.setattr("sys.stdout", screen)
        code, _, err = chat(argv, lines, models, capsys, monkeypatch)
    return code, screen.getvalue(), err


def test_ctrl_c_stops_the_answer_not_the_chat(db, capsys, monkeypatch):
    models = Interrupted({"generate": "Use a pen."})
    lines = [FIRST, FOLLOW_UP]
    code, out, err = chat_stopped(["-t", "work", *db], lines, models, capsys, monkeypatch)
    assert code == 0, err
    assert out == "Partial \nUse a pen.\n"  # nothing shown after Ctrl-C
    assert err.splitlines()[1] == "[stopped; the question is left out of the conversation]"
    assert "Error in" not in err and "AnswerStopped" not in err  # no callback warning
    assert models.interrupting.tokens_after_first > 0  # it went on until stopped,
    assert not models.interrupting.ran_to_the_end  # by the switch, not the deadline
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
    # the stopped question is not history: the next one is not taken as its follow-up
    assert models.calls("rewrite") == 0
    assert turns("work") == [("human", FOLLOW_UP), ("ai", "Use a pen.")]


def test_ctrl_c_on_a_later_turn_puts_the_thread_back_as_it_was(db, capsys, monkeypatch):
    models = FakeModels({"generate": "Practise daily."})
    assert chat(["-t", "work", *db], [FIRST], models, capsys, monkeypatch)[0] == 0
    again = Interrupted({"rewrite": REWRITTEN, "generate": "Use a pen."})
    code, out, err = chat_stopped(["-t", "work", *db], [FOLLOW_UP], again, capsys, monkeypatch)
    assert (code, out) == (0, "Partial \n")
    assert not again.interrupting.ran_to_the_end
    assert turns("work") == [("human", FIRST), ("ai", "Practise daily.")]
    code, out, _ = chat(["-t", "work", *db], ["/sources"], again, capsys, monkeypatch)
    assert "career/interviews.md" in out  # the last finished answer's sources


@pytest.mark.parametrize("name", ["", "  ", "x\x1b[2Jy"])
def test_a_thread_name_is_printable_text(name, db, capsys, monkeypatch):
    code, _, err = chat(["-t", name, *db], [FIRST], FakeModels(), capsys, monkeypatch)
    assert code == 2
    assert "a conversation's name is printable text" in err


def test_chat_takes_the_settings_of_ask(db, capsys, monkeypatch):
    class Recording(FakeModels):
        def __init__(self, answers):
            super().__init__(answers)
            self.contexts = []

        def chat(self, context, purpose):
            self.contexts.append(context)
            return super().chat(context, purpose)

    models = Recording({"generate": "<think>Mulling.</think>Practise daily."})
    argv = ["-t", "w", "-m", "qwen3:4b", "--folder", "career", "-k", "2", "--think", *db]
    code, out, err = chat(argv, [FIRST], models, capsys, monkeypatch)
    assert (code, out) == (0, "Practise daily.\n")
    assert "Mulling." in err  # --think shows the reasoning, on stderr
    assert {(c.chat_model, c.k, tuple(c.folders)) for c in models.contexts} == {
        ("qwen3:4b", 2, ("career",))
    }
    assert "Mulling." not in "".join(m.content for m in stored_messages("w"))
    code, out, _ = chat(["-t", "w", "--tag", "cooking", *db], [FIRST], models, capsys, monkeypatch)
    assert "matches the filter (tag #cooking)" in out


def test_ctrl_c_while_the_model_is_silent_ends_its_call_within_a_second(db, capsys, monkeypatch):
    # No token comes while the model reads a long prompt: the call itself must be aborted.
    monkeypatch.setenv("RAG_GRADE_CONCURRENCY", "1")  # the other chunks' grades wait
    slow = FakeModels({"generate": "Use a pen."}, latency=2.0)
    pressed = {}

    def press_ctrl_c_while_grading():
        deadline = time.monotonic() + 20
        while slow.calls("grade") < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        pressed["calls"], pressed["at"] = slow.calls(), time.monotonic()
        os.kill(os.getpid(), signal.SIGINT)  # as a terminal's Ctrl-C: to the process

    threading.Thread(target=press_ctrl_c_while_grading, daemon=True).start()
    code, out, err = chat(["-t", "work", *db], [FIRST], slow, capsys, monkeypatch)
    returned = time.monotonic()
    assert code == 0 and "[stopped; the question is left out of the conversation]" in err
    assert returned - pressed["at"] < 1.0, "the chat waited for the model call in flight"
    assert slow.concurrency.active == 0 and slow.concurrency.aborted >= 1
    assert slow.calls() == pressed["calls"] and slow.calls("generate") == 0
    assert turns("work") == []
