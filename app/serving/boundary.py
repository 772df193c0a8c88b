"""What one served request may ask of a run, and store, checked before anything runs.

Every way the API starts or shapes a run meets the same checks: a run (new, on a thread,
in a batch, through ``/mcp``), an assistant's stored config and context. What the product
does not use is closed: the store, crons, runs that pause (``interrupt_*``), webhooks
(unless ``RAG_WEBHOOKS``).
What a request may store is closed, not listed: a run's input is the graph's input schema
(``question`` and ``images``, the question bounded), ``config.configurable`` and
``checkpoint`` name a thread and a checkpoint only, a state update writes bounded text into
the state's own fields (never images), ``metadata`` is bounded. A refusal names the reason
in one line. The served graph's own context type (``ServedContext``) enforces the same
bounds again, for whatever reaches it another way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any

from app.serving.context import SERVER_ONLY, ServedContext, check_served_limits
from app.serving.policy import serving_policy
from graph.errors import ConfigError
from graph.images import REFERENCE, input_images
from graph.models import MODELS_KEY
from graph.state import InputState, State

_SETTINGS = frozenset(f.name for f in fields(ServedContext))
#: What a request may put in ``config.configurable`` or ``checkpoint``: which thread and
#: which checkpoint. Settings go in ``context``; LangGraph's own ``__pregel_*`` keys and
#: anything else stay out.
RUN_KEYS = ("thread_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map")
#: The graph's input schema: all a served run's ``input`` may hold.
INPUT_FIELDS = tuple(sorted(InputState.__required_keys__ | InputState.__optional_keys__))
#: The state's fields: all a state update may write.
STATE_FIELDS = frozenset(State.__required_keys__ | State.__optional_keys__)
#: Keys the API adds to a run's ``config.configurable`` itself (with ids and headers);
#: one of them present means the request's own part is the copy in ``context``.
_ASSEMBLED = frozenset({"__after_seconds__", "langgraph_request_id", "langgraph_auth_user_id"})
#: LangGraph's own mark of a run started over its v2 streaming (``/threads/{id}/commands``
#: and its WebSocket's ``run.start``): set by the API, in the configurable it assembles.
V2_STREAMING = "__event_streaming_v2"
#: The settings that name an Ollama model.
MODEL_SETTINGS = ("chat_model", "vision_model", "embedding_model")
#: The refusal of every store route: the graph never reads or writes LangGraph's store.
STORE_CLOSED = "the store is not served here: this graph keeps nothing in it"
#: The refusal of a new or changed cron.
CRONS_OFF = "crons are off on this server: a run starts when it is asked for, not on a schedule"
#: The refusal of a run naming a webhook (``RAG_WEBHOOKS`` off).
WEBHOOKS_OFF = "webhooks are off on this server (RAG_WEBHOOKS)"
#: What would make a served run stop half-way and wait to be resumed.
INTERRUPTS = ("interrupt_before", "interrupt_after")


@dataclass
class Refused(Exception):
    """A request the server will not run; ``status`` is the HTTP status to answer with."""

    status: int
    message: str

    def __str__(self) -> str:
        return self.message


def _names(keys: Any) -> str:
    """Field names for a one-line message: a few, each cut short (a name can be megabytes)."""
    shown = [k if len(k) <= 40 else k[:40] + "…" for k in sorted(str(k) for k in keys)]
    return ", ".join(shown[:5]) + (f" and {len(shown) - 5} more" if len(shown) > 5 else "")


def _only(values: dict[str, Any], allowed: Any, reason: str) -> None:
    """Refuse keys of ``values`` outside ``allowed``; ``reason`` names them at ``{names}``."""
    other = set(values) - set(allowed)
    if other:
        raise Refused(422, reason.format(names=_names(other)))


def _within(what: str, size: int, limit: int, setting: str, unit: str = "bytes as JSON") -> None:
    if size > limit:
        raise Refused(
            422, f"{what} is {size:,} {unit}; this server takes at most {limit:,} ({setting})"
        )


def _refuse_server_only(keys: set[str]) -> None:
    server_only = sorted(keys & set(SERVER_ONLY))
    if server_only:
        raise Refused(
            403,
            f"{', '.join(server_only)} cannot be set by a request: the server's own "
            "setting applies (set it where the server runs, in .env)",
        )
    if MODELS_KEY in keys:
        raise Refused(403, f"{MODELS_KEY!r} cannot be set by a request")


def check_configurable(values: Any, where: str = "config.configurable") -> None:
    """A request's ``config.configurable`` (or ``checkpoint``) names a thread and checkpoint.

    Nothing else: not the server's settings (403), not a run's settings (they go in
    ``context``), not LangGraph's internals (``__pregel_runtime`` breaks the run inside
    LangGraph).
    """
    if values is None:
        return
    if not isinstance(values, dict):
        raise Refused(422, f"{where} must be an object")
    _refuse_server_only(set(values))
    _only(
        values,
        RUN_KEYS,
        f"{where} may name only the thread and checkpoint ({', '.join(RUN_KEYS)}), "
        "not {names}; a run's settings go in 'context'",
    )


def check_context(context: Any) -> None:
    """Refuse server-only, unknown or out-of-bounds settings in a request's context."""
    if context is None:
        return
    if not isinstance(context, dict):
        raise Refused(422, "context must be an object")
    _refuse_server_only(set(context))
    _only(context, _SETTINGS, "unknown setting(s) in context: {names}")
    try:
        check_served_limits(ServedContext(**context), MODEL_SETTINGS)
    except (ValueError, TypeError) as exc:
        raise Refused(422, str(exc)) from None


