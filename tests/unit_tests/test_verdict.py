"""A verdict's reply cut short: read in one token after the model's own opening
(``graph/verdict.py``, off by default), and ended after its value (``VERDICT_END``)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from unittest.mock import patch

import pytest
from langchain_core.messages import AIMessage, HumanMessage

import graph.verdict
from app.evaluation.classic_rag import build_classic_graph, tutorial_request
from graph.builder import build_graph
from graph.context import Context
from graph.index.ingest import load_notes
from graph.llm import parse_grade
from graph.models import VERDICT_END, ModelInfo, OllamaModels, options_for
from graph.verdict import one_token
from tests.fakes import FakeModels

NOTES = {
    "sourdough.md": "# Sourdough\n\nThe sourdough dough rests twelve hours in the fridge.\n",
    "pizza.md": "# Pizza\n\nThe pizza dough rests two days and bakes at 280 degrees.\n",
    "bagels.md": "# Bagels\n\nThe bagel dough rests one night before boiling.\n",
}
QUESTION = "How long does the sourdough dough rest?"
NOTES_DIR = Path(__file__).resolve().parents[1] / "sample_notes"
#: The opening Qwen2.5-Coder-1.5B writes under the JSON-schema format.
OPENING = '{\n  "score": "'


def verdict(prompt: str) -> str:
    """Only the sourdough section is relevant, in the model's own layout, the reply ending
    after the value as the server returns it (``VERDICT_END``)."""
    return OPENING + ("yes" if "twelve hours" in prompt else "no")


@pytest.fixture(autouse=True)
def _after_the_opening(monkeypatch):
    monkeypatch.setattr(graph.verdict, "AFTER_THE_OPENING", True)


@pytest.fixture
def vault(graded_vault):
    """The notes, graded one section after another (the order of the calls is then known)."""
    return replace(graded_vault(NOTES), grade_concurrency=1)


def ask(ctx, models, question=QUESTION):
    return build_graph(models=models).invoke({"question": question}, context=ctx)


def grade_requests(models):
    """Per grade call: the reply's beginning it was sent ('' for none), its request fields."""
    grade = models.models["grade"]
    return list(zip(grade.begun, grade.requests, strict=True))


def continued(models):
    """Per grade call, whether it was sent the opening to continue."""
    return [b == OPENING for b in models.models["grade"].begun]


def test_later_grades_send_the_opening_back_and_read_one_token(vault, models):
    models.answers["grade"] = verdict
    first = ask(vault, models)
    assert [g["relevant"] for g in first["grades"]].count(True) == 1
    asked = grade_requests(models)
    assert len(asked) == 3  # one call a section, none asked again
    # The provider's first grade is asked with the format; the model's reply teaches the
    # opening, and every later grade sends it back.
    assert "format" not in asked[0][1] and asked[0][0] == ""
    second = ask(vault, models)
    later = grade_requests(models)[1:]
    assert len(later) == 5
    for begun, request in later:
        assert begun == OPENING
        assert request["format"] is None
        assert request["options"]["num_predict"] == 1
        assert request["options"]["num_ctx"] == vault.num_ctx
    assert [g["relevant"] for g in second["grades"]] == [g["relevant"] for g in first["grades"]]
    kept = [d["source"] for d in second["documents"]]
    assert kept == [d["source"] for d in first["documents"]] and len(kept) == 1
    assert "sourdough" in kept[0]


def test_the_opening_goes_as_the_assistants_message_after_the_prompt(vault, models):
    models.answers["grade"] = verdict
    ask(vault, models)
    seen = []
    grade = models.models["grade"]
    original = grade._record

    def record(messages, request=None):
        seen.append(messages)
        return original(messages, request)

    object.__setattr__(grade, "_record", record)
    ask(vault, models)
    assert seen and all(isinstance(m[-1], AIMessage) and m[-1].content == OPENING for m in seen)
    assert all(m[-2].type == "human" for m in seen)


def test_a_reply_that_is_no_verdict_word_is_asked_again_the_usual_way(vault, models):
    # Continued, the model writes "maybe" for the pizza section: that grade is asked again
    # with the format, and its verdict is the one written there.
    def grade(prompt: str) -> str:
        if prompt.endswith(OPENING) and "pizza" in prompt:
            return OPENING + "maybe"
        return verdict(prompt)

    models.answers["grade"] = grade
    ask(vault, models)
    asked_first = len(models.prompts("grade"))
    second = ask(vault, models)
    later = continued(models)[asked_first:]
    assert len(later) == 4
    assert later.count(False) == 1  # the pizza section, asked again
    assert [g["relevant"] for g in second["grades"]].count(True) == 1
    assert not any(g["fallback"] for g in second["grades"])
    third_from = len(models.prompts("grade"))
    ask(vault, models)
    # one odd reply does not stop the next question's grades from continuing the opening
    assert continued(models)[third_from:].count(True) == 3


