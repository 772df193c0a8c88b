"""Markdown notes → heading-aware chunks.

unstructured partitions a note into elements (titles with their depth, paragraphs, list
items, code, images); elements are grouped into sections by heading, and each section is
split on paragraph, line and sentence boundaries into chunks of at most ``chunk_size``
characters overlapping by ``chunk_overlap``. A chunk never spans two sections, so it never
starts in the middle of one heading's text and ends in the next.
"""

from __future__ import annotations

import functools
import importlib
import re
import sys
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from graph.index.offline import unstructured_offline

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
    return sections_of(_partition_md(text) if text.strip() else [])


def sections_of(elements: Sequence[Any]) -> list[Section]:
    """The sections of a note from unstructured's elements (empty sections left out)."""
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


#: What unstructured's ``partition_md`` converts markdown with by default (passing
#: ``extensions`` replaces them); the link-scan guard is added to them.
MARKDOWN_EXTENSIONS = ("tables", "fenced_code")


@unstructured_offline()  # its import and each call would otherwise ping its vendor
def _partition_md(text: str) -> list[Any]:
    """The elements unstructured finds in a markdown text, without the work whose result is unused.

    Two passes cost about 95 % of partitioning and decide nothing kept here: language
    detection per document (``langdetect``; only fills ``metadata.languages``, skipped with
    ``languages=[""]``), and spaCy's sentence and verb tests that tell ``NarrativeText`` from
    ``Text``, both of which become the section's body alike. Headings, list items, code and
    images are recognised by the HTML structure, not by those tests, so the sections do not
    change (tests/unit_tests/test_chunk_stability.py pins them).

    The markdown is converted with a guard that keeps python-markdown's link parsing
    linear (see ``LINK_SCAN_BUDGET``).
    """
    _import_thinc_without_torch()
    from unstructured.partition.md import partition_md

    extensions = [*MARKDOWN_EXTENSIONS, link_scan_guard()]
    with _fast_text_typing():
        return partition_md(text=text, languages=[""], extensions=extensions)


def _import_thinc_without_torch() -> None:
    """Import thinc (once per process) as if torch were not installed.

    unstructured imports spaCy, whose thinc imports torch whenever it is installed (the
    ``eval`` extra installs it): 4-6 s more per loading process and per chunking worker, for
    nothing: the tokenizer and the small English pipeline run on numpy. thinc decides in one
    module, ``thinc.compat``, whether torch is there, so torch is hidden (``None`` in
    ``sys.modules`` makes ``import torch`` fail) while that module alone is imported, about
    0.5 s, not while all of unstructured is: the rest of the process, other threads
    included, imports torch normally; only thinc's own torch support stays off in it.
    """
    if "torch" in sys.modules or "thinc.compat" in sys.modules:
        return  # torch already paid for, or thinc already decided
    sys.modules["torch"] = None  # type: ignore[assignment]
    try:
        importlib.import_module("thinc.compat")
    except ImportError:
        pass  # no thinc (an unstructured without spaCy): nothing to keep torch from
    finally:
        if sys.modules.get("torch", ...) is None:
            del sys.modules["torch"]


# --- unstructured's text classifier, without its spaCy tests, for these partitions only ----

_fast_typing: ContextVar[bool] = ContextVar("fast_text_typing", default=False)
_typing_lock = threading.Lock()
_typing_users = 0
_original_typing: Any = None


@contextmanager
def _fast_text_typing() -> Iterator[None]:
    """Partition with unstructured's classifier minus its spaCy tests, in this context only.

    unstructured offers no switch for them (``UNSTRUCTURED_LANGUAGE_CHECKS`` and
    ``languages`` leave ``sentence_count`` on every element), so its module's classifier is
    replaced, as narrowly as that can be: only while a partition of ours runs (a count
    covers threads partitioning at once; the last one out puts the original back), and
    even then the replacement defers to the original outside the context that set the
    variable, so another caller of unstructured meanwhile gets unstructured's behaviour.
    """
    global _typing_users, _original_typing
    from unstructured.partition.html import parser

    with _typing_lock:
        if _typing_users == 0:
            _original_typing = parser.derive_element_type_from_text
            parser.derive_element_type_from_text = _element_type
        _typing_users += 1
    token = _fast_typing.set(True)
    try:
        yield
    finally:
        _fast_typing.reset(token)
        with _typing_lock:
            _typing_users -= 1
            if _typing_users == 0:
                parser.derive_element_type_from_text = _original_typing


def _element_type(text: str) -> Any:
    """The element type by unstructured's tests in its order, minus the narrative one.

    ``NarrativeText`` becomes ``Text``; outside ``_fast_text_typing``, unstructured's own.
    """
    if not _fast_typing.get():
        return _original_typing(text)
    from unstructured.documents.elements import Address, EmailAddress, ListItem, Text
    from unstructured.partition.text_type import (
        is_bulleted_text,
        is_email_address,
        is_us_city_state_zip,
    )

    if is_bulleted_text(text):
        return ListItem
    if is_us_city_state_zip(text):
        return Address
    if is_email_address(text):
        return EmailAddress
    return None if len(text) < 2 else Text


