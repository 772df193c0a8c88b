"""``generate``: answer from the relevant chunks only, streaming tokens, citing the notes."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from graph.classify import message_text
from graph.context import Context
from graph.errors import ollama_errors
from graph.models import get_chat
from graph.prompts import CONTEXT_CHUNK, GENERATE_SYSTEM
from graph.state import RetrievedChunk, Source, State


def format_context(chunks: list[RetrievedChunk]) -> str:
    """Number the chunks and say where each comes from, so the answer can refer to them."""
    return "\n\n".join(
        CONTEXT_CHUNK.format(
            number=i, source=c["source"], heading=c["heading"] or "(top)", content=c["content"]
        )
        for i, c in enumerate(chunks, start=1)
    )


def cite(chunks: list[RetrievedChunk]) -> list[Source]:
    """Distinct (note, heading) pairs in retrieval order: the sources of the answer."""
    seen: dict[tuple[str, str], Source] = {}
    for c in chunks:
        seen.setdefault((c["source"], c["heading"]), Source(path=c["source"], heading=c["heading"]))
    return list(seen.values())


def generate(state: State, runtime: Runtime[Context]) -> dict:
    """One model call; tokens reach ``stream_mode="messages"`` as they are produced."""
    context = runtime.context
    chunks = state.get("documents", [])
    question = state.get("standalone_question") or state["question"]
    model = get_chat(context, "generate")
    prompt = [
        SystemMessage(GENERATE_SYSTEM.format(context=format_context(chunks))),
        HumanMessage(question),
    ]
    with ollama_errors(context.ollama_base_url, context.chat_model):
        reply = model.invoke(prompt)
    answer = message_text(reply).strip()
    sources = cite(chunks)
    return {
        "answer": answer,
        "sources": sources,
        # The model's own message (same id as the streamed chunks), so a "messages" stream
        # does not emit the answer a second time.
        "messages": [reply if isinstance(reply, AIMessage) else AIMessage(answer)],
        "steps": [f"generate: answered from {len(chunks)} chunk(s), {len(sources)} source(s)"],
    }
