"""``grade_documents``: one yes/no relevance grade per retrieved chunk.

By default (``GRADE_LAYOUT = "alone"``) each chunk is graded in a prompt of its own, with the
grader's instructions (``GRADE_PROMPTS``), all at once (``grade_concurrency``).

The other layout, ``after_notes``, asks each grade after the answer's own beginning: the
answer's instructions, every retrieved section and the question, then which section to grade
(``GRADE_AFTER_NOTES``). The grades share that prefix and so does the answer when the grader
keeps every section (up to the first one it drops otherwise): Ollama and llama.cpp reuse the
longest prefix a prompt shares with the one before it, so the sections are read once per
question, not once to grade and again to answer. Those grades are asked in turn, so that one
server slot holds the prefix (parallel slots would each read it); a question whose prompt
would not fit ``num_ctx`` that way is graded alone. It reads fewer prompt tokens and changes
what the 1.5B model keeps: not the default (measured in docs/quality.md).

With one system prompt for every task (``SYSTEM_PROMPT = "shared"`` in ``graph/prompts.py``,
off) each grade begins as the answer does and the grades are asked in turn, the top-ranked
section last, so the answer reuses what the server read for that section's grade. With the
grades in the answer's own system prompt (``SYSTEM_PROMPT = "answer"``, off) they begin so
too, the grader's test comes after the question, the answer's and the check's prompts stay
as they are, and a section is kept by the grader's P(yes) against ``GRADE_FLOOR``.

The grader answers JSON ``{"score": "yes" | "no"}`` (Ollama's JSON-schema ``format`` makes
that the only thing it can emit), and the reply ends after the verdict's value
(``VERDICT_END``); a model's later grades can be asked after the opening it wrote, for one
token (``graph/verdict.py``, off). A reply that still cannot be read is asked again once; if
it is still unreadable the chunk is **kept** (fallback): dropping it could turn an
answerable question into "no answer", while keeping it costs little because the answer
prompt tells the model to say so when the notes don't contain the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

from langchain_core.messages import BaseMessage
from langgraph.runtime import Runtime

from graph.context import Context
from graph.fit import estimate_tokens, fit_chunks, prompt_budget, ratios, reply_reserve
from graph.index.retrieval import RetrievedChunk
from graph.llm import ask_many, message_text, parse_grade, reply, with_system, yes_probability
from graph.models import CHECK_TOP_LOGPROBS, Purpose, model_for, reply_limit
from graph.progress import report
from graph.prompts import (
    GENERATE_SYSTEM,
    GRADE_AFTER_NOTES,
    GRADE_IN_ANSWER,
    GRADE_PROMPTS,
    GRADE_REQUEST,
    SHARED_SYSTEM,
    chunk_language,
    grader_system,
    grades_in_the_answers_prompt,
    grades_in_turn,
    neutralize_control,
    note_block,
    notes_and_question,
    one_system_prompt,
    source_numbers,
    system_for,
)
from graph.state import Grade, RunState, State, working_question
from graph.verdict import ask_verdict
from graph.window import QUESTION_WINDOW, question_window

FALLBACK_RELEVANT = True

#: How each grade is asked: ``alone``, each section in a prompt of its own, or ``after_notes``,
#: after the answer's beginning with every section (read once for all grades and the answer).
#: No wording of ``after_notes`` measured on the tune half kept as many right answers and
#: stopped as many near misses as ``alone``, and the most lenient let 9 more German near misses
#: through: docs/quality.md, the answer path's designs.
GradeLayout = Literal["alone", "after_notes"]
GRADE_LAYOUT: GradeLayout = "alone"


def grade_prompt(chunk: RetrievedChunk, question: str) -> list[BaseMessage]:
    """Instructions, then the question and the chunk (with its note and heading) as material."""
    language = chunk_language(chunk)
    if one_system_prompt():  # the answer's beginning, this section as note 1, then the task
        request = GRADE_REQUEST.get(language, GRADE_REQUEST["en"])
        return with_system(SHARED_SYSTEM, notes_and_question([chunk], question) + request)
    if grades_in_the_answers_prompt():  # the answer's own beginning, then the grader's test
        request = GRADE_IN_ANSWER.get(language, GRADE_IN_ANSWER["en"])
        return with_system(GENERATE_SYSTEM, notes_and_question([chunk], question) + request)
    system, template = GRADE_PROMPTS.get(language, GRADE_PROMPTS["en"])
    user = template.format(question=question, note=note_block(chunk))
    return with_system(grader_system(system), user)


def prompts_after_notes(
    chunks: list[RetrievedChunk], question: str, context: Context
) -> list[list[BaseMessage]] | None:
    """Each chunk's grade asked after the answer's beginning with every chunk (one prefix).

    ``None`` when the longest of them would not fit ``num_ctx``.
    """
    if not chunks:
        return []
    shared = notes_and_question(chunks, question)
    tails = [
        GRADE_AFTER_NOTES.get(chunk_language(chunk), GRADE_AFTER_NOTES["en"]).format(
            number=number, source=one_line(chunk["source"]), heading=one_line(chunk["heading"])
        )
        for chunk, number in zip(chunks, source_numbers(chunks), strict=True)
    ]
    budget = prompt_budget(context.num_ctx, reply_reserve(reply_limit("grade"), context.num_ctx))
    system = system_for(GENERATE_SYSTEM)
    longest = f"{system}\n{shared}{max(tails, key=len)}"
    if estimate_tokens(longest, ratios.chars_per_token(model_for(context, "grade"))) > budget:
        return None
    return [with_system(system, shared + tail) for tail in tails]


def one_line(text: str) -> str:
    """A note's path or heading as the grade question names it: one line, no control strings."""
    return neutralize_control(" ".join(text.split()) or "(top)")


