import hashlib
import json
import os
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from graph.errors import ConfigError, ServiceError
from graph.index.catalog import catalog_path
from graph.index.chunking import Unparsed
from graph.index.embedding import Convention, convention_for, document_text
from graph.index.ingest import LoadOptions, LoadReport, load_notes
from graph.index.vectorstore import IndexInfo, get_collection, open_client
from tests.fakes import KeywordEmbeddings

ROOT = Path(__file__).resolve().parents[2]


class Recording(KeywordEmbeddings):
    """Keyword embeddings that keep every text they embed."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def embed_documents(self, texts):
        self.seen.extend(texts)
        return super().embed_documents(texts)


def snapshot(ctx):
    """ids -> (source, note_hash, chunk_count) of everything in the collection."""
    got = get_collection(ctx).get(include=["metadatas"])
    return {
        i: (m["source"], m["note_hash"], m["chunk_count"])
        for i, m in zip(got["ids"], got["metadatas"])
    }


def test_the_summary_line_counts_each_change_and_says_how_many_notes_were_empty():
    report = LoadReport(
        added=["a.md", "b.md"],
        updated=["c.md"],
        unchanged=["d.md"],
        skipped=[("e.md", "not UTF-8")],
        empty=["b.md"],
        chunks_written=5,
        embed_calls=2,
    )
    assert report.summary() == (
        "2 added, 1 updated, 0 removed, 1 unchanged, 1 skipped "
        "(5 chunks embedded in 2 calls; 1 of the notes empty, nothing to search)"
    )
    report.empty = []
    assert report.summary() == (
        "2 added, 1 updated, 0 removed, 1 unchanged, 1 skipped (5 chunks embedded in 2 calls)"
    )


def test_first_load_records_metadata_per_chunk(ctx, notes_copy):
    emb = KeywordEmbeddings()
    report = load_notes(ctx, notes_copy, emb)
    assert len(report.added) == 5 and report.chunks_written > 5
    got = get_collection(ctx).get(include=["metadatas", "documents"])
    meta = {(m["source"], m["heading"]) for m in got["metadatas"]}
    assert ("career/interviews.md", "Interviews > Whiteboarding") in meta
    assert ("tech/networking.md", "Home network > Router setup") in meta
    first = got["metadatas"][0]
    assert {"chunk_index", "chunk_count", "note_hash", "content_hash"} <= set(first)
    assert all(len(m["content_hash"]) == 16 for m in got["metadatas"])
    images = {m["source"]: json.loads(m["images"]) for m in got["metadatas"] if m["has_images"]}
    assert images == {"tech/networking.md": ["img/network.png"]}
    collection = get_collection(ctx)
    assert collection.metadata["rag:embedding_model"] == "fake-embed"
    assert collection.metadata["rag:image_notes"] == 1
    assert collection.configuration_json["hnsw"]["space"] == "cosine"


def test_unchanged_reload_embeds_nothing(ctx, notes_copy):
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    before = snapshot(ctx)
    emb = KeywordEmbeddings()
    report = load_notes(ctx, notes_copy, emb)
    assert emb.calls == 0
    assert len(report.unchanged) == 5 and not (report.added or report.updated or report.removed)
    assert snapshot(ctx) == before


def test_edit_delete_rename_are_incremental(ctx, notes_copy):
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    (notes_copy / "personal" / "sourdough.md").write_text("# Sourdough\n\nOnly rye now.\n")
    (notes_copy / "tech" / "python-tips.md").unlink()
    (notes_copy / "personal" / "travel-japan.md").rename(notes_copy / "personal" / "japan.md")
    emb = KeywordEmbeddings()
    report = load_notes(ctx, notes_copy, emb)
    assert report.updated == ["personal/sourdough.md"]
    assert report.added == ["personal/japan.md"]
    assert report.removed == ["personal/travel-japan.md", "tech/python-tips.md"]
    assert len(report.unchanged) == 2
    sources = {s for s, _, _ in snapshot(ctx).values()}
    assert sources == {
        "career/interviews.md",
        "tech/networking.md",
        "personal/sourdough.md",
        "personal/japan.md",
    }
    sourdough = [v for v in snapshot(ctx).values() if v[0] == "personal/sourdough.md"]
    assert len(sourdough) == 1  # the old, longer version's extra chunks are gone
    assert emb.texts_embedded == report.chunks_written


def test_a_note_emptied_loses_its_chunks_and_stays_unchanged_after(ctx, notes_copy):
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    (notes_copy / "personal" / "sourdough.md").write_text("---\ntags: [bread]\n---\n")
    report = load_notes(ctx, notes_copy, KeywordEmbeddings())
    assert report.updated == ["personal/sourdough.md"] and report.empty == report.updated
    sources = {s for s, _, _ in snapshot(ctx).values()}
    assert "personal/sourdough.md" not in sources and len(sources) == 4
    again = load_notes(ctx, notes_copy, KeywordEmbeddings())
    assert "personal/sourdough.md" in again.unchanged and again.chunks_written == 0


def test_interrupted_load_is_finished_by_the_next_run(ctx, notes_copy, tmp_path):
    class Interrupting(KeywordEmbeddings):
        def embed_documents(self, texts):
            if self.calls == 2:
                raise KeyboardInterrupt
            return super().embed_documents(texts)

    with pytest.raises(KeyboardInterrupt):
        load_notes(ctx, notes_copy, Interrupting(), LoadOptions(batch_size=2))
    partial = snapshot(ctx)
    assert 0 < len(partial)
    report = load_notes(ctx, notes_copy, KeywordEmbeddings(), LoadOptions(batch_size=2))
    assert report.added or report.updated
    clean = replace(ctx, chroma_persist_directory=str(tmp_path / "clean"))
    load_notes(clean, notes_copy, KeywordEmbeddings())
    assert snapshot(ctx) == snapshot(clean)


def test_interrupted_update_keeps_the_note_findable(ctx, notes_copy):
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    note = notes_copy / "career" / "interviews.md"
    note.write_text(note.read_text() + "\n## Offers\n\nCompare total compensation.\n")

    class Failing(KeywordEmbeddings):
        def embed_documents(self, texts):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        load_notes(ctx, notes_copy, Failing())
    assert any(s == "career/interviews.md" for s, _, _ in snapshot(ctx).values())
    report = load_notes(ctx, notes_copy, KeywordEmbeddings())
    assert report.updated == ["career/interviews.md"]


def test_an_interrupted_upgrade_still_reads_the_notes_parser_1_left_empty(ctx, notes_copy):
    # Parser 1 read a note of properties only as empty; parser 2 gives it text. An upgrade cut
    # short must not leave the collection saying parser 2 read it.
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    card = b"---\nphone: 07700 900412\n---\n"
    (notes_copy / "card.md").write_bytes(card)
    collection = get_collection(ctx)
    got = collection.get(include=["metadatas"])
    collection.update(ids=got["ids"], metadatas=[{**m, "parser": 1} for m in got["metadatas"]])
    empty = (("card.md", hashlib.sha256(card).hexdigest()),)
    replace(IndexInfo.of(collection), parser_version=1, empty_notes=empty).record(collection)
    catalog_path(ctx, collection).unlink()  # read the chunks' parsers from the collection
    (notes_copy / "tech" / "networking.md").write_text("Changed: something to write first.")

    class Failing(KeywordEmbeddings):
        def embed_documents(self, texts):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        load_notes(ctx, notes_copy, Failing())
    report = load_notes(ctx, notes_copy, KeywordEmbeddings())
    assert "card.md" in report.added + report.updated and not report.empty
    assert any(s == "card.md" for s, _, _ in snapshot(ctx).values())


def test_bad_files_are_skipped_and_lose_nothing(ctx, notes_copy):
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    (notes_copy / "latin1.md").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    (notes_copy / "binary.md").write_bytes(b"\x89PNG\x00\x00\x01")
    (notes_copy / "huge.md").write_text("word " * 5000)
    (notes_copy / "dangling.md").symlink_to(notes_copy / "nowhere.md")
    (notes_copy / "todo.txt").write_text("not a note")
    (notes_copy / "notes.txt").symlink_to(notes_copy / "todo.txt")
    # a note that was indexed and is now unreadable keeps its chunks
    os.remove(notes_copy / "personal" / "sourdough.md")
    (notes_copy / "personal" / "sourdough.md").symlink_to(notes_copy / "gone.md")
    messages = []
    report = load_notes(
        ctx,
        notes_copy,
        KeywordEmbeddings(),
        LoadOptions(max_note_bytes=10_000),
        notify=messages.append,
    )
    reasons = dict(report.skipped)
    assert reasons["latin1.md"] == "not UTF-8 text"
    assert reasons["binary.md"] == "binary file"
    assert reasons["huge.md"].startswith("larger than")
    assert reasons["dangling.md"] == "not a regular file"
    assert "personal/sourdough.md" in reasons
    assert "notes.txt" not in reasons and "notes.txt/" not in reasons  # not a note: ignored
    assert report.removed == []
    assert any(s == "personal/sourdough.md" for s, _, _ in snapshot(ctx).values())
    assert any(m.startswith("warning: skipped latin1.md") for m in messages)


def test_a_fifo_is_skipped_without_being_opened(ctx, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nText.\n")
    fifo = folder / "pipe.md"
    os.mkfifo(fifo)

    def a_reader_was_waiting() -> bool:
        """Whether something has the FIFO open for reading (it then reads the end at once)."""
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # ENXIO: nobody is reading it
            return False
        return True

    reports = []
    loader = threading.Thread(
        target=lambda: reports.append(load_notes(ctx, folder, KeywordEmbeddings()))
    )
    loader.start()
    opened = False
    while loader.is_alive():  # opening a FIFO waits for a writer: the load would never end
        loader.join(timeout=0.2)
        opened = opened or a_reader_was_waiting()
    assert not opened, "the load opened the FIFO"
    assert reports[0].skipped == [("pipe.md", "not a regular file")]
    assert reports[0].added == ["a.md"]


def test_files_that_are_not_notes_do_not_stop_the_notes_beside_them(ctx, tmp_path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    for i in range(5):  # the folder lists them in no fixed order
        (folder / f"note-{i}.md").write_text(f"# Note {i}\n\nThe text of note {i}.\n")
        (folder / f"other-{i}.txt").write_text("not a note")
    report = load_notes(ctx, folder, KeywordEmbeddings())
    assert report.added == [f"note-{i}.md" for i in range(5)] and report.skipped == []


def test_missing_or_empty_folder_is_refused_and_index_untouched(ctx, notes_copy, tmp_path):
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    before = snapshot(ctx)
    with pytest.raises(ConfigError, match="does not exist"):
        load_notes(ctx, tmp_path / "missing", KeywordEmbeddings())
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError) as refused:
        load_notes(ctx, empty, KeywordEmbeddings())
    assert str(refused.value) == f"no readable markdown notes (*.md) in {empty}; index untouched"
    (empty / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(ConfigError) as refused:
        load_notes(ctx, empty, KeywordEmbeddings())
    assert str(refused.value) == (
        f"no readable markdown notes (*.md) in {empty} (1 skipped); index untouched"
    )
    assert snapshot(ctx) == before


def test_changed_embedding_model_or_chunking_needs_rebuild(ctx, notes_copy):
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    other = replace(ctx, embedding_model="nomic-embed-text")
    with pytest.raises(ConfigError) as refused:
        load_notes(other, notes_copy, KeywordEmbeddings())
    assert str(refused.value) == (
        "collection 'notes' was embedded with 'fake-embed', not 'nomic-embed-text': "
        "pass --rebuild to replace it, or use another collection name (-n)"
    )
    with pytest.raises(ConfigError, match="chunked 1500/300"):
        load_notes(
            ctx, notes_copy, KeywordEmbeddings(), LoadOptions(chunk_size=800, chunk_overlap=100)
        )
    report = load_notes(other, notes_copy, KeywordEmbeddings(), LoadOptions(rebuild=True))
    assert len(report.added) == 5
    assert get_collection(other).metadata["rag:query_prefix"] == "search_query: "


def test_the_same_model_with_other_prefixes_needs_rebuild(ctx, notes_copy):
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    collection = get_collection(ctx)
    collection.modify(metadata={**collection.metadata, "rag:document_prefix": "passage: "})
    with pytest.raises(ConfigError) as refused:
        load_notes(ctx, notes_copy, KeywordEmbeddings())
    assert str(refused.value) == (
        "collection 'notes' was embedded with the prefixes 'passage: ' and '', not '' and '': "
        "pass --rebuild to replace it, or use another collection name (-n)"
    )


def test_a_collection_rag_load_did_not_make_is_taken_only_while_empty(ctx, notes_copy):
    foreign = open_client(ctx).create_collection("notes")
    foreign.add(ids=["x"], embeddings=[[1.0] * 512], documents=["someone else's"])
    with pytest.raises(ConfigError) as refused:
        load_notes(ctx, notes_copy, KeywordEmbeddings())
    assert str(refused.value) == (
        "collection 'notes' was not created by `rag load`: pass --rebuild to replace it, "
        "or use another collection name (-n)"
    )
    assert foreign.count() == 1
    foreign.delete(ids=["x"])
    assert len(load_notes(ctx, notes_copy, KeywordEmbeddings()).added) == 5
    info = IndexInfo.of(get_collection(ctx))
    assert (info.generation, info.image_notes, info.empty_notes) == (2, 1, ())


def test_an_older_parser_s_collection_re_reads_only_the_notes_it_read_differently(ctx, notes_copy):
    # Parser 1 dropped a note's properties; 2 keeps them as text. Every other note reads the
    # same under both, so upgrading embeds only the notes with properties again.
    (notes_copy / "Plumber.md").write_text("---\nphone: 07700 900412\ntags: [house]\n---\nGary.\n")
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    collection = get_collection(ctx)
    got = collection.get(include=["metadatas"])
    collection.update(ids=got["ids"], metadatas=[{**m, "parser": 1} for m in got["metadatas"]])
    replace(IndexInfo.of(collection), parser_version=1).record(collection)
    catalog_path(ctx, collection).unlink()  # read the chunks' parsers from the collection
    messages: list[str] = []
    report = load_notes(ctx, notes_copy, KeywordEmbeddings(), notify=messages.append)
    assert report.updated == ["Plumber.md"]
    assert len(report.unchanged) == 5
    assert messages == [
        "'notes' was indexed by another note parser: re-reading the notes it reads differently"
    ]
    stored = get_collection(ctx).get(where={"source": "Plumber.md"}, include=["documents"])
    assert "phone: 07700 900412" in stored["documents"][0]
    assert len(load_notes(ctx, notes_copy, KeywordEmbeddings()).unchanged) == 6


def test_a_note_that_cannot_be_parsed_is_skipped_and_keeps_what_the_index_held(
    ctx, notes_copy, monkeypatch
):
    from graph.index import ingest

    load_notes(ctx, notes_copy, KeywordEmbeddings())
    before = snapshot(ctx)
    for note in ("tech/networking.md", "tech/python-tips.md"):
        (notes_copy / note).write_text((notes_copy / note).read_text() + "\nEdited.\n")
    (notes_copy / "tech" / "new.md").write_text("# New\n\nA note the parser gives up on.\n")
    options_seen = {}
    parse = ingest.parse_notes

    def over_budget_for_one(notes, vault, chunk_size, chunk_overlap, **options):
        options_seen.update(options)
        parsed = parse(notes, vault, chunk_size, chunk_overlap, **options)
        late = Unparsed("took longer than 2.5 s")
        failing = ("tech/networking.md", "tech/new.md")
        return [late if source in failing else p for (_, source), p in zip(notes, parsed)]

    monkeypatch.setattr(ingest, "parse_notes", over_budget_for_one)
    messages, progress = [], []
    emb = KeywordEmbeddings()
    report = load_notes(
        ctx,
        notes_copy,
        emb,
        LoadOptions(parse_budget=2.5, batch_size=1),
        progress=lambda done, total: progress.append((done, total)),
        notify=messages.append,
    )
    assert options_seen["budget"] == 2.5 and options_seen["notify"] == messages.append
    reason = "could not be parsed (took longer than 2.5 s)"
    assert messages == [
        f"warning: skipped tech/networking.md: {reason}",
        f"warning: skipped tech/new.md: {reason}",
    ]
    assert report.skipped == [("tech/networking.md", reason), ("tech/new.md", reason)]
    assert report.updated == ["tech/python-tips.md"] and report.added == []
    # the note parsed after the skipped one is written; the skipped one keeps its old chunks
    after = snapshot(ctx)
    kept = {i: v for i, v in before.items() if v[0] == "tech/networking.md"}
    assert kept and all(after[i] == v for i, v in kept.items())
    tips = {v[1] for v in after.values() if v[0] == "tech/python-tips.md"}
    assert tips and tips.isdisjoint(v[1] for v in before.values())
    total = report.chunks_written
    assert report.embed_calls == emb.calls == total > 1
    assert progress == [(i, total) for i in range(total + 1)]


def test_a_write_chroma_refuses_is_one_line_naming_chroma(ctx, notes_copy, monkeypatch):
    from chromadb.api.models.Collection import Collection

    def refused(self, **kwargs):
        raise ValueError("disk full")

    monkeypatch.setattr(Collection, "upsert", refused)
    with pytest.raises(ServiceError) as failed:
        load_notes(ctx, notes_copy, KeywordEmbeddings())
    assert str(failed.value) == "Chroma refused the write: disk full"


def test_the_embedded_text_is_where_the_chunk_sits_then_its_text(ctx, notes_copy):
    recording = Recording()
    load_notes(ctx, notes_copy, recording)
    seen = recording.seen
    got = get_collection(ctx).get(include=["metadatas", "documents"])
    expected = {
        document_text(convention_for("fake-embed"), m["source"], m["heading"], d)
        for m, d in zip(got["metadatas"], got["documents"])
    }
    assert len(seen) == len(expected) and set(seen) == expected


def test_other_notes_folder_needs_rebuild(ctx, notes_copy, tmp_path):
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.md").write_text("# A\n\nText.\n")
    with pytest.raises(ConfigError, match="holds the notes of"):
        load_notes(ctx, other, KeywordEmbeddings())


def test_embedding_prefix_convention_is_applied(ctx, notes_copy):
    nomic = replace(ctx, embedding_model="nomic-embed-text")
    recording = Recording()
    load_notes(nomic, notes_copy, recording)
    seen = recording.seen
    assert all(t.startswith("search_document: ") for t in seen)
    assert any(
        t.startswith("search_document: career/interviews.md > Interviews > Whiteboarding")
        for t in seen
    )


WORKER = """
import sys
from graph.context import Context
from graph.index.chunking import partition_note
from graph.index.chunking import Unparsed
from graph.index.embedding import convention_for, document_text
from graph.index.catalog import catalog_path
from graph.index.ingest import LoadOptions, LoadReport, load_notes
from tests.fakes import KeywordEmbeddings

