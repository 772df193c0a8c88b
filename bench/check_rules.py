"""What each rule of the answer check does: its measured effect, set by set.

The answer check (``nodes/generate.py``) withdraws a draft when a lookup finds a figure its
note sections do not hold (``graph/figures.py``: ``ungrounded_figures``), or finds that every
figure measures something other than what the question asks (``figures_of_another_kind``);
otherwise the model is asked, and its "yes" counts only at P(yes) of ``CHECK_CONFIDENCE`` or
more. Each equivalence or exclusion of the lookups is a rule (``9h30`` is ``9:30``, "twice"
is 2, a question asking "how many" wants a count...).

This runs every question of the chosen sets through the graph once with the check off (the
draft is what the check would see: generation comes first, at temperature 0), and asks the
model's check for every draft that does not decline, whether or not a lookup fires. It also
asks the check one sentence at a time (claim by claim: a draft stands only when each of its
sentences is stated), the general alternative to the lookups. Then, without the model, it
replays the check as the graph runs it with each rule switched off in turn, with each
lookup off, and at other confidence bars. Two more designs are measured beside it: the
model's check asked as the next turn of the answer's own conversation (``continued``: the
server reuses what it read for the answer, so the notes are not read twice), and a
deterministic names lookup (every name, code or quoted term of the draft written in its note
sections; no model call). ``--grade-language`` and ``--grade-layout`` draft again with another
grader (``nodes/grade_documents.py``), the drafts kept apart. Every variant is scored as
``rag eval --answers`` scores the graph: answerable questions with every fact and an expected
note cited inline, near misses and unanswerable questions abstained.

Only totals are printed and recorded (``--record``): a validation set is read as aggregate
figures only. The drafts and verdicts are kept in ``--drafts`` (git-ignored) so the replay
can be rerun without the model; a draft file is reused only for the same set, model and
embedding model.

    make check-rules                  # validation sets, Qwen2.5-Coder-1.5B, all-minilm
    .venv/bin/python bench/check_rules.py --replay   # from the kept drafts, no model
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.runnables import RunnableLambda  # noqa: E402

import graph.figures as figures  # noqa: E402
import graph.names as names  # noqa: E402
import graph.prompts as prompts  # noqa: E402
import nodes.generate as generate  # noqa: E402
import nodes.grade_documents as grading  # noqa: E402
from app.evaluation import sets as protocol  # noqa: E402
from app.evaluation.answers import ModelWork, load_questions, score, select  # noqa: E402
from graph.context import CHECK_CONFIDENCE, Context  # noqa: E402
from graph.figures import CITATIONS  # noqa: E402
from graph.llm import declines, message_text  # noqa: E402
from graph.models import default_models  # noqa: E402
from graph.prompts import GRADE_AFTER_NOTES  # noqa: E402

#: A pattern that matches nothing (with one group, as ``LINE_MARKER`` has): a rule whose
#: pattern it replaces never applies.
NEVER = re.compile(r"(?!)()")

#: Bars the model's P(yes) is replayed at, besides ``CHECK_CONFIDENCE``.
BARS = (0.5, 0.7, 0.8, 0.9, 0.95)

Patch = tuple[Any, str, Any]


def _numbers_only(original: Callable[..., bool]) -> Callable[..., bool]:
    """``_is_held`` comparing numbers alone: the unit an answer gives is not checked."""
    return lambda figure, held, numbers: original((figure[0], None), held, numbers)


def rules() -> dict[str, list[Patch]]:
    """Each rule of the lookups, and what switches it off (module, attribute, replacement)."""
    f = figures
    return {
        # The figure lookup: what counts as the same figure, and what is not a figure.
        "number words (two, twenty-five, a hundred, twice)": [
            (f, "SPELLED", NEVER),
            (f, "COMPOUND", NEVER),
            (f, "HUNDREDS", NEVER),
        ],
        "units must match (12 % is not 12 hours)": [(f, "_is_held", _numbers_only(f._is_held))],
        "citations are not figures ([1])": [(f, "CITATIONS", NEVER)],
        "list numbers are not figures (1.)": [
            (f, "LINE_MARKER", NEVER),
            (f, "INLINE_MARKER", NEVER),
        ],
        # The kind lookup: what a question asks for, and what answers it anyway.
        "asks a temperature": [
            (f, "ASKS", {k: v for k, v in f.ASKS.items() if k != "a temperature"})
        ],
        "asks a count (how many)": [(f, "HOW_MANY", NEVER)],
    }


@contextlib.contextmanager
def patched(patches: list[Patch]) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        for target, name, value in patches:
            stack.enter_context(mock.patch.object(target, name, value))
        yield


# --- the model's part: drafts and verdicts, once -------------------------------------------


def claims(answer: str) -> list[str]:
    """The sentences of ``answer`` that say something: each is checked on its own."""
    text = CITATIONS.sub(" ", answer)
    parts = re.split(r"(?<=[.!?])\s+|\n+", text)
    return [p.strip(" -*") for p in parts if re.search(r"[^\W\d_]{3}", p)]


def asked_with_work(
    chunks: list[Any],
    question: str,
    answer: str,
    context: Context,
    said: Any = None,
    style: generate.CheckStyle = "fresh",
) -> dict[str, Any]:
    """The model's verdict on ``answer`` (``ask_check`` in ``style``), P(yes), calls, tokens.

    ``said``: the model's reply as received, which the ``continued`` style sends back.
    """
    work = ModelWork()
    asked = RunnableLambda(
        lambda _: generate.ask_check(chunks, question, answer, context, said, style)
    )
    started = time.perf_counter()
    verdict = asked.invoke(None, {"callbacks": [work]})
    total = work.total()
    spent = {
        "calls": total.calls,
        "tokens": total.prompt_tokens + total.generated_tokens,
        "prompt_tokens": total.prompt_tokens,
        "seconds": round(time.perf_counter() - started, 2),
    }
    if isinstance(verdict, str):
        return {"stated": None, "sure": None, "why": verdict, **spent}
    return {"stated": verdict[0], "sure": verdict[1], **spent}


def record_drafts(
    eval_set: protocol.EvalSet,
    context: Context,
    notify: Callable,
    limit: int | None = None,
    with_claims: bool = True,
    split: str = "all",
    fresh_only: bool = False,
) -> list[dict]:
    """Every question through the graph with the check off; each draft's verdicts.

    ``fresh_only``: only the model's check asked afresh (``whole``), not continued or prefix.
    """
    from graph.builder import build_graph
    from graph.index.ingest import load_notes

    models = default_models()
    context = protocol.context_for(context, eval_set)
    load_notes(context, protocol.notes_folder(eval_set), models.embeddings(context))
    app = build_graph(models=models)
    drafting = replace(context, check_answers=False, read_ahead=False)
    rows = []
    for number, item in enumerate(select(load_questions(eval_set.path), split, limit), start=1):
        work = ModelWork()
        started = time.perf_counter()
        state = app.invoke({"question": item.question}, {"callbacks": [work]}, context=drafting)
        draft = str(state.get("answer") or "")
        cited = {(s["path"], s["heading"]) for s in state.get("sources") or []}
        chunks = [c for c in state.get("documents") or [] if (c["source"], c["heading"]) in cited]
        written = work.by_purpose.get("generate")
        row: dict[str, Any] = {
            "id": item.id,
            "state": {k: state.get(k) for k in ("answer", "sources", "no_answer_reason", "route")},
            "chunks": chunks,
            "draft_calls": work.total().calls,
            "answer_tokens": (written.prompt_tokens + written.generated_tokens) if written else 0,
        }
        if draft and not state.get("no_answer_reason") and not declines(draft):
            # First the check that continues the answer's conversation, while the server still
            # holds that conversation (as in the graph, where it follows the answer at once).
            said = AIMessage(message_text((state.get("messages") or [""])[-1]))
            if not fresh_only:
                row["continued"] = asked_with_work(
                    chunks, item.question, draft, context, said, "continued"
                )
                row["prefix"] = asked_with_work(
                    chunks, item.question, draft, context, None, "prefix"
                )
            row["whole"] = asked_with_work(chunks, item.question, draft, context)
            if with_claims:
                row["claims"] = [
                    asked_with_work(chunks, item.question, c, context) for c in claims(draft)
                ]
        rows.append(row)
        notify(f"[{eval_set.name} {number}] {time.perf_counter() - started:.1f} s")
    return rows


def record_top_sections(
    eval_set: protocol.EvalSet, context: Context, rows: list[dict], notify: Callable
) -> int:
    """A grader variant: where the grader kept no section, a draft from the top-ranked one.

    For each kept row whose every section was graded out, the question is searched again
    (the same collection, no model), the first section at or above the floor is drafted from
    by the graph's own ``generate`` with the check off, and both checks are asked of the draft
    as of any other (``row["top_section"]``). Returns how many rows got one.
    """
    from langgraph.runtime import Runtime

    from app.evaluation.sections import with_models
    from graph.index.retrieval import search_notes
    from graph.state import State

    models = default_models()
    context = protocol.context_for(context, eval_set)
    embeddings = models.embeddings(context)
    drafting = Runtime(context=replace(context, check_answers=False))
    questions = {q.id: q for q in load_questions(eval_set.path)}
    added = 0
    for row in rows:
        if row["state"].get("no_answer_reason") != "all_irrelevant" or "top_section" in row:
            continue
        question = questions[row["id"]].question
        found = search_notes(context, embeddings, question)
        if not found.relevant:
            continue
        top = [found.relevant[0]]
        written = with_models(
            models, lambda: generate.generate(State(question=question, documents=top), drafting)
        )
        draft = str(written.get("answer") or "")
        entry: dict[str, Any] = {
            "state": {
                "answer": draft,
                "sources": written.get("sources"),
                "no_answer_reason": written.get("no_answer_reason"),
                "route": row["state"].get("route"),
            },
            "chunks": top,
        }
        if draft and not declines(draft):
            said = AIMessage(message_text((written.get("messages") or [""])[-1]))
            entry["continued"] = with_models(
                models,
                lambda: asked_with_work(top, question, draft, context, said, "continued"),
            )
            entry["prefix"] = with_models(
                models, lambda: asked_with_work(top, question, draft, context, None, "prefix")
            )
            entry["whole"] = with_models(
                models, lambda: asked_with_work(top, question, draft, context)
            )
        row["top_section"] = entry
        added += 1
        notify(f"[{eval_set.name} top section {added}] {row['id']}")
    return added


def add_prefix_verdicts(
    eval_set: protocol.EvalSet, context: Context, rows: list[dict], notify: Callable
) -> int:
    """The check after the answer's prompt (``prefix``), asked of kept drafts that lack it.

    One model call per draft that has the fresh check's verdict (top-section drafts included); the
    server has not just read each answer's prompt here, so this pass is slower than the
    graph would be. Returns how many verdicts were added.
    """
    from app.evaluation.sections import with_models

    models = default_models()
    context = protocol.context_for(context, eval_set)
    questions = {q.id: q for q in load_questions(eval_set.path)}
    added = 0
    for row in rows:
        question = questions[row["id"]].question
        for entry in (row, row.get("top_section")):
            if not entry or "whole" not in entry or "prefix" in entry:
                continue
            draft, chunks = entry["state"]["answer"], entry["chunks"]
            entry["prefix"] = with_models(
                models, lambda: asked_with_work(chunks, question, draft, context, None, "prefix")
            )
            added += 1
            notify(f"[{eval_set.name} prefix {added}] {row['id']}")
    return added


def add_own_verdicts(
    eval_set: protocol.EvalSet, context: Context, rows: list[dict], notify: Callable
) -> int:
    """The check in its own system prompt (``CHECK_SYSTEM``, the notes again), asked of kept
    drafts that lack it: drafts written with one system prompt, checked as each task's own
    prompt checks them (``own``). One model call per draft that has the fresh check's verdict.
    Returns how many verdicts were added.
    """
    from app.evaluation.sections import with_models

    models = default_models()
    context = protocol.context_for(context, eval_set)
    questions = {q.id: q for q in load_questions(eval_set.path)}
    added = 0
    with patched([(prompts, "SYSTEM_PROMPT", "per_task")]):
        for row in rows:
            if "whole" not in row or "own" in row:
                continue
            question = questions[row["id"]].question
            draft, chunks = row["state"]["answer"], row["chunks"]
            row["own"] = with_models(
                models, lambda: asked_with_work(chunks, question, draft, context)
            )
            added += 1
            notify(f"[{eval_set.name} own check {added}] {row['id']}")
    return added


def with_top_section(row: dict[str, Any], sure: float = 0.0) -> dict[str, Any]:
    """The row as the grader variant has it: its top-section draft where the grader kept none.

    ``sure``: only where retrieval is that sure of the top section (its score at least this).
    """
    top = row.get("top_section")
    if top is None or top["chunks"][0]["score"] < sure:
        return row
    return {"id": row["id"], **top}


def fitted_sure_score(rows: list[dict], questions: dict[str, Any], withdraws: Callable) -> float:
    """The lowest top-section score that lets no near miss of ``rows`` through (the tune half).

    Just above the highest-scoring top section of a near miss whose top-section draft the
    check ``withdraws`` would let stand; 0 when every such draft is withdrawn.
    """
    through = [
        row["top_section"]["chunks"][0]["score"]
        for row in rows
        if "top_section" in row
        and not questions[row["id"]].answerable
        and not outcome([row], questions, withdraws, sure=0.0)["abstained"]
    ]
    return round(max(through) + 0.0001, 4) if through else 0.0


# --- the replay: every variant from the kept verdicts, no model -----------------------------


# --- the names lookup (graph/names.py) in every language, as first measured ---------------


def verifiable(answer: str) -> bool:
    """Whether ``answer`` gives a figure or a name the lookups can find in its sections."""
    return bool(figures.ungrounded_figures(answer, []) or names.names_of(answer))


def unwritten_names(answer: str, chunks: list[Any]) -> list[str]:
    """The names of ``answer`` none of its note sections writes, whatever their language."""
    if declines(answer):
        return []
    return names.unwritten_names(answer, map(generate.grounds, chunks))


def the_graphs_check(row: dict[str, Any], question: str, bar: float = CHECK_CONFIDENCE) -> bool:
    """Whether the graph's check (``nodes/generate.py``) withdraws this row's draft.

    What settles it without the model (``without_the_model``), else the model's verdict.
    """
    if "whole" not in row:
        return False
    settled = generate.without_the_model(question, row["state"]["answer"], row["chunks"])
    if settled:
        return settled[0] == "lookup"
    return flagged_by_model(row["whole"], bar)


def the_graph_asks_the_model(row: dict[str, Any], question: str) -> bool:
    """Whether the graph's check asks the model about this row's draft."""
    return generate.without_the_model(question, row["state"]["answer"], row["chunks"]) is None


def flagged_by_model(verdict: dict[str, Any], bar: float) -> bool:
    """Whether the model's verdict withdraws the draft at ``bar``, as ``check_answer`` does."""
    return verdict["stated"] is False or generate.unsure(verdict["stated"], verdict["sure"], bar)


