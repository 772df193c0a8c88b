"""Answer evaluation (``rag eval --answers``): this graph and the classic design, side by side.

Every question of a labelled set (``tests/answer_eval_set.json``) runs through each design
on the same model, index and settings. Per question and design the report keeps the route,
every grade, the answer, whether it holds each expected fact, whether it cites an expected
note, whether it abstained, and the model work: calls, prompt and generated tokens (Ollama's
``prompt_eval_count`` and ``eval_count``, read from each reply by a callback handler passed
in the run's config, per purpose, with the prompt tokens the server reused from its cache
and the seconds each call took) and wall time. Each question also records the stage it was
lost at (``STAGES``): where an answerable question stopped short of an answer that holds
every fact and cites an expected note inline, and where a near miss was stopped, if it was.

The set: ``{"notes": "<folder, relative to the file>", "questions": [{"id", "q", "facts",
"sources", "answerable", "kind", "split", "near"}]}``. A fact is a list of accepted
spellings (or one string); every fact must appear in the answer, case-insensitive. A
question without ``split`` belongs to both halves; without ``answerable`` it is answerable
when it has sources (so a retrieval set, ``tests/retrieval_eval.json``, runs too, scored on
citations and abstention only).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult

from app.evaluation.answer_options import DESIGNS, STAGES, STOPS, AnswerOptions
from app.evaluation.dates import Day, as_date, dates_in, same_day
from graph.context import Context
from graph.errors import ConfigError, RagError, find_cause
from graph.index.embedding import relevance_floor
from graph.index.vectorstore import collection_stemmed
from graph.llm import declines, normalise
from graph.models import ModelProvider
from graph.prompts import UNSUPPORTED, UNSUPPORTED_FIGURES, UNSUPPORTED_KIND, UNSUPPORTED_NAMES
from graph.state import cited_numbers
from graph.tracing import retrieval_settings

EXPECTED_ROUTE = "retrieve"


# --- the labelled set ----------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    """One labelled question."""

    id: str
    question: str
    facts: tuple[tuple[str, ...], ...]
    """Each fact as its accepted spellings; the answer must hold every fact."""
    sources: tuple[str, ...]
    """Notes (relative paths) that hold the answer."""
    answerable: bool
    kind: str
    """``single``, ``multi-fact`` or ``near-miss`` (free text in other sets)."""
    split: str
    """``tune`` or ``heldout``; empty: both."""
    near: tuple[str, ...] = ()
    """For a near miss: the notes holding the neighbouring fact."""
    route: str = EXPECTED_ROUTE


def load_questions(path: str | Path) -> list[Question]:
    """The questions of a labelled set."""
    data = json.loads(Path(path).read_text())
    questions = []
    for number, item in enumerate(data["questions"], start=1):
        sources = tuple(item.get("sources", []))
        facts = tuple(
            (fact,) if isinstance(fact, str) else tuple(fact) for fact in item.get("facts", [])
        )
        questions.append(
            Question(
                id=str(item.get("id") or number),
                question=item["q"],
                facts=facts,
                sources=sources,
                answerable=bool(item.get("answerable", bool(sources))),
                kind=item.get("kind", ""),
                split=item.get("split", ""),
                # A list of notes, or one line saying where the neighbouring fact is.
                near=(item["near"],)
                if isinstance(item.get("near"), str)
                else tuple(item.get("near", [])),
                route=item.get("route", EXPECTED_ROUTE),
            )
        )
    return questions


def select(questions: list[Question], split: str, limit: int | None = None) -> list[Question]:
    """The questions of ``split`` (``all``: every one), the first ``limit`` of them if given."""
    chosen = [q for q in questions if split == "all" or q.split in (split, "")]
    return chosen[:limit] if limit is not None else chosen


# --- scoring -------------------------------------------------------------------------------


def fact_found(answer: str, spellings: Iterable[str]) -> bool:
    """Whether any accepted spelling of a fact appears in ``answer`` (case-insensitive).

    A spelling that is a date is also found as the same day in another spelling
    (``app/evaluation/dates.py``: ``14.11.2026`` in "14. November 2026").
    """
    said = normalise(answer)
    written: set[Day] | None = None
    for spelling in spellings:
        wanted = normalise(spelling)
        if not wanted:
            continue
        if wanted in said:
            return True
        date = as_date(wanted)
        if date is not None:
            written = dates_in(said) if written is None else written
            if any(same_day(date, day) for day in written):
                return True
    return False


def cites_expected(cited: Iterable[str], expected: Iterable[str]) -> bool:
    """Whether any cited note is one of the expected notes."""
    return bool(set(cited) & set(expected))


# --- model work ----------------------------------------------------------------------------


@dataclass
class Work:
    """Model calls, their tokens (Ollama's ``prompt_eval_count`` and ``eval_count``), time."""

    calls: int = 0
    prompt_tokens: int = 0
    generated_tokens: int = 0
    unmetered: int = 0
    """Calls whose reply reported no token counts (a failed call, or a server without them)."""
    cached_tokens: int = 0
    """Prompt tokens the server reused from an earlier prompt (``prompt_eval_cached_count``),
    counted in ``prompt_tokens`` too: ``processed`` is what it read anew."""
    seconds: float = 0.0
    """Time from each call's start to its reply's end, summed (grades overlap: more than wall)."""

    @property
    def processed(self) -> int:
        """Prompt tokens the model read anew (not reused from its cache)."""
        return self.prompt_tokens - self.cached_tokens

    def add(self, other: Work) -> None:
        """Add ``other``'s counts to these."""
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.generated_tokens += other.generated_tokens
        self.unmetered += other.unmetered
        self.cached_tokens += other.cached_tokens
        self.seconds += other.seconds


def token_counts(response: LLMResult) -> tuple[int, int, int] | None:
    """(prompt, generated, cached prompt) tokens of one chat reply; ``None`` when not reported.

    langchain-ollama puts Ollama's counts in the message's ``usage_metadata`` (and the raw
    ``prompt_eval_count`` / ``eval_count`` in its ``response_metadata``). The prompt tokens
    reused from the server's cache are LangChain's ``input_token_details.cache_read`` or
    Ollama's own ``prompt_eval_cached_count``; both count inside the prompt tokens.
    """
    for generations in response.generations:
        for generation in generations:
            message = getattr(generation, "message", None)
            usage = getattr(message, "usage_metadata", None) or {}
            raw = {
                **(generation.generation_info or {}),
                **(getattr(message, "response_metadata", None) or {}),
            }
            details = usage.get("input_token_details") or {}
            cached = int(details.get("cache_read") or raw.get("prompt_eval_cached_count") or 0)
            if usage:
                prompt, made = (
                    int(usage.get("input_tokens") or 0),
                    int(usage.get("output_tokens") or 0),
                )
                return prompt, made, cached
            if "prompt_eval_count" in raw or "eval_count" in raw:
                prompt, made = (
                    int(raw.get("prompt_eval_count") or 0),
                    int(raw.get("eval_count") or 0),
                )
                return prompt, made, cached
    return None


def purpose_of(tags: list[str] | None) -> str:
    """The purpose a model call was made for (its ``rag:<purpose>`` tag), else ``other``."""
    for tag in tags or []:
        if tag.startswith("rag:"):
            return tag.removeprefix("rag:")
    return "other"


class ModelWork(BaseCallbackHandler):
    """Counts chat model calls and their tokens per purpose, for one run.

    Passed in the run's ``callbacks``; LangChain hands it to every chat model the run calls
    (grades made in parallel threads too, hence the lock).
    """

    def __init__(self) -> None:
        self.by_purpose: dict[str, Work] = {}
        self._started: dict[UUID, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[Any]],
        *,
        run_id: UUID,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember the call's purpose and start until it ends."""
        with self._lock:
            self._started[run_id] = (purpose_of(tags), time.perf_counter())

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """Count the call and the tokens its reply reports."""
        self._count(run_id, token_counts(response))

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Count a failed call (its tokens are unknown)."""
        self._count(run_id, None)

    def _count(self, run_id: UUID, tokens: tuple[int, int, int] | None) -> None:
        with self._lock:
            started = self._started.pop(run_id, None)
            if started is None:
                return  # not a chat model call
            purpose, since = started
            work = self.by_purpose.setdefault(purpose, Work())
            work.calls += 1
            work.seconds += time.perf_counter() - since
            if tokens is None:
                work.unmetered += 1
            else:
                work.prompt_tokens += tokens[0]
                work.generated_tokens += tokens[1]
                work.cached_tokens += tokens[2]

    def total(self) -> Work:
        """Every purpose together."""
        whole = Work()
        with self._lock:
            for work in self.by_purpose.values():
                whole.add(work)
        return whole


# --- where a question was lost ---------------------------------------------------------------

#: What each stage of ``STAGES`` means in a report's table.
STAGE_LABELS = {
    "error": "the run failed (a timeout, a malformed reply)",
    "route": "routed away from the notes",
    "floor": "no section at or above the relevance floor",
    "grader": 'the grader said "no" to every section',
    "writer": "the writer: a fact missing or wrong, or it declined",
    "citation": "the writer: every fact, but no expected note cited inline",
    "check": "the check withdrew it",
}
#: ``no_answer_reason``s that retrieval gives, before any grade.
_FLOOR = ("below_threshold", "empty_collection", "filter_empty")
#: How each of the check's notices begins, after a blank line below the draft it withdraws.
_NOTICE = "\n\n" + os.path.commonprefix(
    [UNSUPPORTED, UNSUPPORTED_FIGURES, UNSUPPORTED_KIND, UNSUPPORTED_NAMES]
)


def draft_of(answer: str) -> str:
    """The answer as the writer wrote it, before the check's notice (if one follows it)."""
    return answer.split(_NOTICE, 1)[0]


def stage(item: Question, state: dict[str, Any], error: str | None) -> str:
    """Where ``item`` was lost (one of ``STAGES``) or ``right``.

    An answerable question is ``right`` with every fact and an expected note cited inline,
    else lost at the first stage that failed it; a question the notes do not answer is
    stopped at one, or ``answered``.
    """
    reason = state.get("no_answer_reason")
    if error is not None:
        return "error"
    if state.get("route") != item.route:
        return "route"
    if reason in _FLOOR:
        return "floor"
    if reason == "all_irrelevant":
        return "grader"
    draft = draft_of(str(state.get("answer") or ""))
    held = all(fact_found(draft, spellings) for spellings in item.facts)
    if not item.answerable:
        if declines(draft) and not any(fact_found(draft, f) for f in item.facts):
            return "writer"
        return "check" if reason == "unsupported" else "answered"
    if not draft or (declines(draft) and not (item.facts and held)) or not held:
        return "writer"
    listed = state.get("sources") or []
    inline = [listed[n - 1]["path"] for n in cited_numbers(draft, listed)]
    if not cites_expected(inline, item.sources):
        return "citation"
    return "check" if reason == "unsupported" else "right"


# --- running -------------------------------------------------------------------------------


def facts_in(item: Question, answer: str, no_answer: bool) -> list[dict[str, Any]]:
    """Each of ``item``'s facts and whether ``answer`` holds it.

    A no-answer message names the closest notes and their scores: never count it as facts.
    """
    return [
        {"fact": list(spellings), "found": not no_answer and fact_found(answer, spellings)}
        for spellings in item.facts
    ]


def score(
    item: Question, state: dict[str, Any], work: ModelWork, wall: float, error: str | None
) -> dict[str, Any]:
    """One question's result in one design, from the run's final state."""
    answer = str(state.get("answer") or "")
    reached_no_answer = bool(state.get("no_answer_reason"))
    facts = facts_in(item, answer, reached_no_answer)
    listed = state.get("sources") or []
    cited = [source["path"] for source in listed]
    # The sources the answer itself names with [n]: what a reader can check a claim against.
    inline = [listed[n - 1]["path"] for n in cited_numbers(answer, listed)]
    # Declining in words counts as abstaining unless the answer still gives an expected fact
    # ("the notes don't say when, but every 12 hours" answered).
    declined = (
        error is None
        and not reached_no_answer
        and declines(answer)
        and not any(f["found"] for f in facts)
    )
    abstained = error is None and (reached_no_answer or declined)
    facts_held = bool(facts) and all(f["found"] for f in facts)
    if item.answerable:
        correct = error is None and not abstained and (facts_held if facts else True)
        if not facts:  # a set without facts: scored on answering and citing only
            correct = correct and cites_expected(cited, item.sources)
    else:
        correct = abstained
    total = work.total()
    return {
        "id": item.id,
        "question": item.question,
        "kind": item.kind,
        "answerable": item.answerable,
        "expected_sources": list(item.sources),
        "route": state.get("route"),
        "route_as_expected": state.get("route") == item.route,
        "retrieved": [g["source"] for g in state.get("grades") or []],
        "grades": [
            {
                "source": g["source"],
                "heading": g["heading"],
                "relevant": g["relevant"],
                "fallback": g["fallback"],
                "expected": g["source"] in item.sources,
            }
            for g in state.get("grades") or []
        ],
        "answer": answer,
        "sources": cited,
        "cited_inline": inline,
        "no_answer_reason": state.get("no_answer_reason"),
        # The answer check's verdict and how sure it was (the graph only), as its step says.
        "check": next(
            (
                step.removeprefix("generate: ")
                for step in state.get("steps") or []
                if step.startswith(("generate: checked", "generate: not checked"))
            ),
            None,
        ),
        "abstained": abstained,
        "declined_in_text": declined,
        "facts": facts,
        "facts_held": facts_held if item.answerable and facts else None,
        "cites_expected": cites_expected(cited, item.sources) if item.answerable else None,
        "cites_expected_inline": (
            cites_expected(inline, item.sources) if item.answerable else None
        ),
        "facts_cited_inline": (
            facts_held and cites_expected(inline, item.sources)
            if item.answerable and facts
            else None
        ),
        "correct": correct,
        "stage": stage(item, state, error),
        "error": error,
        "work": {
            **asdict(total),
            "wall_s": round(wall, 3),
            "by_purpose": {p: asdict(w) for p, w in sorted(work.by_purpose.items())},
        },
    }


def graphs(models: ModelProvider, chosen: Iterable[str]) -> dict[str, Any]:
    """The compiled graph of each chosen design."""
    # Imported here: `rag`'s other commands need neither graph.
    from app.evaluation.classic_rag import build_classic_graph
    from graph.builder import build_graph

    builders: dict[str, Callable[[], Any]] = {
        "graph": lambda: build_graph(models=models),
        "classic": lambda: build_classic_graph(models),
    }
    return {name: builders[name]() for name in chosen}


def run_design(
    name: str,
    app: Any,
    questions: list[Question],
    context: Context,
    notify: Callable[[str], None] = lambda line: None,
    progress: Callable[[int, int, str], None] = lambda done, total, note: None,
) -> list[dict[str, Any]]:
    """Every question through one design, one after the other.

    ``notify`` gets a line per question (what it scored: tune sets only), ``progress`` the
    questions done, their number and the design's name after each. A question that fails
    with a ``RagError`` (a timeout, a malformed reply) is recorded and the run goes on;
    until one question has succeeded an error is raised instead (the model server is most
    likely unusable, and the report would be nothing but errors).
    """
    rows: list[dict[str, Any]] = []
    for number, item in enumerate(questions, start=1):
        work = ModelWork()
        config: Any = {"callbacks": [work], "run_name": f"eval_{name}", "tags": ["rag-eval"]}
        started = time.perf_counter()
        error = None
        try:
            # One question right after another: a warm-up (graph/warmup.py) would run beside
            # the next question, its call uncounted.
            unwarmed = replace(context, read_ahead=False)
            state = app.invoke({"question": item.question}, config, context=unwarmed)
        except Exception as exc:
            cause = find_cause(exc, RagError)
            if cause is None or not any(row["error"] is None for row in rows):
                raise
            state, error = {}, str(cause)
        row = score(item, state, work, time.perf_counter() - started, error)
        rows.append(row)
        spent = row["work"]
        verdict = "error" if error else "correct" if row["correct"] else "wrong"
        notify(
            f"[{name} {number}/{len(questions)}] {item.id}: {verdict}, {spent['calls']} calls, "
            f"{spent['prompt_tokens']}+{spent['generated_tokens']} tokens, {spent['wall_s']:.1f} s"
        )
        progress(number, len(questions), name)
    return rows


def _count(rows: list[dict[str, Any]], test: Callable[[dict[str, Any]], bool]) -> dict[str, int]:
    return {"n": sum(1 for row in rows if test(row)), "of": len(rows)}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One design's figures over the questions it ran."""
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    with_facts = [r for r in answerable if r["facts"]]
    multi = [r for r in with_facts if len(r["facts"]) > 1]
    facts = [f for r in with_facts for f in r["facts"]]
    grades = [g for r in rows for g in r["grades"]]
    expected = [g for g in grades if g["expected"]]
    other = [g for g in grades if not g["expected"]]
    work = Work()
    by_purpose: dict[str, Work] = {}
    for row in rows:
        work.add(Work(**{k: row["work"][k] for k in asdict(work)}))
        for purpose, counts in row["work"]["by_purpose"].items():
            by_purpose.setdefault(purpose, Work()).add(Work(**counts))
    wall = sum(row["work"]["wall_s"] for row in rows)
    return {
        "questions": len(rows),
        "lost": {name: sum(r["stage"] == name for r in answerable) for name in STAGES},
        "stopped": {name: sum(r["stage"] == name for r in unanswerable) for name in STOPS},
        "route_as_expected": _count(rows, lambda r: r["route_as_expected"]),
        "every_fact": _count(with_facts, lambda r: r["facts_held"]),
        "facts_found": {"n": sum(f["found"] for f in facts), "of": len(facts)},
        "multi_fact_every_fact": _count(multi, lambda r: r["facts_held"]),
        "cites_expected": _count(answerable, lambda r: r["cites_expected"]),
        "cites_expected_inline": _count(answerable, lambda r: r["cites_expected_inline"]),
        "facts_cited_inline": _count(with_facts, lambda r: r["facts_cited_inline"]),
        "answered_when_answerable": _count(answerable, lambda r: not r["abstained"]),
        "abstained_when_unanswerable": _count(unanswerable, lambda r: r["abstained"]),
        "correct": _count(rows, lambda r: r["correct"]),
        "expected_chunks_kept": {"n": sum(g["relevant"] for g in expected), "of": len(expected)},
        "other_chunks_dropped": {"n": sum(not g["relevant"] for g in other), "of": len(other)},
        "unreadable_grades": sum(g["fallback"] for g in grades),
        "errors": sum(1 for r in rows if r["error"]),
        "work": {**asdict(work), "wall_s": round(wall, 3)},
        "by_purpose": {p: asdict(w) for p, w in sorted(by_purpose.items())},
    }


def evaluate(
    questions: list[Question],
    context: Context,
    models: ModelProvider,
    designs: Iterable[str] = DESIGNS,
    notify: Callable[[str], None] = lambda line: None,
    progress: Callable[[int, int, str], None] = lambda done, total, note: None,
) -> dict[str, Any]:
    """Run every design over ``questions``; the report (settings, per design summary and rows)."""
    report: dict[str, Any] = {
        "chat_model": context.chat_model,
        "embedding_model": context.embedding_model,
        "k": context.k,
        **retrieval_settings(context),
        "stemmed": collection_stemmed(context),
        "score_threshold": relevance_floor(context),
        "num_ctx": context.num_ctx,
        "grade_concurrency": context.grade_concurrency,
        "designs": {},
    }
    for name, app in graphs(models, designs).items():
        rows = run_design(name, app, questions, context, notify, progress)
        report["designs"][name] = {"summary": summarise(rows), "questions": rows}
    return report


# --- the printed table ---------------------------------------------------------------------

_MEASURES = (
    ("route as expected", "route_as_expected"),
    ("every fact in the answer (answerable)", "every_fact"),
    ("facts found, of all expected facts", "facts_found"),
    ("multi-fact questions with every fact", "multi_fact_every_fact"),
    ("cites an expected note (answerable)", "cites_expected"),
    ("cites an expected note inline, [n] (answerable)", "cites_expected_inline"),
    ("every fact and an expected note cited inline", "facts_cited_inline"),
    ("answered when answerable", "answered_when_answerable"),
    ("abstained when unanswerable", "abstained_when_unanswerable"),
    ("correct", "correct"),
    ("grades: expected-note chunks kept", "expected_chunks_kept"),
    ("grades: other chunks dropped", "other_chunks_dropped"),
)


def _share(count: dict[str, int]) -> str:
    if not count["of"]:
        return "-"
    return f"{count['n']}/{count['of']} ({count['n'] / count['of']:.2f})"


def _mean(total: float, questions: int, digits: int = 0) -> str:
    mean = total / questions if questions else 0.0
    return f"{total:,.{digits}f} ({mean:,.{digits}f}/q)"


def render(report: dict[str, Any]) -> str:
    """The side-by-side table of a report, then the model work per purpose."""
    designs = report["designs"]
    names = list(designs)
    first = next(iter(designs.values()))["questions"] if designs else []
    answerable = sum(1 for r in first if r["answerable"])
    lines = [
        f"{len(first)} questions ({answerable} answerable, {len(first) - answerable} "
        f"unanswerable), split {report.get('split', 'all')}, chat model {report['chat_model']}, "
        f"embedding model {report['embedding_model']}, k={report['k']}",
        "| measure | " + " | ".join(names) + " |",
        "| --- |" + " --- |" * len(names),
    ]
    summaries = [designs[n]["summary"] for n in names]
    for label, key in _MEASURES:
        lines.append(f"| {label} | " + " | ".join(_share(s[key]) for s in summaries) + " |")
    lines.append(
        "| unreadable grades | " + " | ".join(str(s["unreadable_grades"]) for s in summaries) + " |"
    )
    lines.append("| errors | " + " | ".join(str(s["errors"]) for s in summaries) + " |")
    if any(s["work"]["unmetered"] for s in summaries):
        cells = [str(s["work"]["unmetered"]) for s in summaries]
        lines.append("| calls without token counts | " + " | ".join(cells) + " |")
    for label, key, digits in (
        ("model calls", "calls", 0),
        ("prompt tokens", "prompt_tokens", 0),
        ("generated tokens", "generated_tokens", 0),
        ("wall time, s", "wall_s", 1),
    ):
        cells = [_mean(s["work"][key], s["questions"], digits) for s in summaries]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += _stage_table(names, summaries)
    purposes = sorted({p for s in summaries for p in s["by_purpose"]})
    if purposes:
        lines += [
            "",
            "Model work per purpose (calls / prompt tokens, of them read anew / generated "
            "tokens / seconds):",
            "| purpose | " + " | ".join(names) + " |",
            "| --- |" + " --- |" * len(names),
        ]
        for purpose in purposes:
            cells = []
            for s in summaries:
                w = s["by_purpose"].get(purpose)
                cells.append(_work_cell(Work(**w)) if w else "-")
            lines.append(f"| {purpose} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _work_cell(work: Work) -> str:
    return (
        f"{work.calls} / {work.prompt_tokens:,}, {work.processed:,} / "
        f"{work.generated_tokens:,} / {work.seconds:,.1f}"
    )


def _stage_table(names: list[str], summaries: list[dict[str, Any]]) -> list[str]:
    """Where answerable questions were lost, and where the others were stopped, per design."""
    lines = [
        "",
        "Where each question was lost (answerable) or stopped (not answerable by the notes):",
        "| stage | "
        + " | ".join(f"{n}: answerable lost | {n}: others stopped" for n in names)
        + " |",
        "| --- |" + " --- | --- |" * len(names),
    ]
    for name in STAGES:
        if not any(s["lost"][name] or s["stopped"].get(name) for s in summaries):
            continue
        cells = [f"{s['lost'][name]} | {s['stopped'].get(name, '-')}" for s in summaries]
        lines.append(f"| {STAGE_LABELS[name]} | " + " | ".join(cells) + " |")
    cells = [f"{sum(s['lost'].values())} | {s['stopped']['answered']} answered" for s in summaries]
    lines.append("| in all | " + " | ".join(cells) + " |")
    return lines


# --- one set, start to end -----------------------------------------------------------------


def run_answers(
    set_path: str,
    options: AnswerOptions,
    context: Context,
    models: ModelProvider,
    notify: Callable[[str], None] = lambda line: None,
    progress: Callable[[int, int, str], None] = lambda done, total, note: None,
) -> dict[str, Any]:
    """A set's answers once its notes are loaded: the report (also written to ``report``)."""
    questions = select(load_questions(set_path), options.split, options.limit)
    if not questions:
        raise ConfigError(f"no question of {set_path} is in the split {options.split!r}")
    report = evaluate(questions, context, models, options.designs, notify, progress)
    report = {"set": set_path, "split": options.split, "limit": options.limit, **report}
    if options.report is not None:
        options.report.parent.mkdir(parents=True, exist_ok=True)
        options.report.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    return report
