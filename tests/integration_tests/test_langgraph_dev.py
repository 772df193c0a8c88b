"""The graph served by `langgraph dev` (what LangGraph Studio talks to), end to end."""

from __future__ import annotations

import json

import pytest
from langgraph_sdk import get_sync_client

from tests.integration_tests.conftest import HTTP, langgraph_dev

NODES = {"route", "calculator", "image", "retrieve", "grade_documents", "generate", "no_answer"}


@pytest.fixture(scope="module")
def dev_server(notes_server):
    return notes_server


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
    for name in ("chat_model", "k", "score_threshold", "calculator_trigger"):
        assert "(env: " in context["properties"][name]["description"], name
    # where the server connects and stores is not a run's to choose: not in the schema
    server_only = {"ollama_base_url", "chroma_persist_directory", "chroma_server_url"}
    assert not server_only & set(context["properties"])


def test_graph_shows_the_seven_nodes(client, assistant):
    drawn = client.assistants.get_graph(assistant)
    assert NODES <= {node["id"] for node in drawn["nodes"]}


def test_calculator_question_is_exact(client, assistant):
    thread = client.threads.create()["thread_id"]
    out = client.runs.wait(thread, assistant, input={"question": "456*4343 - 56/(443-11+4)"})
    assert out["answer"] == "456*4343 - 56/(443-11+4) ≈ 1980407.87155963"
    # The served graph returns the answer only; the path stays in the thread's state.
    assert set(out) == {"answer", "sources", "no_answer_reason"}
    assert client.threads.get_state(thread)["values"]["route"] == "calculator"


def test_stream_updates_in_order_and_answer_tokens(client, assistant, faults):
    # Unreadable grades fall back to "relevant", so the run deterministically reaches generate.
    faults(malformed_json=True)
    updates, partials, events, progress = [], [], [], []
    for part in client.runs.stream(
        None,
        assistant,
        input={"question": "How should I practise whiteboarding?"},
        stream_mode=["updates", "messages", "custom"],
    ):
        events.append((part.event, str(part.data)[:300]))
        if part.event == "updates":
            updates.extend(part.data.keys())
        elif part.event == "messages/partial":
            partials.extend(item.get("content", "") for item in part.data)
        elif part.event == "custom":
            progress.append(part.data)
    assert updates == ["route", "retrieve", "grade_documents", "generate"], events
    assert len(partials) >= 2, events  # the answer arrives piece by piece
    # The graph's progress, for SDK and Studio callers as for the page: each stage once
    # (grading once per verdict, and before the first), small, without note text.
    stages = [event["stage"] for event in progress]
    grades = stages.count("grading")
    assert stages == [
        "routing",
        "searching",
        "searched",
        *["grading"] * grades,
        "writing",
        "written",
        "checked",
    ], events
    assert grades == progress[2]["found"] + 1 == 3  # RAG_K 2
    written = progress[-2]
    assert written["checking"] and written["sources"]
    # Reported while generate ran: before its update.
    assert events.index(("custom", str(written)[:300])) < events.index(
        next(e for e in events if e[0] == "updates" and "generate" in e[1])
    )
    assert all(len(json.dumps(event)) < 1000 for event in progress)


def test_thread_keeps_the_conversation_and_rewrites_follow_ups(client, assistant):
    thread = client.threads.create()["thread_id"]
    client.runs.wait(thread, assistant, input={"question": "How should I prepare for interviews?"})
    first = client.threads.get_state(thread)["values"]
    assert not any("rewrote" in s for s in first["steps"])
    client.runs.wait(thread, assistant, input={"question": "and what about whiteboarding?"})
    second = client.threads.get_state(thread)["values"]
    assert len(second["messages"]) == 4
    assert any(s.startswith("retrieve: rewrote follow-up as") for s in second["steps"])
    # the trace restarts each run: the second question's route step only, and first
    routes = [s for s in second["steps"] if s.startswith("route:")]
    assert routes == second["steps"][:1], second["steps"]


def test_the_server_starts_without_a_traceback(ollama_url, loaded_notes, workdir):
    # A server of its own: the shared one's log also holds what other tests provoked.
    env = {"OLLAMA_HOST": ollama_url, "XDG_DATA_HOME": str(workdir / "data")}
    with langgraph_dev(workdir / "served-clean-start", env) as url:
        schema = HTTP.get(f"{url}/openapi.json").json()
    log = (workdir / "served-clean-start" / "langgraph-dev.log").read_text()
    assert "Welcome to" in log  # the log is the server's own
    assert "Traceback" not in log and "ScannerError" not in log, log
    assert "Unable to parse docstring" not in log, log
    assert schema["paths"]["/v1/chat/completions"]["post"]["summary"]
