from pathlib import Path

import nbformat

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def test_notebooks_are_committed_without_outputs():
    names = sorted(NOTEBOOKS.glob("*.ipynb"))
    assert len(names) >= 2
    for path in names:
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            if cell.cell_type == "code":
                assert not cell.outputs and cell.execution_count is None, path.name
