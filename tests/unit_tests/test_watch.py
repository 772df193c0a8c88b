"""`rag load --watch` in its own process: every change to the folder reaches the index."""

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from graph.index.retrieval import search_notes
from tests.fakes import KeywordEmbeddings

ROOT = Path(__file__).resolve().parents[2]
WATCHER = """
import sys
from app.cli.main import main
from tests.fakes import FakeModels
sys.exit(main(sys.argv[1:], models=FakeModels()))
"""


class Watcher:
    def __init__(self, ctx, folder):
        args = [
            sys.executable,
            "-c",
            WATCHER,
            "load",
            "--watch",
            "-f",
            str(folder),
            "-n",
            ctx.collection_name,
            "--persist-dir",
            ctx.chroma_persist_directory,
            "-e",
            ctx.embedding_model,
        ]
        self.proc = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # faulthandler: a watcher that does not stop prints its threads' stacks on SIGABRT
            env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONFAULTHANDLER": "1"},
            cwd=ROOT,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.errors: list[str] = []  # drained as it comes: a full pipe would block the watcher
        threading.Thread(target=self._read, daemon=True).start()
        self._error_reader = threading.Thread(target=self._read_errors, daemon=True)
        self._error_reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def _read_errors(self):
        for line in self.proc.stderr:
            self.errors.append(line)

    def stop(self, seconds: float = 30) -> tuple[int, str]:
        """Ctrl-C; the exit status and everything the watcher wrote to stderr."""
        self.proc.send_signal(signal.SIGINT)
        try:
            status = self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGABRT)
            self.proc.wait(timeout=10)
            self._error_reader.join(timeout=10)
            raise AssertionError("the watcher ignored Ctrl-C:\n" + "".join(self.errors)) from None
        self._error_reader.join(timeout=10)
        return status, "".join(self.errors)

    def expect(self, wanted: str, seconds: float = 60) -> list[str]:
        """Lines up to and including the first one equal to (or starting with) ``wanted``."""
        seen = []
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                assert self.proc.poll() is None, (seen, "".join(self.errors))
                continue
            seen.append(line)
            if line.startswith(wanted):
                return seen
        raise AssertionError(f"no {wanted!r} within {seconds} s; got {seen}")


def top_sources(ctx, question, k=3):
    result = search_notes(ctx, KeywordEmbeddings(), question, k=k)
    return [chunk["source"] for chunk in result.ranked]


@pytest.fixture
def watcher(ctx, notes_copy):
    w = Watcher(ctx, notes_copy)
    yield w
    if w.proc.poll() is None:
        w.proc.kill()
        w.proc.wait()


def test_watch_follows_create_edit_rename_delete_and_atomic_save(ctx, notes_copy, watcher):
    watcher.expect("notes: 5 added")
    watcher.expect("watching ")

    (notes_copy / "zebra.md").write_text("# Zebra\n\nThe zebra grazes near the waterhole.\n")
    watcher.expect("added zebra.md")
    assert top_sources(ctx, "zebra waterhole")[0] == "zebra.md"

    (notes_copy / "zebra.md").write_text("# Zebra\n\nThe zebra now sleeps under baobabs.\n")
    watcher.expect("updated zebra.md")
    result = search_notes(ctx, KeywordEmbeddings(), "zebra baobabs", k=1)
    assert "baobabs" in result.ranked[0]["content"]

    (notes_copy / "zebra.md").rename(notes_copy / "savanna.md")
    lines = watcher.expect("removed zebra.md")
    assert "added savanna.md" in lines
    assert top_sources(ctx, "zebra baobabs")[0] == "savanna.md"

    # An editor's atomic save: write a hidden temporary file, then rename it over the note.
    temporary = notes_copy / ".savanna.md.tmp"
    temporary.write_text("# Savanna\n\nGiraffes browse the acacia canopy.\n")
    os.replace(temporary, notes_copy / "savanna.md")
    watcher.expect("updated savanna.md")
    assert top_sources(ctx, "giraffes acacia canopy")[0] == "savanna.md"

    (notes_copy / "savanna.md").unlink()
    watcher.expect("removed savanna.md")
    assert "savanna.md" not in top_sources(ctx, "giraffes acacia canopy", k=10)

    status, errors = watcher.stop()
    assert status == 130
    assert "stopped watching" in errors
    # the index is consistent: a plain re-load finds nothing to do
    from graph.index.ingest import load_notes

    report = load_notes(ctx, notes_copy, KeywordEmbeddings())
    assert len(report.unchanged) == 5 and not (report.added or report.updated or report.removed)
