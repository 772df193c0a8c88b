"""A note's properties read as text (parser 2) against the graph before them (parser 1).

Parser 1 dropped a note's properties other than its title, aliases, tags and dates
(``phone: 07700 900412`` in the frontmatter, ``rating:: 4`` in the text); parser 2 keeps
them as ``key: value`` lines under the note's opening heading (``graph/index/obsidian.py``).

Each set's notes are loaded into a collection of their own (``NAME-properties``) by today's
parser, and each question is searched as the graph searches. Where it finds the same
sections, by note, heading and text, as under parser 1 (``bench/instructions.py``'s kept
grades of the default, ``--drafts``/NAME.graph-grades.json), its grades, draft and check are
the kept ones: the same prompts. Every other question is graded and drafted again by the
graph's own functions, and checked as the graph checks. Totals only, per set, with the stage
each question was lost at and how many questions found other sections.

    make properties          # every set bench/instructions.py has drafted the default of
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.evaluation import sets as protocol  # noqa: E402
from app.evaluation.answers import load_questions, select  # noqa: E402
from bench import grader_variants, instructions  # noqa: E402
from bench.grade_probabilities import grader  # noqa: E402
from graph.context import Context  # noqa: E402
from graph.index.ingest import load_notes  # noqa: E402
from graph.index.retrieval import search_notes  # noqa: E402
from graph.models import default_models  # noqa: E402


def _same(found: list[Any], kept: list[Any]) -> bool:
    """The same sections, in the same order, by note, heading and text."""
    return [(c["source"], c["heading"], c["content"]) for c in found] == [
        (c["source"], c["heading"], c["content"]) for c in kept
    ]


def measure(name: str, manifest: dict, drafts: Path) -> dict[str, Any]:
    """``name``'s figures before and after, and the questions that found other sections."""
    eval_set = manifest[name]
    split = "tune" if name == "answers" else "all"
    context = protocol.context_for(Context(), eval_set)
    context = replace(context, collection_name=f"{context.collection_name}-properties")
    embeddings = default_models().embeddings(context)
    load_notes(context, protocol.notes_folder(eval_set), embeddings)
    model = grader(context)
    questions = {q.id: q for q in select(load_questions(eval_set.path), split)}
    before = json.loads((drafts / f"{name}.graph.json").read_text())
    grades_before = json.loads((drafts / f"{name}.graph-grades.json").read_text())
    kept_file = drafts / f"{name}.properties.json"
    after = json.loads(kept_file.read_text()) if kept_file.is_file() else {}
    changed = 0
    for qid, item in questions.items():
        if qid not in after:
            found = search_notes(context, embeddings, item.question).relevant
            if _same(found, grades_before[qid]["sections"]):
                after[qid] = {**before[qid], "same sections": True}
            else:
                graded = instructions.grades_of([], item.question, context, embeddings, model)
                after[qid] = {"id": qid, **instructions.row_of([], item.question, graded, context)}
            kept_file.write_text(json.dumps(after, ensure_ascii=False))
        changed += not after[qid].get("same sections")
        print(f"[{name}] {qid}", file=sys.stderr)
    return {
        "parser 1": instructions.figures(before, questions),
        "parser 2": instructions.figures(after, questions),
        "questions finding other sections": changed,
        "questions": len(questions),
    }


def main() -> None:
    args = grader_variants.sets_parser(__doc__).parse_args()
    instructions.each_set(args, {}, measure)


if __name__ == "__main__":
    main()
