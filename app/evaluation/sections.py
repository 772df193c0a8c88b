"""Sections of a collection, and the question and answer the chat model writes for one.

``rag calibrate`` and ``rag questions`` both start here: a sample of the collection's
sections, each at least ``MIN_SECTION_CHARS`` long, drawn with a seed (one chunk read per
draw: the cost does not grow with the collection), and for each section a question the
section answers with a short answer copied from it, written by the chat model in the
section's language. A pair is kept only when the answer is written in the section word for
word: a rule, not the model, decides what is right.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # the graph's libraries load only when a section is drawn
    from graph.context import Context
    from graph.models import ModelProvider

T = TypeVar("T")

#: Sections shorter than this hold too little to ask about and to miss near.
MIN_SECTION_CHARS = 200
#: Draws per wanted section before giving up on finding long enough ones.
DRAWS_PER_SECTION = 4
#: The longest answer kept: a short fact, not a paragraph copied back.
MAX_ANSWER_CHARS = 80


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


def draw_sections(context: Context, wanted: int, seed: int) -> list[Section]:
    """``sample_sections`` of the context's collection, read as every reader of it reads."""
    from graph.index.vectorstore import get_collection, reading

    collection = get_collection(context)
    if collection is None:
        return []
    return reading(context, lambda: sample_sections(collection, wanted, seed))
