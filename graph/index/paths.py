"""Where the index keeps files outside an index folder: the user's cache, per Chroma server.

An embedded index keeps its locks and catalogs in its own folder. A Chroma server's index
has no folder here, so its load locks and catalogs live in the user's cache, one name per
server (``server_id``), shared by every spelling of the server's URL.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from graph.index.locks import server_key

#: This project's folder inside the user's cache folder.
APP_FOLDER = "notes-rag"


def cache_folder() -> Path:
    """This project's folder in the user's cache: ``$XDG_CACHE_HOME/notes-rag``.

    An unset or empty ``XDG_CACHE_HOME`` means ``~/.cache``, as the XDG base directory rules
    say and as ``graph.context.default_chroma_dir`` reads ``XDG_DATA_HOME``: an empty value
    must not become a folder relative to wherever the command happens to run.
    """
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / APP_FOLDER


def server_id(url: str) -> str:
    """A short file-name-safe name of the Chroma server at ``url`` (see ``server_key``)."""
    return hashlib.sha256(server_key(url).encode()).hexdigest()[:12]
