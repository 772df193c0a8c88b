"""LangSmith tracing is opt-in: nothing is sent when off; runs are named, tagged and
annotated when on. A local HTTP server stands in for the LangSmith API."""

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.integration_tests.conftest import ROOT

SCRIPT = """
import tempfile
from langchain_core.tracers.langchain import wait_for_all_tracers
from graph.builder import build_graph
from graph.context import Context
from graph.tracing import run_config
from tests.fakes import FakeModels
ctx = Context(chroma_persist_directory=tempfile.mkdtemp(), k=3)
graph = build_graph(models=FakeModels())
graph.invoke({"question": "calculate: 2+2"}, run_config(ctx), context=ctx)
wait_for_all_tracers()
print("done")
"""


@pytest.fixture
def langsmith_api():
    received = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _reply(self, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            received.append((self.path, self.rfile.read(length)))
            self._reply(b"{}")

        do_PATCH = do_POST

        def do_GET(self):  # noqa: N802
            received.append((self.path, b""))
            self._reply(
                json.dumps(
                    {
                        "batch_ingest_config": {
                            "use_multipart_endpoint": False,
                            "size_limit": 100,
                            "size_limit_bytes": 2_000_000,
                            "scale_up_qsize_trigger": 1000,
                            "scale_up_nthreads_limit": 1,
                            "scale_down_nempty_trigger": 4,
                        }
                    }
                ).encode()
            )

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", received
    server.shutdown()


def run_script(endpoint: str, **env: str) -> None:
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith(("LANGSMITH_", "LANGCHAIN_"))
    }
    environment.update(
        PYTHONPATH=str(ROOT), LANGSMITH_ENDPOINT=endpoint, LANGSMITH_API_KEY="lsv2-test-key", **env
    )
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        env=environment,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0 and "done" in result.stdout, result.stderr


def test_nothing_is_sent_when_tracing_is_off(langsmith_api):
    endpoint, received = langsmith_api
    run_script(endpoint)  # a key and an endpoint, but LANGSMITH_TRACING unset
    run_script(endpoint, LANGSMITH_TRACING="false")
    assert received == []


def test_runs_are_named_tagged_and_annotated_when_on(langsmith_api):
    endpoint, received = langsmith_api
    run_script(endpoint, LANGSMITH_TRACING="true", LANGSMITH_PROJECT="notes-rag-test")
    posted = b"".join(body for path, body in received if path.startswith("/runs"))
    assert b'"name":"agentic_rag"' in posted
    assert b"route:calculator" in posted  # the route node's run is tagged with the branch
    assert b'"chat_model":"llama3.1:8b"' in posted
    assert b'"score_threshold":0.5' in posted and b'"k":3' in posted
    assert b"notes-rag-test" in posted
