"""One way to call a chat model: the purpose picks model and options, errors become one line.

Every node that asks a model something goes through :func:`ask` (text out), :func:`ask_many`
(several at once) or :func:`reply` (the message itself, for answers that are streamed).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables.config import ContextThreadPoolExecutor

from graph.context import Context
from graph.errors import ollama_errors
from graph.models import Purpose, get_chat, model_for

Prompt = str | Sequence[BaseMessage]
"""A single user turn, or the full message list."""


def reply(context: Context, purpose: Purpose, prompt: Prompt) -> AIMessage:
    """The model's reply message for ``purpose`` (its id is the one the stream used)."""
    model = get_chat(context, purpose)
    with ollama_errors(context.ollama_base_url, model_for(context, purpose)):
        message = model.invoke(prompt)
    return message if isinstance(message, AIMessage) else AIMessage(message_text(message))


def ask(context: Context, purpose: Purpose, prompt: Prompt) -> str:
    """The text of the model's reply for ``purpose``, stripped."""
    return message_text(reply(context, purpose, prompt)).strip()


def ask_many(
    context: Context, calls: Sequence[tuple[Purpose, Prompt]], concurrency: int
) -> list[str]:
    """Several :func:`ask` calls at once (at most ``concurrency`` in flight), in order."""
    if not calls:
        return []
    # The executor copies the caller's context into each thread, so tracing and the run's
    # configuration (the model provider) follow every call.
    with ContextThreadPoolExecutor(max_workers=max(1, min(concurrency, len(calls)))) as pool:
        return list(pool.map(lambda call: ask(context, *call), calls))


def with_system(system: str, user: Any) -> list[BaseMessage]:
    """A system instruction followed by one user turn."""
    return [SystemMessage(system), HumanMessage(user)]


def message_text(message: object) -> str:
    """The text of a model reply (string or list-of-parts content)."""
    content = getattr(message, "content", message)
    if isinstance(content, list):
        return " ".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content
        )
    return str(content)


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
