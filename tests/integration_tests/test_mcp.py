"""The notes as an MCP tool: ``langgraph dev``'s ``/mcp`` driven by the real ``mcp`` client."""

from __future__ import annotations

import ast
import asyncio
import concurrent.futures

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


@pytest.fixture(scope="module")
def mcp_url(notes_server):
    """The MCP endpoint of ``langgraph dev`` serving the project's langgraph.json."""
    return f"{notes_server}/mcp"


def with_session(url: str, work):
    async def run():
        async with streamable_http_client(url) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await work(session)

    # A thread of its own: another module's sync Playwright may keep an event loop running
    # in this worker's main thread, where asyncio.run() refuses to start a second one.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, run()).result()


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
        "answer": "456*4343 - 56/(443-11+4) ≈ 1980407.87155963",
        "sources": [],
        "no_answer_reason": None,
    }


def test_a_question_gets_an_answer_with_sources_and_nothing_internal(mcp_url, faults):
    # Unreadable grades fall back to "relevant": the run reaches generate deterministically.
    faults(malformed_json=True)
    out = call(mcp_url, "How should I practise whiteboarding?")
    assert set(out) == {"answer", "sources", "no_answer_reason"}
    # The tiny model writes words of no language: the names lookup may withdraw them, without a
    # model call; either way the run reached generate and the answer names its sources.
    assert out["answer"] and out["no_answer_reason"] in (None, "unsupported")
    assert out["sources"] and all(s["path"].endswith(".md") for s in out["sources"])
