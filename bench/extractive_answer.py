"""An extractive answer instead of the writer's, replayed on every set.

The writer's call is the longest of a question: it reads every kept section again and writes
20-60 tokens. An extractive answer needs no model call and can be verified by a program: it
is the line of the kept sections (a sentence, for a line over 200 characters) sharing the most
words with the question (``graph/window.py``'s reading, the one the grader's window uses),
the first such line in the order the writer reads them, cited by its section's number. The
figure and kind lookups still read it (``nodes/generate.py``: ``lookup``); no other check
applies, as every word is the notes'.

Replayed on the graph's rows (the surest section first, ``bench/grader_examples.py``:
``--drafts``/NAME.surest-first.json): where the graph wrote a draft, the extract replaces it;
where it wrote none (every section turned away, or none above the floor) nothing changes.
Scored as ``rag eval --answers`` scores the graph; totals only, no model call.

    .venv/bin/python bench/extractive_answer.py --record bench/results/extractive_answer.json
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nodes.generate as generate  # noqa: E402
from app.evaluation import sets as protocol  # noqa: E402
from app.evaluation.answers import load_questions, select  # noqa: E402
from bench.check_rules import outcome, the_graphs_check  # noqa: E402
from bench.draft_rules import as_read, relisted  # noqa: E402
from bench.evidence_check import pieces  # noqa: E402
from bench.grader_variants import sets_parser  # noqa: E402
from bench.instructions import SETS  # noqa: E402
from graph.window import mentions, question_terms  # noqa: E402


def extract(question: str, chunks: list[dict]) -> str | None:
    """The line sharing the most words with ``question``, cited; ``None`` when none shares one."""
    terms = question_terms(question)
    best: tuple[int, str, int] | None = None
    for number, chunk in enumerate(chunks, start=1):
        for unit in pieces(chunk["content"]):
            shared = sum(mentions(term, unit.lower()) for term in terms)
            if shared and (best is None or shared > best[0]):
                best = (shared, unit, number)
    return f"{best[1]} [{best[2]}]" if best else None


def extracted(row: dict[str, Any], question: str) -> dict[str, Any]:
    """``row`` with its draft replaced by the extract, and whether a lookup withdraws it."""
    state = row["state"]
    line = extract(question, row["chunks"]) if state.get("answer") and row["chunks"] else None
    if line is None:
        return row
    sources = generate.cite(row["chunks"])
    return {
        **row,
        "state": {**state, "answer": line, "sources": sources, "no_answer_reason": None},
        "extract withdrawn": bool(generate.lookup(question, line, row["chunks"])),
    }


def extract_check(row: dict[str, Any], question: str) -> bool:
    """The graph's check for a draft, the lookups alone for an extract."""
    if "extract withdrawn" in row:
        return row["extract withdrawn"]
    return the_graphs_check(row, question)


def measure(name: str, manifest: dict, drafts: Path) -> dict[str, Any]:
    eval_set = manifest[name]
    split = "tune" if name == "answers" else "all"
    questions = {q.id: q for q in select(load_questions(eval_set.path), split)}
    kept = json.loads((drafts / f"{name}.surest-first.json").read_text())
    rows = [relisted(as_read({"id": qid, **kept[qid]})) for qid in questions]
    extracts = [extracted(row, questions[row["id"]].question) for row in rows]
    return {
        "the graph": outcome(rows, questions, the_graphs_check),
        "an extractive answer": outcome(extracts, questions, extract_check),
        "drafts replaced": sum("extract withdrawn" in row for row in extracts),
    }


def main() -> None:
    args = sets_parser(__doc__).parse_args()
    manifest = {s.name: s for s in protocol.read_manifest(args.sets)}
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "sets": {}}
    for name in args.only or SETS:
        results["sets"][name] = measure(name, manifest, Path(args.drafts))
        print(name, json.dumps(results["sets"][name]), flush=True)
    if args.record:
        Path(args.record).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