def replay(
    row: dict[str, Any],
    question: str,
    *,
    lookups: bool = True,
    model: str = "whole",
    bar: float = CHECK_CONFIDENCE,
    names: bool = False,
    model_when_unverifiable: bool = False,
    model_without_figures: bool = False,
) -> bool:
    """Whether the check withdraws this row's draft (``model``: whole, continued, claims, none).

    ``names``: the names lookup as well (``unwritten_names``), after the figure lookups.
    """
    if "whole" not in row:  # no draft, or one that declines: nothing is checked
        return False
    if lookups and generate.lookup(question, row["state"]["answer"], row["chunks"]):
        return True
    if names and unwritten_names(row["state"]["answer"], row["chunks"]):
        return True
    if model_when_unverifiable and verifiable(row["state"]["answer"]):
        return False  # its figures and names are all written in its sections: kept
    if model_without_figures and generate.settled_by_figures(row["state"]["answer"], row["chunks"]):
        return False  # it gives figures, each written in its sections' text: kept
    if model in ("whole", "continued", "prefix", "own"):
        return flagged_by_model(row[model], bar)
    if model == "claims":
        return any(flagged_by_model(v, bar) for v in row["claims"])
    return False


def outcome(
    rows: list[dict], questions: dict[str, Any], withdraws: Callable, sure: float | None = None
) -> dict[str, int]:
    """The two headline counts of ``rag eval --answers`` with drafts withdrawn as given.

    ``sure``: the grader variant, each row's top-section draft where it has one whose score
    is at least ``sure`` (``None``: the graph's own grader).
    """
    right = abstained = answerable = unanswerable = 0
    for row in rows:
        item = questions[row["id"]]
        if sure is not None:
            row = with_top_section(row, sure)
        state = dict(row["state"])
        if withdraws(row, item.question):
            state["answer"] = f"{state['answer']}\n\n(not stated)"
            state["no_answer_reason"] = "unsupported"
        scored = score(item, state, ModelWork(), 0.0, None)
        if item.answerable and item.facts:
            answerable += 1
            right += bool(scored["facts_cited_inline"])
        elif not item.answerable:
            unanswerable += 1
            abstained += bool(scored["abstained"])
    return {"right": right, "answerable": answerable, "abstained": abstained, "of": unanswerable}


