"""The answer reads the kept sections the grader was surest of first.

Each grade asks for the reply's token log-probabilities, so the grader's P(yes) is known
(``yes_probability``); the sections graded relevant reach the writer in that order, not in
retrieval's. A server without log-probabilities (Ollama before 0.12.11) leaves retrieval's.
"""

from __future__ import annotations

import pytest

from graph.builder import build_graph
from graph.warmup import settle
from tests.fakes import FakeModels
from tests.unit_tests.test_answer_check import verdict_logprobs

NOTES = {
    "sourdough.md": "# Sourdough\n\nThe sourdough dough rests overnight in the fridge.\n",
    "pizza.md": "# Pizza\n\nThe pizza dough rests 48 hours before it is stretched.\n",
    "bagel.md": "# Bagels\n\nBagel dough rests one night, then each bagel boils a minute.\n",
}
QUESTION = "How long does the sourdough dough rest?"
#: How sure the grader is of each section: the pizza's most, though retrieval ranks it second.
SURE = {"sourdough": 0.62, "pizza": 0.91, "Bagel": 0.2}


def p_yes_of(prompt: str) -> float:
    """The grader's P(yes) for the section in a grade's ``prompt``."""
    [word] = [w for w in SURE if w in prompt.split("Question:")[0]]
    return SURE[word]


def graded(prompt: str) -> str:
    return '{"score": "%s"}' % ("yes" if p_yes_of(prompt) >= 0.5 else "no")


def sureness(prompt: str) -> list:
    p_yes = p_yes_of(prompt)
    return verdict_logprobs("yes" if p_yes >= 0.5 else "no", p_yes)


@pytest.fixture
def vault(graded_vault):
    return graded_vault(NOTES)


def run(ctx, models):
    state = build_graph(models=models).invoke({"question": QUESTION}, context=ctx)
    settle(timeout=10)
    return state


def test_the_answer_reads_the_section_the_grader_was_surest_of_first(vault):
    models = FakeModels({"grade": graded}, logprobs={"grade": sureness})
    state = run(vault, models)
    ranked = [g["source"] for g in state["grades"]]
    assert ranked[0] == "sourdough.md"  # retrieval's first
    assert [d["source"] for d in state["documents"]] == ["pizza.md", "sourdough.md"]
    answer = models.prompts("generate")[0]
    assert answer.index("The pizza dough") < answer.index("The sourdough dough")
    sure = {g["source"]: g["p_yes"] for g in state["grades"]}
    assert sure == pytest.approx({"sourdough.md": 0.62, "pizza.md": 0.91, "bagel.md": 0.2})
    # every grade asked for the log-probabilities that say how sure
    assert all(r.get("logprobs") is True for r in models.models["grade"].requests)


def test_without_log_probabilities_the_sections_keep_retrievals_order(vault):
    models = FakeModels({"grade": graded})
    state = run(vault, models)
    assert [g["p_yes"] for g in state["grades"]] == [None, None, None]
    assert [d["source"] for d in state["documents"]] == ["sourdough.md", "pizza.md"]
