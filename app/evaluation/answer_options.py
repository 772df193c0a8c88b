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


@dataclass(frozen=True)
class AnswerOptions:
    """Which questions and designs an answer evaluation runs, and where its report goes."""

    split: str = "heldout"
    designs: tuple[str, ...] = DESIGNS
    limit: int | None = None
    report: Path | None = None
