"""One of each (Ollama client and its errors, cause-chain walk, cache path), no lock held while
Chroma opens, errors that name their cause, and no process-wide side effect on import."""

from __future__ import annotations

import ast
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from graph.context import Context
from graph.errors import (
    ConfigError,
    OllamaBrokenOff,
    OllamaHTTPError,
    OllamaModelMissing,
    OllamaTimeout,
    OllamaUnreachable,
    RagError,
    ServiceError,
    find_cause,
    ollama_errors,
)
from graph.index.catalog import catalog_path
from graph.index.ingest import load_lock
from graph.index.paths import server_id
from graph.index.vectorstore import get_collection, notes_have_images, open_client
from graph.models import OllamaModels, _ollama_chat, _ollama_embeddings
from graph.ollama import OllamaClient, tls_context

ROOT = Path(__file__).resolve().parents[2]
URL = "http://localhost:11434"

# --- one Ollama error mapping for langchain-ollama's client and the project's own ---------

#: Each failure as the server (or the connection) produces it, and the error both clients give.
FAILURES = {
    "refused": (httpx.ConnectError("[Errno 111] Connection refused"), OllamaUnreachable),
    "slow": (httpx.ReadTimeout("timed out"), OllamaTimeout),
    "cut": (httpx.RemoteProtocolError("peer closed connection"), OllamaBrokenOff),
    "500": (httpx.Response(500, json={"error": "llama runner terminated"}), OllamaHTTPError),
    "missing": (httpx.Response(404, json={"error": "model 'm' not found"}), OllamaModelMissing),
}


def answering(failure):
    def handler(request):
        if isinstance(failure, httpx.Response):
            return failure
        failure.request = request
        raise failure

    return httpx.MockTransport(handler)


@pytest.mark.parametrize("name", FAILURES)
def test_both_ollama_clients_fail_with_the_same_error(name):
    import ollama

    failure, expected = FAILURES[name]
    with pytest.raises(expected) as theirs, ollama_errors(URL, "m"):
        ollama.Client(host=URL, transport=answering(failure)).show("m")
    with pytest.raises(expected) as ours:
        OllamaClient(URL, 5.0, transport=answering(failure)).post("/api/show", {"model": "m"})
    assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)
    if name == "500":
        assert "llama runner terminated" in str(ours.value) and "HTTP 500" in str(ours.value)


def test_an_answer_that_is_not_json_is_named_as_such():
    page = httpx.Response(200, text="<html>router login</html>")
    with pytest.raises(ServiceError, match="not JSON .*router login"):
        OllamaClient(URL, 5.0, transport=answering(page)).get("/api/version")


def test_every_ollama_client_of_a_process_shares_one_tls_context(monkeypatch):
    """httpx reads every CA certificate for each client that brings its own context (~80 ms);
    a question builds several models, each with two clients."""
    import ssl

    import langchain_ollama  # noqa: F401  (ollama's module-level default client has its own)

    built = []
    create = ssl.create_default_context
    monkeypatch.setattr(
        ssl, "create_default_context", lambda *a, **k: built.append(1) or create(*a, **k)
    )
    for cache in (tls_context, _ollama_chat, _ollama_embeddings):
        cache.cache_clear()
    try:
        for purpose in ("route_calculator", "route_image", "grade", "generate"):
            _ollama_chat(purpose, URL, "m", 4096, 60.0, None, False, None)
        _ollama_embeddings(URL, "e", 60.0)
        OllamaClient(URL, 5.0, transport=answering(httpx.Response(200, json={}))).get("/")
        assert len(built) == 1
        assert tls_context().verify_mode == ssl.CERT_REQUIRED and tls_context().check_hostname
    finally:
        for cache in (tls_context, _ollama_chat, _ollama_embeddings):
            cache.cache_clear()


def test_what_is_no_ollama_failure_passes_through_unchanged():
    with pytest.raises(KeyError), ollama_errors(URL, "m"):
        raise KeyError("a bug, not a server problem")


# --- one cause-chain walk -------------------------------------------------------------------