def check_request_settings(context: Any, configurable: Any = None) -> None:
    """Refuse a request's context and configurable that reach past a run's settings."""
    check_configurable(configurable)
    check_context(context)


def _request_parts(kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """The ``config.configurable`` and ``context`` the request itself sent.

    The run hook sees the run as the API assembled it: the API copies a request's
    ``config.configurable`` into ``context`` when it sent no context (it marks the other
    case with ``__context_provided__``), then adds its own keys (ids, headers, the user).
    A run as sent (``/mcp``, ``/v1``) has none of them. A run started over the v2 streaming
    carries the API's own ``V2_STREAMING`` mark in the copy too: it is the API's, not the
    request's (a request naming it in its own configurable is refused: the ``Guard``).
    """
    configurable = (kwargs.get("config") or {}).get("configurable")
    if not isinstance(configurable, dict) or not set(configurable) & _ASSEMBLED:
        return configurable, kwargs.get("context")
    if configurable.get("__context_provided__"):
        return None, kwargs.get("context")
    own = kwargs.get("context") or {}
    if isinstance(own, dict) and configurable.get(V2_STREAMING) is own.get(V2_STREAMING) is True:
        own = {key: value for key, value in own.items() if key != V2_STREAMING}
    return own, None


def check_question(question: Any, what: str = "the question") -> None:
    """A question is text, at most ``RAG_MAX_QUESTION_CHARS`` long."""
    if not isinstance(question, str):
        raise Refused(422, f"{what} must be text")
    limit = serving_policy().max_question_chars
    _within(what, len(question), limit, "RAG_MAX_QUESTION_CHARS", "characters")


def check_input(run_input: Any) -> None:
    """A run's input is the graph's input schema: a bounded question, images, nothing else."""
    if run_input is None:  # a run that continues a thread from its state
        return
    if not isinstance(run_input, dict):
        raise Refused(422, 'input must be an object: {"question": "..."}')
    _only(
        run_input,
        INPUT_FIELDS,
        "input field(s) {names} are not taken by this graph: its input is "
        f"{' and '.join(INPUT_FIELDS)} (images only in 'images', as base64)",
    )
    if "question" in run_input:
        check_question(run_input["question"])


def json_size(value: Any) -> int:
    """Bytes of ``value`` as compact JSON (what the server stores)."""
    return len(json.dumps(value, separators=(",", ":"), default=str).encode())


def check_metadata(metadata: Any) -> None:
    """``metadata`` labels a run, thread, assistant or cron: at most ``RAG_MAX_METADATA_BYTES``."""
    if metadata is None:
        return
    limit = serving_policy().max_metadata_bytes
    _within("metadata", json_size(metadata), limit, "RAG_MAX_METADATA_BYTES")


def _check_message_text(message: Any) -> None:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(message, list | tuple) and len(message) == 2:
        content = message[1]  # the ("human", content) form
    if isinstance(content, list):
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else "text"
            if kind != "text":
                raise Refused(
                    422,
                    f"messages written into a thread hold text only, not {str(kind)[:40]!r} "
                    "parts: images go with a run's input ('images')",
                )


def check_state_values(values: Any) -> None:
    """One state update's values: the state's own fields, text only, bounded; no images.

    A state update is kept in the thread's checkpoint history for good; images reach a
    thread only through a run's input, which keeps them out of it.
    """
    if values is None:
        return
    if not isinstance(values, dict):
        raise Refused(422, "state values must be an object")
    _only(values, STATE_FIELDS, "field(s) {names} are not in this graph's state")
    if values.get("images"):
        raise Refused(
            422,
            "images are not written into a thread's state: send them with a run's input "
            "('images'), which keeps their bytes out of the thread",
        )
    attachments = values.get("attachments") or []
    if not isinstance(attachments, list) or any(
        not isinstance(a, str) or not a.startswith(REFERENCE) or len(a) > 64 for a in attachments
    ):
        raise Refused(422, "attachments hold the server's own image references only")
    if "question" in values:
        check_question(values["question"])
    messages = values.get("messages")
    for message in messages if isinstance(messages, list) else [messages]:
        _check_message_text(message)
    limit = serving_policy().max_state_update_bytes
    _within("a state update", json_size(values), limit, "RAG_MAX_STATE_UPDATE_BYTES")


def check_state_update(body: dict[str, Any]) -> None:
    """``POST /threads/{id}/state``: which checkpoint, and values the state may hold."""
    check_configurable(body.get("checkpoint"), "checkpoint")
    values = body.get("values")
    for update in values if isinstance(values, list) else [values]:
        check_state_values(update)


def check_supersteps(supersteps: Any) -> None:
    """``POST /threads`` with ``supersteps``: each update as a state update; no commands."""
    if supersteps is None:
        return
    if not isinstance(supersteps, list):
        raise Refused(422, "supersteps must be a list")
    for superstep in supersteps:
        updates = superstep.get("updates") if isinstance(superstep, dict) else None
        for update in updates if isinstance(updates, list) else []:
            if not isinstance(update, dict):
                raise Refused(422, "each update must be an object")
            if update.get("command") is not None:
                raise Refused(403, _NO_COMMAND)
            check_state_values(update.get("values"))


_NO_COMMAND = (
    "a served run starts from its input: 'command' (goto, update, resume) is not "
    "accepted (this graph never waits for input to resume)"
)


def check_run(kwargs: dict[str, Any]) -> None:
    """Refuse a run request that could steer the server; replace its images by references.

    ``kwargs`` is the run as the API received it (``input``, ``command``, ``config``,
    ``context``, ``webhook``, ``interrupt_*``); its input must be the graph's input schema,
    it never pauses (no ``interrupt_*``), and its ``input.images`` are checked and moved out
    of the request, so the stored run record and the thread hold only references.
    """
    configurable, context = _request_parts(kwargs)
    check_request_settings(context, configurable)
    if kwargs.get("command") is not None:
        raise Refused(403, _NO_COMMAND)
    for field in INTERRUPTS:
        if kwargs.get(field):
            raise Refused(
                403,
                f"{field!r} is not accepted: a served run runs to its answer (this graph "
                "never waits for input to resume)",
            )
    if kwargs.get("webhook") and not serving_policy().webhooks:
        raise Refused(403, WEBHOOKS_OFF)
    run_input = kwargs.get("input")
    check_input(run_input)
    if isinstance(run_input, dict) and run_input.get("images"):
        try:
            run_input["images"] = input_images(run_input["images"], allow_paths=False)
        except ConfigError as exc:
            raise Refused(422, str(exc)) from None


def check_assistant(value: dict[str, Any]) -> None:
    """Refuse an assistant whose stored config or context would steer the server."""
    config = value.get("config") or {}
    check_request_settings(value.get("context"), config.get("configurable"))
    check_metadata(value.get("metadata"))
