"""Model factories: the only place that knows the models are served by Ollama.

Nodes ask :func:`get_models` for a :class:`ModelProvider`; tests inject fakes through
``build_graph(models=...)`` (it travels in the run's ``configurable``), so no node needs
to know whether it talks to Ollama or to a fake.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable

from graph.context import Context, keep_alive_seconds
from graph.errors import ConfigError, OllamaHTTPError
from graph.ollama import OllamaClient, client_options
from graph.stopping import abortable_client_options

Purpose = Literal[
    "route_calculator",
    "route_image",
    "grade",
    "rewrite",
    "extract",
    "generate",
    "check",
    "vision",
]
"""Why a model is called; each purpose has its own options, and fakes answer per purpose."""

#: The grader's and the answer check's reply format (Ollama's JSON-schema ``format``):
#: ``{"score": "yes" | "no"}``.
GRADE_SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["score"],
}

#: Decisions are deterministic (temperature 0) and short: a yes/no needs a handful of
#: tokens, and stopping at the first newline cuts off explanations.
_YES_NO = {"temperature": 0, "num_predict": 5, "stop": ["\n"]}
#: What follows a JSON verdict's value, a space before it or not (the tests' tiny Gemma-based
#: model writes ``"yes" }``): the reply ends there. The schema names one key, and before its
#: value a model writes only ``{"score":`` with spaces; a line break between the key and its
#: colon, which the grammar would allow and no model measured writes, would cut the key (the
#: reply is then unreadable: asked again, then kept). The 1.5B model writes
#: ``{\n  "score": "yes"\n}``; its last two tokens decide nothing (0.13 s of a 0.67 s grade
#: whose prompt the server had read on 2 cores).
VERDICT_END = ['"\n', '"}', '",', '" }', '" ,']
_VERDICT = {"temperature": 0, "num_predict": 24, "stop": VERDICT_END}
_OPTIONS: dict[Purpose, dict] = {
    "route_calculator": _YES_NO,
    "route_image": _YES_NO,
    "grade": _VERDICT,
    "rewrite": {"temperature": 0, "num_predict": 160},
    "extract": {"temperature": 0, "num_predict": 160},
    "generate": {"temperature": 0},
    "check": _VERDICT,
    "vision": {"temperature": 0},
}

#: Alternatives returned per token of the answer check's reply. Where the verdict starts, a
#: word not among the 20 most likely tokens has a negligible probability: counted as 0.
CHECK_TOP_LOGPROBS = 20

#: Purposes whose tokens are internal and must not appear in a "messages" stream.
_INTERNAL: set[Purpose] = {
    "route_calculator",
    "route_image",
    "grade",
    "rewrite",
    "extract",
    "check",
}

#: Purposes whose replies are capped short. A model that cannot switch reasoning off
#: (only effort levels, e.g. gpt-oss) spends tokens on reasoning first, and Ollama counts
#: them against ``num_predict``: these purposes get this many more, and no stop sequence.
_CAPPED: set[Purpose] = _INTERNAL
REASONING_BUDGET = 1024

#: Effort levels from least to most reasoning (Ollama's ``think`` values for gpt-oss).
EFFORT_LEVELS = ("low", "medium", "high")

#: The first Ollama release that takes a JSON schema as ``format``; older ones take "json".
JSON_SCHEMA_SINCE = (0, 5, 0)

#: The first Ollama release that returns token log-probabilities (``logprobs``); older ones
#: ignore the request field, and the answer check then takes its verdict as it is.
LOGPROBS_SINCE = (0, 12, 11)

#: Ollama runs llama.cpp's ``llama-server`` since this version, with its host-memory prompt
#: cache on: the prompts a slot lets go stay in memory, and a new prompt restores the one it
#: shares most with. Each question then finds the grader's and the answer's instructions read
#: by the question before; earlier versions keep only the prompt read last.
KEEPS_EARLIER_PROMPTS_SINCE = (0, 30, 0)

Think = bool | str | None
"""Ollama's ``think`` request field: off/on, an effort level, or ``None`` (not sent)."""

#: Distinct model settings kept per process; a run can vary settings, so the caches are
#: bounded (least recently used dropped first).
CACHE_SIZE = 32

MODELS_KEY = "models"
"""Key of the provider in ``config["configurable"]``."""


def model_for(context: Context, purpose: Purpose) -> str:
    """The Ollama model that serves ``purpose``."""
    return context.effective_vision_model if purpose == "vision" else context.chat_model


@dataclass(frozen=True)
class ModelInfo:
    """What Ollama's ``/api/show`` says about a model, as far as this project needs it."""

    capabilities: frozenset[str]
    """E.g. ``completion``, ``embedding``, ``vision``, ``thinking``."""
    think_values: tuple[bool | str, ...] = ()
    """The ``think`` values the model accepts (``thinking.values``); empty when not reported."""


