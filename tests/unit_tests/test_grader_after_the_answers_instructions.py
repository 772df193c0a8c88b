"""The grader asked after the answer's instructions (``SYSTEM_PROMPT = "answer_first"``, off).

The grader's system prompt is the answer's followed by the grader's own instructions, and its
user turn is the default's; the answer and the check keep their own prompts. The server then
holds the answer's instructions when the answer is asked, after the grades.
"""

from __future__ import annotations

import pytest

import graph.prompts as prompts
from graph.builder import build_graph
from graph.prompts import CHECK_SYSTEM, GENERATE_SYSTEM, GRADE_SYSTEM, GRADE_SYSTEM_DE
from tests.fakes import FakeModels

NOTES = {
    "sourdough.md": "# Sourdough\n\nThe sourdough dough rests overnight in the fridge.\n",
    "brot.md": (
        "# Brot\n\nDer Sauerteig für das Roggenbrot ruht über Nacht im Kühlschrank, danach "
        "wird er mit Mehl, Wasser und Salz zu einem Teig geknetet.\n"
    ),
}
DRAFT = "The sourdough dough rests overnight in the fridge. [1]"


@pytest.fixture(autouse=True)
def _answer_first(monkeypatch):
    monkeypatch.setattr(prompts, "SYSTEM_PROMPT", "answer_first")


def test_the_grader_reads_the_answers_instructions_then_its_own_in_the_sections_language(
    graded_vault,
):
    vault = graded_vault(NOTES)
    models = FakeModels({"generate": DRAFT, "check": '{"score": "yes"}'})
    build_graph(models=models).invoke(
        {"question": "How long does the sourdough dough rest?"}, context=vault
    )
    grades = models.prompts("grade")
    assert len(grades) == 2
    english = next(g for g in grades if "sourdough dough rests" in g)
    german = next(g for g in grades if "Roggenbrot" in g)
    assert english.startswith(f"{GENERATE_SYSTEM}\n\n{GRADE_SYSTEM}\n<note number=")
    assert german.startswith(f"{GENERATE_SYSTEM}\n\n{GRADE_SYSTEM_DE}\n<note number=")
    # the answer and the check keep their own system prompts: the answer shares the grades'
    # first part, the answer's instructions, and nothing after it
    (answer,) = models.prompts("generate")
    (check,) = models.prompts("check")
    assert answer.startswith(f"{GENERATE_SYSTEM}\n<notes>")
    assert check.startswith(f"{CHECK_SYSTEM}\n")
