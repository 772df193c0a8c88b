"""Prompts fit num_ctx: lowest-ranked chunks dropped, a lone chunk cut, said in steps."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

import nodes.grade_documents as grading
from app.cli.main import main
from graph.builder import build_graph
from graph.fit import (
    TEMPLATE_TOKENS,
    TokenRatios,
    estimate_tokens,
    fit_chunks,
    ratios,
    reply_reserve,
)
from graph.index.ingest import load_notes
from tests.fakes import FakeModels

INSTRUCTIONS = "Answer from the context only.\n" * 10  # 300 characters


def chunk(n: int, size: int) -> dict:
    return {"source": f"note{n}.md", "heading": f"H{n}", "content": f"{n}" * size}


def render(chunks: list[dict]) -> str:
    return INSTRUCTIONS + "".join(c["content"] for c in chunks) + "\nthe question?"


@pytest.fixture(autouse=True)
def _no_observations():
    ratios.forget()
    yield
    ratios.forget()


def test_a_prompt_that_fits_is_left_alone():
    chunks = [chunk(i, 300) for i in range(3)]
    kept, steps = fit_chunks(chunks, render, num_ctx=2048, reply_tokens=100)
    assert kept == chunks and steps == []


def test_lowest_ranked_chunks_are_dropped_first():
    chunks = [chunk(i, 900) for i in range(5)]
    # 1024 - 100 - 32 = 892 tokens, at 3 characters each 2676: instructions + 2 chunks fit.
    kept, steps = fit_chunks(chunks, render, num_ctx=1024, reply_tokens=100)
    assert [c["source"] for c in kept] == ["note0.md", "note1.md"]
    assert steps == [
        "dropped 3 lowest-ranked chunk(s) of 5 to fit num_ctx 1024 "
        f"(prompt about {estimate_tokens(render(kept))} tokens, 100 kept for the reply)"
    ]
    assert estimate_tokens(render(kept)) <= 1024 - 100 - TEMPLATE_TOKENS


def test_a_lone_chunk_too_long_loses_its_tail():
    chunks = [{"source": "big.md", "heading": "", "content": "a" * 5000 + "TAIL"}]
    kept, steps = fit_chunks(chunks, render, num_ctx=1024, reply_tokens=100)
    content = kept[0]["content"]
    assert content == "a" * len(content) and 0 < len(content) < 5000
    assert estimate_tokens(render(kept)) <= 1024 - 100 - TEMPLATE_TOKENS
    assert steps == [
        f"truncated big.md > (top) to {len(content)} of 5004 characters to fit num_ctx 1024"
    ]
    assert chunks[0]["content"].endswith("TAIL")  # the caller's chunk is not changed


def test_dropping_then_truncating():
    chunks = [chunk(0, 4000), chunk(1, 100)]
    kept, steps = fit_chunks(chunks, render, num_ctx=1024, reply_tokens=100)
    assert len(kept) == 1 and len(kept[0]["content"]) < 4000
    assert steps[0].startswith("dropped 1 lowest-ranked chunk(s) of 2")
    assert steps[1].startswith("truncated note0.md > H0 to ")


def test_instructions_alone_too_long_are_reported():
    kept, steps = fit_chunks(
        [chunk(0, 10)], lambda cs: "x" * 4000 + cs[0]["content"], num_ctx=1024, reply_tokens=100
    )
    assert kept[0]["content"] == ""
    assert "raise num_ctx" in steps[-1]


def test_the_estimate_learns_from_ollamas_counts():
    seen = TokenRatios()
    assert seen.chars_per_token("m") == 3.0
    seen.record("m", 100, 50)  # too short to say anything
    assert seen.chars_per_token("m") == 3.0
    seen.record("m", 4000, 1600)  # 2.5: denser than the default
    seen.record("m", 4000, 400)  # a cached prefix: looks cheaper, ignored by the minimum
    assert seen.chars_per_token("m") == 2.5
    assert seen.chars_per_token("other") == 3.0


def test_reply_reserve():
    assert reply_reserve(24, 8192) == 24
    assert reply_reserve(None, 8192) == 1024
    assert reply_reserve(None, 1024) == 256


@pytest.fixture
def long_notes(tmp_path):
    """Five notes of one long section each (about 1400 characters, one chunk apiece)."""
    folder = tmp_path / "long"
    folder.mkdir()
    sentence = "Practise whiteboarding interviews by explaining each step aloud. "
    for n in range(5):
        (folder / f"note{n}.md").write_text(f"# Whiteboarding {n}\n\n{sentence * 21}\n")
    return folder


@pytest.fixture
def loaded_long(ctx, long_notes):
    models = FakeModels()
    load_notes(ctx, long_notes, models.embedder)
    return replace(ctx, score_threshold=0.0, k=5)


def ask_with_window(context, num_ctx):
    """The graph's result for one question with this context window, and the fakes asked."""
    models = FakeModels()
    out = build_graph(models=models).invoke(
        {"question": "How do I practise whiteboarding interviews?"},
        context=replace(context, num_ctx=num_ctx),
    )
    return models, out


def test_small_num_ctx_drops_chunks_before_answering_and_says_so(loaded_long):
    models, out = ask_with_window(loaded_long, 1024)
    fitted = [s for s in out["steps"] if s.startswith("generate: dropped")]
    assert fitted, out["steps"]
    prompt = models.prompts("generate")[0]
    budget = 1024 - reply_reserve(None, 1024) - TEMPLATE_TOKENS
    assert estimate_tokens(prompt) <= budget
    # the sources are the chunks that were sent, not the ones dropped
    assert len(out["sources"]) <= len(out["documents"])
    assert all(f'source="{s["path"]}"' in prompt for s in out["sources"])


def test_grading_cuts_a_chunk_that_would_not_fit(loaded_long, monkeypatch):
    # Each section graded whole: a question's window of it would fit (and a section sharing
    # no word with the question is still graded whole, so it must still be cut).
    monkeypatch.setattr(grading, "GRADE_WINDOW", 0)
    models, out = ask_with_window(loaded_long, 512)
    cut = [s for s in out["steps"] if s.startswith("grade_documents: truncated")]
    assert cut and all(s.endswith("(for grading)") for s in cut), out["steps"]
    for prompt in models.prompts("grade"):
        assert estimate_tokens(prompt) <= 512 - 24 - TEMPLATE_TOKENS
        # the instructions and the question are kept whole; the note's tail was cut, its
        # closing tag kept
        assert "no preamble or explanation." in prompt
        assert re.search(r"\n</note>\n\nQuestion: [^\n]+\?$", prompt.rstrip()), prompt[-300:]


def test_verbose_ask_shows_the_fitting(long_notes, tmp_path, capsys):
    models = FakeModels()
    db = ["--persist-dir", str(tmp_path / "db"), "-e", "fake-embed", "-n", "notes"]
    assert main(["load", "-f", str(long_notes), *db], models=models) == 0
    capsys.readouterr()
    argv = ["ask", "-v", "-q", "How do I practise whiteboarding?", "--threshold", "0", *db]
    assert main([*argv, "--num-ctx", "1024", "-k", "5"], models=models) == 0
    assert "[generate: dropped " in capsys.readouterr().err
