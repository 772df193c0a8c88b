"""Where the index keeps files outside an index folder: the user's cache, per Chroma server.

An embedded index keeps its locks and catalogs in its own folder. A Chroma server's index
has no folder here, so its load locks and catalogs live in the user's cache, one name per
server (``server_id``), shared by every spelling of the server's URL.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from graph.index.locks import server_key
from graph.index.private import APP_FOLDER, app_folder

__all__ = ["APP_FOLDER", "cache_folder", "server_id"]


def cache_folder() -> Path:
    """This project's folder in the user's cache: ``$XDG_CACHE_HOME/notes-rag``.

    Or under ``~/.cache``; what is kept there is private (``graph.index.private``).
    """
    return app_folder("XDG_CACHE_HOME")


def server_id(url: str) -> str:
    """A short file-name-safe name of the Chroma server at ``url`` (see ``server_key``)."""
    return hashlib.sha256(server_key(url).encode()).hexdigest()[:12]
