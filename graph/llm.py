"""One way to call a chat model: the purpose picks model and options, errors become one line.

Every node that asks a model something goes through :func:`ask` (text out), :func:`ask_many`
(several at once) or :func:`reply` (the message itself, for answers that are streamed).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from concurrent.futures import as_completed
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables.config import ContextThreadPoolExecutor

from graph.context import Context
from graph.errors import ollama_errors
from graph.fit import ratios
from graph.models import Purpose, get_chat, model_for
from graph.stopping import model_call

Prompt = str | Sequence[BaseMessage]
"""A single user turn, or the full message list."""

Reply = TypeVar("Reply")
"""What one call of :func:`ask_many`'s ``asking`` returns: the reply's text, or more."""


def reply(context: Context, purpose: Purpose, prompt: Prompt, **call: Any) -> AIMessage:
    """The model's reply message for ``purpose`` (its id is the one the stream used).

    ``call`` overrides the purpose's request fields for this call (``options``, ``format``).

    A reasoning block the model put in front of its reply (``<think>…</think>``, closed
    or cut off) is moved out of ``content`` into ``additional_kwargs["reasoning_content"]``,
    so no caller parses or shows reasoning as if it were the answer.

    Raises ``graph.stopping.Stopped`` when the run is stopped before or during the call.
    """
    model = get_chat(context, purpose)
    name = model_for(context, purpose)
    with model_call(), ollama_errors(context.ollama_base_url, name):
        message = model.invoke(prompt, **call)
    if not isinstance(message, AIMessage):
        message = AIMessage(message_text(message))
    # Ollama's prompt_eval_count (as input_tokens) refines the prompt-size estimate.
    usage = message.usage_metadata
    ratios.record(name, prompt_chars(prompt), usage["input_tokens"] if usage else None)
    reasoning, text = split_reasoning(message_text(message))
    if not reasoning:
        return message
    extra = dict(message.additional_kwargs)
    extra["reasoning_content"] = (extra.get("reasoning_content") or "") + reasoning
    return message.model_copy(update={"content": text, "additional_kwargs": extra})


def ask(context: Context, purpose: Purpose, prompt: Prompt, **call: Any) -> str:
    """The text of the model's reply for ``purpose``, stripped (reasoning removed)."""
    return message_text(reply(context, purpose, prompt, **call)).strip()


def ask_many(
    context: Context,
    calls: Sequence[tuple[Purpose, Prompt]],
    concurrency: int,
    asking: Callable[[Context, Purpose, Any], Reply],
    on_reply: Callable[[int, Reply], None] | None = None,
) -> list[Reply]:
    """Several ``asking`` calls at once (at most ``concurrency`` in flight).

    ``asking`` is :func:`ask`, or a call returning more than the reply's text. The replies
    come back in order; ``on_reply(index, reply)`` runs in the caller's thread as each reply
    lands (progress).
    """
    if not calls:
        return []
    replies: list[Any] = [None] * len(calls)
    # The executor copies the caller's context into each thread, so tracing and the run's
    # configuration (the model provider) follow every call.
    with ContextThreadPoolExecutor(max_workers=max(1, min(concurrency, len(calls)))) as pool:
        pending = {pool.submit(asking, context, *call): i for i, call in enumerate(calls)}
        for landed in as_completed(pending):
            index = pending[landed]
            replies[index] = landed.result()
            if on_reply is not None:
                on_reply(index, replies[index])
    return replies


def prompt_chars(prompt: Prompt) -> int:
    """Characters of text in a prompt (images not counted)."""
    if isinstance(prompt, str):
        return len(prompt)
    return sum(len(message_text(m)) for m in prompt)


def with_system(system: str, user: Any) -> list[BaseMessage]:
    """A system instruction followed by one user turn."""
    return [SystemMessage(system), HumanMessage(user)]


def conversation_turns(messages: Sequence[BaseMessage]) -> list[tuple[str, str]]:
    """The person's and the assistant's messages as (speaker, text), in order."""
    return [
        ("User" if isinstance(m, HumanMessage) else "Assistant", message_text(m))
        for m in messages
        if isinstance(m, (HumanMessage, AIMessage))
    ]


def message_text(message: object) -> str:
    """The text of a model reply (string or list-of-parts content)."""
    content = getattr(message, "content", message)
    if isinstance(content, list):
        return " ".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content
        )
    return str(content)


_OPEN, _CLOSE = "<think>", "</think>"


def split_reasoning(text: str) -> tuple[str, str]:
    """Split a leading ``<think>…</think>`` block off a reply: (reasoning, the rest).

    Reasoning models (qwen3, deepseek-r1) write their reasoning first unless the request
    switched it off, and some model/server combinations keep it in ``content`` even then.
    A block cut off by the token limit (no closing tag) is all reasoning: the rest is empty.
    """
    stripped = text.lstrip()
    if not stripped.startswith(_OPEN):
        return "", text
    body = stripped[len(_OPEN) :]
    end = body.find(_CLOSE)
    if end < 0:
        return body.strip(), ""
    return body[:end].strip(), body[end + len(_CLOSE) :].lstrip()


