"""``grade_documents``: one yes/no relevance grade per retrieved chunk, all in parallel.

The grader answers JSON ``{"score": "yes" | "no"}`` (Ollama's JSON-schema ``format`` makes
that the only thing it can emit). A reply that still cannot be read is asked again once;
if it is still unreadable the chunk is **kept** (fallback): dropping it could turn an
answerable question into "no answer", while keeping it costs little because the answer
prompt tells the model to say so when the notes don't contain the answer.
"""

from __future__ import annotations

import json
import re

from langchain_core.runnables import Runnable
from langgraph.runtime import Runtime

from graph.classify import message_text, parse_yes_no
from graph.context import Context
from graph.errors import ollama_errors
from graph.models import get_chat
from graph.prompts import GRADE_DOCUMENT
from graph.state import Grade, RetrievedChunk, State

FALLBACK_RELEVANT = True
_SCORE = re.compile(r"""["']?score["']?\s*[:=]\s*["']?(yes|no)""", re.IGNORECASE)


def parse_grade(text: str) -> bool | None:
    """Read a grade leniently: JSON first, then a ``score: yes`` fragment, then a bare yes/no."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        value = None
    if isinstance(value, dict) and "score" in value:
        return parse_yes_no(str(value["score"]))
    match = _SCORE.search(text)
    if match:
        return match.group(1).lower() == "yes"
    return parse_yes_no(text)


def _ask(model: Runnable, prompts: list[str], concurrency: int) -> list[str]:
    replies = model.batch(prompts, config={"max_concurrency": max(1, concurrency)})
    return [message_text(reply) for reply in replies]


def grade_chunks(chunks: list[RetrievedChunk], question: str, context: Context) -> list[Grade]:
    """Grade every chunk concurrently; retry unreadable replies once, then fall back."""
    model = get_chat(context, "grade")
    # The grader sees where the chunk sits (note and heading path), as a reader would.
    prompts = [
        GRADE_DOCUMENT.format(
            document=f"{c['source']} > {c['heading']}\n\n{c['content']}", question=question
        )
        for c in chunks
    ]
    with ollama_errors(context.ollama_base_url, context.chat_model):
        replies = _ask(model, prompts, context.grade_concurrency)
        verdicts = [parse_grade(r) for r in replies]
        unreadable = [i for i, v in enumerate(verdicts) if v is None]
        if unreadable:
            retried = _ask(model, [prompts[i] for i in unreadable], context.grade_concurrency)
            for i, reply in zip(unreadable, retried):
                replies[i], verdicts[i] = reply, parse_grade(reply)
    return [
        Grade(
            source=chunk["source"],
            heading=chunk["heading"],
            relevant=FALLBACK_RELEVANT if verdict is None else verdict,
            raw=reply[:200],
            fallback=verdict is None,
        )
        for chunk, reply, verdict in zip(chunks, replies, verdicts)
    ]


def grade_documents(state: State, runtime: Runtime[Context]) -> dict:
    """Keep the chunks the grader calls relevant; none left means ``no_answer``."""
    chunks = state.get("documents", [])
    question = state.get("standalone_question") or state["question"]
    grades = grade_chunks(chunks, question, runtime.context)
    kept = [chunk for chunk, grade in zip(chunks, grades) if grade["relevant"]]
    steps = [
        f"grade_documents: {g['source']} > {g['heading'] or '(top)'}: "
        f"{'yes' if g['relevant'] else 'no'}{' (fallback)' if g['fallback'] else ''}"
        for g in grades
    ]
    update: dict = {"grades": grades, "documents": kept, "steps": steps}
    if not kept:
        update["no_answer_reason"] = "all_irrelevant"
        # The graded-out chunks are the closest notes; name them in the message.
        update["near_misses"] = chunks[:3]
    return update
