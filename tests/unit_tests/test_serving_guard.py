"""The served API's front door, driven in-process: policy, request checks and the Guard.

Every refusal is paired with the request that does go through, and each checks that the
API behind the guard was never reached when it must not be.
"""

from __future__ import annotations

import asyncio
import base64
import json

import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route, WebSocketRoute
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from app.serving import boundary
from app.serving.boundary import Refused, check_assistant, check_run
from app.serving.http import Guard
from app.serving.policy import ExposureError, ServingPolicy
from graph.images import IMAGES, MAX_RUN_IMAGE_BYTES

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
LOCAL = {"host": "127.0.0.1:2024"}


class Api:
    """Stands in for the LangGraph API behind the guard; remembers what reached it."""

    def __init__(self) -> None:
        self.reached: list[tuple[str, bytes]] = []

        async def anything(request):
            body = await request.body()
            self.reached.append((request.url.path, body))
            return JSONResponse({"ok": True}, headers={"access-control-allow-origin": "*"})

        async def events(websocket):
            self.reached.append((websocket.url.path, b""))
            await websocket.accept()
            await websocket.send_text("hello")
            await websocket.close()

        self.app = Starlette(
            routes=[
                WebSocketRoute("/threads/t/stream/events", events),
                Route("/{path:path}", anything, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]),
            ]
        )


@pytest.fixture
def api():
    return Api()


def client(api: Api, **policy) -> TestClient:
    return TestClient(Guard(api.app, ServingPolicy(**policy)), base_url="http://127.0.0.1:2024")


def test_a_plain_local_json_request_goes_through(api):
    response = client(api).post("/runs/wait", json={"input": {"question": "hi"}})
    assert response.status_code == 200 and api.reached == [
        ("/runs/wait", b'{"input":{"question":"hi"}}')
    ]


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", ""]
)
def test_a_body_that_is_not_json_is_refused_before_the_api(api, content_type):
    body = json.dumps({"assistant_id": "agentic_rag", "input": {"question": "x"}})
    headers = {"content-type": content_type} if content_type else {}
    response = client(api).post("/runs/wait", content=body, headers=headers)
    assert response.status_code == 415 and "must be JSON" in response.json()["detail"]
    assert api.reached == []


@pytest.mark.parametrize(
    "origin", ["https://evil.example", "http://localhost.evil.example", "null", "app://other"]
)
def test_a_foreign_page_cannot_start_a_run(api, origin):
    response = client(api).post("/runs/wait", json={}, headers={"origin": origin})
    assert response.status_code == 403 and origin in response.json()["detail"]
    assert api.reached == []


@pytest.mark.parametrize(
    ("origin", "policy"),
    [
        ("http://localhost:5173", {}),
        ("http://127.0.0.1:8080", {}),
        ("https://smith.langchain.com", {}),
        ("app://obsidian.md", {"allowed_origins": ("app://obsidian.md",)}),
    ],
)
def test_the_users_own_pages_get_cors_answers(api, origin, policy):
    c = client(api, **policy)
    preflight = c.options(
        "/runs/wait",
        headers={"origin": origin, "access-control-request-method": "POST"},
    )
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == origin
    response = c.post("/runs/wait", json={}, headers={"origin": origin})
    assert response.status_code == 200
    # the API's own wildcard is replaced by the one allowed origin
    assert response.headers["access-control-allow-origin"] == origin


def test_a_foreign_preflight_gets_no_allow_header(api):
    preflight = client(api).options(
        "/runs/wait",
        headers={"origin": "https://evil.example", "access-control-request-method": "POST"},
    )
    assert preflight.status_code == 403
    assert "access-control-allow-origin" not in preflight.headers


@pytest.mark.parametrize(
    "host",
    [
        "evil.example:2024",
        "evil.example",
        "192.168.1.5:2024",
        "",
        # names that start like loopback ones but resolve wherever their owner says
        "localhost.evil.example:2024",
        "127.0.0.1.nip.io:2024",
        "localhostevil.example",
    ],
)
def test_a_foreign_host_is_refused_even_for_reads(api, host):
    response = client(api).get("/threads/t/state", headers={"host": host})
    assert response.status_code == 403 and api.reached == []


@pytest.mark.parametrize("host", ["localhost:2024", "127.0.0.1", "[::1]:2024"])
def test_loopback_hosts_are_served(api, host):
    assert client(api).get("/threads/t/state", headers={"host": host}).status_code == 200


def test_a_configured_host_name_is_served(api):
    c = client(api, allowed_hosts=("notes.lan",))
    assert c.get("/info", headers={"host": "notes.lan:2024"}).status_code == 200


def test_a_page_served_under_a_configured_name_is_same_origin(api):
    c = client(api, allowed_hosts=("notes.lan",))
    own = {"host": "notes.lan:2024", "origin": "http://notes.lan:2024"}
    assert c.post("/runs/wait", json={}, headers=own).status_code == 200
    # the same name on another port, or another allowed host's page, is another origin
    other = {"host": "notes.lan:2024", "origin": "http://notes.lan:9999"}
    assert c.post("/runs/wait", json={}, headers=other).status_code == 403


@pytest.mark.parametrize("path", ["/internal/truncate", "/internal/debug/thread/t", "/deploy"])
def test_the_dev_servers_internal_routes_are_not_served(api, path):
    assert client(api).post(path, json={}).status_code == 404
    assert api.reached == []


def chunked_post(api: Api, content_type: bytes, bodies: list[bytes], **policy) -> list[dict]:
    """A chunked POST to /runs/wait through the guard, as raw ASGI: what the guard sent.

    ``bodies`` are the chunks the client sends; each one read is removed from the list.
    """
    import asyncio

    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": bodies.pop(0), "more_body": len(bodies) > 0}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/runs/wait",
        "headers": [
            (b"host", b"127.0.0.1:2024"),
            (b"content-type", content_type),
            (b"transfer-encoding", b"chunked"),
        ],
    }
    asyncio.run(Guard(api.app, ServingPolicy(**policy))(scope, receive, send))
    return sent


