"""Two checks of a draft against the question's own names and figures, replayed on every set.

The graph's check reads the draft: its figures and names must be written in the sections it
cites (``nodes/generate.py``: ``without_the_model``). A near miss often answers with a figure
its section writes about something else than the question names (another pet's food, another
person's birthday). Each design adds one rule, and changes nothing else:

- ``question terms``: a draft whose question has a figure or a name (``graph/names.py``'s
  reading; names only where capitals mark them) that none of the cited sections writes, in
  its text, heading or note path, is withdrawn;
- ``names beside the figures``: a draft its figures settle is settled only where each name of
  the question is written in a paragraph holding one of its figures, or in that section's
  heading or note path; else it is withdrawn (``withdraw``) or the model decides (``model``,
  asked as the graph asks it, as ``bench/check_replays.py`` asks it; verdicts kept in
  ``--drafts``/question-terms.verdicts.json).

Replayed on the graph's rows (the surest section first, ``bench/grader_examples.py``:
``--drafts``/NAME.surest-first.json), scored as ``rag eval --answers`` scores the graph;
totals only.

    make question-terms
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nodes.generate as generate  # noqa: E402
from bench import grader_variants, instructions  # noqa: E402
from bench.check_replays import Checks  # noqa: E402
from bench.check_rules import outcome  # noqa: E402
from bench.check_rules import the_graphs_check as graphs_check  # noqa: E402
from graph.figures import ungrounded_figures  # noqa: E402
from graph.names import capitals_mark_names, date_written, names_of, unwritten_names  # noqa: E402

_PARAGRAPH = re.compile(r"\n\s*\n")


def unwritten_terms(question: str, chunks: list[Any]) -> list[str]:
    """The question's figures and names (where capitals mark them) no cited section writes."""
    grounds = [generate.grounds(c) for c in chunks]
    missing = ungrounded_figures(question, grounds)
    if capitals_mark_names([question, *(c["content"] for c in chunks)]):
        missing += unwritten_names(question, grounds)
    return missing


def names_apart(question: str, answer: str, chunks: list[Any]) -> list[str]:
    """The question's names written neither in a paragraph holding one of ``answer``'s
    figures nor in that paragraph's section heading or note path."""
    texts = [c["content"] for c in chunks]
    figures = len(ungrounded_figures(answer, []))
    if not figures or not capitals_mark_names([question, *texts]):
        return []
    beside = []
    for chunk in chunks:
        held = [
            p
            for p in _PARAGRAPH.split(chunk["content"])
            if len(ungrounded_figures(answer, [p])) < figures
        ]
        if held:
            beside += [chunk["source"], chunk["heading"], *held]
    written = "\n".join(beside).casefold()
    return [
        name
        for name in names_of(question)
        if name.casefold() not in written and not date_written(name, written)
    ]


class Designs(Checks):
    """The graph's check and each design; the model asked as ``Checks.model`` asks it."""

    def question_terms(self, row: dict[str, Any], question: str) -> bool:
        if "whole" in row and unwritten_terms(question, row["chunks"]):
            return True
        return graphs_check(row, question)

    def names_beside(self, row: dict[str, Any], question: str, then: str) -> bool:
        if "whole" not in row:
            return False
        answer = row["state"]["answer"]
        settled = generate.without_the_model(question, answer, row["chunks"])
        if settled and settled[0] == "figures" and names_apart(question, answer, row["chunks"]):
            return then == "withdraw" or self.model(row, question)
        return graphs_check(row, question)


def measure(name: str, manifest: dict, drafts: Path) -> dict[str, Any]:
    """``name``'s right and abstained under the graph's check and under each design."""
    context, questions = instructions.set_questions(name, manifest)
    rows = json.loads((drafts / f"{name}.surest-first.json").read_text())
    listed = [{"id": qid, **rows[qid]} for qid in questions]
    designs = Designs(drafts / "question-terms.verdicts.json", context, name)
    checks: dict[str, Callable[[dict, str], bool]] = {
        "the graph's check": graphs_check,
        "question terms": designs.question_terms,
        "names beside the figures, withdraw": lambda r, q: designs.names_beside(r, q, "withdraw"),
        "names beside the figures, model": lambda r, q: designs.names_beside(r, q, "model"),
    }
    figures: dict[str, Any] = {d: outcome(listed, questions, how) for d, how in checks.items()}
    return {**figures, "model consulted": designs.consulted}


def main() -> None:
    args = grader_variants.sets_parser(__doc__).parse_args()
    instructions.each_set(args, {}, measure)


if __name__ == "__main__":
    main()
