"""Markdown notes → heading-aware chunks.

unstructured partitions a note into elements (titles with their depth, paragraphs, list
items, code, images); elements are grouped into sections by heading, and each section is
split on paragraph, line and sentence boundaries into chunks of at most ``chunk_size``
characters overlapping by ``chunk_overlap``. A chunk never spans two sections, so it never
starts in the middle of one heading's text and ends in the next.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SEPARATORS = ["\n\n", "\n", ". ", " ", ""]


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


def partition_note(text: str) -> list[Section]:
    """The sections of a markdown note, in order."""
    # Imported lazily: unstructured (and spaCy behind it) take seconds to import, and an
    # unchanged re-load must not pay for them.
    from unstructured.partition.md import partition_md

    elements = partition_md(text=text) if text.strip() else []
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
