"""Shared test setup: every test gets its own data folders and a clean environment."""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

import pytest

from graph.context import Context

#: The test files that take longest, longest first (each 10-60 s on 2 cores). `make test`
#: hands whole files to its workers in collection order (--dist loadfile with
#: --no-loadscope-reorder; xdist's own order puts files with few tests last, and a long
#: file with one test handed out last kept one worker busy for a minute while the other
#: waited). The other files follow in their usual order.
LONGEST_FIRST = (
    "integration_tests/test_rag_cli.py",
    "integration_tests/test_chat_page.py",
    "integration_tests/test_served_exposure.py",
    "integration_tests/test_retrieval_eval.py",
    "unit_tests/test_ingest.py",
    "integration_tests/test_reasoning.py",
    "unit_tests/test_hostile_notes.py",
    "unit_tests/test_chunk_stability.py",
    "integration_tests/test_notebooks.py",
    "integration_tests/test_eval.py",
    "integration_tests/test_served_security.py",
    "integration_tests/test_live_index.py",
    "integration_tests/test_rag_chat.py",
    "integration_tests/test_openai_client.py",
    "unit_tests/test_arithmetic.py",
    "unit_tests/test_cli_output.py",
    "unit_tests/test_cross_process.py",
    "unit_tests/test_watch.py",
    "integration_tests/test_langsmith_tracing.py",
)


if os.environ.get("TESTS_PARSE_IN_PROCESS") == "1":
    # `make mutate` sets this. Each mutant runs in a fresh fork, where the first load of notes
    # starts the loader's parse worker, a new Python process importing unstructured: 1.6 s of
    # a killed mutant's 2.6 s. Here notes are parsed in the test's own process instead, with
    # unstructured imported once, before the fork server forks. Everything else stays the
    # same but the per-note deadline: no mutated module implements it, and its tests
    # (test_hostile_notes.py) are in no mutation set.
    from graph.index import parsing

    parsing.warm_up()  # in mutmut's fork server, before it forks

    # mutmut calls every function of a mutated module through a trampoline (more frames a
    # call): the calculator's parser refusing 300 nested parentheses by its own limit would
    # pass Python's default recursion limit of 1,000 first, there and nowhere else.
    sys.setrecursionlimit(10_000)

    def _parse_here(self, function, shared, jobs, budget, workers):
        return [parsing.run_job(function, shared, job) for job in jobs]

    parsing.ParserPool.run = _parse_here

    # A note's sections depend on its text alone, and no mutation set mutates the parsing
    # (graph/index/chunking.py): each text is parsed once per mutation run, not once per
    # load. The ingest set's tests parse the same 24 texts 356 times; parsed once, the sum of
    # their times went from 14.95 s to 11.96 s. mutmut runs the tests once in a child process
    # (its statistics run) before the fork server starts, so the sections go to a file there,
    # read by every mutant's fork.
    import pickle

    from graph.index import chunking

    sections_file = Path.cwd() / ".parsed-sections.pickle"
    known_sections: dict[str, list[chunking.Section]] = {}
    if sections_file.exists():
        known_sections.update(pickle.loads(sections_file.read_bytes()))
    sections_read = len(known_sections)
    parse_sections = chunking.partition_note

    def _partition_once(text: str) -> list[chunking.Section]:
        if text not in known_sections:
            known_sections[text] = parse_sections(text)
        # copies: a caller may append to a section's parts
        return [
            chunking.Section(s.heading, list(s.parts), list(s.images)) for s in known_sections[text]
        ]

    chunking.partition_note = _partition_once

    def pytest_sessionfinish(session):
        if len(known_sections) > sections_read:
            part = sections_file.with_name(f"{sections_file.name}.{os.getpid()}")
            part.write_bytes(pickle.dumps(known_sections))
            part.replace(sections_file)
        # The fork server's warm-up session ends here, with every module imported: its objects
        # move out of the garbage collector's reach, so that a mutant's collections neither
        # walk them nor copy their memory pages into the fork.
        gc.freeze()


def pytest_collection_modifyitems(items):
    """The longest files first; the sort is stable, so each file's own order is kept."""
    here = Path(__file__).parent
    order = {name: rank for rank, name in enumerate(LONGEST_FIRST)}

    def rank(item: pytest.Item) -> int:
        return order.get(Path(item.fspath).relative_to(here).as_posix(), len(order))

    items.sort(key=rank)


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
    from app.serving.run_queue import forget_admitted_runs
    from graph.fit import ratios
    from graph.index.vectorstore import forget_clients

    # The served settings are read from the environment once per process: each test's own.
    server_settings.cache_clear()
    serving_policy.cache_clear()
    forget_admitted_runs()
    forget_clients()
    # Characters per token seen in a model's replies, per process: a fake model's usage
    # figures in one test would change what fits into another's prompt.
    ratios.forget()
    yield
    ratios.forget()
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
