"""The served graph as an attacker meets it: `langgraph dev` over HTTP, models recorded.

A recording model server stands in for Ollama (it answers just enough of the API and keeps
every request body), and a second one stands in for a host the attacker controls. Every
attack is replayed against the project's own langgraph.json: a state update then a run, a
Command, a checkpoint replay, a custom assistant, a cron, /mcp, a batch, a cross-origin
text/plain POST, a foreign Host, a WebSocket from a foreign page, a webhook, big images,
foreign model names. Nothing may reach the attacker's server, no folder may be created, no
run may start where it must not. Each is paired with the legitimate request that does work,
so a broken server cannot pass them.
"""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from tests.integration_tests.conftest import HTTP, ROOT, langgraph_dev

SECRET = b"\x89PNG\r\n\x1a\nSECRET-KEY-MATERIAL-7f3a"
INLINE_PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


class Recorder:
    """A minimal Ollama API on loopback that remembers every request it receives."""

    def __init__(self, keep_bodies: bool = True) -> None:
        self.requests: list[tuple[str, bytes]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep the test output quiet
                pass

            def _reply(self, body: dict, ndjson: bool = False) -> None:
                data = json.dumps(body).encode() + (b"\n" if ndjson else b"")
                self.send_response(200)
                self.send_header(
                    "Content-Type", "application/x-ndjson" if ndjson else "application/json"
                )
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                recorder.requests.append((self.path, b""))
                self._reply({"version": "0.9.0"} if self.path == "/api/version" else {})

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                recorder.requests.append((self.path, body if keep_bodies else body[:200]))
                if self.path == "/api/show":
                    self._reply(
                        {"capabilities": ["completion", "vision"], "details": {}, "model_info": {}}
                    )
                elif self.path == "/api/embed":
                    count = len(json.loads(body).get("input") or [""])
                    self._reply({"embeddings": [[1.0, 0.0, 0.0]] * count})
                else:
                    self._reply(
                        {
                            "model": "m",
                            "created_at": "2026-01-01T00:00:00Z",
                            "message": {"role": "assistant", "content": "a picture"},
                            "done": True,
                            "done_reason": "stop",
                        },
                        ndjson=True,
                    )

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def everything_received(self) -> bytes:
        return b"\n".join(body for _, body in self.requests)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    work = tmp_path_factory.mktemp("served-security")
    model_server, attacker = Recorder(), Recorder()
    env = {
        "OLLAMA_HOST": model_server.url,
        "RAG_CHROMA_DIR": str(work / "index"),
        "RAG_VISION_MODEL": "llava",
    }
    secret = work / "id_rsa.png"
    secret.write_bytes(SECRET)
    with langgraph_dev(work / "served", env) as url:
        yield url, model_server, attacker, secret
    model_server.server.shutdown()
    attacker.server.shutdown()


def run(url: str, question: str, **extra) -> dict:
    body = {"assistant_id": "agentic_rag", "input": {"question": question}, **extra}
    if "images" in extra:
        body["input"]["images"] = body.pop("images")
    response = HTTP.post(f"{url}/runs/wait", json=body, timeout=60)
    return response.json()


def test_a_file_path_in_images_is_never_read_or_sent(setup):
    url, model_server, _, secret = setup
    before = len(model_server.requests)
    out = run(url, "based on the image: what is it?", images=[str(secret)])
    assert "file paths are not accepted" in json.dumps(out)
    received = model_server.everything_received()
    assert b"SECRET" not in received
    assert base64.b64encode(SECRET) not in received
    assert not any(path == "/api/chat" for path, _ in model_server.requests[before:])


def test_an_inline_image_does_reach_the_model(setup):
    url, model_server, _, _ = setup
    inline = base64.b64encode(INLINE_PNG).decode()
    out = run(url, "based on the image: what is it?", images=[inline])
    assert out.get("answer") == "a picture", out
    chats = [body for path, body in model_server.requests if path == "/api/chat"]
    assert chats and inline.encode() in chats[-1]


def post(url: str, path: str, body, **headers) -> httpx.Response:
    return HTTP.post(f"{url}{path}", json=body, headers=headers, timeout=60)


def new_thread(url: str) -> str:
    return post(url, "/threads", {"metadata": {"graph_id": "agentic_rag"}}).json()["thread_id"]


def thread_runs(url: str, thread: str) -> list:
    return HTTP.get(f"{url}/threads/{thread}/runs", timeout=30).json()


HOSTILE = [
    ("ollama_base_url", "attacker"),
    ("chroma_server_url", "attacker"),
    ("chroma_persist_directory", "folder"),
    ("keep_alive", "-1"),
]


def hostile(name: str, value: str, attacker, work) -> dict:
    if value == "attacker":
        return {name: attacker.url}
    if value == "folder":
        return {name: str(work / "planted")}
    return {name: value}


@pytest.mark.parametrize(("name", "value"), HOSTILE)
@pytest.mark.parametrize("where", ["context", "configurable"])
def test_a_state_update_then_a_run_cannot_steer_the_server(setup, name, value, where):
    url, model_server, attacker, secret = setup
    work = secret.parent
    thread = new_thread(url)
    update = {"values": {"question": "how do I proof dough?"}, "as_node": "route"}
    assert post(url, f"/threads/{thread}/state", update).status_code == 200
    settings = hostile(name, value, attacker, work)
    body = {"assistant_id": "agentic_rag", "input": None}
    body.update(
        {"context": settings} if where == "context" else {"config": {"configurable": settings}}
    )
    before = len(model_server.requests)
    response = post(url, f"/threads/{thread}/runs/wait", body)
    assert response.status_code == 403, response.text
    assert f"{name} cannot be set by a request" in response.json()["detail"]
    assert attacker.requests == [] and len(model_server.requests) == before
    assert thread_runs(url, thread) == []  # refused before a run existed
    assert not (work / "planted").exists()


def test_a_command_cannot_skip_the_route(setup):
    url, model_server, attacker, _ = setup
    before = len(model_server.requests)
    body = {
        "assistant_id": "agentic_rag",
        "command": {"update": {"question": "x"}, "goto": "retrieve"},
        "context": {"k": 3},
    }
    response = post(url, "/runs/wait", body)
    assert response.status_code == 403 and "'command'" in response.json()["detail"]
    assert len(model_server.requests) == before and attacker.requests == []


def test_a_checkpoint_replay_cannot_steer_the_server(setup):
    url, model_server, attacker, _ = setup
    thread = new_thread(url)
    first = post(
        url,
        f"/threads/{thread}/runs/wait",
        {"assistant_id": "agentic_rag", "input": {"question": "calculate: 6*7"}},
    )
    assert first.json()["answer"] == "6*7 = 42"
    history = post(url, f"/threads/{thread}/history", {"limit": 10}).json()
    after_route = next(h for h in history if h["next"] == ["calculator"])
    checkpoint = after_route["checkpoint"]["checkpoint_id"]
    replay = {"assistant_id": "agentic_rag", "input": None, "checkpoint_id": checkpoint}
    refused = post(
        url,
        f"/threads/{thread}/runs/wait",
        {**replay, "context": {"ollama_base_url": attacker.url}},
    )
    assert refused.status_code == 403 and attacker.requests == []
    # the same replay with the server's own settings runs
    assert post(url, f"/threads/{thread}/runs/wait", replay).json()["answer"] == "6*7 = 42"


def test_an_assistant_cannot_carry_server_settings(setup):
    url, _, attacker, _ = setup
    created = post(
        url,
        "/assistants",
        {"graph_id": "agentic_rag", "context": {"ollama_base_url": attacker.url}},
    )
    assert created.status_code == 403
    created = post(
        url,
        "/assistants",
        {
            "graph_id": "agentic_rag",
            "config": {"configurable": {"chroma_server_url": attacker.url}},
        },
    )
    assert created.status_code == 403
    fine = post(url, "/assistants", {"graph_id": "agentic_rag", "context": {"k": 3}})
    assert fine.status_code == 200
    assistant = fine.json()["assistant_id"]
    patched = HTTP.patch(
        f"{url}/assistants/{assistant}",
        json={"context": {"ollama_base_url": attacker.url}},
        timeout=30,
    )
    assert patched.status_code == 403
    out = post(
        url, "/runs/wait", {"assistant_id": assistant, "input": {"question": "calculate: 2*3"}}
    )
    assert out.json()["answer"] == "2*3 = 6" and attacker.requests == []


def test_a_cron_and_a_batch_cannot_carry_server_settings(setup):
    url, _, attacker, _ = setup
    cron = {
        "assistant_id": "agentic_rag",
        "schedule": "* * * * *",
        "input": {"question": "x"},
        "context": {"ollama_base_url": attacker.url},
    }
    assert post(url, "/runs/crons", cron).status_code == 403
    batch = [
        {
            "assistant_id": "agentic_rag",
            "input": {"question": "x"},
            "context": {"ollama_base_url": attacker.url},
        }
    ]
    assert post(url, "/runs/batch", batch).status_code == 403
    assert attacker.requests == []


def mcp(url: str, call: dict) -> httpx.Response:
    headers = {"accept": "application/json, text/event-stream"}
    return HTTP.post(f"{url}/mcp", json=call, headers=headers, timeout=60)


def test_an_mcp_call_cannot_steer_the_server_and_says_why(setup):
    url, _, attacker, _ = setup
    params = {"name": "agentic_rag", "arguments": {"question": "calculate: 2+2"}}
    refused = mcp(
        url,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {**params, "context": {"ollama_base_url": attacker.url}},
        },
    )
    assert refused.status_code == 200
    assert "ollama_base_url cannot be set" in refused.json()["error"]["message"]
    answered = mcp(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params})
    assert "2+2 = 4" in json.dumps(answered.json()["result"])
    assert attacker.requests == []


