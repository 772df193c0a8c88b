"""The typed state that flows through the graph.

``typing_extensions.TypedDict`` rather than ``typing.TypedDict``: on Python 3.11 the dev
server's ``/schemas`` endpoint returns null schemas for the latter and Studio loses its form.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from graph.index.retrieval import RetrievedChunk

# Field docstrings become JSON-schema descriptions (Studio shows them in its forms).
_DOCUMENTED = with_config(ConfigDict(use_attribute_docstrings=True))

Route = Literal["calculator", "image", "retrieve"]
NoAnswerReason = Literal[
    "empty_collection", "filter_empty", "below_threshold", "all_irrelevant", "unsupported"
]

#: First element of a ``steps`` update that starts a new trace (see :func:`add_steps`).
NEW_RUN = "\x00new-run"


def add_steps(existing: list[str] | None, update: list[str]) -> list[str]:
    """Append to the trace, except that an update starting with ``NEW_RUN`` replaces it.

    Threads keep their state between runs; without the reset the trace of the second
    question would still show the path of the first.
    """
    if update and update[0] == NEW_RUN:
        return list(update[1:])
    return [*(existing or []), *update]


@_DOCUMENTED
class Grade(TypedDict):
    """The grader's verdict on one chunk."""

    source: str
    heading: str
    relevant: bool
    raw: str
    """What the model answered (after one retry), kept for ``-v`` and debugging."""
    fallback: bool
    """True when the answer could not be parsed and the documented fallback was applied."""
    p_yes: float | None
    """How sure the grader was of "yes" (P(yes) against "no", from the reply's token
    log-probabilities); ``None`` where the server gives none, or the reply was unreadable."""


@_DOCUMENTED
class Source(TypedDict):
    """A cited note section."""

    path: str
    heading: str


@_DOCUMENTED
class InputState(TypedDict):
    """What a caller provides: the question and, optionally, images to look at."""

    question: str
    """The user's question. Prefix with ``calculate:`` or ``based on the image`` to force a tool."""
    images: NotRequired[list[str]]
    """Images for the image branch, as base64 or data: URIs (at most 4; PNG, JPEG, GIF, WebP).

    Python callers may also pass file paths; the served API never reads files."""


@_DOCUMENTED
class RunState(TypedDict, total=False):
    """What the nodes write during one run; every node returns a part of it."""

    messages: Annotated[list[AnyMessage], add_messages]
    """The conversation on this thread (question and answer of every turn)."""
    route: Route
    """The branch chosen by ``route``."""
    attachments: list[str]
    """References to this run's checked input images (``graph.images``; never the bytes,
    never carried over to the next question)."""
    standalone_question: str
    """The question used for retrieval: the user's, or a follow-up rewritten from history."""
    expression: str
    """The arithmetic expression the calculator evaluated."""
    documents: list[RetrievedChunk]
    """Chunks retrieved above the score threshold, in rank order (after grading: only the
    relevant ones, the grader's surest first)."""
    near_misses: list[RetrievedChunk]
    """The best chunks below the threshold, named in the no-answer message."""
    grades: list[Grade]
    """One grade per retrieved chunk, in retrieval order."""
    answer: str
    """The final answer shown to the user."""
    sources: list[Source]
    """Note sections the answer was generated from."""
    no_answer_reason: NoAnswerReason | None
    """Why ``no_answer`` was reached, or ``unsupported``: the answer's check found it not
    stated in the notes it was drafted from."""
    steps: Annotated[list[str], add_steps]
    """Trace of this run's path, a line per node step, e.g. ``route: retrieve (no digits)``."""


@_DOCUMENTED
class OutputState(TypedDict, total=False):
    """What the served graph returns (``langgraph dev``, its API and the ``/mcp`` tool).

    Only what a caller acts on; the path through the graph (``steps``, ``grades``,
    ``documents``) stays in the thread's state, where Studio shows it.
    """

    answer: str
    """The answer, or why there is none (then ``no_answer_reason`` is set)."""
    sources: list[Source]
    """The note sections (path and heading) the answer was generated from."""
    no_answer_reason: NoAnswerReason | None
    """Set when the notes do not answer the question: ``empty_collection`` (nothing
    loaded), ``below_threshold`` (nothing similar enough), ``all_irrelevant`` (the grader
    rejected what was found), ``unsupported`` (the answer drafted from the notes was
    checked against them and is not what they state: it is followed by "your notes don't
    say this"). Do not take it as an answer then."""


@_DOCUMENTED
class State(InputState, RunState):
    """Everything the nodes read and write during one run."""


#: What a new run on a thread starts from: ``route`` writes these so nothing of the
#: previous turn's result survives. ``messages`` accumulate, ``steps`` restart through
#: ``NEW_RUN`` and ``attachments`` are set from the run's own input; every other
#: ``RunState`` field is listed here (a unit test checks it).
FRESH_RUN: dict[str, Any] = {
    "route": "retrieve",
    "standalone_question": "",
    "expression": "",
    "documents": [],
    "near_misses": [],
    "grades": [],
    "answer": "",
    "sources": [],
    "no_answer_reason": None,
}

#: The result fields a caller reads (``rag ask --json`` prints these, with the question).
RESULT_FIELDS: tuple[str, ...] = (*FRESH_RUN, "steps")


#: An inline citation in an answer: ``[1]``, or several numbers in one bracket, ``[1, 3]``.
CITATION = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


def cited_numbers(answer: str, sources: list[Source]) -> list[int]:
    """The source numbers (1-based, as listed) an answer cites inline, first mention first.

    A number that names no source (a model may write ``[7]`` with three sources) is left out.
    """
    numbers: dict[int, None] = {}
    for match in CITATION.finditer(answer):
        for number in re.split(r"\s*,\s*", match[1]):
            if len(number) <= 3 and 1 <= int(number) <= len(sources):  # not int("9" * 5000)
                numbers.setdefault(int(number))
    return list(numbers)


def source_line(number: int, source: Source) -> str:
    """A source as every way in lists it under an answer: ``[1] note.md — Heading``."""
    heading = source.get("heading")
    return f"[{number}] {source['path']}" + (f" — {heading}" if heading else "")


def unstreamed_tail(answer: str, streamed: str) -> str:
    """What the final ``answer`` adds to the ``streamed`` text a client already showed.

    The answer check follows a streamed draft it finds not stated in the notes with
    "your notes don't say this" (``no_answer_reason`` ``unsupported``): a client that
    streamed the draft shows only that. Empty when the answer adds nothing.
    """
    shown = streamed.strip()
    if not shown or not answer.startswith(shown):
        return ""
    return answer[len(shown) :].strip()


def working_question(state: State) -> str:
    """The question the current step works on: the standalone form once there is one."""
    return state.get("standalone_question") or state["question"]
