"""Citations listed by the sections that write what they cite, against the graph before, per set.

``graph/citations.py`` reorders the sources listed under an answer so that each inline
citation's number names the section writing the most of the figures and names it follows.
The draft, its check and whether it abstains do not change, so each question's default row
(``--drafts``/NAME.surest-first.json, drafted by the graph's own ``generate`` with the check
off: ``make grader-examples GRADER_EXAMPLES_ARGS="--design 'surest first'"``) is scored twice
with the graph's check: its sources as listed before, and as ``listed_by_what_they_write``
lists them. No model call. Prints per set right and abstained, where each question was lost,
and how many listings change; ``--show`` prints a tune set's changed questions.

    make citations
    .venv/bin/python bench/citations.py --only daily-vault --show
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.evaluation import sets as protocol  # noqa: E402
from app.evaluation.answers import load_questions, select  # noqa: E402
from bench.check_rules import outcome, the_graphs_check  # noqa: E402
from bench.grader_variants import sets_parser  # noqa: E402
from bench.instructions import SETS  # noqa: E402
from bench.writer_variants import lost_at  # noqa: E402
from graph.citations import listed_by_what_they_write  # noqa: E402


def relisted(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its sources listed as the graph lists them now."""
    state = row["state"]
    if not state.get("sources") or not state.get("answer"):
        return row
    listed = listed_by_what_they_write(state["answer"], state["sources"], row["chunks"])
    if listed == list(state["sources"]):
        return row
    return {**row, "state": {**state, "sources": listed}}


def measure(name: str, manifest: dict, drafts: Path, show: bool) -> dict[str, Any]:
    eval_set = manifest[name]
    split = "tune" if name == "answers" else "all"
    questions = {q.id: q for q in select(load_questions(eval_set.path), split)}
    kept = json.loads((drafts / f"{name}.surest-first.json").read_text())
    before = [{"id": qid, **kept[qid]} for qid in questions]
    after = [relisted(row) for row in before]
    changed = [b["id"] for b, a in zip(before, after, strict=True) if a is not b]
    if show and eval_set.role == "tune":
        for qid in changed:
            row = kept[qid]
            print(f"  {qid}: {row['state']['answer'][:120]!r}", file=sys.stderr)
    return {
        "as listed before": {
            **outcome(before, questions, the_graphs_check),
            "stages": lost_at(before, questions),
        },
        "listed by what they write": {
            **outcome(after, questions, the_graphs_check),
            "stages": lost_at(after, questions),
        },
        "listings changed": len(changed),
    }


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
