"""``generate``: answer from the relevant chunks only, streaming tokens, citing the notes.

Then, unless ``check_answers`` is off, the answer is checked against the same note sections
(not for an answer that already declines): first every figure it gives must be written in them,
and one of them must be of the kind the question asks for, when it asks for a measure (a
temperature, a count; ``graph/figures.py``, no model call); then, unless a section is German,
every name it gives (``graph/names.py``). An answer with figures that pass both, each written
in a section's text, is settled there, and so is one without figures whose names are all
written; any other goes to the model, asked whether the sections state it, about the question
asked (one yes/no call, not streamed).
Small models answer a near miss from a neighbouring fact or invent one; an answer the check
finds not stated is kept, followed by a plain "your notes don't say this", and the run ends
with ``no_answer_reason`` ``unsupported``. A "yes" counts only when the model is sure of it
(``check_confidence``, where Ollama reports token probabilities). An unreadable verdict keeps
the answer as it is.
"""

from __future__ import annotations

from typing import Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.runtime import Runtime

from graph.citations import LOOSE_CITATIONS, listed_by_what_they_write
from graph.context import Context
from graph.figures import figures_of_another_kind, ungrounded_figures
from graph.fit import estimate_tokens, fit_chunks, prompt_budget, ratios, reply_reserve
from graph.index.retrieval import RetrievedChunk
from graph.llm import (
    conversation_turns,
    declines,
    message_text,
    parse_grade,
    reply,
    with_system,
    yes_probability,
)
from graph.models import model_for, reply_limit
from graph.names import capitals_mark_names, names_of, unwritten_names
from graph.progress import report
from graph.prompts import (
    CHECK_AFTER_ANSWER,
    CHECK_FOLLOW_UP,
    CHECK_SYSTEM,
    CHECK_USER,
    GENERATE_SYSTEM,
    UNSUPPORTED,
    UNSUPPORTED_FIGURES,
    UNSUPPORTED_KIND,
    UNSUPPORTED_NAMES,
    UNSUPPORTED_RESTATED,
    answer_request,
    format_context,
    grade_system,
    grades_in_the_answers_prompt,
    neutralize_control,
    notes_and_question,
    one_system_prompt,
    system_for,
)
from graph.restated import leaves_out_the_answer
from graph.state import RunState, Source, State, source_line, working_question
from graph.warmup import warm_next_question
from graph.window import QUESTION_WINDOW, question_window

CheckStyle = Literal["fresh", "continued", "prefix"]
"""How the answer check is asked (``check_prompt``): ``fresh``, its own prompt with the notes,
question and answer; ``continued``, the next turn of the answer's conversation; ``prefix``, the
answer's prompt with the check written after it. The last two begin with what the server read
for the answer (Ollama and llama.cpp reuse it), so they read the notes once."""

#: The style the graph asks the check in.
CHECK_STYLE: CheckStyle = "fresh"

#: A section longer than this many characters is written from on the lines the question is
#: about (``graph/window.py``), the window its grade read, and checked against whole; 0 writes
#: from whole sections. With it, the 1.5B model wrote 2 more right runbooks answers and one
#: more German one, and no set had fewer (docs/quality.md, the answer path's designs).
ANSWER_WINDOW = QUESTION_WINDOW


def cite(chunks: list[RetrievedChunk]) -> list[Source]:
    """Distinct (note, heading) pairs in the order the answer read them: its sources."""
    seen: dict[tuple[str, str], Source] = {}
    for c in chunks:
        seen.setdefault((c["source"], c["heading"]), Source(path=c["source"], heading=c["heading"]))
    return list(seen.values())


def answer_prompt(chunks: list[RetrievedChunk], question: str) -> list[BaseMessage]:
    """The answer's prompt: the instructions, then the note sections and the question."""
    return with_system(system_for(GENERATE_SYSTEM), answer_turn(chunks, question))


def answer_turn(chunks: list[RetrievedChunk], question: str) -> str:
    """The user turn of the answer's prompt: the note sections, then the question."""
    return f"{notes_and_question(chunks, question)}\n\n{answer_request(question)}"


