"""Tables read one line a row, each cell after its header (parser 3), against the commit before.

Until parser 3 a markdown table reached the index as unstructured's text of it: every cell in
one line, the header's words first ("Wer Fach Telefon Dr. Brandt Orthopädin 0341 9123456
Dr. Yilmaz ..."). Parser 3 (dfa8ce8, ``table_text`` in ``graph/index/chunking.py`` there)
wrote each row as a line of ``header: cell`` pairs. Measured here, it was not kept (reverted
in the commit after the bench; docs/quality.md, "A table one line a row").

Each side (``--before COMMIT`` and ``--now COMMIT``, a git worktree of each; ``--now .`` this
tree) loads each chosen set's notes into an index of its own with its own code, in a worker
process, and searches every question as the graph searches. A question whose sections (note,
heading and text, in order) are the same on both sides is asked the same prompts on both, so
it is not run. Every other question is answered on both sides by the side's own graph
(``rag eval --answers``'s ``run_design``: every stage, the check included), alternating which
side goes first; both sides share the one model server the environment names
(``OLLAMA_HOST``).

A tune set's before side can be read instead from a report of the earlier commit's graph over
every question (``--before-report NAME=PATH``, ``rag eval --answers --report``'s rows, scored
again by today's scorer): the same code, so only the questions' sections are searched there.

Totals only, per set: right (every fact and an expected note cited inline) and abstained, with
the stage each question was lost at, over the questions whose sections differ; the rest of a
set is the same on both sides. A tune set's rows are kept too.

    make table-rows TABLE_ROWS_ARGS="--only de-alltag --only daily-vault"
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.evaluation import sets as protocol  # noqa: E402
from app.evaluation.answers import Question, cites_expected, facts_in, load_questions  # noqa: E402
from bench.worktree import worktree  # noqa: E402

#: What a side's worker runs, with its commit's code (only APIs both commits have): load one
#: set's notes into an index of its own, then answer requests read from stdin, one per line:
#: ``{"search": true}`` gives every question's sections, ``{"answer": ID}`` one question's row
#: as ``rag eval --answers`` scores it.
WORKER = r"""
import json, sys
from app.evaluation import sets as protocol
from app.evaluation.answers import graphs, load_questions, run_design
from graph.context import Context
from graph.index.ingest import load_notes
from graph.index.retrieval import search_notes
from graph.index.vectorstore import with_embedding_model
from graph.models import default_models

manifest, name, folder = sys.argv[1], sys.argv[2], sys.argv[3]
eval_set = {s.name: s for s in protocol.read_manifest(manifest)}[name]
base = Context(embedding_model="all-minilm", chroma_persist_directory=folder)
context = with_embedding_model(protocol.context_for(base, eval_set))
models = default_models()
embeddings = models.embeddings(context)
load_notes(context, protocol.notes_folder(eval_set), embeddings)
questions = {q.id: q for q in load_questions(eval_set.path)}
app = graphs(models, ["graph"])["graph"]
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    if request.get("search"):
        found = {
            q.id: [
                [c["source"], c["heading"], c["content"]]
                for c in search_notes(context, embeddings, q.question).relevant
            ]
            for q in questions.values()
        }
        print(json.dumps(found), flush=True)
    else:
        row = run_design("graph", app, [questions[request["answer"]]], context)[0]
        keep = ("id", "answerable", "abstained", "facts_cited_inline", "stage", "error",
                "answer", "check")
        print(json.dumps({**{k: row[k] for k in keep}, "work": row["work"]}), flush=True)
"""


class Side:
    """One commit's worker for one set."""

    def __init__(self, tree: Path, manifest: Path, name: str, folder: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(manifest), name, str(folder)],
            cwd=tree,
            env={**os.environ, "PYTHONPATH": str(tree)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.ask({})  # waits for "ready"

    def ask(self, request: dict[str, Any]) -> Any:
        assert self.process.stdin is not None and self.process.stdout is not None
        if request:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"a worker stopped (exit {self.process.wait()})")
        return json.loads(line)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


def right(row: dict[str, Any]) -> bool:
    """Every fact and an expected note cited inline (an answerable question)."""
    return bool(row["answerable"] and row["facts_cited_inline"])


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Right and abstained over ``rows``, the stage each was lost at, and the work."""
    answerable = [r for r in rows if r["answerable"]]
    others = [r for r in rows if not r["answerable"]]
    calls = sum(r["work"]["calls"] for r in rows)
    tokens = sum(r["work"]["prompt_tokens"] for r in rows)
    seconds = sum(r["work"]["wall_s"] for r in rows)
    return {
        "right": [sum(map(right, answerable)), len(answerable)],
        "abstained": [sum(r["abstained"] for r in others), len(others)],
        "lost": dict(Counter(r["stage"] for r in answerable if not right(r))),
        "stopped": dict(Counter(r["stage"] for r in others)),
        "calls_per_question": round(calls / len(rows), 2) if rows else None,
        "prompt_tokens_per_question": round(tokens / len(rows)) if rows else None,
        "seconds_per_question": round(seconds / len(rows), 1) if rows else None,
        "errors": sum(1 for r in rows if r["error"]),
    }


def rescored(row: dict[str, Any], item: Question) -> dict[str, Any]:
    """A recorded row scored by today's scorer (``fact_found``: a date in any spelling)."""
    facts = facts_in(item, row["answer"], bool(row["no_answer_reason"]))
    held = bool(facts) and all(f["found"] for f in facts)
    cited = held and cites_expected(row["cited_inline"], item.sources)
    return {**row, "facts": facts, "facts_cited_inline": cited if item.answerable else None}