def variants(bars: tuple[float, ...] = BARS) -> dict[str, Callable[[dict, str], bool]]:
    """Every replayed design of the check, by name, with the check at each of ``bars``."""
    designs: dict[str, Callable[[dict, str], bool]] = {
        # The graph's check until 2026-12-06: the model asked of every draft the lookups keep.
        "lookups + the model's check": lambda row, q: replay(row, q),
        "no check": lambda row, q: False,
        "lookups only": lambda row, q: replay(row, q, model="none"),
        "model only": lambda row, q: replay(row, q, lookups=False),
        "claim by claim": lambda row, q: replay(row, q, lookups=False, model="claims"),
        "lookups + claim by claim": lambda row, q: replay(row, q, model="claims"),
        "continued (lookups + the check as the answer's next turn)": lambda row, q: replay(
            row, q, model="continued"
        ),
        "continued, model only": lambda row, q: replay(row, q, lookups=False, model="continued"),
        "lookups + names": lambda row, q: replay(row, q, model="none", names=True),
        "lookups + names + the model's check": lambda row, q: replay(row, q, names=True),
        "lookups + names + continued": lambda row, q: replay(row, q, model="continued", names=True),
        "lookups + names; the model only for a draft with nothing to look up": (
            lambda row, q: replay(row, q, model="whole", names=True, model_when_unverifiable=True)
        ),
        # The graph's check since 2026-12-07: names read too, but in German sections.
        "the graph's check: lookups + names (not in German sections); the model only for a "
        "draft its figures or names do not settle": the_graphs_check,
        # The graph's check from 2026-12-06 until 2026-12-07: figures only settle a draft.
        "lookups; the model only for a draft without figures": lambda row, q: replay(
            row, q, model_without_figures=True
        ),
        # Drafts written with one system prompt, checked in the check's own (``--own-check``).
        "lookups; the model in its own prompt only for a draft without figures": (
            lambda row, q: replay(row, q, model="own", model_without_figures=True)
        ),
        "lookups + the model's check in its own prompt": lambda row, q: replay(row, q, model="own"),
        "prefix (lookups + the check written after the answer's prompt)": lambda row, q: replay(
            row, q, model="prefix"
        ),
        "prefix, model only": lambda row, q: replay(row, q, lookups=False, model="prefix"),
        "lookups + names + prefix": lambda row, q: replay(row, q, model="prefix", names=True),
        "without the figure lookup": lambda row, q: _with(
            [(generate, "ungrounded_figures", lambda *a: [])], row, q
        ),
        "without the kind lookup": lambda row, q: _with(
            [(generate, "figures_of_another_kind", lambda *a: None)], row, q
        ),
    }
    for name, design in list(designs.items()):
        designs[f"top section kept, {name}"] = design
    for bar in bars:
        designs[f"bar {bar}"] = lambda row, q, bar=bar: replay(row, q, bar=bar)
        designs[f"continued, bar {bar}"] = lambda row, q, bar=bar: replay(
            row, q, model="continued", bar=bar
        )
        designs[f"prefix, bar {bar}"] = lambda row, q, bar=bar: replay(
            row, q, model="prefix", bar=bar
        )
    for name, patches in rules().items():
        designs[f"without: {name}"] = lambda row, q, p=patches: _with(p, row, q)
    return designs


