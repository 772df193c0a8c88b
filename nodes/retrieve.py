"""``retrieve``: vector search in Chroma, keeping only chunks above the score threshold.

A follow-up on a thread ("and what about whiteboarding?") is first rewritten into a
standalone question from the conversation: one model call, made only when there is history.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.runtime import Runtime

from graph.classify import message_text
from graph.context import Context
from graph.errors import ollama_errors
from graph.models import get_chat, get_models
from graph.prompts import CONDENSE_QUESTION
from graph.retrieval import search_notes
from graph.state import State

HISTORY_TURNS = 6  # messages of history shown to the rewriter


def earlier_turns(messages: list[AnyMessage]) -> list[AnyMessage]:
    """The conversation before the current question (which ``route`` appended last)."""
    return [m for m in messages[:-1] if isinstance(m, (HumanMessage, AIMessage))]


def standalone_question(question: str, history: list[AnyMessage], context: Context) -> str:
    """Rewrite a follow-up into a self-contained question (only called with history)."""
    lines = [
        f"{'User' if isinstance(m, HumanMessage) else 'Assistant'}: {message_text(m)}"
        for m in history[-HISTORY_TURNS:]
    ]
    model = get_chat(context, "rewrite")
    with ollama_errors(context.ollama_base_url, context.chat_model):
        reply = model.invoke(CONDENSE_QUESTION.format(history="\n".join(lines), question=question))
    rewritten = message_text(reply).strip().strip('"').strip()
    return rewritten or question


def retrieve(state: State, runtime: Runtime[Context]) -> dict:
    """Search the notes; an empty result means ``no_answer`` without any grading."""
    context = runtime.context
    question = state.get("standalone_question") or state["question"]
    steps = []
    history = earlier_turns(state.get("messages", []))
    if history:
        question = standalone_question(question, history, context)
        steps.append(f"retrieve: rewrote follow-up as {question!r}")
    result = search_notes(context, get_models().embeddings(context), question)
    update: dict = {
        "standalone_question": question,
        "documents": result.relevant,
        "near_misses": result.near_misses,
    }
    if result.collection_size == 0:
        update["no_answer_reason"] = "empty_collection"
    elif not result.relevant:
        update["no_answer_reason"] = "below_threshold"
    best = max((c["score"] for c in result.relevant + result.near_misses), default=0.0)
    steps.append(
        f"retrieve: {len(result.relevant)} chunk(s) >= {context.effective_threshold} "
        f"(best {best:.3f}, collection {result.collection_size})"
    )
    update["steps"] = steps
    return update