def generate(state: State, runtime: Runtime[Context]) -> RunState:
    """The answer, streamed; then its check, not streamed.

    Answer tokens reach ``stream_mode="messages"`` as they are produced.
    """
    report("writing")
    context = runtime.context
    question = working_question(state)

    documents = state.get("documents", [])
    # With one system prompt the answer reuses its top section's grade: both read it whole.
    shown = (
        [question_window(c, question, ANSWER_WINDOW) for c in documents]
        if ANSWER_WINDOW and not one_system_prompt()
        else documents
    )
    # Only the chunks that fit are sent, and only they are cited.
    chunks, fitted = fit_chunks(
        shown,
        lambda selection: f"{system_for(GENERATE_SYSTEM)}\n{answer_turn(selection, question)}",
        num_ctx=context.num_ctx,
        reply_tokens=reply_reserve(reply_limit("generate"), context.num_ctx),
        chars_per_token=ratios.chars_per_token(model_for(context, "generate")),
    )
    prompt = answer_prompt(chunks, question)
    # The model's own message (same id as the streamed chunks), so a "messages" stream
    # does not emit the answer a second time.
    message = reply(context, "generate", prompt)
    answer = message_text(message).strip()
    steps = [f"generate: {step}" for step in fitted]
    # Each citation listed with the section that writes what it cites (the text is streamed).
    as_read = cite(chunks)
    sources = listed_by_what_they_write(answer, as_read, documents[: len(chunks)])
    if sources != as_read:
        steps.append("generate: sources listed by the sections that write what is cited")
    steps.append(f"generate: answered from {len(chunks)} chunk(s), {len(sources)} source(s)")
    update: RunState = {"sources": sources}
    report("written", sources=sources, checking=bool(context.check_answers and answer))
    checked_by_the_model = False
    if context.check_answers and answer:
        checked = (
            checked_sections(documents, chunks, question, answer, context)
            if shown is not documents
            else chunks
        )
        by, looked_up = without_the_model(question, answer, checked) or ("model", None)
        stated: bool | None
        if looked_up:  # a lookup settles it: no model call can say otherwise
            stated, (how, notice, fields) = False, looked_up
        elif by != "model":
            # Every figure it gives is written in its sections' text (and, where the question
            # asks for a measure, one is of that kind), or it gives none and every name it
            # gives is written there: settled without a model call.
            stated = True
            how = f"checked against the notes: every {SETTLED_BY[by]} written in them"
        else:
            stated, how = check_answer(checked, question, answer, context, message)
            checked_by_the_model = not how.startswith(NOT_CHECKED)
            notice, fields = UNSUPPORTED, {}
        steps.append(f"generate: {how}")
        report("checked", stated=stated, by=by)
        if stated is False:
            drafted_from = "; ".join(source_line(n, s) for n, s in enumerate(sources, start=1))
            notice = notice.format(sources=drafted_from, **fields)
            answer = f"{answer}\n\n{notice}"
            # The same id: the thread's conversation holds what the reader was shown.
            message = message.model_copy(update={"content": answer})
            update["no_answer_reason"] = "unsupported"
    # The next question's grades are likely in this question's top section's language; with
    # one system prompt the answer began with the grader's, and there is nothing to read.
    grader = grade_system(chunks[0]) if chunks and not one_system_prompt() else None
    if grades_in_the_answers_prompt() and not checked_by_the_model:
        grader = None  # the slot begins with the answer's instructions, the grades' too
    turns = conversation_turns([*state.get("messages", []), message])
    warm_next_question(context, grader, turns)
    return {**update, "answer": answer, "messages": [message], "steps": steps}


def lookup(
    question: str, answer: str, chunks: list[RetrievedChunk]
) -> tuple[str, str, dict[str, str]] | None:
    """The step, the notice and its fields (all but ``sources``) when a lookup finds it unstated.

    ``answer`` is not stated when it restates ``question`` and leaves out its answer, gives a
    figure none of ``chunks`` writes, or gives figures, none of them of the kind ``question``
    asks for. ``None`` when no lookup finds anything, or when the answer declines.
    """
    if declines(answer):
        return None
    if leaves_out_the_answer(question, answer):
        return "checked against the question: the answer restates it", UNSUPPORTED_RESTATED, {}
    figures = ", ".join(ungrounded_figures(answer, map(grounds, chunks)))
    if figures:
        how = f"checked against the notes: {figures} in none of them"
        return how, UNSUPPORTED_FIGURES, {"figures": figures}
    another_kind = figures_of_another_kind(question, answer)
    if another_kind:
        asked, given = another_kind[0], ", ".join(another_kind[1])
        how = f"checked against the question: it asks for {asked}, the answer gives {given}"
        return how, UNSUPPORTED_KIND, {"asked": asked, "figures": given}
    return None


