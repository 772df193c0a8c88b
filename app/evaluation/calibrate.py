"""Fit the answer check's bar to a user's own notes and chat model (``rag calibrate``).

The answer check withdraws a draft when the model's "yes" (the notes state it) is less sure
than ``check_confidence``. How sure a model's right "yes" is differs by model and by notes:
the default was chosen on one model and one set of notes. This measures it on yours:

1. A sample of the collection's sections, drawn with a seed (``app.evaluation.sections``).
2. For each section the chat model writes, in the section's language, a question the section
   answers with a short answer copied from it. A pair is kept only when the answer is written
   in the section word for word (a rule, not the model, decides what is right).
3. The question goes through the graph with the check off: a draft that holds the answer is
   one the check should keep.
4. The same question is then a near miss by construction: searched again with the section's
   note and every chunk that writes the answer left out, graded and drafted from what is left
   (the graph's own nodes). The notes left do not write the answer, so a draft from them that
   does not decline is one the check should withdraw. Nothing else found, or every chunk
   graded out, gives no draft to check; a draft that writes the answer anyway is left out.
   One that gives it in other words (another note saying it differently) still counts as a
   near miss: the near-miss drafts may hold a few right ones, so a suggested bar errs high.
5. Each draft that does not decline is checked once by the model, as the graph checks it, and
   the check is replayed at every bar without the model.

The bar suggested is the middle of the lowest run of bars that do best on both together (the
share of right drafts kept plus the share of near-miss drafts withdrawn), and only when that
beats both extremes (keeping every draft, withdrawing every one): where the model is as sure
of its near-miss drafts as of its right ones, no bar helps, and none is suggested. Nothing is
written: the suggestion is a line to put in your environment. Near misses made this way
are questions the user's notes almost answer, asked as a reader would ask them, rather than
questions a model invents to be unanswerable: those its check confirms too readily.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from app.evaluation.sections import Pair, Section, with_models, write_pair

if TYPE_CHECKING:  # the graph's libraries load only when a calibration runs
    from graph.context import Context
    from graph.models import ModelProvider

#: The near-miss search reads this many times k chunks, so that up to k are left once the
#: section's note and the chunks that write the answer are left out.
HIDDEN_POOL = 3
#: Fewer right drafts or near-miss drafts than this: too few to suggest a bar from.
MIN_PER_SIDE = 5
#: The bars shown in the table (the suggested one and the current one are added).
SHOWN_BARS = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
#: Bars tried: every hundredth from 0 to 1.
BARS = tuple(round(b / 100, 2) for b in range(0, 101))


@dataclass(frozen=True)
class Draft:
    """One question's draft and what the check found (``stated``, ``sure``: the model's)."""

    kind: str  # "answered" or "near miss"
    right: bool  # an answered question's draft holds its answer
    declined: bool  # no draft, or one that says the notes don't say
    looked_up: bool  # a lookup of the check withdraws it whatever the bar
    stated: bool | None = None
    sure: float | None = None

    def withdrawn(self, bar: float) -> bool:
        """Whether the check withdraws this draft at ``bar``, as ``check_answer`` does."""
        from nodes.generate import unsure

        if self.declined:
            return False
        return self.looked_up or self.stated is False or unsure(self.stated, self.sure, bar)


@dataclass(frozen=True)
class Fit:
    """The drafts the bar decides on, and the bar suggested for them (if any)."""

    right: list[Draft]  # drafts of answered questions that hold the answer: to keep
    wrong: list[Draft]  # drafts for near misses that do not decline: to withdraw
    suggested: float | None = None
    equally_good: tuple[float, float] | None = None
    why_none: str = ""  # why no bar is suggested

    def kept(self, bar: float) -> int:
        """Right drafts the check keeps at ``bar``."""
        return sum(not d.withdrawn(bar) for d in self.right)

    def withdrawn(self, bar: float) -> int:
        """Near-miss drafts the check withdraws at ``bar``."""
        return sum(d.withdrawn(bar) for d in self.wrong)


def answered_draft(app: Any, models: ModelProvider, context: Context, pair: Pair) -> Draft:
    """``pair``'s question through the graph with the check off, and the check's verdict."""
    from graph.llm import declines, normalise

    state = app.invoke(
        {"question": pair.question},
        context=replace(context, check_answers=False, read_ahead=False),
    )
    text = str(state.get("answer") or "")
    if not text or state.get("no_answer_reason") or declines(text):
        return Draft("answered", right=False, declined=True, looked_up=False)
    right = normalise(pair.answer) in normalise(text)
    cited = {(s["path"], s["heading"]) for s in state.get("sources") or []}
    chunks = [c for c in state.get("documents") or [] if (c["source"], c["heading"]) in cited]
    return checked("answered", right, pair.question, text, chunks, models, context)


def near_miss_draft(models: ModelProvider, context: Context, pair: Pair) -> Draft | None:
    """``pair``'s question drafted from the notes without its answer, and the check's verdict.

    The search leaves out the pair's note and every chunk that writes the answer; the rest
    is graded and drafted from by the graph's own nodes. ``None``: nothing else was found, or
    the draft holds the answer anyway: neither is a near miss to withdraw.
    """
    return with_models(models, lambda: _near_miss_draft(models, context, pair))


def _near_miss_draft(models: ModelProvider, context: Context, pair: Pair) -> Draft | None:
    from langgraph.runtime import Runtime

    from graph.index.retrieval import search_notes
    from graph.llm import declines, normalise
    from graph.state import State
    from nodes.generate import generate
    from nodes.grade_documents import grade_documents

    answer = normalise(pair.answer)
    # A wider search, so that leaving chunks out still leaves up to k to choose from.
    found = search_notes(
        context, models.embeddings(context), pair.question, k=context.k * HIDDEN_POOL
    )
    others = [
        c
        for c in found.relevant
        if c["source"] != pair.source and answer not in normalise(c["content"])
    ][: context.k]
    if not others:
        return None
    runtime = Runtime(context=context)
    graded = grade_documents(State(question=pair.question, documents=others), runtime)
    if not graded["documents"]:
        return Draft("near miss", right=False, declined=True, looked_up=False)
    unchecked = Runtime(context=replace(context, check_answers=False, read_ahead=False))
    written = generate(State(question=pair.question, documents=graded["documents"]), unchecked)
    text = str(written.get("answer") or "")
    if not text or declines(text):
        return Draft("near miss", right=False, declined=True, looked_up=False)
    if answer in normalise(text):
        return None
    cited = {(s["path"], s["heading"]) for s in written.get("sources") or []}
    chunks = [c for c in graded["documents"] if (c["source"], c["heading"]) in cited]
    return checked("near miss", False, pair.question, text, chunks, models, context)


def checked(
    kind: str,
    right: bool,
    question: str,
    text: str,
    chunks: list[Any],
    models: ModelProvider,
    context: Context,
) -> Draft:
    """A draft that did not decline, with what the answer check finds of it."""
    from nodes.generate import ask_check, lookup

    if lookup(question, text, chunks):
        return Draft(kind, right, declined=False, looked_up=True)
    verdict = with_models(models, lambda: ask_check(chunks, question, text, context))
    if isinstance(verdict, str):  # not checked: it would not fit num_ctx
        return Draft(kind, right, declined=False, looked_up=False)
    return Draft(kind, right, declined=False, looked_up=False, stated=verdict[0], sure=verdict[1])


def fit(drafts: Iterable[Draft]) -> Fit:
    """The drafts to keep and to withdraw, and the bar that does best on both.

    A bar's score is the share of right drafts it keeps plus the share of near-miss drafts it
    withdraws; keeping everything (bar 0 with every "yes" kept) or withdrawing everything
    scores 1. The suggestion is the middle of the lowest run of consecutive bars (hundredths)
    with the highest score, only when that score beats 1 and with ``MIN_PER_SIDE`` drafts of
    each kind.
    """
    drafts = list(drafts)
    result = Fit(
        right=[d for d in drafts if d.kind == "answered" and d.right],
        wrong=[d for d in drafts if d.kind == "near miss" and not d.declined],
    )
    if len(result.right) < MIN_PER_SIDE or len(result.wrong) < MIN_PER_SIDE:
        return replace(
            result,
            why_none=f"too few drafts to suggest a bar (at least {MIN_PER_SIDE} that hold the "
            f"answer and {MIN_PER_SIDE} for near misses): run again with more --sections",
        )
    scores = [
        result.kept(bar) / len(result.right) + result.withdrawn(bar) / len(result.wrong)
        for bar in BARS
    ]
    best = max(scores)
    if best <= 1.0:
        return replace(
            result,
            why_none="no bar does better than keeping every draft or withdrawing every one: "
            "the model is as sure of its near-miss drafts as of its right ones here",
        )
    first = scores.index(best)
    last = first
    while last + 1 < len(BARS) and scores[last + 1] == best:
        last += 1
    low, high = BARS[first], BARS[last]
    return replace(result, suggested=round((low + high) / 2, 2), equally_good=(low, high))


@dataclass(frozen=True)
class Calibration:
    """One calibration: the sections it wrote from, what it could not use, drafts and fit."""

    sections: int
    unusable: int  # sections that gave no usable question and answer
    no_near_miss: int  # questions with no near miss (nothing else found, or the answer found)
    drafts: list[Draft]
    result: Fit


def calibrate(
    context: Context,
    models: ModelProvider,
    sections: list[Section],
    progress: Callable[[int, int, str], None] = lambda done, total, note: None,
) -> Calibration:
    """Write a question per section, draft it and its near miss, check each draft once.

    ``progress`` gets the sections done, their number and the drafts so far after each.
    """
    from graph.builder import build_graph

    app = build_graph(models=models)
    drafts: list[Draft] = []
    unusable = no_near_miss = 0
    for number, section in enumerate(sections, start=1):
        pair = with_models(models, lambda: write_pair(context, section))
        if pair is None:
            unusable += 1
        else:
            drafts.append(answered_draft(app, models, context, pair))
            near_miss = near_miss_draft(models, context, pair)
            if near_miss is None:
                no_near_miss += 1
            else:
                drafts.append(near_miss)
        progress(number, len(sections), f"{len(drafts)} drafts")
    return Calibration(len(sections), unusable, no_near_miss, drafts, fit(drafts))


def as_json(context: Context, run: Calibration) -> dict[str, Any]:
    """The calibration's figures, every bar and every draft (``rag calibrate --json``)."""
    result = run.result
    return {
        "chat_model": context.chat_model,
        "collection": context.collection_name,
        "sections": run.sections,
        "unusable_sections": run.unusable,
        "no_near_miss": run.no_near_miss,
        "check_confidence": context.check_confidence,
        "suggested": result.suggested,
        "equally_good": result.equally_good,
        "why_none": result.why_none or None,
        "right_drafts": len(result.right),
        "near_miss_drafts": len(result.wrong),
        "bars": [
            {
                "bar": bar,
                "right_kept": result.kept(bar),
                "near_misses_withdrawn": result.withdrawn(bar),
            }
            for bar in BARS
        ],
        "drafts": [asdict(d) for d in run.drafts],
    }


