"""The grader shown worked examples, and the answer reading its surest sections first, set by set.

A grade's instructions are the same for every section of every question, so the server reads
them once a session: after an answer Ollama 0.30 and later restore them from memory, and
before 0.30 the graph reads them ahead while the person reads (``graph/warmup.py``). Longer
instructions then cost no wait after the first question. Each design adds three worked
examples (a note section, a question, the verdict) after the grader's own instructions, in
the same language (German sections get German examples), and changes nothing else:

- ``examples``: two sections that answer (one in other words than the question's) and one
  about another subject of the same kind (another plant), graded "no";
- ``lenient examples``: the same two that answer, and one plainly unrelated, graded "no".

One design keeps the graph's grades and changes the order the answer reads the kept sections
in: ``surest first``, the section the grader was surest of (its P(yes), read from the token
log-probabilities as the answer check reads them) first, then the others by P(yes), where
the graph keeps retrieval's order. The 1.5B writer leans on the first section it reads.
``surest two`` also keeps only the two surest of them (fewer sections beside the right one),
``surest within 0.2`` (``0.3``) only those whose P(yes) is at most that far below the surest's.
Two grade fewer sections: ``stop at a sure yes (0.9)``, the grading in retrieval's order stopped
at the first "yes" with a P(yes) of at least 0.9, and ``the top section alone when sure (0.9)``,
the others not graded where the top-ranked section is such a "yes" (the sections not graded are
left out, and not counted in the grades a question).

Each question of the chosen sets is searched as the graph searches in the collection
``bench/properties.py`` loaded with today's parser (``NAME-properties``); every section found
is graded on its question's window under the design's instructions. Where the design keeps
the sections the graph's grader keeps (its grades kept by ``bench/instructions.py`` where the
question finds the same sections, else graded here), the question keeps the default's row
from ``bench/properties.py``: the same sections, the same draft. Every other question is
drafted from the sections kept by the graph's own ``generate`` with the check off, and checked
as the graph checks. Totals only, per set, with the stage each question was lost at.

    make grader-examples GRADER_EXAMPLES_ARGS="--only answers --only daily-vault"  # every design
    make grader-examples GRADER_EXAMPLES_ARGS="--design 'surest first'"  # every set
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import graph.prompts as prompts  # noqa: E402
import nodes.grade_documents as grading  # noqa: E402
from app.evaluation import sets as protocol  # noqa: E402
from app.evaluation.answers import load_questions, select  # noqa: E402
from bench import grader_variants, instructions  # noqa: E402
from bench.check_rules import patched  # noqa: E402
from bench.grade_probabilities import grader  # noqa: E402
from bench.properties import _same  # noqa: E402
from graph.context import Context  # noqa: E402
from graph.index.retrieval import search_notes  # noqa: E402
from graph.models import default_models  # noqa: E402


def example(
    source: str, heading: str, content: str, question: str, verdict: str, asked: str = "Question"
) -> str:
    """One worked example as a grade's user turn shows it, then the reply (``asked``: the
    question's label in the grade's language)."""
    note = prompts.NOTE.format(number=1, source=source, heading=heading, content=content)
    return f'{note}\n\n{asked}: {question}\n{{"score": "{verdict}"}}'


def beispiel(source: str, heading: str, content: str, frage: str, verdict: str) -> str:
    """One worked example as a German grade's user turn shows it (``GRADE_USER_DE``)."""
    return example(source, heading, content, frage, verdict, asked="Frage")


