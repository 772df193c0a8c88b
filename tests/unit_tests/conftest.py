"""Unit tests never touch the network: sockets are disabled (Unix sockets stay allowed for
asyncio's internal self-pipe), so any runtime download or model call fails the test."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from pytest_socket import disable_socket, enable_socket

from graph.index.ingest import load_notes
from graph.index.vectorstore import IndexInfo, get_collection
from tests.fakes import FakeModels


@pytest.fixture(autouse=True)
def _no_network():
    disable_socket(allow_unix_socket=True)
    yield
    enable_socket()


@pytest.fixture
def models() -> FakeModels:
    return FakeModels()


@pytest.fixture
def graded_vault(tmp_path, ctx, models):
    """Loads notes (file name to text) so that every section retrieved reaches the grader."""

    def load(notes: dict[str, str]):
        folder = tmp_path / "notes"
        folder.mkdir()
        for name, text in notes.items():
            (folder / name).write_text(text)
        graded = replace(ctx, score_threshold=0.0, k=len(notes))
        load_notes(graded, folder, models.embedder)
        return graded

    return load


@pytest.fixture
def notes_copy(tmp_path, sample_notes):
    target = tmp_path / "notes"
    shutil.copytree(sample_notes, target)
    return target


#: Per process: an index folder of each kind the tests have loaded (by their context, the
#: embedder's type and the notes' contents), copied for the next test that asks for the same.
_loaded_indexes: dict[tuple[object, ...], Path] = {}


@pytest.fixture
def loaded(ctx, notes_copy, models, tmp_path_factory):
    """The sample notes loaded into an embedded Chroma in a temp folder.

    The first test of a process that asks for an index loads it; later ones get a copy of its
    folder with their own notes folder recorded in it: a copy takes about 0.01 s, a load of
    the five notes 0.25 s, and 116 unit tests ask for one (under `make mutate`, every mutant
    runs in a new process, so each mutant's code loads the notes once).
    """
    notes = sorted(
        (p.relative_to(notes_copy).as_posix(), p.read_bytes())
        for p in notes_copy.rglob("*")
        if p.is_file()
    )
    key = (repr(replace(ctx, chroma_persist_directory="")), type(models.embedder), tuple(notes))
    folder = Path(ctx.chroma_persist_directory)
    if key in _loaded_indexes:
        shutil.copytree(_loaded_indexes[key], folder)
        collection = get_collection(ctx)
        replace(IndexInfo.of(collection), notes_dir=str(notes_copy.resolve())).record(collection)
    else:
        load_notes(ctx, notes_copy, models.embedder)
        _loaded_indexes[key] = tmp_path_factory.mktemp("loaded") / "chroma"
        shutil.copytree(folder, _loaded_indexes[key])
    models.embedder.calls = 0
    return ctx
