"""``generate``: answer from the relevant chunks only, streaming tokens, citing the notes."""

from __future__ import annotations

from langgraph.runtime import Runtime

from graph.context import Context
from graph.fit import fit_chunks, ratios, reply_reserve
from graph.index.retrieval import RetrievedChunk
from graph.llm import message_text, reply, with_system
from graph.models import model_for, reply_limit
from graph.prompts import GENERATE_SYSTEM, GENERATE_USER, note_block
from graph.state import RunState, Source, State, working_question


def format_context(chunks: list[RetrievedChunk]) -> str:
    """Each chunk with where it comes from and its source's number, as ``cite`` lists it.

    Chunks of one note section share a number, so an answer's ``[n]`` is the n-th source.
    """
    numbers = {(s["path"], s["heading"]): n for n, s in enumerate(cite(chunks), start=1)}
    return "\n".join(note_block(c, number=numbers[c["source"], c["heading"]]) for c in chunks)


def cite(chunks: list[RetrievedChunk]) -> list[Source]:
    """Distinct (note, heading) pairs in retrieval order: the sources of the answer."""
    seen: dict[tuple[str, str], Source] = {}
    for c in chunks:
        seen.setdefault((c["source"], c["heading"]), Source(path=c["source"], heading=c["heading"]))
    return list(seen.values())


def generate(state: State, runtime: Runtime[Context]) -> RunState:
    """One model call; tokens reach ``stream_mode="messages"`` as they are produced."""
    context = runtime.context
    question = working_question(state)

    def user_turn(selection: list[RetrievedChunk]) -> str:
        return GENERATE_USER.format(notes=format_context(selection), question=question)

    # Only the chunks that fit are sent, and only they are cited.
    chunks, fitted = fit_chunks(
        state.get("documents", []),
        lambda selection: f"{GENERATE_SYSTEM}\n{user_turn(selection)}",
        num_ctx=context.num_ctx,
        reply_tokens=reply_reserve(reply_limit("generate"), context.num_ctx),
        chars_per_token=ratios.chars_per_token(model_for(context, "generate")),
    )
    prompt = with_system(GENERATE_SYSTEM, user_turn(chunks))
    # The model's own message (same id as the streamed chunks), so a "messages" stream
    # does not emit the answer a second time.
    message = reply(context, "generate", prompt)
    sources = cite(chunks)
    return {
        "answer": message_text(message).strip(),
        "sources": sources,
        "messages": [message],
        "steps": [f"generate: {step}" for step in fitted]
        + [f"generate: answered from {len(chunks)} chunk(s), {len(sources)} source(s)"],
    }