def _with(patches: list[Patch], row: dict, question: str) -> bool:
    with patched(patches):
        return replay(row, question)


def work_per_question(
    rows: list[dict], key: str, asked: Callable[[dict], bool] = lambda row: True
) -> dict[str, float]:
    """Check calls, tokens and seconds per question for one way of asking the check.

    ``asked``: the rows whose draft the design asks the model about (every one by default).
    """
    entries = [
        v
        for r in rows
        if key in r and asked(r)
        for v in (r[key] if isinstance(r[key], list) else [r[key]])
    ]
    n = max(1, len(rows))
    return {
        "calls": round(sum(e["calls"] for e in entries) / n, 2),
        "tokens": round(sum(e["tokens"] for e in entries) / n, 1),
        "seconds": round(sum(e.get("seconds", 0.0) for e in entries) / n, 2),
    }


def drafts_key(
    name: str,
    context: Context,
    limit: int | None,
    split: str = "all",
    language: str = "english",
    layout: str = "alone",
    system_prompt: str = "per_task",
    window: int = 0,
) -> dict[str, Any]:
    """What kept drafts were made with: a replay refuses drafts of another set or model."""
    return {
        "set": name,
        "model": context.chat_model,
        "embedding": context.embedding_model,
        "limit": limit,
        **({"split": split} if split != "all" else {}),
        **({"grade_language": language} if language != "english" else {}),
        # Drafts graded and written on a question's window of long sections apart.
        **({"grade_window": window} if window else {}),
        # Drafts graded after the notes are kept per wording of what follows the notes.
        **(
            {"grade_layout": layout, "grade_after_notes": GRADE_AFTER_NOTES}
            if layout != "alone"
            else {}
        ),
        # Drafts asked with one system prompt are kept per wording of it and of the grade's turn.
        **(
            {
                "system_prompt": system_prompt,
                "shared_system": prompts.SHARED_SYSTEM,
                "grade_request": prompts.GRADE_REQUEST,
            }
            if system_prompt == "shared"
            else {"system_prompt": system_prompt, "grader_system": prompts.grader_system("")}
            if system_prompt != "per_task"
            else {}
        ),
    }


