"""``rag load``: incremental, interruptible, offline loading of a notes folder into Chroma.

Every chunk carries its note's content hash and chunk count, so the index describes itself:
a note is unchanged exactly when all its stored chunks carry the current hash and there are
as many as recorded. Writes are upserts under deterministic ids, old chunks of an edited
note are deleted only after its new ones are stored, and a load interrupted at any point
leaves notes that the next load sees as changed and finishes. Nothing is kept elsewhere.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from graph.context import Context
from graph.errors import ConfigError, ServiceError, ollama_errors
from graph.index.chunking import Chunk, chunk_notes
from graph.index.embedding import convention_for, document_text
from graph.index.locks import file_lock
from graph.index.vectorstore import (
    IndexInfo,
    mark_written,
    open_client,
    scan,
    validate_collection_name,
)

NOTE_SUFFIXES = (".md", ".markdown")
MAX_NOTE_BYTES = 5 * 1024 * 1024
EMBED_BATCH = 32
COSINE = {"hnsw:space": "cosine"}

Progress = Callable[[int, int], None]
Notify = Callable[[str], None]


@dataclass
class Note:
    """A readable note found in the folder."""

    source: str
    text: str
    digest: str


@dataclass
class LoadReport:
    """What a load did, for the summary line and for tests."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    chunks_written: int = 0
    embed_calls: int = 0

    def summary(self) -> str:
        """One line: the counts of what changed."""
        return (
            f"{len(self.added)} added, {len(self.updated)} updated, {len(self.removed)} removed, "
            f"{len(self.unchanged)} unchanged, {len(self.skipped)} skipped "
            f"({self.chunks_written} chunks embedded in {self.embed_calls} calls)"
        )


def scan_notes(
    notes_dir: Path, max_bytes: int = MAX_NOTE_BYTES
) -> tuple[list[Note], list[tuple[str, str]]]:
    """Readable UTF-8 notes under ``notes_dir`` (hidden folders skipped) and what was skipped."""
    notes: list[Note] = []
    skipped: list[tuple[str, str]] = []
    for path in sorted(notes_dir.rglob("*")):
        relative = path.relative_to(notes_dir)
        if path.suffix.lower() not in NOTE_SUFFIXES or any(
            part.startswith(".") for part in relative.parts
        ):
            continue
        source = relative.as_posix()
        try:
            if not path.is_file():
                skipped.append((source, "not a regular file"))
                continue
            if path.stat().st_size > max_bytes:
                skipped.append((source, f"larger than {max_bytes // 1024 // 1024} MB"))
                continue
            data = path.read_bytes()
        except OSError as exc:
            skipped.append((source, f"unreadable ({exc.strerror or exc})"))
            continue
        if b"\x00" in data:
            skipped.append((source, "binary file"))
            continue
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            skipped.append((source, "not UTF-8 text"))
            continue
        notes.append(Note(source, text, hashlib.sha256(data).hexdigest()))
    return notes, skipped


def chunk_id(source: str, index: int) -> str:
    """Deterministic id: the same note position always maps to the same record."""
    return f"{hashlib.sha256(source.encode()).hexdigest()[:24]}-{index}"


@dataclass
class _Stored:
    digests: set[str] = field(default_factory=set)
    ids: set[str] = field(default_factory=set)
    expected: int = -1


def stored_notes(collection: Any) -> dict[str, _Stored]:
    """What the collection holds, per note."""
    stored: dict[str, _Stored] = {}
    if collection is None:
        return stored
    for page in scan(collection, ["metadatas"]):
        for chunk, metadata in zip(page["ids"], page["metadatas"] or []):
            entry = stored.setdefault(str((metadata or {}).get("source", "")), _Stored())
            entry.ids.add(chunk)
            entry.digests.add(str((metadata or {}).get("note_hash", "")))
            entry.expected = int((metadata or {}).get("chunk_count", -1))
    return stored


def _complete(entry: _Stored, digest: str) -> bool:
    return entry.digests == {digest} and len(entry.ids) == entry.expected


@contextmanager
def load_lock(context: Context, notify: Notify) -> Iterator[None]:
    """One load per collection at a time; a second one waits for the first to finish."""
    if context.chroma_server_url:
        key = hashlib.sha256(context.chroma_server_url.encode()).hexdigest()[:12]
        folder = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "notes-rag"
        name = f"{key}-{context.collection_name}.lock"
    else:
        folder, name = Path(context.effective_chroma_dir), f".{context.collection_name}.lock"
    waiting = f"waiting for another `rag load` of '{context.collection_name}' to finish..."
    with file_lock(folder / name, on_wait=lambda: notify(waiting)):
        yield