partition_note("# Title\\n\\nunstructured is imported on the first note.\\n")

class Held(KeywordEmbeddings):
    # With "hold": stops at its first batch (holding the load lock) until the test says go.
    def embed_documents(self, texts):
        if self.calls == 0 and sys.argv[3] == "hold":
            print("EMBEDDING", flush=True)
            sys.stdin.readline()
        return super().embed_documents(texts)

ctx = Context(chroma_persist_directory=sys.argv[1], collection_name="notes",
              embedding_model="fake-embed")
emb = Held()
if sys.argv[3] == "wait":  # started beside the first (imports overlap); loads when told
    print("READY", flush=True)
    sys.stdin.readline()
r = load_notes(
    ctx, sys.argv[2], emb, LoadOptions(batch_size=2), notify=lambda m: print(m, flush=True)
)
print("RESULT", len(r.added), len(r.unchanged), emb.texts_embedded, flush=True)
"""


def lines_until(proc, wanted):
    """``proc``'s stdout lines up to the first containing ``wanted`` (all of them at its end)."""
    lines = []
    while not (lines and wanted in lines[-1]):
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
    return lines


def test_concurrent_loads_wait_for_each_other(ctx, notes_copy):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-c", WORKER, ctx.chroma_persist_directory, str(notes_copy)]
    pipes = {"stdout": subprocess.PIPE, "text": True, "env": env, "cwd": ROOT}
    first = subprocess.Popen([*args, "hold"], stdin=subprocess.PIPE, **pipes)
    second = subprocess.Popen([*args, "wait"], stdin=subprocess.PIPE, **pipes)
    try:
        seen1 = lines_until(first, "EMBEDDING")  # the first load is under way, holding the lock
        assert seen1 and seen1[-1] == "EMBEDDING\n", seen1
        assert second.stdout.readline() == "READY\n"
        second.stdin.write("go\n")
        second.stdin.flush()
        seen2 = lines_until(second, "waiting for another `rag load`")
        assert seen2 and "waiting for another `rag load`" in seen2[-1], seen2
        first.stdin.write("go\n")
        first.stdin.flush()
        out1 = "".join(seen1) + first.communicate(timeout=120)[0]
        out2 = "".join(seen2) + second.communicate(timeout=120)[0]
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    assert first.returncode == 0 and second.returncode == 0, (out1, out2)
    (result1,) = [line.split()[1:] for line in out1.splitlines() if line.startswith("RESULT")]
    (result2,) = [line.split()[1:] for line in out2.splitlines() if line.startswith("RESULT")]
    # the first loaded everything; the second waited for it and found it all unchanged
    assert result1[0] == "5" and result1[2] != "0"
    assert result2 == ["0", "5", "0"]
    chunks = snapshot(ctx)
    assert len({v[0] for v in chunks.values()}) == 5
    assert len(chunks) == int(result1[2])