@pytest.mark.parametrize("origin", ["https://evil.example", None])
def test_a_text_plain_post_starts_no_run(setup, origin):
    url, model_server, _, _ = setup
    before = len(model_server.requests)
    thread = new_thread(url)
    body = json.dumps(
        {"assistant_id": "agentic_rag", "input": {"question": "what do my notes say?"}}
    )
    headers = {"content-type": "text/plain"} | ({"origin": origin} if origin else {})
    response = HTTP.post(
        f"{url}/threads/{thread}/runs/wait", content=body, headers=headers, timeout=30
    )
    assert response.status_code in (403, 415)
    assert thread_runs(url, thread) == [] and len(model_server.requests) == before


def test_a_foreign_host_reads_nothing(setup):
    url, _, _, _ = setup
    thread = new_thread(url)
    post(
        url,
        f"/threads/{thread}/runs/wait",
        {"assistant_id": "agentic_rag", "input": {"question": "calculate: 1+1"}},
    )
    rebound = {"host": "evil.example:2024"}
    assert HTTP.get(f"{url}/threads/{thread}/state", headers=rebound).status_code == 403
    assert HTTP.post(f"{url}/threads/search", json={}, headers=rebound).status_code == 403
    assert HTTP.get(f"{url}/threads/{thread}/state").status_code == 200


