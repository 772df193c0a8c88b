"""``grade_documents``: one yes/no relevance grade per retrieved chunk, all in parallel.

The grader answers JSON ``{"score": "yes" | "no"}`` (Ollama's JSON-schema ``format`` makes
that the only thing it can emit). A reply that still cannot be read is asked again once;
if it is still unreadable the chunk is **kept** (fallback): dropping it could turn an
answerable question into "no answer", while keeping it costs little because the answer
prompt tells the model to say so when the notes don't contain the answer.
"""

from __future__ import annotations

from typing import Literal

from langchain_core.messages import BaseMessage
from langgraph.runtime import Runtime

from graph.context import Context
from graph.fit import fit_chunks, ratios, reply_reserve
from graph.index.retrieval import RetrievedChunk
from graph.llm import ask_many, parse_grade, with_system
from graph.models import model_for, reply_limit
from graph.progress import report
from graph.prompts import GRADE_PROMPTS, language_of, note_block
from graph.state import Grade, RunState, State, working_question

FALLBACK_RELEVANT = True

#: The language the grader is asked in: always English, or the note section's own language
#: where ``GRADE_PROMPTS`` has it (German). Asked in German, the 1.5B model turned away one
#: more German near miss and kept as many right answers, with the check that asks the model
#: only about drafts without figures (``nodes/generate.py``); English notes get the same
#: prompt either way. Measured per set: docs/quality.md, the answer path's designs.
GradeLanguage = Literal["english", "notes"]
GRADE_LANGUAGE: GradeLanguage = "notes"


def grade_prompt(chunk: RetrievedChunk, question: str) -> list[BaseMessage]:
    """Instructions, then the question and the chunk (with its note and heading) as material."""
    language = language_of(chunk["content"]) if GRADE_LANGUAGE == "notes" else "en"
    system, template = GRADE_PROMPTS.get(language, GRADE_PROMPTS["en"])
    return with_system(system, template.format(question=question, note=note_block(chunk)))


def fitted_prompt(
    chunk: RetrievedChunk, question: str, context: Context
) -> tuple[list[BaseMessage], list[str]]:
    """The grade prompt of ``chunk``, its tail cut if it would not fit ``num_ctx``."""
    fitted, steps = fit_chunks(
        [chunk],
        lambda selection: "\n".join(str(m.content) for m in grade_prompt(selection[0], question)),
        num_ctx=context.num_ctx,
        reply_tokens=reply_reserve(reply_limit("grade"), context.num_ctx),
        chars_per_token=ratios.chars_per_token(model_for(context, "grade")),
    )
    return grade_prompt(fitted[0], question), steps


class Landed:
    """Reports each chunk's verdict as it lands: ``grading`` n of k, kept so far."""

    def __init__(self, chunks: list[RetrievedChunk]) -> None:
        self.chunks, self.done, self.kept = chunks, 0, 0
        if chunks:
            report("grading", done=0, total=len(chunks), kept=0)

    def first(self, index: int, reply: str) -> None:
        """A first reply: settled unless it is unreadable (then it is asked again)."""
        verdict = parse_grade(reply)
        if verdict is not None:
            self.settle(index, verdict)

    def settle(self, index: int, verdict: bool | None) -> None:
        """Report the chunk at ``index`` as judged (``None``: unreadable, the fallback)."""
        relevant = FALLBACK_RELEVANT if verdict is None else verdict
        self.done, self.kept = self.done + 1, self.kept + relevant
        chunk = self.chunks[index]
        report(
            "grading",
            done=self.done,
            total=len(self.chunks),
            kept=self.kept,
            source=chunk["source"],
            heading=chunk["heading"],
            relevant=relevant,
        )


def grade_chunks(
    chunks: list[RetrievedChunk], question: str, context: Context, steps: list[str] | None = None
) -> list[Grade]:
    """Grade every chunk concurrently; retry unreadable replies once, then fall back.

    ``steps`` receives what was cut to make a prompt fit the context window.
    """
    prompts = []
    for chunk in chunks:
        prompt, fitted = fitted_prompt(chunk, question, context)
        prompts.append(prompt)
        if steps is not None:
            steps.extend(f"grade_documents: {step} (for grading)" for step in fitted)
    landed = Landed(chunks)
    replies = ask_many(
        context, [("grade", p) for p in prompts], context.grade_concurrency, landed.first
    )
    verdicts = [parse_grade(r) for r in replies]
    unreadable = [i for i, v in enumerate(verdicts) if v is None]
    retried = ask_many(
        context,
        [("grade", prompts[i]) for i in unreadable],
        context.grade_concurrency,
        lambda n, again: landed.settle(unreadable[n], parse_grade(again)),
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
    fitted: list[str] = []
    grades = grade_chunks(chunks, working_question(state), runtime.context, fitted)
    kept = [chunk for chunk, grade in zip(chunks, grades) if grade["relevant"]]
    steps = fitted + [
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
