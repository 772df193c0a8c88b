"""Index operations never lose what was there: rebuilds, scanning, empty notes, drop, locks."""

import builtins
import io
import os
import threading
import time
from contextlib import redirect_stderr
from dataclasses import replace

import pytest
from ollama import ResponseError

from app.cli.main import main
from graph.errors import ConfigError, ServiceError
from graph.index import ingest
from graph.index.ingest import LoadOptions, load_lock, load_notes, scan_notes
from graph.index.locks import server_key
from graph.index.retrieval import search_notes
from graph.index.vectorstore import IndexInfo, get_collection, open_client
from tests.fakes import KeywordEmbeddings

QUESTIONS = [
    "How do I practise whiteboarding interviews?",
    "wireguard 51820 router",
    "sourdough starter feeding",
]


def answers(ctx, mode="hybrid"):
    """What the index answers to a few questions: (source, heading, score) per chunk."""
    emb = KeywordEmbeddings()
    return [
        [
            (c["source"], c["heading"], c["score"])
            for c in search_notes(ctx, emb, q, mode=mode).ranked
        ]
        for q in QUESTIONS
    ]


def names(ctx):
    return sorted(c.name for c in open_client(ctx).list_collections())


def chunk_sources(ctx):
    return {m["source"] for m in get_collection(ctx).get(include=["metadatas"])["metadatas"]}


class Failing(KeywordEmbeddings):
    def __init__(self, error):
        super().__init__()
        self.error = error

    def embed_documents(self, texts):
        raise self.error


FAILURES = {
    "interrupted": (KeyboardInterrupt(), KeyboardInterrupt, ""),
    "ollama down": (
        ConnectionError("refused"),
        ServiceError,
        "cannot reach Ollama at http://localhost:11434: start it with `ollama serve` or point "
        "OLLAMA_HOST / --ollama-host at it",
    ),
    "model not pulled": (
        ResponseError("model 'x' not found", 404),
        ServiceError,
        "Ollama model '{model}' is not available: run `ollama pull {model}`",
    ),
}


# --- rebuild beside the old collection ----------------------------------------------------


def reload_embedding_nothing(context, notes):
    """An ordinary load after an interrupted rebuild: every note unchanged; its messages."""
    messages: list[str] = []
    emb = KeywordEmbeddings()
    report = load_notes(context, notes, emb, notify=messages.append)
    assert len(report.unchanged) == 5 and emb.calls == 0
    return messages


@pytest.mark.parametrize("failure", FAILURES, ids=list(FAILURES))
@pytest.mark.parametrize("model", ["fake-embed", "nomic-embed-text"], ids=["same", "other"])
def test_failed_rebuild_keeps_the_old_index_answering(ctx, notes_copy, failure, model):
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    before = answers(ctx)
    assert all(before)
    error, raised, message = FAILURES[failure]
    with pytest.raises(raised) as failed:
        load_notes(
            replace(ctx, embedding_model=model),
            notes_copy,
            Failing(error),
            LoadOptions(rebuild=True),
        )
    assert str(failed.value) == message.format(model=model)
    assert answers(ctx) == before
    assert IndexInfo.of(get_collection(ctx)).embedding_model == "fake-embed"
    # the next ordinary load discards the unfinished rebuild and finds nothing to do
    messages = reload_embedding_nothing(ctx, notes_copy)
    assert "discarded an unfinished rebuild of 'notes'" in messages
    assert names(ctx) == ["notes"]
    assert answers(ctx) == before


def test_rebuild_swaps_in_the_new_collection_when_complete(ctx, notes_copy):
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    nomic = replace(ctx, embedding_model="nomic-embed-text")
    messages = []
    report = load_notes(
        nomic, notes_copy, KeywordEmbeddings(), LoadOptions(rebuild=True), notify=messages.append
    )
    assert len(report.added) == 5
    assert any("rebuilding 'notes' beside" in m and "embedded with" in m for m in messages)
    assert names(ctx) == ["notes"]
    info = IndexInfo.of(get_collection(ctx))
    assert info.embedding_model == "nomic-embed-text" and info.rebuild_of == ""
    assert answers(nomic)[0][0][0] == "career/interviews.md"
    assert len(load_notes(nomic, notes_copy, KeywordEmbeddings()).unchanged) == 5