ANSWERS_EN = [
    example(
        "Garden/Herbs.md",
        "Basil",
        "Water the basil every second day in summer and once a week in winter.",
        "How often does the basil get watered in winter?",
        "yes",
    ),
    example(
        "Car/Tyres.md",
        "Pressure",
        "Front 2.2 bar, rear 2.4 bar. Checked at the petrol station every month.",
        "What do I pump the back tyres up to?",
        "yes",
    ),
]
ANSWERS_DE = [
    beispiel(
        "Garten/Kräuter.md",
        "Basilikum",
        "Basilikum im Sommer jeden zweiten Tag gießen, im Winter einmal pro Woche.",
        "Wie oft wird das Basilikum im Winter gegossen?",
        "yes",
    ),
    beispiel(
        "Auto/Reifen.md",
        "Luftdruck",
        "Vorne 2,2 bar, hinten 2,4 bar. Jeden Monat an der Tankstelle prüfen.",
        "Wie viel Luft kommt in die Hinterreifen?",
        "yes",
    ),
]
#: A section about another subject of the same kind: what the answer's rules call no answer.
SIMILAR_EN = example(
    "Garden/Herbs.md",
    "Rosemary",
    "Rosemary needs little water: every ten days, less often in winter.",
    "How often does the basil get watered in winter?",
    "no",
)
SIMILAR_DE = beispiel(
    "Garten/Kräuter.md",
    "Rosmarin",
    "Rosmarin braucht wenig Wasser: alle zehn Tage, im Winter seltener.",
    "Wie oft wird das Basilikum im Winter gegossen?",
    "no",
)
UNRELATED_EN = example(
    "Car/Tyres.md",
    "Pressure",
    "Front 2.2 bar, rear 2.4 bar. Checked at the petrol station every month.",
    "How often does the basil get watered in winter?",
    "no",
)
UNRELATED_DE = beispiel(
    "Auto/Reifen.md",
    "Luftdruck",
    "Vorne 2,2 bar, hinten 2,4 bar. Jeden Monat an der Tankstelle prüfen.",
    "Wie oft wird das Basilikum im Winter gegossen?",
    "no",
)


def with_examples(system: str, heading: str, shown: list[str]) -> str:
    return system + f"\n\n{heading}\n\n" + "\n\n".join(shown)


def grader_with(en: list[str], de: list[str]) -> list[tuple[Any, str, Any]]:
    """The patches that grade with these examples after the grader's instructions."""
    graded = {
        "en": (with_examples(prompts.GRADE_SYSTEM, "Examples:", en), prompts.GRADE_USER),
        "de": (with_examples(prompts.GRADE_SYSTEM_DE, "Beispiele:", de), prompts.GRADE_USER_DE),
    }
    return [(prompts, "GRADE_PROMPTS", graded), (grading, "GRADE_PROMPTS", graded)]


DESIGNS = {
    "examples": grader_with(
        [ANSWERS_EN[0], SIMILAR_EN, ANSWERS_EN[1]], [ANSWERS_DE[0], SIMILAR_DE, ANSWERS_DE[1]]
    ),
    "lenient examples": grader_with(
        [ANSWERS_EN[0], UNRELATED_EN, ANSWERS_EN[1]],
        [ANSWERS_DE[0], UNRELATED_DE, ANSWERS_DE[1]],
    ),
}


def surest_first(graded: dict) -> dict:
    """The sections and their grades, the grader's surest first (ties: retrieval's order)."""
    grades = graded["grades"]
    order = sorted(range(len(grades)), key=lambda i: -(grades[i]["p_yes"] or 0.0))
    return {
        "sections": [graded["sections"][i] for i in order],
        "grades": [grades[i] for i in order],
    }


def surest_two(graded: dict) -> dict:
    """As ``surest_first``, and only the two surest of the sections graded "yes" kept."""
    ordered = surest_first(graded)
    kept = 0
    grades = []
    for grade in ordered["grades"]:
        kept += grade["verdict"] is not False
        grades.append({**grade, "verdict": False} if kept > 2 else grade)
    return {"sections": ordered["sections"], "grades": grades}


def surest_within(gap: float) -> Callable[[dict], dict]:
    """As ``surest_first``, and a kept section whose P(yes) is more than ``gap`` below the
    surest one's left out (one without a P(yes) kept: nothing to compare)."""

    def ordered(graded: dict) -> dict:
        ordered = surest_first(graded)
        kept = [g["p_yes"] for g in ordered["grades"] if g["verdict"] is not False]
        top = max((p for p in kept if p is not None), default=None)
        grades = [
            {**g, "verdict": False}
            if top is not None and g["p_yes"] is not None and g["p_yes"] < top - gap
            else g
            for g in ordered["grades"]
        ]
        return {"sections": ordered["sections"], "grades": grades}

    return ordered


