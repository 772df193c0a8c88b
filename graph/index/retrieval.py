"""Vector search over the notes collection.

Shared by the ``retrieve`` and ``image`` nodes and by ``rag query``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from langchain_chroma import Chroma
from langchain_core.embeddings import Embeddings
from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from graph.context import FUSION_TIES, Context
from graph.errors import ConfigError, ollama_errors
from graph.index.catalog import Catalog
from graph.index.embedding import default_threshold, embed_query
from graph.index.filters import NoteFilter
from graph.index.lexical import reciprocal_rank_fusion
from graph.index.obsidian import FILTERS_SINCE
from graph.index.vectorstore import (
    chunk_metadata_images,
    chunk_metadata_list,
    get_collection,
    index_info,
    open_client,
    reading,
)

NEAR_MISSES = 3


# Field docstrings become JSON-schema descriptions (the chunk is part of the graph's state).
@with_config(ConfigDict(use_attribute_docstrings=True))
class RetrievedChunk(TypedDict):
    """One chunk returned by a search."""

    content: str
    """The chunk text as stored (without any embedding prefix)."""
    source: str
    """Note path relative to the notes folder."""
    heading: str
    """Heading path inside the note, e.g. ``Interviews > Whiteboarding`` ('' before any heading)."""
    score: float
    """Relevance in [0, 1]: 1 - cosine distance."""
    images: list[str]
    """Image references (``![..](path)``) found in the note, relative to the note."""
    tags: list[str]
    """The note's tags (frontmatter and inline ``#tags``), lower case, without '#'."""


@dataclass
class SearchResult:
    """Chunks at or above the threshold, the best ones below it, and the collection size."""

    relevant: list[RetrievedChunk] = field(default_factory=list)
    near_misses: list[RetrievedChunk] = field(default_factory=list)
    collection_size: int = 0
    ranked: list[RetrievedChunk] = field(default_factory=list)
    """All top-k chunks in rank order, above and below the threshold."""
    filter_empty: bool = False
    """The context's tag/folder filter matched no chunk at all."""


def search_notes(
    context: Context,
    embeddings: Embeddings,
    question: str,
    *,
    k: int | None = None,
    mode: str | None = None,
) -> SearchResult:
    """The top-``k`` chunks for ``question``, each with its cosine relevance score.

    ``mode`` (default: the context's ``retrieval_mode``): ``vector`` ranks by similarity;
    ``hybrid`` fuses the vector ranking with a BM25 ranking (reciprocal rank fusion), which
    rescues chunks that share the question's rare words (names, numbers) but embed poorly;
    ``bm25`` is lexical only (for evaluation). The threshold always applies to the cosine
    score, so a floor means the same thing in every mode. The context's ``tags`` and
    ``folders`` limit both rankings to the same notes.
    """
    k = k or context.k
    mode = mode or context.retrieval_mode
    return reading(context, lambda: _search(context, embeddings, question, k, mode))


def _search(
    context: Context, embeddings: Embeddings, question: str, k: int, mode: str
) -> SearchResult:
    collection = get_collection(context)
    if collection is None:
        return SearchResult()
    size = collection.count()
    if not size:  # nothing to embed the question for
        return SearchResult()
    info = index_info(collection, context)
    chosen = NoteFilter.of(context.tags, context.folders)
    where = chosen.where() if chosen else None
    if chosen:
        if info.parser_version < FILTERS_SINCE:
            raise ConfigError(
                f"collection {context.collection_name!r} was loaded before tags and folders "
                "were recorded: run `rag load` again to search by tag or folder"
            )
        if not collection.get(where=where, limit=1, include=[])["ids"]:
            return SearchResult(collection_size=size, filter_empty=True)
    with ollama_errors(context.ollama_base_url, info.embedding_model):
        vector = embed_query(embeddings, info.convention, question)
    pool = k if mode == "vector" else max(4 * k, 20)
    found, ranking = _vector_ranking(context, vector, pool, where)
    if mode != "vector":
        lexical = Catalog.open(context, collection).search(
            question, pool, chosen, skip_question_words=context.skip_question_words
        )
        # Ties between chunks both rankings found follow the ``fusion_ties`` ranking; by
        # default BM25's: when the two rankings swap a pair, the chunk that shares more of the
        # question's own words goes first ("calf pain on the bike": the bike-fit chunk, not
        # the physio's calf chunk the vector ranking put first). Other ties keep the vector
        # order: a chunk only BM25 found, tied with one only the vector search found, often
        # shares a single common word with the question. Its effect per set: docs/quality.md.
        if mode == "bm25":
            ranking = lexical
        else:
            ties_by = FUSION_TIES[context.fusion_ties]
            ranking = reciprocal_rank_fusion([ranking, lexical], ties_by=ties_by)
        _add_lexical_only(collection, vector, [i for i in ranking[:k] if i not in found], found)
        # A chunk the catalog still lists but a concurrent load just deleted is skipped.
        ranking = [i for i in ranking if i in found]
    chunks = [_chunk(*found[i]) for i in ranking[:k]]
    # The collection's model, and the question's language, decide the floor when the context
    # names none.
    floor = context.score_threshold
    if floor is None:
        floor = default_threshold(info.embedding_model, question)
    relevant = [c for c in chunks if c["score"] >= floor]
    below = [c for c in chunks if c["score"] < floor][:NEAR_MISSES]
    return SearchResult(relevant=relevant, near_misses=below, collection_size=size, ranked=chunks)


def _vector_ranking(
    context: Context, vector: list[float], pool: int, where: dict[str, Any] | None = None
) -> tuple[dict[str, tuple], list[str]]:
    """The ``pool`` nearest chunks: id -> (text, metadata, cosine), and the ids in order.

    Searched by the question's vector, already embedded: the store needs no embedding model.
    """
    store = Chroma(
        client=open_client(context),
        collection_name=context.collection_name,
        create_collection_if_not_exists=False,
    )
    hits = store.similarity_search_by_vector_with_relevance_scores(vector, k=pool, filter=where)
    found = {
        str(doc.id): (doc.page_content, doc.metadata, 1.0 - distance) for doc, distance in hits
    }
    return found, [str(doc.id) for doc, _ in hits]


def _add_lexical_only(
    collection: Any, vector: list[float], ids: list[str], found: dict[str, tuple]
) -> None:
    """Fetch chunks only BM25 found, with their cosine score against the question."""
    if not ids:
        return
    got = collection.get(ids=ids, include=["documents", "metadatas", "embeddings"])
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    for chunk_id, text, metadata, embedding in zip(
        got["ids"], got["documents"], got["metadatas"], got["embeddings"]
    ):
        other = math.sqrt(sum(float(x) * float(x) for x in embedding)) or 1.0
        cosine = sum(a * float(b) for a, b in zip(vector, embedding)) / (norm * other)
        found[str(chunk_id)] = (text or "", metadata or {}, cosine)


def _chunk(content: str, metadata: dict[str, Any], relevance: float) -> RetrievedChunk:
    return RetrievedChunk(
        content=content,
        # Written for every chunk by ``rag load``; a collection it did not make may lack them.
        source=str(metadata.get("source", "")),
        heading=str(metadata.get("heading", "")),
        # Cosine space: 1 - distance lies in [-1, 1]; clamp into [0, 1].
        score=round(min(1.0, max(0.0, relevance)), 4),
        images=chunk_metadata_images(metadata),
        tags=chunk_metadata_list(metadata, "tags"),
    )
