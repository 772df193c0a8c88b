"""The package layout's one rule: the index never imports the graph above it."""

import ast
from pathlib import Path

from graph.state import FRESH_RUN, RESULT_FIELDS, RunState

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("nodes", "graph.builder", "graph.state", "graph.routing")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_index_package_imports_nothing_above_it():
    offenders = {
        f"{path.relative_to(ROOT)} imports {module}"
        for path in (ROOT / "graph" / "index").glob("*.py")
        for module in imported_modules(path)
        if any(module == f or module.startswith(f + ".") for f in FORBIDDEN)
    }
    assert not offenders


def test_the_rule_checker_sees_a_violation(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from graph.state import State\nimport nodes.route\n")
    assert {"graph.state", "nodes.route"} <= imported_modules(bad)


def test_a_new_run_resets_every_result_field():
    # messages accumulate, steps restart through NEW_RUN, attachments come from the input
    assert set(FRESH_RUN) == set(RunState.__annotations__) - {"messages", "steps", "attachments"}
    assert set(RESULT_FIELDS) == set(FRESH_RUN) | {"steps"}


def test_no_node_module_talks_to_chroma_or_ollama_directly():
    for path in (ROOT / "nodes").glob("*.py"):
        modules = imported_modules(path)
        assert not {m for m in modules if m.split(".")[0] in ("chromadb", "ollama")}, path
        assert "graph.errors" not in modules or path.name == "__init__.py", path