def test_a_websocket_from_a_foreign_page_is_refused(setup):
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    url = setup[0]
    thread = new_thread(url)
    ws_url = url.replace("http://", "ws://") + f"/threads/{thread}/stream/events"
    with pytest.raises(InvalidStatus) as refused:
        connect(ws_url, origin="https://evil.example", open_timeout=10)
    assert refused.value.response.status_code == 403
    with connect(ws_url, origin="http://localhost:3000", open_timeout=10) as ws:
        assert ws.protocol.state.name == "OPEN"


def test_webhooks_are_refused(setup):
    url, model_server, _, _ = setup
    before = len(model_server.requests)
    # Addresses only, all of them refused by the URL policy of langgraph.json: nothing is
    # resolved or contacted, even if the project's own refusal (webhooks off, tested in
    # the unit lane) were gone.
    for hook in ("https://10.1.2.3/hook", "https://192.168.0.1/hook", "https://203.0.113.9/hook"):
        body = {
            "assistant_id": "agentic_rag",
            "input": {"question": "calculate: 1+1"},
            "webhook": hook,
        }
        response = post(url, "/runs/wait", body)
        assert response.status_code in (403, 422), response.text
    assert len(model_server.requests) == before
    policy = json.loads((ROOT / "langgraph.json").read_text())["webhooks"]["url"]
    assert policy["disable_private_ips"] and policy["disable_loopback"]