OPENERS = """
import os
import sys
import traceback
import chromadb  # imported once, before the forks: the opens start as close together as possible
from graph.context import Context
from graph.index.vectorstore import open_client
for folder in sys.argv[1:]:
    go_read, go_write = os.pipe()
    children = []
    for _ in range(4):
        pid = os.fork()
        if pid == 0:  # a process of its own, as a `rag load` would be
            os.close(go_write)
            os.read(go_read, 1)  # all start when the parent says go, once every one exists
            try:
                ctx = Context(chroma_persist_directory=folder, collection_name="notes")
                open_client(ctx).get_or_create_collection("notes")
            except BaseException:
                traceback.print_exc()
                os._exit(1)
            os._exit(0)
        children.append(pid)
    os.close(go_read)
    os.write(go_write, b"gggg")
    codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
    print("OPENED" if codes == [0, 0, 0, 0] else f"FAILED {codes}", flush=True)
"""


def test_processes_opening_a_fresh_index_at_once_all_succeed(tmp_path):
    # Chroma creates its tables on first open; unserialised, racing openers fail with
    # "table collections already exists" (seen in CI with two concurrent `rag load`s).
    # Eight fresh folders, each opened by four processes at once: forks of one process that
    # has imported Chroma, so that 32 interpreters do not each spend seconds importing it.
    folders = [str(tmp_path / f"index-{attempt}") for attempt in range(8)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", OPENERS, *folders],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert out.returncode == 0 and out.stdout.split() == ["OPENED"] * 8, (
        out.stdout + out.stderr[-1500:]
    )


