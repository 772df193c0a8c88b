"""A git worktree of an earlier commit, for a bench that runs its code beside today's."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def worktree(commit: str, prefix: str) -> Iterator[tuple[Path, Path]]:
    """A temporary folder, and a worktree of ``commit`` in it; both removed afterwards."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        work = Path(tmp)
        tree = work / "tree"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(tree), commit],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        try:
            yield work, tree
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True
            )
