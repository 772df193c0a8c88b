"""Fake models for tests and benchmarks: deterministic, counted, optionally slow."""

from __future__ import annotations

import hashlib
import math
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, get_args

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import Field, PrivateAttr

from graph.context import Context
from graph.models import ModelProvider, Purpose
from graph.stopping import current_call


def prompt_text(messages: list[BaseMessage]) -> str:
    parts = []
    for m in messages:
        if isinstance(m.content, str):
            parts.append(m.content)
        else:
            parts.extend(p.get("text", "") for p in m.content if isinstance(p, dict))
    return "\n".join(parts)


def image_data(messages: list[BaseMessage]) -> list[str]:
    """The base64 payload of every image part in ``messages``, in order."""
    found = []
    for m in messages:
        for part in m.content if isinstance(m.content, list) else []:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "image_url":
                url = part["image_url"]
                url = url.get("url", "") if isinstance(url, dict) else url
                found.append(url.split(",", 1)[1] if url.startswith("data:") else url)
            elif part.get("type") == "image":
                found.append(part.get("base64") or part.get("data") or "")
    return found


Answer = str | list[str] | Callable[[str], str]
"""What a fake says for one purpose: always the same text, a queue, or a function of the prompt."""


class Concurrency:
    """Counts calls in flight across every fake model of one provider."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.active = 0
        self.max_active = 0
        self.aborted = 0
        """Calls that were aborted while they waited out their latency."""

    def __enter__(self) -> None:
        with self._lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)

    def __exit__(self, *_: object) -> None:
        with self._lock:
            self.active -= 1


class ScriptedChatModel(BaseChatModel):
    """Answers from its script (text, queue or function); streams word by word; counts calls."""

    answer: Any
    latency: float = 0.0
    calls: list[str] = Field(default_factory=list)
    requests: list[dict] = Field(default_factory=list)
    """Per call, the request fields it overrode (``options``, ``format``)."""
    begun: list[str] = Field(default_factory=list)
    """Per call, the reply's beginning it was sent (a final assistant message), or ''."""
    images: list[list[str]] = Field(default_factory=list)
    """Per call, the base64 of the images it was sent."""
    concurrency: Any = None
    rendezvous: Any = None
    """A ``threading.Barrier`` each call waits at while in flight (proves calls overlap)."""
    logprobs: Any = None
    """Token log-probabilities every reply carries, as Ollama sends them (``None``: none), or
    a function of the prompt's text returning them (as ``answer`` may be)."""
    usage: Any = None
    """``(prompt tokens, reply tokens)`` every reply reports, as ChatOllama does from Ollama's
    ``prompt_eval_count`` and ``eval_count`` (``None``: no counts)."""
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    def _record(self, messages: list[BaseMessage], request: dict | None = None) -> str:
        # A final assistant message is the reply's beginning (continued, as Ollama does): kept
        # apart from the prompt.
        opening = messages[-1].content if messages and isinstance(messages[-1], AIMessage) else ""
        # A script reads the whole text, the opening last.
        script_text = prompt_text(messages)
        if isinstance(opening, str) and opening:
            messages = messages[:-1]
        text = prompt_text(messages)
        with self._lock:
            self.calls.append(text)
            self.requests.append(request or {})
            self.begun.append(opening if isinstance(opening, str) else "")
            self.images.append(image_data(messages))
        with self.concurrency or Concurrency():
            if self.rendezvous is not None:
                self.rendezvous.wait()
            if self.latency:
                self._wait(self.latency)
        if callable(self.answer):
            answer = str(self.answer(script_text))
        elif isinstance(self.answer, list):
            with self._lock:
                if not self.answer:
                    raise AssertionError("the fake's queue of answers is empty")
                answer = self.answer.pop(0)
        else:
            answer = str(self.answer)
        if isinstance(opening, str) and opening and answer.startswith(opening):
            return answer[len(opening) :]
        return answer

    def _wait(self, seconds: float) -> None:
        """The model's latency; a call aborted meanwhile ends at once, as a closed connection."""
        call = current_call()
        if call is None:
            time.sleep(seconds)
        elif call.aborted.wait(seconds):
            if self.concurrency is not None:
                with self.concurrency._lock:
                    self.concurrency.aborted += 1
            raise ConnectionResetError("the connection was shut down (the call was aborted)")

    def _metadata(self, messages: list[BaseMessage]) -> dict[str, Any]:
        logprobs = self.logprobs
        if callable(logprobs):
            logprobs = logprobs(prompt_text(messages))
        return {"logprobs": logprobs} if logprobs is not None else {}

    def _counts(self) -> dict[str, Any]:
        """The last message (chunk)'s usage fields, where ChatOllama puts Ollama's counts."""
        if self.usage is None:
            return {}
        prompt, reply = self.usage
        return {
            "usage_metadata": {
                "input_tokens": prompt,
                "output_tokens": reply,
                "total_tokens": prompt + reply,
            },
            "response_metadata": {"model_name": self._llm_type},
        }

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        counts = self._counts()
        metadata = {**self._metadata(messages), **counts.pop("response_metadata", {})}
        message = AIMessage(self._record(messages, kwargs), response_metadata=metadata, **counts)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        reply = self._record(messages, kwargs)
        metadata = self._metadata(messages)
        pieces = re.findall(r"\S+\s*", reply) or [reply]
        for n, piece in enumerate(pieces, start=1):
            counts = self._counts() if n == len(pieces) else {}
            metadata = {**metadata, **counts.pop("response_metadata", {})}
            chunk = ChatGenerationChunk(
                message=AIMessageChunk(content=piece, response_metadata=metadata, **counts)
            )
            metadata = {}
            if run_manager:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk


_WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = set(
    "the and for with what how should when where which who why does did can you your are was "
    "were this that from into about have has not but all any our out use used using".split()
)


class KeywordEmbeddings(Embeddings):
    """Bag-of-words vectors (hashed, L2-normalised): texts sharing words are similar."""

    def __init__(self, dims: int = 512, latency: float = 0.0) -> None:
        self.dims = dims
        self.latency = latency
        self.calls = 0
        self.texts_embedded = 0
        self._lock = threading.Lock()

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dims
        for word in _WORD.findall(text.lower()):
            if len(word) < 3 or word in STOPWORDS:
                continue
            index = int(hashlib.md5(word.encode()).hexdigest()[:8], 16) % self.dims
            vector[index] += 1.0
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            self.calls += 1
            self.texts_embedded += len(texts)
        if self.latency:
            time.sleep(self.latency)
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        with self._lock:
            self.calls += 1
        if self.latency:
            time.sleep(self.latency)
        return self._vector(text)


#: What each purpose says unless a test scripts it: no to both routing questions, every
#: chunk relevant, a fixed rewrite, expression and answer, and every answer stated.
DEFAULT_ANSWERS: dict[str, Answer] = {
    "route_calculator": "no",
    "route_image": "no",
    "grade": '{"score": "yes"}',
    "rewrite": "What do my notes say about this?",
    "extract": "3 + 4",
    "generate": "Based on your notes: the answer is in the context.",
    "check": '{"score": "yes"}',
    "vision": "The image shows a small network diagram.",
}


class FakeModels(ModelProvider):
    """A provider whose chat models answer per purpose and whose embeddings are keyword vectors.

    ``answers`` overrides :data:`DEFAULT_ANSWERS` per purpose; ``logprobs`` gives a purpose's
    replies Ollama's token log-probabilities, ``usage`` its ``(prompt, reply)`` token counts.
    ``rendezvous`` maps purposes to a ``threading.Barrier`` their calls wait at, so a test that
    expects calls to overlap waits for them to, instead of sleeping (a barrier with a timeout
    breaks when they don't).
    """

    def __init__(
        self,
        answers: dict[str, Answer] | None = None,
        *,
        latency: float = 0.0,
        embed_latency: float = 0.0,
        capabilities: dict[str, set[str]] | None = None,
        rendezvous: dict[str, threading.Barrier] | None = None,
        logprobs: dict[str, list] | None = None,
        usage: dict[str, tuple[int, int]] | None = None,
    ) -> None:
        unknown = set(answers or {}) - set(get_args(Purpose))
        assert not unknown, f"no such purpose: {unknown}"
        self.answers = {**DEFAULT_ANSWERS, **(answers or {})}
        self.latency = latency
        self.embedder = KeywordEmbeddings(latency=embed_latency)
        self.models: dict[str, ScriptedChatModel] = {}
        self.caps = capabilities or {}
        self.rendezvous = rendezvous or {}
        self.logprobs = logprobs or {}
        self.usage = usage or {}
        self.capability_calls = 0
        #: The warm-ups asked for (``ModelProvider.warm``), in order: (purpose, messages).
        self.warmed: list[tuple[str, list[dict[str, str]]]] = []
        self.concurrency = Concurrency()
        self._lock = threading.Lock()

    def chat(self, context: Context, purpose: Purpose) -> ScriptedChatModel:
        with self._lock:
            if purpose not in self.models:
                self.models[purpose] = ScriptedChatModel(
                    answer=self.answers[purpose],
                    latency=self.latency,
                    concurrency=self.concurrency,
                    rendezvous=self.rendezvous.get(purpose),
                    logprobs=self.logprobs.get(purpose),
                    usage=self.usage.get(purpose),
                )
            return self.models[purpose]

    def embeddings(self, context: Context) -> Embeddings:
        return self.embedder

    def warm(self, context: Context, purpose: Purpose, messages: list[dict[str, str]]) -> None:
        with self._lock:
            self.warmed.append((purpose, messages))

    def capabilities(self, context: Context, model: str) -> frozenset[str]:
        self.capability_calls += 1
        return frozenset(self.caps.get(model, {"completion"}))

    def calls(self, *purposes: str) -> int:
        """Calls made for the given purposes (every purpose when none is given)."""
        chosen = purposes or tuple(self.models)
        return sum(len(self.models[p].calls) for p in chosen if p in self.models)

    def prompts(self, purpose: str) -> list[str]:
        """The prompts sent for ``purpose``, in order."""
        return list(self.models[purpose].calls) if purpose in self.models else []

    def images(self, purpose: str) -> list[list[str]]:
        """Per call for ``purpose``, in order, the base64 of the images sent with it."""
        return list(self.models[purpose].images) if purpose in self.models else []
