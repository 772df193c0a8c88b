"""Reasoning models: reasoning is switched off where it can be, and never read as the answer."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from app.cli.main import main
from graph.builder import build_graph
from graph.context import Context
from graph.llm import ReasoningFilter, split_reasoning
from graph.models import (
    GRADE_SCHEMA,
    REASONING_BUDGET,
    ModelInfo,
    OllamaModels,
    choose_think,
    model_info,
    options_for,
    parse_version,
    supports_json_schema,
)
from tests.fakes import FakeModels

REASONING = "<think>\nNo wait, the user might mean something else. No.\n</think>\n\n"


@pytest.mark.parametrize(
    ("text", "reasoning", "rest"),
    [
        ("yes", "", "yes"),
        (f"{REASONING}yes", "No wait, the user might mean something else. No.", "yes"),
        ("  <think>cut off by the token lim", "cut off by the token lim", ""),
        ("<think>", "", ""),
        ("<think></think>no", "", "no"),
        ("The tag <think> later is kept", "", "The tag <think> later is kept"),
    ],
)
def test_split_reasoning(text, reasoning, rest):
    assert split_reasoning(text) == (reasoning, rest)


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 100])
def test_reasoning_filter_separates_a_stream_cut_anywhere(size):
    text = f"{REASONING}The answer is 42.\n<think> stays"
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    thought, answer = "", ""
    stream = ReasoningFilter()
    for piece in pieces:
        r, a = stream.feed(piece)
        thought, answer = thought + r, answer + a
    assert answer == "The answer is 42.\n<think> stays"
    assert thought.strip() == "No wait, the user might mean something else. No."


def test_reasoning_filter_passes_plain_answers_through():
    stream = ReasoningFilter()
    assert stream.feed("Hello") == ("", "Hello")
    assert stream.feed(" <think>") == ("", " <think>")


@pytest.mark.parametrize(
    ("info", "reasoning", "think"),
    [
        (ModelInfo(frozenset({"completion"})), False, None),
        (ModelInfo(frozenset({"completion"})), True, None),
        (ModelInfo(frozenset({"completion", "thinking"})), False, False),
        (ModelInfo(frozenset({"completion", "thinking"}), (True, False)), True, True),
        (ModelInfo(frozenset({"thinking"}), ("high", "low", "medium")), False, "low"),
        (ModelInfo(frozenset({"thinking"}), ("medium", "high")), True, "medium"),
        (ModelInfo(frozenset({"thinking"}), ("max", "turbo")), False, "max"),
        (ModelInfo(frozenset({"thinking"}), (True, False, "low")), False, False),
    ],
)
def test_choose_think(info, reasoning, think):
    assert choose_think(info, reasoning=reasoning) == think


def test_model_info_reads_show_answers_old_and_new():
    assert model_info({"capabilities": ["completion"]}) == ModelInfo(frozenset({"completion"}))
    assert model_info({}) == ModelInfo(frozenset())
    new = model_info(
        {"capabilities": ["completion", "thinking"], "thinking": {"values": ["low", "high"]}}
    )
    assert new.think_values == ("low", "high")


def test_forced_reasoning_gets_room_and_no_stop():
    plain = options_for("route_calculator", False)
    assert plain["num_predict"] == 5 and plain["stop"] == ["\n"]
    forced = options_for("route_calculator", "low")
    assert forced["num_predict"] == 5 + REASONING_BUDGET and "stop" not in forced
    assert options_for("generate", "low") == options_for("generate", None)


@pytest.mark.parametrize(
    ("version", "schema"),
    [("0.13.0-standin", True), ("0.5.0", True), ("0.4.7", False), ("0.1.32", False), ("", True)],
)
def test_format_follows_the_server_version(version, schema):
    parsed = parse_version(version)
    assert supports_json_schema(parsed) is schema
    assert options_for("grade", None, supports_json_schema(parsed))["format"] == (
        GRADE_SCHEMA if schema else "json"
    )


class _Server(OllamaModels):
    """Ollama's answers about models and version, without a network."""

    def __init__(self, infos: dict[str, ModelInfo], version: str = "0.12.0") -> None:
        self.infos, self.version = infos, version

    def info(self, context, model):
        return self.infos[model]

    def server_version(self, context):
        return parse_version(self.version)


