"""Access to the Chroma index: embedded (a folder) by default, a Chroma server when given a URL.

Collections are created in cosine space, so ``1 - distance`` is a relevance in [0, 1].
Everything the load step decided (embedding model, convention, chunking, notes folder) is
recorded in the collection's metadata under ``rag:*`` keys and checked at query time.
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

from graph.context import Context
from graph.errors import ConfigError, RagError, ServiceError, find_cause
from graph.index.embedding import DEFAULT_EMBEDDING_MODEL, Convention, convention_for
from graph.index.locks import file_lock
from graph.index.private import private_folder, private_umask, tighten, write_private

_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]$")
_log = logging.getLogger(__name__)
_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()
"""Guards ``_clients``, ``_seen`` and ``_opening`` only: never held while a client opens."""
_seen: dict[str, str] = {}
"""Per embedded folder: the write marker's token when its cached client was opened."""
_opening: dict[str, threading.Lock] = {}
"""Per target: held while its client is opened, so one target is opened once at a time."""
_tokens = itertools.count()
T = TypeVar("T")


def validate_collection_name(name: str) -> str:
    """Chroma's naming rule, checked up front so the user gets a clear message."""
    if not _NAME.match(name):
        raise ConfigError(
            f"invalid collection name {name!r}: use 3-512 characters from a-z, A-Z, 0-9, '.', "
            "'_', '-', starting and ending with a letter or digit"
        )
    return name


@functools.cache
def chroma_settings() -> Any:
    """Chroma's client settings, built once.

    Constructing them reads the environment and .env files through pydantic-settings and
    costs about 0.1 s each time: per question, that was most of the framework's overhead.
    """
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False)


def open_client(context: Context) -> Any:
    """A Chroma client for the context's server URL or persist folder (cached per target).

    An embedded client is re-opened when another process has written to its folder since it
    was opened (see ``mark_written``): Chroma's embedded mode keeps the vector index of each
    collection in process memory and does not notice another process's writes, so a client
    opened before a load kept answering from the old vectors, or failed with "Error finding id".

    The global lock covers only the cache's bookkeeping: opening (a server's connection and
    heartbeat, an embedded folder's SQLite) happens outside it, under a lock of its own
    target, so a slow open delays only the callers that need that very client.
    """
    server = context.chroma_server_url
    target = server or context.effective_chroma_dir
    cached = _cached_client(target, "" if server else _written_token(target), server)
    if cached is not None:
        return cached
    with _opening_lock(target):
        # Read again: another thread may have opened it, after a newer write, meanwhile.
        token = "" if server else _written_token(target)
        cached = _cached_client(target, token, server)
        if cached is not None:
            return cached
        with _clients_lock:
            stale = _clients.pop(target, None)
        if stale is not None:
            _drop_system(stale)
        client = _open_http(server) if server else _open_persistent(target, chroma_settings())
        with _clients_lock:
            _clients[target], _seen[target] = client, token
        return client


def _cached_client(target: str, token: str, server: str) -> Any | None:
    """The cached client of ``target`` if it is still current (a server's always is)."""
    with _clients_lock:
        cached = _clients.get(target)
        if cached is not None and (server or _seen.get(target) == token):
            return cached
    return None


def _opening_lock(target: str) -> threading.Lock:
    with _clients_lock:
        return _opening.setdefault(target, threading.Lock())


def _open_http(server_url: str) -> Any:
    """A client of the Chroma server at ``server_url``, after checking that it answers."""
    import chromadb

    url = urlparse(server_url)
    if not url.hostname:
        raise ConfigError(f"invalid Chroma URL {server_url!r}")
    try:
        client = chromadb.HttpClient(
            host=url.hostname,
            port=url.port or (443 if url.scheme == "https" else 8000),
            ssl=url.scheme == "https",
            settings=chroma_settings(),
        )
        client.heartbeat()
    except Exception as exc:  # chromadb raises several types for one cause
        raise ServiceError(
            f"cannot reach the Chroma server at {server_url}: "
            "start it with `chroma run --path DIR --port PORT`"
        ) from exc
    return client


