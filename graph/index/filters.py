"""Limiting a search to some notes: by tag and by folder.

Chroma metadata holds scalars only and its ``where`` has no prefix match, so each chunk
carries one boolean key per tag of its note (``tag:area`` and ``tag:area/sub`` for
``#area/sub``, as Obsidian's tag search matches nested tags) and per folder it lies under
(``folder:tech`` and ``folder:tech/img``). The same keys serve the vector search (a Chroma
``where``) and the BM25 ranking (the catalog indexes them as words), so both see the same
notes.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from graph.index.obsidian import normalize_tag

TAG = "tag:"
FOLDER = "folder:"


def normalize_folder(folder: str) -> str:
    """``./tech/img/`` or ``tech/img`` → ``tech/img`` ('' for the whole vault)."""
    cleaned = posixpath.normpath(folder.strip().replace("\\", "/")).strip("/")
    return "" if cleaned == "." else cleaned


def filter_keys(source: str, tags: list[str]) -> dict[str, bool]:
    """The boolean metadata keys a chunk of note ``source`` with ``tags`` carries."""
    keys: dict[str, bool] = {}
    for tag in tags:
        parts = tag.split("/")
        for depth in range(1, len(parts) + 1):
            keys[TAG + "/".join(parts[:depth])] = True
    folders = source.split("/")[:-1]
    for depth in range(1, len(folders) + 1):
        keys[FOLDER + "/".join(folders[:depth])] = True
    return keys


@dataclass(frozen=True)
class NoteFilter:
    """Notes having any of ``tags`` and lying under any of ``folders`` (empty: no limit)."""

    tags: tuple[str, ...] = ()
    folders: tuple[str, ...] = ()

    @classmethod
    def of(cls, tags: list[str], folders: list[str]) -> NoteFilter | None:
        """The filter for these settings; ``None`` when they limit nothing."""
        chosen = cls(
            tuple(dict.fromkeys(t for t in map(normalize_tag, tags) if t)),
            tuple(dict.fromkeys(f for f in map(normalize_folder, folders) if f)),
        )
        return chosen if chosen.tags or chosen.folders else None

    def key_groups(self) -> list[list[str]]:
        """A chunk passes when it carries a key of every group."""
        groups = [[TAG + t for t in self.tags], [FOLDER + f for f in self.folders]]
        return [g for g in groups if g]

    def where(self) -> dict[str, Any]:
        """The Chroma ``where`` clause ($or needs two operands, $and too)."""
        clauses = []
        for group in self.key_groups():
            terms: list[dict[str, Any]] = [{key: True} for key in group]
            clauses.append(terms[0] if len(terms) == 1 else {"$or": terms})
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    def describe(self) -> str:
        """For messages: ``tag #recipe or #baking; folder tech/``."""
        parts = []
        if self.tags:
            parts.append("tag " + " or ".join(f"#{t}" for t in self.tags))
        if self.folders:
            parts.append("folder " + " or ".join(f"{f}/" for f in self.folders))
        return "; ".join(parts)
