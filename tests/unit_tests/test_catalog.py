"""The catalog beside each collection: kept current by loads, so no read scans the collection."""

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from graph.errors import ServiceError
from graph.index import catalog as catalog_module
from graph.index import vectorstore
from graph.index.catalog import Catalog, catalog_path, describe_collections, forget_catalog
from graph.index.ingest import LoadOptions, drop_collection, load_notes, stored_notes
from graph.index.retrieval import search_notes
from graph.index.vectorstore import get_collection
from tests.fakes import KeywordEmbeddings


@pytest.fixture
def scans(monkeypatch):
    """Counts the whole-collection scans (pages read) made from now on."""
    pages = []
    original = vectorstore.scan

    def counting(collection, include, page_size=None):
        for page in original(collection, include, page_size):
            pages.append(len(page["ids"]))
            yield page

    monkeypatch.setattr(catalog_module, "scan", counting)
    monkeypatch.setattr(vectorstore, "scan", counting)
    return pages


def catalog_of(ctx):
    collection = get_collection(ctx)
    return Catalog(catalog_path(ctx, collection), collection)


def is_current(ctx) -> bool:
    """What the catalog file tells every process: it reflects the collection's generation
    and no load is writing it (a reader or load that finds otherwise reads Chroma again)."""
    collection = get_collection(ctx)
    path = catalog_path(ctx, collection)
    if not path.exists():
        return False
    with sqlite3.connect(path) as connection:
        state = dict(connection.execute("select key, value from state").fetchall())
    info = vectorstore.IndexInfo.of(collection)
    generation = info.generation if info else 0
    return not state.get("writing") and state.get("generation") == generation


def test_a_load_leaves_the_catalog_current_and_questions_never_scan(loaded, models, scans):
    assert is_current(loaded)
    result = search_notes(loaded, models.embedder, "wireguard 51820", k=3, mode="hybrid")
    assert result.ranked[0]["source"] == "tech/networking.md"
    assert scans == []


def test_an_unchanged_reload_and_an_edit_read_no_collection_scan(loaded, notes_copy, scans):
    report = load_notes(loaded, notes_copy, KeywordEmbeddings())
    assert report.unchanged and not report.added and not report.updated
    (notes_copy / "tech" / "zz.md").write_text("# Firmware\n\nThe quokkabyte firmware is 4.2.\n")
    (notes_copy / "tech" / "networking.md").unlink()
    report = load_notes(loaded, notes_copy, KeywordEmbeddings())
    assert report.added == ["tech/zz.md"] and report.removed == ["tech/networking.md"]
    assert scans == []
    catalog = catalog_of(loaded)
    assert is_current(loaded)
    assert "tech/networking.md" not in catalog.notes()
    found = get_collection(loaded).get(ids=catalog.search("quokkabyte", 3))["metadatas"]
    assert [m["source"] for m in found] == ["tech/zz.md"]
    assert catalog.search("wireguard", 3) == []


def test_the_catalog_matches_a_fresh_read_of_the_collection(loaded, notes_copy):
    (notes_copy / "tech" / "networking.md").write_text("# Net\n\nOnly wireguard now.\n")
    load_notes(loaded, notes_copy, KeywordEmbeddings())
    kept = catalog_of(loaded)
    before = {s: (sorted(e.ids), e.digests, e.expected) for s, e in stored_notes(kept).items()}
    searches = [kept.search(q, 10) for q in ("wireguard", "sourdough starter", "python")]
    collection = get_collection(loaded)
    forget_catalog(loaded, collection)
    kept = Catalog.open(loaded, collection)  # no file: read from the collection
    after = {s: (sorted(e.ids), e.digests, e.expected) for s, e in stored_notes(kept).items()}
    assert after == before
    assert [kept.search(q, 10) for q in ("wireguard", "sourdough starter", "python")] == searches


def test_an_index_without_a_catalog_gets_one_on_first_use(loaded, models):
    path = catalog_path(loaded, get_collection(loaded))
    expected = search_notes(loaded, models.embedder, "wireguard 51820", k=3, mode="bm25").ranked
    path.unlink()
    again = search_notes(loaded, models.embedder, "wireguard 51820", k=3, mode="bm25").ranked
    assert again == expected and path.exists()