#: The file in an index folder that every write to it replaces (see ``mark_written``).
WRITTEN_FILE = ".written"


def _written_token(folder: str) -> str:
    """What the folder's write marker says now ('' before any write)."""
    try:
        return (Path(folder) / WRITTEN_FILE).read_text()
    except OSError:
        return ""


def mark_written(context: Context) -> None:
    """Tell every process using this index folder that its contents changed.

    Called by each write (a load's batches, its generation bumps, a dropped collection).
    Writes a new token atomically; this process's own client is current, so it records the
    token as seen, while every other process finds a token it has not seen on its next
    ``open_client`` and re-opens. A Chroma server needs no marker: it is the only process.
    """
    if context.chroma_server_url:
        return
    folder = context.effective_chroma_dir
    token = f"{time.time_ns()}-{os.getpid()}-{next(_tokens)}"
    marker = Path(folder) / WRITTEN_FILE
    temporary = marker.with_name(f"{WRITTEN_FILE}.{os.getpid()}.{threading.get_ident()}")
    try:
        write_private(temporary, token)
        os.replace(temporary, marker)
    except OSError as exc:
        reason = exc.strerror or exc
        raise ConfigError(f"cannot write to the index folder {folder}: {reason}") from exc
    with _clients_lock:
        if folder in _clients:
            _seen[folder] = token


def _drop_system(client: Any) -> None:
    """Make the next ``PersistentClient`` of the same folder a fresh one.

    chromadb shares one "system" (with its in-memory vector indexes) between all clients of a
    folder in a process; removing it from that registry makes the next client build a new one.
    The old one is not stopped: a request in flight on another thread may still use it, and it
    is freed when the last such reference goes.
    """
    from chromadb.api.shared_system_client import SharedSystemClient

    identifier = getattr(client, "_identifier", None)
    if identifier is not None:
        SharedSystemClient._identifier_to_system.pop(identifier, None)


def reading(context: Context, read: Callable[[], T]) -> T:
    """Run ``read``; if Chroma fails internally, re-open the client and run it once more.

    A write by another process between this process's check of the write marker and its read
    can still leave the in-memory vector index behind the stored chunks for that one read
    (Chroma then raises ``InternalError``); a freshly opened client reads the stored state.
    """
    from chromadb.errors import InternalError

    try:
        return read()
    except Exception as exc:
        if context.chroma_server_url or find_cause(exc, InternalError) is None:
            raise
        forget_client(context)
        return read()


def forget_client(context: Context) -> None:
    """Drop this context's cached embedded client, so the next use opens a fresh one."""
    target = context.effective_chroma_dir
    with _clients_lock:
        cached = _clients.pop(target, None)
        _seen.pop(target, None)
        if cached is not None:
            _drop_system(cached)


#: What the project keeps in an index folder, by name: Chroma's SQLite file (and its journals),
#: its segment folders (named by UUID), the catalogs' folder (``graph.index.catalog``), the
#: locks (``.open.lock``, ``.<collection>.lock``) and the write marker (``WRITTEN_FILE``).
#: Nothing else a folder the user named holds is ever changed.
INDEX_ENTRIES = re.compile(
    r"chroma\.sqlite3(-[a-z]+)?|catalog|\.written(\..+)?|\..+\.lock"
    r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
)


def make_index_private(folder: Path) -> None:
    """The index folder 0700, even one the user named that exists, and what it holds private.

    Every chunk's text is in it: an earlier version left its files 0644 and a folder the
    user named with its own mode; Chroma writes its files with the process's umask. A file
    at ``folder`` is refused (``NotADirectoryError``) and left as it is.
    """
    private_folder(folder)
    tighten(folder, INDEX_ENTRIES, itself=True)


def _open_persistent(folder: str, settings: Any) -> Any:
    """An embedded Chroma client, opened under a cross-process lock.

    Opening a fresh folder creates Chroma's SQLite tables; two processes doing that at the
    same moment (two `rag load` runs, or a load and an ask) race and one fails with "table
    collections already exists". Holding a file lock while opening serialises only that step.
    The folder is made private first, and Chroma creates its files under a private umask.
    """
    import chromadb

    try:
        make_index_private(Path(folder))
        with private_umask(), file_lock(Path(folder) / ".open.lock"):
            return chromadb.PersistentClient(path=folder, settings=settings)
    except OSError as exc:
        raise ConfigError(f"cannot use the index folder {folder}: {exc.strerror or exc}") from exc
    except Exception as exc:  # chromadb's InternalError and friends carry the cause
        raise ServiceError(f"Chroma could not open the index folder {folder}: {exc}") from exc