#: A section longer than this many characters is graded on the lines the question is about
#: (``graph/window.py``), not whole; 0 grades every section whole. With 600, the 1.5B model
#: kept and turned away as many answers on every set, and read 2-5 % fewer characters to
#: grade a question's sections (docs/quality.md, the answer path's designs).
GRADE_WINDOW = QUESTION_WINDOW


def fitted_prompt(
    chunk: RetrievedChunk, question: str, context: Context
) -> tuple[list[BaseMessage], list[str]]:
    """The grade prompt of ``chunk``, its tail cut if it would not fit ``num_ctx``.

    A long section is graded on its window (``GRADE_WINDOW``), except with one system prompt,
    where each grade begins as the answer does, with the whole section.
    """
    if GRADE_WINDOW and not one_system_prompt():
        chunk = question_window(chunk, question, GRADE_WINDOW)
    fitted, steps = fit_chunks(
        [chunk],
        lambda selection: "\n".join(str(m.content) for m in grade_prompt(selection[0], question)),
        num_ctx=context.num_ctx,
        reply_tokens=reply_reserve(reply_limit("grade"), context.num_ctx),
        chars_per_token=ratios.chars_per_token(model_for(context, "grade")),
    )
    return grade_prompt(fitted[0], question), steps


#: A grade asked in the answer's system prompt (``SYSTEM_PROMPT = "answer"``, off) keeps its
#: section when the grader's P(yes) (``graph.llm.yes_probability``) reaches this. Asked there,
#: the 1.5B model writes "yes" more rarely than under the grader's own prompt; its P(yes)
#: ranks the sections much as that grader's verdicts do. Fitted on the tune sets: the floor
#: of those measured that kept the most right answers with neither tune set worse than the
#: default on either count. The runbooks lost 5 right answers and a near miss with it, and
#: the German notes let 10 more near misses through, so the layout is off (docs/quality.md,
#: the answer path's designs).
GRADE_FLOOR = 0.31


class Said(NamedTuple):
    """A grade's reply, and how sure the grader was of "yes" (``yes_probability``)."""

    text: str
    p_yes: float | None
    """``None`` where the server gives no log-probabilities (Ollama before 0.12.11)."""


