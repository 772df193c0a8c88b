"""Read-only views of a collection for browsing: its tags and folders, one section's text.

The chat page offers a collection's own tags and folders as filters, and shows a cited note
section as the index holds it. Nothing here reads the notes folder: the index is what the
answer was generated from (the note may have changed or moved since it was loaded), and a
served page must not become a way to read files.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graph.context import Context
from graph.index.filters import FOLDER, TAG, NoteFilter
from graph.index.obsidian import FILTERS_SINCE
from graph.index.vectorstore import IndexInfo, get_collection, reading, scan

#: The most chunks one section view returns (a section is split into chunks of
#: ``chunk_size`` characters; this many is far beyond any heading's text).
MAX_SECTION_CHUNKS = 200
#: Overlaps shorter than this between consecutive chunks are not removed when joining them:
#: the splitter's overlap is whole words of ``chunk_overlap`` characters, while a short match
#: may be chance (a word that ends one chunk and starts the next).
MIN_OVERLAP = 12
#: Facets kept in memory, one per (index, collection, generation).
_FACET_CACHE_SIZE = 16


@dataclass(frozen=True)
class Facet:
    """A tag or folder of the collection and how many notes have it."""

    name: str
    notes: int


@dataclass(frozen=True)
class Facets:
    """The tags and folders a question can be limited to, most used first."""

    tags: tuple[Facet, ...]
    folders: tuple[Facet, ...]
    filterable: bool
    """False for a collection loaded before tags and folders were recorded (reload it)."""


@dataclass(frozen=True)
class NotesFolder:
    """What a page may know of a collection's notes folder: whether it is an Obsidian vault."""

    vault: str
    """The vault's name (the folder's own name) when the folder has ``.obsidian/``; else ''."""


@dataclass(frozen=True)
class SectionText:
    """A note section's text as the index holds it."""

    source: str
    heading: str
    text: str
    """The section's chunks in order, joined, with the splitter's overlaps removed."""
    chunks: int


_facets: OrderedDict[tuple[str, str, int], Facets] = OrderedDict()
_facets_lock = threading.Lock()


def collection_facets(context: Context) -> Facets | None:
    """The tags and folders of the context's collection (``None``: no such collection).

    Read from the chunks' filter keys (``tag:…``, ``folder:…``) in one paged scan, and kept
    per collection generation: every load that changes the collection bumps it.
    """
    return reading(context, lambda: _collection_facets(context))


def spelling_hint(context: Context, chosen: NoteFilter) -> str:
    """For a filter that matched nothing: the collection's folders and tags it misspells in case.

    Folder names are matched exactly (a note's path, as on a case-sensitive disk), so
    ``Career`` finds nothing in a vault whose folder is ``career``. Returns
    ``did you mean folder career/?`` naming each such folder or tag, or ``''``.
    """
    facets = collection_facets(context)
    if facets is None:
        return ""
    hints = []
    for kind, asked, known in (
        ("folder", chosen.folders, facets.folders),
        ("tag", chosen.tags, facets.tags),
    ):
        names = {facet.name for facet in known}
        for name in asked:
            alike = sorted(n for n in names if n.lower() == name.lower() and n != name)
            mark = "#" if kind == "tag" else ""
            slash = "/" if kind == "folder" else ""
            hints += [f"{kind} {mark}{n}{slash}" for n in alike]
    return f"did you mean {' or '.join(hints)}?" if hints else ""


def _collection_facets(context: Context) -> Facets | None:
    collection = get_collection(context)
    if collection is None:
        return None
    info = IndexInfo.of(collection)
    target = context.chroma_server_url or context.effective_chroma_dir
    key = (target, str(collection.id), info.generation if info else -1)
    with _facets_lock:
        if key in _facets:
            _facets.move_to_end(key)
            return _facets[key]
    filterable = bool(info and info.parser_version >= FILTERS_SINCE)
    facets = _read_facets(collection, filterable)
    with _facets_lock:
        _facets[key] = facets
        while len(_facets) > _FACET_CACHE_SIZE:
            _facets.popitem(last=False)
    return facets


def _read_facets(collection: Any, filterable: bool) -> Facets:
    notes: dict[str, set[str]] = {}
    for page in scan(collection, ["metadatas"]):
        for metadata in page["metadatas"] or []:
            metadata = metadata or {}
            source = str(metadata.get("source", ""))
            for key, value in metadata.items():
                if value is True and key.startswith((TAG, FOLDER)):
                    notes.setdefault(key, set()).add(source)

    def ranked(prefix: str) -> tuple[Facet, ...]:
        found = [Facet(k[len(prefix) :], len(v)) for k, v in notes.items() if k.startswith(prefix)]
        return tuple(sorted(found, key=lambda f: (-f.notes, f.name)))

    return Facets(ranked(TAG), ranked(FOLDER), filterable)


def forget_facets() -> None:
    """Drop the kept facets (tests use fresh folders)."""
    with _facets_lock:
        _facets.clear()


def notes_folder(collection: Any) -> NotesFolder:
    """Whether ``collection`` was loaded from an Obsidian vault, and the vault's name.

    Obsidian names a vault after its folder; ``obsidian://open?vault=…`` finds it by that
    name. Only the folder's name leaves here, never its path.
    """
    info = IndexInfo.of(collection)
    if info is None or not info.notes_dir:
        return NotesFolder("")
    folder = Path(info.notes_dir)
    try:
        is_vault = (folder / ".obsidian").is_dir()
    except OSError:
        is_vault = False
    return NotesFolder(folder.name if is_vault else "")


def section_text(context: Context, source: str, heading: str) -> SectionText | None:
    """The chunks of note ``source`` under ``heading`` (``None`` when the index has none)."""
    return reading(context, lambda: _section_text(context, source, heading))


def _section_text(context: Context, source: str, heading: str) -> SectionText | None:
    collection = get_collection(context)
    if collection is None:
        return None
    got = collection.get(
        where={"$and": [{"source": source}, {"heading": heading}]},
        include=["documents", "metadatas"],
        limit=MAX_SECTION_CHUNKS,
    )
    pieces = sorted(
        zip(got["metadatas"] or [], got["documents"] or []),
        key=lambda pair: int((pair[0] or {}).get("chunk_index", 0)),
    )
    if not pieces:
        return None
    return SectionText(source, heading, join_chunks([t or "" for _, t in pieces]), len(pieces))


def join_chunks(texts: list[str]) -> str:
    """Consecutive chunks of one section as one text, each overlap written once.

    The splitter cuts before a separator (``SEPARATORS`` in ``graph.index.chunking``) and
    strips the whitespace around each chunk, so where two chunks do not overlap only
    whitespace was lost: none before a chunk that starts with the rest of a ``". "``
    separator, else most likely a paragraph break (the first separator tried).
    """
    joined = ""
    for text in texts:
        if not joined:
            joined = text
            continue
        overlap = _overlap(joined, text)
        if overlap:
            joined += text[overlap:]
        elif text.startswith(". "):
            joined += text
        else:
            joined += "\n\n" + text
    return joined


def _overlap(before: str, after: str) -> int:
    """The length of the longest end of ``before`` that starts ``after`` (0 below the floor)."""
    for size in range(min(len(before), len(after)), MIN_OVERLAP - 1, -1):
        if before.endswith(after[:size]):
            return size
    return 0
