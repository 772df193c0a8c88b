"""A retrieval design replayed on the graph's rows: the questions it finds other sections for.

A change of retrieval (what BM25 ranks, the fusion, the floor) changes which sections a
question's grader sees, and nothing else of the answer path. Each question of the chosen sets
is searched as the graph searches with the design's switches set, in the collection
``bench/properties.py`` loaded (``NAME-properties``). One design so far:

- ``german stopwords``: a German question's function words left out of the word search
  (``graph/index/lexical.py``: ``GERMAN_STOPWORDS``).

Where a question finds the sections the graph's rows found (``--drafts``/
NAME.surest-first-grades.json, the same sections in any order), the question keeps its row
(``--drafts``/NAME.surest-first.json, ``bench/grader_examples.py``): its grades and its draft.
Every other question is graded as the graph grades (a section graded there keeps its grade: a
grade reads only its section and its question), its kept sections read the surest first, and
drafted and checked as the graph drafts and checks. Scored as ``evidence_check.py`` scores the
graph's rows (citations listed by what they write, the graph's check); totals only, per set,
with how many questions found other sections. New rows are kept in ``--drafts``/
NAME.DESIGN.json and NAME.DESIGN-grades.json (a run resumes).

    make retrieval-replay RETRIEVAL_REPLAY_ARGS="--design 'german stopwords' \\
        --only de-rezepte-reisen --only de-rezepte-reisen-generated"
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import graph.index.lexical as lexical  # noqa: E402
import nodes.grade_documents as grading  # noqa: E402
from app.evaluation import sets as protocol  # noqa: E402
from bench import grader_variants, instructions  # noqa: E402
from bench.check_rules import outcome, patched, the_graphs_check  # noqa: E402
from bench.draft_rules import as_read, relisted  # noqa: E402
from bench.grade_probabilities import grader  # noqa: E402
from bench.grader_examples import surest_first  # noqa: E402
from graph.index.retrieval import search_notes  # noqa: E402
from graph.models import default_models  # noqa: E402

#: Each design's switches, as ``bench.check_rules.patched`` sets them.
DESIGNS = {"german stopwords": [(lexical, "GERMAN_STOPWORDS", True)]}


def section(chunk: dict) -> tuple[str, str, str]:
    """A section by note, heading and text."""
    return (chunk["source"], chunk["heading"], chunk["content"])


def scored(rows: dict, questions: dict) -> dict[str, int]:
    """Right and abstained as ``rag eval --answers`` scores today's graph on these rows."""
    listed = [relisted(as_read({**rows[qid], "id": qid})) for qid in questions]
    return outcome(listed, questions, the_graphs_check)


def measure(name: str, design: str, manifest: dict, drafts: Path) -> dict[str, Any]:
    """``name``'s figures on the graph's rows and with ``design``'s retrieval."""
    label = design.replace(" ", "-")
    context, questions = instructions.set_questions(name, manifest)
    context = replace(context, collection_name=f"{context.collection_name}-properties")
    embeddings = default_models().embeddings(context)
    model = grader(context)
    default_rows = json.loads((drafts / f"{name}.surest-first.json").read_text())
    default_grades = json.loads((drafts / f"{name}.surest-first-grades.json").read_text())
    grades_file, rows_file = drafts / f"{name}.{label}-grades.json", drafts / f"{name}.{label}.json"
    grades = json.loads(grades_file.read_text()) if grades_file.is_file() else {}
    rows = json.loads(rows_file.read_text()) if rows_file.is_file() else {}
    other = 0
    for qid, item in questions.items():
        before = default_grades[qid]
        if qid not in grades:
            with patched(DESIGNS[design]):
                found = search_notes(context, embeddings, item.question).relevant
            graded_before = {
                section(c): g for c, g in zip(before["sections"], before["grades"], strict=True)
            }
            graded = [
                graded_before.get(section(c))
                or grader_variants.graded(model, c, item.question, context, grading.GRADE_WINDOW)
                for c in found
            ]
            grades[qid] = surest_first({"sections": found, "grades": graded})
            grades_file.write_text(json.dumps(grades, ensure_ascii=False))
        same = sorted(map(section, grades[qid]["sections"])) == sorted(
            map(section, before["sections"])
        )
        other += not same
        if qid not in rows:
            rows[qid] = (
                {**default_rows[qid], "same sections found": True}
                if same
                else {"id": qid, **instructions.row_of([], item.question, grades[qid], context)}
            )
            rows_file.write_text(json.dumps(rows, ensure_ascii=False))
        print(f"[{name} {design}] {qid}", file=sys.stderr)
    return {
        "the graph's rows": scored(default_rows, questions),
        design: scored(rows, questions),
        "work a question": {
            "the graph's rows": instructions.figures(default_rows, questions)["per question"],
            design: instructions.figures(rows, questions)["per question"],
        },
        "questions finding other sections": other,
        "questions": len(questions),
    }


def main() -> None:
    parser = grader_variants.sets_parser(__doc__)
    parser.add_argument("--design", choices=DESIGNS, required=True)
    args = parser.parse_args()
    manifest = {s.name: s for s in protocol.read_manifest(args.sets)}
    drafts = Path(args.drafts)
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "design": args.design}
    results["sets"] = {}
    for name in args.only or instructions.SETS:
        results["sets"][name] = measure(name, args.design, manifest, drafts)
        print(name, json.dumps(results["sets"][name], ensure_ascii=False), flush=True)
        if args.record:
            Path(args.record).write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
