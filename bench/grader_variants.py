"""Designs of the grader and the writer against each section graded whole, set by set.

The baseline is the graph as it was before these designs: every section graded whole, the
answer written from whole sections (its drafts kept by ``bench/check_rules.py``).

**P(yes) as a ranking.** Where the grader keeps no section, the section it was surest of (the
highest P(yes), read from the token log-probabilities as the answer check reads them) is kept
when that P(yes) reaches a floor. The floor is fitted on the answer set's tune half only: the
lowest at which the tune half keeps at least as many right answers and abstains at least as
often as the baseline.

**A question's window** (``graph/window.py``). A section longer than ``WINDOW_CHARS`` is
graded on its lines (sentences, for long lines) that share the most words with the question,
up to that many characters, in their order; then also the answer written from the same
windows (``ANSWER_WINDOW``), checked against whole sections. Both are the graph's defaults
since they were measured here.

**The answer asked in the question's language** (``ANSWER_LANGUAGE = "question"``).

Each question of the chosen sets is searched as the graph searches, and every section found
is graded whole and on its window, with P(yes) (kept in ``--drafts``/NAME.grades.json).
Where a design keeps other sections than the baseline, or writes from other text, the answer
is drafted again by the graph's own ``generate`` with the check off, and the graph's check
(``bench/check_rules.py``: ``the_graphs_check``) is applied, the model asked where the graph
asks it; every other question keeps its kept draft. Only totals are printed and recorded:
validation sets are read as aggregate figures.

    make grader-variants      # the tune half, then every validation set
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from langchain_ollama import ChatOllama  # noqa: E402
from langgraph.runtime import Runtime  # noqa: E402

import graph.prompts as prompts  # noqa: E402
import nodes.generate as generate  # noqa: E402
import nodes.grade_documents as grading  # noqa: E402
from app.evaluation import sets as protocol  # noqa: E402
from app.evaluation.answers import load_questions, select  # noqa: E402
from app.evaluation.sections import with_models  # noqa: E402
from bench.check_rules import (  # noqa: E402
    asked_with_work,
    outcome,
    patched,
    the_graph_asks_the_model,
    the_graphs_check,
)
from bench.grade_probabilities import grader  # noqa: E402
from graph.context import Context  # noqa: E402
from graph.index.ingest import load_notes  # noqa: E402
from graph.index.retrieval import RetrievedChunk, search_notes  # noqa: E402
from graph.llm import declines, message_text, parse_grade, yes_probability  # noqa: E402
from graph.models import default_models  # noqa: E402
from graph.state import State  # noqa: E402
from graph.window import question_window  # noqa: E402
from nodes.grade_documents import fitted_prompt  # noqa: E402

#: The window the design measured grades a long section on (``nodes/grade_documents.py``).
WINDOW_CHARS = 600


def graded(
    model: ChatOllama, chunk: RetrievedChunk, question: str, context: Context, window: int
) -> dict:
    """One grade (a long section on a ``window``, 0: whole): the verdict, P(yes), the prompt's
    characters and the seconds it took."""
    with patched([(grading, "GRADE_WINDOW", window)]):
        prompt, _ = fitted_prompt(chunk, question, context)
    started = time.perf_counter()
    reply = model.invoke(prompt)
    return {
        "verdict": parse_grade(message_text(reply)),
        "p_yes": yes_probability(reply),
        "chars": sum(len(str(m.content)) for m in prompt),
        "seconds": round(time.perf_counter() - started, 3),
    }


def grade_set(
    eval_set: protocol.EvalSet, split: str, context: Context, kept: Path
) -> dict[str, Any]:
    """Every section each question finds, graded whole and windowed (kept in ``kept``)."""
    data = json.loads(kept.read_text()) if kept.is_file() else {}
    key = {"set": eval_set.name, "model": context.chat_model, "window": WINDOW_CHARS}
    if data.get("key") != key:
        data = {"key": key, "questions": {}}
    models = default_models()
    embeddings = models.embeddings(context)
    model = grader(context)
    for item in select(load_questions(eval_set.path), split):
        if item.id in data["questions"]:
            continue
        found = search_notes(context, embeddings, item.question).relevant
        whole = [graded(model, c, item.question, context, 0) for c in found]
        window = [
            # A section the window leaves whole is the same prompt: the same grade.
            graded(model, c, item.question, context, WINDOW_CHARS)
            if question_window(c, item.question, WINDOW_CHARS) is not c
            else grade
            for c, grade in zip(found, whole, strict=True)
        ]
        data["questions"][item.id] = {"sections": found, "whole": whole, "window": window}
        kept.write_text(json.dumps(data, ensure_ascii=False))
        print(f"[{eval_set.name} graded] {item.id}", file=sys.stderr)
    return data["questions"]


def kept_by(design: str, grades: dict[str, Any], floor: float = 1.1) -> list[int]:
    """The sections ``design`` keeps, by position: ``whole``, ``window``, or ``ranked``."""
    if design == "window":
        return [i for i, g in enumerate(grades["window"]) if g["verdict"] is not False]
    kept = [i for i, g in enumerate(grades["whole"]) if g["verdict"] is not False]
    if design == "ranked" and not kept and grades["whole"]:
        sure = [g["p_yes"] or 0.0 for g in grades["whole"]]
        best = max(range(len(sure)), key=lambda i: sure[i])
        if sure[best] >= floor:
            kept = [best]
    return kept


def unanswered(found: bool) -> dict[str, Any]:
    """The row of a question that keeps no section: the grader's (``found``) or the floor's."""
    reason = "all_irrelevant" if found else "below_threshold"
    state = {"answer": "", "sources": [], "no_answer_reason": reason, "route": "retrieve"}
    return {"state": state, "chunks": []}


def drafted(
    question: str,
    sections: list[RetrievedChunk],
    context: Context,
    cache: dict[str, Any],
    answer_language: str = "english",
    answer_window: int = 0,
) -> dict[str, Any]:
    """A row as ``bench/check_rules.py`` keeps one: the draft from ``sections``, its verdict.

    ``answer_language``, ``answer_window``: ``prompts.ANSWER_LANGUAGE`` and
    ``generate.ANSWER_WINDOW`` while it is drafted and checked.
    """
    # The question and the sections, by note and heading and text: a draft is of both.
    label = json.dumps(
        [question, [[c["source"], c["heading"], c["content"]] for c in sections]],
        ensure_ascii=False,
    )
    if answer_language != "english":
        label = f"answer in the {answer_language}'s language: {label}"
    if answer_window:
        label = f"answer written from windows of {answer_window}: {label}"
    if label in cache:
        return cache[label]
    with patched(
        [
            (prompts, "ANSWER_LANGUAGE", answer_language),
            (generate, "ANSWER_WINDOW", answer_window),
        ]
    ):
        row = _drafted(question, sections, context)
    cache[label] = row
    return row


def _drafted(question: str, sections: list[RetrievedChunk], context: Context) -> dict[str, Any]:
    models = default_models()
    runtime = Runtime(context=replace(context, check_answers=False, read_ahead=False))
    state = with_models(
        models,
        lambda: generate.generate(State(question=question, documents=sections), runtime),
    )
    draft = str(state.get("answer") or "")
    cited = {(s["path"], s["heading"]) for s in state.get("sources") or []}
    chunks = [c for c in sections if (c["source"], c["heading"]) in cited]
    row: dict[str, Any] = {
        "state": {k: state.get(k) for k in ("answer", "sources", "no_answer_reason")},
        "chunks": chunks,
    }
    row["state"]["route"] = "retrieve"
    if draft and not state.get("no_answer_reason") and not declines(draft):
        row["whole"] = {"stated": None, "sure": None}  # filled below where the graph asks
        if the_graph_asks_the_model(row, question):
            row["whole"] = with_models(
                models, lambda: asked_with_work(chunks, question, draft, context)
            )
    return row


def design_rows(
    design: str,
    rows: list[dict],
    graded_questions: dict[str, Any],
    questions: dict[str, Any],
    context: Context,
    cache: dict[str, Any],
    floor: float = 1.1,
) -> list[dict]:
    """The graph's kept rows, each drafted again where ``design`` keeps other sections."""
    out = []
    for row in rows:
        grades = graded_questions[row["id"]]
        question = questions[row["id"]].question
        ours = kept_by(design, grades, floor)
        if design == "question":  # the graph's grades; the answer asked in the question's language
            written = [grades["sections"][i] for i in ours]
            if ours and prompts.ANSWER_REQUEST.get(prompts.language_of(question)) not in (
                None,
                prompts.ANSWER_REQUEST["en"],
            ):
                out.append(
                    {"id": row["id"], **drafted(question, written, context, cache, "question")}
                )
            else:
                out.append(row)
            continue
        if design == "writer":  # grader 6, and the answer written from the same windows
            ours = kept_by("window", grades)
            written = [grades["sections"][i] for i in ours]
            if any(question_window(c, question, WINDOW_CHARS) is not c for c in written):
                windows = drafted(question, written, context, cache, answer_window=WINDOW_CHARS)
                out.append({"id": row["id"], **windows})
                continue
            # no section it writes from is cut: grader 6's row (``ours`` is its kept sections)
        if ours == kept_by("whole", grades):
            out.append(row)
            continue
        sections = [grades["sections"][i] for i in ours]
        if not sections:
            out.append({"id": row["id"], **unanswered(bool(grades["sections"]))})
            continue
        out.append({"id": row["id"], **drafted(question, sections, context, cache)})
    return out


