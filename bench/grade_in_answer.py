"""Grader 7: each grade asked in the answer's own system prompt, against the graph's grader.

The design (``SYSTEM_PROMPT = "answer"`` in ``graph/prompts.py``): every grade begins as the
answer does (``GENERATE_SYSTEM``, then the one section on its window as note 1, then the
question) and ends with the grader's test (``GRADE_IN_ANSWER``); a section is kept when the
grader's P(yes) reaches a floor (``GRADE_FLOOR`` in ``nodes/grade_documents.py``). The answer's
and the check's prompts are the graph's, so where the grades keep the same sections the draft
and its check are the graph's own.

Every section each question finds (as ``bench/grader_variants.py`` found and graded them,
kept under ``--drafts``) is graded here, the top-ranked last as the graph asks them, with its
P(yes) and seconds (kept there too). The floor is fitted on the tune sets, which are graded
and scored first; the validation sets are graded after it, at that floor only: of
``FLOORS``, the one whose tune sets keep the most right answers with neither count of either
set below the graph's default. Both tune sets are needed for a fit. Where the
kept sections differ from the default's, the answer is drafted again by the graph's own
``generate`` and checked as the graph checks (``bench/writer_variants.py``); every other
question keeps the default's draft (``bench/check_replays.py``). Totals only.

    .venv/bin/python bench/grade_in_answer.py --record bench/results/grade_in_answer.json
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import graph.prompts as prompts  # noqa: E402
from app.evaluation import sets as protocol  # noqa: E402
from bench import check_replays, grader_variants, writer_variants  # noqa: E402
from bench.check_rules import outcome, patched, the_graphs_check  # noqa: E402
from bench.grade_probabilities import grader  # noqa: E402
from graph.context import Context  # noqa: E402
from graph.llm import message_text, parse_grade, yes_probability  # noqa: E402
from graph.window import question_window  # noqa: E402
from nodes.grade_documents import GRADE_WINDOW, grade_prompt  # noqa: E402

#: The floors measured on the tune sets.
FLOORS = (0.25, 0.29, 0.31, 0.32, 0.33, 0.34, 0.38)
TUNE_SETS = ("answers", "daily-vault")
VALIDATION_SETS = (
    "runbooks",
    "de-rezepte-reisen",
    "runbooks-generated",
    "de-rezepte-reisen-generated",
)


def grade_all(name: str, graded: dict[str, Any], questions: dict, context: Context, kept: Path):
    """Each question's sections graded in the answer's prompt, in the graph's order."""
    data = json.loads(kept.read_text()) if kept.is_file() else {}
    key = {"set": name, "request": prompts.GRADE_IN_ANSWER, "window": GRADE_WINDOW}
    if data.get("key") != key:
        data = {"key": key, "questions": {}}
    model = grader(context)
    for qid, grades in graded.items():
        if qid not in questions or qid in data["questions"]:
            continue
        question = questions[qid].question
        found = []
        for chunk in reversed(grades["sections"]):  # top-ranked last, as the graph asks
            with patched([(prompts, "SYSTEM_PROMPT", "answer")]):
                prompt = grade_prompt(question_window(chunk, question, GRADE_WINDOW), question)
            started = time.perf_counter()
            reply = model.invoke(prompt)
            found.append(
                {
                    "verdict": parse_grade(message_text(reply)),
                    "p_yes": yes_probability(reply),
                    "chars": sum(len(str(m.content)) for m in prompt),
                    "seconds": round(time.perf_counter() - started, 3),
                }
            )
        data["questions"][qid] = found[::-1]
        kept.write_text(json.dumps(data, ensure_ascii=False))
        print(f"[{name} graded in the answer's prompt] {qid}", file=sys.stderr)
    return data["questions"]


def kept_at(floor: float, grades: list[dict]) -> list[int]:
    """The sections kept at ``floor`` (the verdict as written where no P(yes) came back)."""
    return [
        i
        for i, g in enumerate(grades)
        if (g["p_yes"] >= floor if g["p_yes"] is not None else g["verdict"] is not False)
    ]