def test_rebuild_of_a_matching_collection_rebuilds_anyway(ctx, notes_copy):
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    before = answers(ctx)
    old_id = get_collection(ctx).id
    messages = []
    emb = KeywordEmbeddings()
    report = load_notes(ctx, notes_copy, emb, LoadOptions(rebuild=True), notify=messages.append)
    assert len(report.added) == 5 and emb.calls > 0
    assert (
        "rebuilding 'notes' beside the old collection, which answers until done "
        "(its settings already match; rebuilt anyway)"
    ) in messages
    assert get_collection(ctx).id != old_id and names(ctx) == ["notes"]
    assert answers(ctx) == before


def test_crash_between_delete_and_rename_is_finished_by_the_next_load(ctx, notes_copy, monkeypatch):
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    nomic = replace(ctx, embedding_model="nomic-embed-text")
    from chromadb.api.models.Collection import Collection

    real_modify = Collection.modify

    def crash_on_rename(self, name=None, **kwargs):
        if name is not None:
            raise KeyboardInterrupt
        return real_modify(self, **kwargs)

    monkeypatch.setattr(Collection, "modify", crash_on_rename)
    with pytest.raises(KeyboardInterrupt):
        load_notes(nomic, notes_copy, KeywordEmbeddings(), LoadOptions(rebuild=True))
    monkeypatch.setattr(Collection, "modify", real_modify)
    assert names(ctx) == ["notes.rebuild"]  # the old one is gone, the complete new one waits

    messages = reload_embedding_nothing(nomic, notes_copy)
    assert "finished the interrupted swap of the rebuilt 'notes'" in messages
    assert names(ctx) == ["notes"]
    assert IndexInfo.of(get_collection(ctx)).rebuild_of == ""


def test_a_collection_that_only_shares_the_rebuild_name_is_never_touched(ctx, notes_copy):
    client = open_client(ctx)
    mine = client.create_collection("notes.rebuild")
    mine.add(ids=["x"], embeddings=[[1.0] * 512], documents=["mine"])
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    with pytest.raises(ConfigError) as refused:
        load_notes(ctx, notes_copy, KeywordEmbeddings(), LoadOptions(rebuild=True))
    assert str(refused.value) == (
        "--rebuild builds 'notes' as 'notes.rebuild', which already exists and is not a "
        "rebuild: drop or rename that collection"
    )
    assert names(ctx) == ["notes", "notes.rebuild"]
    assert client.get_collection("notes.rebuild").count() == 1


def test_a_name_too_long_to_rebuild_beside_and_an_unknown_drop_are_refused_whole(ctx):
    from graph.index.ingest import drop_collection, rebuild_name

    with pytest.raises(ConfigError) as refused:
        rebuild_name("n" * 505)
    assert (
        str(refused.value) == f"collection name {'n' * 505!r} is too long for --rebuild (max 504)"
    )
    assert rebuild_name("n" * 504) == "n" * 504 + ".rebuild"
    with pytest.raises(ConfigError) as refused:
        drop_collection(replace(ctx, collection_name="missing"))
    assert str(refused.value) == "no collection named 'missing'"


# --- retrieval while chunks vanish ----------------------------------------------------------


def test_hybrid_search_skips_chunks_the_catalog_still_lists(loaded, models):
    assert search_notes(loaded, models.embedder, "wireguard 51820", k=3, mode="hybrid").ranked
    # a concurrent load deleted chunks and has not yet removed them from the catalog
    get_collection(loaded).delete(where={"source": "tech/networking.md"})
    result = search_notes(loaded, models.embedder, "wireguard 51820", k=3, mode="hybrid")
    assert "tech/networking.md" not in {c["source"] for c in result.ranked}


# --- scanning -------------------------------------------------------------------------------