# --- python-markdown's link parsing, kept linear ----------------------------------------

#: python-markdown finds where a link's text ends by scanning from each '[' to its matching
#: ']', or to the end of the paragraph when there is none, once for each of its three link
#: patterns: a paragraph of n unmatched '[' costs about 1.5 n² steps (20 KB of '[' took
#: 23-70 s, 1 MB did not finish), and each '[' costs about as much as 20 scanned characters
#: besides (1 MB of '[]' took 10.2 s). When a note's texts would cost more than this in
#: all, the '[' of its costliest texts become plain characters before inline parsing, until
#: the rest stays within it: a text costing the budget, 1,400 unmatched '[', took 0.9 s.
#: 1 MB of '[]' now converts in 1.0 s. A note of ordinary shape costs a small fraction of
#: the budget and is converted exactly as before.
LINK_SCAN_BUDGET = 1_000_000
_PER_BRACKET = 20
_BRACKET = re.compile(r"[\[\]]")
# '[' preceded by an even number of backslashes (none included): not escaped yet.
_ACTIVE_BRACKET = re.compile(r"(?<!\\)((?:\\\\)*)\[")


def link_scan(text: str, limit: int = LINK_SCAN_BUDGET) -> int:
    """What python-markdown's link patterns cost on the '[' of ``text``, in scanned characters.

    Each '[' scans to its matching ']' (nested pairs included) or to the end of the text.
    An upper bound: '[' in code spans and escaped ones are never scanned. Counting stops
    once the cost is known to pass ``limit``, and ``limit + 1`` is returned.
    """
    cost = position = opened_sum = 0
    opened: list[int] = []
    while True:
        if opened:
            bracket = _BRACKET.search(text, position)
            if bracket is None:
                break
            position = bracket.start()
        else:  # a ']' that closes nothing costs nothing: on to the next '['
            position = text.find("[", position)
            if position < 0:
                break
        if text[position] == "[":
            opened.append(position)
            opened_sum += position
            cost += _PER_BRACKET
        else:
            start = opened.pop()
            opened_sum -= start
            cost += position - start
        # The '[' still open have scanned up to here at least.
        if cost + len(opened) * position - opened_sum > limit:
            return limit + 1
        position += 1
    return cost + len(opened) * len(text) - opened_sum


def texts_to_defuse(texts: Sequence[str], budget: int = LINK_SCAN_BUDGET) -> list[int]:
    """The costliest ``texts`` (indices), whose '[' go plain so the rest cost ``budget`` at most."""
    if sum(text.count("[") * (len(text) + _PER_BRACKET) for text in texts) <= budget:
        return []  # each '[' scans at most its text: within budget without counting
    costs = [link_scan(text, budget) for text in texts]
    total, chosen = sum(costs), []
    for index in sorted(range(len(texts)), key=lambda i: -costs[i]):
        if total <= budget:
            break
        chosen.append(index)
        total -= costs[index]
    return chosen


def link_scan_guard(budget: int = LINK_SCAN_BUDGET) -> Any:
    """A python-markdown extension that keeps its link parsing within ``budget``.

    It runs on the block tree, just before inline parsing, when each text is exactly what the
    link patterns will scan: fenced and indented code is already set apart. A chosen text's
    active '[' (those not escaped already) become a mark no pattern reacts to, and the mark
    becomes '[' again in the finished HTML, code spans included: the text reads the same,
    with its links left as written.

    The mark is STX ETX, two characters python-markdown removes from its input, so it cannot
    come from the note, and never forms itself (its own marks hold something between them).
    A backslash per '[' would do the same, but costs an inline-pattern match each (20 KB of
    '[' then took 2.5 s, against 0.3 s), and python-markdown's own escape mark (STX 91 ETX)
    is twice as long, and its unescape step calls a Python function per character (1 MB of
    '[[' took 3.6 s to convert that way, 1.3 s this way; 1 MB of 'x' takes 0.6 s).
    """
    from markdown.extensions import Extension
    from markdown.postprocessors import Postprocessor
    from markdown.treeprocessors import Treeprocessor
    from markdown.util import ETX, STX, AtomicString

    mark = STX + ETX

    class LinkScanGuard(Treeprocessor):
        def run(self, root: Any) -> None:
            slots = [
                (element, attribute, text)
                for element in root.iter()
                for attribute in ("text", "tail")
                if (text := getattr(element, attribute))
                and "[" in text
                and not isinstance(text, AtomicString)
            ]
            for index in texts_to_defuse([text for _, _, text in slots], budget):
                element, attribute, text = slots[index]
                setattr(element, attribute, _mark_brackets(text, mark))

    class RestoreBrackets(Postprocessor):
        def run(self, text: str) -> str:
            return text.replace(mark, "[")

    class LinkScanGuardExtension(Extension):
        def extendMarkdown(self, md: Any) -> None:
            # Tree processors run from the highest priority down; inline parsing is at 20.
            md.treeprocessors.register(LinkScanGuard(md), "link_scan_guard", 25)
            # After raw HTML is put back (30): a mark may sit in an inline tag's attribute.
            md.postprocessors.register(RestoreBrackets(md), "restore_brackets", 5)

    return LinkScanGuardExtension()


