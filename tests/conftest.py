"""Shared test setup: every test gets its own data folders and a clean environment."""

from __future__ import annotations

import os

import pytest

from graph.context import Context


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith("RAG_") or name in ("OLLAMA_HOST",):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    from app.serving.context import server_settings
    from app.serving.policy import serving_policy
    from graph.index.vectorstore import forget_clients

    # The served settings are read from the environment once per process: each test's own.
    server_settings.cache_clear()
    serving_policy.cache_clear()
    forget_clients()
    yield
    forget_clients()
    server_settings.cache_clear()
    serving_policy.cache_clear()


@pytest.fixture
def sample_notes():
    from pathlib import Path

    return Path(__file__).parent / "sample_notes"


@pytest.fixture
def ctx(tmp_path) -> Context:
    return Context(
        chroma_persist_directory=str(tmp_path / "chroma"),
        collection_name="notes",
        embedding_model="fake-embed",
        score_threshold=0.1,  # keyword fake embeddings score lower than real models
    )
