"""What the next question's first call begins with, read while the person reads the answer.

Once an answer is written the server is asked to read the grader's system prompt, in the
language of the answer's top section, so that the next question's first grade reuses it; in
a thread, the conversation the next follow-up's rewrite begins with (``graph/warmup.py``).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace

import pytest

import graph.prompts as prompts
from graph.builder import build_graph
from graph.models import warm_messages
from graph.prompts import GENERATE_SYSTEM, GRADE_SYSTEM, GRADE_SYSTEM_DE
from graph.warmup import settle
from tests.fakes import FakeModels

DRAFT = "The sourdough dough rests overnight in the fridge. [1]"
SOURDOUGH = {"sourdough.md": "# Sourdough\n\nThe sourdough dough rests overnight in the fridge.\n"}
BROT = {
    "brot.md": (
        "# Brot\n\nDer Sauerteig für das Roggenbrot ruht über Nacht im Kühlschrank, danach "
        "wird er mit Mehl, Wasser und Salz zu einem Teig geknetet.\n"
    )
}


def ask(ctx, models, question="How long does the sourdough dough rest?"):
    out = build_graph(models=models).invoke({"question": question}, context=ctx)
    settle(timeout=10)
    return out


def test_after_an_answer_the_grader_s_instructions_are_read_ahead(graded_vault):
    models = FakeModels({"generate": DRAFT, "check": '{"score": "yes"}'})
    out = ask(graded_vault(SOURDOUGH), models)
    assert out["answer"] == DRAFT
    assert models.warmed == [("grade", warm_messages(GRADE_SYSTEM))]


def test_in_the_top_section_s_language(graded_vault):
    models = FakeModels({"generate": "Über Nacht [1]."})
    ask(graded_vault(BROT), models, "Wie lange ruht der Sauerteig?")
    assert models.warmed == [("grade", warm_messages(GRADE_SYSTEM_DE))]


def test_as_the_grader_is_asked_after_the_answer_s_instructions(graded_vault, monkeypatch):
    monkeypatch.setattr(prompts, "SYSTEM_PROMPT", "answer_first")
    models = FakeModels({"generate": DRAFT, "check": '{"score": "yes"}'})
    ask(graded_vault(SOURDOUGH), models)
    assert models.warmed == [("grade", warm_messages(f"{GENERATE_SYSTEM}\n\n{GRADE_SYSTEM}"))]


def test_not_after_a_question_the_grader_turned_away(graded_vault):
    # its last grade's prompt, which the server holds, begins with the instructions already
    models = FakeModels({"grade": '{"score": "no"}'})
    out = ask(graded_vault(SOURDOUGH), models)
    assert out["no_answer_reason"] == "all_irrelevant" and models.warmed == []


@pytest.mark.parametrize(
    "change", [{"read_ahead": False}, {"keep_alive": "0"}, {"keep_alive": "0s"}]
)
def test_not_when_off_nor_when_the_model_is_unloaded_after_each_request(graded_vault, change):
    models = FakeModels({"generate": DRAFT, "check": '{"score": "yes"}'})
    ask(replace(graded_vault(SOURDOUGH), **change), models)
    assert models.warmed == []


def test_a_warm_up_that_fails_is_logged_and_changes_nothing(graded_vault, caplog, monkeypatch):
    class Failing(FakeModels):
        def warm(self, context, purpose, messages):
            raise ConnectionError("Ollama went away")

    unhandled: list = []
    monkeypatch.setattr(threading, "excepthook", unhandled.append)
    models = Failing({"generate": DRAFT, "check": '{"score": "yes"}'})
    with caplog.at_level(logging.DEBUG, logger="graph.warmup"):
        out = ask(graded_vault(SOURDOUGH), models)
    assert out["answer"] == DRAFT and out["no_answer_reason"] is None
    assert unhandled == []
    assert "reading ahead for the next question failed: Ollama went away" in caplog.text


@pytest.mark.parametrize(("think", "keep_alive"), [(None, ""), (False, "10m")])
def test_ollama_reads_the_system_prompt_with_the_grade_s_loading_options(
    monkeypatch, think, keep_alive
):
    from graph.context import Context
    from graph.models import OllamaModels
    from graph.ollama import OllamaClient

    sent: list = []
    monkeypatch.setattr(OllamaClient, "post", lambda self, path, body: sent.append(body) or {})
    monkeypatch.setattr(OllamaModels, "think", lambda self, context, purpose: think)
    context = Context(chat_model="qwen2.5-coder:1.5b", num_ctx=4096, keep_alive=keep_alive)
    OllamaModels().warm(context, "grade", warm_messages(GRADE_SYSTEM))
    expected = {
        "model": "qwen2.5-coder:1.5b",
        "messages": [{"role": "system", "content": GRADE_SYSTEM}, {"role": "user", "content": ""}],
        "stream": False,
        # the grade's num_ctx (another would load the model again); one token written
        "options": {"num_ctx": 4096, "num_predict": 1},
        **({} if think is None else {"think": think}),
        **({"keep_alive": 600} if keep_alive else {}),
    }
    assert sent == [expected]


def test_a_one_question_rag_ask_reads_nothing_ahead(tmp_path, sample_notes):
    from app.cli.main import main

    argv = ["--persist-dir", str(tmp_path / "db"), "-e", "fake-embed", "-n", "notes"]
    assert main(["load", "-f", str(sample_notes), *argv], models=FakeModels()) == 0
    models = FakeModels({"generate": "Practise out loud [1].", "check": '{"score": "yes"}'})
    question = "How do I practise whiteboarding interviews?"
    assert main(["ask", "-q", question, *argv, "--threshold", "0.1"], models=models) == 0
    settle(timeout=10)
    assert models.calls("generate") == 1 and models.warmed == []


def test_an_evaluation_reads_nothing_ahead_between_its_questions(graded_vault):
    from app.evaluation.answers import Question, run_design

    models = FakeModels({"generate": DRAFT, "check": '{"score": "yes"}'})
    asked = Question(
        "q1",
        "How long does the sourdough dough rest?",
        (("overnight",),),
        ("sourdough.md",),
        True,
        "single",
        "",
    )
    rows = run_design("graph", build_graph(models=models), [asked, asked], graded_vault(SOURDOUGH))
    settle(timeout=10)
    assert len(rows) == 2 and models.calls("generate") == 2 and models.warmed == []


def test_in_a_thread_the_conversation_the_next_rewrite_begins_with(graded_vault):
    from langgraph.checkpoint.memory import InMemorySaver

    models = FakeModels(
        {"generate": DRAFT, "check": '{"score": "yes"}', "rewrite": "How long does it rest?"}
    )
    app = build_graph(models=models, checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "kitchen"}}
    vault = graded_vault(SOURDOUGH)
    app.invoke({"question": "How long does the sourdough dough rest?"}, thread, context=vault)
    settle(timeout=10)
    [(purpose, messages)] = models.warmed
    assert purpose == "rewrite" and len(messages) == 1 and messages[0]["role"] == "user"
    assert (
        f"User: How long does the sourdough dough rest?\nAssistant: {DRAFT}"
        in (messages[0]["content"])
    )
    # the follow-up's rewrite begins with every character read ahead
    app.invoke({"question": "and in winter?"}, thread, context=vault)
    settle(timeout=10)
    (rewrite,) = models.prompts("rewrite")
    assert rewrite.startswith(messages[0]["content"]) and rewrite.endswith("and in winter?")
    assert len(models.warmed) == 2 and models.warmed[1][0] == "rewrite"


def test_not_with_one_system_prompt_outside_a_thread(graded_vault, monkeypatch):
    monkeypatch.setattr(prompts, "SYSTEM_PROMPT", "shared")
    models = FakeModels({"generate": DRAFT, "check": '{"score": "yes"}'})
    ask(graded_vault(SOURDOUGH), models)
    assert models.warmed == []


def test_no_thread_to_be_had_changes_nothing(graded_vault, monkeypatch):
    import types

    import graph.warmup as warmup

    class Refused(threading.Thread):
        def start(self):
            raise RuntimeError("can't start new thread")

    monkeypatch.setattr(warmup, "threading", types.SimpleNamespace(Thread=Refused))
    models = FakeModels({"generate": DRAFT, "check": '{"score": "yes"}'})
    out = build_graph(models=models).invoke(
        {"question": "How long does the sourdough dough rest?"}, context=graded_vault(SOURDOUGH)
    )
    assert out["answer"] == DRAFT and warmup._running == set()
    settle(timeout=1)  # nothing left that was never started


def test_in_a_thread_a_question_without_an_answer_reads_ahead_too(graded_vault):
    from langgraph.checkpoint.memory import InMemorySaver

    models = FakeModels({"grade": '{"score": "no"}', "rewrite": "How long in winter?"})
    app = build_graph(models=models, checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "kitchen"}}
    vault = graded_vault(SOURDOUGH)
    question = "How long does the sourdough dough rest?"
    out = app.invoke({"question": question}, thread, context=vault)
    settle(timeout=10)
    assert out["no_answer_reason"] == "all_irrelevant"
    [(purpose, messages)] = models.warmed
    assert purpose == "rewrite" and messages[0]["content"].endswith(
        f"Assistant: {out['answer']}\n\nFollow-up question: "
    )
    app.invoke({"question": "and in winter?"}, thread, context=vault)
    settle(timeout=10)
    (rewrite,) = models.prompts("rewrite")
    assert rewrite.startswith(messages[0]["content"])


def test_a_run_with_a_thread_id_and_nothing_kept_reads_the_grader_ahead(graded_vault):
    # the served API's stateless runs and MCP's tool get a thread id of their own, and no
    # checkpointer: their next question comes one by one
    models = FakeModels({"generate": DRAFT, "check": '{"score": "yes"}'})
    build_graph(models=models).invoke(
        {"question": "How long does the sourdough dough rest?"},
        {"configurable": {"thread_id": "temporary"}},
        context=graded_vault(SOURDOUGH),
    )
    settle(timeout=10)
    assert models.warmed == [("grade", warm_messages(GRADE_SYSTEM))]