def test_foreign_models_and_context_sizes_are_refused(setup):
    url, model_server, _, _ = setup
    before = len(model_server.requests)
    for context, message in (
        ({"chat_model": "llama3.1:405b"}, "not one of this server's models"),
        ({"vision_model": "anything:70b"}, "not one of this server's models"),
        ({"num_ctx": 262144}, "above this server's ceiling"),
    ):
        response = post(
            url,
            "/runs/wait",
            {"assistant_id": "agentic_rag", "input": {"question": "hi"}, "context": context},
        )
        assert response.status_code == 422 and message in response.json()["detail"]
    assert len(model_server.requests) == before
    ok = post(
        url,
        "/runs/wait",
        {
            "assistant_id": "agentic_rag",
            "input": {"question": "calculate: 3*3"},
            "context": {"chat_model": "llama3.1:8b", "num_ctx": 4096},
        },
    )
    assert ok.json()["answer"] == "3*3 = 9"


def test_a_body_too_big_is_refused_before_anything_runs(setup):
    url, model_server, _, _ = setup
    before = len(model_server.requests)
    big = base64.b64encode(INLINE_PNG + b"\x00" * (20 * 2**20)).decode()
    body = {
        "assistant_id": "agentic_rag",
        "input": {"question": "based on the image: x", "images": [big, big]},
    }
    response = HTTP.post(f"{url}/runs/wait", json=body, timeout=60)
    assert response.status_code == 413
    assert len(model_server.requests) == before


def test_the_thread_and_the_run_record_hold_no_image_bytes(setup):
    url, model_server, _, _ = setup
    inline = base64.b64encode(INLINE_PNG + b"IMAGE-BYTES" * 20).decode()
    thread = new_thread(url)
    body = {
        "assistant_id": "agentic_rag",
        "input": {"question": "based on the image: what is it?", "images": [inline]},
    }
    out = post(url, f"/threads/{thread}/runs/wait", body).json()
    assert out["answer"] == "a picture"
    assert inline.encode() in model_server.requests[-1][1]  # the model did see it
    state = HTTP.get(f"{url}/threads/{thread}/state").text
    history = post(url, f"/threads/{thread}/history", {"limit": 20}).text
    (record,) = thread_runs(url, thread)
    assert inline not in state and inline not in history and inline not in json.dumps(record)
    assert "rag-image:" in json.dumps(record)


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("https://evil.example", False),
        ("http://localhost.evil.example", False),
        ("https://smith.langchain.com", True),
        ("http://localhost:5173", True),
        ("http://127.0.0.1:8080", True),
    ],
)
def test_cors_preflight_only_for_studio_and_loopback(setup, origin, allowed):
    url = setup[0]
    response = HTTP.request(
        "OPTIONS",
        f"{url}/runs/wait",
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    granted = response.headers.get("access-control-allow-origin") in (origin, "*")
    assert granted is allowed, (origin, response.status_code, dict(response.headers))


STUDIO = {"origin": "https://smith.langchain.com", "x-auth-scheme": "langsmith"}


def test_studio_state_updates_and_runs_keep_working_without_a_token(setup):
    url, model_server, attacker, _ = setup
    thread = post(url, "/threads", {"metadata": {"graph_id": "agentic_rag"}}, **STUDIO).json()
    thread = thread["thread_id"]
    # Studio's "edit state, continue": the run goes on from after route, on the server's
    # own settings (a request has no way to name others)
    update = {
        "values": {"question": "calculate: 2*21", "route": "calculator"},
        "as_node": "route",
    }
    assert post(url, f"/threads/{thread}/state", update, **STUDIO).status_code == 200
    body = {"assistant_id": "agentic_rag", "input": None, "context": {"k": 3}}
    out = post(url, f"/threads/{thread}/runs/wait", body, **STUDIO)
    assert out.status_code == 200 and out.json()["answer"] == "2*21 = 42", out.text
    assert out.headers["access-control-allow-origin"] == STUDIO["origin"]
    assert attacker.requests == []


# ------------------------------------------------ only what the graph takes is stored


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"junk": "x" * 2**20}, "junk"),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "image_url",
                                "image_url": {
                                    "url": "data:image/png;base64,"
                                    + base64.b64encode(INLINE_PNG + b"IMG" * 1000).decode()
                                },
                            }
                        ],
                    }
                ]
            },
            "messages",
        ),
    ],
)
def test_a_run_input_beyond_the_graphs_input_is_refused_and_not_stored(setup, extra, named):
    url, model_server, _, _ = setup
    before = len(model_server.requests)
    thread = new_thread(url)
    body = {"assistant_id": "agentic_rag", "input": {"question": "calculate: 1+1", **extra}}
    response = post(url, f"/threads/{thread}/runs/wait", body)
    assert response.status_code == 422, response.text[:300]
    detail = response.json()["detail"]
    assert named in detail and "its input is images and question" in detail
    assert len(detail) < 300  # one line, not the value echoed back
    assert thread_runs(url, thread) == [] and len(model_server.requests) == before
    # the graph's own input on the same thread does run
    ok = post(
        url, f"/threads/{thread}/runs/wait", {**body, "input": {"question": "calculate: 1+1"}}
    )
    assert ok.json()["answer"] == "1+1 = 2"


