"""What one served request may ask of a run, checked before anything runs.

Every way the API starts or shapes a run meets the same checks: a run (new, on a thread,
in a batch, through ``/mcp``), an assistant's stored config and context, a cron's payload.
A refusal names the reason in one line. The served graph's own context type
(``ServedContext``) enforces the same bounds again, for whatever reaches it another way.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from app.serving.context import SERVER_ONLY, ServedContext, check_served_limits
from graph.errors import ConfigError
from graph.images import input_images
from graph.models import MODELS_KEY

#: ``config.configurable`` keys the server itself puts there (not a request's settings).
_SERVER_KEYS = frozenset(
    {
        "thread_id",
        "checkpoint_id",
        "checkpoint_ns",
        "checkpoint_map",
        "run_id",
        "assistant_id",
        "graph_id",
        "user_id",
        "langgraph_auth_user",
        "langgraph_auth_user_id",
        "langgraph_auth_permissions",
        "langgraph_request_id",
        "__request_start_time_ms__",
        "__after_seconds__",
        "__context_provided__",
        "langsmith-trace",
        "baggage",
    }
)
_SETTINGS = frozenset(f.name for f in fields(ServedContext))
#: The settings that name an Ollama model.
MODEL_SETTINGS = ("chat_model", "vision_model", "embedding_model")


@dataclass
class Refused(Exception):
    """A request the server will not run; ``status`` is the HTTP status to answer with."""

    status: int
    message: str

    def __str__(self) -> str:
        return self.message


def check_request_settings(context: Any, configurable: Any = None) -> None:
    """Refuse server-only, unknown or out-of-bounds settings in a context or configurable."""
    for where, values in (("context", context), ("config.configurable", configurable)):
        if values is None:
            continue
        if not isinstance(values, dict):
            raise Refused(422, f"{where} must be an object")
        keys = set(values) - (_SERVER_KEYS if where != "context" else set())
        server_only = sorted(keys & set(SERVER_ONLY))
        if server_only:
            raise Refused(
                403,
                f"{', '.join(server_only)} cannot be set by a request: the server's own "
                "setting applies (set it where the server runs, in .env)",
            )
        if MODELS_KEY in keys:
            raise Refused(403, f"{MODELS_KEY!r} cannot be set by a request")
        unknown = sorted(k for k in keys - _SETTINGS if not k.startswith("__"))
        if where == "context" and unknown:
            raise Refused(422, f"unknown setting(s) in context: {', '.join(unknown)}")
        settings = {k: v for k, v in values.items() if k in _SETTINGS}
        try:
            check_served_limits(ServedContext(**settings), MODEL_SETTINGS)
        except (ValueError, TypeError) as exc:
            raise Refused(422, str(exc)) from None


def check_run(kwargs: dict[str, Any]) -> None:
    """Refuse a run request that could steer the server; replace its images by references.

    ``kwargs`` is the run as the API received it (``input``, ``command``, ``config``,
    ``context``, ``webhook``); its ``input.images`` are checked and moved out of the
    request, so the stored run record and the thread hold only references.
    """
    from app.serving.policy import serving_policy

    config = kwargs.get("config") or {}
    check_request_settings(kwargs.get("context"), config.get("configurable"))
    if kwargs.get("command") is not None:
        raise Refused(
            403,
            "a served run starts from its input: 'command' (goto, update, resume) is not "
            "accepted (this graph never waits for input to resume)",
        )
    if kwargs.get("webhook") and not serving_policy().webhooks:
        raise Refused(403, "webhooks are off on this server (RAG_WEBHOOKS)")
    run_input = kwargs.get("input")
    if isinstance(run_input, dict) and run_input.get("images"):
        try:
            run_input["images"] = input_images(run_input["images"], allow_paths=False)
        except ConfigError as exc:
            raise Refused(422, str(exc)) from None


def check_assistant(value: dict[str, Any]) -> None:
    """Refuse an assistant whose stored config or context would steer the server."""
    config = value.get("config") or {}
    check_request_settings(value.get("context"), config.get("configurable"))


def check_cron(value: dict[str, Any]) -> None:
    """A cron's payload is a run: the same checks."""
    payload = value.get("payload") or {}
    check_run(payload if isinstance(payload, dict) else {})