def choose_think(info: ModelInfo, *, reasoning: bool) -> Think:
    """The ``think`` value to send: reasoning off unless wanted, the least effort if forced.

    ``None`` (the field is not sent) for a model without the ``thinking`` capability: older
    servers and non-reasoning models may refuse the field. A model that only offers effort
    levels cannot switch reasoning off, so it gets its lowest level; its reasoning then
    arrives in ``message.thinking``, apart from the answer.
    """
    if "thinking" not in info.capabilities:
        return None
    levels = [v for v in info.think_values if isinstance(v, str)]
    if levels and False not in info.think_values:
        rank = {level: i for i, level in enumerate(EFFORT_LEVELS)}
        return min(levels, key=lambda v: rank.get(v, len(rank)))
    return reasoning


def options_for(purpose: Purpose, think: Think, json_schema: bool = True) -> dict[str, Any]:
    """The request options of ``purpose`` given the ``think`` value and the server's format."""
    options = dict(_OPTIONS[purpose])
    if purpose in ("grade", "check"):
        # Older servers reject a schema; plain JSON mode still yields {"score": ...}
        # often enough, and the grade parser is lenient about the rest.
        options["format"] = GRADE_SCHEMA if json_schema else "json"
        if not json_schema:  # JSON mode lets a model write other keys first: read it whole
            options.pop("stop", None)
    if purpose == "check":
        # How sure the model is of its "yes" decides the check (nodes/generate.py). Servers
        # before Ollama 0.12.11 ignore the fields and the verdict alone counts.
        options.update(logprobs=True, top_logprobs=CHECK_TOP_LOGPROBS)
    if isinstance(think, str) and purpose in _CAPPED:
        options["num_predict"] = options.get("num_predict", 0) + REASONING_BUDGET
        options.pop("stop", None)
    return options


def reply_limit(purpose: Purpose) -> int | None:
    """The ``num_predict`` cap of ``purpose``'s replies (``None``: uncapped)."""
    return _OPTIONS[purpose].get("num_predict")


def warm_messages(system: str) -> list[dict[str, str]]:
    """What a warm-up sends: ``system`` and an empty user turn.

    A chat template renders the system prompt first, then the user turn's opening: every
    prompt that begins with the same system prompt shares all of it with this one.
    """
    return [{"role": "system", "content": system}, {"role": "user", "content": ""}]


def parse_version(text: str) -> tuple[int, ...] | None:
    """``"0.12.3-rc1"`` → ``(0, 12, 3)``; ``None`` when it does not start with numbers."""
    match = re.match(r"\s*v?(\d+(?:\.\d+)*)", text or "")
    return tuple(int(part) for part in match.group(1).split(".")) if match else None


def supports_json_schema(version: tuple[int, ...] | None) -> bool:
    """Whether a server of ``version`` takes a JSON schema as ``format`` (unknown: assume so)."""
    return version is None or version >= JSON_SCHEMA_SINCE


def supports_logprobs(version: tuple[int, ...] | None) -> bool:
    """Whether a server of ``version`` returns token log-probabilities (unknown: assume so)."""
    return version is None or version >= LOGPROBS_SINCE


def keeps_earlier_prompts(version: tuple[int, ...] | None) -> bool:
    """Whether a server of ``version`` keeps prompts besides its last (unknown: assume so)."""
    return version is None or version >= KEEPS_EARLIER_PROMPTS_SINCE


class ModelProvider:
    """Builds chat and embedding models for a run; subclass to serve other backends."""

    def chat(self, context: Context, purpose: Purpose) -> Runnable:
        """A chat model configured for ``purpose``."""
        raise NotImplementedError

    def embeddings(self, context: Context) -> Embeddings:
        """The embedding model named in ``context`` (decided: see ``with_embedding_model``)."""
        raise NotImplementedError

    def capabilities(self, context: Context, model: str) -> frozenset[str]:
        """What ``model`` can do (Ollama's ``/api/show`` ``capabilities``, e.g. ``vision``)."""
        raise NotImplementedError

    def info(self, context: Context, model: str) -> ModelInfo:
        """Capabilities and ``think`` values of ``model`` (from :meth:`capabilities` here)."""
        capabilities = self.capabilities(context, model)
        return ModelInfo(capabilities, (True, False) if "thinking" in capabilities else ())

    def warm(self, context: Context, purpose: Purpose, messages: list[dict[str, str]]) -> None:
        """Have the server read ``messages``, how the next ``purpose`` call begins, now.

        Nothing here: a provider without a prompt cache has nothing to read ahead.
        """

    def think(self, context: Context, purpose: Purpose) -> Think:
        """The ``think`` value a call for ``purpose`` sends (see :func:`choose_think`)."""
        wanted = purpose == "generate" and context.show_thinking
        return choose_think(self.info(context, model_for(context, purpose)), reasoning=wanted)


