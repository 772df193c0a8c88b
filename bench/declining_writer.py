"""The writer asked, last, to say when the notes do not answer, on the tune sets.

The 1.5B writer almost never declines: of the graph's drafts on every set, one says the notes
do not answer. A near miss the grader keeps a section for is answered, and only the check can
stop it. The answer's instructions (``GENERATE_SYSTEM``) ask it to say so when the notes do not
answer this exact question; the last line of its user turn (``ANSWER_REQUEST``), which a small
model follows most, does not. This design puts that condition first in the last line and keeps
the rest of it as it is (``DECLINE_REQUEST``); nothing else changes (the graph's grades, the
surest section first, the check).

Each question of the chosen sets keeps the default's grades (``--drafts``/NAME.properties-
grades.json) and reads its kept sections the surest first, as the graph does; a question the
grader turns away keeps the default's row. Drafted by the graph's own ``generate`` with the
check off, checked as the graph checks. Totals only, with the stage each question was lost at.

    make declining-writer
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import graph.prompts as prompts  # noqa: E402
from bench import grader_examples, grader_variants, instructions  # noqa: E402
from graph.llm import declines  # noqa: E402

DECLINE_REQUEST = (
    "If the notes above do not answer this exact question, say that your notes don't say. "
    "Otherwise answer in a full sentence from them, then give the number of the note it comes "
    "from in square brackets, like [1]."
)
DECLINING = [(prompts, "ANSWER_REQUEST", {**prompts.ANSWER_REQUEST, "en": DECLINE_REQUEST})]


def measure(name: str, manifest: dict, drafts: Path) -> dict[str, Any]:
    """``name``'s figures under the graph's writer and under the declining one."""
    questions, default_rows, rows = grader_examples.drafted_from_the_defaults_grades(
        name,
        manifest,
        drafts,
        "declining",
        lambda question, graded, context: instructions.row_of(DECLINING, question, graded, context),
    )
    answered = [rows[qid]["state"]["answer"] for qid in questions if rows[qid]["state"]["answer"]]
    return {
        "graph": instructions.figures(default_rows, questions),
        "declining writer": instructions.figures(rows, questions),
        "drafts declining": sum(declines(answer) for answer in answered),
        "drafts": len(answered),
    }


def main() -> None:
    args = grader_variants.sets_parser(__doc__).parse_args()
    args.only = args.only or ["answers", "daily-vault"]
    instructions.each_set(args, {"request": DECLINE_REQUEST}, measure)


if __name__ == "__main__":
    main()