def test_a_template_that_does_not_continue_is_asked_the_usual_way_from_then_on(vault, models):
    # A chat template that starts a new reply after the opening: the model writes its JSON
    # from the start again.
    def grade(prompt: str) -> str:
        return "{" + verdict(prompt) if prompt.endswith(OPENING) else verdict(prompt)

    models.answers["grade"] = grade
    ask(vault, models)
    second = ask(vault, models)
    assert [g["relevant"] for g in second["grades"]].count(True) == 1
    # the first continued grade showed that the template does not continue
    assert continued(models).count(True) == 1
    before = len(models.prompts("grade"))
    ask(vault, models)
    assert not any(continued(models)[before:])


def test_a_whole_reply_teaches_the_opening_too(vault, models):
    # A server that does not stop at the ends (or a reply without them) writes it all.
    models.answers["grade"] = lambda prompt: verdict(prompt) + '"\n}'
    ask(vault, models)
    assert continued(models) == [False, True, True]


def test_an_opening_is_the_servers_it_was_learnt_from(vault, models):
    models.answers["grade"] = verdict
    ask(vault, models)
    elsewhere = replace(vault, ollama_base_url="http://127.0.0.1:1")
    ask(elsewhere, models)
    assert continued(models)[3:] == [False, True, True]


class Unhashable(FakeModels):
    __hash__ = None  # type: ignore[assignment]


def test_a_provider_that_cannot_be_a_key_is_asked_with_the_format(vault):
    models = Unhashable({"grade": verdict})
    ask(vault, models)
    out = ask(vault, models)
    assert not any(continued(models))
    assert [g["relevant"] for g in out["grades"]].count(True) == 1


def test_a_reply_the_format_did_not_shape_teaches_no_opening(vault, models):
    models.answers["grade"] = lambda prompt: "yes" if "twelve hours" in prompt else "no"
    ask(vault, models)
    second = ask(vault, models)
    assert not any(continued(models))
    assert [g["relevant"] for g in second["grades"]].count(True) == 1


def test_a_model_that_reasons_before_its_verdict_is_never_asked_after_an_opening(vault):
    # Its reasoning arrives apart from the reply (an effort level it cannot switch off, or a
    # <think> block in its text): the verdict follows it, and an opening would skip it.
    models = FakeModels({"grade": lambda prompt: "<think>Is it?</think>" + verdict(prompt)})
    ask(vault, models)
    ask(vault, models)
    assert len(models.prompts("grade")) == 6
    assert not any(continued(models))


def test_each_provider_learns_its_own_opening(vault, models):
    models.answers["grade"] = verdict
    ask(vault, models)
    fresh = FakeModels({"grade": verdict})
    ask(vault, fresh)
    assert continued(fresh) == [False, True, True]


def test_switched_off_every_grade_is_asked_with_the_format(vault, models, monkeypatch):
    monkeypatch.setattr(graph.verdict, "AFTER_THE_OPENING", False)
    models.answers["grade"] = verdict
    ask(vault, models)
    ask(vault, models)
    assert len(models.prompts("grade")) == 6 and not any(continued(models))


# -- the reply ends after the verdict's value (``VERDICT_END``) ------------------------------

#: How models write a verdict under the format, and what follows the value.
WRITTEN = [
    ('{\n  "score": "yes"\n}', True),
    ('{"score": "no"}', False),
    ('{"score": "yes", "reason": "it says so"}', True),
    ('{ "score": "no"\r\n}', False),
    ('{"score":"yes" }', True),
    ('{ "score" : "no" , "why": "-"}', False),
]


def cut(reply: str) -> str:
    """The reply as Ollama returns it: up to the first stop string, which is left out."""
    ends = [reply.find(end) for end in VERDICT_END if end in reply]
    return reply[: min(ends)] if ends else reply


def test_a_verdict_reply_ends_after_its_value_and_still_reads():
    for purpose in ("grade", "check"):
        assert options_for(purpose, None)["stop"] == VERDICT_END
        # a model that reasons first may write the ends inside its reasoning: no stop then
        assert "stop" not in options_for(purpose, "low")
        # JSON mode (a server without schemas) lets a model write other keys first
        assert "stop" not in options_for(purpose, None, json_schema=False)
    for written, relevant in WRITTEN:
        value = written.index("yes" if relevant else "no")  # where the verdict's word starts
        assert all(end not in written[:value] for end in VERDICT_END)  # nothing ends earlier
        assert parse_grade(cut(written)) is relevant, written
    assert cut(WRITTEN[0][0]) == '{\n  "score": "yes'


def test_ollamas_grade_and_check_requests_carry_the_ends():
    provider = OllamaModels()
    context = Context(chat_model="qwen2.5-coder:1.5b")
    provider.info = lambda context, model: ModelInfo(frozenset({"completion"}))  # type: ignore[method-assign]
    provider.server_version = lambda context: (0, 13, 0)  # type: ignore[method-assign]
    for purpose in ("grade", "check"):
        params = provider.chat(context, purpose)._chat_params([HumanMessage("hi")])
        assert params["options"]["stop"] == VERDICT_END, purpose
    # the opening's one token needs no ends: it overrides the options for that call
    assert "stop" not in one_token(context)["options"]


