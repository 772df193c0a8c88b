"""``image``: answer a question about images with a multimodal Ollama model.

Images come from the run input (``images``: file paths or base64) or, failing that, from
images referenced (``![..](path)``) in the notes retrieved for the question. Note images
are resolved relative to their note and must stay inside the notes folder.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from graph.classify import message_text
from graph.context import Context
from graph.errors import ConfigError, ollama_errors
from graph.models import get_chat, get_models
from graph.prompts import IMAGE_SYSTEM
from graph.retrieval import search_notes
from graph.state import RetrievedChunk, State
from graph.vectorstore import get_collection, index_info

MAX_IMAGES = 4
MAX_IMAGE_BYTES = 20 * 1024 * 1024


def load_input_image(item: str) -> str:
    """Base64 of an input image given as a file path or as base64 text."""
    path = Path(item).expanduser()
    if len(item) < 4096 and path.is_file():
        data = path.read_bytes()
        if len(data) > MAX_IMAGE_BYTES:
            raise ConfigError(f"image {item} is larger than {MAX_IMAGE_BYTES // 2**20} MB")
        return base64.b64encode(data).decode()
    payload = item.split(",", 1)[1] if item.startswith("data:") else item
    try:
        base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(f"image {item[:60]!r} is neither a readable file nor base64") from None
    return payload


def resolve_note_image(notes_dir: str, note: str, reference: str) -> Path | None:
    """The file a note's image reference points to.

    ``None`` if it is remote, missing or outside the notes folder (no path traversal).
    """
    if not notes_dir or "://" in reference or reference.startswith("data:"):
        return None
    root = Path(notes_dir).resolve()
    candidate = (root / note).parent / reference.split("#", 1)[0].split("?", 1)[0]
    try:
        resolved = candidate.resolve()
    except OSError:
        return None
    if not resolved.is_relative_to(root) or not resolved.is_file():
        return None
    return resolved


def images_from_notes(chunks: list[RetrievedChunk], notes_dir: str) -> list[Path]:
    """Distinct, safe image files referenced by the retrieved notes, best chunk first."""
    found: list[Path] = []
    for chunk in chunks:
        for reference in chunk["images"]:
            path = resolve_note_image(notes_dir, chunk["source"], reference)
            if path and path not in found and path.stat().st_size <= MAX_IMAGE_BYTES:
                found.append(path)
    return found[:MAX_IMAGES]


def _answer(text: str, step: str) -> dict:
    return {"answer": text, "sources": [], "messages": [AIMessage(text)], "steps": [step]}


def image(state: State, runtime: Runtime[Context]) -> dict:
    """Look at the images with the vision model, or say clearly why that is not possible."""
    context = runtime.context
    models = get_models()
    vision = context.effective_vision_model
    if "vision" not in models.capabilities(context, vision):
        return _answer(
            f"I can't look at images: Ollama reports no 'vision' capability for '{vision}'. "
            "Set vision_model (RAG_VISION_MODEL) to a multimodal model such as llava or "
            "llama3.2-vision.",
            f"image: {vision} has no vision",
        )
    question = state.get("standalone_question") or state["question"]
    encoded = [load_input_image(item) for item in state.get("images") or []][:MAX_IMAGES]
    sources = []
    if not encoded:
        result = search_notes(context, models.embeddings(context), question)
        chunks = result.ranked  # every top-k chunk: an image question may score low on text
        collection = get_collection(context)
        notes_dir = index_info(collection, context).notes_dir if collection is not None else ""
        paths = images_from_notes(chunks, notes_dir)
        encoded = [base64.b64encode(p.read_bytes()).decode() for p in paths]
        root = Path(notes_dir).resolve() if notes_dir else None
        sources = [{"path": str(p.relative_to(root)), "heading": ""} for p in paths if root]
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
    model = get_chat(context, "vision")
    with ollama_errors(context.ollama_base_url, vision):
        reply = model.invoke([SystemMessage(IMAGE_SYSTEM), HumanMessage(content=content)])
    answer = message_text(reply).strip()
    return {
        "answer": answer,
        "sources": sources,
        "messages": [reply if isinstance(reply, AIMessage) else AIMessage(answer)],
        "steps": [f"image: {len(encoded)} image(s) sent to {vision}"],
    }
