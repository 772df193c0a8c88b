"""Grades read after the model's opening, kept by P(yes) against a bar fitted on the tune sets.

``graph/verdict.py`` can ask a grade after the opening the model wrote under the JSON format
(``{\\n  "score": "``) for one token: a grade costs one decode step instead of six before the
verdict. The opening is then read in one batch with the prompt, and llama.cpp's batched and
one-token kernels round differently, so the model's P(yes) moves a little, more often down
than up: read as the word the model writes, sections near P(yes) 0.5 turn "no"
(``bench/grade_opening.py``). Here each grade after the opening also gives its P(yes), from
the token's log-probabilities, and the section is kept when it reaches a bar:

- ``the word``: the verdict the model writes after the opening (P(yes) 0.5);
- ``fitted bar``: the bar, of 0.40, 0.41 ... 0.60, under which the most verdicts of the tune
  sets (the answer set's tune half and the daily vault) agree with the format's, the nearest
  to 0.5 among equals; chosen on the tune sets before any other set is scored.

Every section the default graded for each question of the chosen sets (``--drafts``/
NAME.properties-grades.json, the same windows) is graded again through the graph's
``ask_grade`` with ``AFTER_THE_OPENING`` on (kept in NAME.opening-grades.json; a run
resumes). A question whose kept sections, read the surest first, are the default's keeps the
default's row (``--drafts``/NAME.surest-first.json); any other is drafted from them by the
graph's own ``generate`` and checked as the graph checks (kept in NAME.opening-rows.json).
Prints per set the verdicts that agree with the format's, right and abstained, the stage each
question was lost at, and the seconds a grade took each way.

    make opening-bar OPENING_BAR_ARGS="--only answers --only daily-vault"  # fits the bar
    make opening-bar OPENING_BAR_ARGS="--bar 0.47"  # every set, at the bar fitted
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import graph.verdict as verdict  # noqa: E402
import nodes.grade_documents as grading  # noqa: E402
from bench import grader_variants, instructions  # noqa: E402
from bench.grader_examples import kept_sections, surest_first  # noqa: E402
from graph.llm import parse_grade, prompt_chars  # noqa: E402

#: The bars tried on the tune sets.
BARS = [round(0.40 + i / 100, 2) for i in range(21)]
TUNE = ("answers", "daily-vault")

#: Whether this process's grades have learned the model's opening (its first grade, asked
#: with the format, is not recorded).
_learned: list[bool] = []


def _kept(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}


def regraded(name: str, context: Any, questions: dict, drafts: Path) -> dict[str, list[dict]]:
    """Each question's sections as the default graded them, graded again after the opening."""
    default = json.loads((drafts / f"{name}.properties-grades.json").read_text())
    kept_file = drafts / f"{name}.opening-grades.json"
    kept = _kept(kept_file)
    # The word the model writes is recorded, and each bar applied to P(yes) here.
    verdict.AFTER_THE_OPENING, verdict.OPENING_BAR = True, None
    for qid, item in questions.items():
        if qid in kept:
            continue
        if not _learned and default[qid]["sections"]:
            # the first grade asks with the format and learns the opening: not recorded
            first, _ = grading.fitted_prompt(default[qid]["sections"][0], item.question, context)
            grading.ask_grade(context, "grade", first)
            _learned.append(True)
        grades = []
        for chunk in default[qid]["sections"]:
            prompt, _ = grading.fitted_prompt(chunk, item.question, context)
            started = time.perf_counter()
            said = grading.ask_grade(context, "grade", prompt)
            grades.append(
                {
                    "word": parse_grade(said.text),
                    "p_yes": said.p_yes,
                    "chars": prompt_chars(prompt),
                    "seconds": round(time.perf_counter() - started, 3),
                }
            )
        kept[qid] = grades
        kept_file.write_text(json.dumps(kept, ensure_ascii=False))
        print(f"[{name} after the opening] {qid}", file=sys.stderr)
    return kept


def kept_at(opening: dict, bar: float | None) -> bool:
    """Whether a grade after the opening keeps its section at ``bar`` (``None``: the word)."""
    if bar is None or opening["p_yes"] is None:
        return opening["word"] is not False
    return opening["p_yes"] >= bar


def design(default: dict, opening: list[dict], bar: float | None) -> dict:
    """The default's sections with the verdicts after the opening, read the surest first."""
    grades = [
        {**before, "verdict": kept_at(after, bar), "p_yes": after["p_yes"], **_work(after)}
        for before, after in zip(default["grades"], opening, strict=True)
    ]
    return surest_first({"sections": default["sections"], "grades": grades})


def _work(grade: dict) -> dict:
    return {"seconds": grade["seconds"], "chars": grade["chars"]}


def agreement(defaults: dict, openings: dict, questions: dict, bar: float | None) -> int:
    """Sections whose verdict after the opening at ``bar`` is the format's."""
    return sum(
        kept_at(after, bar) == (before["verdict"] is not False)
        for qid in questions
        for before, after in zip(defaults[qid]["grades"], openings[qid], strict=True)
    )