def _payload(provider: OllamaModels, context: Context, purpose) -> dict:
    return provider.chat(context, purpose)._chat_params([HumanMessage("hi")])


def test_ollama_requests_switch_reasoning_off_for_every_internal_purpose():
    thinker = ModelInfo(frozenset({"completion", "thinking"}), (True, False))
    provider = _Server({"qwen3": thinker})
    context = Context(chat_model="qwen3")
    purposes = ("route_calculator", "route_image", "grade", "rewrite", "extract", "check")
    for purpose in (*purposes, "generate"):
        assert _payload(provider, context, purpose)["think"] is False, purpose
    shown = Context(chat_model="qwen3", show_thinking=True)
    assert _payload(provider, shown, "generate")["think"] is True
    assert _payload(provider, shown, "grade")["think"] is False
    assert _payload(provider, shown, "check")["think"] is False
    # The answer check replies in the grader's JSON schema, at temperature 0.
    assert _payload(provider, context, "check")["format"] == GRADE_SCHEMA
    assert _payload(provider, context, "check")["options"]["temperature"] == 0


def test_ollama_requests_leave_think_out_for_other_models_and_use_json_on_old_servers():
    provider = _Server({"llama3.1:8b": ModelInfo(frozenset({"completion"}))}, version="0.4.2")
    payload = _payload(provider, Context(), "grade")
    assert payload["think"] is None  # the ollama client then omits the field
    assert payload["format"] == "json"


def test_keep_alive_reaches_ollama():
    provider = _Server({"llama3.1:8b": ModelInfo(frozenset({"completion"}))})
    assert _payload(provider, Context(keep_alive="5m"), "generate")["keep_alive"] == 300
    context = Context(keep_alive="-1", embedding_model="nomic-embed-text")
    assert provider.embeddings(context).keep_alive == -1
    with pytest.raises(ValueError, match="keep_alive"):
        Context(keep_alive="soon")


# -- through the graph, with models that reason in their content ----------------------


def test_reasoning_before_yes_still_routes_to_the_calculator(ctx):
    models = FakeModels({"route_calculator": f"{REASONING}yes", "extract": f"{REASONING}12 + 30"})
    out = build_graph(models=models).invoke({"question": "What is 12 plus 30?"}, context=ctx)
    assert out["route"] == "calculator"
    assert out["answer"].startswith("12 + 30 = 42 (the expression is the model")


def test_reasoning_before_grades_is_not_read_as_the_grade(loaded):
    models = FakeModels({"grade": REASONING + '{"score": "yes"}'})
    out = build_graph(models=models).invoke(
        {"question": "How do I practise whiteboarding interviews?"}, context=loaded
    )
    assert out["grades"] and all(g["relevant"] and not g["fallback"] for g in out["grades"])
    assert models.calls("grade") == len(out["grades"])  # no retries


def test_the_answer_never_contains_reasoning(loaded):
    models = FakeModels({"generate": f"{REASONING}Practise on a whiteboard."})
    out = build_graph(models=models).invoke(
        {"question": "How do I practise whiteboarding interviews?"}, context=loaded
    )
    assert out["answer"] == "Practise on a whiteboard."
    assert "No wait" not in out["messages"][-1].content
    assert "No wait" in out["messages"][-1].additional_kwargs["reasoning_content"]


@pytest.mark.parametrize("think", [False, True])
def test_cli_streams_reasoning_to_stderr_only_when_asked(think, sample_notes, tmp_path, capsys):
    models = FakeModels({"generate": f"{REASONING}Practise on a whiteboard."})
    db = ["--persist-dir", str(tmp_path / "db"), "-e", "fake-embed", "-n", "notes"]
    assert main(["load", "-f", str(sample_notes), *db], models=models) == 0
    capsys.readouterr()
    argv = ["ask", "-q", "How do I practise whiteboarding?", "--threshold", "0.1", *db]
    assert main(argv + (["--think"] if think else []), models=models) == 0
    out, err = capsys.readouterr()
    assert out.startswith("Practise on a whiteboard.\n")
    assert "No wait" not in out and "think>" not in out
    assert ("No wait" in err) is think