def render(context: Context, run: Calibration) -> str:
    """The calibration as ``rag calibrate`` prints it: the drafts, a table of bars, a line."""
    result = run.result
    answered = [d for d in run.drafts if d.kind == "answered"]
    near = [d for d in run.drafts if d.kind == "near miss"]
    right, wrong = len(result.right), len(result.wrong)
    lines = [
        f"Questions written by {context.chat_model} from {run.sections} sections of "
        f"'{context.collection_name}' ({run.unusable} gave no usable pair):",
        f"  answered by their section: {len(answered)}; {right} drafts hold the answer, "
        f"{sum(d.declined for d in answered)} declined, the rest drafted something else",
        f"  near misses (the same questions, their notes left out): {len(near)}; "
        f"{len(near) - wrong} declined, {wrong} drafted an answer (to be withdrawn); "
        f"{run.no_near_miss} without one (nothing else found, or the answer found elsewhere)",
        "",
        "  bar    right drafts kept    near-miss drafts withdrawn",
    ]
    marks = {context.check_confidence: "now"}
    if result.suggested is not None:
        marks[result.suggested] = "suggested" if result.suggested not in marks else "now, suggested"
    for bar in sorted({*SHOWN_BARS, *marks}):
        mark = f"   ({marks[bar]})" if bar in marks else ""
        lines.append(
            f"  {bar:.2f}   {result.kept(bar):>3}/{right:<3}              "
            f"{result.withdrawn(bar):>3}/{wrong:<3}{mark}"
        )
    lines.append("")
    if result.suggested is None or result.equally_good is None:
        lines.append(f"No bar suggested: {result.why_none}.")
    else:
        low, high = result.equally_good
        lines.append(
            f"Suggested: RAG_CHECK_CONFIDENCE={result.suggested} (every bar from {low:.2f} to "
            f"{high:.2f} does as well on these {right + wrong} drafts; now "
            f"{context.check_confidence})."
        )
    return "\n".join(lines)
