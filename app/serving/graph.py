"""The graph ``langgraph.json`` serves: the same graph, with a request's reach narrowed.

A served run's context is ``ServedContext`` (no server-only settings; image paths never
read), and its result is ``OutputState`` (answer, sources, no-answer reason): what an API or
MCP client reads. The whole state stays in the thread, where Studio shows it.

``langgraph dev`` loads this file by path, with the project root on ``sys.path``, so the
imports here are absolute.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from app.serving.context import ServedContext
from graph.builder import build_graph
from graph.models import ModelProvider
from graph.state import OutputState


def build_served_graph(
    checkpointer: BaseCheckpointSaver | None = None, models: ModelProvider | None = None
) -> Any:
    """The served graph, with a checkpointer and models of the caller's (tests, notebooks)."""
    return build_graph(
        checkpointer, models, context_schema=ServedContext, output_schema=OutputState
    )


served_graph = build_served_graph()
