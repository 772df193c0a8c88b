"""The classic LangGraph adaptive-RAG design, as a real graph, for ``rag eval --answers``.

It is what this project's graph improves on, run on the same model, index and questions so
the two can be compared answer by answer: both routing questions asked for every prompt,
one after the other; the top ``k`` chunks by vector similarity with no relevance floor;
**one grading call per chunk, in sequence**; then one generation. The grader and generator
prompts are those of LangGraph's local adaptive-RAG tutorial
(``examples/rag/langgraph_adaptive_rag_local.ipynb``, langchain-ai/langgraph, MIT): its
grader in JSON mode answering ``{"binary_score": "yes" | "no"}``, and its ``rag_prompt``
over the chunks' text joined by blank lines. Left out, because nothing here can do them
and this project's graph does not either: the tutorial's web search (when no chunk is
relevant this design says it found nothing) and its hallucination and answer graders.
Chat-template control strings in the chunks are broken as the graph breaks them
(``neutralize_control``): a note someone else wrote speaks to neither design as the system.
``bench/bench_graph.py`` only counts this design's calls with fakes; this runs it.

It lives in the evaluation package, not in ``graph/``: it is a yardstick, not a second
product graph, and nothing but the evaluation may wire it in. The calculator and image
branches are the project's own nodes (only routing to them differs), and every model call
goes through the project's model provider, so fakes and Ollama serve it as they serve the
graph, and each call is tagged with its purpose for the evaluation's token accounting.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from graph.context import Context
from graph.errors import ollama_errors
from graph.index.retrieval import RetrievedChunk, search_notes
from graph.index.vectorstore import with_embedding_model
from graph.llm import ask, message_text, parse_yes_no, reply
from graph.models import (
    MODELS_KEY,
    ModelProvider,
    Purpose,
    get_chat,
    get_models,
    model_for,
    options_for,
)
from graph.prompts import CLASSIFY, IS_ABOUT_IMAGE, IS_CALCULATION, neutralize_control
from graph.routing import after_grading, after_retrieve, after_route
from graph.state import FRESH_RUN, NEW_RUN, Grade, InputState, RunState, State
from nodes.calculator import calculator
from nodes.generate import cite
from nodes.image import image

# The tutorial's prompts, word for word (its typos and trailing spaces included).
DOC_GRADER_INSTRUCTIONS = (
    "You are a grader assessing relevance of a retrieved document to a user question.\n\n"
    "If the document contains keyword(s) or semantic meaning related to the question, grade it "
    "as relevant."
)

DOC_GRADER_PROMPT = (
    "Here is the retrieved document: \n\n {document} \n\n Here is the user question: \n\n "
    "{question}. \n\n"
    "This carefully and objectively assess whether the document contains at least some "
    "information that is relevant to the question.\n\n"
    "Return JSON with single key, binary_score, that is 'yes' or 'no' score to indicate whether "
    "the document contains at least some information that is relevant to the question."
)

RAG_PROMPT = (
    "You are an assistant for question-answering tasks. \n\n"
    "Here is the context to use to answer the question:\n\n"
    "{context} \n\n"
    "Think carefully about the above context. \n\n"
    "Now, review the user question:\n\n"
    "{question}\n\n"
    "Provide an answer to this questions using only the above context. \n\n"
    "Use three sentences maximum and keep the answer concise.\n\n"
    "Answer:"
)

#: What this design says when the grader kept nothing (the tutorial searched the web then).
NOTHING_FOUND = "I could not find an answer in your notes."

_ROUTING: tuple[tuple[Purpose, str], ...] = (
    ("route_calculator", IS_CALCULATION),
    ("route_image", IS_ABOUT_IMAGE),
)


def parse_binary_score(text: str) -> bool | None:
    """The tutorial's ``json.loads(reply)["binary_score"] == "yes"``; ``None`` if unreadable.

    The tutorial would raise on an unreadable reply; here the chunk is then dropped (its
    ``if grade.lower() == "yes"`` keeps only a clear yes) and the grade marked as a fallback.
    """
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return None
    if not isinstance(value, dict):
        return None
    score = value.get("binary_score", value.get("score"))
    return None if score is None else parse_yes_no(str(score))


def route(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Ask both routing questions for every prompt, one after the other."""
    question = state["question"].strip()
    said = {
        purpose: parse_yes_no(
            ask(runtime.context, purpose, CLASSIFY.format(question=asked, prompt=question))
        )
        is True
        for purpose, asked in _ROUTING
    }
    chosen = (
        "calculator" if said["route_calculator"] else "image" if said["route_image"] else "retrieve"
    )
    return {
        **FRESH_RUN,
        "route": chosen,
        "standalone_question": question,
        "attachments": [],
        "images": [],
        "messages": [HumanMessage(state["question"])],
        "steps": [NEW_RUN, f"route: {chosen} (both classifications asked, in sequence)"],
    }


