"""Routes the product does not use are closed, and what is refused is refused before any work.

Issue #50, driven in-process: the store and crons answer a clear refusal (the Guard by
path, the server's auth hooks by resource); a run asking to pause (``interrupt_*``) is
refused by name; ``/mcp`` answers a malformed call with a JSON-RPC error, never the API's
500; a webhook is refused before LangGraph resolves its host; the token's scheme is read
in any case; ``HEAD /ui`` answers as ``GET /ui``.
"""

from __future__ import annotations

import asyncio
import json
import socket
from urllib.parse import urlsplit

import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.testclient import TestClient

from app.serving import auth, page
from app.serving.boundary import Refused, check_run
from app.serving.http import Guard
from app.serving.policy import ServingPolicy
from tests.unit_tests import test_serving_guard
from tests.unit_tests.test_http_guard_edges import asgi
from tests.unit_tests.test_serving_guard import client, mcp_call, run

#: An API behind the guard that remembers what reached it.
api = test_serving_guard.api
TOKEN = {"authorization": "Bearer s3cret"}


def refusal(resource: str, action: str, value) -> tuple[int, str] | None:
    """What the server's auth answers for ``resource``/``action``, as LangGraph looks it up.

    The most specific handler first: (resource, action), then (resource, "*").
    """
    from langgraph_sdk import Auth

    handlers = auth.auth._handlers
    (handler,) = handlers.get((resource, action)) or handlers[(resource, "*")]
    try:
        asyncio.run(handler(None, value))
    except Auth.exceptions.HTTPException as exc:
        return exc.status_code, str(exc.detail)
    return None


# ------------------------------------------------------------------------------- the store


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("PUT", "/store/items"),
        ("GET", "/store/items"),
        ("DELETE", "/store/items"),
        ("POST", "/store/items/search"),
        ("POST", "/store/namespaces"),
        ("PUT", "/store/items/"),
        ("GET", "/store"),
    ],
)
def test_the_store_is_not_served(api, method, path):
    item = {"namespace": ["a"], "key": "k", "value": {"v": "x" * 1000}}
    response = client(api, token="s3cret").request(method, path, json=item, headers=TOKEN)
    assert response.status_code == 404
    assert response.json() == {
        "detail": "the store is not served here: this graph keeps nothing in it"
    }
    assert api.reached == []


def test_a_store_value_of_any_size_is_refused_before_it_is_read(api):
    sent = []

    async def body():
        sent.append(1)
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": "PUT",
        "path": "/store/items",
        "headers": [
            (b"host", b"127.0.0.1:2024"),
            (b"content-type", b"application/json"),
            (b"content-length", str(25 * 2**20).encode()),
        ],
    }
    asyncio.run(Guard(test_serving_guard.Api().app, ServingPolicy())(scope, body, send))
    assert sent[0]["status"] == 404 and 1 not in sent  # not one byte of the body was read


@pytest.mark.parametrize("action", ["put", "get", "search", "delete", "list_namespaces"])
def test_the_servers_auth_refuses_every_store_operation(action):
    value = {"namespace": ("a",), "key": "k", "value": {"v": 1}}
    status, detail = refusal("store", action, value)
    assert status == 404 and "store is not served" in detail


def test_other_paths_beginning_with_store_are_not_the_store(api):
    assert client(api).get("/storefront").status_code == 200


# ---------------------------------------------------------------------------------- crons

CRONS_OFF = "crons are off on this server: a run starts when it is asked for, not on a schedule"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/runs/crons"),
        ("POST", "/runs/crons/"),
        ("POST", "/threads/5b1f3d0e-0000-4000-8000-000000000000/runs/crons"),
        ("PATCH", "/runs/crons/5b1f3d0e-0000-4000-8000-000000000001"),
    ],
)
def test_a_cron_is_refused_when_it_is_created_or_changed(api, method, path):
    cron = {"assistant_id": "agentic_rag", "schedule": "* * * * *", **run()}
    response = client(api).request(method, path, json=cron)
    assert response.status_code == 403 and response.json() == {"detail": CRONS_OFF}
    assert api.reached == []


def test_crons_can_still_be_listed_and_deleted(api):
    c = client(api)
    assert c.post("/runs/crons/search", json={}).status_code == 200
    assert c.post("/runs/crons/count", json={}).status_code == 200
    assert c.delete("/runs/crons/5b1f3d0e-0000-4000-8000-000000000001").status_code == 200
    assert len(api.reached) == 3


@pytest.mark.parametrize("action", ["create", "update"])
def test_the_servers_auth_refuses_a_new_or_changed_cron(action):
    assert refusal("crons", action, {"payload": run(), "schedule": "* * * * *"}) == (
        403,
        CRONS_OFF,
    )


# ---------------------------------------------------------------------- interrupt_* on runs


