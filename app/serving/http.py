"""The project's HTTP layer of the served API (``http.app`` in ``langgraph.json``).

``Guard`` is ASGI middleware that ``langgraph-api`` applies before its own routing and
authentication, to every route, WebSockets included. It keeps the server to the user's own
pages, whatever a web page open in the same browser tries:

- ``Host`` must be this machine (or a configured name): a DNS-rebound page names its own;
- a request from a browser page (it carries ``Origin``) must come from an allowed origin
  (loopback, LangGraph Studio, ``RAG_ALLOWED_ORIGINS``): CORS alone only hides replies,
  it does not stop a page from starting runs;
- with ``RAG_API_TOKEN`` set, every route needs it but ``/ok`` and the chat page's files
  (LangGraph's own auth leaves ``/info``, ``/metrics``, ``/docs``, ``/openapi.json`` open);
- a request body must be JSON (a ``text/plain`` body needs no CORS preflight, and the API
  would parse it as JSON) and at most ``RAG_MAX_REQUEST_BYTES``, refused before it is read
  whole; malformed or deeply nested JSON is refused (400) on every route;
- what LangGraph's auth hooks never see is checked here: a state update's values
  (``POST /threads/{id}/state``, ``supersteps``), a request's own ``config.configurable``
  and ``checkpoint`` (the API merges them with its own keys before the hooks run), and the
  fields of every request that stores what it sends (a run, a batch, an assistant, a
  thread, a copy, a state update): its own only, each bounded (``app.serving.boundary``);
- CORS answers come from here, for allowed origins only;
- ``/mcp`` tool calls get the run checks of ``app.serving.boundary`` as JSON-RPC errors,
  and a call the API would answer with HTTP 500 (``params``, ``arguments`` that are not
  objects) a 400 with a JSON-RPC error;
- a run naming a webhook is refused here when webhooks are off (``RAG_WEBHOOKS``): the
  API would look its host up in DNS before its auth hooks refuse it;
- what the product does not use is not served: the dev server's own ``/internal`` and
  ``/deploy`` routes, the store (``/store``), new or changed crons;
- ``HEAD`` on the chat page's files answers as ``GET`` (LangGraph's auth lets only
  ``GET /ui`` through without the token).

Importing this module refuses to serve beyond loopback without a token, and makes the
server's queue start runs promptly (``app.serving.run_queue``).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from functools import partial
from itertools import accumulate
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.middleware import Middleware

from app.serving import openai_api, page
from app.serving.boundary import (
    CRONS_OFF,
    STORE_CLOSED,
    WEBHOOKS_OFF,
    Refused,
    check_assistant_request,
    check_batch_request,
    check_configurable,
    check_run,
    check_run_request,
    check_state_update,
    check_thread_copy,
    check_thread_request,
)
from app.serving.policy import TOKEN_NEEDED, ServingPolicy, serving_policy
from app.serving.run_queue import pick_up_runs_promptly

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Methods whose requests change something (and may carry a body).
_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: The dev server's routes that serve nobody here: wiping the store, dumping threads, deploys.
_NOT_SERVED = ("/internal", "/deploy")
#: LangGraph's store: the graph never uses it (``app.serving.auth`` refuses it too).
_STORE = "/store"
#: Requests that create or change a cron (listing, counting and deleting them still answer).
_CRON_WRITES = {
    "POST": re.compile(r"^(/threads/[^/]+)?/runs/crons/?$"),
    "PATCH": re.compile(r"^/runs/crons/[^/]+/?$"),
}
_EXPOSE = "x-pagination-total, x-pagination-next, content-location"
#: What answers without the token (reads only): the health check and the chat page's files
#: (the page holds no data; it asks for the token before it reads anything). Under ``/ui``
#: the page's route serves its own files and answers 404 to any other name.
_OPEN = re.compile(r"^/ok$|^/ui(/.*)?$")
#: The deepest nesting of a JSON body: a run request is a few levels deep. Python's own
#: JSON parser (``/mcp``, ``/v1``) fails with RecursionError near 1,000 levels.
MAX_JSON_DEPTH = 64
#: The requests that store what they send, and the check that closes each one's fields:
#: a run (each route, a batch), an assistant, a thread, a thread's copy, a state update.
_STORING: tuple[tuple[str, re.Pattern[str], Callable[[Any], None]], ...] = (
    ("POST", re.compile(r"^(/threads/[^/]+)?/runs(/stream|/wait)?/?$"), check_run_request),
    ("POST", re.compile(r"^/runs/batch/?$"), check_batch_request),
    ("POST", re.compile(r"^/assistants/?$"), check_assistant_request),
    ("PATCH", re.compile(r"^/assistants/[^/]+/?$"), partial(check_assistant_request, update=True)),
    ("POST", re.compile(r"^/threads/?$"), check_thread_request),
    ("PATCH", re.compile(r"^/threads/[^/]+/?$"), partial(check_thread_request, update=True)),
    ("POST", re.compile(r"^/threads/[^/]+/copy/?$"), check_thread_copy),
    ("POST", re.compile(r"^/threads/[^/]+/state/?$"), check_state_update),
)
_STRING = re.compile(rb'"[^"]*"')
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))
#: An opening bracket is a step of +1, a closing one -1 (as a signed byte).
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


class Guard:
    """Refuse what does not come from the user's own pages, before anything runs."""

    def __init__(self, app: ASGIApp, policy: ServingPolicy | None = None) -> None:
        """Wrap ``app``; the policy defaults to the server's (its environment)."""
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check one request or WebSocket handshake; pass it on when it may go through."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        policy = self.policy or serving_policy()
        send = openai_api.openai_errors(scope, send)  # /v1/* errors as OpenAI clients read them
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        path: str = scope.get("path", "")
        method: str = scope.get("method", "GET")
        origin = headers.get("origin")
        refusal = self._refusal(policy, headers, path, method, origin)
        if refusal is not None:
            await _refuse(scope, send, *refusal)
            return
        preflight = (
            origin is not None
            and method == "OPTIONS"
            and "access-control-request-method" in headers
        )
        if not preflight and not self._open(path, method, scope["type"]):
            if not policy.authorized(headers.get("authorization")):
                await _refuse(scope, send, 401, TOKEN_NEEDED)
                return
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return
        if method == "HEAD" and self._open(path, method, scope["type"]):
            # LangGraph's auth lets only GET through under /ui: a HEAD goes on as a GET whose
            # body is not sent (its headers, Content-Length too, are the GET's).
            scope, send = {**scope, "method": "GET"}, _without_body(send)
        if preflight and origin is not None:
            await _preflight(send, origin, headers)
            return
        if method in _WRITES:
            refusal = self._body_refusal(policy, headers)
            if refusal is not None:
                await _refuse(scope, send, *refusal)
                return
            body = await _read_body(receive, policy.max_request_bytes)
            if body is None:
                await _refuse(scope, send, 413, _too_big(policy))
                return
            mcp = path.rstrip("/") == "/mcp"
            try:
                message = _parsed(body)
                if mcp:
                    body = _check_mcp(body, message)
                else:
                    _check_request(path, method, message, policy)
            except _McpError as exc:
                await _send_json(send, exc.status, exc.payload)
                return
            except Refused as exc:
                if mcp:  # a JSON-RPC client reads an error object, whatever the status
                    error = {"code": -32700, "message": exc.message}
                    await _send_json(
                        send, exc.status, {"jsonrpc": "2.0", "id": None, "error": error}
                    )
                else:
                    await _refuse(scope, send, exc.status, exc.message)
                return
            receive = _replay(body, receive)
        if origin is not None:
            send = _with_cors(send, origin)
        await self.app(scope, receive, send)

    @staticmethod
    def _open(path: str, method: str, kind: str) -> bool:
        """Whether ``path`` answers without the token (the health check, the page's files)."""
        return kind == "http" and method in ("GET", "HEAD") and bool(_OPEN.match(path))

    @staticmethod
    def _refusal(
        policy: ServingPolicy, headers: dict[str, str], path: str, method: str, origin: str | None
    ) -> tuple[int, str] | None:
        host = headers.get("host", "")
        if not policy.host_allowed(host):
            return 403, (
                f"host {host!r} is not served here (it is not this machine: a DNS-rebound "
                "page?); add the name to RAG_ALLOWED_HOSTS if it is yours"
            )
        if any(path == p or path.startswith(p + "/") for p in _NOT_SERVED):
            return 404, "not found"
        if path == _STORE or path.startswith(_STORE + "/"):
            return 404, STORE_CLOSED
        cron_write = _CRON_WRITES.get(method)
        if cron_write is not None and cron_write.match(path):
            return 403, CRONS_OFF
        if (
            origin is not None
            and not policy.origin_allowed(origin)
            and not _same_origin(origin, host)
        ):
            return 403, (
                f"requests from pages of {origin} are refused; allow your own origin with "
                "RAG_ALLOWED_ORIGINS"
            )
        return None

    @staticmethod
    def _body_refusal(policy: ServingPolicy, headers: dict[str, str]) -> tuple[int, str] | None:
        length = headers.get("content-length", "")
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        try:
            size = int(length) if length else 0
        except ValueError:
            return 400, "Content-Length is not a number"
        if (size > 0 or chunked) and not _is_json(headers.get("content-type", "")):
            return 415, "request bodies must be JSON (Content-Type: application/json)"
        if size > policy.max_request_bytes:
            return 413, _too_big(policy)
        return None