def agreement(rows: list[dict], graded_questions: dict[str, Any]) -> int:
    """How many kept rows disagree with the grades here about keeping no section at all."""
    return sum(
        (row["state"].get("no_answer_reason") == "all_irrelevant")
        != (
            not kept_by("whole", graded_questions[row["id"]])
            and bool(graded_questions[row["id"]]["sections"])
        )
        for row in rows
        if row["state"].get("no_answer_reason") in (None, "all_irrelevant")
    )


def work(graded_questions: dict[str, Any], how: str) -> dict[str, float]:
    """Grades, prompt characters and seconds per question, graded ``how``."""
    n = max(1, len(graded_questions))
    grades = [g for q in graded_questions.values() for g in q[how]]
    return {
        "grades": round(len(grades) / n, 2),
        "chars": round(sum(g["chars"] for g in grades) / n, 1),
        "seconds": round(sum(g["seconds"] for g in grades) / n, 2),
    }


#: Each set's kept drafts of the graph's own design (``bench/check_rules.py``).
DRAFTS = {
    "answers": "answers.json",
    "runbooks": "runbooks.json",
    "de-rezepte-reisen": "de-rezepte-reisen.grade-notes.json",
    "runbooks-generated": "runbooks-generated.json",
    "de-rezepte-reisen-generated": "de-rezepte-reisen-generated.grade-notes.json",
}


