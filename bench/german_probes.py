"""Two probes of German questions on the notes: a deeper search, and two grader variants.

German answers are lost most at the grader: on ``de-alltag`` (tune) the grader turns away every
section of 18 of 49 answerable questions, and so it does for 19 of the 21 the notes cannot
answer. Both probes read German questions only (``graph/language.py``) and draft nothing:

- **ranks** (no model call): where the first section writing an expected fact ranks among
  retrieval's top 10 at the question's floor, for each answerable question; and how many more
  sections a question the notes cannot answer would show the grader with 10 instead of 5.
- **grades**: for each answerable question its first two sections writing an expected fact
  among the top 5, for each question the notes cannot answer its top 3 sections, graded as
  the graph grades (``fitted_prompt``, the format, P(yes)) and in each variant:
  ``window300``, a long section graded on a 300-character window instead of 600 (German
  sections are long in tokens: a 600-character window is 200-250 tokens); and
  ``question_twice``, the question named before the section too. A variant whose prompt is
  the default's for a section takes the default's grade: asked again, the server would find
  the whole prompt read and compute the verdict another way (the same prompt gave P(yes) 0.514
  and then 0.566).

The collection is the one ``rag eval --sets`` loads for the set (loaded here if missing).

    .venv/bin/python bench/german_probes.py --only de-alltag \\
        --record bench/results/german_probes.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nodes.grade_documents as grading  # noqa: E402
from app.evaluation import sets as protocol  # noqa: E402
from app.evaluation.answers import Question, fact_found, load_questions  # noqa: E402
from bench.check_rules import patched  # noqa: E402
from bench.grade_probabilities import grader  # noqa: E402
from graph.context import Context  # noqa: E402
from graph.index.ingest import load_notes  # noqa: E402
from graph.index.retrieval import RetrievedChunk, search_notes  # noqa: E402
from graph.index.vectorstore import with_embedding_model  # noqa: E402
from graph.language import language_of  # noqa: E402
from graph.llm import message_text, yes_probability  # noqa: E402
from graph.models import default_models  # noqa: E402
from graph.prompts import GRADE_PROMPTS  # noqa: E402

_SYSTEM_DE, _USER_DE = GRADE_PROMPTS["de"]

#: Each grader variant's switches, as ``bench.check_rules.patched`` sets them.
VARIANTS: dict[str, list] = {
    "default": [],
    "window300": [(grading, "GRADE_WINDOW", 300)],
    "question_twice": [
        (
            grading,
            "GRADE_PROMPTS",
            {**GRADE_PROMPTS, "de": (_SYSTEM_DE, "Frage: {question}\n\n" + _USER_DE)},
        )
    ],
}


def fact_sections(item: Question, found: list[RetrievedChunk]) -> list[int]:
    """The ranks (1-based) of the sections of ``found`` that write an expected fact."""
    return [
        rank
        for rank, chunk in enumerate(found, start=1)
        if chunk["source"] in item.sources
        and any(fact_found(chunk["content"], spellings) for spellings in item.facts)
    ]


def ranks(context: Context, embeddings: Any, questions: list[Question]) -> dict[str, Any]:
    """Where the fact's section ranks in the top 10, and what 10 adds for the rest."""
    deeper = replace(context, k=10)
    where: Counter[str] = Counter()
    beyond, added = [], 0
    for item in questions:
        found = search_notes(deeper, embeddings, item.question).relevant
        if not item.answerable:
            added += max(0, len(found) - context.k)
            continue
        first = min(fact_sections(item, found), default=None)
        where["top 5" if first and first <= 5 else "6-10" if first else "not in the top 10"] += 1
        if first and first > 5:
            beyond.append(item.id)
    unanswerable = sum(not q.answerable for q in questions)
    return {
        "answerable": dict(where),
        "answerable at 6-10": beyond,
        "unanswerable": unanswerable,
        "sections 6-10 for the unanswerable": added,
    }


def graded(
    model: Any, chunk: RetrievedChunk, question: str, context: Context, variants: list[str]
) -> dict:
    """Each variant's grade of ``chunk``: verdict, P(yes), seconds and the prompt's characters."""
    row: dict[str, Any] = {}
    asked: dict[str, str] = {}
    for name in variants:
        with patched(VARIANTS[name]):
            prompt, _ = grading.fitted_prompt(chunk, question, context)
        text = repr([m.content for m in prompt])
        if text in asked:  # the default's prompt: the default's grade
            row[name] = {**row[asked[text]], "same_as": asked[text]}
            continue
        asked[text] = name
        started = time.perf_counter()
        reply = model.invoke(prompt)
        row[name] = {
            "verdict": grading.parse_grade(message_text(reply)),
            "p_yes": yes_probability(reply),
            "seconds": round(time.perf_counter() - started, 2),
            "chars": sum(len(str(m.content)) for m in prompt),
        }
    return row


