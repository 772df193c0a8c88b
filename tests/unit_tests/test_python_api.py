"""The exported graph as README shows it: invoke, stream, and their async forms."""

import asyncio

from graph.builder import graph
from graph.models import MODELS_KEY
from tests.fakes import FakeModels


def test_invoke_exported_graph_with_context(ctx):
    out = graph.invoke({"question": "calculate: 6*7"}, context=ctx)
    assert out["answer"] == "6*7 = 42" and out["route"] == "calculator"


def test_stream_exported_graph_updates(loaded):
    models = FakeModels()
    config = {"configurable": {MODELS_KEY: models}}
    nodes = [
        next(iter(u))
        for u in graph.stream(
            {"question": "sourdough starter feeding"}, config, context=loaded, stream_mode="updates"
        )
    ]
    assert nodes == ["route", "retrieve", "grade_documents", "generate"]


def test_async_invoke_and_stream(loaded):
    models = FakeModels(latency=0.05)
    config = {"configurable": {MODELS_KEY: models}}

    async def main():
        out = await graph.ainvoke({"question": "wireguard port forwarding"}, config, context=loaded)
        tokens = [
            chunk.content
            async for chunk, meta in graph.astream(
                {"question": "wireguard port forwarding"},
                config,
                context=loaded,
                stream_mode="messages",
            )
            if meta["langgraph_node"] == "generate"
        ]
        return out, tokens

    out, tokens = asyncio.run(main())
    assert out["route"] == "retrieve" and out["sources"]
    assert "".join(tokens) == out["answer"]