def fitted_floor(
    rows: list[dict],
    graded_questions: dict[str, Any],
    questions: dict[str, Any],
    context: Context,
    cache: dict[str, Any],
) -> float:
    """The lowest P(yes) floor with as many right answers and abstentions as the graph's."""
    base = outcome(rows, questions, the_graphs_check)
    tops = sorted(
        {
            max(g["p_yes"] or 0.0 for g in q["whole"])
            for q in graded_questions.values()
            if q["whole"] and not kept_by("whole", q)
        }
    )
    best = 1.1
    for floor in reversed(tops):  # each candidate keeps one more question's top section
        ranked = design_rows("ranked", rows, graded_questions, questions, context, cache, floor)
        got = outcome(ranked, questions, the_graphs_check)
        if got["right"] >= base["right"] and got["abstained"] >= base["abstained"]:
            best = floor
        else:
            break
    return best


def sets_parser(doc: str) -> argparse.ArgumentParser:
    """The options every design bench over the labelled sets takes (``doc``: its docstring)."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--sets", default="tests/eval_sets/sets.json")
    parser.add_argument("--drafts", default="bench/.drafts")
    parser.add_argument("--only", action="append", default=[], help="only these sets")
    parser.add_argument("--record", help="write the figures here (JSON)")
    return parser


def loaded(eval_set: protocol.EvalSet) -> Context:
    """The context of ``eval_set``'s own collection, its notes loaded (unchanged ones skipped)."""
    context = protocol.context_for(Context(), eval_set)
    load_notes(context, protocol.notes_folder(eval_set), default_models().embeddings(context))
    return context


def main() -> None:
    args = sets_parser(__doc__).parse_args()
    manifest = {s.name: s for s in protocol.read_manifest(args.sets)}
    names = args.only or list(DRAFTS)
    results: dict[str, Any] = {"window_chars": WINDOW_CHARS, "sets": {}}
    floor = 1.1
    for name in names:
        eval_set = manifest[name]
        split = "tune" if name == "answers" else "all"
        context = loaded(eval_set)
        drafts = Path(args.drafts)
        graded_questions = grade_set(eval_set, split, context, drafts / f"{name}.grades.json")
        rows = json.loads((drafts / DRAFTS[name]).read_text())["rows"]
        questions = {q.id: q for q in select(load_questions(eval_set.path), split)}
        cache_file = drafts / f"{name}.grader-drafts.json"
        cache = json.loads(cache_file.read_text()) if cache_file.is_file() else {}
        if name == "answers":
            floor = fitted_floor(rows, graded_questions, questions, context, cache)
            results["floor"] = floor
        table = {
            "each section graded whole": outcome(rows, questions, the_graphs_check),
            f"P(yes) as a ranking (floor {floor})": outcome(
                design_rows("ranked", rows, graded_questions, questions, context, cache, floor),
                questions,
                the_graphs_check,
            ),
            f"grader 6: the grade on a question's window ({WINDOW_CHARS} characters)": outcome(
                design_rows("window", rows, graded_questions, questions, context, cache),
                questions,
                the_graphs_check,
            ),
            "grader 6, and the answer written from the same windows (the default)": outcome(
                design_rows("writer", rows, graded_questions, questions, context, cache),
                questions,
                the_graphs_check,
            ),
            "the answer asked in the question's language": outcome(
                design_rows("question", rows, graded_questions, questions, context, cache),
                questions,
                the_graphs_check,
            ),
        }
        cache_file.write_text(json.dumps(cache, ensure_ascii=False))
        results["sets"][name] = {
            "variants": table,
            "disagreements with the kept drafts": agreement(rows, graded_questions),
            "grading, whole": work(graded_questions, "whole"),
            "grading, window": work(graded_questions, "window"),
        }
        print(name, json.dumps(results["sets"][name], ensure_ascii=False), flush=True)
    if args.record:
        Path(args.record).write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