def stop_at_sure_yes(sure: float) -> Callable[[dict], dict]:
    """Grading in retrieval's order stops at the first "yes" with a P(yes) of at least
    ``sure``: the sections after it are not graded (left out); the kept ones read the surest
    first."""

    def graded_until(graded: dict) -> dict:
        grades = graded["grades"]
        stop = next(
            (i for i, g in enumerate(grades) if g["verdict"] and (g["p_yes"] or 0.0) >= sure),
            len(grades),
        )
        cut = [
            {**g, "verdict": False, "graded": False} if i > stop else g
            for i, g in enumerate(grades)
        ]
        return surest_first({"sections": graded["sections"], "grades": cut})

    return graded_until


def top_alone_when_sure(sure: float) -> Callable[[dict], dict]:
    """The top-ranked section graded first: where it is a "yes" with a P(yes) of at least
    ``sure``, the others are not graded (left out); else every section is, as the graph does."""

    def graded(graded: dict) -> dict:
        grades = graded["grades"]
        if grades and grades[0]["verdict"] and (grades[0]["p_yes"] or 0.0) >= sure:
            grades = [grades[0], *({**g, "verdict": False, "graded": False} for g in grades[1:])]
        return surest_first({"sections": graded["sections"], "grades": grades})

    return graded


#: Designs that keep the graph's grades and change what the answer reads of them: their order,
#: or also how many.
ORDERS = {
    "surest first": surest_first,
    "surest two": surest_two,
    "surest within 0.2": surest_within(0.2),
    "surest within 0.3": surest_within(0.3),
    "stop at a sure yes (0.9)": stop_at_sure_yes(0.9),
    "the top section alone when sure (0.9)": top_alone_when_sure(0.9),
}