def test_a_chunked_body_that_is_not_json_is_refused_before_the_api(api):
    # No Content-Length: a chunked text/plain body still needs no CORS preflight.
    body = b'{"input": {"question": "x"}}'
    assert chunked_post(api, b"text/plain", [body])[0]["status"] == 415
    assert api.reached == []
    assert chunked_post(api, b"application/json", [body])[0]["status"] == 200
    assert api.reached == [("/runs/wait", body)]


def test_a_body_over_the_limit_is_refused_by_its_length(api):
    response = client(api, max_request_bytes=1000).post("/runs/wait", json={"x": "a" * 2000})
    assert response.status_code == 413 and api.reached == []


def test_a_chunked_body_over_the_limit_is_refused_before_it_is_read_whole(api):
    bodies = [b"a" * 100] * 100
    sent = chunked_post(api, b"application/json", bodies, max_request_bytes=1000)
    assert sent[0]["status"] == 413 and api.reached == []
    assert len(bodies) == 100 - 11  # stopped at the first chunk past the limit, of 100


def test_a_websocket_from_a_foreign_page_is_refused(api):
    with pytest.raises(WebSocketDisconnect):
        with client(api).websocket_connect(
            "/threads/t/stream/events", headers={**LOCAL, "origin": "https://evil.example"}
        ) as ws:
            ws.receive_text()
    assert api.reached == []
    with client(api).websocket_connect(
        "/threads/t/stream/events", headers={**LOCAL, "origin": "http://localhost:2024"}
    ) as ws:
        assert ws.receive_text() == "hello"


def test_a_websocket_with_a_foreign_host_is_refused(api):
    with pytest.raises(WebSocketDisconnect):
        with client(api).websocket_connect(
            "/threads/t/stream/events", headers={"host": "evil.example"}
        ) as ws:
            ws.receive_text()
    assert api.reached == []


def mcp_call(context=None, **arguments):
    params = {"name": "agentic_rag", "arguments": arguments}
    if context is not None:
        params["context"] = context
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}


def test_an_mcp_call_naming_a_server_setting_is_a_json_rpc_error(api):
    call = mcp_call({"ollama_base_url": "http://attacker.example"}, question="x")
    response = client(api).post("/mcp", json=call)
    assert response.status_code == 200
    error = response.json()["error"]
    assert response.json()["id"] == 7 and error["code"] == -32602
    assert "ollama_base_url cannot be set" in error["message"]
    assert api.reached == []


def test_an_mcp_call_gets_its_images_replaced_by_references(api):
    inline = base64.b64encode(PNG).decode()
    response = client(api).post("/mcp", json=mcp_call(question="x", images=[inline]))
    assert response.status_code == 200
    forwarded = json.loads(api.reached[0][1])
    (reference,) = forwarded["params"]["arguments"]["images"]
    assert reference.startswith("rag-image:") and inline not in api.reached[0][1].decode()
    assert IMAGES.take(reference) == PNG


def run(**kwargs):
    return {"input": {"question": "x"}, "command": None, "config": {}, "context": None, **kwargs}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"context": {"ollama_base_url": "http://attacker.example"}},
        {"context": {"chroma_persist_directory": "/any/path"}},
        {"context": {"chroma_server_url": "http://attacker.example:8000"}},
        {"context": {"keep_alive": "-1"}},
        {"config": {"configurable": {"ollama_base_url": "http://attacker.example"}}},
        {"config": {"configurable": {"chroma_persist_directory": "/any/path"}}},
        {"config": {"configurable": {"models": "x"}}},
    ],
)
def test_a_run_naming_a_server_setting_is_refused(kwargs):
    with pytest.raises(Refused) as refused:
        check_run(run(**kwargs))
    assert refused.value.status == 403 and "cannot be set by a request" in str(refused.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"context": {"chat_model": "llama3.1:405b"}}, "not one of this server's models"),
        ({"context": {"vision_model": "anything"}}, "not one of this server's models"),
        ({"context": {"embedding_model": "mxbai-embed-large"}}, "not one of this server's models"),
        ({"context": {"num_ctx": 262144}}, "above this server's ceiling"),
        ({"context": {"k": 10_000}}, "k must be between"),
        ({"context": {"nonsense": 1}}, "unknown setting"),
        ({"command": {"goto": "retrieve", "update": {"question": "x"}}}, "'command'"),
        ({"command": {"resume": "x"}}, "'command'"),
        ({"webhook": "https://hooks.example/x"}, "webhooks are off"),
        ({"input": {"question": "x", "images": ["/etc/passwd"]}}, "not base64"),
    ],
)
def test_a_run_that_could_steer_the_server_is_refused(kwargs, message):
    with pytest.raises(Refused, match=message):
        check_run(run(**kwargs))


def test_the_servers_own_models_and_a_configured_one_are_allowed(monkeypatch):
    from app.serving import context as served

    monkeypatch.setattr(
        served, "serving_policy", lambda: ServingPolicy(served_models=("qwen3:4b",))
    )
    check_run(run(context={"chat_model": "llama3.1:8b", "k": 3}))
    check_run(run(context={"chat_model": "qwen3:4b"}))
    check_run(run(context={"embedding_model": served.server_settings().embedding_model}))
    check_run(run(context={"num_ctx": 8192}))
    check_run(run(config={"configurable": {"thread_id": "t", "checkpoint_id": "c"}}))