def _same_origin(origin: str, host: str) -> bool:
    """A page served by this server itself, under a host name it answers (checked above)."""
    return origin.split("://", 1)[-1].rstrip("/").lower() == host.strip().lower()


def _too_big(policy: ServingPolicy) -> str:
    return (
        f"request body larger than {policy.max_request_bytes // 2**20} MB (RAG_MAX_REQUEST_BYTES)"
    )


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole body, or ``None`` as soon as it grows past ``limit``."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def _parsed(body: bytes) -> Any:
    """The JSON body; nested deeper than ``MAX_JSON_DEPTH`` or malformed is refused (400)."""
    if not body.strip():
        return None
    if _depth(body) > MAX_JSON_DEPTH:
        raise Refused(400, f"the request body nests JSON deeper than {MAX_JSON_DEPTH} levels")
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise Refused(400, f"the request body is not valid JSON: {str(exc)[:120]}") from None


def _depth(body: bytes) -> int:
    """How deep brackets nest in a JSON text, counted on the bytes, in C loops.

    Walking the parsed value instead costs a Python step per list or dict: 29 s for a 32 MB
    body of empty lists, against about 1 s here. Escapes go first (every backslash starts
    one), then strings, then everything but brackets; the depth is the highest running sum.
    """
    text = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    text = _STRING.sub(b"", text).translate(_STEPS, _NOT_BRACKETS)
    return max(accumulate(memoryview(text).cast("b")), default=0)


