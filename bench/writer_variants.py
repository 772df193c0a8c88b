"""Designs of the writer (the answer's prompt) against the graph's own, set by set.

Each question of the chosen sets is searched and graded as in ``bench/grader_variants.py``
(the grades kept in ``--drafts``/NAME.grades.json, shared with it), the sections the graph
keeps (each graded on its question's window) are written from by the graph's own
``generate`` with the check off, once per writer design, and the graph's check is applied
(``bench/check_rules.py``: ``the_graphs_check``, the model asked where the graph asks it).
Drafts are kept in ``--drafts``/NAME.writer-drafts.json. Only totals are printed and
recorded for validation sets; ``--show`` prints a tune set's questions that a design changes.

    make writer-variants      # the daily vault (tune), the tune half
    .venv/bin/python bench/writer_variants.py --only daily-vault --show
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import graph.prompts as prompts  # noqa: E402
from app.evaluation import sets as protocol  # noqa: E402
from app.evaluation.answers import load_questions, select, stage  # noqa: E402
from bench.check_rules import outcome, patched, the_graphs_check  # noqa: E402
from bench.grader_variants import (  # noqa: E402
    _drafted,
    grade_set,
    kept_by,
    loaded,
    sets_parser,
    unanswered,
)
from graph.context import Context  # noqa: E402

#: The graph's own writer, the baseline.
GRAPHS = "the graph's writer"
#: Each design: the patches it writes under (module, attribute, value).
DESIGNS: dict[str, list[tuple[Any, str, Any]]] = {
    GRAPHS: [],
    # Multi-part questions were answered in one part ("in a full sentence", "the note it comes
    # from"): the request asks for every part, each cited where it is said.
    "every part": [
        (
            prompts,
            "ANSWER_REQUEST",
            {
                **prompts.ANSWER_REQUEST,
                "en": "Answer every part of the question in full sentences from the notes "
                "above. Give the number of the note each part comes from in square brackets, "
                "like [1], right after it.",
            },
        )
    ],
    # The graph's request as it is, after a sentence asking for each thing asked.
    "both things, then the graph's request": [
        (
            prompts,
            "ANSWER_REQUEST",
            {
                **prompts.ANSWER_REQUEST,
                "en": "If the question asks for two things, give both. "
                + prompts.ANSWER_REQUEST["en"],
            },
        )
    ],
    # The graph's request with "in a full sentence" made "every part of the question".
    "every part, cited at the end": [
        (
            prompts,
            "ANSWER_REQUEST",
            {
                **prompts.ANSWER_REQUEST,
                "en": "Answer every part of the question from the notes above, then give the "
                "number of the note it comes from in square brackets, like [1].",
            },
        )
    ],
}


def drafts_for(
    design: str, question: str, sections: list, context: Context, cache: dict[str, Any]
) -> dict[str, Any]:
    # The design by what it patches: a design reworded is drafted again.
    patches = [[attribute, value] for _, attribute, value in DESIGNS[design]]
    label = json.dumps(
        [patches, question, [[c["source"], c["heading"], c["content"]] for c in sections]],
        ensure_ascii=False,
    )
    if label not in cache:
        with patched(DESIGNS[design]):
            cache[label] = _drafted(question, sections, context)
    return cache[label]


def rows_of(
    design: str, graded: dict[str, Any], questions: dict[str, Any], context: Context, cache: dict
) -> list[dict]:
    rows = []
    for qid, grades in graded.items():
        if qid not in questions:
            continue
        kept = [grades["sections"][i] for i in kept_by("window", grades)]
        if not kept:
            rows.append({"id": qid, **unanswered(bool(grades["sections"]))})
            continue
        drafted = drafts_for(design, questions[qid].question, kept, context, cache)
        rows.append({"id": qid, **drafted})
    return rows


def lost_at(rows: list[dict], questions: dict[str, Any]) -> dict[str, int]:
    """How many questions ended at each stage (``stage``), the graph's check applied."""
    counted: Counter = Counter()
    for row in rows:
        item, state = questions[row["id"]], dict(row["state"])
        if the_graphs_check(row, item.question):
            state["no_answer_reason"] = "unsupported"
        counted[("answerable" if item.answerable else "not", stage(item, state, None))] += 1
    return {f"{a}: {s}": n for (a, s), n in sorted(counted.items())}


def main() -> None:
    parser = sets_parser(__doc__)
    parser.add_argument("--design", action="append", default=[], help="only these designs")
    parser.add_argument("--show", action="store_true", help="a tune set's changed questions")
    args = parser.parse_args()
    manifest = {s.name: s for s in protocol.read_manifest(args.sets)}
    designs = args.design or list(DESIGNS)
    results: dict[str, Any] = {}
    for name in args.only:
        eval_set = manifest[name]
        split = "tune" if name == "answers" else "all"
        context = loaded(eval_set)
        drafts = Path(args.drafts)
        graded = grade_set(eval_set, split, context, drafts / f"{name}.grades.json")
        questions = {q.id: q for q in select(load_questions(eval_set.path), split)}
        cache_file = drafts / f"{name}.writer-drafts.json"
        cache = json.loads(cache_file.read_text()) if cache_file.is_file() else {}
        table, stages, by_design = {}, {}, {}
        for design in designs:
            rows = rows_of(design, graded, questions, context, cache)
            cache_file.write_text(json.dumps(cache, ensure_ascii=False))
            by_design[design] = rows
            table[design] = outcome(rows, questions, the_graphs_check)
            stages[design] = lost_at(rows, questions)
        results[name] = {"designs": table, "stages": stages}
        print(name, json.dumps(results[name], ensure_ascii=False), flush=True)
        if args.show and eval_set.role == "tune":
            base = {r["id"]: r for r in by_design.get(GRAPHS, [])}
            for design in [d for d in designs if d != GRAPHS and base]:
                for row in by_design[design]:
                    old = base[row["id"]]
                    if old["state"].get("answer") != row["state"].get("answer"):
                        item = questions[row["id"]]
                        print(f"\n[{design}] {item.question} facts={item.facts}")
                        print("  before:", old["state"].get("answer"))
                        print("  after: ", row["state"].get("answer"))
    if args.record:
        Path(args.record).write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