def ask_grade(context: Context, purpose: Purpose, prompt: Sequence[BaseMessage]) -> Said:
    """One grade's reply and the grader's P(yes), read from its token log-probabilities.

    Asked in the answer's system prompt (``SYSTEM_PROMPT = "answer"``), the verdict is its
    P(yes) against ``GRADE_FLOOR``, written as the format writes it; a server without
    log-probabilities (Ollama before 0.12.11) gives the verdict as written.
    """
    if not grades_in_the_answers_prompt():
        # with the format, or after the model's opening (``graph.verdict.AFTER_THE_OPENING``)
        return Said(*ask_verdict(context, purpose, prompt))
    message = reply(context, purpose, prompt, logprobs=True, top_logprobs=CHECK_TOP_LOGPROBS)
    text, sure = message_text(message).strip(), yes_probability(message)
    if sure is not None and parse_grade(text) is not None:
        text = '{"score": "%s"}' % ("yes" if sure >= GRADE_FLOOR else "no")
    return Said(text, sure)


def surest_first(chunks: list[RetrievedChunk], grades: list[Grade]) -> list[RetrievedChunk]:
    """The chunks graded relevant, the one the grader was surest of first.

    The 1.5B writer leans on the first section it reads: with the kept sections in the
    grader's order rather than retrieval's, 2 more daily-vault questions came out right, and no
    set was worse (docs/quality.md, "The surest section first"). A grade without a P(yes)
    counts as the least sure; equally sure ones keep retrieval's order.
    """
    kept = [(chunk, grade) for chunk, grade in zip(chunks, grades) if grade["relevant"]]
    kept.sort(key=lambda pair: -(pair[1]["p_yes"] or 0.0))
    return [chunk for chunk, _ in kept]


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
    prompts = (
        prompts_after_notes(chunks, question, context) if GRADE_LAYOUT == "after_notes" else None
    )
    concurrency, order = 1, list(range(len(chunks)))
    if prompts is None:
        prompts, concurrency = [], context.grade_concurrency
        for chunk in chunks:
            prompt, fitted = fitted_prompt(chunk, question, context)
            prompts.append(prompt)
            if steps is not None:
                steps.extend(f"grade_documents: {step} (for grading)" for step in fitted)
        if grades_in_turn():
            # In turn (one server slot), the top-ranked section last: its grade begins as the
            # answer does, which the answer then reuses.
            concurrency, order = 1, order[::-1]
    landed = Landed(chunks)
    asked = ask_many(
        context,
        [("grade", prompts[i]) for i in order],
        concurrency,
        ask_grade,
        lambda n, said: landed.first(order[n], said.text),
    )
    replies = [Said("", None)] * len(chunks)
    for i, said in zip(order, asked, strict=True):
        replies[i] = said
    verdicts = [parse_grade(r.text) for r in replies]
    unreadable = [i for i, v in enumerate(verdicts) if v is None]
    retried = ask_many(
        context,
        [("grade", prompts[i]) for i in unreadable],
        concurrency,
        ask_grade,
        lambda n, again: landed.settle(unreadable[n], parse_grade(again.text)),
    )
    for i, again in zip(unreadable, retried):
        replies[i], verdicts[i] = again, parse_grade(again.text)
    return [
        Grade(
            source=chunk["source"],
            heading=chunk["heading"],
            relevant=FALLBACK_RELEVANT if verdict is None else verdict,
            raw=said.text[:200],
            fallback=verdict is None,
            p_yes=None if verdict is None else said.p_yes,
        )
        for chunk, said, verdict in zip(chunks, replies, verdicts)
    ]


def grade_documents(state: State, runtime: Runtime[Context]) -> RunState:
    """Keep the chunks the grader calls relevant; none left means ``no_answer``."""
    chunks = state.get("documents", [])
    fitted: list[str] = []
    grades = grade_chunks(chunks, working_question(state), runtime.context, fitted)
    kept = surest_first(chunks, grades)
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