def fitted(drafts: Path, manifest: dict) -> tuple[float, dict[float, int]]:
    """The bar under which the tune sets' verdicts agree most with the format's, and how many
    agree at each bar tried."""
    agree = {bar: 0 for bar in BARS}
    for name in TUNE:
        context, questions = instructions.set_questions(name, manifest)
        defaults = json.loads((drafts / f"{name}.properties-grades.json").read_text())
        openings = regraded(name, context, questions, drafts)
        for bar in BARS:
            agree[bar] += agreement(defaults, openings, questions, bar)
    return max(BARS, key=lambda bar: (agree[bar], -abs(bar - 0.5))), agree


def measure(name: str, manifest: dict, drafts: Path, bars: dict[str, float | None]) -> dict:
    """``name``'s figures: the default's, and with the grades after the opening at ``bars``."""
    context, questions = instructions.set_questions(name, manifest)
    defaults = json.loads((drafts / f"{name}.properties-grades.json").read_text())
    default_rows = json.loads((drafts / f"{name}.surest-first.json").read_text())
    openings = regraded(name, context, questions, drafts)
    rows_file = drafts / f"{name}.opening-rows.json"
    drafted = _kept(rows_file)
    sections = sum(len(openings[qid]) for qid in questions)
    result: dict[str, Any] = {
        "graph": instructions.figures(default_rows, questions),
        "sections": sections,
        "seconds a grade": {
            "the format": _median(defaults, questions, lambda g: g["seconds"]),
            "after the opening": _median(openings, questions, lambda g: g["seconds"]),
        },
    }
    for label, bar in bars.items():
        rows, again, reordered = {}, 0, {}
        for qid, item in questions.items():
            graded = design(defaults[qid], openings[qid], bar)
            before = kept_sections(surest_first(defaults[qid]))
            if kept_sections(graded) == before:
                rows[qid] = default_rows[qid]
                continue
            if sorted(kept_sections(graded)) == sorted(before):
                reordered[qid] = {
                    "P(yes) of the kept sections in the default's order": _kept_p_yes(
                        surest_first(defaults[qid])
                    ),
                    "in the design's order": _kept_p_yes(graded),
                }
            key = json.dumps([qid, kept_sections(graded)], ensure_ascii=False)
            if key not in drafted:
                row = instructions.row_of([], item.question, graded, context)
                drafted[key] = {"id": qid, **row}
                rows_file.write_text(json.dumps(drafted, ensure_ascii=False))
            rows[qid], again = drafted[key], again + 1
        figures = instructions.figures(rows, questions)
        # A question keeping the default's row keeps its drafting; the grading is the design's.
        n = max(1, len(questions))
        grading = sum(g["seconds"] for qid in questions for g in openings[qid])
        figures["per question"]["grading s"] = round(grading / n, 2)
        result[label] = {
            **figures,
            "verdicts as the format's": agreement(defaults, openings, questions, bar),
            "questions drafted again": again,
            "of them, the same sections in another order": reordered,
            "right, of those drafted again": _right_of(rows, default_rows, questions),
        }
    return result


def _kept_p_yes(graded: dict) -> list[float | None]:
    return [
        None if g["p_yes"] is None else round(g["p_yes"], 3)
        for g in graded["grades"]
        if g["verdict"] is not False
    ]


def _right_of(rows: dict, default_rows: dict, questions: dict) -> dict[str, list[str]]:
    """The questions right with the design and not with the default, and the other way."""
    changed = [qid for qid in questions if rows[qid] is not default_rows[qid]]
    right = {
        qid: (_right(rows[qid], questions), _right(default_rows[qid], questions)) for qid in changed
    }
    return {
        "gained": [qid for qid, (ours, theirs) in right.items() if ours and not theirs],
        "lost": [qid for qid, (ours, theirs) in right.items() if theirs and not ours],
    }


def _right(row: dict, questions: dict) -> bool:
    figures = instructions.outcome([row], questions, instructions.the_graphs_check)
    return bool(figures["right"] or figures["abstained"])


def _median(graded: dict, questions: dict, value: Any) -> float:
    grades = [g for qid in questions for g in _grades(graded[qid])]
    return round(statistics.median(value(g) for g in grades), 3) if grades else 0.0


def _grades(entry: Any) -> list[dict]:
    return entry["grades"] if isinstance(entry, dict) else entry


def main() -> None:
    parser = grader_variants.sets_parser(__doc__)
    parser.add_argument("--bar", type=float, help="the bar fitted before (else fitted here)")
    args = parser.parse_args()
    manifest = {s.name: s for s in instructions.protocol.read_manifest(args.sets)}
    drafts = Path(args.drafts)
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d")}
    if args.bar is None:
        bar, agree = fitted(drafts, manifest)
        results["fitted bar"] = bar
        results["tune verdicts as the format's, by bar"] = {str(b): n for b, n in agree.items()}
    else:
        bar = results["bar given"] = args.bar
    results["sets"] = {}
    print(f"bar: {bar}", flush=True)
    instructions.each_set(
        args,
        results,
        lambda name, manifest, drafts: measure(
            name, manifest, drafts, {"the word": None, f"P(yes) >= {bar}": bar}
        ),
    )


if __name__ == "__main__":
    main()
