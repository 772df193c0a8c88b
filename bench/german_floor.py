"""A lower relevance floor for German questions, replayed on the graph's grades.

all-minilm was trained on English: German text embeds with lower cosine scores, and the floor
(0.3 for all-minilm) keeps sections out of the grader's sight that it shows for English. On
``de-alltag`` a section writing an expected fact is among retrieval's top 5 for 41 of 49
answerable questions and above the floor for 36. This design searches a German question
(``graph/language.py``) with a lower floor (``--bar``); English questions as before.

Read from the graph's grades in retrieval's order (``--drafts``/NAME.properties-grades.json):
each section the lower floor adds is graded as the graph grades (kept in
``--drafts``/NAME.german-floor-grades.json), the kept sections read the surest first, and each
question whose kept sections change is drafted and checked as the graph does (rows in
``--drafts``/NAME.german-floor.json), compared with the graph's outcome for the same question
(``bench/language_floor.py``). Totals per set and bar: the sections added, the questions
changed, and how many more right answers and abstentions than the graph.

    .venv/bin/python bench/german_floor.py --only de-alltag --bar 0.25 --bar 0.2 \\
        --record bench/results/german_floor.json
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nodes.grade_documents as grading  # noqa: E402
from bench import grader_variants, instructions  # noqa: E402
from bench.grade_probabilities import grader  # noqa: E402
from bench.grader_examples import surest_first  # noqa: E402
from bench.language_floor import each_bar, if_it_keeps_more, the_graphs  # noqa: E402
from bench.retrieval_replay import section  # noqa: E402
from graph.index.retrieval import search_notes  # noqa: E402
from graph.language import language_of  # noqa: E402
from graph.models import default_models  # noqa: E402


def measure(name: str, bars: list[float], manifest: dict, drafts: Path) -> dict[str, Any]:
    context, questions = instructions.set_questions(name, manifest)
    embeddings, model = default_models().embeddings(context), grader(context)
    grades = json.loads((drafts / f"{name}.properties-grades.json").read_text())
    before = the_graphs(name, questions, drafts)
    added_file = drafts / f"{name}.german-floor-grades.json"
    added = json.loads(added_file.read_text()) if added_file.is_file() else {}
    rows_file = drafts / f"{name}.german-floor.json"
    rows = json.loads(rows_file.read_text()) if rows_file.is_file() else {}
    figures: dict[str, Any] = {}
    for bar in bars:
        sections = changed = right = abstained = 0
        for qid, item in questions.items():
            if language_of(item.question) != "de":
                continue
            graph = grades[qid]
            graded = {
                section(c): g for c, g in zip(graph["sections"], graph["grades"], strict=True)
            }
            lower = replace(context, score_threshold=bar)
            found = search_notes(lower, embeddings, item.question).relevant
            for chunk in found:
                key = f"{qid} {json.dumps(section(chunk), ensure_ascii=False)}"
                if section(chunk) in graded:
                    continue
                sections += 1
                if key not in added:
                    added[key] = grader_variants.graded(
                        model, chunk, item.question, context, grading.GRADE_WINDOW
                    )
                    added_file.write_text(json.dumps(added, ensure_ascii=False))
                graded[section(chunk)] = added[key]
            ordered = surest_first(
                {"sections": found, "grades": [graded[section(c)] for c in found]}
            )
            more = if_it_keeps_more(rows, rows_file, ordered, graph, item, context, before)
            if more is None:
                continue  # the graph's own sections: the floor adds only sections graded "no"
            changed += 1
            right, abstained = right + more[0], abstained + more[1]
            print(f"[{name} {bar}] {qid} {more}", file=sys.stderr)
        figures[str(bar)] = {
            "sections added": sections,
            "questions changed": changed,
            "more right": right,
            "more abstained": abstained,
        }
    return figures


def main() -> None:
    each_bar(__doc__, measure)


if __name__ == "__main__":
    main()