def grades(
    context: Context, embeddings: Any, questions: list[Question], kept: Path, variants: list[str]
) -> dict[str, Any]:
    """The variants' grades (kept in ``kept``: a run resumes) and their totals."""
    rows: dict[str, Any] = json.loads(kept.read_text()) if kept.is_file() else {}
    model = grader(context)
    for item in questions:
        found = search_notes(context, embeddings, item.question).relevant
        if item.answerable:
            chosen = [found[r - 1] for r in fact_sections(item, found)][:2]
        else:
            chosen = found[:3]
        for number, chunk in enumerate(chosen):
            key = f"{item.id}|{number}"
            if key not in rows:
                grade = graded(model, chunk, item.question, context, variants)
                rows[key] = {"answerable": item.answerable, **grade}
                kept.write_text(json.dumps(rows, ensure_ascii=False, indent=0))
                print(key, {v: rows[key][v]["verdict"] for v in variants}, file=sys.stderr)
    return {name: totals(rows, name) for name in VARIANTS if any(name in r for r in rows.values())}


def totals(every: dict[str, Any], variant: str) -> dict[str, Any]:
    """Sections kept, per role, and questions with any section kept; median seconds a grade.

    Over the sections ``variant`` graded (a variant dropped early graded the first few)."""
    rows = {key: row for key, row in every.items() if variant in row}
    kept_fact = sum(bool(r[variant]["verdict"]) for r in rows.values() if r["answerable"])
    facts = sum(r["answerable"] for r in rows.values())
    questions = {key.split("|")[0] for key, r in rows.items() if r["answerable"]}
    with_fact = {
        k.split("|")[0] for k, r in rows.items() if r["answerable"] and r[variant]["verdict"]
    }
    others = {key.split("|")[0] for key, r in rows.items() if not r["answerable"]}
    let_in = {
        k.split("|")[0] for k, r in rows.items() if not r["answerable"] and r[variant]["verdict"]
    }
    asked = sorted(r[variant]["seconds"] for r in rows.values() if "same_as" not in r[variant])
    return {
        "fact sections kept": [kept_fact, facts],
        "answerable questions with a fact section kept": [len(with_fact), len(questions)],
        "unanswerable questions with a section kept": [len(let_in), len(others)],
        "grades asked": len(asked),
        "median seconds of a grade asked": asked[len(asked) // 2] if asked else None,
        "characters": sum(r[variant]["chars"] for r in rows.values()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="tests/eval_sets/sets.json")
    parser.add_argument("--drafts", default="bench/.drafts")
    parser.add_argument("--only", action="append", default=[], help="only these sets")
    parser.add_argument(
        "--variant", action="append", choices=list(VARIANTS), help="default: window300"
    )
    parser.add_argument("--no-grades", action="store_true", help="the ranks only (no model)")
    parser.add_argument("--record", help="write the figures here (JSON)")
    args = parser.parse_args()
    manifest = {s.name: s for s in protocol.read_manifest(args.sets)}
    Path(args.drafts).mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "sets": {}}
    if args.record and Path(args.record).is_file():
        results = json.loads(Path(args.record).read_text())
    for name in args.only or ["de-alltag"]:
        eval_set = manifest[name]
        base = Context(embedding_model="all-minilm")
        context = with_embedding_model(protocol.context_for(base, eval_set))
        embeddings = default_models().embeddings(context)
        load_notes(context, protocol.notes_folder(eval_set), embeddings)
        questions = [q for q in load_questions(eval_set.path) if language_of(q.question) == "de"]
        figures: dict[str, Any] = {"ranks": ranks(context, embeddings, questions)}
        if not args.no_grades:
            kept = Path(args.drafts) / f"{name}.german-probes.json"
            variants = ["default", *(args.variant or ["window300"])]
            figures["grades"] = grades(context, embeddings, questions, kept, variants)
        results["sets"][name] = figures
        print(name, json.dumps(figures, ensure_ascii=False, indent=1), flush=True)
        if args.record:
            Path(args.record).write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