def _check_request(path: str, method: str, message: Any, policy: ServingPolicy) -> None:
    """What the API's auth hooks do not see, or see too late.

    Applied to every body (a batch is a list of runs): ``config.configurable`` and
    ``checkpoint`` name a thread and checkpoint only, and a webhook is refused while webhooks
    are off (the API resolves its host before the hooks). A request that stores what it
    sends (``_STORING``) takes its own fields only, each bounded; state updates write bounded
    text. A body of another shape (none, a list for a run) is the API's to refuse.
    """
    for item in message if isinstance(message, list) else [message]:
        if not isinstance(item, dict):
            continue
        if item.get("webhook") and not policy.webhooks:
            raise Refused(403, WEBHOOKS_OFF)
        config = item.get("config")
        if isinstance(config, dict):
            check_configurable(config.get("configurable"))
        check_configurable(item.get("checkpoint"), "checkpoint")
    for verb, route, check in _STORING:
        if method == verb and route.match(path):
            check(message)


class _McpError(Exception):
    """A JSON-RPC answer to send instead of passing the call on."""

    def __init__(self, status: int, payload: Any) -> None:
        super().__init__(status)
        self.status, self.payload = status, payload


#: What the API reads in an MCP call's ``params``, per method, and the types it can read:
#: anything else fails inside the API (HTTP 500).
_MCP_PARAMS: dict[str, tuple[tuple[str, tuple[type, ...], str], ...]] = {
    "tools/call": (("arguments", (dict,), "an object"),),
    "tools/list": (("cursor", (str, int, float), "a string or a number"),),
    "initialize": (("protocolVersion", (str,), "a string"),),
}