def test_metadata_is_bounded_on_runs_threads_and_assistants(setup):
    url = setup[0]
    big = {"graph_id": "agentic_rag", "junk": "x" * 100_000}
    for path, body in (
        ("/threads", {"metadata": big}),
        (
            "/runs/wait",
            {
                "assistant_id": "agentic_rag",
                "input": {"question": "calculate: 1+1"},
                "metadata": big,
            },
        ),
        ("/assistants", {"graph_id": "agentic_rag", "metadata": big}),
    ):
        response = post(url, path, body)
        assert response.status_code == 422, (path, response.text[:300])
        assert "RAG_MAX_METADATA_BYTES" in response.json()["detail"]
    thread = new_thread(url)
    patched = HTTP.patch(f"{url}/threads/{thread}", json={"metadata": big}, timeout=30)
    assert patched.status_code == 422
    assert (
        post(url, "/threads", {"metadata": {"graph_id": "agentic_rag", "title": "t"}}).status_code
        == 200
    )


def test_a_question_is_bounded_and_never_sent_whole_to_the_model(setup):
    url, model_server, _, _ = setup
    before = len(model_server.requests)
    question = "what do my notes say about " + "sourdough " * 10_000  # 100 KB
    response = post(
        url, "/runs/wait", {"assistant_id": "agentic_rag", "input": {"question": question}}
    )
    assert response.status_code == 422
    assert "RAG_MAX_QUESTION_CHARS" in response.json()["detail"]
    openai = post(
        url,
        "/v1/chat/completions",
        {"model": "notes", "messages": [{"role": "user", "content": question}]},
    )
    assert openai.status_code == 422
    assert "RAG_MAX_QUESTION_CHARS" in openai.json()["error"]["message"]
    assert len(model_server.requests) == before
    # a long pasted question (a few KB) is a question like any other
    pasted = "calculate: 2*3\n" + "# a pasted log line, kept for context\n" * 150
    assert (
        post(
            url, "/runs/wait", {"assistant_id": "agentic_rag", "input": {"question": pasted}}
        ).status_code
        == 200
    )


def test_a_state_update_cannot_write_images_or_large_values_into_a_thread(setup):
    url, model_server, _, _ = setup
    inline = base64.b64encode(INLINE_PNG + b"STATE-IMAGE" * 100).decode()
    thread = new_thread(url)
    image_part = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{inline}"}}
    for values, reason in (
        ({"question": "what is it?", "images": [inline]}, "images are not written"),
        ({"messages": [{"type": "human", "content": [image_part]}]}, "text only"),
        ({"answer": "a" * 2**20}, "RAG_MAX_STATE_UPDATE_BYTES"),
    ):
        update = {"values": values, "as_node": "route"}
        response = post(url, f"/threads/{thread}/state", update)
        assert response.status_code == 422, response.text[:300]
        assert reason in response.json()["detail"]
    steps = {"supersteps": [{"updates": [{"values": {"images": [inline]}, "as_node": "route"}]}]}
    assert post(url, "/threads", steps).status_code == 422
    history = post(url, f"/threads/{thread}/history", {"limit": 20}).text
    assert inline not in history and "STATE-IMAGE" not in history
    # a text edit, as Studio makes one, is kept
    edit = {"values": {"question": "calculate: 2*21"}, "as_node": "route"}
    assert post(url, f"/threads/{thread}/state", edit).status_code == 200
    assert "calculate: 2*21" in HTTP.get(f"{url}/threads/{thread}/state").text


