"""The writer given the question before the notes too, on the tune sets.

The answer's user turn holds the note sections, then the question, then the request
(``NOTES_AND_QUESTION``, ``ANSWER_REQUEST``): the 1.5B model reads every section before it knows
what it is looking for, and its commonest error is a figure of the right note about another
quantity. A decoder-only model reads each token in the light of what came before it only, so
a question read first can shape how the notes are read. This design asks the question once
more before the notes and changes nothing else (the graph's grades, the surest section first,
the request, the check).

Each question of the chosen sets keeps the default's grades (``--drafts``/NAME.properties-
grades.json) and reads its kept sections the surest first, as the graph does; a question the
grader turns away keeps the default's row. Drafted by the graph's own ``generate`` with the
check off, checked as the graph checks. Totals only, with the stage each question was lost at.

    make question-first-writer
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import graph.prompts as prompts  # noqa: E402
from bench import draft_rules, grader_examples, grader_variants, instructions  # noqa: E402

QUESTION_FIRST = "Question: {question}\n\n" + prompts.NOTES_AND_QUESTION
ASKED_FIRST = [(prompts, "NOTES_AND_QUESTION", QUESTION_FIRST)]


def measure(name: str, manifest: dict, drafts: Path) -> dict[str, Any]:
    """``name``'s figures under the graph's writer and with the question before the notes."""
    questions, default_rows, rows = grader_examples.drafted_from_the_defaults_grades(
        name,
        manifest,
        drafts,
        "question-first",
        lambda question, graded, context: instructions.row_of(
            ASKED_FIRST, question, graded, context
        ),
    )
    # Both as the graph lists sources now (drafts made before it listed them as read).
    return {
        "graph": instructions.figures(listed(default_rows), questions),
        "the question before the notes too": instructions.figures(listed(rows), questions),
    }


def listed(rows: dict[str, Any]) -> dict[str, Any]:
    """Each row's sources listed by what they write, as the graph lists them."""
    return {
        qid: draft_rules.relisted(draft_rules.as_read(row)) if "chunks" in row else row
        for qid, row in rows.items()
    }


def main() -> None:
    args = grader_variants.sets_parser(__doc__).parse_args()
    args.only = args.only or ["answers", "daily-vault"]
    instructions.each_set(args, {"user turn": QUESTION_FIRST}, measure)


if __name__ == "__main__":
    main()