class ReasoningFilter:
    """:func:`split_reasoning` for a stream: feed pieces, get (reasoning, answer) text out.

    Used where tokens are shown as they arrive (``rag ask``), so a ``<think>`` block never
    reaches the answer's output even before the reply is complete.
    """

    def __init__(self) -> None:
        self._state = "start"  # start -> (thinking ->) answer
        self._pending = ""

    def feed(self, piece: str) -> tuple[str, str]:
        """The reasoning and the answer text that ``piece`` completes."""
        self._pending += piece
        if self._state == "start":
            head = self._pending.lstrip()
            if not head or (_OPEN.startswith(head) and head != _OPEN):
                return "", ""  # could still become "<think>": wait for more
            if not head.startswith(_OPEN):
                self._state, text, self._pending = "answer", self._pending, ""
                return "", text
            self._state, self._pending = "thinking", head[len(_OPEN) :]
        if self._state == "thinking":
            end = self._pending.find(_CLOSE)
            if end < 0:
                # Hold back what could be the start of the closing tag.
                tail = range(len(_CLOSE) - 1, 0, -1)
                keep = next((n for n in tail if self._pending.endswith(_CLOSE[:n])), 0)
                cut = len(self._pending) - keep
                out, self._pending = self._pending[:cut], self._pending[cut:]
                return out, ""
            reasoning, rest = self._pending[:end], self._pending[end + len(_CLOSE) :]
            self._state, self._pending = "after", ""
            return reasoning, self._after(rest)
        return "", self._after(self._pending_take())

    def _pending_take(self) -> str:
        text, self._pending = self._pending, ""
        return text

    def _after(self, text: str) -> str:
        # Blank lines separate the block from the answer; they are not part of it.
        if self._state == "after":
            text = text.lstrip()
            if text:
                self._state = "answer"
        return text


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


#: A verdict's key up to its value: ``"score": "`` (quotes and spaces optional).
_SCORE_KEY = r"""["']?score["']?\s*[:=]\s*["']?"""
_SCORE = re.compile(_SCORE_KEY + "(yes|no)", re.IGNORECASE)


def parse_grade(text: str) -> bool | None:
    """Read a ``{"score": "yes" | "no"}`` verdict (a grade, the answer check) leniently.

    JSON first, then a ``score: yes`` fragment, then a bare yes/no.
    """
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        value = None
    if isinstance(value, dict) and "score" in value:
        return parse_yes_no(str(value["score"]))
    match = _SCORE.search(text)
    if match:
        return match.group(1).lower() == "yes"
    return parse_yes_no(text)


#: A reply's text just before a verdict's value (the token read next may start with a space).
_BEFORE_VERDICT = re.compile(_SCORE_KEY + r"\s*$", re.IGNORECASE)


def yes_probability(message: object, written: str = "") -> float | None:
    """How sure the model was of its yes/no verdict: P(yes) / (P(yes) + P(no)).

    Read from the reply's token log-probabilities (Ollama's ``logprobs``, 0.12.11 and
    later), at the token that starts the verdict's value: the probabilities of the tokens
    ``yes`` and ``no`` among the most likely ones there. Ollama computes them from the
    model's raw scores, before the JSON format narrows the choice, so only these two words
    count. ``None`` when the reply carries no log-probabilities (an older server) or no
    verdict among them. ``written``: the reply's beginning sent with the prompt (a grade read
    after the model's opening), which the log-probabilities do not cover.
    """
    metadata = getattr(message, "response_metadata", None) or {}
    before, found = written, None
    for entry in metadata.get("logprobs") or []:
        # A dict, or the ollama client's object (which reads like one).
        token = str(entry.get("token") or "")
        if _verdict_word(token) and _BEFORE_VERDICT.search(before):
            # The last verdict counts: a reasoning model may write one while it thinks.
            found = entry
        before += token
    if found is None:
        return None
    odds = {"yes": 0.0, "no": 0.0}
    alternatives = list(found.get("top_logprobs") or [])
    if not any(_verdict_word(str(a.get("token") or "")) for a in alternatives):
        alternatives.append(found)  # the chosen token, when not among its alternatives
    for alternative in alternatives:
        word = _verdict_word(str(alternative.get("token") or ""))
        logprob = alternative.get("logprob")
        if word and logprob is not None:
            odds[word] += math.exp(float(logprob))
    total = odds["yes"] + odds["no"]
    return odds["yes"] / total if total > 0 else None


#: A token that is the verdict word, with any quotes or punctuation around it (``yes"}``).
_VERDICT_WORD = re.compile(r"\W*(yes|no)\W*")


def _verdict_word(token: str) -> str:
    """``yes`` or ``no`` when ``token`` is that word (lower case, as the format allows), else ''."""
    match = _VERDICT_WORD.fullmatch(token)
    return match.group(1) if match else ""


_SPACES = re.compile(r"\s+")
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u00a0": " ", "\u202f": " "})

#: What an answer that declines says (the generator is told to say the notes don't say): such
#: an answer is not checked against the notes, and the answer evaluation counts it abstained.
DECLINES = (
    "cannot find",
    "can't find",
    "could not find",
    "couldn't find",
    "unable to find",
    "did not find",
    "didn't find",
    "not able to find",
    "i don't know",
    "i do not know",
    "not in the notes",
    "not in your notes",
    "not in the context",
    "not mentioned",
    "not provided",
    "not specified",
    "not stated",
    "no information",
    "does not contain",
    "doesn't contain",
    "do not contain",
    "don't contain",
    "does not mention",
    "doesn't mention",
    "do not mention",
    "don't mention",
    "does not say",
    "doesn't say",
    "do not say",
    "don't say",
    "does not specify",
    "doesn't specify",
)


def normalise(text: str) -> str:
    """Lower case, typographic quotes and spaces made plain, runs of whitespace as one space."""
    return _SPACES.sub(" ", text.translate(_QUOTES).lower()).strip()


def declines(answer: str) -> bool:
    """Whether the answer says the notes do not hold the answer."""
    said = normalise(answer)
    return not said or any(phrase in said for phrase in DECLINES)
