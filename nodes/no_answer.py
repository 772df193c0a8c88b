"""``no_answer``: a deterministic explanation, no model call."""

from __future__ import annotations

from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from graph.context import Context
from graph.index.retrieval import RetrievedChunk
from graph.state import RunState, State

_WHY = {
    "empty_collection": (
        "The notes collection '{collection}' is empty or does not exist yet: "
        "load your notes first with `rag load -f NOTES_DIR -n {collection}`."
    ),
    "below_threshold": (
        "I could not find an answer in your notes: no note section scored above the "
        "relevance threshold {threshold}."
    ),
    "all_irrelevant": (
        "I could not find an answer in your notes: the closest sections were judged "
        "not relevant to the question."
    ),
}


def closest_notes(chunks: list[RetrievedChunk]) -> str:
    """One line naming the nearest misses, best first."""
    parts = [
        f"{c['source']}{' > ' + c['heading'] if c['heading'] else ''} ({c['score']:.2f})"
        for c in chunks
    ]
    return "Closest notes: " + "; ".join(parts) + "."


def no_answer(state: State, runtime: Runtime[Context]) -> RunState:
    """Say why there is no answer and which notes came closest."""
    reason = state.get("no_answer_reason") or "below_threshold"
    context = runtime.context
    message = _WHY[reason].format(
        collection=context.collection_name, threshold=context.effective_threshold
    )
    near = state.get("near_misses") or []
    if near and reason != "empty_collection":
        message += " " + closest_notes(near)
    return {
        "answer": message,
        "sources": [],
        "no_answer_reason": reason,
        "messages": [AIMessage(message)],
        "steps": [f"no_answer: {reason}"],
    }
