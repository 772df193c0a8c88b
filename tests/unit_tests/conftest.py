"""Unit tests never touch the network: sockets are disabled (Unix sockets stay allowed for
asyncio's internal self-pipe), so any runtime download or model call fails the test."""

from __future__ import annotations

import shutil

import pytest
from pytest_socket import disable_socket, enable_socket

from graph.index.ingest import load_notes
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
def notes_copy(tmp_path, sample_notes):
    target = tmp_path / "notes"
    shutil.copytree(sample_notes, target)
    return target


@pytest.fixture
def loaded(ctx, notes_copy, models):
    """The sample notes loaded into an embedded Chroma in a temp folder."""
    load_notes(ctx, notes_copy, models.embedder)
    models.embedder.calls = 0
    return ctx