def killed(self, *args, **kwargs):
    """A catalog write that never happens: the process was stopped just before it."""
    raise KeyboardInterrupt


def test_a_load_cut_short_between_chroma_and_the_catalog_is_repaired(
    loaded, notes_copy, monkeypatch, scans
):
    (notes_copy / "tech" / "zz.md").write_text("# Firmware\n\nThe quokkabyte firmware is 4.2.\n")

    monkeypatch.setattr(Catalog, "upsert", killed)
    with pytest.raises(KeyboardInterrupt):
        load_notes(loaded, notes_copy, KeywordEmbeddings())
    monkeypatch.undo()
    catalog = catalog_of(loaded)
    assert not is_current(loaded)  # Chroma has the new note, the catalog does not
    # a question meanwhile still works from the catalog as it is
    assert catalog.search("wireguard", 3)
    report = load_notes(loaded, notes_copy, KeywordEmbeddings())
    assert report.unchanged and not report.added  # read back from the collection
    assert is_current(loaded) and "tech/zz.md" in catalog.notes()
    assert catalog.search("quokkabyte", 3)


def test_a_delete_cut_short_between_chroma_and_the_catalog_is_repaired(
    loaded, notes_copy, monkeypatch, scans
):
    (notes_copy / "tech" / "networking.md").unlink()

    monkeypatch.setattr(Catalog, "delete", killed)
    with pytest.raises(KeyboardInterrupt):
        load_notes(loaded, notes_copy, KeywordEmbeddings())
    monkeypatch.undo()
    assert not is_current(loaded)  # Chroma lost the note's chunks, the catalog did not
    report = load_notes(loaded, notes_copy, KeywordEmbeddings())
    assert report.unchanged and not report.removed  # read back from the collection
    assert is_current(loaded) and "tech/networking.md" not in catalog_of(loaded).notes()


def test_an_embedding_failure_mid_load_keeps_the_catalog_current(loaded, notes_copy, scans):
    for i in range(6):
        (notes_copy / f"new-{i}.md").write_text(f"# New {i}\n\nfresh note number {i}\n")

    class FailsSecondBatch(KeywordEmbeddings):
        def embed_documents(self, texts):
            if self.calls == 1:  # the second batch
                raise ServiceError("model server went away")
            return super().embed_documents(texts)

    with pytest.raises(ServiceError):
        load_notes(loaded, notes_copy, FailsSecondBatch(), LoadOptions(batch_size=2))
    assert is_current(loaded)
    report = load_notes(loaded, notes_copy, KeywordEmbeddings())
    assert len(report.unchanged) > 2 and len(report.added) == 4
    assert scans == []


def test_a_load_in_progress_leaves_the_catalog_in_use(loaded, models, scans):
    collection = get_collection(loaded)  # the load's own collection and catalog
    catalog = Catalog(catalog_path(loaded, collection), collection)
    catalog.start_writing()
    info = vectorstore.IndexInfo.of(collection)
    assert info is not None
    replace(info, generation=info.generation + 1).record(collection)
    assert search_notes(loaded, models.embedder, "wireguard", k=3, mode="bm25").ranked
    assert scans == []  # no second process rebuilds what the load is writing
    catalog.finish_writing()
    assert is_current(loaded)


def test_drop_and_rebuild_leave_no_stale_catalog(loaded, notes_copy):
    old = catalog_path(loaded, get_collection(loaded))
    load_notes(loaded, notes_copy, KeywordEmbeddings(), LoadOptions(rebuild=True))
    new = catalog_path(loaded, get_collection(loaded))
    assert new != old and new.exists() and not old.exists()
    assert is_current(loaded)
    drop_collection(loaded)
    assert not new.exists()


def test_words_in_most_chunks_of_a_large_collection_are_not_scored(loaded, monkeypatch):
    catalog = catalog_of(loaded)
    chunks = get_collection(loaded).count()
    everywhere = catalog.search("notes wireguard", 10)
    monkeypatch.setattr(catalog_module, "COMMON_WORDS_FROM", 2)
    # "md" is in every chunk's searchable text (its note path): no inverse document frequency
    assert len(catalog.search("md", chunks)) == 0
    assert catalog.search("md wireguard", 10) == catalog.search("wireguard", 10)
    monkeypatch.setattr(catalog_module, "COMMON_WORDS_FROM", 1000)
    assert len(catalog.search("md", chunks)) == chunks
    assert everywhere


