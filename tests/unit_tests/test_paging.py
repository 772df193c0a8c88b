"""Whole-collection reads page through Chroma: a tiny page gives the same results as one call."""

import math

import pytest

from graph.index import lexical, vectorstore
from graph.index.ingest import stored_notes
from graph.index.lexical import lexical_index
from graph.index.vectorstore import describe_collections, get_collection, scan

QUESTIONS = ["whiteboarding interviews", "router setup network", "sourdough starter", "python"]


def everything(ctx):
    """What each whole-collection reader produces."""
    lexical._cache.clear()
    collection = get_collection(ctx)
    index = lexical_index(collection)
    stored = {
        source: (sorted(entry.ids), sorted(entry.digests), entry.expected)
        for source, entry in stored_notes(collection).items()
    }
    return (
        index.ids,
        [index.search(q, 10) for q in QUESTIONS],
        stored,
        describe_collections(ctx),
    )


@pytest.mark.parametrize("page", [1, 3, 7])
def test_tiny_pages_read_the_same_as_one_call(loaded, monkeypatch, page):
    collection = get_collection(loaded)
    total = collection.count()
    assert total > 7
    pages = list(scan(collection, ["metadatas"], page_size=page))
    assert len(pages) == math.ceil(total / page)
    assert sorted(i for p in pages for i in p["ids"]) == sorted(collection.get()["ids"])

    monkeypatch.setattr(vectorstore, "PAGE_SIZE", 100_000)
    whole = everything(loaded)
    calls = []
    original = type(collection).get

    def counting_get(self, *args, **kwargs):
        calls.append(kwargs.get("limit"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(vectorstore, "PAGE_SIZE", page)
    monkeypatch.setattr(type(collection), "get", counting_get)
    paged = everything(loaded)
    assert paged == whole
    assert whole[1][0] and whole[2] and whole[3][0]["chunks"] == total
    assert calls.count(page) >= 3 * math.ceil(total / page)  # BM25, stored notes, listing
