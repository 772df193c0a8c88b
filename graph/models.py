"""Model factories: the only place that knows the models are served by Ollama.

Nodes ask :func:`get_models` for a :class:`ModelProvider`; tests inject fakes through
``build_graph(models=...)`` (it travels in the run's ``configurable``), so no node needs
to know whether it talks to Ollama or to a fake.
"""

from __future__ import annotations

import threading
from typing import Literal

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable

from graph.context import Context
from graph.errors import ollama_errors
from graph.prompts import GRADE_SCHEMA

Purpose = Literal["classify", "grade", "generate", "rewrite", "vision"]

#: Options per purpose. Decisions are deterministic (temperature 0) and short: a yes/no
#: needs a handful of tokens, and stopping at the first newline cuts off explanations.
_OPTIONS: dict[Purpose, dict] = {
    "classify": {"temperature": 0, "num_predict": 5, "stop": ["\n"]},
    "grade": {"temperature": 0, "num_predict": 24, "format": GRADE_SCHEMA},
    "rewrite": {"temperature": 0, "num_predict": 160},
    "generate": {"temperature": 0},
    "vision": {"temperature": 0},
}

#: Purposes whose tokens are internal and must not appear in a "messages" stream.
_INTERNAL: set[Purpose] = {"classify", "grade", "rewrite"}

MODELS_KEY = "models"
"""Key of the provider in ``config["configurable"]``."""


class ModelProvider:
    """Builds chat and embedding models for a run; subclass to serve other backends."""

    def chat(self, context: Context, purpose: Purpose) -> Runnable:
        """A chat model configured for ``purpose``."""
        raise NotImplementedError

    def embeddings(self, context: Context) -> Embeddings:
        """The embedding model named in ``context``."""
        raise NotImplementedError

    def capabilities(self, context: Context, model: str) -> frozenset[str]:
        """What ``model`` can do (Ollama's ``/api/show`` ``capabilities``, e.g. ``vision``)."""
        raise NotImplementedError


class OllamaModels(ModelProvider):
    """Models served by Ollama, created once per setting and reused across runs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._chat: dict[tuple, Runnable] = {}
        self._embeddings: dict[tuple, Embeddings] = {}
        self._capabilities: dict[tuple[str, str], frozenset[str]] = {}

    def chat(self, context: Context, purpose: Purpose) -> Runnable:
        """A ``ChatOllama`` with the options of ``purpose`` (cached)."""
        from langchain_ollama import ChatOllama

        model = context.effective_vision_model if purpose == "vision" else context.chat_model
        key = (purpose, context.ollama_base_url, model, context.num_ctx, context.request_timeout)
        with self._lock:
            if key not in self._chat:
                chat: BaseChatModel = ChatOllama(
                    model=model,
                    base_url=context.ollama_base_url,
                    num_ctx=context.num_ctx,
                    client_kwargs={"timeout": context.request_timeout},
                    **_OPTIONS[purpose],
                )
                self._chat[key] = chat
            return self._chat[key]

    def embeddings(self, context: Context) -> Embeddings:
        """An ``OllamaEmbeddings`` for ``context.embedding_model`` (cached)."""
        from langchain_ollama import OllamaEmbeddings

        key = (context.ollama_base_url, context.embedding_model, context.request_timeout)
        with self._lock:
            if key not in self._embeddings:
                self._embeddings[key] = OllamaEmbeddings(
                    model=context.embedding_model,
                    base_url=context.ollama_base_url,
                    client_kwargs={"timeout": context.request_timeout},
                )
            return self._embeddings[key]

    def capabilities(self, context: Context, model: str) -> frozenset[str]:
        """Ask Ollama's ``/api/show`` once per model and remember the answer."""
        from ollama import Client

        key = (context.ollama_base_url, model)
        with self._lock:
            if key in self._capabilities:
                return self._capabilities[key]
        with ollama_errors(context.ollama_base_url, model):
            shown = Client(host=context.ollama_base_url, timeout=context.request_timeout).show(
                model
            )
        found = frozenset(shown.capabilities or [])
        with self._lock:
            self._capabilities[key] = found
        return found


_default = OllamaModels()


def default_models() -> ModelProvider:
    """The process-wide Ollama provider."""
    return _default


def get_chat(context: Context, purpose: Purpose) -> Runnable:
    """The run's chat model for ``purpose``, tagged for tracing.

    Internal calls (classification, grading, rewriting) carry LangGraph's ``nostream`` tag
    so that a ``messages`` stream carries only the answer's tokens.
    """
    tags = [f"rag:{purpose}"] + (["nostream"] if purpose in _INTERNAL else [])
    return get_models().chat(context, purpose).with_config(tags=tags, run_name=f"llm_{purpose}")


def get_models() -> ModelProvider:
    """The provider for the current run: an injected one, else Ollama."""
    from langgraph.config import get_config

    try:
        configurable = get_config().get("configurable", {})
    except RuntimeError:  # called outside a run (e.g. from the CLI's `query`)
        configurable = {}
    provider = configurable.get(MODELS_KEY)
    return provider if isinstance(provider, ModelProvider) else _default
