"""The notebooks run top to bottom against the model server, so they never rot."""

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


@pytest.mark.parametrize("name", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))
def test_notebook_runs(name, ollama_url, tmp_path, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", ollama_url)
    monkeypatch.setenv("RAG_CHROMA_DIR", str(tmp_path / "chroma"))
    monkeypatch.setenv("RAG_SCORE_THRESHOLD", "0")
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    ).execute()
    outputs = "".join(
        out.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
    )
    assert "Traceback" not in outputs
    if name.startswith("01"):
        assert "456*4343 - 56/(443-11+4) ≈ 1980407.87155963" in outputs
        assert "0 added, 0 updated, 0 removed, 5 unchanged" in outputs
        assert "== route" in outputs
    elif name.startswith("02"):
        assert "hit@k" in outputs and "1500" in outputs
    else:  # evaluating one's own notes with app.evaluation
        assert "5 added, 0 updated, 0 removed" in outputs
        assert "5 questions on sample_notes/, 4 answerable" in outputs
        assert "| hybrid | 0.3 |" in outputs and "hybrid MRR " in outputs
        assert "graph: 2/2" in outputs and "| correct |" in outputs
        assert re.search(r"\n\d kept of \d sections", outputs)