def _mcp_shape_error(call: dict[str, Any]) -> str | None:
    """Why the API could not read this JSON-RPC call's ``params``, or ``None``."""
    if "params" not in call:
        return None
    params = call["params"]
    if not isinstance(params, dict):
        return "params must be an object"
    method = call.get("method")
    for name, kinds, what in _MCP_PARAMS.get(method if isinstance(method, str) else "", ()):
        if name in params and not isinstance(params[name], kinds):
            return f"{name} must be {what}"
    return None


def _mcp_error(call: dict[str, Any], message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": call.get("id"), "error": {"code": -32602, "message": message}}


def _check_mcp(body: bytes, message: Any) -> bytes:
    """Run checks for ``/mcp`` tool calls: a refusal is a JSON-RPC error, not HTTP 500.

    A call whose ``params`` the API cannot read is a 400; a run the checks refuse is a
    JSON-RPC error (HTTP 200, as the API answers an unknown tool). Accepted calls come
    back with their images replaced by references (as for any run).
    """
    if message is None:
        return body
    calls = [
        c for c in (message if isinstance(message, list) else [message]) if isinstance(c, dict)
    ]
    malformed = [
        _mcp_error(call, error) for call in calls if (error := _mcp_shape_error(call)) is not None
    ]
    if malformed:
        raise _McpError(400, malformed if isinstance(message, list) else malformed[0])
    errors = []
    for call in calls:
        if call.get("method") != "tools/call":
            continue
        params: dict[str, Any] = call.get("params") or {}
        run = {"input": params.get("arguments") or {}, "context": params.get("context")}
        try:
            check_run(run)
        except Refused as exc:
            errors.append(_mcp_error(call, str(exc)))
    if errors:
        raise _McpError(200, errors if isinstance(message, list) else errors[0])
    return json.dumps(message).encode()


async def _send_json(send: Send, status: int, payload: Any, extra: list | None = None) -> None:
    data = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send(
        {"type": "http.response.start", "status": status, "headers": headers + (extra or [])}
    )
    await send({"type": "http.response.body", "body": data})


async def _refuse(scope: Scope, send: Send, status: int, detail: str) -> None:
    if scope["type"] == "websocket":
        # Closing before accepting refuses the handshake (the client sees 403).
        await send({"type": "websocket.close", "code": 1008, "reason": detail[:120]})
        return
    await _send_json(send, status, {"detail": detail})


async def _preflight(send: Send, origin: str, headers: dict[str, str]) -> None:
    allow = [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"access-control-allow-methods", b"GET, POST, PUT, PATCH, DELETE, OPTIONS"),
        (
            b"access-control-allow-headers",
            headers.get("access-control-request-headers", "").encode("latin-1") or b"*",
        ),
        (b"access-control-max-age", b"600"),
        (b"vary", b"Origin"),
    ]
    if headers.get("access-control-request-private-network") == "true":
        allow.append((b"access-control-allow-private-network", b"true"))
    await send({"type": "http.response.start", "status": 204, "headers": allow})
    await send({"type": "http.response.body", "body": b""})


def _without_body(send: Send) -> Send:
    """The answer to a HEAD: the GET's status and headers, no body."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.body":
            message = {**message, "body": b""}
        await send(message)

    return sending


def _with_cors(send: Send, origin: str) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            kept = [
                (k, v)
                for k, v in message.get("headers", [])
                if not k.lower().startswith(b"access-control-")
            ]
            kept += [
                (b"access-control-allow-origin", origin.encode("latin-1")),
                (b"access-control-expose-headers", _EXPOSE.encode()),
                (b"vary", b"Origin"),
            ]
            message = {**message, "headers": kept}
        await send(message)

    return sending


def _exposed() -> str:
    """Where the server is reachable, as ``langgraph dev`` tells its app."""
    if "--tunnel" in sys.argv:
        return "https://tunnel.invalid"
    return os.environ.get("LANGGRAPH_API_URL", "")


serving_policy().check_exposure(_exposed())
pick_up_runs_promptly()  # every question is a queued run: start it within 0.1 s, not 1 s

app = Starlette(routes=[*openai_api.ROUTES, *page.ROUTES], middleware=[Middleware(Guard)])
"""Mounted by ``langgraph-api`` as the root app: the project's routes (the chat page, the
OpenAI-compatible API) beside the API's own; ``Guard`` wraps every route."""
