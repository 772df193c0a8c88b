"""One system prompt for the grader, the answer and the check (``SYSTEM_PROMPT = "shared"``).

Ollama and llama.cpp keep one prompt per model and reuse the longest prefix a new prompt
shares with it. With one system prompt every call after the first reads only its own user
turn; the grades are asked in turn with the top-ranked section last, and its grade begins as
the answer does, so the answer reuses that section too.
"""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

import graph.prompts as prompts
from graph.builder import build_graph
from graph.prompts import CHECK_SYSTEM, GENERATE_SYSTEM, GRADE_SYSTEM, SHARED_SYSTEM
from tests.fakes import FakeModels

NOTES = {
    "sourdough.md": "# Sourdough\n\nThe sourdough dough rests overnight in the fridge.\n",
    "pizza.md": "# Pizza\n\nThe pizza dough rests two days before it is stretched.\n",
    "bagels.md": "# Bagels\n\nThe bagel dough rests one night before boiling.\n",
}
QUESTION = "How long does the sourdough dough rest?"
#: A draft with no figure: the check asks the model.
DRAFT = "The sourdough dough rests overnight in the fridge. [1]"


@pytest.fixture(autouse=True)
def _shared(monkeypatch):
    monkeypatch.setattr(prompts, "SYSTEM_PROMPT", "shared")


@pytest.fixture
def vault(graded_vault):
    return graded_vault(NOTES)


def run(ctx, models):
    return build_graph(models=models).invoke({"question": QUESTION}, context=ctx)


def only_the_top(prompt: str) -> str:
    """The grader's verdict for a grade prompt: "yes" only for the sourdough's section."""
    return '{"score": "yes"}' if "sourdough dough rests" in prompt else '{"score": "no"}'


def test_every_call_begins_with_the_same_system_prompt(vault):
    models = FakeModels({"generate": DRAFT, "check": '{"score": "yes"}'})
    run(vault, models)
    grades, answer, check = (models.prompts(p) for p in ("grade", "generate", "check"))
    assert len(grades) == 3 and len(answer) == 1 and len(check) == 1
    assert all(p.startswith(SHARED_SYSTEM) for p in [*grades, *answer, *check])
    # each request names its task last
    assert all(g.endswith("is it relevant to the question?") for g in grades)
    assert "Answer in a full sentence" in answer[0].split("</notes>")[1]


def test_each_task_has_its_own_system_prompt_by_default(vault, monkeypatch):
    monkeypatch.setattr(prompts, "SYSTEM_PROMPT", "per_task")
    models = FakeModels({"generate": DRAFT, "check": '{"score": "yes"}'})
    run(vault, models)
    assert all(g.startswith(GRADE_SYSTEM) for g in models.prompts("grade"))
    assert models.prompts("generate")[0].startswith(GENERATE_SYSTEM)
    assert models.prompts("check")[0].startswith(CHECK_SYSTEM)


def test_the_grades_are_asked_in_turn_the_top_ranked_last(vault):
    models = FakeModels(latency=0.05)
    state = run(replace(vault, grade_concurrency=5), models)
    grades = models.prompts("grade")
    assert models.concurrency.max_active == 1
    # every section kept, in retrieval order; graded in the reverse order
    ranked = [d["content"] for d in state["documents"]]
    assert len(ranked) == 3 and ranked[0].startswith("The sourdough dough")
    assert [next(s for s in ranked if s in g) for g in grades] == ranked[::-1]
    # the verdicts still belong to their own sections
    assert [g["relevant"] for g in state["grades"]] == [True, True, True]


def test_a_verdict_belongs_to_the_section_it_was_asked_about(vault):
    models = FakeModels({"grade": only_the_top})
    state = run(vault, models)
    assert [d["content"] for d in state["documents"]] == [
        "The sourdough dough rests overnight in the fridge."
    ]
    relevant = {g["source"]: g["relevant"] for g in state["grades"]}
    assert relevant == {"sourdough.md": True, "pizza.md": False, "bagels.md": False}


def test_the_answer_begins_as_the_top_sections_grade_did(vault):
    models = FakeModels({"grade": only_the_top})
    run(vault, models)
    last_grade, answer = models.prompts("grade")[-1], models.prompts("generate")[0]
    shared = os.path.commonprefix([last_grade, answer])
    # the top section alone kept: the answer shares everything up to its instruction
    assert shared.endswith(f"Question: {QUESTION}\n\n")
    assert "sourdough dough rests overnight" in shared


def test_with_more_sections_kept_the_answer_shares_the_first(vault):
    models = FakeModels()  # every section kept
    run(vault, models)
    last_grade, answer = models.prompts("grade")[-1], models.prompts("generate")[0]
    shared = os.path.commonprefix([last_grade, answer])
    assert "sourdough dough rests overnight in the fridge.\n</note>\n" in shared
    assert "pizza" not in shared


def test_the_check_begins_as_the_answer_did(vault):
    models = FakeModels({"generate": DRAFT, "check": '{"score": "yes"}'})
    run(vault, models)
    answer, check = models.prompts("generate")[0], models.prompts("check")[0]
    # the sections and the question are read once: the check reads the draft and its task
    through_question = answer.index(f"Question: {QUESTION}\n\n") + len(QUESTION) + 12
    assert check[:through_question] == answer[:through_question]
    assert check[through_question:].startswith(f"Answer: {DRAFT}")
