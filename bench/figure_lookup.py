"""The answer check's figure lookup, applied again to the graph's answers in every report.

For each ``bench/results/answers*.json`` (``rag eval --answers`` reports over
``tests/eval_notes``): how many drafted answers the lookup would withdraw among those with
every expected fact (each one a false withdrawal) and among the wrong ones, with the figures
it names, and which of those stood in that run (none, for a run made with the lookup as it
is now). No model is called: each draft is looked up in the sections graded relevant,
rebuilt from the notes as loading chunks them.

    .venv/bin/python bench/figure_lookup.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from graph.figures import ungrounded_figures  # noqa: E402
from graph.index.chunking import chunk_note  # noqa: E402
from graph.llm import declines  # noqa: E402
from nodes.generate import grounds  # noqa: E402

NOTES = ROOT / "tests" / "eval_notes"
NOT_STATED = "\n\nYour notes don't say this"


def sections() -> dict[tuple[str, str], dict[str, str]]:
    """Every chunk of the labelled notes by (note, heading path), as loading makes them."""
    found = {}
    for path in sorted(NOTES.rglob("*.md")):
        note = path.relative_to(NOTES).as_posix()
        for chunk in chunk_note(path.read_text(), 1500, 300):
            found[note, chunk.heading] = {
                "source": note,
                "heading": chunk.heading,
                "content": chunk.content,
            }
    return found


def main() -> None:
    by_heading = sections()
    for report in sorted((ROOT / "bench" / "results").glob("answers*.json")):
        graph = json.loads(report.read_text())["designs"].get("graph")
        if not graph:
            continue
        drafts = withdrawn_right = 0
        caught: list[str] = []
        newly: list[str] = []
        for row in graph["questions"]:
            draft = row["answer"].split(NOT_STATED)[0]
            drafted = row["no_answer_reason"] in (None, "unsupported")
            if not drafted or not draft or declines(draft):
                continue
            drafts += 1
            kept = [by_heading[g["source"], g["heading"]] for g in row["grades"] if g["relevant"]]
            figures = ungrounded_figures(draft, map(grounds, kept))
            if not figures:
                continue
            if row["answerable"] and row["facts_held"]:
                withdrawn_right += 1
            else:
                caught.append(f"{row['id']} ({', '.join(figures)})")
            if row["no_answer_reason"] != "unsupported":
                newly.append(row["id"])
        print(
            f"{report.name}: {drafts} drafts; withdrawn with every fact: {withdrawn_right}; "
            f"wrong ones withdrawn: {', '.join(caught) or 'none'}; "
            f"of these, stood in that run: {', '.join(newly) or 'none'}"
        )


if __name__ == "__main__":
    main()