def retrieve(state: State, runtime: Runtime[Context]) -> RunState:
    """The top ``k`` chunks by vector similarity, above the relevance floor or not: all graded."""
    context = with_embedding_model(runtime.context)
    found = search_notes(
        context, get_models().embeddings(context), state["question"], mode="vector"
    )
    update: RunState = {
        "documents": found.ranked,
        "near_misses": [],
        "steps": [f"retrieve: {len(found.ranked)} chunk(s), vector, no floor"],
    }
    if found.collection_size == 0:
        update["no_answer_reason"] = "empty_collection"
    return update


def grade_one(chunk: RetrievedChunk, question: str, context: Context) -> Grade:
    """One grading call, the tutorial's prompt in JSON mode."""
    prompt = [
        SystemMessage(DOC_GRADER_INSTRUCTIONS),
        HumanMessage(
            DOC_GRADER_PROMPT.format(
                document=neutralize_control(chunk["content"]), question=question
            )
        ),
    ]
    grader = get_chat(context, "grade").bind(**tutorial_request(context))
    with ollama_errors(context.ollama_base_url, model_for(context, "grade")):
        said = message_text(grader.invoke(prompt)).strip()
    verdict = parse_binary_score(said)
    return Grade(
        source=chunk["source"],
        heading=chunk["heading"],
        relevant=bool(verdict),
        raw=said[:200],
        fallback=verdict is None,
        p_yes=None,  # the tutorial's grader asks for no log-probabilities
    )


def tutorial_request(context: Context) -> dict[str, Any]:
    """The grading call's request fields as the tutorial sends them: JSON mode, and no stop.

    The graph's grades end after the verdict's value (``VERDICT_END``); the tutorial's reply
    is read whole (``json.loads``), so its options are the grade's without that stop.
    """
    think = get_models().think(context, "grade")
    options = {
        k: v for k, v in options_for("grade", think).items() if k in ("temperature", "num_predict")
    }
    return {"format": "json", "options": {"num_ctx": context.num_ctx, **options}}


def grade_documents(state: State, runtime: Runtime[Context]) -> RunState:
    """Grade the chunks one after the other; keep those graded ``yes``."""
    chunks = state.get("documents", [])
    grades = [grade_one(chunk, state["question"], runtime.context) for chunk in chunks]
    kept = [chunk for chunk, grade in zip(chunks, grades) if grade["relevant"]]
    update: RunState = {
        "grades": grades,
        "documents": kept,
        "steps": [
            f"grade_documents: {g['source']}: {'yes' if g['relevant'] else 'no'}"
            f"{' (unreadable)' if g['fallback'] else ''}"
            for g in grades
        ],
    }
    if not kept:
        update["no_answer_reason"] = "all_irrelevant"
    return update


def generate(state: State, runtime: Runtime[Context]) -> RunState:
    """One generation over the kept chunks' text, the tutorial's ``rag_prompt``."""
    chunks = state.get("documents", [])
    text = "\n\n".join(neutralize_control(chunk["content"]) for chunk in chunks)
    prompt = [HumanMessage(RAG_PROMPT.format(context=text, question=state["question"]))]
    message = reply(runtime.context, "generate", prompt)
    return {
        "answer": message_text(message).strip(),
        "sources": cite(chunks),
        "messages": [message],
        "steps": [f"generate: answered from {len(chunks)} chunk(s)"],
    }


def no_answer(state: State, runtime: Runtime[Context]) -> RunState:
    """Nothing relevant (or nothing loaded): say so, with no model call."""
    return {
        "answer": NOTHING_FOUND,
        "sources": [],
        "no_answer_reason": state.get("no_answer_reason") or "all_irrelevant",
        "messages": [AIMessage(NOTHING_FOUND)],
        "steps": ["no_answer"],
    }


def build_classic_graph(
    models: ModelProvider | None = None,
) -> CompiledStateGraph[State, Context, InputState, Any]:
    """Compile the classic design; ``models`` as in ``graph.builder.build_graph``."""
    builder = StateGraph(State, input_schema=InputState, context_schema=Context)
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
    compiled = builder.compile(name="classic_rag")
    if models is not None:
        compiled = compiled.with_config(configurable={MODELS_KEY: models})
    return compiled
