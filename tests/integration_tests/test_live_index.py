"""One live index: `langgraph dev` answers from the embedded index while `rag load` changes it.

The served graph and `rag load` are separate processes on one index folder, exactly as
`make dev` in one terminal and `rag load` in another. Questions run through the API while
loads add, edit and delete a note; no run may fail, and each answer's retrieval (its
`steps`, `documents` and `near_misses`, not the tiny model's wording) reflects the last load.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from langgraph_sdk import get_sync_client

from tests.integration_tests.conftest import ROOT, free_port, rag, wait_for_http

COLLECTION = "live"
NEW = "new/zanzibar.md"


@pytest.fixture(scope="module")
def live_notes(ollama_url, workdir):
    notes = workdir / "live-notes"
    shutil.copytree(ROOT / "tests" / "sample_notes", notes)
    result = rag("load", "-f", str(notes), "-n", COLLECTION, url=ollama_url, workdir=workdir)
    assert result.returncode == 0, result.stderr
    return notes


@pytest.fixture(scope="module")
def server(ollama_url, live_notes, workdir):
    port = free_port()
    env = {
        **os.environ,
        "OLLAMA_HOST": ollama_url,
        "XDG_DATA_HOME": str(workdir / "data"),
        "RAG_COLLECTION": COLLECTION,
        "RAG_SCORE_THRESHOLD": "0",
        # Vector retrieval of every chunk (the sample notes have 13, the test adds one): a
        # note is retrieved exactly when the server's vector index holds it. Hybrid mode
        # would find a new note through BM25 even from a stale vector index.
        "RAG_RETRIEVAL_MODE": "vector",
        "RAG_K": "16",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "1",
        "LANGSMITH_TRACING": "false",
    }
    config = json.loads((ROOT / "langgraph.json").read_text())
    config["dependencies"] = [str(ROOT)]
    config["graphs"] = {
        gid: str(ROOT / target.removeprefix("./")) for gid, target in config["graphs"].items()
    }
    config["env"] = {}
    served = workdir / "served-live"
    served.mkdir(exist_ok=True)
    (served / "langgraph.json").write_text(json.dumps(config))
    log_path = workdir / "langgraph-dev-live.log"
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "langgraph"),
            "dev",
            "--no-browser",
            "--no-reload",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--config",
            str(served / "langgraph.json"),
        ],
        cwd=served,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    if not wait_for_http(f"{url}/ok", proc, seconds=60):
        proc.kill()
        pytest.fail("langgraph dev did not start: " + log_path.read_text())
    yield url
    proc.terminate()
    proc.wait(timeout=30)
    log.close()


def retrieved(state: dict) -> set[str]:
    """Every note the run's retrieval returned (graded or not)."""
    found = {c["source"] for c in (state.get("documents") or []) + (state.get("near_misses") or [])}
    for step in state.get("steps") or []:
        if step.startswith("grade_documents: "):
            found.add(step.removeprefix("grade_documents: ").split(" > ")[0])
    return found


def test_served_answers_follow_loads_from_another_process(
    server, ollama_url, workdir, live_notes, faults
):
    faults(malformed_json=True)  # grades fall back to "relevant": every run reaches retrieval
    client = get_sync_client(url=server)
    assistant = client.assistants.search(graph_id="agentic_rag")[0]["assistant_id"]

    def ask(question: str) -> dict:
        state = client.runs.wait(None, assistant, input={"question": question})
        assert isinstance(state, dict) and "__error__" not in state, state
        return state

    def load() -> str:
        result = rag(
            "load", "-f", str(live_notes), "-n", COLLECTION, url=ollama_url, workdir=workdir
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    question = "What does the quokka Zanzibar eat for breakfast?"
    assert NEW not in retrieved(ask(question))  # also opens the server's client before any load

    # Questions keep running through the API while the loads below happen.
    errors: list[str] = []
    answered = []
    stop = threading.Event()

    def background() -> None:
        while not stop.is_set():
            try:
                answered.append(ask("How should I prepare for interviews?"))
            except Exception as exc:  # collected: the assertion below names it
                errors.append(f"{type(exc).__name__}: {exc}")

    worker = threading.Thread(target=background)
    worker.start()
    try:
        (live_notes / "new").mkdir()
        (live_notes / NEW).write_text(
            "# Zanzibar the quokka\n\nZanzibar the quokka eats marmalade for breakfast.\n"
        )
        assert "1 added" in load()
        state = ask(question)
        assert NEW in retrieved(state), state["steps"]

        (live_notes / NEW).write_text(
            "# Zanzibar the quokka\n\nZanzibar the quokka now only eats pelican-shaped biscuits.\n"
        )
        assert "1 updated" in load()
        state = ask("Which biscuits does the quokka Zanzibar eat?")
        assert NEW in retrieved(state), state["steps"]
        chunks = [c for c in state["documents"] + state["near_misses"] if c["source"] == NEW]
        assert all("biscuits" in c["content"] for c in chunks) and chunks, state

        (live_notes / NEW).unlink()
        assert "1 removed" in load()
        assert NEW not in retrieved(ask(question))
    finally:
        stop.set()
        worker.join(timeout=300)
    assert not errors, errors
    assert answered, "no background question finished"
    assert all(s.get("steps") for s in answered)
