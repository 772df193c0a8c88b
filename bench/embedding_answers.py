"""The answers with another embedding model than all-minilm, set by set.

The answer path's figures (``bench/properties.py``, ``bench/grader_examples.py``) are measured
with all-minilm, an English embedding model. A person whose notes are German loads them with
a model of their choice: this bench answers each question of the chosen sets as the graph does
with ``RAG_EMBEDDING_MODEL`` (e.g. multilingual-e5-small) and sets the figures beside the
default's (all-minilm, the surest section first: ``--drafts``/NAME.surest-first.json).

Each set's notes are loaded into a collection of their own for the model (today's parser), and
each question is searched as the graph searches. A section the default graded for the same
question keeps its grade (a grade reads the section and the question only); every other
section is graded as the graph grades it. The kept sections are read the surest first; where
they are the default's, in the same order, the question keeps the default's draft and check,
else it is drafted by the graph's own ``generate`` with the check off and checked as the graph
checks. Totals only, per set, with the stage each question was lost at, how many questions
found other sections and how many were drafted again.

    make embedding-answers EMBEDDING_ANSWERS_ARGS="--only de-rezepte-reisen"
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.evaluation import sets as protocol  # noqa: E402
from bench import grader_variants, instructions  # noqa: E402
from bench.grade_probabilities import grader  # noqa: E402
from bench.grader_examples import grade, kept_sections, surest_first  # noqa: E402
from bench.properties import _same  # noqa: E402
from graph.index.ingest import load_notes  # noqa: E402
from graph.index.retrieval import search_notes  # noqa: E402
from graph.models import default_models  # noqa: E402


def _key(section: dict) -> tuple[str, str, str]:
    return section["source"], section["heading"], section["content"]


def _work(graded: dict, drafting: dict) -> dict[str, Any]:
    """A question's work: its own grades (a reused grade with the seconds it took then), and the
    drafting's seconds and check of the row it keeps."""
    return {
        "grades": len(graded["grades"]),
        "grading_s": round(sum(g["seconds"] for g in graded["grades"]), 2),
        "grading_chars": sum(g["chars"] for g in graded["grades"]),
        "drafting_s": drafting["drafting_s"],
        "checked": drafting["checked"],
    }


def _kept(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}


def measure(name: str, manifest: dict, drafts: Path) -> dict[str, Any]:
    """``name``'s figures with the default's embedding model and with ``RAG_EMBEDDING_MODEL``."""
    context, questions = instructions.set_questions(name, manifest)
    embeddings = default_models().embeddings(context)
    load_notes(context, protocol.notes_folder(manifest[name]), embeddings)
    model = grader(context)
    default_rows = _kept(drafts / f"{name}.surest-first.json")
    default_grades = _kept(drafts / f"{name}.properties-grades.json")
    label = context.embedding_model
    grades_file, rows_file = drafts / f"{name}.{label}-grades.json", drafts / f"{name}.{label}.json"
    grades, rows = _kept(grades_file), _kept(rows_file)
    other_sections = drafted_again = 0
    for qid, item in questions.items():
        before = default_grades[qid]
        if qid not in grades:
            found = search_notes(context, embeddings, item.question).relevant
            known = {_key(c): g for c, g in zip(before["sections"], before["grades"], strict=True)}
            graded = [known.get(_key(c)) or grade(model, c, item.question, context) for c in found]
            grades[qid] = {"sections": found, "grades": graded}
            grades_file.write_text(json.dumps(grades, ensure_ascii=False))
        ordered = surest_first(grades[qid])
        kept = kept_sections(ordered)
        same = kept == kept_sections(surest_first(before))
        if not kept:  # turned away by the grader, or nothing found
            rows[qid] = {"id": qid, **grader_variants.unanswered(bool(ordered["sections"]))}
            rows[qid]["work"] = _work(grades[qid], {"drafting_s": 0.0, "checked": False})
        elif same:
            default = default_rows[qid]
            rows[qid] = {**default, "same sections kept": True}
            rows[qid]["work"] = _work(grades[qid], default["work"])
        elif qid not in rows or rows[qid].get("same sections kept"):
            rows[qid] = {"id": qid, **instructions.row_of([], item.question, ordered, context)}
            rows_file.write_text(json.dumps(rows, ensure_ascii=False))
        other_sections += not _same(grades[qid]["sections"], before["sections"])
        drafted_again += bool(kept) and not same
        print(f"[{name} {label}] {qid}", file=sys.stderr)
    return {
        "all-minilm": instructions.figures(default_rows, questions),
        label: instructions.figures(rows, questions),
        "questions finding other sections": other_sections,
        "questions drafted again": drafted_again,
        "questions": len(questions),
    }


def main() -> None:
    args = grader_variants.sets_parser(__doc__).parse_args()
    if not os.environ.get("RAG_EMBEDDING_MODEL"):
        sys.exit("embedding_answers: set RAG_EMBEDDING_MODEL to the embedding model to measure")
    instructions.each_set(args, {"embedding model": os.environ["RAG_EMBEDDING_MODEL"]}, measure)


if __name__ == "__main__":
    main()
