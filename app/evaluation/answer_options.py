"""What an answer evaluation is asked for, apart from the evaluation itself.

``app.evaluation.answers`` imports LangChain, LangGraph and Chroma; the command line builds
every ``rag`` command's parser from these choices, and none but ``rag eval --answers``
needs those libraries (about 2.5 s of imports before a ``rag load`` or ``rag --help`` could
start).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DESIGNS = ("graph", "classic")
"""``graph``: this project's graph; ``classic``: the design it improves on (classic_rag)."""
SPLITS = ("heldout", "tune", "all")
#: The stages of the answer path, in the order a question goes through them
#: (``app.evaluation.answers.stage``): where an answerable question can be lost, and where
#: one the notes do not answer can be stopped.
STAGES = ("error", "route", "floor", "grader", "writer", "citation", "check")
#: Where a question the notes do not answer ends: stopped at a stage, or ``answered``.
STOPS = ("error", "route", "floor", "grader", "writer", "check", "answered")


@dataclass(frozen=True)
class AnswerOptions:
    """Which questions and designs an answer evaluation runs, and where its report goes."""

    split: str = "heldout"
    designs: tuple[str, ...] = DESIGNS
    limit: int | None = None
    report: Path | None = None