#: The designs of the check the "retrieval is sure" grader variant is replayed with.
SURE_DESIGNS = (
    "lookups + the model's check",
    "lookups only",
    "lookups; the model only for a draft without figures",
    "lookups + names; the model only for a draft with nothing to look up",
)


def tune_sure_scores(
    drafts: Path, manifest: list[protocol.EvalSet], designs: dict[str, Callable]
) -> dict[str, float]:
    """Per design of ``SURE_DESIGNS``, the top-section score fitted on the tune half.

    From the kept drafts of the answer set's tune half (``--role tune --split tune
    --top-section``); empty when there are none.
    """
    kept = drafts / "answers.json"
    answers = next((s for s in manifest if s.name == "answers"), None)
    if answers is None or not kept.is_file():
        return {}
    data = json.loads(kept.read_text())
    if data["key"].get("split") != "tune" or not any("top_section" in r for r in data["rows"]):
        return {}
    questions = {q.id: q for q in select(load_questions(answers.path), "tune")}
    return {d: fitted_sure_score(data["rows"], questions, designs[d]) for d in SURE_DESIGNS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="tests/eval_sets/sets.json")
    parser.add_argument("--role", default="validation", choices=["tune", "validation"])
    parser.add_argument("--only", help="one set of the manifest")
    parser.add_argument("--drafts", default="bench/.drafts", help="folder for the drafts")
    parser.add_argument("--replay", action="store_true", help="only from kept drafts")
    parser.add_argument("--record", help="write the totals here (JSON)")
    parser.add_argument("--limit", type=int, help="the first N questions (a smoke test)")
    parser.add_argument(
        "--split",
        default="all",
        choices=("all", "tune", "heldout"),
        help="only the questions of this half of a set that has halves",
    )
    parser.add_argument(
        "--prefix",
        action="store_true",
        help="ask the check after the answer's prompt (style prefix) of kept drafts lacking it",
    )
    parser.add_argument(
        "--top-section",
        action="store_true",
        help="also draft from the top-ranked section where the grader kept none (a grader "
        "variant; one draft and two checks per such question, added to kept drafts)",
    )
    parser.add_argument(
        "--grade-language",
        default="english",
        choices=("english", "notes"),
        help="the grader's language (a grader variant; drafts kept apart, NAME.grade-notes.json)",
    )
    parser.add_argument(
        "--grade-layout",
        default="alone",
        choices=("alone", "after_notes"),
        help="each section graded in a prompt of its own, or after the answer's beginning "
        "with every section (a grader variant; drafts kept apart, NAME.grade-after_notes.json)",
    )
    parser.add_argument(
        "--grade-window",
        type=int,
        default=0,
        help="grade and write from a section longer than this many characters on the lines the "
        "question is about (the graph's GRADE_WINDOW and ANSWER_WINDOW; 0, whole, as the kept "
        "drafts were made; drafts kept apart, NAME.windowN.json)",
    )
    parser.add_argument(
        "--system-prompt",
        default="per_task",
        choices=("per_task", "shared", "answer_first"),
        help="each task's own system prompt, or one for the grader, the answer and the check "
        "(a design of the answer path; drafts kept apart, NAME.system-shared.json)",
    )
    parser.add_argument(
        "--own-check",
        action="store_true",
        help="with --system-prompt shared: also ask each kept draft's check in the check's "
        "own system prompt (one model call a draft)",
    )
    parser.add_argument(
        "--fresh-only",
        action="store_true",
        help="ask only the model's check afresh of each draft (not continued, prefix)",
    )
    parser.add_argument(
        "--no-claims",
        action="store_true",
        help="leave out the claim-by-claim check (about one model call a question)",
    )
    parser.add_argument(
        "--bar",
        type=float,
        action="append",
        default=[],
        help="replay the check at this bar too (repeatable; e.g. one `rag calibrate` suggested)",
    )
    args = parser.parse_args()
    context = Context()
    chosen = [
        s
        for s in protocol.selected(
            protocol.read_manifest(args.sets), [args.role], False, [args.only] if args.only else []
        )
        if not s.distractors
    ]
    stack = contextlib.ExitStack()
    results: dict[str, Any] = {
        "chat_model": context.chat_model,
        "embedding_model": context.embedding_model,
        "check_confidence": CHECK_CONFIDENCE,
        "sets": {},
    }
    manifest = protocol.read_manifest(args.sets)
    sure = tune_sure_scores(Path(args.drafts), manifest, variants())
    if sure:
        results["sure_scores"] = sure
    stack.enter_context(
        patched(
            [
                (prompts, "GRADE_LANGUAGE", args.grade_language),
                (grading, "GRADE_LAYOUT", args.grade_layout),
                (grading, "GRADE_WINDOW", args.grade_window),
                (generate, "ANSWER_WINDOW", args.grade_window),
                (prompts, "SYSTEM_PROMPT", args.system_prompt),
            ]
        )
    )
    for eval_set in chosen:
        variant = "" if args.grade_language == "english" else f".grade-{args.grade_language}"
        variant += "" if args.grade_layout == "alone" else f".grade-{args.grade_layout}"
        variant += f".window{args.grade_window}" if args.grade_window else ""
        variant += "" if args.system_prompt == "per_task" else f".system-{args.system_prompt}"
        kept = Path(args.drafts) / f"{eval_set.name}{variant}.json"
        key = drafts_key(
            eval_set.name,
            context,
            args.limit,
            args.split,
            args.grade_language,
            args.grade_layout,
            args.system_prompt,
            args.grade_window,
        )
        data = json.loads(kept.read_text()) if kept.is_file() else {}
        notify = lambda line: print(line, file=sys.stderr)  # noqa: E731
        if data.get("key") != key:
            if args.replay:
                raise SystemExit(f"no drafts for {eval_set.name} with {key} in {kept}")
            rows = record_drafts(
                eval_set,
                context,
                notify,
                args.limit,
                not args.no_claims,
                args.split,
                args.fresh_only,
            )
            kept.parent.mkdir(parents=True, exist_ok=True)
            kept.write_text(json.dumps({"key": key, "rows": rows}, ensure_ascii=False))
            data = {"key": key, "rows": rows}
        rows = data["rows"]
        n_rows = max(1, len(rows))
        questions = {q.id: q for q in select(load_questions(eval_set.path), args.split)}
        replayed = variants((*BARS, *args.bar))
        if not any("claims" in r for r in rows):  # recorded with --no-claims
            replayed = {k: v for k, v in replayed.items() if "claim" not in k}
        if args.top_section and not args.replay:
            if record_top_sections(eval_set, context, rows, notify):
                kept.write_text(json.dumps({"key": key, "rows": rows}, ensure_ascii=False))
        if args.prefix and not args.replay:
            if add_prefix_verdicts(eval_set, context, rows, notify):
                kept.write_text(json.dumps({"key": key, "rows": rows}, ensure_ascii=False))
        if args.own_check and not args.replay:
            if add_own_verdicts(eval_set, context, rows, notify):
                kept.write_text(json.dumps({"key": key, "rows": rows}, ensure_ascii=False))
        if not any("own" in r for r in rows):
            replayed = {k: v for k, v in replayed.items() if "own prompt" not in k}
        for style in ("continued", "prefix"):  # drafts kept before the style was asked
            if not any(style in r for r in rows):
                replayed = {k: v for k, v in replayed.items() if style not in k}
        if not any("top_section" in r for r in rows):
            replayed = {k: v for k, v in replayed.items() if not k.startswith("top section")}
        table = {}
        for name, how in replayed.items():
            top = name.startswith("top section")
            table[name] = outcome(rows, questions, how, 0.0 if top else None)
            design = name.removeprefix("top section kept, ")
            if top and design in sure:
                table[
                    f"top section kept where retrieval is sure (score ≥ {sure[design]}), {design}"
                ] = outcome(rows, questions, how, sure[design])
        results["sets"][eval_set.name] = {
            "role": eval_set.role,
            "variants": table,
            "work": {
                "whole": work_per_question(rows, "whole"),
                # The graph's check since 2026-12-06 asks only about drafts without figures.
                "whole, drafts without figures": work_per_question(
                    rows,
                    "whole",
                    lambda r: not generate.settled_by_figures(r["state"]["answer"], r["chunks"]),
                ),
                "whole, as the graph asks it": work_per_question(
                    rows,
                    "whole",
                    lambda r: the_graph_asks_the_model(r, questions[r["id"]].question),
                ),
                "continued": work_per_question(rows, "continued"),
                "prefix": work_per_question(rows, "prefix"),
                "own, drafts without figures": work_per_question(
                    rows,
                    "own",
                    lambda r: not generate.settled_by_figures(r["state"]["answer"], r["chunks"]),
                ),
                "claims": work_per_question(rows, "claims"),
                "answer": {
                    "tokens": round(sum(r.get("answer_tokens", 0) for r in rows) / n_rows, 1)
                },
            },
        }
        print(render(eval_set.name, table))
    results["tuned"] = tuned_effect()
    print("## the project's own reports (where the rules were chosen), lookups only")
    print("| rule | right drafts it keeps | wrong drafts it catches |\n|---|---|---|")
    for rule, counts in results["tuned"].items():
        print(f"| {rule} | {counts['kept_right']} | {counts['caught_wrong']} |")
    if args.record:
        Path(args.record).write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")


