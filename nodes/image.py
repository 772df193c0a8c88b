"""``image``: answer a question about images with a multimodal Ollama model.

Images come from the run input (checked by ``route`` into ``attachments``) or, failing
that, from images the notes retrieved for the question reference (``![..](path)``),
resolved inside the notes folder.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from graph.context import Context
from graph.images import IMAGES, take_images
from graph.index.note_images import note_images_for
from graph.index.vectorstore import with_embedding_model
from graph.llm import message_text, reply
from graph.models import get_models
from graph.progress import report
from graph.prompts import IMAGE_SYSTEM
from graph.state import RunState, Source, State, working_question


def _answer(text: str, step: str) -> RunState:
    return {"answer": text, "sources": [], "messages": [AIMessage(text)], "steps": [step]}


def image(state: State, runtime: Runtime[Context]) -> RunState:
    """Look at the images with the vision model, or say clearly why that is not possible."""
    report("looking")
    context = runtime.context
    models = get_models()
    vision = context.effective_vision_model
    if "vision" not in models.capabilities(context, vision):
        IMAGES.discard(list(state.get("attachments") or []))
        return _answer(
            f"I can't look at images: Ollama reports no 'vision' capability for '{vision}'. "
            "Set vision_model (RAG_VISION_MODEL) to a multimodal model such as llava or "
            "llama3.2-vision.",
            f"image: {vision} has no vision",
        )
    question = working_question(state)
    encoded = take_images(list(state.get("attachments") or []))
    sources: list[Source] = []
    if not encoded:
        context = with_embedding_model(context)
        found = note_images_for(context, models.embeddings(context), question)
        encoded = [data for _, data in found]
        sources = [Source(path=image.relative, heading="") for image, _ in found]
    if not encoded:
        return _answer(
            "There is no image to look at: attach one (--image PATH, or `images` in the "
            "input) or reference it in your notes as ![description](path).",
            "image: no image available",
        )
    content: list[str | dict] = [{"type": "text", "text": question}]
    content += [
        {"type": "image_url", "image_url": f"data:image/png;base64,{data}"} for data in encoded
    ]
    message = reply(context, "vision", [SystemMessage(IMAGE_SYSTEM), HumanMessage(content=content)])
    return {
        "answer": message_text(message).strip(),
        "sources": sources,
        "messages": [message],
        "steps": [f"image: {len(encoded)} image(s) sent to {vision}"],
    }