def wrapped(exc, times):
    for i in range(times):
        try:
            raise exc
        except BaseException:
            try:
                raise RuntimeError(f"framework layer {i}")  # chained to exc as __context__
            except RuntimeError as outer:
                exc = outer
    return exc


def test_a_cause_is_found_however_deep_the_wrapping():
    root = ConfigError("bad setting")
    assert find_cause(wrapped(root, 3), RagError) is root
    assert find_cause(wrapped(root, 25), RagError) is root  # the old walks gave up after 10
    assert find_cause(wrapped(KeyError("x"), 3), RagError) is None


def test_a_cause_chain_with_a_loop_ends():
    first, second = RuntimeError("a"), RuntimeError("b")
    first.__context__, second.__context__ = second, first
    assert find_cause(first, RagError) is None


# --- one cache path, an empty variable meaning unset ----------------------------------------


def test_an_empty_xdg_cache_home_means_the_home_cache_not_the_working_folder(tmp_path, monkeypatch):
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    monkeypatch.chdir(cwd)
    server = "http://localhost:8000"
    context = Context(chroma_server_url=server, collection_name="notes")
    cache = home / ".cache" / "notes-rag"
    with load_lock(context, notify=lambda message: None):
        pass
    assert (cache / f"{server_id(server)}-notes.lock").exists()
    collection = SimpleNamespace(id="c1")
    assert catalog_path(context, collection) == cache / "catalog" / server_id(server) / "c1.sqlite3"
    assert list(cwd.iterdir()) == []


# --- Chroma: no lock held while a client opens; "missing" by type, not by text --------------


class FakeChromaServers:
    """Stands in for ``chromadb.HttpClient``: every host answers at once but ``slow_host``,
    whose client is not handed out before ``release`` is set."""

    def __init__(self, slow_host="", error=None):
        self.slow_host, self.error = slow_host, error
        self.entered, self.release = threading.Event(), threading.Event()
        self.made = []

    def __call__(self, host, port, ssl, settings):
        self.made.append(host)
        if host == self.slow_host:
            self.entered.set()
            assert self.release.wait(60)
        return SimpleNamespace(host=host, heartbeat=lambda: 1, get_collection=self._get)

    def _get(self, name):
        raise self.error


def server(host):
    return Context(chroma_server_url=f"http://{host}:8000", collection_name="notes")


def test_a_slow_chroma_open_holds_up_no_other_client(monkeypatch):
    import chromadb

    servers = FakeChromaServers(slow_host="slow.example")
    monkeypatch.setattr(chromadb, "HttpClient", servers)
    cached = open_client(server("fast.example"))
    opened = {}
    opener = threading.Thread(
        target=lambda: opened.update(slow=open_client(server("slow.example")))
    )
    opener.start()
    try:
        assert servers.entered.wait(60)  # the slow open is under way
        others, done = {}, threading.Event()

        def open_others():
            others["cached"] = open_client(server("fast.example"))
            others["new"] = open_client(server("new.example"))
            done.set()

        threading.Thread(target=open_others, daemon=True).start()
        assert done.wait(20), "open_client waited for another target's open"
        assert others["cached"] is cached and others["new"].host == "new.example"
    finally:
        servers.release.set()
        opener.join(60)
    assert opened["slow"].host == "slow.example"
    assert open_client(server("slow.example")) is opened["slow"]
    assert servers.made.count("slow.example") == 1


def test_only_chromas_not_found_error_means_a_missing_collection(monkeypatch):
    import chromadb
    from chromadb.errors import InternalError, NotFoundError

    monkeypatch.setattr(
        chromadb,
        "HttpClient",
        FakeChromaServers(error=NotFoundError("Collection [notes] does not exist")),
    )
    assert get_collection(server("a.example")) is None
    for error in (InternalError("Error finding id: segment not found"), Exception("404 not found")):
        monkeypatch.setattr(chromadb, "HttpClient", FakeChromaServers(error=error))
        with pytest.raises(ServiceError, match="not found") as raised:
            get_collection(server(f"b{id(error)}.example"))
        assert raised.value.__cause__ is error


