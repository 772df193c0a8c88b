"""The served graph's context: what a request may set, and nothing else.

A served run's ``context`` comes from whoever can reach the server. Its schema is
``Context`` without the server-only fields (where the server connects, where it stores
the index, how long Ollama keeps models): a request cannot name them, so no way of starting
a run (new run, resumed thread, ``Command``, checkpoint replay, assistant, cron, ``/mcp``)
can set them. Nodes still read ``context.ollama_base_url`` and the like: here those are
properties answering with the server's own settings, read from its environment.
"""

from __future__ import annotations

import functools
import typing
from dataclasses import field, fields, make_dataclass
from typing import Any

from app.serving.policy import serving_policy
from graph.context import Context, check_settings, default_chroma_dir

#: The settings a request can never set.
SERVER_ONLY: tuple[str, ...] = tuple(f.name for f in fields(Context) if f.metadata["server_only"])
#: The longest text a served run's setting may hold (a trigger, a collection name, each tag
#: or folder): a served run's context is kept whole in its run record and checkpoints.
MAX_SETTING_CHARS = 512
#: The most items a served run's list setting (``tags``, ``folders``) may hold.
MAX_SETTING_ITEMS = 64


@functools.cache
def server_settings() -> Context:
    """The server's own settings: defaults and its environment (``.env``), read once."""
    return Context()


class _ServerSide:
    """The server-only settings of a served run: always the server's own."""

    #: Image paths are never read for a served run (see ``graph.images``).
    trusted = False

    @property
    def ollama_base_url(self) -> str:
        """Where the server's Ollama is."""
        return server_settings().ollama_base_url

    @property
    def chroma_persist_directory(self) -> str:
        """The server's embedded index folder."""
        return server_settings().chroma_persist_directory

    @property
    def chroma_server_url(self) -> str:
        """The server's Chroma server, if any."""
        return server_settings().chroma_server_url

    @property
    def keep_alive(self) -> str:
        """How long the server's Ollama keeps models loaded."""
        return server_settings().keep_alive

    @property
    def read_ahead(self) -> bool:
        """Whether the server has its Ollama read ahead for the next question after an answer."""
        return server_settings().read_ahead

    @property
    def effective_chroma_dir(self) -> str:
        """The embedded index folder actually used."""
        return self.chroma_persist_directory or default_chroma_dir()

    @property
    def effective_vision_model(self) -> str:
        """The model asked about images."""
        vision = getattr(self, "vision_model", "")
        return vision or getattr(self, "chat_model", "")

    def __post_init__(self) -> None:
        check_settings(self)
        check_served_limits(self)


def served_models() -> set[str]:
    """The Ollama models a served run may name: the server's own and RAG_SERVED_MODELS."""
    server = server_settings()
    return {
        server.chat_model,
        server.effective_vision_model,
        server.embedding_model,
        *serving_policy().served_models,
    } - {""}


def check_served_limits(
    context: Any, names: tuple[str, ...] = ("chat_model", "vision_model")
) -> None:
    """A served run uses the server's models only, a bounded context window, bounded text.

    A page that reaches the server must not make Ollama load any model it has pulled, at any
    context size (memory and minutes of the user's machine). The embedding model is checked
    where a request names it (``app.serving.boundary``): once the run has started it is the
    collection's own. A run's context is kept whole in its run record and checkpoints: each
    text setting is at most ``MAX_SETTING_CHARS``, each list at most ``MAX_SETTING_ITEMS``.
    """
    _check_text_sizes(context)
    allowed = served_models()
    for name in names:
        value = getattr(context, name)
        if value and value not in allowed:
            raise ValueError(
                f"{name} {value!r} is not one of this server's models "
                f"({', '.join(sorted(allowed))}; more with RAG_SERVED_MODELS)"
            )
    ceiling = serving_policy().max_num_ctx or server_settings().num_ctx
    if context.num_ctx > ceiling:
        raise ValueError(
            f"num_ctx {context.num_ctx} is above this server's ceiling {ceiling} (RAG_MAX_NUM_CTX)"
        )


def _check_text_sizes(context: Any) -> None:
    """Each text setting at most ``MAX_SETTING_CHARS``, each list ``MAX_SETTING_ITEMS``."""
    for f in fields(context):
        value = getattr(context, f.name, None)
        if isinstance(value, str) and len(value) > MAX_SETTING_CHARS:
            raise ValueError(
                f"{f.name} must be at most {MAX_SETTING_CHARS} characters, got {len(value):,}"
            )
        if isinstance(value, list):
            if len(value) > MAX_SETTING_ITEMS:
                raise ValueError(
                    f"{f.name} must hold at most {MAX_SETTING_ITEMS} items, got {len(value):,}"
                )
            longest = max((len(v) for v in value if isinstance(v, str)), default=0)
            if longest > MAX_SETTING_CHARS:
                raise ValueError(
                    f"each of {f.name} must be at most {MAX_SETTING_CHARS} characters, "
                    f"got {longest:,}"
                )


def _served_context() -> type:
    hints = typing.get_type_hints(Context)
    request_fields: list[Any] = [
        (
            f.name,
            hints[f.name],
            field(default_factory=f.default_factory, metadata=f.metadata),
        )
        for f in fields(Context)
        if f.name not in SERVER_ONLY
    ]
    served = make_dataclass("ServedContext", request_fields, bases=(_ServerSide,), kw_only=True)
    served.__module__ = __name__
    served.__doc__ = "Settings a served run may choose; the server's own settings are fixed."
    return served


ServedContext = _served_context()
"""``Context`` less its server-only fields, which answer with the server's settings."""
