"""The answer check's lookups, applied again to the answers of both designs in every report.

For each ``bench/results/answers*.json`` (``rag eval --answers`` reports over
``tests/eval_notes``): how many drafted answers the lookups would withdraw among those with
every expected fact (each one a false withdrawal) and among the wrong ones, with what they
found (a figure in none of the sections, or figures of another kind than the question asks
for), and which of those stood in that run (none, for a run made with the lookups as they
are now). No model is called: each draft is looked up in the sections graded relevant,
rebuilt from the notes as loading chunks them.

    .venv/bin/python bench/figure_lookup.py
    .venv/bin/python bench/figure_lookup.py --adversarial   # seconds on inputs built to stall it
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from graph.figures import figures_of_another_kind, ungrounded_figures  # noqa: E402
from graph.index.chunking import chunk_note  # noqa: E402
from graph.index.ingest import LoadOptions  # noqa: E402
from graph.index.retrieval import RetrievedChunk  # noqa: E402
from graph.llm import declines  # noqa: E402
from nodes.generate import lookup  # noqa: E402

NOTES = ROOT / "tests" / "eval_notes"
LOAD = LoadOptions()  # chunked as `rag load` chunks by default
NOT_STATED = "\n\nYour notes don't say this"


def sections() -> dict[tuple[str, str], RetrievedChunk]:
    """Every chunk of the labelled notes by (note, heading path), as loading makes them."""
    found = {}
    for path in sorted(NOTES.rglob("*.md")):
        note = path.relative_to(NOTES).as_posix()
        for chunk in chunk_note(path.read_text(), LOAD.chunk_size, LOAD.chunk_overlap):
            found[note, chunk.heading] = RetrievedChunk(
                content=chunk.content,
                source=note,
                heading=chunk.heading,
                score=1.0,
                images=[],
                tags=[],
            )
    return found


@dataclass
class Lookup:
    """What the lookups make of one design's drafts in one report."""

    report: str
    design: str
    drafts: int = 0
    withdrawn_with_every_fact: list[str] = field(default_factory=list)
    wrong_withdrawn: list[str] = field(default_factory=list)
    stood_then: list[str] = field(default_factory=list)


def lookups() -> list[Lookup]:
    """One per report and design, over every recorded ``answers*.json``."""
    by_heading = sections()
    found = []
    for report in sorted((ROOT / "bench" / "results").glob("answers*.json")):
        designs = json.loads(report.read_text())["designs"]
        for design in ("graph", "classic"):
            result = Lookup(report.name, design)
            for row in designs.get(design, {}).get("questions", []):
                draft = row["answer"].split(NOT_STATED)[0]
                drafted = row["no_answer_reason"] in (None, "unsupported")
                if not drafted or not draft or declines(draft):
                    continue
                result.drafts += 1
                kept = [
                    by_heading[g["source"], g["heading"]] for g in row["grades"] if g["relevant"]
                ]
                looked_up = lookup(row["question"], draft, kept)
                if not looked_up:
                    continue
                if row["answerable"] and row["facts_held"]:
                    result.withdrawn_with_every_fact.append(row["id"])
                else:
                    found_out = looked_up[0].split(": ", 1)[1]
                    result.wrong_withdrawn.append(f"{row['id']} ({found_out})")
                if row["no_answer_reason"] != "unsupported":
                    result.stood_then.append(row["id"])
            if result.drafts:
                found.append(result)
    return found


#: Answers and notes built to stall a pattern that backtracks: ``(answer, note)`` of about
#: ``size`` characters each.
ADVERSARIAL = {
    "newlines": lambda n: ("\n" * n + "x", "note"),
    "spaces and newlines": lambda n: (" \n" * (n // 2), "note"),
    ":00 runs": lambda n: ("1" + ":00" * (n // 3) + ":01", "1" + ":00" * (n // 3) + ":01"),
    "digits": lambda n: ("1" * n, "2" * n),
    "dotted numbers": lambda n: ("1." * (n // 2), ".5" * (n // 2)),
    "open citations": lambda n: ("[1" * (n // 2), "[" + "1," * (n // 2)),
    "list markers": lambda n: ("1) " * (n // 3), "(" + " 1)" * (n // 3)),
    "spelled numbers": lambda n: ("5", "twenty a hundred may second 1 pm " * (n // 33)),
    "spaced digits": lambda n: ("1x" * (n // 2), "1 " * (n // 2)),
    "question words": lambda n: ("5 km", "how much how many what " * (n // 23)),
    "clocks written with h": lambda n: ("19h30 " * (n // 6), "19h " * (n // 4)),
}


def adversarial(size: int) -> dict[str, float]:
    """Seconds both lookups take on each of ``ADVERSARIAL`` at ``size`` characters.

    The note is also the question: both come from outside.
    """
    timings = {}
    for name, make in ADVERSARIAL.items():
        answer, note = make(size)
        started = time.perf_counter()
        ungrounded_figures(answer, [note])
        figures_of_another_kind(note, answer)
        timings[name] = time.perf_counter() - started
    return timings


def main() -> None:
    if sys.argv[1:2] == ["--adversarial"]:
        for size in (100_000, 400_000):
            timings = adversarial(size)
            print(
                f"{size:,} characters: " + ", ".join(f"{k} {v:.2f} s" for k, v in timings.items())
            )
        return
    for r in lookups():
        print(
            f"{r.report}, {r.design}: {r.drafts} drafts; withdrawn with every fact: "
            f"{', '.join(r.withdrawn_with_every_fact) or 'none'}; wrong ones withdrawn: "
            f"{', '.join(r.wrong_withdrawn) or 'none'}; of these, stood in that run: "
            f"{', '.join(r.stood_then) or 'none'}"
        )


if __name__ == "__main__":
    main()
