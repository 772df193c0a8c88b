"""Do grades read in one token after the model's opening keep the verdicts? Every set, graded again.

``graph/verdict.py`` asks a model's grades after the opening it wrote (``{\\n  "score": "``),
for one token, instead of with Ollama's JSON-schema format. The verdict follows the same
text, so it should be the same. This grades every section each question of every set finds
again, through the graph's own ``grade_chunks`` (the first grade of the run with the format,
the rest after the opening), and compares each verdict with the one kept by
``make grader-variants`` (``bench/.drafts/NAME.grades.json``, asked with the format, on the
question's window as the graph grades it). Needs those kept grades; prints per set how many
verdicts agree, the sections that differ with their P(yes) under the format, and the
seconds; ``--record`` writes them as JSON.

    python bench/grade_opening.py [--only runbooks] [--record FILE]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import graph.verdict as verdict  # noqa: E402
from app.evaluation import sets as protocol  # noqa: E402
from app.evaluation.answers import load_questions, select  # noqa: E402
from bench.grader_variants import DRAFTS, loaded, sets_parser  # noqa: E402
from graph.context import Context  # noqa: E402
from nodes.grade_documents import grade_chunks  # noqa: E402


def regrade(name: str, kept: dict[str, Any], context: Context) -> dict[str, Any]:
    """Each question's sections graded the graph's way; the verdicts against the kept ones."""
    agree, differ, seconds = 0, [], 0.0
    for qid, question in kept["questions"].items():
        started = time.perf_counter()
        grades = grade_chunks(question["sections"], question["question"], context)
        seconds += time.perf_counter() - started
        for index, (section, grade, before) in enumerate(
            zip(question["sections"], grades, question["window"], strict=True)
        ):
            if grade["relevant"] == before["verdict"]:
                agree += 1
            else:
                differ.append(
                    {
                        "id": qid,
                        "index": index,
                        "section": f"{section['source']} > {section['heading']}",
                        "with the format": before["verdict"],
                        "p_yes": before["p_yes"],
                        "after the opening": grade["relevant"],
                    }
                )
        print(f"[{name}] {qid}: {agree} agree, {len(differ)} differ", file=sys.stderr)
    total = agree + len(differ)
    return {
        "sections": total,
        "agree": agree,
        "differ": differ,
        "seconds_a_grade": round(seconds / total, 3) if total else None,
    }


def flipped(kept: dict[str, Any], differ: list[dict]) -> dict[str, Any]:
    """The kept grades with the verdicts graded otherwise after the opening put in."""
    graded = json.loads(json.dumps(kept["questions"]))
    for change in differ:
        question = graded[change["id"]]
        index = change.get("index")
        if index is None:  # a record from before indexes were kept: the name must be unique
            names = [f"{c['source']} > {c['heading']}" for c in question["sections"]]
            if names.count(change["section"]) != 1:
                raise SystemExit(f"{change['id']}: {change['section']} is not one section")
            index = names.index(change["section"])
        question["window"][index] = {
            **question["window"][index],
            "verdict": change["after the opening"],
        }
    return graded


def scored(
    eval_set: protocol.EvalSet,
    kept: dict[str, Any],
    differ: list[dict],
    context: Context,
    drafts: Path,
) -> dict[str, Any]:
    """Right and abstained, the default's grades against those after the opening.

    The default's rows as ``make grader-variants`` makes them (grader 6 and the answer from
    the same windows); a question whose kept sections change is drafted again by the graph's
    ``generate`` and checked as the graph checks (drafts kept in ``NAME.grader-drafts.json``).
    """
    from bench.check_rules import outcome, the_graphs_check
    from bench.grader_variants import design_rows

    name = eval_set.name
    rows = json.loads((drafts / DRAFTS[name]).read_text())["rows"]
    split = "tune" if name == "answers" else "all"
    questions = {q.id: q for q in select(load_questions(eval_set.path), split)}
    cache_file = drafts / f"{name}.grader-drafts.json"
    cache = json.loads(cache_file.read_text()) if cache_file.is_file() else {}
    default = design_rows("writer", rows, kept["questions"], questions, context, cache)
    again = design_rows("writer", rows, flipped(kept, differ), questions, context, cache)
    cache_file.write_text(json.dumps(cache, ensure_ascii=False))
    how = (
        "grades after the opening" if verdict.AFTER_THE_OPENING else "graded again with the format"
    )
    return {
        "the default (grades with the format)": outcome(default, questions, the_graphs_check),
        how: outcome(again, questions, the_graphs_check),
    }


def main() -> None:
    parser = sets_parser(__doc__)
    parser.add_argument(
        "--format",
        action="store_true",
        help="grade every section with the format, as before (how far a regrade alone moves)",
    )
    parser.add_argument(
        "--score",
        help="no grading: score the verdicts recorded in this file (right and abstained)",
    )
    args = parser.parse_args()
    recorded = json.loads(Path(args.score).read_text()) if args.score else None
    verdict.AFTER_THE_OPENING = not args.format
    verdict.OPENING_BAR = None  # the verdict as the word the model writes after the opening
    manifest = {s.name: s for s in protocol.read_manifest(args.sets)}
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "sets": {}}
    for name in args.only or list(DRAFTS):
        eval_set = manifest[name]
        context = loaded(eval_set)
        results["chat_model"] = context.chat_model
        kept = json.loads((Path(args.drafts) / f"{name}.grades.json").read_text())
        if kept["key"]["model"] != context.chat_model:
            raise SystemExit(f"{name}: the kept grades are {kept['key']['model']}'s")
        questions = {q.id: q.question for q in load_questions(eval_set.path)}
        for qid, question in kept["questions"].items():
            question["question"] = questions[qid]
        if recorded is not None:
            row = recorded["sets"][name]
            row["answers"] = scored(eval_set, kept, row["differ"], context, Path(args.drafts))
            results["sets"][name] = row
            print(name, json.dumps(row["answers"]), flush=True)
            continue
        results["sets"][name] = regrade(name, kept, context)
        row = results["sets"][name]
        print(
            f"{name}: {row['agree']} of {row['sections']} verdicts the same, "
            f"{row['seconds_a_grade']} s a grade",
            flush=True,
        )
    if args.record:
        Path(args.record).write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