def test_quotes_and_query_syntax_in_a_question_are_plain_words(loaded):
    catalog = catalog_of(loaded)
    networking = set(catalog.search("wireguard", 5))
    assert networking
    # Each question finds what its words alone find: FTS5 syntax is neither obeyed (a
    # column filter, NEAR, a phrase) nor an error, nor swallowed into no hits.
    words_of = {
        '"': "",
        "*": "",
        'wireguard" OR "x': "wireguard x",
        "NEAR(wireguard router)": "near wireguard router",
        "text : wireguard": "text wireguard",
        "keys : wireguard": "keys wireguard",
        "^wireguard": "wireguard",
        "wireguard*": "wireguard",
    }
    for question, words in words_of.items():
        found = catalog.search(question, 5)
        assert found == catalog.search(words, 5), question
        assert bool(words) == bool(set(found) & networking), (question, found)


def test_an_unwritable_catalog_is_a_one_line_error(loaded, models, tmp_path):
    path = catalog_path(loaded, get_collection(loaded))
    path.unlink()
    path.mkdir()  # something that is not a database where the catalog should be
    with pytest.raises(ServiceError, match="catalog"):
        search_notes(loaded, models.embedder, "wireguard", k=3, mode="hybrid")


def test_listing_counts_notes_from_the_catalog(loaded, notes_copy, scans):
    (row,) = describe_collections(loaded)
    assert row["notes"] == len(list(notes_copy.rglob("*.md")))
    assert row["chunks"] == get_collection(loaded).count()
    assert scans == []


def test_a_stale_catalog_is_read_again_once(loaded, scans):
    collection = get_collection(loaded)
    catalog = catalog_of(loaded)
    catalog.start_writing()  # as an interrupted load leaves it
    first = Catalog(catalog_path(loaded, collection), collection)
    second = Catalog(catalog_path(loaded, collection), collection)
    assert Catalog.open(loaded, collection) and scans == []  # readers use it as it is
    first._rebuild_unless(writing_will_do=False)
    pages = len(scans)
    second._rebuild_unless(writing_will_do=False)  # found current under the write lock
    assert pages >= 1 and len(scans) == pages
    assert Catalog.for_load(loaded, collection) and is_current(loaded) and len(scans) == pages


def test_words_are_stemmed_so_a_question_finds_other_forms(loaded, notes_copy):
    (notes_copy / "personal" / "garden.md").write_text("# Garden\n\nPlant tomatoes out in May.\n")
    load_notes(loaded, notes_copy, KeywordEmbeddings())
    catalog = catalog_of(loaded)
    found = get_collection(loaded).get(ids=catalog.search("tomato plants", 3))["metadatas"]
    assert [m["source"] for m in found] == ["personal/garden.md"]


def test_a_catalog_of_an_older_schema_is_rebuilt_on_first_use(loaded, scans):
    collection = get_collection(loaded)
    path = catalog_path(loaded, collection)
    expected = catalog_of(loaded).search("wireguard", 5)
    with sqlite3.connect(path) as connection:  # as version 1 made it: words unstemmed
        connection.execute("drop table vocabulary")
        connection.execute("drop table words")
        connection.execute(
            "create virtual table words using fts5 (text, keys, "
            "tokenize = 'unicode61 remove_diacritics 2')"
        )
        connection.execute("delete from state where key = 'schema'")
    assert is_current(loaded)  # current in every other respect
    catalog = Catalog.open(loaded, collection)
    assert scans  # read again from the collection
    assert catalog.search("wireguard", 5) == expected
    with sqlite3.connect(path) as connection:
        state = dict(connection.execute("select key, value from state").fetchall())
        (made,) = connection.execute(
            "select sql from sqlite_master where name = 'words'"
        ).fetchone()
    assert state["schema"] == catalog_module.SCHEMA_VERSION and "porter" in made


