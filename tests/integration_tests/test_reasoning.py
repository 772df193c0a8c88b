"""Reasoning models over the real HTTP path: the stand-in in its reasoning modes.

Every chat request is answered "yes" (the stand-in's ``--reply``), after reasoning that
says "no": a client that reads the reasoning as the reply routes, grades and answers wrong.
"""

from __future__ import annotations

import json
import shutil
import sys

import pytest

from tests.integration_tests.conftest import REAL_OLLAMA, ROOT, _start, rag

pytestmark = pytest.mark.skipif(
    bool(REAL_OLLAMA), reason="needs the stand-in's reasoning mode (RAG_TEST_OLLAMA_HOST is set)"
)

VISION = "llava-standin"
IMAGE = ROOT / "tests" / "sample_notes" / "tech" / "img" / "network.png"


def _stand_in(*flags: str):
    # The model only embeds here (every chat request answers "yes"): the tiny one will do.
    proc, url = _start(
        [sys.executable, "-m", "tests.ollama_stand_in", "--port", "0", "--tiny-model"]
        + ["--reply", "yes", *flags]
    )
    return proc, url


@pytest.fixture(scope="module", params=["bool", "levels"])
def thinker(request, tmp_path_factory):
    """(url, workdir) of a stand-in whose chat models reason, with the sample notes loaded."""
    mode = "--reasoning" if request.param == "bool" else "--reasoning-levels"
    proc, url = _stand_in(mode, "--vision-model", VISION)
    workdir = tmp_path_factory.mktemp(f"reasoning-{request.param}")
    shutil.copytree(ROOT / "tests" / "sample_notes", workdir / "notes")
    loaded = rag("load", "-f", str(workdir / "notes"), url=url, workdir=workdir)
    assert loaded.returncode == 0, loaded.stderr
    yield url, workdir
    proc.terminate()
    assert proc.wait(timeout=20) == 0


def ask(thinker, *args: str) -> dict:
    url, workdir = thinker
    result = rag("ask", "--json", "--threshold", "0", "-k", "2", *args, url=url, workdir=workdir)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_arithmetic_reaches_the_calculator(thinker):
    out = ask(thinker, "-q", "What is 12 + 30?")
    assert out["route"] == "calculator", out["steps"]
    assert out["answer"].endswith("= 42")


def test_image_question_reaches_the_image_node(thinker):
    out = ask(thinker, "-q", "What does this picture show?", "-m", VISION, "--image", str(IMAGE))
    assert out["route"] == "image", out["steps"]
    assert out["answer"] == "yes"


def test_grades_are_read_and_the_answer_has_no_reasoning(thinker):
    out = ask(thinker, "-q", "How should I practise whiteboarding?")
    assert out["route"] == "retrieve"
    assert out["grades"], out["steps"]
    assert all(g["relevant"] and not g["fallback"] for g in out["grades"]), out["grades"]
    assert out["answer"] == "yes"


def test_think_shows_the_reasoning_apart_from_the_answer(thinker):
    url, workdir = thinker
    result = rag(
        "ask",
        "-q",
        "How should I practise whiteboarding?",
        "--threshold",
        "0",
        "-k",
        "2",
        "--think",
        url=url,
        workdir=workdir,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("yes\n")
    assert "no wait" not in result.stdout
    assert "no wait" in result.stderr


def test_old_server_gets_plain_json_format(tmp_path):
    """Ollama < 0.5 rejects a JSON-schema ``format``: grading must still work."""
    proc, url = _stand_in("--version", "0.4.7", "--no-json-schema")
    try:
        shutil.copytree(ROOT / "tests" / "sample_notes", tmp_path / "notes")
        assert rag("load", "-f", str(tmp_path / "notes"), url=url, workdir=tmp_path).returncode == 0
        result = rag(
            "ask",
            "--json",
            "-q",
            "How should I practise whiteboarding?",
            "--threshold",
            "0",
            "-k",
            "2",
            url=url,
            workdir=tmp_path,
        )
        assert result.returncode == 0, result.stderr
        out = json.loads(result.stdout)
        assert out["grades"] and not any(g["fallback"] for g in out["grades"]), out["grades"]
    finally:
        proc.terminate()
        proc.wait(timeout=20)
