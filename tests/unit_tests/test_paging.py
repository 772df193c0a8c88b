"""Whole-collection reads page through Chroma: a tiny page gives the same results as one call."""

import math

import pytest

from graph.index import vectorstore
from graph.index.catalog import Catalog, describe_collections, forget_catalog
from graph.index.ingest import stored_notes
from graph.index.vectorstore import get_collection, scan

QUESTIONS = ["whiteboarding interviews", "router setup network", "sourdough starter", "python"]


def everything(ctx):
    """What each whole-collection reader produces (the catalog read again from Chroma)."""
    collection = get_collection(ctx)
    forget_catalog(ctx, collection)
    catalog = Catalog.open(ctx, collection)  # no file: read from the collection
    stored = {
        source: (sorted(entry.ids), sorted(entry.digests), entry.expected)
        for source, entry in stored_notes(catalog).items()
    }
    return (
        [catalog.search(q, 10) for q in QUESTIONS],
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
    assert whole[0][0] and whole[1] and whole[2][0]["chunks"] == total
    assert calls.count(page) >= math.ceil(total / page)  # the catalog read in pages