# ------------------------------------------------------- the boundary is closed, not listed


@pytest.mark.parametrize(
    "extra",
    [
        {"config": {"configurable": {"__pregel_runtime": "x"}}},
        {"config": {"configurable": {"__pregel_checkpointer": "x"}}},
        {"config": {"configurable": {"k": 3}}},
        {"checkpoint": {"__pregel_runtime": "x"}},
    ],
)
def test_configurable_names_only_a_thread_and_a_checkpoint(setup, extra):
    url, model_server, _, _ = setup
    before = len(model_server.requests)
    thread = new_thread(url)
    body = {"assistant_id": "agentic_rag", "input": {"question": "calculate: 1+1"}, **extra}
    response = post(url, f"/threads/{thread}/runs/wait", body)
    assert response.status_code == 422, response.text[:300]
    assert "may name only the thread and checkpoint" in response.json()["detail"]
    assert thread_runs(url, thread) == [] and len(model_server.requests) == before


@pytest.mark.parametrize("path", ["/mcp", "/v1/chat/completions", "/runs/wait", "/threads"])
def test_deep_json_is_a_4xx_on_every_route(setup, path):
    url = setup[0]
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    response = HTTP.post(f"{url}{path}", content="[" * 200_000, headers=headers, timeout=60)
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:300])
    nested = '{"a": ' * 500 + "1" + "}" * 500
    response = HTTP.post(f"{url}{path}", content=nested, headers=headers, timeout=60)
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:300])
    assert HTTP.get(f"{url}/ok").status_code == 200


# ---------------------------------------------- issue #50: routes the product does not use


def test_the_store_is_closed(setup):
    url = setup[0]
    item = {"namespace": ["notes"], "key": "k", "value": {"v": "x" * 100_000}}
    put = HTTP.put(f"{url}/store/items", json=item, timeout=30)
    assert put.status_code == 404, put.text[:300]
    assert put.json() == {"detail": "the store is not served here: this graph keeps nothing in it"}
    got = HTTP.get(f"{url}/store/items", params={"namespace": "notes", "key": "k"}, timeout=30)
    assert got.status_code == 404
    assert post(url, "/store/items/search", {"namespace_prefix": ["notes"]}).status_code == 404


def test_a_cron_is_refused_when_created_and_crons_still_list(setup):
    url = setup[0]
    cron = {"assistant_id": "agentic_rag", "schedule": "* * * * *", "input": {"question": "x"}}
    refused = post(url, "/runs/crons", cron)
    assert refused.status_code == 403 and refused.json()["detail"].startswith("crons are off")
    thread = new_thread(url)
    assert post(url, f"/threads/{thread}/runs/crons", cron).status_code == 403
    assert post(url, "/runs/crons/search", {}).json() == []


@pytest.mark.parametrize("field", ["interrupt_before", "interrupt_after"])
def test_a_run_that_asks_to_pause_is_refused(setup, field):
    url, model_server, _, _ = setup
    before = len(model_server.requests)
    thread = new_thread(url)
    body = {"assistant_id": "agentic_rag", "input": {"question": "calculate: 1+1"}, field: "*"}
    response = post(url, f"/threads/{thread}/runs/wait", body)
    assert response.status_code == 403 and f"'{field}'" in response.json()["detail"]
    assert thread_runs(url, thread) == [] and len(model_server.requests) == before


@pytest.mark.parametrize(
    "params", ["x", None, [1], {"name": "agentic_rag", "arguments": "x"}, {"cursor": {}}]
)
def test_a_malformed_mcp_call_is_a_400_not_a_500(setup, params):
    url = setup[0]
    method = "tools/list" if params == {"cursor": {}} else "tools/call"
    response = mcp(url, {"jsonrpc": "2.0", "id": 3, "method": method, "params": params})
    assert response.status_code == 400, response.text[:300]
    assert response.json()["error"]["code"] == -32602 and response.json()["id"] == 3


