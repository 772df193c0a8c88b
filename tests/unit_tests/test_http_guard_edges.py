"""The guard's edges as a client or a server sees them, down to the raw ASGI messages.

Pinned here: the guard's own answers as ASGI asks for them (lower-case header names, a
``http.response.body`` message with its ``body``), which Starlette's TestClient would hide by
normalising header case; a body replayed once to the API, then the client's own messages; a
JSON media type with two parameters; a header that only a preflight carries not making a
request a preflight; the 413 for a body read past the limit; ``/mcp/`` as ``/mcp`` and a
JSON-RPC parse error with ``"id": null``; a write with no Content-Length and no body; a
websocket's close reason cut to 120 characters; brackets inside strings not counted as
nesting; where the served app says it is reachable (``--tunnel``, ``LANGGRAPH_API_URL``);
and the run queue's wrapper taking as many runs as the server asks for.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from datetime import UTC, datetime

import pytest
from langgraph_runtime_inmem import ops
from langgraph_runtime_inmem.database import GLOBAL_STORE

from app.serving import run_queue
from app.serving.http import MAX_JSON_DEPTH, Guard, _exposed
from app.serving.policy import ExposureError, ServingPolicy
from tests.unit_tests import test_run_queue, test_serving_guard
from tests.unit_tests.test_serving_guard import chunked_post, client, mcp_call

#: The fixtures of the guard's and the queue's own tests: an API behind the guard that
#: remembers what reached it, and the runtime's own queue over an empty store.
api = test_serving_guard.api
queue = test_run_queue.queue

ORIGIN = "http://localhost:5173"
JSON = {"content-type": "application/json"}


def asgi(app, scope_headers, messages, *, method="POST", path="/runs/wait", **policy):
    """One HTTP request through the guard as raw ASGI: the messages the guard sent back."""
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "headers": [(b"host", b"127.0.0.1:2024"), *scope_headers],
    }
    incoming = iter(messages)
    sent: list[dict] = []

    async def receive():
        return next(incoming, {"type": "http.disconnect"})

    async def send(message):
        sent.append(message)

    asyncio.run(Guard(app, ServingPolicy(**policy))(scope, receive, send))
    return sent


class Recorder:
    """An ASGI app that reads two messages, then answers 200 with a start lacking headers."""

    def __init__(self) -> None:
        self.received: list[dict] = []

    async def __call__(self, scope, receive, send):
        self.received += [await receive(), await receive()]
        await send({"type": "http.response.start", "status": 200})
        await send({"type": "http.response.body", "body": b"{}"})


# -- the guard's own answers, as raw ASGI messages


def test_a_refusal_is_sent_as_asgi_with_lower_case_header_names(api):
    # _send_json's names upper-cased break the ASGI contract (servers may pass them as given).
    asked = [(b"content-type", b"text/plain"), (b"content-length", b"1")]
    sent = asgi(api.app, asked, [{"type": "http.request", "body": b"x"}])
    body = b'{"detail": "request bodies must be JSON (Content-Type: application/json)"}'
    assert sent == [
        {
            "type": "http.response.start",
            "status": 415,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        },
        {"type": "http.response.body", "body": body},
    ]


def test_a_preflight_is_sent_as_asgi_with_lower_case_header_names_and_an_empty_body(api):
    asked = [
        (b"origin", ORIGIN.encode()),
        (b"access-control-request-method", b"POST"),
        (b"access-control-request-headers", b"content-type"),
        (b"access-control-request-private-network", b"true"),
    ]
    sent = asgi(api.app, asked, [], method="OPTIONS")
    assert sent == [
        {
            "type": "http.response.start",
            "status": 204,
            "headers": [
                (b"access-control-allow-origin", ORIGIN.encode()),
                (b"access-control-allow-methods", b"GET, POST, PUT, PATCH, DELETE, OPTIONS"),
                (b"access-control-allow-headers", b"content-type"),
                (b"access-control-max-age", b"600"),
                (b"vary", b"Origin"),
                (b"access-control-allow-private-network", b"true"),
            ],
        },
        {"type": "http.response.body", "body": b""},
    ]


def test_cors_headers_are_added_to_an_answer_that_names_no_headers():
    # ASGI lets an app leave "headers" out of http.response.start.
    app = Recorder()
    sent = asgi(app, [(b"origin", ORIGIN.encode())], [], method="GET")
    assert sent[0] == {
        "type": "http.response.start",
        "status": 200,
        "headers": [
            (b"access-control-allow-origin", ORIGIN.encode()),
            (b"access-control-expose-headers", b"x-pagination-total, x-pagination-next, "
             b"content-location"),
            (b"vary", b"Origin"),
        ],
    }  # fmt: skip


@pytest.mark.parametrize(
    ("path", "body"),
    [("/runs/wait", b'{"input": {}}'), ("/mcp", b"")],  # an empty POST to /mcp is passed on
)
def test_the_api_reads_the_checked_body_once_then_the_clients_own_messages(path, body):
    app = Recorder()
    sent = asgi(app, [(b"content-type", b"application/json")],
                [{"type": "http.request", "body": body}], path=path)  # fmt: skip
    assert sent[0]["status"] == 200
    assert app.received == [
        {"type": "http.request", "body": body, "more_body": False},
        {"type": "http.disconnect"},
    ]


# -- what is a JSON body, a preflight, a body too big


def test_a_json_media_type_with_two_parameters_is_json(api):
    headers = {"content-type": "application/json; charset=utf-8; x=1"}
    response = client(api).post("/runs/wait", content=b"{}", headers=headers)
    assert response.status_code == 200 and api.reached == [("/runs/wait", b"{}")]


def test_a_request_that_is_not_options_is_no_preflight_whatever_its_headers(api):
    asks = {"access-control-request-method": "POST"}
    # with a token, no preflight header lets a read past it
    response = client(api, token="t").get("/threads/t/state", headers=asks)
    assert response.status_code == 401 and api.reached == []
    # a page's POST carrying the header reaches the API, it is not answered 204
    response = client(api).post("/runs/wait", json={}, headers={**asks, "origin": ORIGIN})
    assert response.status_code == 200 and api.reached == [("/runs/wait", b"{}")]
    assert response.headers["access-control-allow-origin"] == ORIGIN


def test_a_body_read_past_the_limit_is_a_413_naming_the_limit(api):
    # chunked, so no Content-Length tells the size before the body is read
    sent = chunked_post(api, b"application/json", [b" " * 2**20] * 3, max_request_bytes=2**21)
    assert sent[0]["status"] == 413 and api.reached == []
    assert json.loads(sent[1]["body"]) == {
        "detail": "request body larger than 2 MB (RAG_MAX_REQUEST_BYTES)"
    }


def test_a_write_without_a_length_or_a_body_needs_no_json_type(api):
    sent = asgi(api.app, [(b"content-type", b"text/plain")], [], method="DELETE",
                path="/threads/t")  # fmt: skip
    assert sent[0]["status"] == 200 and api.reached == [("/threads/t", b"")]


# -- /mcp


def test_mcp_with_a_trailing_slash_gets_the_mcp_checks(api):
    call = mcp_call({"ollama_base_url": "http://attacker.example"}, question="x")
    response = client(api).post("/mcp/", json=call)
    assert response.status_code == 200 and response.json()["error"]["code"] == -32602
    assert api.reached == []


def test_malformed_json_to_mcp_is_a_json_rpc_parse_error_with_a_null_id(api):
    response = client(api).post("/mcp", content=b"[1,2", headers=JSON)
    assert response.status_code == 400 and api.reached == []
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32700,
            "message": "the request body is not valid JSON: unexpected end of data: "
            "line 1 column 5 (char 4)",
        },
    }


# -- websockets


def test_a_refused_websockets_close_reason_is_cut_to_120_characters(api):
    host = "a-long-name-of-a-dns-rebinding-page.example"
    scope = {"type": "websocket", "path": "/threads/t/stream/events",
             "headers": [(b"host", host.encode())]}  # fmt: skip
    sent: list[dict] = []

    async def receive():
        return {"type": "websocket.connect"}

    async def send(message):
        sent.append(message)

    asyncio.run(Guard(api.app, ServingPolicy())(scope, receive, send))
    reason = (
        f"host {host!r} is not served here (it is not this machine: a DNS-rebound page?); "
        "add the name to RAG_ALLOWED_HOSTS if it is yours"
    )
    assert len(reason) > 121  # a close frame's reason is at most 123 bytes
    assert sent == [{"type": "websocket.close", "code": 1008, "reason": reason[:120]}]
    assert api.reached == []


# -- nesting counted on the bytes


@pytest.mark.parametrize(
    "body",
    [
        b'["\\"' + b"[" * 3000 + b'"]',  # an escaped quote, then brackets in the string
        b'["\\\\", "' + b"[" * 3000 + b'"]',  # an escaped backslash ends its string
        b'{"a\\\\\\"": "\\\\", "b": "' + b"{" * 3000 + b'"}',
    ],
)
def test_brackets_inside_strings_are_not_nesting(api, body):
    # A search: its fields are the API's (a run's are closed: test_request_bounds.py).
    response = client(api).post("/threads/search", content=body, headers=JSON)
    assert response.status_code == 200 and api.reached == [("/threads/search", body)]


def test_nesting_just_past_the_limit_is_refused_beside_strings_of_brackets(api):
    body = b'["\\\\", ' * MAX_JSON_DEPTH + b'"["' + b"]" * MAX_JSON_DEPTH
    assert client(api).post("/runs/wait", content=body, headers=JSON).status_code == 200
    deeper = b"[" + body + b"]"
    response = client(api).post("/runs/wait", content=deeper, headers=JSON)
    assert response.status_code == 400 and "deeper than 64 levels" in response.json()["detail"]


# -- where the served app says it is reachable


@pytest.mark.parametrize(
    ("argv", "url", "named"),
    [
        (["langgraph", "dev", "--tunnel"], "", "https://tunnel.invalid"),
        (["langgraph", "dev"], "http://0.0.0.0:2024", "http://0.0.0.0:2024"),
    ],
)
def test_a_tunnel_or_a_public_url_needs_a_token(monkeypatch, argv, url, named):
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.setenv("LANGGRAPH_API_URL", url)
    with pytest.raises(ExposureError, match=f"refusing to serve on {named} without a token"):
        ServingPolicy().check_exposure(_exposed())
    ServingPolicy(token="t").check_exposure(_exposed())


def test_with_no_tunnel_and_no_url_the_app_is_on_loopback(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["langgraph", "dev", "--port", "2024"])
    monkeypatch.delenv("LANGGRAPH_API_URL", raising=False)
    assert _exposed() == ""
    ServingPolicy().check_exposure(_exposed())


# -- the run queue's wrapper


def test_one_look_takes_as_many_runs_as_the_server_has_free_workers(queue):
    assert run_queue.pick_up_runs_promptly()
    for _ in range(3):
        thread = uuid.uuid4()
        GLOBAL_STORE["threads"].append({"thread_id": thread})
        GLOBAL_STORE["runs"].append(
            {"run_id": uuid.uuid4(), "thread_id": thread, "status": "pending",
             "created_at": datetime(2026, 1, 1, tzinfo=UTC)}
        )  # fmt: skip

    async def look() -> int:
        return len([run async for run, _ in queue.next(wait=True, limit=2)])

    assert asyncio.run(look()) == 2


def test_the_wrapper_names_the_runtimes_own_look(queue):
    look = queue.__dict__["next"].__func__
    assert run_queue.pick_up_runs_promptly()
    assert queue.__dict__["next"].__func__.__wrapped__ is look


def test_without_the_in_memory_runtime_nothing_is_wrapped(monkeypatch):
    monkeypatch.setitem(sys.modules, "langgraph_runtime_inmem", None)
    assert run_queue.pick_up_runs_promptly() is False


def test_a_look_that_is_not_a_static_method_is_left_alone(queue, monkeypatch):
    async def other(self, wait: bool, limit: int = 1):
        yield None

    monkeypatch.setattr(ops.Runs, "next", other)
    assert run_queue.pick_up_runs_promptly() is False
    assert ops.Runs.__dict__["next"] is other
