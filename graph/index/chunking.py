"""Markdown notes → heading-aware chunks.

unstructured partitions a note into elements (titles with their depth, paragraphs, list
items, code, images); elements are grouped into sections by heading, and each section is
split on paragraph, line and sentence boundaries into chunks of at most ``chunk_size``
characters overlapping by ``chunk_overlap``. A chunk never spans two sections, so it never
starts in the middle of one heading's text and ends in the next.
"""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from graph.index.offline import unstructured_offline

SEPARATORS = ["\n\n", "\n", ". ", " ", ""]

#: From this many notes on, partitioning is spread over worker processes. The fast path takes
#: about 10 ms a note, and a spawned worker about 3-5 s to import unstructured: below about a
#: thousand notes, the workers would cost more than they save.
PARALLEL_FROM = 1000
WORKERS = 2


@dataclass
class Section:
    """The text under one heading path."""

    heading: str
    parts: list[str] = field(default_factory=list)
    images: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The section's body."""
        return "\n\n".join(p for p in self.parts if p.strip())


@dataclass(frozen=True)
class Chunk:
    """One piece of a note, ready to embed."""

    heading: str
    index: int
    content: str
    images: tuple[str, ...] = ()
    """Images referenced in the chunk's section, relative to the note."""


def partition_note(text: str, *, full_classification: bool = False) -> list[Section]:
    """The sections of a markdown note, in order.

    ``full_classification`` runs unstructured's language detection and narrative-text
    classification as well: what loads did before; the sections are the same (the bench
    compares the two).
    """
    # Imported lazily: unstructured (and spaCy behind it) take seconds to import, and an
    # unchanged re-load must not pay for them.
    elements = _partition_md(text, full_classification) if text.strip() else []
    sections = [Section(heading="")]
    path: list[tuple[int, str]] = []  # (depth, title) from the top heading down
    for element in elements:
        kind = type(element).__name__
        depth = element.metadata.category_depth
        body = element.text.strip()
        if kind == "Title" and depth is not None:
            path = [(d, t) for d, t in path if d < depth] + [(depth, body)]
            sections.append(Section(heading=" > ".join(t for _, t in path)))
            continue
        section = sections[-1]
        if kind == "Image":
            url = element.metadata.image_url
            if url:
                section.images.append(url)
            if body:
                section.parts.append(f"[image: {body}]")
        elif kind == "ListItem":
            section.parts.append(f"- {body}")
        elif kind == "CodeSnippet":
            section.parts.append(f"```\n{element.text}\n```")
        elif body:
            section.parts.append(body)
    return [s for s in sections if s.text]


_full_classification: ContextVar[bool] = ContextVar("full_classification", default=True)
_installed = False


@unstructured_offline()  # its import and each call would otherwise ping its vendor
def _partition_md(text: str, full_classification: bool) -> list[Any]:
    """The elements unstructured finds in a markdown text, without the work whose result is unused.

    Two passes cost about 95 % of partitioning and decide nothing kept here: language
    detection per document (``langdetect``; only fills ``metadata.languages``, skipped with
    ``languages=[""]``), and spaCy's sentence and verb tests that tell ``NarrativeText`` from
    ``Text``, both of which become the section's body alike. Headings, list items, code and
    images are recognised by the HTML structure, not by those tests, so the sections do not
    change (tests/unit_tests/test_chunk_stability.py pins them).
    """
    with _torch_hidden():
        from unstructured.partition.md import partition_md

    _install_text_typing()
    if full_classification:
        return partition_md(text=text)
    token = _full_classification.set(False)
    try:
        return partition_md(text=text, languages=[""])
    finally:
        _full_classification.reset(token)


