"""Model factories: the only place that knows the models are served by Ollama.

Nodes ask :func:`get_models` for a :class:`ModelProvider`; tests inject fakes through
``build_graph(models=...)`` (it travels in the run's ``configurable``), so no node needs
to know whether it talks to Ollama or to a fake.
"""

from __future__ import annotations

import functools
from typing import Literal

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable

from graph.context import Context
from graph.errors import ollama_errors
from graph.prompts import GRADE_SCHEMA

Purpose = Literal[
    "route_calculator", "route_image", "grade", "rewrite", "extract", "generate", "vision"
]
"""Why a model is called; each purpose has its own options, and fakes answer per purpose."""

#: Decisions are deterministic (temperature 0) and short: a yes/no needs a handful of
#: tokens, and stopping at the first newline cuts off explanations.
_YES_NO = {"temperature": 0, "num_predict": 5, "stop": ["\n"]}
_OPTIONS: dict[Purpose, dict] = {
    "route_calculator": _YES_NO,
    "route_image": _YES_NO,
    "grade": {"temperature": 0, "num_predict": 24, "format": GRADE_SCHEMA},
    "rewrite": {"temperature": 0, "num_predict": 160},
    "extract": {"temperature": 0, "num_predict": 160},
    "generate": {"temperature": 0},
    "vision": {"temperature": 0},
}

#: Purposes whose tokens are internal and must not appear in a "messages" stream.
_INTERNAL: set[Purpose] = {"route_calculator", "route_image", "grade", "rewrite", "extract"}

#: Distinct model settings kept per process; a run can vary settings, so the caches are
#: bounded (least recently used dropped first).
CACHE_SIZE = 32

MODELS_KEY = "models"
"""Key of the provider in ``config["configurable"]``."""


def model_for(context: Context, purpose: Purpose) -> str:
    """The Ollama model that serves ``purpose``."""
    return context.effective_vision_model if purpose == "vision" else context.chat_model


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

    def chat(self, context: Context, purpose: Purpose) -> Runnable:
        """A ``ChatOllama`` with the options of ``purpose`` (cached)."""
        return _ollama_chat(
            purpose,
            context.ollama_base_url,
            model_for(context, purpose),
            context.num_ctx,
            context.request_timeout,
        )

    def embeddings(self, context: Context) -> Embeddings:
        """An ``OllamaEmbeddings`` for ``context.embedding_model`` (cached)."""
        return _ollama_embeddings(
            context.ollama_base_url, context.embedding_model, context.request_timeout
        )

    def capabilities(self, context: Context, model: str) -> frozenset[str]:
        """Ask Ollama's ``/api/show`` once per model and remember the answer."""
        return _ollama_capabilities(context.ollama_base_url, model, context.request_timeout)


@functools.lru_cache(maxsize=CACHE_SIZE)
def _ollama_chat(
    purpose: Purpose, base_url: str, model: str, num_ctx: int, timeout: float
) -> BaseChatModel:
    from langchain_ollama import ChatOllama

    return ChatOllama(
        model=model,
        base_url=base_url,
        num_ctx=num_ctx,
        client_kwargs={"timeout": timeout},
        **_OPTIONS[purpose],
    )


@functools.lru_cache(maxsize=CACHE_SIZE)
def _ollama_embeddings(base_url: str, model: str, timeout: float) -> Embeddings:
    from langchain_ollama import OllamaEmbeddings

    return OllamaEmbeddings(model=model, base_url=base_url, client_kwargs={"timeout": timeout})


@functools.lru_cache(maxsize=CACHE_SIZE)
def _ollama_capabilities(base_url: str, model: str, timeout: float) -> frozenset[str]:
    # A failure raises and is not cached: the next question asks again.
    from ollama import Client

    with ollama_errors(base_url, model):
        shown = Client(host=base_url, timeout=timeout).show(model)
    return frozenset(shown.capabilities or [])


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
