"""What one served request may ask of a run, and store, checked before anything runs.

Every way the API starts or shapes a run meets the same checks: a run (new, on a thread,
in a batch, through ``/mcp``), an assistant's stored config and context. What the product
does not use is closed: the store, crons, runs that pause (``interrupt_*``), webhooks
(unless ``RAG_WEBHOOKS``).
What a request may store is closed, not listed: a run, a batch's run, an assistant, a
thread, a thread's copy and a state update take the fields this server uses, each bounded,
and anything else is refused naming the field (run records, checkpoints and
``.langgraph_api/`` keep what a request sends for good). A run's input is the graph's input
schema (``question`` and ``images``, the question bounded), ``config`` holds
``configurable`` (which names a thread and a checkpoint only), bounded ``tags``,
``run_name``, ``metadata`` and ``recursion_limit``, a state update writes bounded text into
the state's own fields (never images), every ``metadata`` is bounded. A refusal names the
reason in one line. The served graph's own context type (``ServedContext``) enforces the
same bounds again, for whatever reaches it another way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any
from uuid import UUID

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

#: The longest label a request may store: a tag, a run's or assistant's name, a node's name,
#: a thread or checkpoint id, a stream mode, a LangSmith project.
MAX_LABEL_CHARS = 200
#: The most tags in a ``config.tags``.
MAX_TAGS = 32
#: The highest ``config.recursion_limit`` (LangGraph's default is about 10,000; the graph's
#: loops have their own caps).
MAX_RECURSION_LIMIT = 10_000
#: The longest assistant ``description`` (``/mcp`` lists it as the tool's description).
MAX_DESCRIPTION_CHARS = 2_000
#: The longest ``webhook`` URL (with ``RAG_WEBHOOKS`` on).
MAX_URL_CHARS = 2_048
#: The most stream modes one run names, and the most entries in a ``checkpoint_map``.
MAX_MODES = 16

#: What a ``config`` (a run's, an assistant's) may hold: which thread and checkpoint, labels
#: LangGraph keeps with the run and its checkpoints, and the step cap.
CONFIG_FIELDS = ("configurable", "metadata", "recursion_limit", "run_name", "tags")
#: The fields of a run request (``/runs``, ``/runs/wait``, ``/runs/stream``, a thread's, each
#: of a batch's): what the chat page, ``/mcp``, LangGraph's SDK and Studio send. ``command``,
#: ``interrupt_*``, ``feedback_keys`` and ``webhook`` are listed to be refused by name.
RUN_FIELDS = frozenset(
    {
        "after_seconds",
        "assistant_id",
        "checkpoint",
        "checkpoint_during",
        "checkpoint_id",
        "command",
        "config",
        "context",
        "durability",
        "feedback_keys",
        "if_not_exists",
        "input",
        "interrupt_after",
        "interrupt_before",
        "langsmith_tracer",
        "metadata",
        "multitask_strategy",
        "on_completion",
        "on_disconnect",
        "stream_mode",
        "stream_resumable",
        "stream_subgraphs",
        "strict_resume",
        "webhook",
    }
)
#: A run's fields that name one of a few choices (the API reads some of them unchecked).
_RUN_CHOICES = {
    "durability": ("sync", "async", "exit"),
    "if_not_exists": ("create", "reject"),
    "multitask_strategy": ("reject", "interrupt", "rollback", "enqueue"),
    "on_completion": ("delete", "keep"),
    "on_disconnect": ("cancel", "continue"),
}
#: A run's fields that are true or false.
_RUN_FLAGS = ("checkpoint_during", "stream_resumable", "stream_subgraphs", "strict_resume")
#: ``langsmith_tracer``: a LangSmith experiment's project and example, and where the API
#: copies them in the configurable it assembles.
_TRACER = {"__langsmith_example_id__": "example_id", "__langsmith_project__": "project_name"}
#: An assistant's fields (``POST /assistants``); an update takes them less the first two.
ASSISTANT_FIELDS = frozenset(
    (
        "assistant_id",
        "config",
        "context",
        "description",
        "graph_id",
        "if_exists",
        "metadata",
        "name",
    )
)
ASSISTANT_UPDATE_FIELDS = ASSISTANT_FIELDS - {"assistant_id", "if_exists"}
#: A thread's fields (``POST /threads``); an update (``PATCH``) takes metadata and ttl.
THREAD_FIELDS = frozenset({"if_exists", "metadata", "supersteps", "thread_id", "ttl"})
THREAD_UPDATE_FIELDS = frozenset({"metadata", "ttl"})
#: A state update's fields (``POST /threads/{id}/state``), and one update of a superstep's.
STATE_UPDATE_FIELDS = frozenset({"as_node", "checkpoint", "checkpoint_id", "values"})
_SUPERSTEP_UPDATE_FIELDS = ("as_node", "command", "values")


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


def _text(what: str, value: Any, limit: int = MAX_LABEL_CHARS) -> None:
    """``value`` is text of at most ``limit`` characters (``None``: not sent)."""
    if value is None or (isinstance(value, str) and len(value) <= limit):
        return
    got = f", got {len(value):,}" if isinstance(value, str) else ""
    raise Refused(422, f"{what} must be text of at most {limit:,} characters{got}")


def _object(what: str, value: Any) -> dict[str, Any]:
    """``value`` is a JSON object (``None``: not sent, an empty one)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Refused(422, f"{what} must be an object")
    return value


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
    for key, value in values.items():
        if key != "checkpoint_map" and not isinstance(value, UUID):
            _text(f"{where}.{key}", value)
    checkpoint_map = values.get("checkpoint_map")
    if checkpoint_map is not None:
        if not isinstance(checkpoint_map, dict) or len(checkpoint_map) > MAX_MODES:
            raise Refused(
                422, f"{where}.checkpoint_map must be an object of at most {MAX_MODES} entries"
            )
        for namespace, checkpoint in checkpoint_map.items():
            _text(f"{where}.checkpoint_map", namespace)
            _text(f"{where}.checkpoint_map", checkpoint)


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


