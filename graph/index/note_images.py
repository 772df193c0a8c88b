"""Images that notes reference, found for a question and confined to the notes folder.

A vault may come from someone else: a reference is followed only when it resolves inside
the notes folder, through no hidden path part (``.git/config`` is never sent), to a file with
an image extension whose bytes are an image.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from langchain_core.embeddings import Embeddings

from graph.context import Context
from graph.errors import ConfigError
from graph.index.image_files import IMAGE_SUFFIXES, MAX_IMAGES, encode_file
from graph.index.retrieval import RetrievedChunk, search_notes
from graph.index.vectorstore import get_collection, index_info


@dataclass(frozen=True)
class NoteImage:
    """An image file a note points to."""

    path: Path
    relative: str
    """Path relative to the notes folder (cited as the answer's source)."""


def resolve_note_image(notes_dir: str, note: str, reference: str) -> Path | None:
    """The file a note's image reference points to, or ``None`` when it may not be used.

    ``None`` if it is remote, missing, not an image file, hidden, or outside the notes folder.
    """
    if not notes_dir or "://" in reference or reference.startswith("data:"):
        return None
    root = Path(notes_dir).resolve()
    target = reference.split("#", 1)[0].split("?", 1)[0]
    candidate = (root / note).parent / target
    if not candidate.exists() and unquote(target) != target:
        # Markdown link targets cannot hold spaces: Obsidian writes `my%20image.png`.
        candidate = (root / note).parent / unquote(target)
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError):
        return None
    if not resolved.is_relative_to(root) or not resolved.is_file():
        return None
    inside = resolved.relative_to(root).parts
    if any(part.startswith(".") for part in inside):
        return None
    if resolved.suffix.lower() not in IMAGE_SUFFIXES:
        return None
    return resolved


def images_in(chunks: list[RetrievedChunk], notes_dir: str) -> list[NoteImage]:
    """Distinct usable image files referenced by ``chunks``, best chunk first."""
    root = Path(notes_dir).resolve() if notes_dir else None
    found: list[NoteImage] = []
    for chunk in chunks:
        for reference in chunk["images"]:
            path = resolve_note_image(notes_dir, chunk["source"], reference)
            if root and path and all(path != f.path for f in found):
                found.append(NoteImage(path, path.relative_to(root).as_posix()))
    return found[:MAX_IMAGES]


def note_images_for(
    context: Context, embeddings: Embeddings, question: str
) -> list[tuple[NoteImage, str]]:
    """Images referenced by the notes that best match ``question``, with their base64.

    Every top-k chunk counts, above the threshold or not: an image question may score low
    on text. Files that turn out not to be images are left out.
    """
    collection = get_collection(context)
    if collection is None:
        return []
    notes_dir = index_info(collection, context).notes_dir
    chunks = search_notes(context, embeddings, question).ranked
    usable = []
    for image in images_in(chunks, notes_dir):
        try:
            usable.append((image, encode_file(image.path)))
        except ConfigError:
            continue
    return usable