def test_a_webhook_naming_a_host_is_refused_by_the_project(setup):
    url = setup[0]
    body = {
        "assistant_id": "agentic_rag",
        "input": {"question": "calculate: 1+1"},
        "webhook": "https://hooks.attacker.example/x",
    }
    response = post(url, "/runs/wait", body)
    # The project's refusal (before LangGraph resolves the name), not LangGraph's own.
    assert response.status_code == 403
    assert response.json() == {"detail": "webhooks are off on this server (RAG_WEBHOOKS)"}


def test_a_run_started_over_v2_streaming_gets_the_same_checks(setup):
    from websockets.sync.client import connect

    url, _, attacker, _ = setup
    thread = new_thread(url)
    start = {"assistant_id": "agentic_rag", "input": {"question": "calculate: 2*3"}}
    command = {"id": 1, "method": "run.start", "params": start}
    started = post(url, f"/threads/{thread}/commands", command).json()
    assert started["type"] == "success", started
    run_id = started["result"]["run_id"]
    joined = HTTP.get(f"{url}/threads/{thread}/runs/{run_id}/join", timeout=60).json()
    # A v2 run's last values come as a v2 event.
    assert joined["params"]["data"]["answer"] == "2*3 = 6", joined
    hostile = {**start, "config": {"configurable": {"ollama_base_url": attacker.url}}}
    refused = post(url, f"/threads/{thread}/commands", {**command, "params": hostile}).json()
    assert refused["type"] == "error" and "cannot be set by a request" in refused["message"]
    ws_url = url.replace("http://", "ws://") + f"/threads/{thread}/stream/events"
    with connect(ws_url, open_timeout=10) as ws:
        ws.send(json.dumps({**command, "id": 2}))
        answer = next(m for m in map(json.loads, ws) if m.get("id") == 2)
    assert answer["type"] == "success", answer
    assert attacker.requests == []


def test_side_fields_are_bounded_and_never_stored(setup):
    # Issue #50 item 1: before, nine such runs made `GET /threads/{id}/runs` 42 MB and an
    # assistant's 2 MB name was listed as an MCP tool.
    url, model_server, _, _ = setup
    before = len(model_server.requests)
    thread = new_thread(url)
    run_body = {"assistant_id": "agentic_rag", "input": {"question": "calculate: 1+1"}}
    big = "x" * 2**20
    for extra in (
        {"config": {"metadata": {"junk": big}}},
        {"config": {"tags": [big]}},
        {"config": {"run_name": big}},
        {"config": {"junk": big}},
        {"context": {"calculator_trigger": big}},
        {"context": {"tags": [big]}},
        {"feedback_keys": [big]},
        {"langsmith_tracer": {"project_name": big}},
        {"junk": big},
    ):
        response = post(url, f"/threads/{thread}/runs/wait", {**run_body, **extra})
        assert response.status_code == 422, (list(extra), response.text[:300])
        assert len(response.text) < 400  # the reason, not the value echoed back
    command = {"id": 1, "method": "run.start", "params": {**run_body, "config": {"tags": [big]}}}
    refused = post(url, f"/threads/{thread}/commands", command).json()
    assert refused["type"] == "error" and "config.tags" in refused["message"], refused
    assert thread_runs(url, thread) == [] and len(model_server.requests) == before
    for extra in ({"name": big}, {"description": big}, {"config": {"tags": [big]}}):
        response = post(url, "/assistants", {"graph_id": "agentic_rag", **extra})
        assert response.status_code == 422, (list(extra), response.text[:300])
    listed = mcp(url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).json()
    assert all(len(json.dumps(tool)) < 20_000 for tool in listed["result"]["tools"])
    # What Studio sends still runs, and its record stays small.
    studio = {
        **run_body,
        "config": {"recursion_limit": 50, "tags": ["studio"], "metadata": {"from_studio": True}},
        "metadata": {"from_studio": True},
        "stream_mode": ["values"],
        "stream_subgraphs": True,
        "multitask_strategy": "enqueue",
        "on_disconnect": "cancel",
        "if_not_exists": "create",
        "durability": "async",
    }
    ok = post(url, f"/threads/{thread}/runs/wait", studio, **STUDIO)
    assert ok.status_code == 200 and ok.json()["answer"] == "1+1 = 2", ok.text[:300]
    listing = HTTP.get(f"{url}/threads/{thread}/runs", timeout=30)
    assert len(listing.json()) == 1 and len(listing.content) < 20_000