LONG = "# Long\n\n## One\n\n{0} one.\n\n## Two\n\n{0} two.\n\n## Three\n\n{0} three.\n"


class InterruptAfter(KeywordEmbeddings):
    """Embeds ``batches`` batches, then stops as Ctrl-C would."""

    def __init__(self, batches: int) -> None:
        super().__init__()
        self.batches = batches

    def embed_documents(self, texts):
        if self.calls == self.batches:
            raise KeyboardInterrupt
        return super().embed_documents(texts)


def note_chunks(ctx, source):
    got = get_collection(ctx).get(where={"source": source}, include=["metadatas", "documents"])
    return sorted(
        (m["chunk_index"], m["note_hash"], d) for m, d in zip(got["metadatas"], got["documents"])
    )


def test_a_note_interrupted_with_part_of_its_chunks_is_loaded_again(ctx, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "long.md").write_text(LONG.format("First"))
    with pytest.raises(KeyboardInterrupt):
        load_notes(ctx, notes, InterruptAfter(1), LoadOptions(batch_size=1))
    assert len(note_chunks(ctx, "long.md")) == 1  # one of its three chunks stored
    report = load_notes(ctx, notes, KeywordEmbeddings(), LoadOptions(batch_size=1))
    assert report.unchanged == [] and report.updated == ["long.md"]
    assert len(note_chunks(ctx, "long.md")) == 3