def recorded(path: Path, questions: dict[str, Question]) -> dict[str, dict[str, Any]]:
    """Every row of a ``rag eval --answers`` report of the graph, scored again, by question."""
    rows = json.loads(path.read_text())["designs"]["graph"]["questions"]
    return {row["id"]: rescored(row, questions[row["id"]]) for row in rows}


def measure(
    name: str,
    manifest: Path,
    trees: dict[str, Path],
    work: Path,
    kept: Path | None = None,
    save: Callable[[dict[str, Any]], None] = lambda figures: None,
) -> dict[str, Any]:
    """One set: the questions whose sections differ, answered on both sides (or the before
    side's rows read from ``kept``); ``save`` gets the figures so far after each question."""
    sides = {
        side: Side(tree, manifest, name, work / f"{name}-{side}") for side, tree in trees.items()
    }
    try:
        found = {side: worker.ask({"search": True}) for side, worker in sides.items()}
        before, now = found["before"], found["now"]
        differ = [qid for qid in now if now[qid] != before[qid]]
        rows: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
        eval_set = {s.name: s for s in protocol.read_manifest(manifest)}[name]
        questions = {q.id: q for q in load_questions(eval_set.path)}
        before_rows = recorded(kept, questions) if kept else {}
        for number, qid in enumerate(differ):
            order = ("before", "now") if number % 2 == 0 else ("now", "before")
            for side in order:
                if side == "before" and before_rows:
                    rows[side].append(before_rows[qid])
                else:
                    rows[side].append(sides[side].ask({"answer": qid}))
            print(f"[{name} {number + 1}/{len(differ)}]", file=sys.stderr, flush=True)
            save(figures(len(now), differ, rows, kept, eval_set.role == "tune"))
    finally:
        for worker in sides.values():
            worker.close()
    return figures(len(now), differ, rows, kept, eval_set.role == "tune")


def figures(
    questions: int,
    differ: list[str],
    rows: dict[str, list[dict[str, Any]]],
    kept: Path | None,
    tune: bool,
) -> dict[str, Any]:
    """A set's figures over the questions answered so far; a tune set's rows too."""
    shown = {side: [_shown(row) for row in side_rows] for side, side_rows in rows.items()}
    return {
        "questions": questions,
        "questions whose sections differ": len(differ),
        "answered on both sides": len(rows["now"]),
        "before side": f"recorded: {kept}" if kept else "asked",
        **{side: totals(side_rows) for side, side_rows in rows.items()},
        "date": time.strftime("%Y-%m-%d"),
        **({"rows": shown} if tune else {}),
    }


def _shown(row: dict[str, Any]) -> dict[str, Any]:
    """What a tune set's row shows: the question, how it ended and the answer."""
    keep = ("id", "answerable", "stage", "abstained", "answer", "check", "error")
    return {**{k: row.get(k) for k in keep}, "right": right(row)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="35e72cc", help="the commit before parser 3")
    parser.add_argument(
        "--now",
        default="dfa8ce8",
        help="the commit with parser 3 (a worktree of it; '.' this tree)",
    )
    parser.add_argument("--sets", default="tests/eval_sets/sets.json")
    parser.add_argument("--only", action="append", required=True, help="a set's name")
    parser.add_argument("--record", help="add the figures here (JSON)")
    parser.add_argument(
        "--before-report",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="a set's before side read from this report of the before commit's graph",
    )
    args = parser.parse_args()
    reports = {n: Path(p) for n, p in (item.split("=", 1) for item in args.before_report)}
    manifest = (ROOT / args.sets).resolve()
    record = Path(args.record) if args.record else None
    results: dict[str, Any] = {"before": args.before, "now": args.now, "sets": {}}
    if record and record.is_file():
        results = json.loads(record.read_text())
    with ExitStack() as stack:
        work, before_tree = stack.enter_context(worktree(args.before, "table-rows-"))
        now_tree = ROOT
        if args.now != ".":
            now_tree = stack.enter_context(worktree(args.now, "table-rows-now-"))[1]
        for name in args.only:

            def save(figures: dict[str, Any], name: str = name) -> None:
                results["sets"][name] = figures
                if record:
                    record.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")

            trees = {"before": before_tree, "now": now_tree}
            kept = reports.get(name)
            done = measure(name, manifest, trees, work, kept, save)
            save(done)
            print(json.dumps({name: done}, indent=1), flush=True)


if __name__ == "__main__":
    main()