def forget_clients() -> None:
    """Drop cached clients (tests use fresh folders)."""
    with _clients_lock:
        _clients.clear()
        _seen.clear()


@dataclass(frozen=True)
class IndexInfo:
    """What a collection was built with: the only reader and writer of its ``rag:*`` keys."""

    embedding_model: str
    convention: Convention
    chunk_size: int
    chunk_overlap: int
    notes_dir: str
    generation: int = 0
    """Bumped by every load that writes or deletes chunks; caches key on it."""
    image_notes: int = 0
    """How many notes reference images (routing asks about images only when some do)."""
    empty_notes: tuple[tuple[str, str], ...] = ()
    """(source, content hash) of notes that gave no chunk, so a reload finds them unchanged."""
    rebuild_of: str = ""
    """Set while this collection is being built to replace the named one (``--rebuild``)."""
    parser_version: int = 0
    """How notes were parsed (``graph.index.obsidian.PARSER_VERSION``; 0: before it existed)."""
    stemmed: bool = True
    """Whether BM25 matches words by their stem (``rag load --no-stemming``: as written)."""

    def to_metadata(self) -> dict[str, Any]:
        """The ``rag:*`` metadata keys stored on the collection."""
        return {
            "rag:embedding_model": self.embedding_model,
            "rag:document_prefix": self.convention.document_prefix,
            "rag:query_prefix": self.convention.query_prefix,
            "rag:chunk_size": self.chunk_size,
            "rag:chunk_overlap": self.chunk_overlap,
            "rag:notes_dir": self.notes_dir,
            "rag:generation": self.generation,
            "rag:image_notes": self.image_notes,
            "rag:empty_notes": json.dumps(dict(self.empty_notes), sort_keys=True),
            "rag:rebuild_of": self.rebuild_of,
            "rag:parser_version": self.parser_version,
            "rag:stemmed": self.stemmed,
        }

    @classmethod
    def from_metadata(cls, metadata: dict[str, Any] | None) -> IndexInfo | None:
        """``None`` for a collection not created by ``rag load``."""
        if not metadata or "rag:embedding_model" not in metadata:
            return None
        return cls(
            embedding_model=str(metadata["rag:embedding_model"]),
            convention=Convention(
                str(metadata.get("rag:document_prefix", "")),
                str(metadata.get("rag:query_prefix", "")),
            ),
            chunk_size=int(metadata.get("rag:chunk_size", 0)),
            chunk_overlap=int(metadata.get("rag:chunk_overlap", 0)),
            notes_dir=str(metadata.get("rag:notes_dir", "")),
            generation=int(metadata.get("rag:generation", 0)),
            image_notes=int(metadata.get("rag:image_notes", 0)),
            empty_notes=_string_pairs(metadata.get("rag:empty_notes")),
            rebuild_of=str(metadata.get("rag:rebuild_of", "")),
            parser_version=int(metadata.get("rag:parser_version", 0)),
            stemmed=bool(metadata.get("rag:stemmed", True)),
        )

    @classmethod
    def of(cls, collection: Any) -> IndexInfo | None:
        """The facts recorded on ``collection`` (``None`` when ``rag load`` did not make it)."""
        return cls.from_metadata(collection.metadata)

    def record(self, collection: Any) -> None:
        """Store these facts on ``collection`` (Chroma replaces the whole metadata)."""
        collection.modify(metadata=self.to_metadata())


def _string_pairs(raw: Any) -> tuple[tuple[str, str], ...]:
    """A JSON object of strings as sorted pairs (Chroma metadata values are scalars)."""
    try:
        value = json.loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        return ()
    if not isinstance(value, dict):
        return ()
    return tuple(sorted((str(k), str(v)) for k, v in value.items()))