def test_a_note_interrupted_between_old_and_new_chunks_is_loaded_again(ctx, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "long.md").write_text(LONG.format("Old"))
    load_notes(ctx, notes, KeywordEmbeddings())
    (notes / "long.md").write_text(LONG.format("New"))  # as many chunks, each changed
    with pytest.raises(KeyboardInterrupt):
        load_notes(ctx, notes, InterruptAfter(1), LoadOptions(batch_size=1))
    mixed = note_chunks(ctx, "long.md")
    assert len(mixed) == 3 and len({digest for _, digest, _ in mixed}) == 2
    report = load_notes(ctx, notes, KeywordEmbeddings(), LoadOptions(batch_size=1))
    assert report.unchanged == [] and report.updated == ["long.md"]
    chunks = note_chunks(ctx, "long.md")
    assert len({digest for _, digest, _ in chunks}) == 1
    assert all("Old" not in text for _, _, text in chunks)


@pytest.mark.parametrize(
    "chunk_size, chunk_overlap, parse_budget",
    [(100, 0, 5.0), (100, 99, 5.0), (1500, 300, 0.5)],
)
def test_load_options_at_their_bounds_are_accepted(chunk_size, chunk_overlap, parse_budget):
    LoadOptions(
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, parse_budget=parse_budget
    ).check()


