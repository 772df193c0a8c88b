"""The notes as an MCP tool: ``langgraph dev``'s ``/mcp`` driven by the real ``mcp`` client."""

from __future__ import annotations

import ast
import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.integration_tests.conftest import ROOT, free_port, wait_for_http


def _absolute(target: str | dict) -> str | dict:
    if isinstance(target, dict):
        return {**target, "path": str(ROOT / target["path"].removeprefix("./"))}
    return str(ROOT / target.removeprefix("./"))


@pytest.fixture(scope="module")
def mcp_url(ollama_url, loaded_notes, workdir):
    """``langgraph dev`` serving the project's langgraph.json (without its .env)."""
    config = json.loads((ROOT / "langgraph.json").read_text())
    config["dependencies"] = [str(ROOT)]
    config["graphs"] = {gid: _absolute(target) for gid, target in config["graphs"].items()}
    config["env"] = {}
    served = workdir / "served-mcp"
    served.mkdir(exist_ok=True)
    (served / "langgraph.json").write_text(json.dumps(config))
    env = {
        **os.environ,
        "OLLAMA_HOST": ollama_url,
        "XDG_DATA_HOME": str(workdir / "data"),
        "RAG_COLLECTION": "notes",
        "RAG_SCORE_THRESHOLD": "0",
        "RAG_K": "2",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "1",
        "LANGSMITH_TRACING": "false",
    }
    port = free_port()
    log_path = workdir / "langgraph-dev-mcp.log"
    with open(log_path, "w") as log:
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
        yield f"{url}/mcp"
        proc.terminate()
        proc.wait(timeout=30)


def with_session(url: str, work):
    async def run():
        async with streamable_http_client(url) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await work(session)

    return asyncio.run(run())


def call(url: str, question: str) -> dict:
    async def work(session):
        tools = (await session.list_tools()).tools
        result = await session.call_tool(tools[0].name, {"question": question})
        assert not result.is_error, result.content
        return result.content[0].text

    # The server answers with the run's output as a Python literal.
    return ast.literal_eval(with_session(url, work))


def test_the_tool_says_what_it_searches_and_takes_a_question(mcp_url):
    async def work(session):
        return (await session.list_tools()).tools

    tools = with_session(mcp_url, work)
    assert len(tools) == 1
    tool = tools[0]
    assert "notes" in tool.description and "Tool based on" not in tool.description
    assert "no_answer_reason" in tool.description
    assert tool.input_schema["required"] == ["question"]
    assert "question" in tool.input_schema["properties"]


def test_arithmetic_is_exact(mcp_url):
    out = call(mcp_url, "456*4343 - 56/(443-11+4)")
    assert out == {
        "answer": "456*4343 - 56/(443-11+4) = 1980407.87155963",
        "sources": [],
        "no_answer_reason": None,
    }


def test_a_question_gets_an_answer_with_sources_and_nothing_internal(mcp_url, faults):
    # Unreadable grades fall back to "relevant": the run reaches generate deterministically.
    faults(malformed_json=True)
    out = call(mcp_url, "How should I practise whiteboarding?")
    assert set(out) == {"answer", "sources", "no_answer_reason"}
    assert out["answer"] and out["no_answer_reason"] is None
    assert out["sources"] and all(s["path"].endswith(".md") for s in out["sources"])
