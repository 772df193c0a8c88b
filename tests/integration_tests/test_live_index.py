"""One live index: `langgraph dev` answers from the embedded index while `rag load` changes it.

The served graph and `rag load` are separate processes on one index folder, exactly as
`make dev` in one terminal and `rag load` in another. Questions run through the API while
loads add, edit and delete a note; no run may fail, and each answer's retrieval (its
`steps`, `documents` and `near_misses`, not the tiny model's wording) reflects the last load.
"""

from __future__ import annotations

import shutil
import threading

import pytest
from langgraph_sdk import get_sync_client

from tests.integration_tests.conftest import ROOT, langgraph_dev, rag

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
    env = {
        "OLLAMA_HOST": ollama_url,
        "XDG_DATA_HOME": str(workdir / "data"),
        "RAG_COLLECTION": COLLECTION,
        "RAG_SCORE_THRESHOLD": "0",
        # Vector retrieval of every chunk (the sample notes have 13, the test adds one): a
        # note is retrieved exactly when the server's vector index holds it. Hybrid mode
        # would find a new note through BM25 even from a stale vector index.
        "RAG_RETRIEVAL_MODE": "vector",
        "RAG_K": "16",
    }
    with langgraph_dev(workdir / "served-live", env) as url:
        yield url


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
        # A served run returns only the answer; the retrieval is in the thread's state.
        thread = client.threads.create()["thread_id"]
        out = client.runs.wait(thread, assistant, input={"question": question})
        assert isinstance(out, dict) and "__error__" not in out, out
        return client.threads.get_state(thread)["values"]

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