def test_common_words_are_found_by_their_stem(loaded, monkeypatch):
    catalog = catalog_of(loaded)
    chunks = get_collection(loaded).count()
    monkeypatch.setattr(catalog_module, "COMMON_WORDS_FROM", 2)
    # "mds" is stored as "md", which is in every chunk (its note path): not scored
    assert len(catalog.search("mds", chunks)) == 0
    assert catalog.search("mds wireguard", 10) == catalog.search("wireguard", 10)


def garden_sources(ctx) -> list[str]:
    """The notes BM25 finds for "tomato plants" (the garden note says "Plant tomatoes")."""
    found = catalog_of(ctx).search("tomato plants", 3)
    if not found:
        return []
    return [m["source"] for m in get_collection(ctx).get(ids=found)["metadatas"]]


def test_stemming_is_a_load_option_kept_by_later_loads_until_changed(loaded, notes_copy, models):
    (notes_copy / "personal" / "garden.md").write_text("# Garden\n\nPlant tomatoes out in May.\n")
    told = []
    load_notes(loaded, notes_copy, models.embedder, LoadOptions(stemming=False), notify=told.append)
    assert vectorstore.IndexInfo.of(get_collection(loaded)).stemmed is False
    assert [row["stemmed"] for row in describe_collections(loaded)] == [False]
    assert vectorstore.collection_stemmed(loaded) is False  # what evaluations record
    assert vectorstore.collection_stemmed(replace(loaded, collection_name="other")) is None
    assert garden_sources(loaded) == []  # "tomato" and "plants" are not words of the note
    assert catalog_of(loaded).search("tomatoes", 3)  # as written, it is found
    assert "'notes': BM25 now matches words as written; re-reading its words (no embedding)" in told

    told.clear()
    load_notes(loaded, notes_copy, models.embedder, notify=told.append)  # no choice: kept
    load_notes(loaded, notes_copy, models.embedder, LoadOptions(rebuild=True))  # kept too
    assert vectorstore.IndexInfo.of(get_collection(loaded)).stemmed is False
    assert garden_sources(loaded) == [] and told == []

    models.embedder.calls = 0
    marker = Path(loaded.effective_chroma_dir) / vectorstore.WRITTEN_FILE
    token = marker.read_text()
    load_notes(loaded, notes_copy, models.embedder, LoadOptions(stemming=True), notify=told.append)
    assert marker.read_text() != token  # other processes re-open the collection
    assert garden_sources(loaded) == ["personal/garden.md"]
    assert [row["stemmed"] for row in describe_collections(loaded)] == [True]
    assert vectorstore.collection_stemmed(loaded) is True
    assert models.embedder.calls == 0  # the words are read again, nothing is embedded
    assert (
        "'notes': BM25 now matches words by their stem; re-reading its words (no embedding)" in told
    )
    assert is_current(loaded)


def test_a_catalog_made_with_the_other_stemming_is_rebuilt_on_first_use(loaded, scans):
    collection = get_collection(loaded)
    replace(vectorstore.IndexInfo.of(collection), stemmed=False).record(collection)
    catalog = Catalog.open(loaded, get_collection(loaded))
    assert scans  # read again from the collection
    with sqlite3.connect(catalog.path) as connection:
        state = dict(connection.execute("select key, value from state").fetchall())
        (made,) = connection.execute(
            "select sql from sqlite_master where name = 'words'"
        ).fetchone()
    assert state["stemmed"] == 0 and "porter" not in made


def test_common_words_of_an_unstemmed_collection_are_found_as_written(
    loaded, tmp_path, monkeypatch
):
    runs = tmp_path / "runs"
    runs.mkdir()
    for day in ("monday", "tuesday", "friday"):
        (runs / f"{day}.md").write_text(f"# {day}\n\nRunning by the river on {day}.\n")
    plain = replace(loaded, collection_name="runs")
    load_notes(plain, runs, KeywordEmbeddings(), LoadOptions(stemming=False))
    catalog = catalog_of(plain)
    assert len(catalog.search("running", 10)) == 3
    monkeypatch.setattr(catalog_module, "COMMON_WORDS_FROM", 2)
    # "running" is in every chunk as written (its stem "run" in none): not scored
    assert catalog.search("running", 10) == []
    assert len(catalog.search("running friday", 10)) == 1