@pytest.mark.parametrize("field", ["interrupt_before", "interrupt_after"])
@pytest.mark.parametrize("value", ["*", ["generate"]])
def test_a_run_that_asks_to_pause_is_refused_by_name(field, value):
    with pytest.raises(Refused) as refused:
        check_run(run(**{field: value}))
    assert refused.value.status == 403
    assert str(refused.value) == (
        f"'{field}' is not accepted: a served run runs to its answer (this graph never "
        "waits for input to resume)"
    )
    assert refusal("threads", "create_run", {"kwargs": run(**{field: value})}) == (
        403,
        str(refused.value),
    )


@pytest.mark.parametrize("value", [None, []])
def test_a_run_that_names_no_interrupt_runs(value):
    check_run(run(interrupt_before=value, interrupt_after=value))


# ---------------------------------------------------------------------------- /mcp, malformed


@pytest.mark.parametrize(
    ("call", "named"),
    [
        ({"method": "tools/call", "params": "x"}, "params"),
        ({"method": "tools/call", "params": None}, "params"),
        ({"method": "tools/call", "params": [1, 2]}, "params"),
        ({"method": "tools/list", "params": "x"}, "params"),
        ({"method": "initialize", "params": 3}, "params"),
        (
            {"method": "tools/call", "params": {"name": "agentic_rag", "arguments": "x"}},
            "arguments",
        ),
        (
            {"method": "tools/call", "params": {"name": "agentic_rag", "arguments": None}},
            "arguments",
        ),
        (
            {"method": "tools/call", "params": {"name": "agentic_rag", "arguments": [1]}},
            "arguments",
        ),
        ({"method": "tools/list", "params": {"cursor": {"a": 1}}}, "cursor"),
        ({"method": "tools/list", "params": {"cursor": None}}, "cursor"),
        (
            {"method": "initialize", "params": {"protocolVersion": ["2025-11-25"]}},
            "protocolVersion",
        ),
    ],
)
def test_an_mcp_call_that_is_not_shaped_as_mcp_is_a_400_json_rpc_error(api, call, named):
    response = client(api).post("/mcp", json={"jsonrpc": "2.0", "id": 5, **call})
    assert response.status_code == 400
    answer = response.json()
    assert answer["jsonrpc"] == "2.0" and answer["id"] == 5
    assert answer["error"]["code"] == -32602
    assert answer["error"]["message"].startswith(f"{named} must be ")
    assert api.reached == []


@pytest.mark.parametrize(
    "call",
    [
        mcp_call(question="x"),
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "agentic_rag"}},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"cursor": "100"}},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"cursor": 100}},
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "x"}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ],
)
def test_a_well_shaped_mcp_call_is_passed_on(api, call):
    assert client(api).post("/mcp", json=call).status_code == 200
    assert [path for path, _ in api.reached] == ["/mcp"]


# -------------------------------------------------------------------------------- webhooks


class WebhookResolvingApi(test_serving_guard.Api):
    """The API behind the guard, resolving a run's webhook host as LangGraph's own check does.

    ``validate_webhook_url_or_raise`` (langgraph-api 0.16.7) looks the host up before the
    project's run hook is called: a refusal there comes after the DNS lookup.
    """

    def __init__(self) -> None:
        super().__init__()
        inner = self.app

        async def resolving(scope, receive, send):
            body = b""
            if scope["type"] == "http":
                message = await receive()
                body = message.get("body", b"")
                replayed = [message]

                async def receive():  # noqa: F811 - the body read above, then the client's
                    return replayed.pop() if replayed else {"type": "http.disconnect"}

            if body.strip():
                for item in (lambda v: v if isinstance(v, list) else [v])(json.loads(body)):
                    if isinstance(item, dict) and item.get("webhook"):
                        socket.getaddrinfo(urlsplit(item["webhook"]).hostname, 443)
            await inner(scope, receive, send)

        self.app = resolving


@pytest.mark.parametrize(
    "path",
    [
        "/runs/wait",
        "/runs",
        "/runs/stream",
        "/runs/batch",
        "/threads/5b1f3d0e-0000-4000-8000-000000000000/runs/wait",
    ],
)
def test_a_webhook_is_refused_before_any_name_is_looked_up(path, monkeypatch):
    looked_up = []
    monkeypatch.setattr(socket, "getaddrinfo", lambda *args, **kwargs: looked_up.append(args))
    api = WebhookResolvingApi()
    body = {"assistant_id": "agentic_rag", **run(webhook="https://hooks.attacker.example/x")}
    response = client(api).post(path, json=[body] if path == "/runs/batch" else body)
    assert response.status_code == 403
    assert response.json() == {"detail": "webhooks are off on this server (RAG_WEBHOOKS)"}
    assert api.reached == [] and looked_up == []
    # The stand-in does look names up: with webhooks on, the same run reaches it.
    assert client(api, webhooks=True).post(path, json=body).status_code == 200
    assert looked_up == [("hooks.attacker.example", 443)]


def test_a_batch_with_a_webhook_is_refused_and_webhooks_on_pass_it_on(api):
    batch = [run(), run(webhook="https://hooks.example/x")]
    assert client(api).post("/runs/batch", json=batch).status_code == 403
    assert api.reached == []
    assert client(api, webhooks=True).post("/runs/batch", json=batch).status_code == 200
    assert client(api).post("/runs/wait", json=run(webhook=None)).status_code == 200