def test_a_runs_images_become_references_bounded_in_total():
    inline = base64.b64encode(PNG).decode()
    kwargs = run(input={"question": "based on the image: what?", "images": [inline]})
    check_run(kwargs)
    (reference,) = kwargs["input"]["images"]
    assert reference.startswith("rag-image:") and IMAGES.take(reference) == PNG
    big = base64.b64encode(PNG + b"\x00" * (MAX_RUN_IMAGE_BYTES // 3)).decode()
    held = IMAGES.held_bytes
    with pytest.raises(Refused, match="20 MB in all"):
        check_run(run(input={"question": "x", "images": [big] * 4}))
    assert IMAGES.held_bytes == held  # a refused run leaves nothing behind


def test_assistants_get_the_same_checks():
    # (crons are refused outright: tests/unit_tests/test_closed_routes.py)
    with pytest.raises(Refused, match="ollama_base_url"):
        check_assistant({"context": {"ollama_base_url": "http://attacker.example"}})
    with pytest.raises(Refused, match="chroma_persist_directory"):
        check_assistant({"config": {"configurable": {"chroma_persist_directory": "/x"}}})
    check_assistant({"context": {"k": 3}, "config": {}})


@pytest.mark.parametrize(
    ("url", "token", "refused"),
    [
        ("http://127.0.0.1:2024", "", False),
        ("http://localhost:2024", "", False),
        ("http://[::1]:2024", "", False),
        ("http://0.0.0.0:2024", "", True),
        ("http://192.168.1.5:2024", "", True),
        ("https://abc.trycloudflare.com", "", True),
        ("http://0.0.0.0:2024", "s3cret", False),
    ],
)
def test_serving_beyond_loopback_needs_a_token(url, token, refused):
    policy = ServingPolicy(token=token)
    if refused:
        with pytest.raises(ExposureError, match="RAG_API_TOKEN"):
            policy.check_exposure(url)
    else:
        policy.check_exposure(url)


def test_the_policy_reads_the_environment(monkeypatch):
    monkeypatch.setenv("RAG_MAX_QUESTION_CHARS", "500")
    monkeypatch.setenv("RAG_MAX_METADATA_BYTES", "600")
    monkeypatch.setenv("RAG_MAX_STATE_UPDATE_BYTES", "700")
    monkeypatch.setenv("RAG_API_TOKEN", " t0k ")
    monkeypatch.setenv("RAG_ALLOWED_ORIGINS", "app://obsidian.md, http://notes.lan/")
    monkeypatch.setenv("RAG_ALLOWED_HOSTS", "Notes.LAN")
    monkeypatch.setenv("RAG_MAX_REQUEST_BYTES", "1234")
    monkeypatch.setenv("RAG_SERVED_MODELS", "a,b")
    monkeypatch.setenv("RAG_MAX_NUM_CTX", "4096")
    monkeypatch.setenv("RAG_WEBHOOKS", "on")
    policy = ServingPolicy.from_env()
    assert policy == ServingPolicy(
        token="t0k",
        allowed_origins=("app://obsidian.md", "http://notes.lan"),
        allowed_hosts=("notes.lan",),
        max_request_bytes=1234,
        served_models=("a", "b"),
        max_num_ctx=4096,
        webhooks=True,
        max_question_chars=500,
        max_metadata_bytes=600,
        max_state_update_bytes=700,
    )
    assert policy.origin_allowed("http://notes.lan") and policy.host_allowed("notes.lan:80")


def test_an_empty_environment_gives_the_default_policy_open_on_loopback_only():
    # No token unless one is set, no extra origin or host, every bound at its default.
    policy = ServingPolicy.from_env({})
    assert policy == ServingPolicy() and policy.token == "" and policy.max_num_ctx == 0
    assert policy.authorized(None) and not policy.host_allowed("notes.lan")
    policy.check_exposure("")  # no address given: served on 127.0.0.1


def test_the_host_is_what_follows_the_last_at_sign():
    policy = ServingPolicy()
    assert policy.host_allowed("user@localhost:2024") and policy.host_allowed("a@b@127.0.0.1")
    assert not policy.host_allowed("localhost@evil.example")
    policy.check_exposure("http://me:pw@127.0.0.1:2024")


def test_an_origin_with_a_trailing_slash_is_the_same_origin():
    policy = ServingPolicy(allowed_origins=("app://obsidian.md",))
    for origin in ("https://smith.langchain.com/", "http://localhost:5173/", "app://obsidian.md/"):
        assert policy.origin_allowed(origin), origin
    assert not policy.origin_allowed("https://evil.example/")


def test_the_exposure_refusal_says_how_to_serve_safely():
    with pytest.raises(ExposureError) as refused:
        ServingPolicy().check_exposure("http://0.0.0.0:2024")
    assert str(refused.value) == (
        "refusing to serve on http://0.0.0.0:2024 without a token: other machines could read "
        "your notes. Set RAG_API_TOKEN (clients then send 'Authorization: Bearer <token>'), "
        "or serve on 127.0.0.1"
    )


@pytest.mark.parametrize(
    ("value", "on"),
    [
        ("", False),
        ("0", False),
        ("off", False),
        ("false", False),
        ("no", False),
        ("1", True),
        ("true", True),
        (" ON ", True),
    ],
)
def test_webhooks_are_on_only_when_the_setting_says_so(monkeypatch, value, on):
    monkeypatch.setenv("RAG_WEBHOOKS", value)
    assert ServingPolicy.from_env().webhooks is on


def test_a_bound_that_is_not_a_number_is_named(monkeypatch):
    monkeypatch.setenv("RAG_MAX_QUESTION_CHARS", "lots")
    with pytest.raises(ValueError, match="RAG_MAX_QUESTION_CHARS must be a whole number"):
        ServingPolicy.from_env()


# ------------------------------------------------ only what the graph takes is stored


@pytest.fixture
def bounds(monkeypatch):
    """A policy with small bounds, as the server's."""
    from app.serving import boundary

    policy = ServingPolicy(max_question_chars=100, max_metadata_bytes=200)
    monkeypatch.setattr(boundary, "serving_policy", lambda: policy)
    return policy


IMAGE_PART = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}


@pytest.mark.parametrize(
    ("run_input", "named"),
    [
        ({"question": "x", "junk": "a" * 1000}, "junk"),
        ({"question": "x", "messages": [{"role": "user", "content": [IMAGE_PART]}]}, "messages"),
        ({"question": "x", "metadata": {}, "steps": []}, "metadata, steps"),
        ({"question": "x", "k" * 10_000: 1}, "k" * 40 + "…"),
    ],
)
def test_a_run_input_beyond_the_graphs_input_schema_is_refused(run_input, named):
    with pytest.raises(Refused) as refused:
        check_run(run(input=run_input))
    message = str(refused.value)
    assert refused.value.status == 422 and named in message
    assert "its input is images and question" in message and len(message) < 300


def test_the_graphs_own_input_goes_through(bounds):
    check_run(run(input={"question": "x" * 100}))
    check_run(run(input={"question": "x", "images": []}))
    check_run(run(input=None))  # a thread continued from its state


@pytest.mark.parametrize("question", ["x" * 101, 42, ["x"]])
def test_a_question_too_long_or_not_text_is_refused(bounds, question):
    with pytest.raises(Refused) as refused:
        check_run(run(input={"question": question}))
    assert refused.value.status == 422
    assert "RAG_MAX_QUESTION_CHARS" in str(refused.value) or "must be text" in str(refused.value)


def test_the_default_question_bound_takes_a_long_pasted_question():
    assert ServingPolicy().max_question_chars >= 16_000
    check_run(run(input={"question": "a long pasted log line\n" * 600}))  # 13,800 characters


def test_metadata_is_bounded(bounds):
    from app.serving.boundary import check_metadata

    check_metadata({"graph_id": "agentic_rag"})
    with pytest.raises(Refused, match="RAG_MAX_METADATA_BYTES") as refused:
        check_metadata({"graph_id": "agentic_rag", "junk": "a" * 200})
    assert refused.value.status == 422
    with pytest.raises(Refused, match="RAG_MAX_METADATA_BYTES"):
        check_assistant({"graph_id": "agentic_rag", "metadata": {"junk": "a" * 200}})


# ------------------------------------------------------- the boundary is closed, not listed


@pytest.mark.parametrize(
    "configurable",
    [{"__pregel_runtime": "x"}, {"__pregel_send": "x"}, {"k": 3}, {"anything": 1}],
)
def test_configurable_names_only_the_thread_and_checkpoint(configurable):
    with pytest.raises(Refused) as refused:
        check_run(run(config={"configurable": configurable}))
    assert refused.value.status == 422
    assert "may name only the thread and checkpoint" in str(refused.value)


def test_the_run_hook_tells_the_requests_configurable_from_the_servers():
    # As the API assembles a run whose request sent config.configurable and no context:
    # the request's keys are copied into context, the server adds its own to configurable.
    server = {
        "__after_seconds__": 0,
        "langgraph_request_id": "r",
        "run_id": "x",
        "x-request-id": "r",
        "user-agent": "python-httpx",
    }
    sent = {"thread_id": "t", "checkpoint_id": "c"}
    check_run(run(config={"configurable": {**sent, **server}}, context=dict(sent)))
    hostile = {"__pregel_runtime": "x"}
    with pytest.raises(Refused, match="__pregel_runtime"):
        check_run(run(config={"configurable": {**hostile, **server}}, context=dict(hostile)))
    # A request that sent context: the configurable is the context's copy plus the server's.
    context = {"k": 3}
    configurable = {**context, "__context_provided__": True, **server}
    check_run(run(config={"configurable": configurable}, context=context))


# ------------------------------------------------------------- the Guard: every route


@pytest.mark.parametrize(
    "path", ["/", "/info", "/metrics", "/docs", "/openapi.json", "/rag/collections"]
)
def test_with_a_token_every_route_needs_it(api, path):
    c = client(api, token="s3cret")
    refused = c.get(path)
    assert refused.status_code == 401 and "RAG_API_TOKEN" in refused.json()["detail"]
    assert c.get(path, headers={"authorization": "Bearer wrong"}).status_code == 401
    assert api.reached == []
    assert c.get(path, headers={"authorization": "Bearer s3cret"}).status_code == 200


@pytest.mark.parametrize("path", ["/ok", "/ui", "/ui/", "/ui/app.js", "/ui/style.css"])
def test_with_a_token_the_health_check_and_the_pages_files_stay_open(api, path):
    assert client(api, token="s3cret").get(path).status_code == 200


def test_with_a_token_posts_websockets_and_preflights(api):
    c = client(api, token="s3cret")
    assert c.post("/ui/agentic_rag", json={}).status_code == 401  # not one of the page's files
    with pytest.raises(WebSocketDisconnect):
        with c.websocket_connect("/threads/t/stream/events", headers=LOCAL) as ws:
            ws.receive_text()
    preflight = c.options(
        "/runs/wait",
        headers={"origin": "http://localhost:5173", "access-control-request-method": "POST"},
    )
    assert preflight.status_code == 204  # a browser sends no credentials on a preflight
    assert api.reached == []


# ------------------------------------------------------------ the Guard: deep or bad JSON


@pytest.mark.parametrize("path", ["/runs/wait", "/v1/chat/completions", "/threads", "/mcp"])
@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("[" * 200_000, "deeper than 64 levels"),
        ("[" * 65 + "]" * 65, "deeper than 64 levels"),
        ('{"a": ' * 100 + "1" + "}" * 100, "deeper than 64 levels"),
        ('{"input": ', "not valid JSON"),
    ],
)
def test_deep_or_malformed_json_is_a_400_on_every_route(api, path, body, reason):
    response = client(api).post(path, content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400, response.text
    answer = response.json()
    # /mcp answers in JSON-RPC's shape, /v1 in OpenAI's, the rest in LangGraph's.
    message = answer["detail"] if "detail" in answer else answer["error"]["message"]
    assert ("detail" in answer) == (path not in ("/mcp", "/v1/chat/completions"))
    assert reason in message and len(message) < 200
    if path == "/mcp":
        assert answer["jsonrpc"] == "2.0" and answer["error"]["code"] == -32700
    assert api.reached == []


def test_json_nested_as_deep_as_allowed_goes_through(api):
    body = "[" * 64 + "]" * 64
    response = client(api).post(
        "/runs/wait", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 200 and len(api.reached) == 1


# --------------------------------------------------- the Guard: state updates and config


@pytest.mark.parametrize(
    ("update", "reason"),
    [
        ({"values": {"images": [base64.b64encode(PNG).decode()]}}, "images are not written"),
        (
            {"values": {"messages": [{"type": "human", "content": [IMAGE_PART]}]}},
            "text only",
        ),
        ({"values": [{"question": "x"}, {"images": ["x"]}]}, "images are not written"),
        ({"values": {"answer": "a" * 300_000}}, "RAG_MAX_STATE_UPDATE_BYTES"),
        ({"values": {"question": "q" * 20_000}}, "RAG_MAX_QUESTION_CHARS"),
        ({"values": {"junk": 1}}, "not in this graph's state"),
        ({"values": {"attachments": ["/etc/passwd"]}}, "image references only"),
        (
            {"values": {"question": "x"}, "checkpoint": {"__pregel_runtime": "x"}},
            "__pregel_runtime",
        ),
    ],
)
def test_a_state_update_cannot_store_images_or_large_values(api, update, reason):
    response = client(api).post("/threads/0b5c/state", json=update)
    assert response.status_code == 422 and reason in response.json()["detail"], response.text
    assert api.reached == []


def test_studios_state_edits_go_through(api):
    c = client(api)
    edit = {"values": {"question": "calculate: 2*21", "route": "calculator"}, "as_node": "route"}
    assert c.post("/threads/0b5c/state", json=edit).status_code == 200
    messages = {
        "values": {"messages": [{"type": "human", "content": [{"type": "text", "text": "hi"}]}]}
    }
    assert c.post("/threads/0b5c/state", json=messages).status_code == 200
    replay = {"checkpoint": {"checkpoint_id": "c", "checkpoint_ns": ""}, "limit": 5}
    assert c.post("/threads/0b5c/history", json=replay).status_code == 200
    assert len(api.reached) == 3


def test_a_new_thread_cannot_carry_images_in_its_supersteps(api):
    steps = {"supersteps": [{"updates": [{"values": {"images": ["x"]}, "as_node": "route"}]}]}
    response = client(api).post("/threads", json=steps)
    assert response.status_code == 422 and "images are not written" in response.json()["detail"]
    command = {"supersteps": [{"updates": [{"command": {"goto": "generate"}}]}]}
    assert client(api).post("/threads", json=command).status_code == 403
    assert api.reached == []


@pytest.mark.parametrize(
    "body",
    [
        {"assistant_id": "a", "input": None, "config": {"configurable": {"__pregel_runtime": "x"}}},
        {"assistant_id": "a", "input": None, "checkpoint": {"__pregel_runtime": "x"}},
        [{"assistant_id": "a", "input": None, "config": {"configurable": {"k": 3}}}],
    ],
)
def test_a_requests_own_configurable_and_checkpoint_are_closed(api, body):
    response = client(api).post("/runs/wait", json=body)
    assert response.status_code == 422 and "may name only" in response.json()["detail"]
    assert api.reached == []


def test_an_mcp_call_with_arguments_beyond_the_input_is_a_json_rpc_error(api):
    call = mcp_call(question="x", messages=[{"role": "user", "content": [IMAGE_PART]}])
    response = client(api).post("/mcp", json=call)
    assert response.status_code == 200
    assert "messages" in response.json()["error"]["message"] and api.reached == []


@pytest.mark.parametrize(
    ("body", "depth"),
    [
        (b"1", 0),
        (b"[]", 1),
        (b'{"a": [{"b": []}]}', 4),
        (b'{"a": "[[[[{{{{"}', 1),  # brackets inside a string are text
        (b'{"a": "x\\\\", "b": [[]]}', 3),  # an escaped backslash ends before the quote
        (b'{"a": "x\\"[[[[{{", "b": []}', 2),  # an escaped quote does not end the string
        (b"[" * 65 + b"]" * 65, 65),
    ],
)
def test_json_depth_is_counted_on_the_bytes(body, depth):
    from app.serving.http import _depth

    assert _depth(body) == depth


def test_counting_the_depth_of_a_big_body_takes_about_a_second():
    import time

    from app.serving.http import _depth

    body = b"[" + b"[]," * (8 * 2**20 // 3) + b"[]]"  # 8 MB of empty lists
    started = time.perf_counter()
    assert _depth(body) == 2
    assert time.perf_counter() - started < 2  # walking the parsed lists took 7 s


# The LangGraph server calls the project's auth (app/serving/auth.py) on every API request:
# the token first, then the boundary's checks on what a request stores or runs.


def _auth_refusal(call) -> tuple[int, str] | None:
    from langgraph_sdk import Auth

    try:
        asyncio.run(call)
    except Auth.exceptions.HTTPException as exc:
        return exc.status_code, str(exc.detail)
    return None


def test_with_a_token_the_api_answers_only_a_request_that_carries_it(monkeypatch):
    from app.serving import auth
    from app.serving.policy import TOKEN_NEEDED

    monkeypatch.setattr(auth, "serving_policy", lambda: ServingPolicy(token="s3cret"))
    for header in (None, "", "Bearer wrong", "s3cret", "Bearer s3cret "):
        assert _auth_refusal(auth.authenticate(header)) == (401, TOKEN_NEEDED), header
    user = asyncio.run(auth.authenticate("Bearer s3cret"))
    assert user == {"identity": "local-user", "is_authenticated": True}
    monkeypatch.setattr(auth, "serving_policy", lambda: ServingPolicy())
    assert asyncio.run(auth.authenticate(None))["is_authenticated"] is True


def _handler(resource: str, action: str):
    from app.serving import auth

    # The SDK keeps what @auth.on registered per (resource, action); the server calls these.
    (handler,) = auth.auth._handlers[(resource, action)]
    return handler


QUESTION = "RAG_MAX_QUESTION_CHARS"
METADATA = "RAG_MAX_METADATA_BYTES"
BIG = {"x": "m" * 20_000}


@pytest.mark.parametrize(
    ("resource", "action", "value", "refusal"),
    [
        (
            "threads",
            "create_run",
            {"kwargs": run(input={"question": "q" * 20_000})},
            (422, QUESTION),
        ),
        ("threads", "create_run", {"kwargs": run(), "metadata": BIG}, (422, METADATA)),
        ("threads", "create_run", {"kwargs": run(command={"resume": "x"})}, (403, "'command'")),
        ("threads", "create", {"metadata": BIG}, (422, METADATA)),
        ("threads", "update", {"metadata": BIG}, (422, METADATA)),
        (
            "assistants",
            "create",
            {"context": {"ollama_base_url": "http://a.example"}},
            (403, "cannot be set by a request"),
        ),
        ("assistants", "update", {"config": {"configurable": {"k": 3}}}, (422, "may name only")),
        ("assistants", "update", {"metadata": BIG}, (422, METADATA)),
    ],
)
def test_what_a_request_stores_or_runs_is_checked_by_the_servers_auth(
    resource, action, value, refusal
):
    handler = _handler(resource, action)
    status, detail = _auth_refusal(handler(None, value))
    assert status == refusal[0] and refusal[1] in detail and "\n" not in detail
    allowed = {"kwargs": run(), "metadata": {"label": "x"}, "payload": run(), "context": {"k": 3}}
    assert _auth_refusal(handler(None, allowed)) is None


# ------------------------------------------------ each refusal: its status and its one line

NO_COMMAND = (
    "a served run starts from its input: 'command' (goto, update, resume) is not accepted "
    "(this graph never waits for input to resume)"
)


@pytest.mark.parametrize(
    ("check", "value", "status", "message"),
    [
        (boundary.check_context, "k=3", 422, "context must be an object"),
        (boundary.check_context, {"k": 10_000}, 422, "k must be between 1 and 50, got 10000"),
        (
            boundary.check_context,
            {"ollama_base_url": "x", "keep_alive": "1"},
            403,
            "keep_alive, ollama_base_url cannot be set by a request: the server's own setting "
            "applies (set it where the server runs, in .env)",
        ),
        (
            boundary.check_context,
            {f"s{i}": 1 for i in range(6)} | {"x" * 45: 1},
            422,
            "unknown setting(s) in context: s0, s1, s2, s3, s4 and 2 more",
        ),
        (
            boundary.check_context,
            {"x" * 41: 1},
            422,
            f"unknown setting(s) in context: {'x' * 40}…",
        ),
        (boundary.check_context, {"x" * 40: 1}, 422, f"unknown setting(s) in context: {'x' * 40}"),
        (
            boundary.check_context,
            {f"s{i}": 1 for i in range(5)},
            422,
            "unknown setting(s) in context: s0, s1, s2, s3, s4",
        ),
        (
            boundary.check_context,
            {f"s{i}": 1 for i in range(6)},
            422,
            "unknown setting(s) in context: s0, s1, s2, s3, s4 and 1 more",
        ),
        (boundary.check_configurable, "t", 422, "config.configurable must be an object"),
        (
            boundary.check_run,
            run(webhook="https://h.example/"),
            403,
            "webhooks are off on this server (RAG_WEBHOOKS)",
        ),
        (
            boundary.check_run,
            run(input={"question": "x", "images": ["/etc/passwd"]}),
            422,
            "image '/etc/passwd' is not base64 or a data: URI (file paths are not accepted "
            "here: send the image's bytes)",
        ),
        (
            # The API marks a request that sent its own context: that context is checked.
            boundary.check_run,
            run(
                config={"configurable": {"langgraph_request_id": "r", "__context_provided__": 1}},
                context={"ollama_base_url": "http://attacker.example"},
            ),
            403,
            "ollama_base_url cannot be set by a request: the server's own setting applies "
            "(set it where the server runs, in .env)",
        ),
        (boundary.check_input, "q", 422, 'input must be an object: {"question": "..."}'),
        (
            boundary.check_input,
            {"question": "q" * 16_001},
            422,
            "the question is 16,001 characters; this server takes at most 16,000 "
            "(RAG_MAX_QUESTION_CHARS)",
        ),
        (
            boundary.check_metadata,
            {"x": "m" * 16_384},
            422,
            "metadata is 16,392 bytes as JSON; this server takes at most 16,384 "
            "(RAG_MAX_METADATA_BYTES)",
        ),
        (boundary.check_state_values, "q", 422, "state values must be an object"),
        (
            boundary.check_state_values,
            {"junk": 1},
            422,
            "field(s) junk are not in this graph's state",
        ),
        (
            boundary.check_state_values,
            {"images": ["x"]},
            422,
            "images are not written into a thread's state: send them with a run's input "
            "('images'), which keeps their bytes out of the thread",
        ),
        (
            boundary.check_state_values,
            {"attachments": ["rag-image:" + "0" * 55]},
            422,
            "attachments hold the server's own image references only",
        ),
        (
            boundary.check_state_values,
            {"messages": [("human", [{"type": "image_url", "image_url": "x"}])]},
            422,
            "messages written into a thread hold text only, not 'image_url' parts: images go "
            "with a run's input ('images')",
        ),
        (
            boundary.check_state_values,
            {"messages": {"content": [{"type": "i" * 50}]}},
            422,
            f"messages written into a thread hold text only, not {'i' * 40!r} parts: images go "
            "with a run's input ('images')",
        ),
        (
            boundary.check_state_values,
            {"answer": "a" * 262_144},
            422,
            "a state update is 262,157 bytes as JSON; this server takes at most 262,144 "
            "(RAG_MAX_STATE_UPDATE_BYTES)",
        ),
        (
            boundary.check_state_update,
            {"checkpoint": {"k": 1}},
            422,
            "checkpoint may name only the thread and checkpoint (thread_id, checkpoint_id, "
            "checkpoint_ns, checkpoint_map), not k; a run's settings go in 'context'",
        ),
        (boundary.check_supersteps, {"updates": []}, 422, "supersteps must be a list"),
        (boundary.check_supersteps, [{"updates": ["x"]}], 422, "each update must be an object"),
        (boundary.check_supersteps, [{"updates": [{"command": {}}]}], 403, NO_COMMAND),
    ],
)
def test_each_refusal_has_its_status_and_one_line(default_bounds, check, value, status, message):
    with pytest.raises(Refused) as refused:
        check(value)
    assert (refused.value.status, str(refused.value)) == (status, message)


@pytest.fixture
def default_bounds(monkeypatch):
    monkeypatch.setattr(boundary, "serving_policy", lambda: ServingPolicy())


def test_a_model_the_server_does_not_serve_is_refused_naming_those_it_does(monkeypatch):
    from app.serving import context
    from app.serving.context import served_models

    policy = ServingPolicy(served_models=("qwen3:4b", "gemma3:1b"))
    monkeypatch.setattr(context, "serving_policy", lambda: policy)
    monkeypatch.setattr(boundary, "serving_policy", lambda: policy)
    with pytest.raises(Refused) as refused:
        boundary.check_context({"chat_model": "llama3.1:405b"})
    allowed = ", ".join(sorted(served_models()))
    assert str(refused.value) == (
        f"chat_model 'llama3.1:405b' is not one of this server's models ({allowed}; more with "
        "RAG_SERVED_MODELS)"
    )


def test_what_the_checks_let_through(default_bounds):
    boundary.check_state_values({"attachments": ["rag-image:" + "0" * 54]})  # 64 characters
    boundary.check_state_values({"messages": [("human", ["plain text", {"type": "text"}])]})
    boundary.check_state_values({"messages": [("ai", "x", "extra")]})
    boundary.check_supersteps(["not a superstep", {"updates": "not a list"}])
    boundary.check_context({"k": 3})


# ------------------------------------------------ CORS answers and /mcp batches, in full


def test_a_preflight_answers_with_exactly_what_the_page_may_do(api):
    asked = {"origin": "http://localhost:5173", "access-control-request-method": "POST"}
    preflight = client(api).options(
        "/runs/wait",
        headers={
            **asked,
            "access-control-request-headers": "content-type, authorization",
            "access-control-request-private-network": "true",
        },
    )
    assert preflight.status_code == 204 and preflight.content == b""
    assert [(k, v) for k, v in preflight.headers.items()] == [
        ("access-control-allow-origin", "http://localhost:5173"),
        ("access-control-allow-methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS"),
        ("access-control-allow-headers", "content-type, authorization"),
        ("access-control-max-age", "600"),
        ("vary", "Origin"),
        ("access-control-allow-private-network", "true"),
    ]
    plain = client(api).options("/runs/wait", headers=asked)
    assert plain.headers["access-control-allow-headers"] == "*"
    assert "access-control-allow-private-network" not in plain.headers
    assert api.reached == []


def test_an_answer_to_an_allowed_page_carries_its_cors_headers_once(api):
    response = client(api).post("/runs/wait", json={}, headers={"origin": "http://localhost:5173"})
    cors = [(k, v) for k, v in response.headers.multi_items() if k.startswith("access-control")]
    assert cors == [
        ("access-control-allow-origin", "http://localhost:5173"),
        (
            "access-control-expose-headers",
            "x-pagination-total, x-pagination-next, content-location",
        ),
    ]
    assert response.headers["vary"] == "Origin"
    assert response.headers["content-type"] == "application/json"  # the API's own are kept


def test_a_page_of_a_configured_host_is_its_own_origin(api):
    c = client(api, allowed_hosts=("notes.lan",))
    response = c.post(
        "/runs/wait",
        json={},
        headers={"host": "notes.lan:2024", "origin": "http://Notes.LAN:2024/"},
    )
    assert response.status_code == 200
    other = c.post(
        "/runs/wait", json={}, headers={"host": "notes.lan:2024", "origin": "http://notes.lan"}
    )
    assert other.status_code == 403


def test_a_body_too_big_is_refused_naming_the_limit_in_mb(api):
    response = client(api, max_request_bytes=3 * 2**20 + 5).post(
        "/runs/wait", content=b"x" * (3 * 2**20 + 6), headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json() == {"detail": "request body larger than 3 MB (RAG_MAX_REQUEST_BYTES)"}


def test_an_mcp_batch_gets_an_error_for_each_refused_call_and_nothing_else_runs(api):
    bad = mcp_call({"ollama_base_url": "http://attacker.example"}, question="x")
    batch = [
        "not a call",
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        bad,
        {**mcp_call(question="y"), "id": 8},
    ]
    response = client(api).post("/mcp", json=batch)
    assert response.status_code == 200
    (error,) = response.json()
    assert error["jsonrpc"] == "2.0" and error["id"] == 7
    assert error["error"]["code"] == -32602 and api.reached == []


def test_an_mcp_call_without_usable_arguments_is_a_400_not_the_apis_500(api):
    # The API reads params and arguments as objects: anything else was its HTTP 500.
    calls = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": "x"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"arguments": "x"}},
    ]
    for call in calls:
        response = client(api).post("/mcp", json=call)
        assert response.status_code == 400 and response.json()["id"] == call["id"]
    assert api.reached == []


def test_every_item_of_a_batch_is_checked_and_a_checkpoint_is_named_as_such(api):
    batch = ["x", {"assistant_id": "a", "config": {"configurable": {"__pregel_runtime": "x"}}}]
    response = client(api).post("/runs/batch", json=batch)
    assert response.status_code == 422 and "__pregel_runtime" in response.json()["detail"]
    response = client(api).post("/runs/wait", json={"checkpoint": {"k": 1}})
    assert response.json()["detail"].startswith("checkpoint may name only")
    # a new thread's supersteps are checked whatever the trailing slash
    command = {"supersteps": [{"updates": [{"command": {"goto": "generate"}}]}]}
    assert client(api).post("/threads/", json=command).status_code == 403
    assert api.reached == []


def test_a_search_naming_state_values_is_not_a_state_update(api):
    search = {"values": {"images": ["x"]}, "supersteps": "not a list", "limit": 5}
    assert client(api).post("/threads/search", json=search).status_code == 200


def test_malformed_json_is_refused_with_the_parsers_reason(api):
    response = client(api).post(
        "/runs/wait", content=b"{nope", headers={"content-type": "application/json"}
    )
    detail = response.json()["detail"]
    assert response.status_code == 400 and detail.startswith("the request body is not valid JSON: ")
    assert "line 1 column" in detail and api.reached == []


def _through_guard(api, messages):
    """Drive the guard with these ASGI request messages; the status it answers."""
    scope = {
        "type": "http", "method": "POST", "path": "/runs/wait", "raw_path": b"/runs/wait",
        "query_string": b"", "root_path": "", "scheme": "http", "server": ("127.0.0.1", 2024),
        "headers": [(b"host", b"127.0.0.1:2024"), (b"content-type", b"application/json")],
    }  # fmt: skip
    incoming = iter(messages)
    sent = []

    async def receive():
        return next(incoming, {"type": "http.disconnect"})

    async def send(message):
        sent.append(message)

    asyncio.run(Guard(api.app, ServingPolicy())(scope, receive, send))
    return sent[0]["status"]


def test_a_body_in_parts_is_read_whole_and_a_disconnect_ends_it(api):
    parts = [{"type": "http.request", "more_body": True}, {"type": "http.request", "body": b"{}"}]
    assert _through_guard(api, parts) == 200
    cut = [{"type": "http.request", "body": b"{}", "more_body": True}]  # then the client leaves
    assert _through_guard(api, cut) == 200
    assert [body for _, body in api.reached] == [b"{}", b"{}"]


def test_what_is_not_a_request_passes_through_the_guard_untouched(api):
    seen = []

    async def app(scope, receive, send):
        seen.append((scope, receive, send))

    async def receive():
        return {"type": "lifespan.startup"}

    async def send(message):
        pass

    scope = {"type": "lifespan"}
    asyncio.run(Guard(app, ServingPolicy(token="t"))(scope, receive, send))
    assert seen == [(scope, receive, send)]


def test_the_health_check_answers_get_and_head_without_the_token(api):
    c = client(api, token="t")
    assert c.get("/ok").status_code == 200 and c.head("/ok").status_code == 200
    assert c.post("/ok", json={}).status_code == 401


@pytest.mark.parametrize(
    ("content", "headers", "status", "detail"),
    [
        (b"1", {"content-type": "text/plain"}, 415, "request bodies must be JSON "
         "(Content-Type: application/json)"),
        (b"{}", {"content-type": "application/json", "content-length": "two"}, 400,
         "Content-Length is not a number"),
        (b"[1,2,3,44]", {"content-type": "application/json"}, 200, None),  # at the limit
        (b"[1,2,3,444]", {"content-type": "application/json"}, 413, None),
        (b"", {}, 200, None),  # a write without a body needs no type
    ],
)  # fmt: skip
def test_a_body_is_bounded_and_typed_at_the_byte(api, content, headers, status, detail):
    response = client(api, max_request_bytes=10).post(
        "/runs/wait", content=content, headers=headers
    )
    assert response.status_code == status
    if detail:
        assert response.json() == {"detail": detail}


def test_a_refused_websocket_is_closed_with_policy_violation_and_the_reason(api):
    with pytest.raises(WebSocketDisconnect) as closed:
        with client(api).websocket_connect(
            "/threads/t/stream/events", headers={**LOCAL, "origin": "https://evil.example"}
        ) as ws:
            ws.receive_text()
    reason = (
        "requests from pages of https://evil.example are refused; allow your own origin with "
        "RAG_ALLOWED_ORIGINS"
    )
    assert (closed.value.code, closed.value.reason) == (1008, reason[:120])


def test_a_refusal_is_json_with_its_length(api):
    response = client(api).post("/runs/wait", content=b"x", headers={"content-type": "text/plain"})
    assert response.headers["content-type"] == "application/json"
    assert int(response.headers["content-length"]) == len(response.content)


@pytest.mark.parametrize(
    ("content_type", "status"),
    [
        ("application/json; charset=utf-8", 200),
        ("application/vnd.api+json", 200),
        ("Application/JSON", 200),
        ("text/x+json", 415),
        ("application/jsonx", 415),
        ("application/json+xml", 415),
    ],
)
def test_json_is_told_by_its_media_type(api, content_type, status):
    response = client(api).post("/runs/wait", content=b"{}", headers={"content-type": content_type})
    assert response.status_code == status


def test_a_request_without_a_host_or_to_an_unserved_route_is_refused_by_name(api):
    scope_headers = [(b"content-type", b"application/json")]  # an HTTP/1.0 client names no Host
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"{}"}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/ok", "headers": scope_headers}
    asyncio.run(Guard(api.app, ServingPolicy())(scope, receive, send))
    assert sent[0]["status"] == 403
    assert json.loads(sent[1]["body"]) == {
        "detail": "host '' is not served here (it is not this machine: a DNS-rebound page?); "
        "add the name to RAG_ALLOWED_HOSTS if it is yours"
    }
    response = client(api).post("/internal/truncate", json={})
    assert (response.status_code, response.json()) == (404, {"detail": "not found"})
    assert api.reached == []
