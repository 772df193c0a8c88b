"""Wiring only: the nodes, the conditional edges, and the exported ``graph``.

The graph served over HTTP is built from the same function in ``app.serving.graph``.

``langgraph dev`` loads this file by path, with the project root on ``sys.path``, so the
imports here are absolute.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graph.context import Context
from graph.models import MODELS_KEY, ModelProvider
from graph.routing import after_grading, after_retrieve, after_route
from graph.state import InputState, State
from nodes.calculator import calculator
from nodes.generate import generate
from nodes.grade_documents import grade_documents
from nodes.image import image
from nodes.no_answer import no_answer
from nodes.retrieve import retrieve
from nodes.route import route


def build_graph(
    checkpointer: BaseCheckpointSaver | None = None,
    models: ModelProvider | None = None,
    *,
    context_schema: type[Any] = Context,
    output_schema: type[Any] = State,
) -> CompiledStateGraph[State, Context, InputState, Any]:
    """Compile the agentic RAG graph.

    Args:
        checkpointer: Persistence for multi-turn threads (``langgraph dev`` brings its own).
        models: Where chat and embedding models come from; Ollama when ``None``.
        context_schema: The run settings a caller may choose; the served graph narrows it
            (``app.serving``).
        output_schema: What a run returns: the whole state for Python callers (route,
            steps, grades, documents: what the CLI's ``--json`` and the tests read), or
            only ``OutputState`` over HTTP.
    """
    builder = StateGraph(
        State,
        input_schema=InputState,
        output_schema=output_schema,
        context_schema=context_schema,
    )
    builder.add_node("route", route)
    builder.add_node("calculator", calculator)
    builder.add_node("image", image)
    builder.add_node("retrieve", retrieve)
    builder.add_node("grade_documents", grade_documents)
    builder.add_node("generate", generate)
    builder.add_node("no_answer", no_answer)

    builder.add_edge(START, "route")
    builder.add_conditional_edges("route", after_route)
    builder.add_conditional_edges("retrieve", after_retrieve)
    builder.add_conditional_edges("grade_documents", after_grading)
    for last in ("calculator", "image", "generate", "no_answer"):
        builder.add_edge(last, END)

    compiled = builder.compile(checkpointer=checkpointer, name="agentic_rag")
    if models is not None:
        compiled = compiled.with_config(configurable={MODELS_KEY: models})
    return compiled


graph = build_graph()
"""The graph for Python callers, notebooks and the CLI: the caller's context is trusted."""
