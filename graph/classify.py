"""Ollama binary classification: one helper for every yes/no decision in the graph."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import Runnable

from graph.prompts import CLASSIFY

_WORD = re.compile(r"[a-z]+")
_YES = {"yes", "y", "true", "correct", "yeah", "yep"}
_NO = {"no", "n", "false", "incorrect", "nope"}


def parse_yes_no(text: str) -> bool | None:
    """Read a yes/no answer leniently: the first word decides; ``None`` if neither.

    Small models wrap the word in punctuation, quotes, markdown or a sentence
    ("**Yes.**", "'no' - because ..."), so only the first alphabetic word is looked at.
    """
    for word in _WORD.findall(text.lower()):
        if word in _YES:
            return True
        if word in _NO:
            return False
        return None
    return None


def classification_prompt(question: str, prompt: str) -> str:
    """The exact text sent for one classification."""
    return CLASSIFY.format(question=question, prompt=prompt)


def classify(model: Runnable, question: str, prompt: str) -> bool:
    """Ask one yes/no question about ``prompt``; anything but a clear yes counts as no."""
    return classify_many(model, [(question, prompt)])[0]


def classify_many(model: Runnable, items: Sequence[tuple[str, str]]) -> list[bool]:
    """Ask several yes/no questions concurrently (one model call each, run in parallel)."""
    if not items:
        return []
    prompts: list[Any] = [classification_prompt(q, p) for q, p in items]
    replies = model.batch(prompts, config={"max_concurrency": len(prompts)})
    return [parse_yes_no(message_text(reply)) is True for reply in replies]


def message_text(message: object) -> str:
    """The text of a model reply (string or list-of-parts content)."""
    content = getattr(message, "content", message)
    if isinstance(content, list):
        return " ".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content
        )
    return str(content)