def drafted_from_the_defaults_grades(
    name: str, manifest: dict, drafts: Path, label: str, draft: Callable[..., dict]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``name``'s questions, the default's rows and each question drafted by ``draft(question,
    graded, context)`` from the default's grades read the surest first, as the graph reads
    them (``--drafts``/NAME.properties-grades.json); a question the grader turns away keeps
    the default's row. Rows are kept in ``--drafts``/NAME.``label``.json (a run resumes)."""
    context, questions = instructions.set_questions(name, manifest)
    default_rows = json.loads((drafts / f"{name}.surest-first.json").read_text())
    grades = json.loads((drafts / f"{name}.properties-grades.json").read_text())
    rows_file = drafts / f"{name}.{label}.json"
    rows = json.loads(rows_file.read_text()) if rows_file.is_file() else {}
    for qid, item in questions.items():
        if qid not in rows:
            ordered = surest_first(grades[qid])
            if kept_sections(ordered):
                rows[qid] = {"id": qid, **draft(item.question, ordered, context)}
            else:
                rows[qid] = default_rows[qid]
            rows_file.write_text(json.dumps(rows, ensure_ascii=False))
        print(f"[{name} {label}] {qid}", file=sys.stderr)
    return questions, default_rows, rows


def _kept(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}


def kept_chunks(graded: dict) -> list[Any]:
    """The sections a grading keeps ("yes" or unreadable), in its order."""
    return [
        c
        for c, g in zip(graded["sections"], graded["grades"], strict=True)
        if g["verdict"] is not False
    ]


def kept_sections(graded: dict) -> list[tuple[str, str, str]]:
    """The sections a grading keeps, by note, heading and text."""
    return [(c["source"], c["heading"], c["content"]) for c in kept_chunks(graded)]


def grade(model: Any, chunk: Any, question: str, context: Context) -> dict:
    """One section graded on its question's window, as the graph grades it."""
    return grader_variants.graded(model, chunk, question, context, grading.GRADE_WINDOW)


def measure(name: str, design: str, manifest: dict, drafts: Path) -> dict[str, Any]:
    """``name``'s figures under the graph's grader (parser 2) and under ``design``."""
    eval_set = manifest[name]
    split = "tune" if name == "answers" else "all"
    context = protocol.context_for(Context(), eval_set)
    context = replace(context, collection_name=f"{context.collection_name}-properties")
    embeddings = default_models().embeddings(context)
    model = grader(context)
    questions = {q.id: q for q in select(load_questions(eval_set.path), split)}
    default_rows = _kept(drafts / f"{name}.properties.json")
    kept_grades = _kept(drafts / f"{name}.graph-grades.json")
    label = design.replace(" ", "-")
    default_file = drafts / f"{name}.properties-grades.json"
    grades_file, rows_file = drafts / f"{name}.{label}-grades.json", drafts / f"{name}.{label}.json"
    default_grades, grades, rows = _kept(default_file), _kept(grades_file), _kept(rows_file)
    changed = 0
    for qid, item in questions.items():
        if qid not in grades:
            found = search_notes(context, embeddings, item.question).relevant
            if qid not in default_grades:
                before = kept_grades.get(qid)
                default_grades[qid] = (
                    before
                    if before and _same(found, before["sections"])
                    else instructions.grades_of([], item.question, context, embeddings, model)
                )
                default_file.write_text(json.dumps(default_grades, ensure_ascii=False))
            if design in ORDERS:
                grades[qid] = ORDERS[design](default_grades[qid])
            else:
                with patched(DESIGNS[design]):
                    graded = [grade(model, c, item.question, context) for c in found]
                grades[qid] = {"sections": found, "grades": graded}
            grades_file.write_text(json.dumps(grades, ensure_ascii=False))
        if qid not in rows:
            if kept_sections(grades[qid]) == kept_sections(default_grades[qid]):
                rows[qid] = {**default_rows[qid], "same sections kept": True}
            else:
                row = instructions.row_of([], item.question, grades[qid], context)
                rows[qid] = {"id": qid, **row}
            rows_file.write_text(json.dumps(rows, ensure_ascii=False))
        changed += not rows[qid].get("same sections kept")
        print(f"[{name} {design}] {qid}", file=sys.stderr)
    ours = instructions.figures(rows, questions)
    if design in ORDERS:  # the graph's grades: its grading work, less the grades not asked
        ours["per question"] = instructions.figures(default_rows, questions)["per question"]
        asked = [g for qid in questions for g in grades[qid]["grades"] if g.get("graded", True)]
        ours["per question"]["grades"] = round(len(asked) / max(1, len(questions)), 2)
    # A question keeping the default's row keeps its work too: the grading is the design's.
    n = max(1, len(questions))
    done = [g for qid in questions for g in grades[qid]["grades"]]
    if design not in ORDERS:
        ours["per question"]["grading s"] = round(sum(g["seconds"] for g in done) / n, 2)
        ours["per question"]["grading prompt chars"] = round(sum(g["chars"] for g in done) / n, 1)
    return {
        "graph": instructions.figures(default_rows, questions),
        design: ours,
        "questions drafted again": changed,
        "questions": len(questions),
    }


def main() -> None:
    parser = grader_variants.sets_parser(__doc__)
    parser.add_argument("--design", action="append", choices=[*DESIGNS, *ORDERS], default=[])
    args = parser.parse_args()
    designs = args.design or [*DESIGNS, *ORDERS]
    manifest = {s.name: s for s in protocol.read_manifest(args.sets)}
    drafts = Path(args.drafts)
    results: dict[str, Any] = {"designs": designs, "sets": {}}
    for name in args.only or instructions.SETS:
        figures: dict[str, Any] = {}
        for design in designs:
            measured = measure(name, design, manifest, drafts)
            figures["graph"], figures["questions"] = measured["graph"], measured["questions"]
            figures[design] = measured[design]
            figures[f"{design}: questions drafted again"] = measured["questions drafted again"]
        results["sets"][name] = figures
        print(name, json.dumps(figures, ensure_ascii=False), flush=True)
        if args.record:
            Path(args.record).write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