@contextmanager
def _torch_hidden() -> Iterator[None]:
    """Import unstructured (the first time) as if torch were not installed.

    unstructured imports spaCy, whose thinc imports torch whenever it is installed (the
    ``eval`` extra installs it): 4-6 s more per loading process and per chunking worker, for
    nothing: the tokenizer and the small English pipeline run on numpy. ``None`` in
    ``sys.modules`` makes ``import torch`` fail during that import only; torch itself imports
    normally afterwards in the same process, while thinc's own torch support stays off there.
    """
    if "torch" in sys.modules or "unstructured.partition.md" in sys.modules:
        yield  # torch already paid for, or unstructured already imported: nothing to hide
        return
    sys.modules["torch"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if sys.modules.get("torch", ...) is None:
            del sys.modules["torch"]


def _install_text_typing() -> None:
    """Wrap unstructured's text classifier so ``_partition_md`` can skip its spaCy tests.

    unstructured offers no switch for them (``UNSTRUCTURED_LANGUAGE_CHECKS`` and
    ``languages`` leave ``sentence_count`` on every element); the wrapper keeps unstructured's
    own behaviour for every other caller (the context variable defaults to it).
    """
    global _installed
    if _installed:
        return
    from unstructured.documents.elements import Address, EmailAddress, ListItem, Text
    from unstructured.partition.html import parser
    from unstructured.partition.text_type import (
        is_bulleted_text,
        is_email_address,
        is_us_city_state_zip,
    )

    original = parser.derive_element_type_from_text

    def element_type(text: str) -> type[Text] | None:
        if _full_classification.get():
            return original(text)
        # unstructured's own order, minus the narrative test (NarrativeText becomes Text).
        if is_bulleted_text(text):
            return ListItem
        if is_us_city_state_zip(text):
            return Address
        if is_email_address(text):
            return EmailAddress
        return None if len(text) < 2 else Text

    parser.derive_element_type_from_text = element_type
    _installed = True


def chunk_note(
    text: str, chunk_size: int, chunk_overlap: int, *, full_classification: bool = False
) -> list[Chunk]:
    """The chunks of one note."""
    sections = partition_note(text, full_classification=full_classification)
    return chunk_sections(sections, chunk_size, chunk_overlap)


def _chunk_note_job(job: tuple[str, int, int, bool]) -> list[Chunk]:
    text, size, overlap, full = job
    return chunk_note(text, size, overlap, full_classification=full)


def chunk_notes(
    texts: Sequence[str],
    chunk_size: int,
    chunk_overlap: int,
    *,
    full_classification: bool = False,
    workers: int = WORKERS,
    parallel_from: int = PARALLEL_FROM,
) -> list[list[Chunk]]:
    """The chunks of each note, in order; many notes are partitioned in worker processes.

    Workers are spawned, not forked: the loading process may run threads (Chroma's, a
    server's), and a forked copy of a process with threads can deadlock. If the workers
    cannot run (a main script without a ``__name__ == "__main__"`` guard re-runs itself in
    each spawned worker and breaks the pool), the notes are chunked in this process.
    """
    from concurrent.futures.process import BrokenProcessPool

    jobs = [(text, chunk_size, chunk_overlap, full_classification) for text in texts]
    if len(jobs) >= parallel_from and workers >= 2:
        spawn = multiprocessing.get_context("spawn")
        try:
            with ProcessPoolExecutor(max_workers=workers, mp_context=spawn) as pool:
                size = max(1, len(jobs) // (8 * workers))
                return list(pool.map(_chunk_note_job, jobs, chunksize=size))
        except BrokenProcessPool:
            pass
    return [_chunk_note_job(job) for job in jobs]


def _join_list_items(parts: list[str]) -> str:
    lines: list[str] = []
    for part in parts:
        if part.startswith("- ") and lines and lines[-1].lstrip().startswith("- "):
            lines[-1] += "\n" + part
        else:
            lines.append(part)
    return "\n\n".join(lines)


def chunk_sections(sections: list[Section], chunk_size: int, chunk_overlap: int) -> list[Chunk]:
    """Split each section on natural boundaries; number the chunks through the note."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, separators=SEPARATORS
    )
    chunks: list[Chunk] = []
    for section in sections:
        body = _join_list_items(section.parts)
        for piece in splitter.split_text(body):
            chunks.append(Chunk(section.heading, len(chunks), piece, tuple(section.images)))
    return chunks
