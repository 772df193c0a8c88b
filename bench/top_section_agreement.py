"""The top section kept where retrieval and the grader agree on it, replayed on the graph's grades.

Where the grader says "no" to every section a question finds, the graph answers "not in your
notes". This design keeps retrieval's top-ranked section then, when the grader was surest of
that same section too (its P(yes) the highest of the question's) and that P(yes) reaches a bar;
it is written from and checked as the graph writes and checks. A bar is fitted per language of
the section (``graph/language.py``): the German grader turns away more sections than the
English one (docs/quality.md, "A German tune set").

Read from the graph's grades in retrieval's order (``--drafts``/NAME.properties-grades.json,
``bench/properties.py``; for ``de-alltag``, graded as the graph grades by this script), every
question where the design keeps a section is drafted by the graph's own ``generate`` and checked
as the graph checks (rows kept in ``--drafts``/NAME.top-section-agreement.json); every other
question keeps its outcome. Totals only: per set and bar, the questions it keeps a section for,
the answerable ones among them now right, and the questions the notes cannot answer now
answered.

    make top-section-agreement TOP_SECTION_AGREEMENT_ARGS="--only de-alltag"
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
from bench import grader_variants, instructions  # noqa: E402
from bench.check_rules import outcome, the_graphs_check  # noqa: E402
from bench.draft_rules import as_read, relisted  # noqa: E402
from bench.grade_probabilities import grader  # noqa: E402
from graph.language import language_of  # noqa: E402
from graph.models import default_models  # noqa: E402

#: The bars measured: a section is kept at a bar when its P(yes) reaches it.
BARS = (0.2, 0.25, 0.3, 0.35, 0.4)


def graded(name: str, manifest: dict, drafts: Path) -> tuple[Any, dict, dict]:
    """``name``'s context, questions and the graph's grades in retrieval's order (graded here
    where no earlier bench kept them)."""
    context, questions = instructions.set_questions(name, manifest)
    kept = drafts / f"{name}.properties-grades.json"
    grades = json.loads(kept.read_text()) if kept.is_file() else {}
    if any(qid not in grades for qid in questions):
        embeddings, model = default_models().embeddings(context), grader(context)
        for qid, item in questions.items():
            if qid not in grades:
                grades[qid] = instructions.grades_of([], item.question, context, embeddings, model)
                kept.write_text(json.dumps(grades, ensure_ascii=False))
            print(f"[{name} graded] {qid}", file=sys.stderr)
    return context, questions, grades


def agreed(graded: dict) -> tuple[dict, float] | None:
    """Retrieval's top section and its P(yes), where every section was graded "no" and the
    grader was surest of that one; else ``None``."""
    sections, grades = graded["sections"], graded["grades"]
    if not grades or any(g["verdict"] is not False for g in grades):
        return None
    sure = [g["p_yes"] or 0.0 for g in grades]
    if max(sure) > sure[0]:
        return None
    return sections[0], sure[0]


def measure(name: str, manifest: dict, drafts: Path) -> dict[str, Any]:
    context, questions, grades = graded(name, manifest, drafts)
    rows_file = drafts / f"{name}.top-section-agreement.json"
    rows = json.loads(rows_file.read_text()) if rows_file.is_file() else {}
    found: dict[str, tuple[str, float]] = {}
    for qid, item in questions.items():
        top = agreed(grades[qid])
        if top is None or top[1] < min(BARS):
            continue
        section, sure = top
        found[qid] = (language_of(section["content"]), sure)
        if qid not in rows:
            grade = {**grades[qid]["grades"][0], "verdict": True}
            kept = {"sections": [section], "grades": [grade]}
            rows[qid] = {"id": qid, **instructions.row_of([], item.question, kept, context)}
            rows_file.write_text(json.dumps(rows, ensure_ascii=False))
        print(f"[{name} drafted] {qid}", file=sys.stderr)
    by_bar: dict[str, Any] = {}
    for language in sorted({language for language, _ in found.values()}):
        for bar in BARS:
            chosen = [
                qid for qid, (said, sure) in found.items() if said == language and sure >= bar
            ]
            right = outcome(
                [relisted(as_read(rows[qid])) for qid in chosen if questions[qid].answerable],
                questions,
                the_graphs_check,
            )
            answered = outcome(
                [relisted(as_read(rows[qid])) for qid in chosen if not questions[qid].answerable],
                questions,
                the_graphs_check,
            )
            by_bar[f"{language}, {bar}"] = {
                "sections kept": len(chosen),
                "answerable now right": right["right"],
                "of answerable": right["answerable"],
                "not answerable now answered": answered["of"] - answered["abstained"],
                "of not answerable": answered["of"],
            }
    return {"questions": len(questions), "by language and bar": by_bar}


def main() -> None:
    args = grader_variants.sets_parser(__doc__).parse_args()
    manifest = {s.name: s for s in protocol.read_manifest(args.sets)}
    drafts = Path(args.drafts)
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "bars": BARS, "sets": {}}
    for name in args.only or ("de-alltag", *instructions.SETS):
        results["sets"][name] = measure(name, manifest, drafts)
        print(name, json.dumps(results["sets"][name], ensure_ascii=False), flush=True)
        if args.record:
            Path(args.record).write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
