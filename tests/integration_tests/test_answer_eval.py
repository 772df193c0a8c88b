"""`rag eval --answers` end to end, CI-sized: the first 3 held-out questions of
tests/answer_eval_set.json (one of each kind), both designs, over the real HTTP path to the
stand-in's tiny model. It keeps the harness from rotting: the report's shape, every
question's route, grades and work, and Ollama's token counts reaching it. The tiny model
answers nonsense, so no figure of answer quality is checked here (docs/quality.md)."""

import json
from pathlib import Path

import pytest

from tests.integration_tests.conftest import rag

ROOT = Path(__file__).resolve().parents[2]
SET = ROOT / "tests" / "answer_eval_set.json"
K = 3
QUESTIONS = 3


@pytest.fixture(scope="module")
def answered(ollama_url, workdir):
    report = workdir / "answer-eval" / "report.json"
    result = rag(
        "eval",
        "--set",
        str(SET),
        "--answers",
        "--limit",
        str(QUESTIONS),
        "-n",
        "answer-eval",
        "-k",
        str(K),
        "--threshold",
        "0",  # every retrieved chunk reaches the grader: the tiny model's scores are noise
        "--report",
        str(report),
        url=ollama_url,
        workdir=workdir,
    )
    assert result.returncode == 0, result.stderr
    return result, json.loads(report.read_text())


def test_both_designs_answer_the_same_questions(answered):
    _, report = answered
    labelled = json.loads(SET.read_text())["questions"]
    first = [q["id"] for q in labelled if q["split"] == "heldout"][:QUESTIONS]
    assert (report["split"], report["k"], report["score_threshold"]) == ("heldout", K, 0.0)
    assert list(report["designs"]) == ["graph", "classic"]
    for design in report["designs"].values():
        rows = design["questions"]
        assert [row["id"] for row in rows] == first
        assert {row["kind"] for row in rows} == {"single", "multi-fact", "near-miss"}
        for row in rows:
            assert row["error"] is None
            assert row["route"] == "retrieve"
            assert len(row["grades"]) == K  # no floor: every retrieved chunk graded
            assert {"source", "heading", "relevant", "fallback", "expected"} <= set(
                row["grades"][0]
            )
            assert isinstance(row["abstained"], bool) and isinstance(row["correct"], bool)
            assert bool(row["facts"]) == row["answerable"]  # every answerable one has facts
            assert row["work"]["wall_s"] > 0


def test_every_call_reports_ollamas_token_counts(answered):
    _, report = answered
    for name, design in report["designs"].items():
        work, by_purpose = design["summary"]["work"], design["summary"]["by_purpose"]
        assert work["unmetered"] == 0, name
        assert work["prompt_tokens"] > 0 and work["generated_tokens"] > 0, name
        assert by_purpose["grade"]["calls"] >= QUESTIONS * K, name
        assert by_purpose["grade"]["prompt_tokens"] > 0, name
        for row in design["questions"]:
            assert row["work"]["calls"] == sum(
                p["calls"] for p in row["work"]["by_purpose"].values()
            )
    classic = report["designs"]["classic"]["summary"]["by_purpose"]
    assert classic["route_calculator"]["calls"] == classic["route_image"]["calls"] == QUESTIONS
    assert classic["grade"]["calls"] == QUESTIONS * K  # one call per chunk, no retry
    assert "route_calculator" not in report["designs"]["graph"]["summary"]["by_purpose"]


def test_the_table_is_printed_and_progress_goes_to_stderr(answered):
    result, _ = answered
    assert "| measure | graph | classic |" in result.stdout
    assert "| prompt tokens |" in result.stdout and "| grade |" in result.stdout
    assert f"[classic {QUESTIONS}/{QUESTIONS}]" in result.stderr