def test_routing_warns_with_the_cause_when_the_index_cannot_be_opened(monkeypatch, caplog):
    import chromadb

    def down(**kwargs):
        raise ConnectionRefusedError("connection refused")

    monkeypatch.setattr(chromadb, "HttpClient", down)
    with caplog.at_level(logging.WARNING, logger="graph.index.vectorstore"):
        assert notes_have_images(server("down.example")) is False
    (record,) = caplog.records
    assert "images" in record.getMessage()
    assert "cannot reach the Chroma server at http://down.example:8000" in record.getMessage()


def test_every_chroma_client_is_made_with_telemetry_off(ctx):
    assert open_client(ctx).get_settings().anonymized_telemetry is False


# --- the model factories know nothing of the index ----------------------------------------


def test_the_embeddings_factory_opens_no_index_and_needs_a_decided_model(tmp_path):
    index = tmp_path / "chroma"
    with pytest.raises(ConfigError, match="with_embedding_model"):
        OllamaModels().embeddings(Context(chroma_persist_directory=str(index)))
    assert not index.exists()
    decided = Context(chroma_persist_directory=str(index), embedding_model="all-minilm")
    assert OllamaModels().embeddings(decided).model == "all-minilm"
    tree = ast.parse((ROOT / "graph" / "models.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in imported if m and m.startswith("graph.index")}


# --- no process-wide side effects on import; unstructured offline only while it runs ---------

#: The variables the package used to set for the whole process when imported.
SWITCHES = (
    "DO_NOT_TRACK",
    "SCARF_NO_ANALYTICS",
    "ANONYMIZED_TELEMETRY",
    "HF_HUB_OFFLINE",
    "UNSTRUCTURED_DISABLE_NOTICE",
)


def run_python(code: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in SWITCHES}
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**env, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


CHANGED = "sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k))"


#: What `rag load`, `rag --help` and the other commands that answer no question never need.
GRAPH_LIBRARIES = {"langgraph", "langsmith", "chromadb", "langchain_chroma", "langchain_ollama"}


def test_the_command_line_imports_the_graph_libraries_only_for_the_commands_using_them():
    """They cost about 2.5 s of imports; each command imports its own needs when it runs."""
    out = run_python(
        "import sys\n"
        "import app.cli.main\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({sorted(GRAPH_LIBRARIES)})))"
    )
    assert out.strip() == "[]"


def test_importing_the_product_leaves_the_environment_alone():
    out = run_python(
        "import os\nbefore = dict(os.environ)\nimport graph, graph.builder, app.cli.main\n"
        f"print('CHANGED', {CHANGED})\n"
    )
    assert "CHANGED []" in out, out


PARTITION = f"""
import os, socket, threading
attempts = []

def refuse(*args, **kwargs):
    attempts.append(repr(args[:2]))
    raise OSError("the test refuses every network request")

socket.getaddrinfo = refuse
plain_connect = socket.socket.connect

def connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        refuse(address)
    return plain_connect(self, address)

socket.socket.connect = connect
before = dict(os.environ)
from graph.index.chunking import partition_note
sections = partition_note("# Title\\n\\nA paragraph about sourdough starters.\\n")
for thread in threading.enumerate():
    if thread is not threading.current_thread():
        thread.join(30)  # unstructured sends its telemetry from a thread of its own
print("SECTIONS", len(sections))
print("ATTEMPTS", attempts)
print("CHANGED", {CHANGED})
"""


def test_unstructured_never_reaches_the_network_and_the_environment_is_put_back():
    out = run_python(PARTITION)
    assert "SECTIONS 1" in out and "ATTEMPTS []" in out and "CHANGED []" in out, out


def test_the_longest_test_files_named_for_scheduling_exist():
    from tests.conftest import LONGEST_FIRST

    missing = [name for name in LONGEST_FIRST if not (ROOT / "tests" / name).is_file()]
    assert missing == [], "renamed or removed: update LONGEST_FIRST in tests/conftest.py"
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