def test_grades_and_checks_cut_at_the_end_keep_their_verdicts(graded_vault):
    vault = graded_vault(NOTES)
    models = FakeModels(
        {
            "grade": lambda prompt: cut(verdict(prompt)),
            "generate": "The sourdough dough rests twelve hours in the fridge [1].",
            "check": cut('{\n  "score": "no"\n}'),
        }
    )
    out = ask(vault, models)
    assert [g["relevant"] for g in out["grades"]].count(True) == 1
    assert not any(g["fallback"] for g in out["grades"])
    assert models.calls("check") == 1 and out["no_answer_reason"] == "unsupported"
    # a cut reply teaches the opening as a whole one does
    assert continued(models) == [False, True, True]


def test_the_classic_baselines_grader_asks_as_the_tutorial_without_the_ends():
    provider = OllamaModels()
    context = Context(chat_model="qwen2.5-coder:1.5b")
    provider.info = lambda context, model: ModelInfo(frozenset({"completion"}))  # type: ignore[method-assign]
    provider.server_version = lambda context: (0, 13, 0)  # type: ignore[method-assign]
    with patch("app.evaluation.classic_rag.get_models", return_value=provider):
        request = tutorial_request(context)
    params = provider.chat(context, "grade")._chat_params([HumanMessage("hi")], **request)
    assert params["format"] == "json" and "stop" not in params["options"]
    assert params["options"] == {"num_ctx": context.num_ctx, "temperature": 0, "num_predict": 24}


def test_the_classic_baselines_grades_send_the_tutorials_request(ctx):
    models = FakeModels({"grade": '{"binary_score": "yes"}'})
    load_notes(ctx, NOTES_DIR, models.embedder)
    build_classic_graph(models=models).invoke({"question": QUESTION}, context=ctx)
    sent = models.models["grade"].requests
    assert sent and all(r["format"] == "json" and "stop" not in r["options"] for r in sent)


# -- P(yes) after the opening, and the bar (``OPENING_BAR``) --------------------------------

#: P(yes) per note, as the grader's token log-probabilities give it.
SURE = {"twelve hours": 0.9, "two days": 0.47, "one night": 0.2}


def p_yes_of(prompt: str) -> float:
    return next(p for text, p in SURE.items() if text in prompt)


def grade_logprobs(prompt: str) -> list:
    """Ollama's ``logprobs``: after the opening, the one token read; else the whole reply."""
    p = p_yes_of(prompt)
    word = "yes" if p >= 0.5 else "no"
    tops = [{"token": "yes", "logprob": math.log(p)}, {"token": "no", "logprob": math.log(1 - p)}]
    decided = {"token": word, "logprob": math.log(max(p, 1 - p)), "top_logprobs": tops}
    if prompt.endswith(OPENING):
        return [decided]
    written = ("{\n", ' "score', '":', ' "')
    return [*({"token": t, "logprob": -0.01, "top_logprobs": []} for t in written), decided]


def sure_models() -> FakeModels:
    return FakeModels(
        {"grade": lambda prompt: OPENING + ("yes" if p_yes_of(prompt) >= 0.5 else "no")},
        logprobs={"grade": grade_logprobs},
    )


def test_a_grade_after_the_opening_gives_the_graders_p_yes(vault, monkeypatch):
    monkeypatch.setattr(graph.verdict, "OPENING_BAR", None)
    models = sure_models()
    ask(vault, models)
    out = ask(vault, models)
    assert continued(models)[3:] == [True, True, True]
    # the one token comes with its log-probabilities: the server is asked for them
    for _, request in grade_requests(models)[3:]:
        assert request["logprobs"] is True and request["top_logprobs"] == 20
    p_yes = {g["source"]: g["p_yes"] for g in out["grades"]}
    assert p_yes == pytest.approx({"sourdough.md": 0.9, "pizza.md": 0.47, "bagels.md": 0.2})
    assert [d["source"] for d in out["documents"]] == ["sourdough.md"]  # the word: "no" at 0.47


def test_after_the_opening_the_bar_decides_where_it_is_set(vault, monkeypatch):
    models = sure_models()
    monkeypatch.setattr(graph.verdict, "OPENING_BAR", 0.45)
    ask(vault, models)  # its first grade, with the format, teaches the opening
    out = ask(vault, models)
    # after the opening, P(yes) 0.47 reaches the bar, which the word "no" did not: kept,
    # the surest first
    assert [d["source"] for d in out["documents"]] == ["sourdough.md", "pizza.md"]
    kept = {g["source"]: g["relevant"] for g in out["grades"]}
    assert kept == {"sourdough.md": True, "pizza.md": True, "bagels.md": False}
    monkeypatch.setattr(graph.verdict, "OPENING_BAR", 0.95)
    assert ask(vault, models)["no_answer_reason"] == "all_irrelevant"