def check_metadata(metadata: Any, what: str = "metadata") -> None:
    """``metadata`` labels a run, thread, assistant or cron: at most ``RAG_MAX_METADATA_BYTES``.

    A ``config.metadata`` too: LangGraph keeps it with the run and in every checkpoint.
    """
    if metadata is None:
        return
    limit = serving_policy().max_metadata_bytes
    _within(what, json_size(metadata), limit, "RAG_MAX_METADATA_BYTES")


def check_config(config: Any) -> None:
    """A run's or assistant's ``config``: ``CONFIG_FIELDS`` only, each bounded.

    Its ``configurable`` is checked apart (``check_configurable``): in the run hook it holds
    the API's own keys beside the request's.
    """
    config = _object("config", config)
    _only(
        config,
        CONFIG_FIELDS,
        f"config may hold only {', '.join(CONFIG_FIELDS)}, not {{names}}; "
        "a run's settings go in 'context'",
    )
    tags = config.get("tags")
    if tags is not None and (
        not isinstance(tags, list)
        or len(tags) > MAX_TAGS
        or not all(isinstance(tag, str) and len(tag) <= MAX_LABEL_CHARS for tag in tags)
    ):
        raise Refused(
            422,
            f"config.tags must be a list of at most {MAX_TAGS} tags, each text of at most "
            f"{MAX_LABEL_CHARS} characters",
        )
    _text("config.run_name", config.get("run_name"))
    check_metadata(config.get("metadata"), "config.metadata")
    limit = config.get("recursion_limit")
    if limit is not None and (
        not isinstance(limit, int)
        or isinstance(limit, bool)
        or not 1 <= limit <= MAX_RECURSION_LIMIT
    ):
        raise Refused(
            422, f"config.recursion_limit must be a whole number from 1 to {MAX_RECURSION_LIMIT}"
        )


def _check_feedback_keys(feedback_keys: Any) -> None:
    if feedback_keys:
        raise Refused(
            422,
            "'feedback_keys' is not accepted: this server asks LangSmith for no feedback URLs",
        )


def _check_tracer(tracer: Any) -> None:
    """``langsmith_tracer``: a LangSmith experiment's ``project_name`` and ``example_id``."""
    if tracer is None:
        return
    fields_ = sorted(_TRACER.values())
    if (
        not isinstance(tracer, dict)
        or set(tracer) - set(fields_)
        or not all(isinstance(v, str) and len(v) <= MAX_LABEL_CHARS for v in tracer.values())
    ):
        raise Refused(
            422,
            f"langsmith_tracer may hold only {' and '.join(fields_)}, each text of at most "
            f"{MAX_LABEL_CHARS} characters",
        )