def test_hidden_folders_are_pruned_before_descending(notes_copy, monkeypatch):
    for hidden in (".git/objects/ab", ".obsidian/plugins", ".trash"):
        (notes_copy / hidden).mkdir(parents=True)
    (notes_copy / ".trash" / "deleted.md").write_text("# Deleted\n\nGone.\n")
    (notes_copy / "tech" / ".hidden").mkdir()
    listed = []
    real_scandir = os.scandir

    def recording(path="."):
        listed.append(os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", recording)
    notes, skipped = scan_notes(notes_copy)
    assert len(notes) == 5 and skipped == []
    assert listed and not [p for p in listed if "/." in p[len(str(notes_copy)) :]]


def test_names_that_are_not_utf8_are_skipped_and_never_crash(ctx, notes_copy, capsys):
    raw = os.fsencode(notes_copy)
    with open(raw + b"/caf\xe9.md", "wb") as handle:
        handle.write(b"# Cafe\n\nEspresso.\n")
    os.mkdir(raw + b"/dir\xff")
    with open(raw + b"/dir\xff/inside.md", "wb") as handle:
        handle.write(b"# Inside\n\nText.\n")
    messages = []
    report = load_notes(ctx, notes_copy, KeywordEmbeddings(), notify=messages.append)
    assert len(report.added) == 5
    reasons = dict(report.skipped)
    assert reasons["caf\\xe9.md"] == "file name is not valid UTF-8"
    assert reasons["dir\\xff/"] == "name is not valid UTF-8"
    for message in messages:
        message.encode("utf-8")  # printable anywhere
    # through the command line: exit 0, and the warning reaches stderr
    argv = ["load", "-f", str(notes_copy), "-n", "notes"]
    argv += ["--persist-dir", ctx.chroma_persist_directory, "-e", "fake-embed"]
    assert main(argv, models=_Models()) == 0
    captured = capsys.readouterr()
    assert "5 unchanged, 2 skipped" in captured.out
    assert "warning: skipped caf\\xe9.md" in captured.err


class _Models:
    def embeddings(self, context):
        return KeywordEmbeddings()


def test_a_folder_that_cannot_be_listed_keeps_its_notes(ctx, notes_copy, monkeypatch):
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    real_scandir = os.scandir
    blocked = os.fspath(notes_copy / "personal")

    def refusing(path="."):
        if os.fspath(path) == blocked:
            raise PermissionError(13, "Permission denied", blocked)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)
    report = load_notes(ctx, notes_copy, KeywordEmbeddings())
    assert report.removed == []
    assert dict(report.skipped) == {"personal/": "unreadable folder (Permission denied)"}
    assert {"personal/sourdough.md", "personal/travel-japan.md"} <= chunk_sources(ctx)


def test_symlinks_outside_the_notes_folder_are_not_read(ctx, notes_copy, tmp_path):
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nThe vault password is hunter2.\n")
    (notes_copy / "leak.md").symlink_to(secret)
    (notes_copy / "alias.md").symlink_to(notes_copy / "career" / "interviews.md")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "diary.md").write_text("# Diary\n\nThe safe code is 4711.\n")
    (notes_copy / "linked").symlink_to(tmp_path / "elsewhere")
    seen = []

    class Recording(KeywordEmbeddings):
        def embed_documents(self, texts):
            seen.extend(texts)
            return super().embed_documents(texts)

    report = load_notes(ctx, notes_copy, Recording())
    assert dict(report.skipped) == {
        "leak.md": "symlink to a file outside the notes folder",
        "linked/": "symlink to a folder (not followed)",
    }
    assert "alias.md" in report.added  # a symlink inside the folder is fine
    assert not any("hunter2" in text or "4711" in text for text in seen)
    assert "leak.md" not in chunk_sources(ctx)