def _existing_collection(client: Any, name: str) -> Any | None:
    names = {c if isinstance(c, str) else c.name for c in client.list_collections()}
    return client.get_collection(name) if name in names else None


def _incompatibility(collection: Any, wanted: IndexInfo) -> str | None:
    """Why ``collection`` cannot take notes built as ``wanted`` (``None`` if it can)."""
    have = IndexInfo.of(collection)
    if have is None:
        return "was not created by `rag load`" if collection.count() else None
    if have.embedding_model != wanted.embedding_model or have.convention != wanted.convention:
        return f"was embedded with '{have.embedding_model}', not '{wanted.embedding_model}'"
    if (have.chunk_size, have.chunk_overlap) != (wanted.chunk_size, wanted.chunk_overlap):
        return (
            f"was chunked {have.chunk_size}/{have.chunk_overlap}, "
            f"not {wanted.chunk_size}/{wanted.chunk_overlap}"
        )
    if have.notes_dir != wanted.notes_dir:
        return f"holds the notes of {have.notes_dir}"
    return None


def _check_compatible(collection: Any, wanted: IndexInfo, rebuild: bool, client: Any) -> Any:
    """Refuse to mix vectors or notes folders; ``--rebuild`` starts the collection afresh."""
    if collection is None:
        return None
    problem = _incompatibility(collection, wanted)
    if problem is None:
        return collection
    if not rebuild:
        raise ConfigError(
            f"collection '{collection.name}' {problem}: pass --rebuild to replace it, "
            "or use another collection name (-n)"
        )
    client.delete_collection(collection.name)
    return None


@dataclass(frozen=True)
class LoadOptions:
    """How notes are chunked and written."""

    chunk_size: int = 1500
    chunk_overlap: int = 300
    rebuild: bool = False
    """Replace a collection built with another model, chunking or notes folder."""
    batch_size: int = EMBED_BATCH
    """Chunks per embedding call."""
    max_note_bytes: int = MAX_NOTE_BYTES

    def check(self) -> None:
        """Refuse settings that cannot chunk anything sensibly."""
        if self.chunk_size < 100 or not 0 <= self.chunk_overlap < self.chunk_size:
            raise ConfigError("need chunk size >= 100 and 0 <= chunk overlap < chunk size")


def load_notes(
    context: Context,
    notes_dir: str | Path,
    embeddings: Embeddings,
    options: LoadOptions | None = None,
    *,
    progress: Progress | None = None,
    notify: Notify = lambda _: None,
) -> LoadReport:
    """Bring the collection in line with ``notes_dir``, embedding only what changed."""
    options = options or LoadOptions()
    options.check()
    validate_collection_name(context.collection_name)
    root = _notes_root(notes_dir)
    notes, skipped = scan_notes(root, options.max_note_bytes)
    if not notes:
        detail = f" ({len(skipped)} skipped)" if skipped else ""
        raise ConfigError(f"no readable markdown notes (*.md) in {root}{detail}; index untouched")
    report = LoadReport(skipped=skipped)
    for source, reason in skipped:
        notify(f"warning: skipped {source}: {reason}")

    wanted = IndexInfo(
        embedding_model=context.embedding_model,
        convention=convention_for(context.embedding_model),
        chunk_size=options.chunk_size,
        chunk_overlap=options.chunk_overlap,
        notes_dir=str(root),
    )
    open_client(context)  # an unusable index folder is reported before anything else
    with load_lock(context, notify):
        # Again under the lock: a load that ran while this one waited made the client stale.
        client = open_client(context)
        collection = _check_compatible(
            _existing_collection(client, context.collection_name), wanted, options.rebuild, client
        )
        stored = stored_notes(collection)
        todo = _plan(notes, skipped, stored, report)
        if not todo and not report.removed:
            return report
        if collection is None:
            collection = client.create_collection(
                context.collection_name, metadata={**COSINE, **wanted.to_metadata()}
            )
        writer = _Writer(collection, wanted, embeddings, context, report, options.batch_size)
        writer.begin()
        writer.write(todo, stored, progress)
        for source in report.removed:
            writer.delete(stored[source].ids)
        writer.finish()
    return report


def _notes_root(notes_dir: str | Path) -> Path:
    root = Path(notes_dir).expanduser()
    if not root.is_dir():
        raise ConfigError(f"notes folder {root} does not exist or is not a folder")
    return root.resolve()