def check_run_request(body: Any) -> None:
    """A run as sent (``/runs``, ``/runs/wait``, ``/runs/stream``, a thread's): closed, bounded.

    The ``Guard`` checks it before the API reads it; the run hook checks the run as the API
    assembled it again (``check_run``), for runs the ``Guard`` never sees (v2 streaming).
    """
    if not isinstance(body, dict):
        return  # another shape is the API's to refuse (its schema)
    _only(
        body,
        RUN_FIELDS,
        "field(s) {names} are not accepted in a run: it takes its input, context, config, "
        "metadata and LangGraph's thread and stream options",
    )
    check_config(body.get("config"))
    check_metadata(body.get("metadata"))
    _check_feedback_keys(body.get("feedback_keys"))
    _check_tracer(body.get("langsmith_tracer"))
    _text("webhook", body.get("webhook"), MAX_URL_CHARS)
    for name, choices in _RUN_CHOICES.items():
        value = body.get(name)
        if value is not None and (not isinstance(value, str) or value not in choices):
            raise Refused(422, f"{name} must be one of {', '.join(choices)}")
    for name in _RUN_FLAGS:
        if body.get(name) is not None and not isinstance(body[name], bool):
            raise Refused(422, f"{name} must be true or false")
    modes = body.get("stream_mode")
    modes = [modes] if isinstance(modes, str) else modes
    if modes is not None and (
        not isinstance(modes, list)
        or len(modes) > MAX_MODES
        or not all(isinstance(m, str) and len(m) <= MAX_LABEL_CHARS for m in modes)
    ):
        raise Refused(
            422, f"stream_mode must be a stream mode or a list of at most {MAX_MODES} of them"
        )


def check_batch_request(body: Any) -> None:
    """``POST /runs/batch``: a list of runs, each checked as a run."""
    for run in body if isinstance(body, list) else []:
        check_run_request(run)


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


def check_state_update(body: Any) -> None:
    """``POST /threads/{id}/state``: which checkpoint, and values the state may hold."""
    if not isinstance(body, dict):
        return  # another shape is the API's to refuse (its schema)
    _only(
        body,
        STATE_UPDATE_FIELDS,
        "state update field(s) {names} are not accepted: a state update takes "
        f"{', '.join(sorted(STATE_UPDATE_FIELDS))}",
    )
    _text("as_node", body.get("as_node"))
    _text("checkpoint_id", body.get("checkpoint_id"))
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
        if isinstance(superstep, dict):
            _only(superstep, ("updates",), "a superstep holds only its updates, not {names}")
        updates = superstep.get("updates") if isinstance(superstep, dict) else None
        for update in updates if isinstance(updates, list) else []:
            if not isinstance(update, dict):
                raise Refused(422, "each update must be an object")
            if update.get("command") is not None:
                raise Refused(403, _NO_COMMAND)
            _only(
                update,
                _SUPERSTEP_UPDATE_FIELDS,
                "a superstep's update takes only as_node, command and values, not {names}",
            )
            _text("as_node", update.get("as_node"))
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
    check_config(kwargs.get("config"))
    # The API copies a request's langsmith_tracer into the configurable it assembles.
    assembled = (kwargs.get("config") or {}).get("configurable") or {}
    traced = {field: assembled[key] for key, field in _TRACER.items() if assembled.get(key)}
    _check_tracer(traced or None)
    _check_feedback_keys(kwargs.get("feedback_keys"))
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
    """Refuse an assistant whose stored config or context would steer the server.

    Its ``name`` and ``description`` are bounded (``/mcp`` lists them as a tool); its
    ``config`` and ``metadata`` are bounded as a run's.
    """
    config = _object("config", value.get("config"))
    check_config(config)
    check_request_settings(value.get("context"), config.get("configurable"))
    check_metadata(value.get("metadata"))
    _text("name", value.get("name"))
    _text("description", value.get("description"), MAX_DESCRIPTION_CHARS)


def check_assistant_request(body: Any, update: bool = False) -> None:
    """``POST /assistants`` (``PATCH /assistants/{id}``) as sent: closed, then checked."""
    if not isinstance(body, dict):
        return  # another shape is the API's to refuse (its schema)
    allowed = ASSISTANT_UPDATE_FIELDS if update else ASSISTANT_FIELDS
    _only(
        body,
        allowed,
        "assistant field(s) {names} are not accepted: an assistant takes "
        f"{', '.join(sorted(allowed))}",
    )
    check_assistant(body)


def check_thread_request(body: Any, update: bool = False) -> None:
    """``POST /threads`` (``PATCH /threads/{id}``) as sent: closed and bounded."""
    if not isinstance(body, dict):
        return  # another shape is the API's to refuse (its schema)
    allowed = THREAD_UPDATE_FIELDS if update else THREAD_FIELDS
    _only(
        body,
        allowed,
        f"thread field(s) {{names}} are not accepted: a thread takes {', '.join(sorted(allowed))}",
    )
    check_metadata(body.get("metadata"))
    ttl = _object("ttl", body.get("ttl"))
    _only(ttl, ("strategy", "ttl"), "ttl takes only strategy and ttl, not {names}")
    check_supersteps(body.get("supersteps"))


def check_thread_copy(body: Any) -> None:
    """``POST /threads/{id}/copy`` takes no fields: the copy is the thread's own."""
    if isinstance(body, dict):
        _only(body, (), "a thread copy takes no fields, not {names}")