def test_the_size_cap_applies_to_the_read_itself(notes_copy, monkeypatch):
    # A note that grows after it was listed: small on disk for every stat taken before it is
    # opened, it grows past the cap the moment it is opened (as a log being written does).
    grown = notes_copy / "grown.md"
    grown.write_text("# Log\n\nline of text\n")
    read = []
    real_open = builtins.open

    class Recording:
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def __getattr__(self, name):
            return getattr(self.handle, name)

        def read(self, *args):
            data = self.handle.read(*args)
            read.append(len(data))
            return data

    def growing_open(file, *args, **kwargs):
        if isinstance(file, (str, bytes, os.PathLike)) and os.fspath(file) == os.fspath(grown):
            with real_open(grown, "a") as log:
                log.write("line of text\n" * 2000)
            return Recording(real_open(file, *args, **kwargs))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", growing_open)
    monkeypatch.setattr(io, "open", growing_open)
    notes, skipped = scan_notes(notes_copy, max_bytes=10_000)
    assert dict(skipped)["grown.md"].startswith("larger than")
    assert "grown.md" not in {n.source for n in notes}
    assert read and sum(read) <= 10_001  # never more than one byte past the cap


def test_empty_notes_are_unchanged_on_reload(ctx, notes_copy):
    (notes_copy / "Untitled.md").write_text("")
    first = load_notes(ctx, notes_copy, KeywordEmbeddings())
    assert "Untitled.md" in first.added
    generation = IndexInfo.of(get_collection(ctx)).generation

    emb = KeywordEmbeddings()
    again = load_notes(ctx, notes_copy, emb)
    assert len(again.unchanged) == 6 and not (again.added or again.updated) and emb.calls == 0
    assert IndexInfo.of(get_collection(ctx)).generation == generation
    assert "Untitled.md" not in chunk_sources(ctx)  # nothing that a search could return

    (notes_copy / "Untitled.md").write_text("# Idea\n\nA quokkabyte gadget.\n")
    assert load_notes(ctx, notes_copy, KeywordEmbeddings()).updated == ["Untitled.md"]
    assert "Untitled.md" in chunk_sources(ctx)
    assert dict(IndexInfo.of(get_collection(ctx)).empty_notes) == {}

    (notes_copy / "Untitled.md").write_text("")
    assert load_notes(ctx, notes_copy, KeywordEmbeddings()).updated == ["Untitled.md"]
    assert "Untitled.md" not in chunk_sources(ctx)
    assert len(load_notes(ctx, notes_copy, KeywordEmbeddings()).unchanged) == 6

    (notes_copy / "Untitled.md").unlink()
    assert load_notes(ctx, notes_copy, KeywordEmbeddings()).removed == ["Untitled.md"]
    assert IndexInfo.of(get_collection(ctx)).empty_notes == ()
    assert len(load_notes(ctx, notes_copy, KeywordEmbeddings()).unchanged) == 5


# --- drop and lock keys ---------------------------------------------------------------------


def test_drop_waits_for_a_running_load(ctx, notes_copy):
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    argv = ["drop", "-n", "notes", "--yes"]
    argv += ["--persist-dir", ctx.chroma_persist_directory, "-e", "fake-embed"]
    codes = []
    stderr = Watched("waiting for another `rag load`")
    with load_lock(ctx, lambda _: None), redirect_stderr(stderr):
        dropper = threading.Thread(target=lambda: codes.append(main(argv, models=_Models())))
        dropper.start()
        # it says it waits (or ends without waiting, which fails below)
        deadline = time.monotonic() + 30
        while not stderr.seen.wait(timeout=0.05) and dropper.is_alive():
            assert time.monotonic() < deadline, "drop neither waited nor ended"
        assert stderr.seen.is_set(), stderr.getvalue()
        assert dropper.is_alive() and get_collection(ctx) is not None
    dropper.join(timeout=30)
    assert codes == [0] and get_collection(ctx) is None


