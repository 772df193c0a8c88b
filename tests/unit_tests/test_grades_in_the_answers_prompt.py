"""Grades asked in the answer's own system prompt (``SYSTEM_PROMPT = "answer"``).

Each grade begins as the answer does: the answer's instructions, the one section (on its
window) as note 1, the question; then the grader's test (``GRADE_IN_ANSWER``). The grades are
asked in turn, the top-ranked last, and a section is kept when the grader's P(yes) reaches
``GRADE_FLOOR``. The answer's and the check's prompts are unchanged, and the server, which
keeps the longest prefix shared with the prompt before, reads the answer's instructions once.
"""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

import graph.prompts as prompts
import nodes.grade_documents as grading
from graph.builder import build_graph
from graph.prompts import CHECK_SYSTEM, GENERATE_SYSTEM, GRADE_IN_ANSWER
from graph.warmup import settle
from tests.fakes import FakeModels
from tests.unit_tests.test_answer_check import verdict_logprobs
from tests.unit_tests.test_shared_system_prompt import only_the_top

NOTES = {
    "sourdough.md": "# Sourdough\n\nThe sourdough dough rests overnight in the fridge.\n",
    "pizza.md": "# Pizza\n\nThe pizza dough rests 48 hours before it is stretched.\n",
    "brot.md": (
        "# Brot\n\nDer Sauerteig für das Roggenbrot ruht über Nacht im Kühlschrank, danach "
        "wird er mit Mehl, Wasser und Salz zu einem Teig geknetet.\n"
    ),
}
QUESTION = "How long does the sourdough dough rest?"
#: A draft with no figure: the check asks the model.
DRAFT = "The sourdough dough rests overnight in the fridge. [1]"


@pytest.fixture(autouse=True)
def _in_the_answers_prompt(monkeypatch):
    monkeypatch.setattr(prompts, "SYSTEM_PROMPT", "answer")


@pytest.fixture
def vault(graded_vault):
    return graded_vault(NOTES)


def run(ctx, models, question=QUESTION):
    state = build_graph(models=models).invoke({"question": question}, context=ctx)
    settle(timeout=10)  # the read-ahead runs in a thread of its own
    return state


def test_the_grades_and_the_answer_begin_with_the_answers_instructions(vault):
    models = FakeModels({"generate": DRAFT, "check": '{"score": "yes"}'})
    run(vault, models)
    grades = models.prompts("grade")
    assert len(grades) == 3
    assert all(g.startswith(f'{GENERATE_SYSTEM}\n<notes>\n<note number="1"') for g in grades)
    assert models.prompts("generate")[0].startswith(f"{GENERATE_SYSTEM}\n<notes>")
    # the check keeps its own prompt
    assert models.prompts("check")[0].startswith(f"{CHECK_SYSTEM}\n")
    # the grader's test last, in the section's language
    english = [g for g in grades if "Roggenbrot" not in g]
    (german,) = [g for g in grades if "Roggenbrot" in g]
    assert all(g.endswith(f"Question: {QUESTION}{GRADE_IN_ANSWER['en']}") for g in english)
    assert german.endswith(f"Question: {QUESTION}{GRADE_IN_ANSWER['de']}")


def test_the_grades_are_asked_in_turn_the_top_ranked_last(vault):
    models = FakeModels(latency=0.05)
    state = run(replace(vault, grade_concurrency=5), models)
    grades = models.prompts("grade")
    assert models.concurrency.max_active == 1
    ranked = [d["content"] for d in state["documents"]]
    assert len(ranked) == 3 and ranked[0].startswith("The sourdough dough")
    assert [next(s for s in ranked if s in g) for g in grades] == ranked[::-1]


def test_the_answer_shares_the_top_sections_grade_up_to_the_question(vault):
    models = FakeModels({"grade": only_the_top})
    state = run(vault, models)
    assert [g["relevant"] for g in state["grades"]] == [True, False, False]
    last_grade, answer = models.prompts("grade")[-1], models.prompts("generate")[0]
    shared = os.path.commonprefix([last_grade, answer])
    assert shared.endswith(f"Question: {QUESTION}\n\n")
    assert "sourdough dough rests overnight" in shared


def test_a_long_section_is_graded_and_answered_on_the_same_window(graded_vault):
    filler = "".join(
        f"Line {n}: the oven shelf and the tray are cleaned weekly.\n" for n in range(30)
    )
    ctx = graded_vault(
        {"sourdough.md": f"# Sourdough\n\n{filler}The sourdough dough rests overnight.\n{filler}"}
    )
    models = FakeModels({"grade": only_the_top})
    run(ctx, models)
    (grade,), answer = models.prompts("grade"), models.prompts("generate")[0]
    assert len(grade) < len(GENERATE_SYSTEM) + 1200  # a window, not the whole section
    shared = os.path.commonprefix([grade, answer])
    assert shared.endswith(f"Question: {QUESTION}\n\n")


@pytest.mark.parametrize(
    ("word", "p_yes", "kept"),
    [
        ("yes", grading.GRADE_FLOOR - 0.05, False),  # a "yes" the grader is not sure enough of
        ("no", grading.GRADE_FLOOR + 0.05, True),  # a "no" it half believed: kept
        ("no", grading.GRADE_FLOOR, True),
    ],
)
def test_a_section_is_kept_when_the_graders_p_yes_reaches_the_floor(vault, word, p_yes, kept):
    models = FakeModels(
        {"grade": f'{{"score": "{word}"}}'}, logprobs={"grade": verdict_logprobs(word, p_yes)}
    )
    state = run(vault, models)
    assert [g["relevant"] for g in state["grades"]] == [kept] * 3
    # the grades asked for the log-probabilities that say how sure
    assert all(r.get("logprobs") is True for r in models.models["grade"].requests)


def test_without_log_probabilities_the_verdict_counts_as_written(vault):
    models = FakeModels({"grade": only_the_top})
    state = run(vault, models)
    assert [g["relevant"] for g in state["grades"]] == [True, False, False]


def test_no_read_ahead_after_an_answer_its_figures_settle(vault):
    # The slot begins with the answer's instructions, as the next question's grades do.
    def only_the_pizza(prompt: str) -> str:
        return '{"score": "yes"}' if "pizza dough rests" in prompt else '{"score": "no"}'

    models = FakeModels(
        {"grade": only_the_pizza, "generate": "The pizza dough rests 48 hours. [1]"}
    )
    run(vault, models, "How long does the pizza dough rest?")
    assert models.calls("check") == 0
    assert models.warmed == []


def test_after_the_models_check_the_answers_instructions_are_read_ahead(vault):
    models = FakeModels({"generate": DRAFT, "check": '{"score": "yes"}'})
    run(vault, models)
    assert models.calls("check") == 1
    (purpose, messages), *_ = models.warmed
    assert purpose == "grade" and messages[0]["content"] == GENERATE_SYSTEM


def test_no_read_ahead_after_a_draft_the_model_was_not_asked_about(vault):
    # A draft that says the notes don't say is not checked: the slot still begins with the
    # answer's instructions, and there is nothing to read ahead.
    models = FakeModels({"generate": "Your notes don't say how long the dough rests. [1]"})
    run(vault, models)
    assert models.calls("check") == 0
    assert models.warmed == []
