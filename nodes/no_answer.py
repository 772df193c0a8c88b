"""``no_answer``: a deterministic explanation, no model call."""

from __future__ import annotations

from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from graph.context import Context
from graph.index.browse import spelling_hint
from graph.index.embedding import relevance_floor
from graph.index.filters import NoteFilter
from graph.index.retrieval import RetrievedChunk
from graph.index.vectorstore import with_embedding_model
from graph.llm import conversation_turns
from graph.state import RunState, State, working_question
from graph.warmup import warm_next_question

_WHY = {
    "empty_collection": (
        "The notes collection '{collection}' is empty or does not exist yet: "
        "load your notes first with `rag load -f NOTES_DIR -n {collection}`."
    ),
    "filter_empty": (
        "No note in '{collection}' matches the filter ({filter}): check the tags and "
        "folders asked for, or ask without them."
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
    """One line naming the nearest misses, best score first, each note section once.

    Retrieval order is not score order (hybrid search fuses two rankings), and a long
    section is several chunks: named once, with its best chunk's score.
    """
    best: dict[tuple[str, str], float] = {}
    for chunk in chunks:
        key = (chunk["source"], chunk["heading"] or "")
        best[key] = max(chunk["score"], best.get(key, chunk["score"]))
    ranked = sorted(best.items(), key=lambda item: -item[1])  # stable: ties keep their order
    parts = [
        f"{source}{' > ' + heading if heading else ''} ({score:.2f})"
        for (source, heading), score in ranked
    ]
    return "Closest notes: " + "; ".join(parts) + "."


def no_answer(state: State, runtime: Runtime[Context]) -> RunState:
    """Say why there is no answer and which notes came closest."""
    reason = state.get("no_answer_reason") or "below_threshold"
    context = runtime.context
    if context.score_threshold is None and reason == "below_threshold":
        context = with_embedding_model(context)  # the floor is the collection's model's
    chosen = NoteFilter.of(context.tags, context.folders)
    message = _WHY[reason].format(
        collection=context.collection_name,
        threshold=relevance_floor(context, working_question(state)),
        filter=chosen.describe() if chosen else "none",
    )
    if chosen and reason != "filter_empty":
        message += f" (Searched only notes matching {chosen.describe()}.)"
    if chosen and reason == "filter_empty" and (hint := spelling_hint(context, chosen)):
        message += " " + hint[0].upper() + hint[1:]
    near = state.get("near_misses") or []
    if near and reason != "empty_collection":
        message += " " + closest_notes(near)
    said = AIMessage(message)
    # In a thread the next follow-up's rewrite begins with this conversation; outside one the
    # server's slot holds the grader's instructions (the last grade) or nothing of use.
    warm_next_question(context, None, conversation_turns([*state.get("messages", []), said]))
    return {
        "answer": message,
        "sources": [],
        "no_answer_reason": reason,
        "messages": [said],
        "steps": [f"no_answer: {reason}"],
    }