# ---------------------------------------------------------------- the token's scheme, HEAD /ui


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
def test_the_tokens_scheme_is_read_in_any_case(api, scheme):
    policy = ServingPolicy(token="s3cret")
    assert policy.authorized(f"{scheme} s3cret")
    response = client(api, token="s3cret").get(
        "/threads/t", headers={"authorization": f"{scheme} s3cret"}
    )
    assert response.status_code == 200


@pytest.mark.parametrize(
    "header", ["bearer S3CRET", "bearer wrong", "Basic s3cret", "bearers3cret", "bearer", "s3cret"]
)
def test_only_the_scheme_is_read_in_any_case(header):
    assert not ServingPolicy(token="s3cret").authorized(header)


def test_the_servers_auth_reads_the_scheme_in_any_case(monkeypatch):
    monkeypatch.setattr(auth, "serving_policy", lambda: ServingPolicy(token="s3cret"))
    user = asyncio.run(auth.authenticate("bearer s3cret"))
    assert user["is_authenticated"] is True


def langgraph_auth(app):
    """LangGraph's auth in front of the page's routes, as langgraph-api 0.16.7 has it.

    ``ConditionalAuthenticationMiddleware`` lets ``GET /ui…`` through without credentials and
    sends every other request to the project's ``authenticate`` (here: no token, 401).
    """

    async def guarded(scope, receive, send):
        if scope["path"].startswith("/ui") and scope.get("method") == "GET":
            await app(scope, receive, send)
            return
        await JSONResponse({"detail": "needs the token"}, status_code=401)(scope, receive, send)

    return guarded


@pytest.mark.parametrize("path", ["/ui", "/ui/", "/ui/app.js", "/ui/style.css", "/ui/nope"])
def test_head_on_the_pages_files_answers_as_get(path):
    served = Guard(langgraph_auth(Starlette(routes=page.ROUTES)), ServingPolicy(token="s3cret"))
    c = TestClient(served, base_url="http://127.0.0.1:2024")
    got, head = c.get(path), c.head(path)
    assert got.status_code == (404 if path == "/ui/nope" else 200)
    assert head.status_code == got.status_code and head.content == b""
    assert head.headers.get("content-type") == got.headers.get("content-type")
    assert head.headers.get("content-length") == got.headers.get("content-length")


def test_the_answer_to_head_carries_no_body_as_asgi():
    # TestClient drops a HEAD's body itself: the guard's own messages, as a server gets them.
    app = langgraph_auth(Starlette(routes=page.ROUTES))
    (start, body) = asgi(app, [], [], method="HEAD", path="/ui/app.js", token="s3cret")
    (_, got) = asgi(app, [], [], method="GET", path="/ui/app.js", token="s3cret")
    assert start["status"] == 200 and body["body"] == b"" and got["body"]
    length = dict(start["headers"])[b"content-length"]
    assert int(length) == len(got["body"])


# ------------------------------------- LangGraph's v2 streaming: /threads/{id}/commands, WS

#: What the API adds to a run's configurable itself (ids, headers), as in a run it assembled.
SERVER_KEYS = {"__after_seconds__": 0, "langgraph_request_id": "r", "x-request-id": "r"}


def v2_run(**configurable):
    """A ``run.start`` as the API assembles it: its marker and the thread in configurable,
    copied into context (a v2 run sends no context of its own)."""
    sent = {"__event_streaming_v2": True, "thread_id": "t", **configurable}
    return run(config={"configurable": {**sent, **SERVER_KEYS}}, context=dict(sent))


def test_a_run_started_over_v2_streaming_goes_through_the_same_checks():
    check_run(v2_run())
    check_run(v2_run(checkpoint_id="c"))
    assert refusal("threads", "create_run", {"kwargs": v2_run()}) is None
    with pytest.raises(Refused, match="ollama_base_url cannot be set"):
        check_run(v2_run(ollama_base_url="http://attacker.example"))
    with pytest.raises(Refused, match="__pregel_runtime"):
        check_run(v2_run(__pregel_runtime="x"))
    long = v2_run()
    long["input"] = {"question": "q" * 20_000}
    with pytest.raises(Refused, match="RAG_MAX_QUESTION_CHARS"):
        check_run(long)
    resumed = v2_run()
    resumed["command"] = {"resume": {"i": "x"}}  # input.respond
    with pytest.raises(Refused, match="'command'"):
        check_run(resumed)


def test_a_request_cannot_name_the_v2_marker_itself(api):
    # Only LangGraph's own v2 path sets it: a run's own configurable naming it is refused.
    with pytest.raises(Refused, match="__event_streaming_v2"):
        check_run(run(config={"configurable": {"__event_streaming_v2": True}}))
    body = {
        "assistant_id": "agentic_rag",
        **run(config={"configurable": {"__event_streaming_v2": True}}),
    }
    assert client(api).post("/runs/wait", json=body).status_code == 422
    assert api.reached == []
