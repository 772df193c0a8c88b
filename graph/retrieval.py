"""Vector search over the notes collection.

Shared by the ``retrieve`` and ``image`` nodes and by ``rag query``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from langchain_chroma import Chroma
from langchain_core.embeddings import Embeddings

from graph.context import Context
from graph.embedding import embed_query
from graph.errors import ollama_errors
from graph.state import RetrievedChunk
from graph.vectorstore import (
    chroma_settings,
    chunk_metadata_images,
    get_collection,
    index_info,
    open_client,
)

NEAR_MISSES = 3


@dataclass
class SearchResult:
    """Chunks at or above the threshold, the best ones below it, and the collection size."""

    relevant: list[RetrievedChunk] = field(default_factory=list)
    near_misses: list[RetrievedChunk] = field(default_factory=list)
    collection_size: int = 0


def search_notes(
    context: Context, embeddings: Embeddings, question: str, *, k: int | None = None
) -> SearchResult:
    """Embed ``question`` with the collection's convention and return the top-``k`` chunks."""
    collection = get_collection(context)
    if collection is None:
        return SearchResult()
    size = collection.count()
    if size == 0:
        return SearchResult()
    info = index_info(collection, context)
    with ollama_errors(context.ollama_base_url, context.embedding_model):
        vector = embed_query(embeddings, info.convention, question)
    store = Chroma(
        client=open_client(context),
        client_settings=chroma_settings(),
        collection_name=context.collection_name,
        embedding_function=embeddings,
        create_collection_if_not_exists=False,
    )
    hits = store.similarity_search_by_vector_with_relevance_scores(vector, k=k or context.k)
    chunks = [
        RetrievedChunk(
            content=doc.page_content,
            source=str(doc.metadata.get("source", "")),
            heading=str(doc.metadata.get("heading", "")),
            # Cosine space: distance in [0, 2]; clamp rounding noise into [0, 1].
            score=round(min(1.0, max(0.0, 1.0 - distance)), 4),
            images=chunk_metadata_images(doc.metadata),
        )
        for doc, distance in hits
    ]
    relevant = [c for c in chunks if c["score"] >= context.score_threshold]
    below = [c for c in chunks if c["score"] < context.score_threshold][:NEAR_MISSES]
    return SearchResult(relevant=relevant, near_misses=below, collection_size=size)
