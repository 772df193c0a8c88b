"""What the graph is doing, reported while it works: the progress events and ``report``.

A run reports each stage as a node reaches it, through LangGraph's custom stream: a caller
that streams with ``stream_mode="custom"`` (``graph.stream``, the LangGraph API's
``/runs/stream``, the SDK, Studio) receives every event as a small dict, :class:`Progress`.
``graph.invoke`` and callers that stream other modes receive nothing and pay nothing.

The stages, in the order a retrieval question reports them (a run reports only those of
its branch):

- ``routing``: choosing calculator, image or notes (the start of every run);
- ``rewriting``: rewriting a follow-up into a question of its own (a thread with history);
- ``searching``: searching the notes; ``searched``: ``found`` sections above the floor;
- ``grading``: ``done`` of ``total`` sections judged, ``kept`` of them relevant; first with
  ``done`` 0, then once per verdict as it lands, naming that section (``source``,
  ``heading``, ``relevant``);
- ``writing``: the answer is being written (tokens follow on the ``messages`` stream);
- ``written``: the answer is complete: its ``sources``, and ``checking`` when it is now
  checked against them (a model call, not streamed);
- ``checked``: ``stated`` is the check's verdict (``None``: unreadable, the answer kept),
  ``by`` what settled it (``figures``: every figure found in the sections, no model call;
  ``names``: every name found there, no model call; ``lookup``: a figure or a name not
  found, or figures of another kind; ``model``: the model's check);
- ``calculating``, ``looking`` (at an image): the other branches.

Every event carries ``at``, the time it was reported (seconds since the epoch). Events hold
no note text: paths and headings only, as the answer's sources do.
"""

from __future__ import annotations

import time
from typing import Literal, NotRequired, Required

from langgraph.config import get_stream_writer
from typing_extensions import TypedDict, Unpack

from graph.state import Source

Stage = Literal[
    "routing",
    "rewriting",
    "searching",
    "searched",
    "grading",
    "writing",
    "written",
    "checked",
    "calculating",
    "looking",
]


class Details(TypedDict, total=False):
    """What a stage reports besides its name (each stage only its own fields)."""

    found: int
    """``searched``: note sections above the relevance floor (what is graded next)."""
    done: int
    """``grading``: sections judged so far."""
    total: int
    """``grading``: sections to judge."""
    kept: int
    """``grading``: sections judged relevant so far."""
    source: str
    """``grading``: the note of the section whose verdict just landed."""
    heading: str
    """``grading``: its heading."""
    relevant: bool
    """``grading``: that verdict."""
    sources: list[Source]
    """``written``: the note sections the answer was written from, numbered as cited."""
    checking: bool
    """``written``: whether the answer is now checked against its sources."""
    stated: bool | None
    """``checked``: the sources state the answer (``False``: a notice follows it)."""
    by: Literal["figures", "names", "lookup", "model"]
    """``checked``: what settled it: its figures found, a lookup, or the model's check."""


class Progress(Details, total=False):
    """One progress event, as a caller of ``stream_mode="custom"`` receives it."""

    stage: Required[Stage]
    """What the graph is doing from now on."""
    at: NotRequired[float]
    """When it was reported, in seconds since the epoch."""


def report(stage: Stage, **details: Unpack[Details]) -> None:
    """Send a progress event to whoever streams this run's custom mode; else nothing.

    Outside a graph run (``rag eval --graded`` grades chunks directly) there is no stream.
    """
    try:
        write = get_stream_writer()
    except (RuntimeError, KeyError):  # not inside a graph run
        return
    write(Progress(stage=stage, at=round(time.time(), 3), **details))


def describe(event: Progress) -> str:
    """One line for a person, e.g. ``grading 2 of 5 sections (1 relevant)``."""
    stage = event["stage"]
    if stage == "searched":
        found = event.get("found", 0)
        return f"found {found} section{'' if found == 1 else 's'}"
    if stage == "grading":
        done, total, kept = event.get("done", 0), event.get("total", 0), event.get("kept", 0)
        return f"grading {done} of {total} section{'' if total == 1 else 's'} ({kept} relevant)"
    if stage == "written":
        return "checking against your notes" if event.get("checking") else "answer written"
    if stage == "checked":
        stated = event.get("stated")
        if stated is None:
            return "checked: verdict unreadable, answer kept"
        if stated and event.get("by") == "figures":
            return "checked: its figures are in your notes"
        if stated and event.get("by") == "names":
            return "checked: the names it gives are in your notes"
        return "checked: stated in your notes" if stated else "checked: not stated in your notes"
    return _WORDS[stage]


_WORDS: dict[Stage, str] = {
    "routing": "choosing how to answer",
    "rewriting": "rewriting the follow-up",
    "searching": "searching your notes",
    "writing": "writing the answer",
    "calculating": "calculating",
    "looking": "looking at the image",
}