class OllamaModels(ModelProvider):
    """Models served by Ollama, created once per setting and reused across runs."""

    def chat(self, context: Context, purpose: Purpose) -> Runnable:
        """A ``ChatOllama`` with the options of ``purpose`` (cached).

        The model's ``/api/show`` (does it reason?) and the server's version (does it take
        a JSON schema?) are asked once per process and decide ``think`` and ``format``.
        """
        version = self.server_version(context)
        return _ollama_chat(
            purpose,
            context.ollama_base_url,
            model_for(context, purpose),
            context.num_ctx,
            context.request_timeout,
            self.think(context, purpose),
            supports_json_schema(version),
            keep_alive_seconds(context.keep_alive),
        )

    def warm(self, context: Context, purpose: Purpose, messages: list[dict[str, str]]) -> None:
        """Ask Ollama to read ``messages`` and write one token.

        ``num_ctx`` is the ``purpose`` call's own (another would make Ollama load the model
        again), and so is ``keep_alive`` (how long it stays loaded after this request).
        """
        body: dict[str, Any] = {
            "model": model_for(context, purpose),
            "messages": messages,
            "stream": False,
            "options": {"num_ctx": context.num_ctx, "num_predict": 1},
        }
        think = self.think(context, purpose)
        if think is not None:
            body["think"] = think
        keep_alive = keep_alive_seconds(context.keep_alive)
        if keep_alive is not None:
            body["keep_alive"] = keep_alive
        OllamaClient(context.ollama_base_url, context.request_timeout).post("/api/chat", body)

    def embeddings(self, context: Context) -> Embeddings:
        """An ``OllamaEmbeddings`` for the context's embedding model (cached).

        The model must be decided: an empty one means "the collection's", which only the
        index knows (``graph.index.vectorstore.with_embedding_model`` decides it). Guessing
        a default here would embed questions with another model than the collection's.
        """
        if not context.embedding_model:
            raise ConfigError(
                "no embedding model decided: pass the context through "
                "graph.index.vectorstore.with_embedding_model first"
            )
        return _ollama_embeddings(
            context.ollama_base_url,
            context.embedding_model,
            context.request_timeout,
            keep_alive_seconds(context.keep_alive),
        )

    def capabilities(self, context: Context, model: str) -> frozenset[str]:
        """Ask Ollama's ``/api/show`` once per model and remember the answer."""
        return self.info(context, model).capabilities

    def info(self, context: Context, model: str) -> ModelInfo:
        """Capabilities and ``think`` values from ``/api/show`` (asked once per model)."""
        return _ollama_show(context.ollama_base_url, model, context.request_timeout)

    def server_version(self, context: Context) -> tuple[int, ...] | None:
        """The server's ``/api/version`` (asked once per server)."""
        return _ollama_version(context.ollama_base_url, context.request_timeout)


@functools.lru_cache(maxsize=CACHE_SIZE)
def _ollama_chat(
    purpose: Purpose,
    base_url: str,
    model: str,
    num_ctx: int,
    timeout: float,
    think: Think,
    json_schema: bool,
    keep_alive: int | None,
) -> BaseChatModel:
    from langchain_ollama import ChatOllama

    return ChatOllama(
        model=model,
        base_url=base_url,
        num_ctx=num_ctx,
        client_kwargs=client_options(timeout),
        # The nodes call the model synchronously: that client's calls can be aborted.
        sync_client_kwargs=abortable_client_options(),
        # langchain-ollama sends `reasoning` as Ollama's `think`; when it is on (or a
        # level) the reasoning arrives in additional_kwargs["reasoning_content"].
        reasoning=think,
        keep_alive=keep_alive,
        **options_for(purpose, think, json_schema),
    )


@functools.lru_cache(maxsize=CACHE_SIZE)
def _ollama_embeddings(
    base_url: str, model: str, timeout: float, keep_alive: int | None = None
) -> Embeddings:
    from langchain_ollama import OllamaEmbeddings

    return OllamaEmbeddings(
        model=model,
        base_url=base_url,
        client_kwargs=client_options(timeout),
        keep_alive=keep_alive,
    )


@functools.lru_cache(maxsize=CACHE_SIZE)
def _ollama_show(base_url: str, model: str, timeout: float) -> ModelInfo:
    # A failure raises and is not cached: the next question asks again.
    return model_info(OllamaClient(base_url, timeout).post("/api/show", {"model": model}))


def model_info(shown: dict) -> ModelInfo:
    """Read ``/api/show``'s answer: ``capabilities``, and ``thinking.values`` if present."""
    thinking = shown.get("thinking")
    values = thinking.get("values") if isinstance(thinking, dict) else None
    return ModelInfo(
        frozenset(shown.get("capabilities") or []),
        tuple(v for v in values or [] if isinstance(v, (bool, str))),
    )


@functools.lru_cache(maxsize=CACHE_SIZE)
def _ollama_version(base_url: str, timeout: float) -> tuple[int, ...] | None:
    try:
        answer = OllamaClient(base_url, timeout).get("/api/version")
    except OllamaHTTPError:
        return None  # a proxy without /api/version: assume a current server
    return parse_version(str(answer.get("version", "")))


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
