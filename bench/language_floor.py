"""German sections kept by the grader's P(yes) at a lower bar, replayed on the graph's grades.

The German grader says "no" more often than the English one: on ``de-alltag`` it keeps a
section of an expected note for 23 of 49 answerable questions, where the same grader's P(yes)
reaches 0.45 for a section of an expected note in 27 of them. This design keeps a German
section (``graph/language.py``) the grader turned away when its P(yes) reaches a bar, and
every section it kept; English sections are graded as before.

Read from the graph's grades in retrieval's order (``--drafts``/NAME.properties-grades.json;
``bench/top_section_agreement.py`` grades ``de-alltag``'s), each question whose kept sections
change is drafted from them, read the surest first, by the graph's own ``generate`` and checked
as the graph checks (rows in ``--drafts``/NAME.language-floor.json). Its outcome is compared
with the graph's for the same question: ``de-alltag``'s first run in full
(``bench/results/de_alltag_answers.json``) or, for the other sets, their rows
(``--drafts``/NAME.surest-first.json). Totals per set and bar: the questions changed, and how
many more right answers and abstentions than the graph.

    .venv/bin/python bench/language_floor.py --only de-alltag --bar 0.45 --bar 0.4
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.evaluation import sets as protocol  # noqa: E402
from bench import grader_variants, instructions  # noqa: E402
from bench.check_rules import outcome, the_graphs_check  # noqa: E402
from bench.draft_rules import as_read, relisted  # noqa: E402
from bench.grader_examples import surest_first  # noqa: E402
from graph.language import language_of  # noqa: E402

#: The graph's first run of the German tune set in full, question by question.
DE_ALLTAG_RUN = ROOT / "bench" / "results" / "de_alltag_answers.json"


def the_graphs(name: str, questions: dict, drafts: Path) -> dict[str, tuple[bool, bool]]:
    """Each question's outcome under the graph: right, abstained."""
    if name == "de-alltag":
        run = json.loads(DE_ALLTAG_RUN.read_text())["designs"]["graph"]["questions"]
        return {q["id"]: (bool(q["facts_cited_inline"]), bool(q["abstained"])) for q in run}
    rows = json.loads((drafts / f"{name}.surest-first.json").read_text())
    return {qid: scored(rows[qid], qid, questions) for qid in questions}


def scored(row: dict, qid: str, questions: dict) -> tuple[bool, bool]:
    """A row's outcome, right and abstained, as ``rag eval --answers`` scores the graph."""
    said = outcome([relisted(as_read({**row, "id": qid}))], {qid: questions[qid]}, the_graphs_check)
    return bool(said["right"]), bool(said["abstained"])


def kept_at(graded: dict, bar: float) -> dict:
    """The grades with a German section the grader turned away kept where P(yes) reaches
    ``bar``."""
    grades = [
        {**g, "verdict": True}
        if g["verdict"] is False
        and (g["p_yes"] or 0.0) >= bar
        and language_of(c["content"]) == "de"
        else g
        for c, g in zip(graded["sections"], graded["grades"], strict=True)
    ]
    return {"sections": graded["sections"], "grades": grades}


def against_the_graph(
    rows: dict, rows_file: Path, kept: list, graded: dict, item: Any, context: Any, before: dict
) -> tuple[int, int]:
    """The question drafted from ``graded``'s kept sections (``kept``: their notes and
    headings), as the graph drafts and checks, kept in ``rows``: how many more right answers
    (1, 0 or -1) and abstentions than the graph's outcome in ``before``."""
    key = f"{item.id} {json.dumps(kept, ensure_ascii=False)}"
    if key not in rows:
        rows[key] = {"id": item.id, **instructions.row_of([], item.question, graded, context)}
        rows_file.write_text(json.dumps(rows, ensure_ascii=False))
    now, then = scored(rows[key], item.id, {item.id: item}), before[item.id]
    if item.answerable and item.facts:
        return now[0] - then[0], 0
    if not item.answerable:
        return 0, now[1] - then[1]
    return 0, 0


def measure(name: str, bars: list[float], manifest: dict, drafts: Path) -> dict[str, Any]:
    context, questions = instructions.set_questions(name, manifest)
    grades = json.loads((drafts / f"{name}.properties-grades.json").read_text())
    before = the_graphs(name, questions, drafts)
    rows_file = drafts / f"{name}.language-floor.json"
    rows = json.loads(rows_file.read_text()) if rows_file.is_file() else {}
    figures: dict[str, Any] = {}
    for bar in bars:
        changed = right = abstained = 0
        for qid, item in questions.items():
            ordered = surest_first(kept_at(grades[qid], bar))
            more = if_it_keeps_more(rows, rows_file, ordered, grades[qid], item, context, before)
            if more is None:
                continue  # the graph's own sections
            changed += 1
            right, abstained = right + more[0], abstained + more[1]
            print(f"[{name} {bar}] {qid}", file=sys.stderr)
        figures[str(bar)] = {
            "questions changed": changed,
            "more right": right,
            "more abstained": abstained,
        }
    return figures


def each_bar(doc: str, measure_set: Callable[..., dict[str, Any]]) -> None:
    """``measure_set(name, bars, manifest, drafts)`` for each chosen set (``--only``, else
    ``de-alltag``) at each ``--bar``, printed and recorded (``--record``) after each set."""
    parser = grader_variants.sets_parser(doc)
    parser.add_argument("--bar", type=float, action="append", required=True)
    args = parser.parse_args()
    manifest = {s.name: s for s in protocol.read_manifest(args.sets)}
    drafts = Path(args.drafts)
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "sets": {}}
    for name in args.only or ["de-alltag"]:
        results["sets"][name] = measure_set(name, args.bar, manifest, drafts)
        print(name, json.dumps(results["sets"][name]), flush=True)
        if args.record:
            Path(args.record).write_text(json.dumps(results, indent=1) + "\n")


def if_it_keeps_more(
    rows: dict, rows_file: Path, ordered: dict, graph: dict, item: Any, context: Any, before: dict
) -> tuple[int, int] | None:
    """``against_the_graph`` for a design that only keeps sections the graph turned away:
    ``None`` where ``ordered`` keeps as many as ``graph``'s grades (the graph's own)."""
    kept = kept_notes(ordered)
    if len(kept) == sum(g["verdict"] is not False for g in graph["grades"]):
        return None
    return against_the_graph(rows, rows_file, kept, ordered, item, context, before)


def kept_notes(ordered: dict) -> list[list[str]]:
    """The note and heading of each section ``ordered`` keeps, in its order."""
    return [
        [c["source"], c["heading"]]
        for c, g in zip(ordered["sections"], ordered["grades"], strict=True)
        if g["verdict"] is not False
    ]


def main() -> None:
    each_bar(__doc__, measure)


if __name__ == "__main__":
    main()
