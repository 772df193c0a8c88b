"""The graph served by `langgraph dev` (what LangGraph Studio talks to), end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from langgraph_sdk import get_sync_client

from tests.integration_tests.conftest import ROOT, free_port, wait_for_http

NODES = {"route", "calculator", "image", "retrieve", "grade_documents", "generate", "no_answer"}


def absolute_graph(target: str | dict) -> str | dict:
    """A ``graphs`` entry (a path, or a dict with ``path`` and ``description``) made absolute."""
    if isinstance(target, dict):
        return {**target, "path": str(ROOT / target["path"].removeprefix("./"))}
    return str(ROOT / target.removeprefix("./"))


@pytest.fixture(scope="module")
def dev_server(ollama_url, loaded_notes, workdir):
    port = free_port()
    env = {
        **os.environ,
        "OLLAMA_HOST": ollama_url,
        "XDG_DATA_HOME": str(workdir / "data"),  # where `rag load` put the notes
        "RAG_COLLECTION": "notes",
        "RAG_SCORE_THRESHOLD": "0",
        "RAG_K": "2",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "1",
        "LANGSMITH_TRACING": "false",
    }
    # The project's langgraph.json, minus its .env (a developer's .env must not override the
    # test's settings), served from the work dir so .langgraph_api/ lands there.
    config = json.loads((ROOT / "langgraph.json").read_text())
    config["dependencies"] = [str(ROOT)]
    config["graphs"] = {gid: absolute_graph(target) for gid, target in config["graphs"].items()}
    config["env"] = {}
    served = workdir / "served"
    served.mkdir(exist_ok=True)
    (served / "langgraph.json").write_text(json.dumps(config))
    langgraph = Path(sys.executable).parent / "langgraph"
    log = open(workdir / "langgraph-dev.log", "w")
    proc = subprocess.Popen(
        [
            str(langgraph),
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
        pytest.fail("langgraph dev did not start: " + (workdir / "langgraph-dev.log").read_text())
    yield url
    proc.terminate()
    proc.wait(timeout=30)
    log.close()


@pytest.fixture(scope="module")
def client(dev_server):
    return get_sync_client(url=dev_server)


@pytest.fixture(scope="module")
def assistant(client):
    found = client.assistants.search(graph_id="agentic_rag")
    assert found, "no assistant for graph agentic_rag"
    return found[0]["assistant_id"]


def test_schemas_have_descriptions(client, assistant):
    schemas = client.assistants.get_schemas(assistant)
    assert schemas["input_schema"]["properties"]["question"]["description"]
    context = schemas["context_schema"]
    assert context is not None
    for name in ("ollama_base_url", "chat_model", "k", "score_threshold", "calculator_trigger"):
        assert "(env: " in context["properties"][name]["description"], name


def test_graph_shows_the_seven_nodes(client, assistant):
    drawn = client.assistants.get_graph(assistant)
    assert NODES <= {node["id"] for node in drawn["nodes"]}


def test_calculator_question_is_exact(client, assistant):
    thread = client.threads.create()["thread_id"]
    out = client.runs.wait(thread, assistant, input={"question": "456*4343 - 56/(443-11+4)"})
    assert out["answer"] == "456*4343 - 56/(443-11+4) = 1980407.87155963"
    # The served graph returns the answer only; the path stays in the thread's state.
    assert set(out) == {"answer", "sources", "no_answer_reason"}
    assert client.threads.get_state(thread)["values"]["route"] == "calculator"


def test_stream_updates_in_order_and_answer_tokens(client, assistant, faults):
    # Unreadable grades fall back to "relevant", so the run deterministically reaches generate.
    faults(malformed_json=True)
    updates, partials, events = [], [], []
    for part in client.runs.stream(
        None,
        assistant,
        input={"question": "How should I practise whiteboarding?"},
        stream_mode=["updates", "messages"],
    ):
        events.append((part.event, str(part.data)[:300]))
        if part.event == "updates":
            updates.extend(part.data.keys())
        elif part.event == "messages/partial":
            partials.extend(item.get("content", "") for item in part.data)
    assert updates == ["route", "retrieve", "grade_documents", "generate"], events
    assert len(partials) >= 2, events  # the answer arrives piece by piece


def test_thread_keeps_the_conversation_and_rewrites_follow_ups(client, assistant):
    thread = client.threads.create()["thread_id"]
    client.runs.wait(thread, assistant, input={"question": "How should I prepare for interviews?"})
    first = client.threads.get_state(thread)["values"]
    assert not any("rewrote" in s for s in first["steps"])
    client.runs.wait(thread, assistant, input={"question": "and what about whiteboarding?"})
    second = client.threads.get_state(thread)["values"]
    assert len(second["messages"]) == 4
    assert any(s.startswith("retrieve: rewrote follow-up as") for s in second["steps"])
    assert second["steps"][0].startswith("route:")
