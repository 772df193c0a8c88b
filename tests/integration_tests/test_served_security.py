"""The served graph as an attacker meets it: `langgraph dev` over HTTP, models recorded.

A recording model server stands in for Ollama (it answers just enough of the API and keeps
every request body), and a second one stands in for a host the attacker controls. The
checks: a file named in `images` is never read nor sent; a run cannot point the server at
another host; a preflight from a foreign web page gets no CORS allow header. Each is paired
with the legitimate request that does work, so a broken server cannot pass them.
"""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from tests.integration_tests.conftest import langgraph_dev

SECRET = b"\x89PNG\r\n\x1a\nSECRET-KEY-MATERIAL-7f3a"
INLINE_PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


class Recorder:
    """A minimal Ollama API on loopback that remembers every request it receives."""

    def __init__(self) -> None:
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
                recorder.requests.append((self.path, body))
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
    response = httpx.post(f"{url}/runs/wait", json=body, timeout=60)
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


def test_a_run_cannot_send_the_server_to_another_host(setup):
    url, model_server, attacker, _ = setup
    out = run(
        url,
        "what is the meaning of my notes?",
        context={"ollama_base_url": attacker.url},
    )
    assert "answer" in out  # answered by the server's own model server
    assert attacker.requests == []
    assert model_server.requests
    allowed = run(url, "calculate: 6*7", context={"k": 3})
    assert allowed.get("answer") == "6*7 = 42"


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
    response = httpx.request(
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
