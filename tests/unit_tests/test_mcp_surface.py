"""What an agent sees of the served graph (the ``/mcp`` tool): description, input, output."""

from __future__ import annotations

import json
from pathlib import Path

from app.serving.graph import build_served_graph, served_graph
from graph.builder import build_graph, graph
from tests.fakes import FakeModels

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = {"answer", "sources", "no_answer_reason"}


def test_langgraph_json_describes_the_tool_for_agents():
    entry = json.loads((ROOT / "langgraph.json").read_text())["graphs"]["agentic_rag"]
    assert entry["path"] == "./app/serving/graph.py:served_graph"
    description = entry["description"]
    assert "markdown notes" in description and "cites" in description
    assert "no_answer_reason" in description  # how to read a miss


def test_served_output_is_the_answer_with_sources_and_reason():
    schema = served_graph.get_output_jsonschema()
    assert set(schema["properties"]) == OUTPUT
    assert all(schema["properties"][name].get("description") for name in OUTPUT)
    assert served_graph.get_input_jsonschema()["required"] == ["question"]


def test_a_served_run_returns_no_internal_state(ctx, monkeypatch):
    monkeypatch.setenv("RAG_CHROMA_DIR", ctx.chroma_persist_directory)
    served = build_served_graph(models=FakeModels())
    out = served.invoke({"question": "calculate: 6*7"}, context={})
    assert out == {"answer": "6*7 = 42", "sources": [], "no_answer_reason": None}


def test_python_callers_keep_the_whole_state(ctx):
    out = build_graph(models=FakeModels()).invoke({"question": "calculate: 6*7"}, context=ctx)
    assert out["route"] == "calculator" and out["steps"]
    assert OUTPUT < set(graph.get_output_jsonschema()["properties"])
