from dataclasses import replace

import pytest

from graph.builder import build_graph
from graph.llm import parse_yes_no
from tests.fakes import FakeModels


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("yes", True),
        ("Yes.", True),
        ("**YES**", True),
        ("'no' - because", False),
        ("No", False),
        ("y", True),
        ("", None),
        ("maybe", None),
        ("I think yes", None),
    ],
)
def test_parse_yes_no_reads_the_first_word(reply, expected):
    assert parse_yes_no(reply) == expected


def run(models, question, ctx, **extra):
    return build_graph(models=models).invoke({"question": question, **extra}, context=ctx)


@pytest.mark.parametrize(
    "question",
    ["calculate: 2+2", "CALCULATE: 2+2", "Calculate:2+2"],
)
def test_calculator_trigger_forces_calculator_without_model(ctx, question):
    models = FakeModels()
    out = run(models, question, ctx)
    assert out["route"] == "calculator"
    assert out["answer"] == "2+2 = 4"
    assert models.calls() == 0


def test_calculator_trigger_with_words_extracts_deterministically(ctx):
    models = FakeModels()
    out = run(models, "calculate: what is 15 * 3?", ctx)
    assert out["answer"] == "15 * 3 = 45"
    assert models.calls() == 0


def test_calculator_asks_model_only_when_extraction_fails(ctx):
    models = FakeModels()
    out = run(models, "calculate: the sum of three and four", ctx)
    assert out["answer"] == "3 + 4 = 7 (the expression is the model's reading of the question)"
    assert models.calls("extract") == 1 and models.calls() == 1


def test_custom_trigger_and_disabled_calculator(ctx, loaded):
    models = FakeModels()
    custom = replace(ctx, calculator_trigger="math>")
    assert run(models, "math> 6*7", custom)["answer"] == "6*7 = 42"
    off = replace(ctx, enable_calculator=False)
    out = run(models, "calculate: 2+2", off)
    assert out["route"] == "retrieve"
    assert (
        models.calls("route_calculator", "route_image") == 0
    )  # no digits question asked when the tool is off


def test_image_trigger_forces_image_branch(ctx):
    models = FakeModels()
    out = run(models, "Based on the image, what colour is it?", ctx, images=[])
    assert out["route"] == "image"
    assert models.calls("route_calculator", "route_image") == 0


def test_image_trigger_ignored_when_image_tool_disabled(ctx):
    models = FakeModels()
    off = replace(ctx, enable_image=False)
    assert run(models, "based on the image what is it", off)["route"] == "retrieve"


def test_expression_fast_path_makes_no_model_call(ctx):
    models = FakeModels()
    out = run(models, "456*4343 - 56/(443-11+4)", ctx)
    assert out["route"] == "calculator"
    assert out["answer"].endswith("≈ 1980407.87155963")
    assert models.calls() == 0
    assert "fast path" in out["steps"][0]


def test_prompt_without_digits_skips_calculator_classification(ctx, loaded):
    models = FakeModels()
    out = run(models, "How do I prepare for whiteboarding?", ctx)
    assert out["route"] == "retrieve"
    assert models.calls("route_calculator") == 0


def test_digits_without_operator_skip_calculator_classification(ctx, loaded):
    models = FakeModels()
    out = run(models, "Which port is forwarded for 51820 wireguard?", ctx)
    assert models.calls("route_calculator", "route_image") == 0
    assert out["route"] == "retrieve"
    assert "no arithmetic" in out["steps"][0]


@pytest.mark.parametrize(
    "question",
    [
        "What is the 3-2-1 backup rule from my notes?",
        "what is 15 percent of my 200 budget?",
        "is 12 times 7 in my notes?",
    ],
)
def test_digits_with_operator_ask_calculator_classification_once(ctx, loaded, question):
    models = FakeModels({"route_calculator": "no"})
    out = run(models, question, ctx)
    assert models.calls("route_calculator") == 1 and models.calls("route_image") == 0
    assert out["route"] == "retrieve"


def test_classified_calculation_goes_to_calculator(ctx):
    models = FakeModels({"route_calculator": "yes"})
    out = run(models, "what's 12*7?", ctx)
    assert out["route"] == "calculator"
    assert out["answer"] == "12*7 = 84"
    assert models.calls("route_calculator") == 1


def test_image_classification_needs_vision_capability(ctx, loaded):
    # The sample notes reference an image, but the model has no vision: no image question.
    models = FakeModels(capabilities={"llama3.1:8b": {"completion"}})
    run(models, "what does the network diagram picture show?", ctx)
    assert models.capability_calls == 1
    assert (
        models.calls("route_calculator", "route_image") == 0
    )  # no digits, no vision: nothing to classify


def test_image_classification_needs_an_image(ctx):
    # No notes loaded and no input image: vision capability is not even looked up.
    models = FakeModels(capabilities={"llama3.1:8b": {"completion", "vision"}})
    out = run(models, "what does the diagram show?", ctx)
    assert out["route"] == "retrieve"
    assert models.capability_calls == 0
    assert models.calls("route_calculator", "route_image") == 0


def test_both_classifications_run_concurrently(ctx, loaded):
    import threading

    # Both calls wait for each other: asked one after the other, the first never returns.
    both = threading.Barrier(2, timeout=10)
    models = FakeModels(
        {"route_image": "yes"},
        capabilities={"llama3.1:8b": {"completion", "vision"}},
        rendezvous={"route_calculator": both, "route_image": both},
    )
    out = run(models, "what does the picture of the 2 x 3 rack show?", ctx)
    assert models.calls("route_calculator") == 1 and models.calls("route_image") == 1
    assert models.concurrency.max_active == 2  # both in flight at once
    assert out["route"] == "image"


def test_classification_prompt_shape(ctx):
    models = FakeModels()
    run(models, "what's 12*7?", ctx)
    prompt = models.prompts("route_calculator")[0]
    assert prompt == (
        "Is the following prompt a math equation with numbers and operators? "
        "Answer with 'yes' or 'no'.\n\nPrompt: what's 12*7?"
    )


def test_unparseable_classification_counts_as_no(ctx, loaded):
    models = FakeModels({"route_calculator": "hmm, hard to say"})
    assert run(models, "is 12 times 7 a lot of things", ctx)["route"] == "retrieve"
