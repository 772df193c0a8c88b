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

from langchain_core.messages import BaseMessage
from langgraph.runtime import Runtime

from graph.context import Context
from graph.index.retrieval import RetrievedChunk
from graph.llm import ask_many, parse_yes_no, with_system
from graph.prompts import GRADE_SYSTEM, GRADE_USER, note_block
from graph.state import Grade, RunState, State, working_question

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


def grade_prompt(chunk: RetrievedChunk, question: str) -> list[BaseMessage]:
    """Instructions, then the question and the chunk (with its note and heading) as material."""
    user = GRADE_USER.format(question=question, note=note_block(chunk))
    return with_system(GRADE_SYSTEM, user)


def grade_chunks(chunks: list[RetrievedChunk], question: str, context: Context) -> list[Grade]:
    """Grade every chunk concurrently; retry unreadable replies once, then fall back."""
    prompts = [grade_prompt(c, question) for c in chunks]
    replies = ask_many(context, [("grade", p) for p in prompts], context.grade_concurrency)
    verdicts = [parse_grade(r) for r in replies]
    unreadable = [i for i, v in enumerate(verdicts) if v is None]
    retried = ask_many(
        context, [("grade", prompts[i]) for i in unreadable], context.grade_concurrency
    )
    for i, again in zip(unreadable, retried):
        replies[i], verdicts[i] = again, parse_grade(again)
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


def grade_documents(state: State, runtime: Runtime[Context]) -> RunState:
    """Keep the chunks the grader calls relevant; none left means ``no_answer``."""
    chunks = state.get("documents", [])
    grades = grade_chunks(chunks, working_question(state), runtime.context)
    kept = [chunk for chunk, grade in zip(chunks, grades) if grade["relevant"]]
    steps = [
        f"grade_documents: {g['source']} > {g['heading'] or '(top)'}: "
        f"{'yes' if g['relevant'] else 'no'}{' (fallback)' if g['fallback'] else ''}"
        for g in grades
    ]
    update: RunState = {"grades": grades, "documents": kept, "steps": steps}
    if not kept:
        update["no_answer_reason"] = "all_irrelevant"
        # The graded-out chunks are the closest notes; name them in the message.
        update["near_misses"] = chunks[:3]
    return update