def _plan(
    notes: list[Note],
    skipped: list[tuple[str, str]],
    stored: dict[str, _Stored],
    report: LoadReport,
) -> list[Note]:
    """Sort notes into unchanged / updated / added (returned) and find the removed ones."""
    todo: list[Note] = []
    for note in notes:
        entry = stored.get(note.source)
        if entry is not None and _complete(entry, note.digest):
            report.unchanged.append(note.source)
        else:
            (report.updated if entry is not None else report.added).append(note.source)
            todo.append(note)
    present = {n.source for n in notes} | {s for s, _ in skipped}
    report.removed = sorted(s for s in stored if s not in present)
    return todo


@dataclass
class _Writer:
    """Writes one load's changes into a collection, keeping its recorded facts current."""

    collection: Any
    info: IndexInfo
    embeddings: Embeddings
    context: Context
    report: LoadReport
    batch_size: int

    def begin(self) -> None:
        """Bump the generation before the first write, so no cache outlives a partial load."""
        self._bump()

    def finish(self) -> None:
        """Record the facts later reads need, and bump the generation once more."""
        with_images = self.collection.get(where={"has_images": True}, include=["metadatas"])
        count = len({m.get("source") for m in with_images["metadatas"] or []})
        self._bump(image_notes=count)

    def _bump(self, image_notes: int | None = None) -> None:
        current = IndexInfo.of(self.collection)
        if image_notes is None:
            image_notes = current.image_notes if current else 0
        generation = (current.generation if current else 0) + 1
        replace(self.info, generation=generation, image_notes=image_notes).record(self.collection)
        mark_written(self.context)

    def delete(self, ids: set[str]) -> None:
        """Remove chunks by id."""
        if ids:
            self.collection.delete(ids=sorted(ids))
            mark_written(self.context)

    def write(
        self, todo: list[Note], stored: dict[str, _Stored], progress: Progress | None
    ) -> None:
        """Chunk, embed in batches, upsert; then drop each note's chunks that no longer exist."""
        pending, counts = self._chunk(todo)
        for note in todo:  # an empty note keeps nothing of its old version
            if counts[note.source] == 0 and note.source in stored:
                self.delete(stored[note.source].ids)
        total = len(pending)
        if progress:
            progress(0, total)
        for start in range(0, total, self.batch_size):
            self._store(pending[start : start + self.batch_size])
            if progress:
                progress(min(start + self.batch_size, total), total)
        for note in todo:
            if note.source in stored:
                current = {chunk_id(note.source, i) for i in range(counts[note.source])}
                self.delete(stored[note.source].ids - current)

    def _chunk(self, todo: list[Note]) -> tuple[list[tuple[Note, Chunk, int]], dict[str, int]]:
        pending: list[tuple[Note, Chunk, int]] = []
        counts: dict[str, int] = {}
        texts = [note.text for note in todo]
        every = chunk_notes(texts, self.info.chunk_size, self.info.chunk_overlap)
        for note, chunks in zip(todo, every):
            counts[note.source] = len(chunks)
            pending.extend((note, chunk, len(chunks)) for chunk in chunks)
        return pending, counts

    def _store(self, batch: list[tuple[Note, Chunk, int]]) -> None:
        texts = [
            document_text(self.info.convention, note.source, chunk.heading, chunk.content)
            for note, chunk, _ in batch
        ]
        with ollama_errors(self.context.ollama_base_url, self.context.embedding_model):
            vectors = self.embeddings.embed_documents(texts)
        self.report.embed_calls += 1
        try:
            self.collection.upsert(
                ids=[chunk_id(note.source, chunk.index) for note, chunk, _ in batch],
                embeddings=vectors,
                documents=[chunk.content for _, chunk, _ in batch],
                metadatas=[_metadata(note, chunk, count) for note, chunk, count in batch],
            )
        except Exception as exc:
            raise ServiceError(f"Chroma refused the write: {exc}") from exc
        mark_written(self.context)
        self.report.chunks_written += len(batch)


def _metadata(note: Note, chunk: Chunk, count: int) -> dict[str, Any]:
    return {
        "source": note.source,
        "heading": chunk.heading,
        "chunk_index": chunk.index,
        "chunk_count": count,
        "note_hash": note.digest,
        "content_hash": hashlib.sha256(chunk.content.encode()).hexdigest()[:16],
        "images": json.dumps(list(chunk.images)),
        "has_images": bool(chunk.images),
    }
