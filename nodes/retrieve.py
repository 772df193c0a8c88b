"""``retrieve``: search the notes, keeping only chunks above the score threshold.

A follow-up on a thread ("and what about whiteboarding?") is first rewritten into a
standalone question from the conversation: one model call, made only when there is history.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.runtime import Runtime

from graph.context import Context
from graph.index.embedding import relevance_floor
from graph.index.retrieval import search_notes
from graph.index.vectorstore import with_embedding_model
from graph.llm import ask, conversation_turns
from graph.models import get_models
from graph.progress import report
from graph.prompts import condense_prompt
from graph.state import RunState, State, working_question


def earlier_turns(messages: list[AnyMessage]) -> list[AnyMessage]:
    """The conversation before the current question (which ``route`` appended last)."""
    return [m for m in messages[:-1] if isinstance(m, (HumanMessage, AIMessage))]


def standalone_question(question: str, history: list[AnyMessage], context: Context) -> str:
    """Rewrite a follow-up into a self-contained question (only called with history)."""
    prompt = condense_prompt(conversation_turns(history), question)
    rewritten = ask(context, "rewrite", prompt).strip('"').strip()
    return rewritten or question


def retrieve(state: State, runtime: Runtime[Context]) -> RunState:
    """Search the notes; an empty result means ``no_answer`` without any grading."""
    context = with_embedding_model(runtime.context)
    question = working_question(state)
    steps = []
    history = earlier_turns(state.get("messages", []))
    if history:
        report("rewriting")
        question = standalone_question(question, history, context)
        steps.append(f"retrieve: rewrote follow-up as {question!r}")
    report("searching")
    result = search_notes(context, get_models().embeddings(context), question)
    report("searched", found=len(result.relevant))
    update: RunState = {
        "standalone_question": question,
        "documents": result.relevant,
        "near_misses": result.near_misses,
    }
    if result.collection_size == 0:
        update["no_answer_reason"] = "empty_collection"
    elif result.filter_empty:
        update["no_answer_reason"] = "filter_empty"
    elif not result.relevant:
        update["no_answer_reason"] = "below_threshold"
    best = max((c["score"] for c in result.relevant + result.near_misses), default=0.0)
    steps.append(
        f"retrieve: {len(result.relevant)} chunk(s) >= {relevance_floor(context, question)} "
        f"(best {best:.3f}, collection {result.collection_size})"
    )
    update["steps"] = steps
    return update