#: What a check settled without the model, as its step names it.
SETTLED_BY = {"figures": "figure", "names": "name"}

Settled = tuple[Literal["lookup", "figures", "names"], tuple[str, str, dict[str, str]] | None]


def without_the_model(question: str, answer: str, chunks: list[RetrievedChunk]) -> Settled | None:
    """What settles ``answer``'s check without a model call, in the order the check asks.

    ``("lookup", (step, notice, fields))``: a figure or a name its sections do not write, or
    figures of another kind than asked; ``("figures", None)`` or ``("names", None)``: its
    figures, or (it gives none) its names, are all written in its sections' text. ``None``:
    the model decides.
    """
    looked_up = lookup(question, answer, chunks) or names_lookup(answer, chunks)
    if looked_up:
        return "lookup", looked_up
    if settled_by_figures(answer, chunks):
        return "figures", None
    if settled_by_names(answer, chunks):
        return "names", None
    return None


def names_lookup(
    answer: str, chunks: list[RetrievedChunk]
) -> tuple[str, str, dict[str, str]] | None:
    """The step, the notice and its fields when ``answer`` names what ``chunks`` do not write.

    Names as ``graph/names.py`` reads them, in a section's text, heading or note path. ``None``
    when every name is written, when the answer declines, or when it or a section is in a
    language whose capitals mark no names (German).
    """
    if declines(answer) or not capitals_mark_names([answer, *(c["content"] for c in chunks)]):
        return None
    names = ", ".join(unwritten_names(answer, map(grounds, chunks)))
    if not names:
        return None
    return (
        f"checked against the notes: {names} in none of them",
        UNSUPPORTED_NAMES,
        {"names": names},
    )


def settled_by_names(answer: str, chunks: list[RetrievedChunk]) -> bool:
    """Whether ``answer``'s names settle its check: no figure, and names its sections write.

    Written in a section's text, as figures must be (not only in a heading or a note's name);
    only where capitals mark names (``names_lookup``). A draft that gives figures is settled by
    them or not at all (a figure found only in a heading goes to the model, whatever names it
    gives). What else the draft says is not checked, as with figures: measured per set in
    docs/quality.md (the answer path's designs).
    """
    texts = [chunk["content"] for chunk in chunks]
    return (
        not declines(answer)
        and not gives_figures(answer)
        and bool(names_of(answer))
        and capitals_mark_names([answer, *texts])
        and not unwritten_names(answer, texts, whole_words=True)
    )


def gives_figures(answer: str) -> bool:
    """Whether ``answer`` gives a figure the lookups read (a number, a date, a time...).

    A number it cites a source by, however written, is no figure.
    """
    text = LOOSE_CITATIONS.sub(" ", answer)
    return not declines(answer) and bool(ungrounded_figures(text, []))


def settled_by_figures(answer: str, chunks: list[RetrievedChunk]) -> bool:
    """Whether ``answer``'s figures settle its check: it gives some, each in a section's text.

    Stricter than the figure lookup, which also reads a section's note path and heading (a
    figure found only there does not withdraw a draft, nor does it settle one).
    """
    texts = [chunk["content"] for chunk in chunks]
    return gives_figures(answer) and not ungrounded_figures(answer, texts)


def grounds(chunk: RetrievedChunk) -> str:
    """What the model was shown of a chunk: its note's path, its heading and its text."""
    return f"{chunk['source']}\n{chunk['heading']}\n{chunk['content']}"


#: How a check that asked no model call begins (a declining draft, or one too long to check).
NOT_CHECKED = "not checked"