def test_a_load_says_it_waits_for_a_running_load(ctx, notes_copy):
    said = threading.Event()
    messages = []

    def notify(message):
        messages.append(message)
        said.set()

    reports = []
    with load_lock(ctx, lambda _: None):
        loader = threading.Thread(
            target=lambda: reports.append(
                load_notes(ctx, notes_copy, KeywordEmbeddings(), notify=notify)
            )
        )
        loader.start()
        # it says it waits (or ends without waiting, which fails below)
        deadline = time.monotonic() + 30
        while not said.wait(timeout=0.05) and loader.is_alive():
            assert time.monotonic() < deadline, "the load neither waited nor ended"
        assert said.is_set() and loader.is_alive()
    loader.join(timeout=30)
    assert messages[0] == "waiting for another `rag load` of 'notes' to finish..."
    assert len(reports[0].added) == 5


class Watched(io.StringIO):
    """A stream that sets ``seen`` once ``wanted`` has been written to it."""

    def __init__(self, wanted):
        super().__init__()
        self.wanted = wanted
        self.seen = threading.Event()

    def write(self, text):
        written = super().write(text)
        if self.wanted in self.getvalue():
            self.seen.set()
        return written


def test_drop_also_discards_an_unfinished_rebuild(ctx, notes_copy):
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    with pytest.raises(KeyboardInterrupt):
        load_notes(ctx, notes_copy, Failing(KeyboardInterrupt()), LoadOptions(rebuild=True))
    assert names(ctx) == ["notes", "notes.rebuild"]
    ingest.drop_collection(ctx)
    assert names(ctx) == []


def test_one_lock_per_chroma_server_however_its_url_is_written(ctx, tmp_path):
    same = [
        "http://localhost:8000",
        "http://127.0.0.1:8000/",
        "http://localhost:8000/",
        "http://LOCALHOST",
        " http://127.0.0.1:8000 ",
    ]
    assert {server_key(url) for url in same} == {"http://127.0.0.1:8000"}
    assert server_key("https://chroma.example") == "https://chroma.example:443"
    assert len({server_key(u) for u in ["http://localhost:8001", "http://10.0.0.2:8000"]}) == 2
    for url in same:
        with load_lock(replace(ctx, chroma_server_url=url), lambda _: None):
            pass
    locks = list((tmp_path / "xdg-cache" / "notes-rag").iterdir())
    assert len(locks) == 1 and locks[0].name.endswith("-notes.lock")


def test_drop_leaves_nothing_of_the_collection_on_disk(sample_notes, tmp_path, capsys):
    from tests.fakes import FakeModels

    models = FakeModels()
    index = tmp_path / "db"
    db = ["--persist-dir", str(index), "-e", "fake-embed"]
    assert main(["load", "-f", str(sample_notes), "-n", "kept", *db], models=models) == 0

    def listing():
        return sorted(str(p.relative_to(index)) for p in index.rglob("*"))

    before = listing()
    assert main(["load", "-f", str(sample_notes), "-n", "dropped", *db], models=models) == 0
    added = set(listing()) - set(before)
    assert ".dropped.lock" in added and any("/" not in p and "-" in p for p in added)
    assert main(["drop", "-n", "dropped", "--yes", *db], models=models) == 0
    assert listing() == before  # its vectors' folder, its catalog and its lock file gone
    assert main(["query", "-q", "sourdough", "-n", "kept", *db], models=models) == 0
    assert "sourdough" in capsys.readouterr().out


def test_a_lock_file_deleted_by_its_holder_still_excludes(tmp_path):
    from graph.index.locks import file_lock, remove_lock_file

    path = tmp_path / ".notes.lock"
    second_waits, second_holds, release = threading.Event(), threading.Event(), threading.Event()

    def second():
        with file_lock(path, on_wait=second_waits.set):
            second_holds.set()
            release.wait(10)

    with file_lock(path):
        waiter = threading.Thread(target=second)
        waiter.start()
        assert second_waits.wait(10)
        remove_lock_file(path)  # as rag drop does, while holding the lock
    assert second_holds.wait(10)
    third_waits = threading.Event()

    def third():
        with file_lock(path, on_wait=third_waits.set):
            pass

    late = threading.Thread(target=third)
    late.start()
    assert third_waits.wait(10), "a third holder got the lock while the second held it"
    release.set()
    waiter.join(10)
    late.join(10)
