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

from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime

from graph.arithmetic import could_be_calculation, is_complete_expression
from graph.classify import classify_many
from graph.context import Context
from graph.errors import ollama_errors
from graph.models import get_chat, get_models
from graph.prompts import IS_ABOUT_IMAGE, IS_CALCULATION
from graph.state import NEW_RUN, Route, State
from graph.tracing import tag_current_run
from graph.vectorstore import get_collection


def strip_prefix(question: str, prefix: str) -> str | None:
    """The question without ``prefix`` (case-insensitive), or ``None`` if it does not start so."""
    if prefix and question.lower().startswith(prefix.lower()):
        return question[len(prefix) :].lstrip(" :,-").strip()
    return None


def _notes_have_images(context: Context) -> bool:
    """Whether the loaded notes reference images (recorded at load time; no model call)."""
    try:
        collection = get_collection(context)
    except Exception:  # routing must not fail because the index is unavailable
        return False
    return bool(collection is not None and (collection.metadata or {}).get("rag:image_notes"))


def decide(state: State, context: Context) -> tuple[Route, str, str]:
    """Return (route, question to work on, reason for the trace)."""
    question = state["question"].strip()
    if context.enable_calculator:
        rest = strip_prefix(question, context.calculator_trigger)
        if rest is not None:
            return "calculator", rest, f"trigger {context.calculator_trigger!r}"
    if context.enable_image:
        rest = strip_prefix(question, context.image_trigger)
        if rest is not None:
            return "image", question, f"trigger {context.image_trigger!r}"
    if context.enable_calculator and is_complete_expression(question):
        return "calculator", question, "fast path: arithmetic expression"

    models = get_models()
    asks: list[tuple[str, str]] = []
    reasons: list[str] = []
    if not context.enable_calculator:
        reasons.append("calculator off")
    elif could_be_calculation(question):
        asks.append(("calculator", IS_CALCULATION))
    else:
        reasons.append("no arithmetic" if any(c.isdigit() for c in question) else "no digits")
    if not context.enable_image:
        reasons.append("image tool off")
    elif not (state.get("images") or _notes_have_images(context)):
        reasons.append("no images")
    else:
        vision = context.effective_vision_model
        if "vision" in models.capabilities(context, vision):
            asks.append(("image", IS_ABOUT_IMAGE))
        else:
            reasons.append(f"{vision} has no vision")
    if not asks:
        return "retrieve", question, ", ".join(reasons)

    model = get_chat(context, "classify")
    with ollama_errors(context.ollama_base_url, context.chat_model):
        answers = dict(
            zip([name for name, _ in asks], classify_many(model, [(q, question) for _, q in asks]))
        )
    said = ", ".join(f"{name}? {'yes' if yes else 'no'}" for name, yes in answers.items())
    if answers.get("image") and (state.get("images") or not answers.get("calculator")):
        return "image", question, f"classified: {said}"
    if answers.get("calculator"):
        return "calculator", question, f"classified: {said}"
    return "retrieve", question, f"classified: {said}"


def route(state: State, runtime: Runtime[Context]) -> dict:
    """Pick the branch and start a fresh trace for this run."""
    chosen, question, reason = decide(state, runtime.context)
    tag_current_run(f"route:{chosen}", route_reason=reason)
    return {
        "route": chosen,
        "standalone_question": question,
        "messages": [HumanMessage(state["question"])],
        # Clear what a previous turn on the same thread left behind.
        "documents": [],
        "near_misses": [],
        "grades": [],
        "sources": [],
        "answer": "",
        "expression": "",
        "no_answer_reason": None,
        "steps": [NEW_RUN, f"route: {chosen} ({reason})"],
    }
