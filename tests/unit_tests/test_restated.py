"""A draft that restates its question and leaves out the answer is withdrawn without the model.

"The microchip number of Pilchard is [1]." states nothing; its names are written in its notes,
so the check would keep it (``graph/restated.py``).
"""

from __future__ import annotations

import time

import pytest

from graph.builder import build_graph
from graph.prompts import UNSUPPORTED_RESTATED
from graph.restated import leaves_out_the_answer
from graph.state import source_line
from tests.fakes import FakeModels

CHIP = "What is the microchip number of Pilchard?"


@pytest.mark.parametrize(
    ("question", "draft"),
    [
        (CHIP, "The microchip number of Pilchard is [1]."),
        (CHIP, "Pilchard's microchip number is [1, 2]"),
        ("When is the billing service migrated?", "The billing service is migrated on [1]."),
        (
            "Which fixture scope do I use for a fresh database in every test?",
            "The fixture scope I use for a fresh database in every test is 【1†source】.",
        ),
    ],
)
def test_a_draft_restating_its_question_up_to_its_citation_leaves_out_the_answer(question, draft):
    assert leaves_out_the_answer(question, draft)


@pytest.mark.parametrize(
    ("question", "draft"),
    [
        (CHIP, "The microchip number of Pilchard is 985 112 004 731 822 [1]."),  # a figure
        (CHIP, "The microchip number of Pilchard in 2024 is [1]."),  # a figure not asked
        (CHIP, "The microchip number of Pilchard is unknown [1]."),  # a word not asked
        (CHIP, "Pilchard's vet keeps the microchip number [1]."),  # ends with a word not asked
        (CHIP, "His vet card holds the microchip number of Pilchard in [1]."),  # "card" is new
        ("Is the microchip number of Pilchard on file?", "The microchip number is [1] on file."),
        ("How do I reach the office network?", "The office network is the Way in [1]."),  # a name
        (CHIP, "The microchip number of Pilchard is [1]: 985 112 004."),  # the answer follows
        ("Is the backup on Tuesday or Friday?", "The backup is on Friday [1]."),  # an option
        ("Wann wird das Brot gebacken?", "Das Brot wird gebacken am [1]."),  # not English
    ],
)
def test_a_draft_that_says_something_is_not_taken_for_one_that_restates(question, draft):
    assert not leaves_out_the_answer(question, draft)


def test_the_check_withdraws_a_restating_draft_without_asking_the_model(loaded):
    question = "How do I practise whiteboarding interviews?"
    draft = "I practise whiteboarding interviews by [1]."
    models = FakeModels({"generate": draft})  # the model's check would have said "yes"
    out = build_graph(models=models).invoke({"question": question}, context=loaded)
    assert models.calls("check") == 0
    assert out["no_answer_reason"] == "unsupported"
    shown, added = out["answer"].split("\n\n")
    assert shown == draft
    listed = "; ".join(source_line(n, s) for n, s in enumerate(out["sources"], start=1))
    assert added == UNSUPPORTED_RESTATED.format(sources=listed)
    assert out["steps"][-1] == "generate: checked against the question: the answer restates it"


def test_a_long_run_of_spaces_is_read_in_linear_time():
    # with two ways to read each space, 20,000 of them took a second
    draft = "The microchip number of Pilchard is [1]" + " " * 200_000 + "x"
    started = time.perf_counter()
    assert not leaves_out_the_answer(CHIP, draft)
    assert time.perf_counter() - started < 1.0