def check_answer(
    chunks: list[RetrievedChunk],
    question: str,
    answer: str,
    context: Context,
    said: AIMessage | None = None,
) -> tuple[bool | None, str]:
    """Whether the note sections state what ``answer`` says about ``question``, and how.

    ``said``: the model's reply as received (``ask_check``). ``None``: not known. An answer
    that already says the notes don't say is not checked (it states nothing to check), nor one whose
    check would not fit ``num_ctx`` whole: a prompt Ollama cut from the front would lose the
    instructions and the first notes.
    """
    if declines(answer):
        return None, f"{NOT_CHECKED}: the answer says the notes don't say"
    asked = ask_check(chunks, question, answer, context, said)
    if isinstance(asked, str):
        return None, asked
    stated, sure = asked
    verdict = {True: "stated", False: "not stated", None: "unreadable verdict, kept"}[stated]
    if sure is not None:
        verdict += f", P(yes) {sure:.2f}"
    if unsure(stated, sure, context.check_confidence):
        stated, verdict = (
            False,
            f"stated but unsure, P(yes) {sure:.2f} below {context.check_confidence}",
        )
    return stated, f"checked against the notes: {verdict}"


def unsure(stated: bool | None, sure: float | None, bar: float) -> bool:
    """A "yes" whose P(yes) is below ``bar``: the check takes it as not stated."""
    return bool(stated) and sure is not None and sure < bar


def check_prompt(
    chunks: list[RetrievedChunk],
    question: str,
    answer: str,
    style: CheckStyle,
    said: AIMessage | None = None,
) -> list[BaseMessage]:
    """The answer check's prompt in ``style`` (``continued`` needs ``said``, the reply)."""
    if style == "continued" and said is not None:
        follow_up = HumanMessage(CHECK_FOLLOW_UP.format(question=question))
        return [*answer_prompt(chunks, question), said, follow_up]
    if style == "prefix":
        draft = CHECK_AFTER_ANSWER.format(answer=neutralize_control(answer))
        return with_system(system_for(GENERATE_SYSTEM), answer_turn(chunks, question) + draft)
    user = CHECK_USER.format(
        notes=format_context(chunks), question=question, answer=neutralize_control(answer)
    )
    return with_system(system_for(CHECK_SYSTEM), user)


def fits_the_check(prompt: list[BaseMessage], context: Context) -> bool:
    """Whether the check's ``prompt`` fits ``num_ctx`` with room for its reply."""
    budget = prompt_budget(context.num_ctx, reply_reserve(reply_limit("check"), context.num_ctx))
    chars_per_token = ratios.chars_per_token(model_for(context, "check"))
    sent = "\n".join(message_text(m) for m in prompt)
    return estimate_tokens(sent, chars_per_token) <= budget


def checked_sections(
    documents: list[RetrievedChunk],
    written: list[RetrievedChunk],
    question: str,
    answer: str,
    context: Context,
) -> list[RetrievedChunk]:
    """The sections the check reads: the whole ones the answer was written from windows of.

    ``written`` is what the answer read, the first of ``documents`` (windowed, or cut to
    fit). The check reads them whole when it is asked in its own prompt (``fresh``) and they
    fit it there; else what the answer read: the other styles continue the answer's own
    prompt, and a check that does not fit would not be asked at all.
    """
    if CHECK_STYLE != "fresh":
        return written
    whole = documents[: len(written)]  # fit_chunks keeps a prefix of what it is given
    prompt = check_prompt(whole, question, answer, "fresh")
    return whole if fits_the_check(prompt, context) else written


def ask_check(
    chunks: list[RetrievedChunk],
    question: str,
    answer: str,
    context: Context,
    said: AIMessage | None = None,
    style: CheckStyle | None = None,
) -> tuple[bool | None, float | None] | str:
    """The model's own verdict on ``answer`` and its P(yes), before ``check_confidence``.

    Asked in ``style`` (``CHECK_STYLE`` unless given); ``said`` is the model's reply as
    received, which the ``continued`` style sends back. A string instead when the check is
    not asked: why (it would not fit ``num_ctx``).
    """
    prompt = check_prompt(chunks, question, answer, style or CHECK_STYLE, said)
    if not fits_the_check(prompt, context):
        return f"{NOT_CHECKED}: answer and notes exceed num_ctx {context.num_ctx}"
    message = reply(context, "check", prompt)
    return parse_grade(message_text(message).strip()), yes_probability(message)
