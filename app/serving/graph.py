"""The graph ``langgraph.json`` serves: the same graph, with a request's reach narrowed.

A served run's context is ``ServedContext`` (no server-only settings; image paths never
read), and its result is ``OutputState`` (answer, sources, no-answer reason): what an API or
MCP client reads. The whole state stays in the thread, where Studio shows it.

A served run that LangGraph cancels (the API's ``POST /threads/{id}/runs/{run_id}/cancel``,
the chat page's Stop, a client gone with ``on_disconnect: cancel``) stops its model work:
the graph's callbacks hold :data:`CANCELS` (``graph.stopping``), so the node's call in
flight is aborted and no other call starts, though LangGraph lets the node's thread go on.

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
from graph.stopping import Stop

CANCELS = Stop()
"""Stops the model calls of each served run that LangGraph cancels (one for every run)."""


def build_served_graph(
    checkpointer: BaseCheckpointSaver | None = None, models: ModelProvider | None = None
) -> Any:
    """The served graph, with a checkpointer and models of the caller's (tests, notebooks)."""
    built = build_graph(
        checkpointer, models, context_schema=ServedContext, output_schema=OutputState
    )
    return built.with_config(callbacks=[CANCELS])


served_graph = build_served_graph()
