"""The package layout's import rules, enforced by walking every module's imports.

Layers, lowest first: ``graph.errors`` and ``graph.context`` (leaves) < ``graph.index`` (the
notes index) < the graph core (the rest of ``graph/``) < ``nodes`` < ``graph.builder`` <
``app.evaluation`` (the evaluation lab) < ``app.cli`` and ``app.serving`` (the ways in). A
module imports only its own layer and the ones below; ``app.cli`` and ``app.serving`` do not
know each other. And nowhere in the tree does a module import, directly or through others, a
module that imports it (imports inside functions included: they are deferred, not gone).
"""

import ast
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from app.cli.flags import FLAGS
from graph.context import Context
from graph.state import FRESH_RUN, RESULT_FIELDS, RunState

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ("app", "graph", "nodes")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def project_imports(path: Path) -> set[str]:
    return {m for m in imported_modules(path) if m.split(".")[0] in PROJECT}


def modules(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def under(module: str, *prefixes: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def offenders(paths: list[Path], allowed, root: Path = ROOT) -> set[str]:
    return {
        f"{path.relative_to(root)} imports {module}"
        for path in paths
        for module in project_imports(path)
        if not allowed(module)
    }


LEAVES = ("graph.errors", "graph.context", "graph.language")


def test_the_leaves_import_nothing_of_the_project():
    paths = [ROOT / "graph" / name for name in ("errors.py", "context.py", "language.py")]
    assert offenders(paths, lambda m: False) == set()


def test_the_index_imports_only_itself_and_the_leaves():
    allowed = lambda m: under(m, "graph.index", *LEAVES)  # noqa: E731
    assert offenders(modules("graph/index"), allowed) == set()


def test_the_graph_core_imports_neither_nodes_nor_the_application():
    core = [p for p in modules("graph") if "index" not in p.parts and p.name != "builder.py"]
    allowed = lambda m: under(m, "graph") and not under(m, "graph.builder")  # noqa: E731
    assert offenders(core, allowed) == set()


def test_nodes_import_the_graph_core_only():
    allowed = lambda m: under(m, "graph") and not under(m, "graph.builder")  # noqa: E731
    assert offenders(modules("nodes"), allowed) == set()


def test_the_builder_wires_graph_and_nodes_only():
    allowed = lambda m: under(m, "graph", "nodes")  # noqa: E731
    assert offenders([ROOT / "graph" / "builder.py"], allowed) == set()


def test_the_evaluation_lab_knows_no_way_in():
    allowed = lambda m: not under(m, "app.cli", "app.serving")  # noqa: E731
    assert offenders(modules("app/evaluation"), allowed) == set()


@pytest.mark.parametrize(
    ("room", "other"), [("app/cli", "app.serving"), ("app/serving", "app.cli")]
)
def test_the_command_line_and_serving_do_not_know_each_other(room, other):
    assert offenders(modules(room), lambda m: not under(m, other)) == set()


def test_the_rule_checker_sees_a_violation(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import os\nfrom graph.state import State\nimport nodes.route\n"
        "from app.cli import main\nfrom graph.index.retrieval import search_notes\n"
    )
    assert project_imports(bad) == {
        "graph.state",
        "nodes.route",
        "app.cli",
        "graph.index.retrieval",
    }
    index_rule = lambda m: under(m, "graph.index", *LEAVES)  # noqa: E731
    assert offenders([bad], index_rule, root=tmp_path) == {
        "bad.py imports graph.state",
        "bad.py imports nodes.route",
        "bad.py imports app.cli",
    }


def test_every_command_line_flag_names_a_context_field():
    assert set(FLAGS) <= {f.name for f in fields(Context)}


def test_a_new_run_resets_every_result_field():
    # messages accumulate, steps restart through NEW_RUN, attachments come from the input
    assert set(FRESH_RUN) == set(RunState.__annotations__) - {"messages", "steps", "attachments"}
    assert set(RESULT_FIELDS) == set(FRESH_RUN) | {"steps"}


def test_no_node_module_talks_to_chroma_or_ollama_directly():
    for path in (ROOT / "nodes").glob("*.py"):
        modules = imported_modules(path)
        assert not {m for m in modules if m.split(".")[0] in ("chromadb", "ollama")}, path
        assert "graph.errors" not in modules or path.name == "__init__.py", path


# --- no import circles, anywhere in the tree -------------------------------------------------

#: Every folder of Python the project holds, tests and benchmarks included.
TREE = ("app", "graph", "nodes", "bench", "tests", "packaging")


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(root: Path, folders=TREE) -> dict[str, set[str]]:
    """Each module of the tree under ``root`` and the modules of the tree it imports.

    ``from package import name`` imports the module ``package.name`` when there is one; a
    relative import is resolved against the importing module's package.
    """
    paths = {
        module_name(path, root): path
        for folder in folders
        for path in sorted((root / folder).rglob("*.py"))
        if ".venv" not in path.parts
    }
    edges: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in node.names)
        edges[name] = {m for m in found if m in paths and m != name}
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The modules that import each other, directly or through others (Tarjan's SCCs)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in sorted(edges.get(module, ())):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(edges) + 100))
    try:
        for module in sorted(edges):
            if module not in index:
                visit(module)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(found)


def test_no_module_imports_a_module_that_imports_it():
    assert circles(import_graph(ROOT)) == []


def test_the_circle_finder_sees_a_circle_through_others_and_inside_functions(tmp_path):
    pkg = tmp_path / "app" / "cli"
    pkg.mkdir(parents=True)
    (tmp_path / "app" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "main.py").write_text("from app.cli.chat import talk\n")
    (pkg / "chat.py").write_text("def talk():\n    from app.cli import settings\n")
    (pkg / "settings.py").write_text("from .main import run\n")
    (pkg / "output.py").write_text("import app.cli.chat\n")  # into the circle, not in it
    edges = import_graph(tmp_path, folders=("app",))
    assert edges["app.cli.settings"] == {"app.cli.main"}
    assert circles(edges) == [["app.cli.chat", "app.cli.main", "app.cli.settings"]]
    (pkg / "settings.py").write_text("import json\n")
    assert circles(import_graph(tmp_path, folders=("app",))) == []
