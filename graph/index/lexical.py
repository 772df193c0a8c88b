"""BM25 over a collection's chunks, rebuilt whenever a load changed the collection.

Every load that writes or deletes anything bumps ``rag:generation`` in the collection's
metadata; the index is cached per (collection id, generation), so it can never be stale
after an edit or a delete, and an unchanged collection is indexed once per process.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from graph.index.vectorstore import IndexInfo, scan

_cache: dict[tuple[str, int], LexicalIndex] = {}
_lock = threading.Lock()


@dataclass
class LexicalIndex:
    """A BM25 retriever over chunk ids."""

    ids: list[str]
    retriever: Any  # None when no chunk has a searchable word
    metadatas: list[dict[str, Any]] = field(default_factory=list)
    """Each chunk's metadata, for ``where`` (same order as ``ids``)."""

    def search(
        self, question: str, n: int, where: Callable[[dict[str, Any]], bool] | None = None
    ) -> list[str]:
        """Ids of the chunks sharing terms with ``question``, best first (at most ``n``).

        ``where`` keeps only the chunks whose metadata it accepts (the whole corpus is
        ranked first, so a filter never leaves fewer than ``n`` hits that exist).
        """
        import bm25s

        if not self.ids or self.retriever is None:
            return []
        tokens = bm25s.tokenize([question], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        k = len(self.ids) if where else min(n, len(self.ids))
        docs, scores = self.retriever.retrieve(tokens, k=k, show_progress=False)
        hits = [int(i) for i, s in zip(docs[0], scores[0]) if s > 0]
        if where:
            hits = [i for i in hits if where(self.metadatas[i])]
        return [self.ids[i] for i in hits[:n]]


def searchable_text(metadata: dict[str, Any], content: str) -> str:
    """What BM25 sees: note path, title, aliases and heading path count as words of the chunk.

    Aliases are stored as a JSON list; the tokenizer drops its brackets and quotes.
    """
    given = (str(metadata.get("title") or ""), str(metadata.get("aliases") or ""))
    names = " ".join(n for n in given if n and n != "[]")
    location = f"{metadata.get('source', '')} {names}" if names else metadata.get("source", "")
    return f"{location} {metadata.get('heading', '')} {content}"


def lexical_index(collection: Any) -> LexicalIndex:
    """The BM25 index for the collection's current generation (built on first use)."""
    import bm25s

    info = IndexInfo.of(collection)
    key = (str(collection.id), info.generation if info else 0)
    with _lock:
        if key in _cache:
            return _cache[key]
    ids: list[str] = []
    texts: list[str] = []
    metadatas: list[dict[str, Any]] = []
    for page in scan(collection, ["documents", "metadatas"]):
        ids.extend(page["ids"])
        metadatas.extend(m or {} for m in page["metadatas"] or [])
        texts.extend(
            searchable_text(m or {}, d or "")
            for d, m in zip(page["documents"] or [], page["metadatas"] or [])
        )
    tokens = bm25s.tokenize(texts, stopwords="en", show_progress=False)
    retriever = None
    if tokens.vocab:  # bm25s cannot index a corpus without a single word (only stopwords)
        retriever = bm25s.BM25()
        retriever.index(tokens, show_progress=False)
    index = LexicalIndex(ids, retriever, metadatas)
    with _lock:
        for stale in [k for k in _cache if k[0] == key[0]]:
            del _cache[stale]
        _cache[key] = index
    return index


def reciprocal_rank_fusion(rankings: list[list[str]], k: int = 60) -> list[str]:
    """Fuse rankings: each id scores sum(1 / (k + rank)); ties keep first-seen order."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda item: -scores[item])
