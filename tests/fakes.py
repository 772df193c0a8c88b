"""Fake models for tests and benchmarks: deterministic, counted, optionally slow."""

from __future__ import annotations

import hashlib
import math
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import Field, PrivateAttr

from graph.context import Context
from graph.models import ModelProvider, Purpose
from graph.prompts import IS_ABOUT_IMAGE, IS_CALCULATION


def prompt_text(messages: list[BaseMessage]) -> str:
    parts = []
    for m in messages:
        if isinstance(m.content, str):
            parts.append(m.content)
        else:
            parts.extend(p.get("text", "") for p in m.content if isinstance(p, dict))
    return "\n".join(parts)


class ScriptedChatModel(BaseChatModel):
    """Answers with ``respond(prompt)``; streams word by word; counts calls."""

    respond: Callable[[str], str]
    latency: float = 0.0
    calls: list[str] = Field(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _active: int = PrivateAttr(default=0)
    max_active: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    def _record(self, messages: list[BaseMessage]) -> str:
        text = prompt_text(messages)
        with self._lock:
            self.calls.append(text)
            self._active += 1
            self.max_active = max(self.max_active, self._active)
        if self.latency:
            time.sleep(self.latency)
        with self._lock:
            self._active -= 1
        return self.respond(text)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(self._record(messages)))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        reply = self._record(messages)
        for piece in re.findall(r"\S+\s*", reply) or [reply]:
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
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


def default_respond(prompt: str) -> str:
    """A plausible model: classifies by keywords, grades by word overlap, answers briefly."""
    if prompt.startswith(IS_CALCULATION):
        tail = prompt.rsplit("Prompt:", 1)[-1].strip().lower()
        short = len(tail.split()) <= 6  # "what's 12*7?" yes; a sentence mentioning 3-2-1 no
        return "yes" if short and re.search(r"\d\s*[-+*/^x]\s*\d", tail) else "no"
    if prompt.startswith(IS_ABOUT_IMAGE):
        tail = prompt.rsplit("Prompt:", 1)[-1].lower()
        return "yes" if any(w in tail for w in ("image", "picture", "diagram", "photo")) else "no"
    if prompt.startswith("You are a grader"):
        document = prompt.split("Here is the retrieved document:", 1)[1].split(
            "Here is the user question:", 1
        )[0]
        question = prompt.split("Here is the user question:", 1)[1].split("\n", 1)[0]
        words = {w for w in _WORD.findall(question.lower()) if len(w) > 3}
        hit = words & set(_WORD.findall(document.lower()))
        return '{"score": "yes"}' if hit else '{"score": "no"}'
    if prompt.startswith("Given the conversation"):
        follow = prompt.rsplit("Follow-up question:", 1)[-1].strip()
        return f"Standalone: {follow}"
    if prompt.startswith("Rewrite the following request"):
        return "3 + 4"
    return "Based on your notes: the answer is in the context."


class FakeModels(ModelProvider):
    """A provider whose chat models are scripted and whose embeddings are keyword vectors."""

    def __init__(
        self,
        respond: Callable[[str], str] = default_respond,
        *,
        latency: float = 0.0,
        embed_latency: float = 0.0,
        capabilities: dict[str, set[str]] | None = None,
        respond_by_purpose: dict[str, Callable[[str], str]] | None = None,
    ) -> None:
        self.respond = respond
        self.latency = latency
        self.embedder = KeywordEmbeddings(latency=embed_latency)
        self.models: dict[str, ScriptedChatModel] = {}
        self.caps = capabilities or {}
        self.by_purpose = respond_by_purpose or {}
        self.capability_calls = 0

    def chat(self, context: Context, purpose: Purpose) -> ScriptedChatModel:
        if purpose not in self.models:
            self.models[purpose] = ScriptedChatModel(
                respond=self.by_purpose.get(purpose, self.respond), latency=self.latency
            )
        return self.models[purpose]

    def embeddings(self, context: Context) -> Embeddings:
        return self.embedder

    def capabilities(self, context: Context, model: str) -> frozenset[str]:
        self.capability_calls += 1
        return frozenset(self.caps.get(model, {"completion"}))

    def calls(self, purpose: str | None = None) -> int:
        if purpose:
            return len(self.models[purpose].calls) if purpose in self.models else 0
        return sum(len(m.calls) for m in self.models.values())