@pytest.mark.parametrize(
    "chunk_size, chunk_overlap, parse_budget, message",
    [
        (99, 0, 5.0, "need chunk size >= 100 and 0 <= chunk overlap < chunk size"),
        (100, 100, 5.0, "need chunk size >= 100 and 0 <= chunk overlap < chunk size"),
        (100, -1, 5.0, "need chunk size >= 100 and 0 <= chunk overlap < chunk size"),
        (99, 100, 5.0, "need chunk size >= 100 and 0 <= chunk overlap < chunk size"),
        (1500, 300, 0.0, "need a parse budget above 0 seconds"),
    ],
)
def test_load_options_past_their_bounds_are_refused_with_what_is_needed(
    chunk_size, chunk_overlap, parse_budget, message
):
    options = LoadOptions(
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, parse_budget=parse_budget
    )
    with pytest.raises(ConfigError) as refused:
        options.check()
    assert str(refused.value) == message


def test_a_load_that_writes_bumps_the_generation_twice_and_keeps_its_counts(ctx, notes_copy):
    """Readers cache per generation: a load that writes must move it, one that doesn't must not."""
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    (notes_copy / "empty.md").write_text("")
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    first = IndexInfo.of(get_collection(ctx))
    assert first is not None and first.generation == 4
    assert first.image_notes == 1 and [n for n, _ in first.empty_notes] == ["empty.md"]

    load_notes(ctx, notes_copy, KeywordEmbeddings())  # nothing changed: nothing written
    assert IndexInfo.of(get_collection(ctx)).generation == 4

    (notes_copy / "personal" / "sourdough.md").write_text("# Sourdough\n\nOnly rye now.\n")
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    after = IndexInfo.of(get_collection(ctx))
    assert after.generation == 6
    assert (after.image_notes, after.empty_notes) == (first.image_notes, first.empty_notes)


@pytest.mark.parametrize(
    ("model", "document", "query"),
    [
        ("nomic-embed-text:latest", "search_document: ", "search_query: "),
        ("jeffh/intfloat-multilingual-e5-small:f16", "passage: ", "query: "),
        ("multilingual-e5-large", "passage: ", "query: "),
        ("e5-base-v2", "passage: ", "query: "),
        ("multilingual-e5-large-instruct", "", ""),  # takes an instruction, not a prefix
        ("all-minilm", "", ""),
        ("bge-m3", "", ""),
    ],
)
def test_each_model_family_gets_the_prefixes_it_was_trained_with(model, document, query):
    assert convention_for(model) == Convention(document, query)
