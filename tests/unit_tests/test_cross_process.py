"""One embedded index, several processes: a reader sees every load another process makes."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from graph.index.ingest import load_notes
from graph.index.retrieval import search_notes
from graph.index.vectorstore import (
    WRITTEN_FILE,
    forget_client,
    mark_written,
    open_client,
    reading,
)
from tests.fakes import KeywordEmbeddings

ROOT = Path(__file__).resolve().parents[2]

# Another process that loads notes on request: each request is served by a fork of one
# interpreter that has imported the loader (importing it costs seconds; a fork, milliseconds).
# The parent opens no index, so every load runs in a process with a client of its own.
LOADER = """
import os
import sys
from graph.context import Context
from graph.index.chunking import partition_note
from graph.index.ingest import load_notes
from tests.fakes import KeywordEmbeddings
partition_note("# Title\\n\\nunstructured is imported on the first note.\\n")
print("READY", flush=True)
for line in sys.stdin:
    index, folder = line.rstrip("\\n").split("\\t")
    pid = os.fork()
    if pid == 0:
        ctx = Context(chroma_persist_directory=index, collection_name="notes",
                      embedding_model="fake-embed")
        print("RESULT", load_notes(ctx, folder, KeywordEmbeddings()).summary(), flush=True)
        os._exit(0)
    print("EXIT", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""


@pytest.fixture(scope="module")
def loader():
    proc = subprocess.Popen(
        [sys.executable, "-c", LOADER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    assert proc.stdout.readline() == "READY\n"
    yield proc
    proc.stdin.close()
    proc.wait(timeout=30)


def load_in_another_process(loader, ctx, folder):
    loader.stdin.write(f"{ctx.chroma_persist_directory}\t{folder}\n")
    loader.stdin.flush()
    lines = []
    while not (lines and lines[-1].startswith("EXIT")):
        line = loader.stdout.readline()
        assert line, "the loader process ended: " + "".join(lines)
        lines.append(line)
    assert lines[-1] == "EXIT 0\n", lines
    return "".join(lines)


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_reader_sees_notes_added_edited_and_deleted_by_another_process(
    ctx, notes_copy, mode, loader
):
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    embedder = KeywordEmbeddings()
    question = "zanzibar quokka marmalade"
    before = search_notes(ctx, embedder, question, k=20, mode=mode)
    assert "new/zanzibar.md" not in {c["source"] for c in before.ranked}

    (notes_copy / "new").mkdir()
    (notes_copy / "new" / "zanzibar.md").write_text(
        "# Zanzibar\n\nThe quokka eats marmalade in Zanzibar.\n"
    )
    (notes_copy / "tech" / "python-tips.md").unlink()
    assert "1 added" in load_in_another_process(loader, ctx, notes_copy)

    after = search_notes(ctx, embedder, question, k=20, mode=mode)
    found = {c["source"] for c in after.ranked}
    assert "new/zanzibar.md" in found
    assert after.ranked[0]["source"] == "new/zanzibar.md"
    assert "tech/python-tips.md" not in found

    (notes_copy / "new" / "zanzibar.md").write_text("# Zanzibar\n\nNow about pelicans only.\n")
    assert "1 updated" in load_in_another_process(loader, ctx, notes_copy)
    edited = search_notes(ctx, embedder, "pelicans", k=3, mode=mode)
    assert edited.ranked[0]["source"] == "new/zanzibar.md"
    assert "pelicans" in edited.ranked[0]["content"]


def test_own_writes_do_not_reopen_the_client(ctx, notes_copy):
    load_notes(ctx, notes_copy, KeywordEmbeddings())
    client = open_client(ctx)
    mark_written(ctx)
    assert open_client(ctx) is client
    # another process's marker: a token this process has not written
    (Path(ctx.chroma_persist_directory) / WRITTEN_FILE).write_text("someone-else")
    assert open_client(ctx) is not client


def test_a_read_failing_inside_chroma_is_retried_once_on_a_fresh_client(ctx, notes_copy):
    from chromadb.errors import InternalError

    load_notes(ctx, notes_copy, KeywordEmbeddings())
    clients = []

    def read():
        clients.append(open_client(ctx))
        if len(clients) == 1:
            raise InternalError("Error finding id")
        return "ok"

    assert reading(ctx, read) == "ok"
    assert len(clients) == 2 and clients[0] is not clients[1]

    def always_fails():
        raise InternalError("Error finding id")

    with pytest.raises(InternalError):
        reading(ctx, always_fails)

    def other_error():
        raise ValueError("not chroma")

    with pytest.raises(ValueError):
        reading(ctx, other_error)
    forget_client(ctx)
