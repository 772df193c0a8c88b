"""Folders and files that hold note text, questions or answers: the user's alone.

The index (Chroma's files and the catalog hold note text), the conversations of ``rag chat``,
its input history and the cache (copies of notes, catalogs of a Chroma server's collections)
are created mode 0700 (folders) and 0600 (files), as the XDG base directory rules ask of
folders an application creates. The project's own folders (``notes-rag`` in the XDG data,
state and cache folders) and everything the project keeps in them are made private even when
they exist already: earlier versions created them 0755 and 0644. A folder the user names
(``rag load -d DIR``) that exists already keeps its mode; what the project creates in it is
private.
"""

from __future__ import annotations

import os
from pathlib import Path

#: This project's folder inside the user's data, state and cache folders.
APP_FOLDER = "notes-rag"

#: The XDG base folders the project keeps its own folder in, with their defaults under $HOME.
_XDG_BASES = {
    "XDG_DATA_HOME": (".local", "share"),
    "XDG_STATE_HOME": (".local", "state"),
    "XDG_CACHE_HOME": (".cache",),
}


def app_folder(variable: str) -> Path:
    """The project's folder in the XDG base folder ``variable`` names (``XDG_CACHE_HOME``...).

    An unset or empty variable means its default under the home folder, as the XDG base
    directory rules say: an empty value must not become a folder relative to wherever the
    command happens to run.
    """
    base = os.environ.get(variable, "").strip() or str(Path.home().joinpath(*_XDG_BASES[variable]))
    return Path(base) / APP_FOLDER


def _own(path: Path) -> bool:
    """Whether ``path`` is one of the project's own folders or inside one."""
    return any(path == own or own in path.parents for own in map(app_folder, _XDG_BASES))


def private_folder(path: Path) -> Path:
    """Create ``path`` and its missing parents mode 0700; returns ``path``.

    The project's own folders, and those inside them, are made 0700 even when they exist.
    """
    missing: list[Path] = []
    level = path
    while not level.exists() and level != level.parent:
        missing.append(level)
        level = level.parent
    for folder in reversed(missing):
        folder.mkdir(mode=0o700, exist_ok=True)
    for folder in (path, *path.parents):
        if folder in missing or _own(folder):
            if folder.stat().st_mode & 0o077:
                folder.chmod(0o700)
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` (empty) mode 0600 in a private folder, or make an existing one 0600."""
    private_folder(path.parent)
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    if path.stat().st_mode & 0o077:
        path.chmod(0o600)
    return path