def tuned_effect() -> dict[str, dict[str, int]]:
    """Per rule, on the project's own reports: drafts whose lookup verdict it changes.

    Every ``bench/results/answers*.json`` (both halves of ``tests/answer_eval_set.json``,
    every round the rules were chosen on), each distinct draft of either design once,
    replayed by the lookups alone.

    ``kept_right``: drafts with every fact that the lookups withdraw without the rule (the
    rule keeps them); ``caught_wrong``: wrong drafts they withdraw only with the rule.
    """
    from bench.figure_lookup import NOT_STATED, sections

    by_heading = sections()
    drafts = {}
    for report in sorted((ROOT / "bench" / "results").glob("answers*.json")):
        designs = json.loads(report.read_text())["designs"].values()
        for entry in (e for design in designs for e in design.get("questions", [])):
            draft = entry["answer"].split(NOT_STATED)[0]
            drafted = entry["no_answer_reason"] in (None, "unsupported")
            if drafted and not declines(draft) and (entry["question"], draft) not in drafts:
                kept = [
                    by_heading[g["source"], g["heading"]] for g in entry["grades"] if g["relevant"]
                ]
                right = bool(entry["answerable"] and entry["facts_held"])
                drafts[entry["question"], draft] = (kept, right)
    effect = {}
    for name, patches in rules().items():
        counts = {"drafts": len(drafts), "kept_right": 0, "caught_wrong": 0}
        for (question, draft), (kept, right) in drafts.items():
            with_rule = bool(generate.lookup(question, draft, kept))
            with patched(patches):
                without_rule = bool(generate.lookup(question, draft, kept))
            if right and without_rule and not with_rule:
                counts["kept_right"] += 1
            if not right and with_rule and not without_rule:
                counts["caught_wrong"] += 1
        effect[name] = counts
    return effect


def render(name: str, table: dict[str, dict[str, int]]) -> str:
    """One set's variants: counts and their difference from the check before 2026-12-06."""
    base = table["lookups + the model's check"]
    lines = [
        f"## {name}",
        "| variant | right | abstained | Δ right | Δ abstained |",
        "|---|---|---|---|---|",
    ]
    for variant, got in table.items():
        lines.append(
            f"| {variant} | {got['right']}/{got['answerable']} | {got['abstained']}/{got['of']} "
            f"| {got['right'] - base['right']:+d} | {got['abstained'] - base['abstained']:+d} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