def _mark_brackets(text: str, mark: str) -> str:
    """``text`` with its active '[' made ``mark`` (a '[' escaped by a backslash stays)."""
    if "\\[" not in text:  # nothing escaped: the fast way
        return text.replace("[", mark)
    return _ACTIVE_BRACKET.sub(lambda m: m.group(1) + mark, text)


def chunk_note(text: str, chunk_size: int, chunk_overlap: int) -> list[Chunk]:
    """The chunks of one note."""
    return chunk_sections(partition_note(text), chunk_size, chunk_overlap)


@dataclass(frozen=True)
class Unparsed:
    """A note the partitioner failed on: it gives no chunks."""

    reason: str
    """One line: the error's type and first line."""


def error_line(exc: BaseException) -> str:
    """``RecursionError: maximum recursion depth exceeded`` (one line, at most 200 characters)."""
    lines = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return line if len(line) <= 200 else line[:199] + "…"


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
    splitter = _splitter_class()(
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, separators=SEPARATORS
    )
    chunks: list[Chunk] = []
    for section in sections:
        body = _join_list_items(section.parts)
        for piece in splitter.split_text(body):
            chunks.append(Chunk(section.heading, len(chunks), piece, tuple(section.images)))
    return chunks


@functools.cache
def _splitter_class() -> type[Any]:
    """The recursive splitter of langchain, its merge step made linear: the same chunks.

    Its merge keeps the pieces of the chunk being built in a list and drops the first one
    with ``list[1:]`` as the window moves: a copy of the whole window per piece dropped. Text
    with no space to split on (1 MB of '[', a pasted base64 blob) is split into single
    characters, and then every character costs a copy of a 1,500-character window: 1 MB of '['
    took 15 s, 2 s with a deque, which drops its first piece at once. Its warning for a chunk
    over size is left out: every piece given to the merge is shorter than a chunk, so it
    cannot happen.
    """
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    class LinearSplitter(RecursiveCharacterTextSplitter):
        def _split_text(self, text: str, separators: list[str]) -> list[str]:
            if (
                "" in separators
                and not self._is_separator_regex
                and self._length_function is len
                and self._chunk_size > 1
                and not any(separator and separator in text for separator in separators)
            ):  # nothing to split on but characters
                return self._merge_characters(text)
            return list(super()._split_text(text, separators))

        def _merge_splits(self, splits: Iterable[str], separator: str) -> list[str]:
            # langchain_text_splitters.TextSplitter._merge_splits (1.1), but for the deque.
            separator_len = self._length_function(separator)
            docs = []
            current_doc: deque[str] = deque()
            total = 0
            for d in splits:
                len_ = self._length_function(d)
                if total + len_ + (separator_len if current_doc else 0) > self._chunk_size:
                    if current_doc:
                        doc = self._join_docs(list(current_doc), separator)
                        if doc is not None:
                            docs.append(doc)
                        while total > self._chunk_overlap or (
                            total + len_ + (separator_len if current_doc else 0) > self._chunk_size
                            and total > 0
                        ):
                            total -= self._length_function(current_doc[0]) + (
                                separator_len if len(current_doc) > 1 else 0
                            )
                            current_doc.popleft()
                current_doc.append(d)
                total += len_ + (separator_len if len(current_doc) > 1 else 0)
            doc = self._join_docs(list(current_doc), separator)
            if doc is not None:
                docs.append(doc)
            return docs

        def _merge_characters(self, text: str) -> list[str]:
            """What the splitter makes of ``text`` split into characters, by arithmetic.

            A text with nothing to split on is split into characters, each one a piece to
            merge: windows of ``chunk_size`` characters, each ``chunk_size - chunk_overlap``
            (at least 1) after the one before, the last one running to the end. Splitting
            1 MB of '[' took 2 s one character at a time, with the deque.
            """
            size, step = self._chunk_size, max(1, self._chunk_size - self._chunk_overlap)
            docs, start = [], 0
            while start + size < len(text):
                doc = self._join_docs([text[start : start + size]], "")
                if doc is not None:
                    docs.append(doc)
                start += step
            doc = self._join_docs([text[start:]], "")
            if doc is not None:
                docs.append(doc)
            return docs

    return LinearSplitter
