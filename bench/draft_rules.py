"""Rules the graph applies to a written draft without a model call, each against the graph before.

Two rules read the draft the writer wrote, and change neither it nor the sections it was
written from, so each question's default row (``--drafts``/NAME.surest-first.json, drafted by
the graph's own ``generate`` with the check off: ``make grader-examples
GRADER_EXAMPLES_ARGS="--design 'surest first'"``) is scored as `rag eval --answers` scores it,
with the graph's check, under each design in turn:

- ``as listed before``: the sources in the order the writer read them, no draft withdrawn for
  restating its question (the graph until 2026-12-07);
- ``listed by what they write``: the sources listed so that each inline citation's number names
  the section writing the most of what it cites (``graph/citations.py``);
- ``a restated question withdrawn``: that, and a draft that restates its question and ends
  where the answer belongs ("The microchip number of Pilchard is [1].") withdrawn by the check
  (``graph/restated.py``).

No model call. Prints per set right and abstained, where each question was lost, and how many
questions each design changes; ``--show`` prints a tune set's changed questions.

    make draft-rules
    .venv/bin/python bench/draft_rules.py --only daily-vault --show
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
from bench.check_rules import outcome, patched, the_graphs_check  # noqa: E402
from bench.grader_variants import sets_parser  # noqa: E402
from bench.instructions import SETS  # noqa: E402
from bench.writer_variants import lost_at  # noqa: E402
from graph.citations import listed_by_what_they_write  # noqa: E402

#: Each design: whether the sources are listed by what they write, whether a draft restating
#: its question is withdrawn.
DESIGNS = {
    "as listed before": (False, False),
    "listed by what they write": (True, False),
    "a restated question withdrawn": (True, True),
}


def as_read(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its sources listed in the order the writer read them (``cite``)."""
    return {**row, "state": {**row["state"], "sources": generate.cite(row["chunks"])}}


def relisted(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its sources listed as the graph lists them now (itself where unchanged)."""
    state = row["state"]
    if not state.get("sources") or not state.get("answer"):
        return row
    listed = listed_by_what_they_write(state["answer"], state["sources"], row["chunks"])
    if listed == list(state["sources"]):
        return row
    return {**row, "state": {**state, "sources": listed}}


def scored(rows: list[dict], questions: dict, restated: bool) -> dict[str, Any]:
    """Right and abstained, and where each question was lost, under the graph's check."""
    kept = [] if restated else [(generate, "leaves_out_the_answer", lambda question, answer: False)]
    with patched(kept):
        return {**outcome(rows, questions, the_graphs_check), "stages": lost_at(rows, questions)}


def measure(name: str, manifest: dict, drafts: Path, show: bool) -> dict[str, Any]:
    eval_set = manifest[name]
    split = "tune" if name == "answers" else "all"
    questions = {q.id: q for q in select(load_questions(eval_set.path), split)}
    kept = json.loads((drafts / f"{name}.surest-first.json").read_text())
    # A row drafted since the graph lists by what they write is listed as read again first.
    rows = [as_read({"id": qid, **kept[qid]}) for qid in questions]
    listed = [relisted(row) for row in rows]
    restating = [
        row["id"]
        for row in rows
        if generate.leaves_out_the_answer(
            questions[row["id"]].question, row["state"]["answer"] or ""
        )
    ]
    changed = {
        "listings changed": [b["id"] for b, a in zip(rows, listed, strict=True) if a is not b],
        "drafts restating their question": restating,
    }
    if show and eval_set.role == "tune":
        for what, ids in changed.items():
            for qid in ids:
                print(f"  {what}: {qid}: {kept[qid]['state']['answer'][:120]!r}", file=sys.stderr)
    result: dict[str, Any] = {}
    for design, (relist, restated) in DESIGNS.items():
        result[design] = scored(listed if relist else rows, questions, restated)
    return {**result, **{what: len(ids) for what, ids in changed.items()}}


def main() -> None:
    parser = sets_parser(__doc__)
    parser.add_argument("--show", action="store_true", help="a tune set's changed questions")
    args = parser.parse_args()
    manifest = {s.name: s for s in protocol.read_manifest(args.sets)}
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "sets": {}}
    for name in args.only or SETS:
        results["sets"][name] = measure(name, manifest, Path(args.drafts), args.show)
        print(name, json.dumps(results["sets"][name], ensure_ascii=False), flush=True)
    if args.record:
        Path(args.record).write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
