"""``rag doctor`` against a real HTTP server (the stand-in) and an embedded index."""

from __future__ import annotations

import json

from tests.integration_tests.conftest import VISION_MODEL, rag


def test_doctor_passes_on_a_working_set_up(ollama_url, loaded_notes, workdir):
    result = rag(
        "doctor", "--json", "--vision-model", VISION_MODEL, url=ollama_url, workdir=workdir
    )
    out = json.loads(result.stdout)
    assert result.returncode == 0 == out["exit_code"], result.stdout
    checks = {c["name"]: c for c in out["checks"]}
    for name in ("chat model", "embedding model", "vision model", "chroma"):
        assert checks[name]["status"] == "ok", checks[name]
    # The stand-in serves as Ollama 0.13 does: it keeps only the prompt it read last.
    assert checks["ollama"]["status"] == "warn" and "0.30 or later" in checks["ollama"]["fix"]
    assert checks["collection notes"]["status"] == "ok"
    # Timed for real: whether the stand-in's tiny answers look serial depends on the machine,
    # so only the measurement is checked here (the verdicts are unit-tested).
    assert "two requests took" in checks["parallel grading"]["detail"]


def test_doctor_names_the_model_to_pull(ollama_url, workdir):
    result = rag("doctor", "-m", "no-such-model:1b", url=ollama_url, workdir=workdir)
    assert result.returncode == 2
    assert "`ollama pull no-such-model:1b`" in result.stdout
