"""Folders and files that hold note text, questions or answers: the user's alone.

The index (Chroma's files and the catalog hold note text), the conversations of ``rag chat``,
its input history and the cache (copies of notes, catalogs of a Chroma server's collections)
are created mode 0700 (folders) and 0600 (files), as the XDG base directory rules ask of
folders an application creates. The project's own folders (``notes-rag`` in the XDG data,
state and cache folders) and everything the project keeps in them are made private even when
they exist already: earlier versions created them 0755 and 0644. An index folder the user
names (``rag load --persist-dir DIR``) is made 0700 too, even when it exists, with what the
index keeps in it (``graph.index.vectorstore.make_index_private``); another folder the user
names (where ``rag questions`` writes its set) keeps its mode, and what the project creates
in it is private.

Chroma and SQLite create their files themselves, with the process's umask: the code that
makes them runs under :func:`private_umask`, and :func:`tighten` makes private what an
earlier version left readable (an index, each time it is opened).
"""

from __future__ import annotations

import os
import re
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
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
            folder.chmod(0o700)
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` (empty) mode 0600 in a private folder, or make an existing one 0600."""
    private_folder(path.parent)
    descriptor = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600)
    try:
        _strip(descriptor, os.fstat(descriptor))
    finally:
        os.close(descriptor)
    return path


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, mode 0600, replacing what it held.

    A symbolic link at ``path`` is refused (``OSError``), never written through.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    descriptor = os.open(path, flags, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        _strip(descriptor, os.fstat(descriptor))  # written 0644 by an earlier version
        handle.write(text)


_umask_lock = threading.Lock()
_umask_holders = 0
_umask_before = 0


@contextmanager
def private_umask() -> Iterator[None]:
    """Files and folders created meanwhile, by this code or a library's, are 0600 and 0700.

    The umask is the process's, not the thread's: overlapping holders (threads of a server)
    are counted and the umask is restored when the last one leaves, so none of them runs
    with the loose one. What another thread creates meanwhile is only more private. Under
    ``make dev`` the umask is 077 throughout (``app.serving.dev``): this changes nothing.
    """
    global _umask_holders, _umask_before
    with _umask_lock:
        if _umask_holders == 0:
            _umask_before = os.umask(0o077)
            os.umask(_umask_before | 0o077)
        _umask_holders += 1
    try:
        yield
    finally:
        with _umask_lock:
            _umask_holders -= 1
            if _umask_holders == 0:
                os.umask(_umask_before)


#: Opens an entry to change its mode through the descriptor: never a symbolic link, never
#: blocking on a FIFO.
_NO_LINK = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def tighten(folder: Path, names: re.Pattern[str] | None = None, itself: bool = False) -> None:
    """Take group and other permissions from what ``folder`` holds (0644 -> 0600, 0755 -> 0700).

    Only the entries whose names ``names`` matches whole (every entry when ``None``), and
    everything inside those that are folders; ``folder`` too when ``itself``. No symbolic
    link is followed: each entry is opened with ``O_NOFOLLOW`` and changed through its
    descriptor, so a link put in its place meanwhile is not followed either. Entries of
    another user, and those that cannot be opened (a socket), are left as they are. A
    missing ``folder`` holds nothing; a file there is refused (``NotADirectoryError``).
    """
    try:
        descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        status = os.fstat(descriptor)
        if itself and status.st_uid == os.geteuid():  # another user's folder is theirs to set
            _strip(descriptor, status)
        _tighten_inside(descriptor, names)
    finally:
        os.close(descriptor)


def _tighten_inside(folder: int, names: re.Pattern[str] | None) -> None:
    with os.scandir(folder) as entries:
        chosen = [e.name for e in entries if names is None or names.fullmatch(e.name)]
    for name in chosen:
        try:
            descriptor = os.open(name, _NO_LINK, dir_fd=folder)
        except OSError:  # a symbolic link (ELOOP), a socket, gone meanwhile
            continue
        try:
            status = os.fstat(descriptor)
            if status.st_uid != os.geteuid():
                continue  # not written by this user: not the project's to change
            if stat.S_ISDIR(status.st_mode):
                _strip(descriptor, status)
                _tighten_inside(descriptor, None)
            elif stat.S_ISREG(status.st_mode):
                _strip(descriptor, status)
        finally:
            os.close(descriptor)


def _strip(descriptor: int, status: os.stat_result) -> None:
    """Take group and other permissions from the open file or folder."""
    if status.st_mode & 0o077:
        os.fchmod(descriptor, stat.S_IMODE(status.st_mode) & 0o700)