def collection_stemmed(context: Context) -> bool | None:
    """Whether the context's collection matches BM25 words by their stem, as recorded.

    ``None`` when there is no such collection or ``rag load`` did not make it. Stored with
    every measured figure: it is a property of the collection, not a setting of the run.
    """
    collection = get_collection(context)
    info = IndexInfo.of(collection) if collection is not None else None
    return info.stemmed if info else None


def get_collection(context: Context) -> Any | None:
    """The collection named in the context, or ``None`` when it does not exist.

    "Does not exist" is Chroma's ``NotFoundError`` (embedded and server alike); any other
    failure, whatever its text says, is a ``ServiceError`` naming it.
    """
    from chromadb.errors import NotFoundError

    client = open_client(context)
    name = validate_collection_name(context.collection_name)
    try:
        return client.get_collection(name)
    except NotFoundError:
        return None
    except Exception as exc:  # chromadb raises several types (and plain Exception over HTTP)
        raise ServiceError(f"Chroma failed to open collection {name!r}: {exc}") from exc


def index_info(collection: Any, context: Context) -> IndexInfo:
    """How the collection was built; falls back to the context's settings for foreign ones.

    An embedding model given explicitly (flag, run context or ``RAG_EMBEDDING_MODEL``) must
    be the collection's; none given (``""``) means the collection's.
    """
    info = IndexInfo.of(collection)
    if info is None:
        model = context.embedding_model or DEFAULT_EMBEDDING_MODEL
        return IndexInfo(model, convention_for(model), 0, 0, "")
    if context.embedding_model and info.embedding_model != context.embedding_model:
        raise ConfigError(
            f"collection {context.collection_name!r} was loaded with embedding model "
            f"'{info.embedding_model}', not '{context.embedding_model}': leave the embedding "
            f"model unset (no -e, no RAG_EMBEDDING_MODEL) to use the collection's, "
            "or reload with --rebuild"
        )
    return info


def with_embedding_model(context: Context) -> Context:
    """``context`` with its embedding model decided.

    As given, else the collection's, else the default for a new collection. Models are
    built from the result, so call this before asking a provider for embeddings.
    """
    if context.embedding_model:
        return context
    collection = get_collection(context)
    info = IndexInfo.of(collection) if collection is not None else None
    return replace(
        context, embedding_model=info.embedding_model if info else DEFAULT_EMBEDDING_MODEL
    )


def notes_have_images(context: Context) -> bool:
    """Whether the loaded notes reference images (recorded at load time; no query).

    Routing must not fail because the index cannot be opened: that is logged as a warning
    naming the cause, and the notes count as having no images (retrieval then reports the
    index problem itself). Anything else (a bug) is raised.
    """
    try:
        collection = get_collection(context)
    except RagError as exc:
        _log.warning("cannot tell whether the notes reference images, so assuming not: %s", exc)
        return False
    info = IndexInfo.of(collection) if collection is not None else None
    return bool(info and info.image_notes)


def chunk_metadata_images(metadata: dict[str, Any]) -> list[str]:
    """Image references stored with a chunk (a JSON list; Chroma metadata is scalar only)."""
    return chunk_metadata_list(metadata, "images")


def chunk_metadata_list(metadata: dict[str, Any], key: str) -> list[str]:
    """A list stored with a chunk as JSON text (``[]`` when absent or unreadable)."""
    raw = metadata.get(key) or "[]"
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return []
    return [str(item) for item in value] if isinstance(value, list) else []


#: Chunks read per call when a whole collection is scanned: SQLite limits the variables of
#: one statement, and a collection of 40,000 chunks read in one `get()` failed.
PAGE_SIZE = 5000


def scan(collection: Any, include: list[str], page_size: int | None = None) -> Iterator[dict]:
    """Every chunk of ``collection`` in pages: one ``get()`` result per page (``PAGE_SIZE``)."""
    page_size = page_size or PAGE_SIZE
    offset = 0
    while True:
        page = collection.get(include=include, limit=page_size, offset=offset)
        if not page["ids"]:
            return
        yield page
        offset += len(page["ids"])
