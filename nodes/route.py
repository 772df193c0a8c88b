"""``route``: choose calculator, image or retrieve, as cheaply as possible.

Order of decisions (each later step only runs when the earlier ones could not decide):
1. prefix triggers (``calculate:``, ``based on the image``) — free;
2. a prompt that is itself an arithmetic expression goes to the calculator — free;
3. Ollama yes/no classifications, only those that could change the outcome: the
   calculator question only when the prompt has a digit and an operator (sign or word),
   the image question only when a vision-capable model is configured and there is an image
   to look at. Both run at once.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime

from graph.arithmetic import could_be_calculation, is_complete_expression
from graph.context import Context
from graph.images import IMAGES, input_images
from graph.index.vectorstore import notes_have_images
from graph.llm import ask, ask_many, parse_yes_no
from graph.models import Purpose, get_models
from graph.progress import report
from graph.prompts import CLASSIFY, IS_ABOUT_IMAGE, IS_CALCULATION
from graph.state import FRESH_RUN, NEW_RUN, Route, State
from graph.tracing import tag_current_run

#: The yes/no question behind each classification.
_QUESTIONS: dict[Purpose, str] = {
    "route_calculator": IS_CALCULATION,
    "route_image": IS_ABOUT_IMAGE,
}


def strip_prefix(question: str, prefix: str) -> str | None:
    """The question without ``prefix`` (case-insensitive), or ``None`` if it does not start so."""
    if prefix and question.lower().startswith(prefix.lower()):
        return question[len(prefix) :].lstrip(" :,-").strip()
    return None


def by_rule(question: str, context: Context) -> tuple[Route, str, str] | None:
    """The free decisions: triggers and a prompt that is a complete expression."""
    if context.enable_calculator:
        rest = strip_prefix(question, context.calculator_trigger)
        if rest is not None:
            return "calculator", rest, f"trigger {context.calculator_trigger!r}"
    if context.enable_image and strip_prefix(question, context.image_trigger) is not None:
        return "image", question, f"trigger {context.image_trigger!r}"
    if context.enable_calculator and is_complete_expression(question):
        return "calculator", question, "fast path: arithmetic expression"
    return None


def classifications_worth_asking(
    question: str, has_images: bool, context: Context
) -> tuple[list[Purpose], list[str]]:
    """The classifications that could change the route, and why the others are skipped."""
    asks: list[Purpose] = []
    reasons: list[str] = []
    if not context.enable_calculator:
        reasons.append("calculator off")
    elif could_be_calculation(question):
        asks.append("route_calculator")
    else:
        reasons.append("no arithmetic" if any(c.isdigit() for c in question) else "no digits")
    if not context.enable_image:
        reasons.append("image tool off")
    elif not (has_images or notes_have_images(context)):
        reasons.append("no images")
    else:
        vision = context.effective_vision_model
        if "vision" in get_models().capabilities(context, vision):
            asks.append("route_image")
        else:
            reasons.append(f"{vision} has no vision")
    return asks, reasons


def decide(question: str, has_images: bool, context: Context) -> tuple[Route, str, str]:
    """Return (route, question to work on, reason for the trace)."""
    question = question.strip()
    ruled = by_rule(question, context)
    if ruled is not None:
        return ruled
    asks, reasons = classifications_worth_asking(question, has_images, context)
    if not asks:
        return "retrieve", question, ", ".join(reasons)
    prompts = [CLASSIFY.format(question=_QUESTIONS[p], prompt=question) for p in asks]
    replies = ask_many(context, list(zip(asks, prompts)), len(asks), ask)
    yes = {p: parse_yes_no(r) is True for p, r in zip(asks, replies)}
    said = ", ".join(
        f"{p.removeprefix('route_')}? {'yes' if answer else 'no'}" for p, answer in yes.items()
    )
    image, calculation = yes.get("route_image"), yes.get("route_calculator")
    if image and (has_images or not calculation):
        return "image", question, f"classified: {said}"
    if calculation:
        return "calculator", question, f"classified: {said}"
    return "retrieve", question, f"classified: {said}"


def route(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Pick the branch and start a fresh run (image paths only for trusted callers)."""
    report("routing")
    return start_run(state, runtime.context, allow_paths=runtime.context.trusted)


def start_run(state: State, context: Context, *, allow_paths: bool) -> dict[str, Any]:
    """Check the input images, decide the route, and reset what the previous turn left.

    The input ``images`` become references in ``attachments`` (the bytes wait outside the
    state, see ``graph.images``) and are cleared, so a thread's next question does not look
    at this question's images; a question that goes elsewhere drops them at once.
    """
    attachments = input_images(state.get("images") or [], allow_paths=allow_paths)
    try:
        chosen, question, reason = decide(state["question"], bool(attachments), context)
    except BaseException:
        IMAGES.discard(attachments)
        raise
    if chosen != "image":
        IMAGES.discard(attachments)
        attachments = []
    tag_current_run(f"route:{chosen}", route_reason=reason)
    return {
        **FRESH_RUN,
        "route": chosen,
        "standalone_question": question,
        "attachments": attachments,
        "images": [],
        "messages": [HumanMessage(state["question"])],
        "steps": [NEW_RUN, f"route: {chosen} ({reason})"],
    }
