"""``rag calibrate``: fit the answer check's bar to your own notes and chat model.

The answer check withdraws a draft when the model's "yes" (the notes state it) is less sure
than ``check_confidence``. How sure a model's right "yes" is differs by model and by notes:
the default was chosen on one model and one set of notes. This measures it on yours:

1. A sample of the collection's sections, each at least ``MIN_SECTION_CHARS`` long, drawn with
   a seed (one chunk read per draw: the cost does not grow with the collection).
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

import argparse
import json
import random
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from app.cli import output
from app.cli.output import say, warn
from graph.errors import ConfigError

if TYPE_CHECKING:  # the graph's libraries load only when the command runs
    from graph.context import Context
    from graph.models import ModelProvider

T = TypeVar("T")

#: Sections shorter than this hold too little to ask about and to miss near.
MIN_SECTION_CHARS = 200
#: Draws per wanted section before giving up on finding long enough ones.
DRAWS_PER_SECTION = 4
#: The near-miss search reads this many times k chunks, so that up to k are left once the
#: section's note and the chunks that write the answer are left out.
HIDDEN_POOL = 3
#: The longest answer kept: a short fact, not a paragraph copied back.
MAX_ANSWER_CHARS = 80
#: Fewer right drafts or near-miss drafts than this: too few to suggest a bar from.
MIN_PER_SIDE = 5
#: The bars shown in the table (the suggested one and the current one are added).
SHOWN_BARS = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
#: Bars tried: every hundredth from 0 to 1.
BARS = tuple(round(b / 100, 2) for b in range(0, 101))


@dataclass(frozen=True)
class Section:
    """A chunk of the collection: its note, its heading and its text."""

    source: str
    heading: str
    content: str


@dataclass(frozen=True)
class Pair:
    """What the model wrote for one section: a question it answers, and the answer."""

    source: str
    question: str
    answer: str


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


def add_calibrate_parser(commands: Any) -> None:
    """``rag calibrate`` and its own flags (the settings' flags are added by the caller)."""
    calibrate = commands.add_parser(
        "calibrate",
        help="fit the answer check's confidence bar to your notes and chat model (questions "
        "written from your notes by the model; nothing is changed)",
    )
    calibrate.add_argument(
        "--sections",
        type=int,
        default=20,
        help="sections to write a question from (each costs about two `rag ask` runs)",
    )
    calibrate.add_argument("--seed", type=int, default=0, help="which sections are drawn")
    calibrate.add_argument("--json", action="store_true", help="print the figures as JSON")


def sample_sections(collection: Any, wanted: int, seed: int) -> list[Section]:
    """Up to ``wanted`` distinct sections of at least ``MIN_SECTION_CHARS``, drawn by ``seed``."""
    total = collection.count()
    draws = random.Random(seed).sample(range(total), min(total, wanted * DRAWS_PER_SECTION))
    found: dict[tuple[str, str], Section] = {}
    for offset in draws:
        page = collection.get(include=["documents", "metadatas"], limit=1, offset=offset)
        if not page["ids"]:
            continue
        content, meta = page["documents"][0] or "", page["metadatas"][0] or {}
        key = (str(meta.get("source", "")), str(meta.get("heading", "")))
        if len(content.strip()) >= MIN_SECTION_CHARS and key not in found:
            found[key] = Section(key[0], key[1], content)
            if len(found) == wanted:
                break
    return list(found.values())


_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def read_pair(section: Section, reply: str) -> Pair | None:
    """The model's questions for ``section`` when usable: JSON, and the answer in the section."""
    from graph.llm import normalise

    match = _OBJECT.search(reply)
    try:
        written = json.loads(match.group(0)) if match else None
    except json.JSONDecodeError:
        return None
    if not isinstance(written, dict):
        return None
    question, answer = (str(written.get(key) or "").strip() for key in ("question", "answer"))
    if not (question and answer) or len(answer) > MAX_ANSWER_CHARS:
        return None
    if normalise(answer) not in normalise(section.content):
        return None
    return Pair(section.source, question, answer)


def with_models(models: ModelProvider, call: Callable[[], T]) -> T:
    """``call()`` with ``models`` as the run's provider, as the graph's own calls have it."""
    from langchain_core.runnables import RunnableLambda

    from graph.models import MODELS_KEY

    def run(_: object) -> T:
        return call()

    return RunnableLambda(run).with_config(configurable={MODELS_KEY: models}).invoke(None)


def write_pair(context: Context, section: Section) -> Pair | None:
    """The chat model's question and answer for ``section`` (``None``: none usable)."""
    from graph.llm import ask, with_system
    from graph.prompts import QUESTIONS_SYSTEM, QUESTIONS_USER, neutralize_control

    prompt = with_system(
        QUESTIONS_SYSTEM,
        QUESTIONS_USER.format(
            heading=neutralize_control(section.heading),
            content=neutralize_control(section.content),
        ),
    )
    return read_pair(section, ask(context, "generate", prompt))


def answered_draft(app: Any, models: ModelProvider, context: Context, pair: Pair) -> Draft:
    """``pair``'s question through the graph with the check off, and the check's verdict."""
    from graph.llm import declines, normalise

    state = app.invoke({"question": pair.question}, context=replace(context, check_answers=False))
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
    unchecked = Runtime(context=replace(context, check_answers=False))
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


def cmd_calibrate(args: argparse.Namespace, models: ModelProvider) -> int:
    """``rag calibrate``: write questions, draft, check once each, replay every bar."""
    from app.cli.main import make_context, require_collection
    from graph.builder import build_graph
    from graph.index.vectorstore import get_collection, reading, with_embedding_model

    if not 1 <= args.sections <= 500:
        raise ConfigError(f"--sections must be between 1 and 500, got {args.sections}")
    context = with_embedding_model(make_context(args))
    require_collection(context)
    collection = get_collection(context)
    sections = reading(context, lambda: sample_sections(collection, args.sections, args.seed))
    if not sections:
        raise ConfigError(
            f"'{context.collection_name}' has no section of {MIN_SECTION_CHARS} characters or "
            "more to write questions from"
        )
    app = build_graph(models=models)
    drafts: list[Draft] = []
    unusable = no_near_miss = 0
    started = time.perf_counter()
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
        warn(
            f"calibrate: section {number}/{len(sections)} ({time.perf_counter() - started:.0f} s)",
            flush=True,
        )
    result = fit(drafts)
    if args.json:
        output.say_json(_as_json(context, sections, (unusable, no_near_miss), drafts, result))
    else:
        say(_report(context, sections, (unusable, no_near_miss), drafts, result))
    return 0


def _as_json(
    context: Context,
    sections: list[Section],
    unused: tuple[int, int],
    drafts: list[Draft],
    result: Fit,
) -> dict[str, Any]:
    unusable, no_near_miss = unused
    return {
        "chat_model": context.chat_model,
        "collection": context.collection_name,
        "sections": len(sections),
        "unusable_sections": unusable,
        "no_near_miss": no_near_miss,
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
        "drafts": [asdict(d) for d in drafts],
    }


def _report(
    context: Context,
    sections: list[Section],
    unused: tuple[int, int],
    drafts: list[Draft],
    result: Fit,
) -> str:
    unusable, no_near_miss = unused
    answered = [d for d in drafts if d.kind == "answered"]
    near = [d for d in drafts if d.kind == "near miss"]
    right, wrong = len(result.right), len(result.wrong)
    lines = [
        f"Questions written by {context.chat_model} from {len(sections)} sections of "
        f"'{context.collection_name}' ({unusable} gave no usable pair):",
        f"  answered by their section: {len(answered)}; {right} drafts hold the answer, "
        f"{sum(d.declined for d in answered)} declined, the rest drafted something else",
        f"  near misses (the same questions, their notes left out): {len(near)}; "
        f"{len(near) - wrong} declined, {wrong} drafted an answer (to be withdrawn); "
        f"{no_near_miss} without one (nothing else found, or the answer found elsewhere)",
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
