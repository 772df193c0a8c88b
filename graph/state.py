"""The typed state that flows through the graph.

``typing_extensions.TypedDict`` rather than ``typing.TypedDict``: on Python 3.11 the dev
server's ``/schemas`` endpoint returns null schemas for the latter and Studio loses its form.
"""

from __future__ import annotations

from typing import Annotated, Literal, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

# Field docstrings become JSON-schema descriptions (Studio shows them in its forms).
_DOCUMENTED = with_config(ConfigDict(use_attribute_docstrings=True))

Route = Literal["calculator", "image", "retrieve"]
NoAnswerReason = Literal["empty_collection", "below_threshold", "all_irrelevant"]

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
class RetrievedChunk(TypedDict):
    """One chunk returned by the vector search."""

    content: str
    """The chunk text as stored (without any embedding prefix)."""
    source: str
    """Note path relative to the notes folder."""
    heading: str
    """Heading path inside the note, e.g. ``Interviews > Whiteboarding`` ('' before any heading)."""
    score: float
    """Relevance in [0, 1]: 1 - cosine distance."""
    images: list[str]
    """Image references (``![..](path)``) found in the note, relative to the note."""


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
    """Image file paths or base64 strings for the image branch."""


@_DOCUMENTED
class State(InputState):
    """Everything the nodes read and write during one run."""

    messages: NotRequired[Annotated[list[AnyMessage], add_messages]]
    """The conversation on this thread (question and answer of every turn)."""
    route: NotRequired[Route]
    """The branch chosen by ``route``."""
    standalone_question: NotRequired[str]
    """The question used for retrieval: the user's, or a follow-up rewritten from history."""
    expression: NotRequired[str]
    """The arithmetic expression the calculator evaluated."""
    documents: NotRequired[list[RetrievedChunk]]
    """Chunks retrieved above the score threshold (after grading: only the relevant ones)."""
    near_misses: NotRequired[list[RetrievedChunk]]
    """The best chunks below the threshold, named in the no-answer message."""
    grades: NotRequired[list[Grade]]
    """One grade per retrieved chunk, in retrieval order."""
    answer: NotRequired[str]
    """The final answer shown to the user."""
    sources: NotRequired[list[Source]]
    """Note sections the answer was generated from."""
    no_answer_reason: NotRequired[NoAnswerReason]
    """Why ``no_answer`` was reached."""
    steps: NotRequired[Annotated[list[str], add_steps]]
    """Trace of this run's path, a line per node step, e.g. ``route: retrieve (no digits)``."""
