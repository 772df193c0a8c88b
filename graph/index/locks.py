"""Cross-process exclusive locks on a file (``flock``), for work two processes must not overlap."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO
from urllib.parse import urlparse

from graph.index.private import private_folder


@contextmanager
def file_lock(path: Path, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created with its folder); waits while another has it.

    ``on_wait`` runs once if the lock is taken by someone else, before waiting. Closing the
    file releases the lock, so a crashed holder never leaves it stuck. The holder may delete
    the file (:func:`remove_lock_file`, when what it guards is gone): whoever was waiting
    then holds a lock on a deleted file, notices, and locks the file at ``path`` instead, so
    two holders never both believe they have it.
    """
    private_folder(path.parent)  # the index folder or the cache: they hold note text
    waited = False
    while True:
        with _open_lock_file(path) as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if on_wait is not None and not waited:
                    on_wait()
                waited = True
                fcntl.flock(handle, fcntl.LOCK_EX)
            if _is_at(handle.fileno(), path):
                yield
                return


def _open_lock_file(path: Path) -> IO[str]:
    """The lock file, created 0600 (made so if an earlier version left it 0644).

    A symbolic link at ``path`` is refused (``OSError``), never followed.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    handle = os.fdopen(os.open(path, flags, 0o600), "a")
    try:
        if os.fstat(handle.fileno()).st_mode & 0o077:
            os.fchmod(handle.fileno(), 0o600)
    except OSError:
        handle.close()
        raise
    return handle


def _is_at(descriptor: int, path: Path) -> bool:
    """Whether the open file is still the one at ``path`` (not deleted or replaced)."""
    try:
        here = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(descriptor)
    return (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino)


def remove_lock_file(path: Path) -> None:
    """Delete a lock file whose lock the caller holds (:func:`file_lock` copes with it)."""
    path.unlink(missing_ok=True)


def server_key(url: str) -> str:
    """One spelling per Chroma server, so every way of writing its URL shares one lock.

    ``http://localhost:8000``, ``http://127.0.0.1:8000/`` and ``http://LOCALHOST`` name the
    same server (8000 is the port the client uses when none is given, 443 for https).
    """
    parsed = urlparse(url.strip())
    host = (parsed.hostname or "").lower()
    if not host:
        return url.strip().rstrip("/")
    if host == "localhost":
        host = "127.0.0.1"
    scheme = parsed.scheme.lower() or "http"
    try:
        port = parsed.port
    except ValueError:  # an invalid port: the client refuses it later; keep the raw text
        return url.strip().rstrip("/")
    port = port or (443 if scheme == "https" else 8000)
    return f"{scheme}://{host}:{port}{parsed.path.rstrip('/')}"