def rows_at(
    floor: float,
    default_rows: list[dict],
    graded: dict[str, Any],
    ours: dict[str, Any],
    questions: dict,
    context: Context,
    cache: dict,
) -> list[dict]:
    """The default's rows, drafted again where the grades at ``floor`` keep other sections."""
    rows = []
    for row in default_rows:
        grades = graded[row["id"]]
        kept = kept_at(floor, ours[row["id"]])
        if kept == grader_variants.kept_by("window", grades):
            rows.append(row)
            continue
        if not kept:
            rows.append({"id": row["id"], **grader_variants.unanswered(bool(grades["sections"]))})
            continue
        sections = [grades["sections"][i] for i in kept]
        question = questions[row["id"]].question
        drafted = writer_variants.drafts_for(
            writer_variants.GRAPHS, question, sections, context, cache
        )
        rows.append({"id": row["id"], **drafted})
    return rows


def work(ours: dict[str, Any]) -> dict[str, float]:
    """Grades, prompt characters and seconds per question."""
    n = max(1, len(ours))
    grades = [g for q in ours.values() for g in q]
    return {
        "grades": round(len(grades) / n, 2),
        "chars": round(sum(g["chars"] for g in grades) / n, 1),
        "seconds": round(sum(g["seconds"] for g in grades) / n, 2),
    }


def measure(name: str, floors: tuple[float, ...], manifest: dict, drafts: Path) -> dict[str, Any]:
    """``name``'s default, its grades in the answer's prompt and its figures at ``floors``."""
    eval_set = manifest[name]
    context = grader_variants.loaded(eval_set)
    default_rows, questions, graded = check_replays.graphs_rows(name, eval_set, context, drafts)
    ours = grade_all(name, graded, questions, context, drafts / f"{name}.grades-in-answer.json")
    cache_file = drafts / f"{name}.writer-drafts.json"
    cache = json.loads(cache_file.read_text()) if cache_file.is_file() else {}
    got: dict[str, Any] = {
        "default": outcome(default_rows, questions, the_graphs_check),
        "floors": {},
        "default's grading": grader_variants.work(graded, "window"),
        "grading in the answer's prompt": work(ours),
    }
    for floor in floors:
        rows = rows_at(floor, default_rows, graded, ours, questions, context, cache)
        got["floors"][floor] = outcome(rows, questions, the_graphs_check)
    cache_file.write_text(json.dumps(cache, ensure_ascii=False))
    print(name, json.dumps(got, ensure_ascii=False), flush=True)
    return got


def main() -> None:
    args = grader_variants.sets_parser(__doc__).parse_args()
    manifest = {s.name: s for s in protocol.read_manifest(args.sets)}
    drafts = Path(args.drafts)
    tune = {name: measure(name, FLOORS, manifest, drafts) for name in TUNE_SETS}
    fitted = fit(tune)
    results: dict[str, Any] = {"fitted floor": fitted, "sets": dict(tune)}
    if fitted is None:
        sys.exit("no floor measured keeps both tune sets at the default's figures")
    for name in VALIDATION_SETS:
        if not args.only or name in args.only:
            results["sets"][name] = measure(name, (fitted,), manifest, drafts)
    if args.record:
        Path(args.record).write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")


def fit(measured: dict[str, Any]) -> float | None:
    """The tune sets' floor: most right answers, neither count of either set below the default."""
    best: tuple[int, float] | None = None
    for floor in FLOORS:
        got = [measured[name] for name in TUNE_SETS]
        if all(
            m["floors"][floor]["right"] >= m["default"]["right"]
            and m["floors"][floor]["abstained"] >= m["default"]["abstained"]
            for m in got
        ):
            right = sum(m["floors"][floor]["right"] for m in got)
            if best is None or right > best[0]:
                best = (right, floor)
    return best[1] if best else None


if __name__ == "__main__":
    main()
