"""``rag load``: incremental, interruptible, offline loading of a notes folder into Chroma.

Every chunk carries its note's content hash and chunk count, so the index describes itself:
a note is unchanged exactly when all its stored chunks carry the current hash and there are
as many as recorded. Writes are upserts under deterministic ids, old chunks of an edited
note are deleted only after its new ones are stored, and a load interrupted at any point
leaves notes that the next load sees as changed and finishes. The one exception, notes that
give no chunk at all (an empty ``Untitled.md``), have their hashes recorded in the
collection's metadata instead, so no search can ever return a placeholder for them.

``--rebuild`` builds a new collection beside the old one (``<name>.rebuild``, marked as a
rebuild of ``<name>``) and swaps it in only when it is complete: until then the old one keeps
answering. The swap deletes the old collection, then renames the new one; every load and drop
starts by finishing or discarding what an interrupted rebuild left, under the same lock.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from graph.context import Context
from graph.errors import ConfigError, ServiceError, ollama_errors
from graph.index.catalog import Catalog, StoredNote, forget_catalog
from graph.index.chunking import Chunk, Unparsed
from graph.index.embedding import convention_for, document_text
from graph.index.filters import filter_keys
from graph.index.locks import file_lock, remove_lock_file
from graph.index.obsidian import PARSER_VERSION, NoteMeta, Vault, parser_for
from graph.index.parsing import PARSE_BUDGET, parse_notes
from graph.index.paths import cache_folder, server_id
from graph.index.private import private_umask
from graph.index.vectorstore import (
    IndexInfo,
    mark_written,
    open_client,
    validate_collection_name,
    with_embedding_model,
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
    empty: list[str] = field(default_factory=list)
    """Of the notes added or updated, those with no text to index (nothing to search)."""
    chunks_written: int = 0
    embed_calls: int = 0

    def summary(self) -> str:
        """One line: the counts of what changed, in notes (files), then the chunks embedded.

        An empty note counts as added (it is tracked, so a later edit is picked up) but has
        no chunks, so ``rag collections``, which counts the notes that can be searched, shows
        it apart: the line says how many of the notes were empty.
        """
        empty = f"; {len(self.empty)} of the notes empty, nothing to search" if self.empty else ""
        return (
            f"{len(self.added)} added, {len(self.updated)} updated, {len(self.removed)} removed, "
            f"{len(self.unchanged)} unchanged, {len(self.skipped)} skipped "
            f"({self.chunks_written} chunks embedded in {self.embed_calls} calls{empty})"
        )


def scan_notes(
    notes_dir: Path, max_bytes: int = MAX_NOTE_BYTES
) -> tuple[list[Note], list[tuple[str, str]]]:
    """Readable UTF-8 notes under ``notes_dir`` and what was skipped, both in path order.

    Hidden entries (``.git``, ``.obsidian``, ``.trash``: any name starting with '.') are
    pruned before descending, and symlinked folders are not followed. A skipped folder is
    reported with a trailing '/': the notes indexed from a folder that cannot be listed keep
    their chunks. Names that are not valid UTF-8 are skipped (shown with byte escapes);
    a symlinked note is read only when its target lies inside the notes folder.
    """
    root = os.path.realpath(notes_dir)
    notes: list[Note] = []
    skipped: list[tuple[str, str]] = []
    folders = [(str(notes_dir), "")]
    while folders:
        folder, prefix = folders.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError as exc:
            skipped.append((prefix or "./", f"unreadable folder ({exc.strerror or exc})"))
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            source = prefix + entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    problem = None if _valid_name(entry.name) else "name is not valid UTF-8"
                    if problem:
                        skipped.append((_printable(source) + "/", problem))
                    else:
                        folders.append((entry.path, source + "/"))
                    continue
                if not entry.name.lower().endswith(NOTE_SUFFIXES):
                    if entry.is_symlink() and entry.is_dir():
                        skipped.append(
                            (_printable(source) + "/", "symlink to a folder (not followed)")
                        )
                    continue
                problem = _unreadable_entry(entry, root)
            except OSError as exc:
                problem = f"unreadable ({exc.strerror or exc})"
            if problem is not None:
                skipped.append((_printable(source), problem))
                continue
            note, problem = _read_note(entry.path, source, max_bytes)
            if note is None:
                skipped.append((source, str(problem)))
            else:
                notes.append(note)
    return sorted(notes, key=lambda n: n.source), sorted(skipped)


def _valid_name(name: str) -> bool:
    """Linux hands undecodable bytes over as lone surrogates, which Chroma cannot store."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _printable(source: str) -> str:
    return os.fsencode(source).decode("utf-8", "backslashreplace")


def _unreadable_entry(entry: os.DirEntry, root: str) -> str | None:
    """Why the note at ``entry`` must not be read (``None`` when it may be)."""
    if not _valid_name(entry.name):
        return "file name is not valid UTF-8"
    if entry.is_symlink():
        target = os.path.realpath(entry.path)
        if not os.path.isfile(target):
            return "not a regular file"
        if os.path.commonpath([root, target]) != root:
            return "symlink to a file outside the notes folder"
    elif not entry.is_file():
        return "not a regular file"
    return None


def _read_note(path: str, source: str, max_bytes: int) -> tuple[Note | None, str | None]:
    """The note at ``path``, reading at most ``max_bytes + 1`` bytes (a file may grow)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        return None, f"unreadable ({exc.strerror or exc})"
    if len(data) > max_bytes:
        return None, f"larger than {max_bytes // 1024 // 1024} MB"
    if b"\x00" in data:
        return None, "binary file"
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    return Note(source, text, hashlib.sha256(data).hexdigest()), None


def chunk_id(source: str, index: int) -> str:
    """Deterministic id: the same note position always maps to the same record."""
    return f"{hashlib.sha256(source.encode()).hexdigest()[:24]}-{index}"


def stored_notes(catalog: Catalog) -> dict[str, StoredNote]:
    """What the collection holds, per note: its chunks, and the notes that gave none."""
    stored = catalog.notes()
    info = IndexInfo.of(catalog.collection)
    if info is None:
        return stored
    for source, digest in info.empty_notes:
        entry = stored.setdefault(source, StoredNote())
        entry.digests.add(digest)
        entry.parsers.add(info.parser_version)
        entry.expected = 0 if not entry.ids else -1
    return stored


def _complete(entry: StoredNote, note: Note) -> bool:
    """Every chunk stored, from this text, by one parser that reads it as this one does.

    No note is indexed by two parsers. A note an older parser read is read again only where
    that parser read it otherwise (``parser_for``): a new parser does not have a 10,000-note
    vault embedded again for the notes it reads as before.
    """
    return (
        entry.digests == {note.digest}
        and len(entry.ids) == entry.expected
        and len(entry.parsers) == 1
        and (
            entry.parsers == {PARSER_VERSION}
            or parser_for(note.text) <= min(entry.parsers) < PARSER_VERSION
        )
    )


@contextmanager
def load_lock(context: Context, notify: Notify) -> Iterator[None]:
    """One load (or drop) per collection at a time; a second one waits for the first.

    Every write to the index happens under it, so what the writes make is private here:
    Chroma and SQLite create their files (segment folders, vector files) under a private
    umask (``graph.index.private``).
    """
    waiting = f"waiting for another `rag load` of '{context.collection_name}' to finish..."
    with private_umask(), file_lock(_lock_path(context), on_wait=lambda: notify(waiting)):
        yield


def _lock_path(context: Context) -> Path:
    """The collection's lock file: beside the index, or in the cache for a Chroma server."""
    if context.chroma_server_url:
        name = f"{server_id(context.chroma_server_url)}-{context.collection_name}.lock"
        return cache_folder() / name
    return Path(context.effective_chroma_dir) / f".{context.collection_name}.lock"


def _segment_folders(context: Context, collection: Any) -> list[Path]:
    """The folders an embedded index keeps a collection's vectors in (HNSW files).

    Chroma names them after the collection's segments, which only its SQLite file lists;
    deleting the collection leaves them on disk. Read-only, and empty when unreadable or
    for a Chroma server (its files are its own).
    """
    if context.chroma_server_url:
        return []
    folder = Path(context.effective_chroma_dir)
    try:
        with closing(
            sqlite3.connect(f"{(folder / 'chroma.sqlite3').as_uri()}?mode=ro", uri=True)
        ) as connection:
            rows = connection.execute(
                "select id from segments where collection = ?", (str(collection.id),)
            ).fetchall()
    except sqlite3.Error:
        return []
    return [folder / str(segment) for (segment,) in rows if (folder / str(segment)).is_dir()]


def _existing_collection(client: Any, name: str) -> Any | None:
    names = {c if isinstance(c, str) else c.name for c in client.list_collections()}
    return client.get_collection(name) if name in names else None


def rebuild_name(name: str) -> str:
    """Where ``--rebuild`` builds the new collection, beside the one still answering."""
    temporary = f"{name}.rebuild"
    if len(temporary) > 512:
        raise ConfigError(f"collection name {name!r} is too long for --rebuild (max 504)")
    return temporary


def _unfinished_rebuild(client: Any, name: str) -> Any | None:
    """The rebuild of ``name`` left behind by a failed or interrupted load, if any.

    A collection that merely has the same name but was not made by ``--rebuild`` of ``name``
    is never touched.
    """
    temporary = _existing_collection(client, rebuild_name(name))
    info = IndexInfo.of(temporary) if temporary is not None else None
    return temporary if info is not None and info.rebuild_of == name else None


def _recover(context: Context, client: Any, name: str, notify: Notify) -> None:
    """Undo what an interrupted ``--rebuild`` left (under the load lock).

    While the old collection exists, a leftover rebuild is unfinished: discard it. Without
    the old one, the swap stopped between deleting it and renaming the new one: finish it.
    """
    temporary = _unfinished_rebuild(client, name)
    if temporary is not None:
        if _existing_collection(client, name) is not None:
            client.delete_collection(temporary.name)
            forget_catalog(context, temporary)
            notify(f"discarded an unfinished rebuild of '{name}'")
        else:
            temporary.modify(name=name)
            notify(f"finished the interrupted swap of the rebuilt '{name}'")
    current = _existing_collection(client, name)
    info = IndexInfo.of(current) if current is not None else None
    if current is not None and info is not None and info.rebuild_of:
        replace(info, rebuild_of="").record(current)


def _swap(context: Context, client: Any, rebuilt: Any, name: str) -> None:
    """Replace ``name`` by the complete ``rebuilt`` collection (see ``_recover`` for a crash).

    The rebuilt collection keeps its id, and with it its catalog.
    """
    old = _existing_collection(client, name)
    if old is not None:
        client.delete_collection(name)
        forget_catalog(context, old)
    rebuilt.modify(name=name)
    info = IndexInfo.of(rebuilt)
    if info is not None:
        replace(info, rebuild_of="").record(rebuilt)


def drop_collection(context: Context, notify: Notify = lambda _: None) -> None:
    """Delete the collection and any unfinished rebuild of it, after a running load ends."""
    name = validate_collection_name(context.collection_name)
    with load_lock(context, notify):
        client = open_client(context)  # under the lock: a load that just ended changed things
        _recover(context, client, name, notify)
        existing = _existing_collection(client, name)
        if existing is None:
            raise ConfigError(f"no collection named '{name}'")
        segments = _segment_folders(context, existing)
        client.delete_collection(name)
        forget_catalog(context, existing)
        mark_written(context)
        for folder in segments:
            shutil.rmtree(folder, ignore_errors=True)
        remove_lock_file(_lock_path(context))


def _incompatibility(collection: Any, wanted: IndexInfo) -> str | None:
    """Why ``collection`` cannot take notes built as ``wanted`` (``None`` if it can)."""
    have = IndexInfo.of(collection)
    if have is None:
        return "was not created by `rag load`" if collection.count() else None
    if have.embedding_model != wanted.embedding_model:
        return f"was embedded with '{have.embedding_model}', not '{wanted.embedding_model}'"
    if have.convention != wanted.convention:
        # the same model with other prefixes (a release that embedded it differently)
        return (
            f"was embedded with the prefixes {have.convention.document_prefix!r} and "
            f"{have.convention.query_prefix!r}, not {wanted.convention.document_prefix!r} and "
            f"{wanted.convention.query_prefix!r}"
        )
    if (have.chunk_size, have.chunk_overlap) != (wanted.chunk_size, wanted.chunk_overlap):
        return (
            f"was chunked {have.chunk_size}/{have.chunk_overlap}, "
            f"not {wanted.chunk_size}/{wanted.chunk_overlap}"
        )
    if have.notes_dir != wanted.notes_dir:
        return f"holds the notes of {have.notes_dir}"
    return None


def _check_compatible(collection: Any, wanted: IndexInfo) -> Any:
    """Refuse to mix vectors or notes folders (``--rebuild`` builds a new collection instead)."""
    if collection is None:
        return None
    problem = _incompatibility(collection, wanted)
    if problem is None:
        return collection
    raise ConfigError(
        f"collection '{collection.name}' {problem}: pass --rebuild to replace it, "
        "or use another collection name (-n)"
    )


def _stemming(existing: Any, asked: bool | None) -> bool:
    """Whether the load's collection stems its words: as asked, else as it already does."""
    if asked is not None:
        return asked
    have = IndexInfo.of(existing) if existing is not None else None
    return have.stemmed if have else True


def _restem(context: Context, existing: Any, stemmed: bool, notify: Notify) -> None:
    """Record a changed stemming choice on ``existing``; its catalog is then read anew."""
    have = IndexInfo.of(existing)
    if have is None or have.stemmed == stemmed:
        return
    replace(have, stemmed=stemmed).record(existing)
    mark_written(context)  # other processes re-open the collection and see the new choice
    how = "by their stem" if stemmed else "as written"
    notify(f"'{existing.name}': BM25 now matches words {how}; re-reading its words (no embedding)")


def _rebuild_target(client: Any, existing: Any, wanted: IndexInfo, notify: Notify) -> IndexInfo:
    """Announce a rebuild beside ``existing``; the facts its replacement is built with."""
    name = existing.name
    if _existing_collection(client, rebuild_name(name)) is not None:
        raise ConfigError(
            f"--rebuild builds '{name}' as '{rebuild_name(name)}', which already exists and is "
            "not a rebuild: drop or rename that collection"
        )
    problem = _incompatibility(existing, wanted)
    why = f"it {problem}" if problem else "its settings already match; rebuilt anyway"
    notify(f"rebuilding '{name}' beside the old collection, which answers until done ({why})")
    return replace(wanted, rebuild_of=name)


@dataclass(frozen=True)
class LoadOptions:
    """How notes are chunked and written."""

    chunk_size: int = 1500
    chunk_overlap: int = 300
    rebuild: bool = False
    """Build the collection afresh beside the old one, which is replaced only when complete.

    Needed after changing the model, chunking or notes folder; on a compatible collection it
    re-chunks and re-embeds every note anyway (e.g. after the chunking code changed).
    """
    batch_size: int = EMBED_BATCH
    """Chunks per embedding call."""
    max_note_bytes: int = MAX_NOTE_BYTES
    parse_budget: float = PARSE_BUDGET
    """Seconds one note's parsing may take; a note taking longer is skipped with a warning."""
    stemming: bool | None = None
    """Whether BM25 matches words by their stem; ``None`` keeps the collection's choice (a new
    collection: stemmed). A change re-reads the collection's words, without embedding."""

    def check(self) -> None:
        """Refuse settings that cannot chunk anything sensibly."""
        if self.chunk_size < 100 or not 0 <= self.chunk_overlap < self.chunk_size:
            raise ConfigError("need chunk size >= 100 and 0 <= chunk overlap < chunk size")
        if not self.parse_budget > 0:
            raise ConfigError("need a parse budget above 0 seconds")


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

    context = with_embedding_model(context)
    wanted = IndexInfo(
        embedding_model=context.embedding_model,
        convention=convention_for(context.embedding_model),
        chunk_size=options.chunk_size,
        chunk_overlap=options.chunk_overlap,
        notes_dir=str(root),
        parser_version=PARSER_VERSION,
    )
    open_client(context)  # an unusable index folder is reported before anything else
    with load_lock(context, notify):
        # Again under the lock: a load that ran while this one waited made the client stale.
        client = open_client(context)
        _recover(context, client, context.collection_name, notify)
        existing = _existing_collection(client, context.collection_name)
        wanted = replace(wanted, stemmed=_stemming(existing, options.stemming))
        target, collection = context.collection_name, existing
        if options.rebuild and existing is not None:
            wanted = _rebuild_target(client, existing, wanted, notify)
            target, collection = rebuild_name(context.collection_name), None
        elif existing is not None:
            _check_compatible(existing, wanted)
            _restem(context, existing, wanted.stemmed, notify)
            have = IndexInfo.of(existing)
            if have and have.parser_version != PARSER_VERSION and existing.count():
                notify(
                    f"'{context.collection_name}' was indexed by another note parser: "
                    "re-reading the notes it reads differently"
                )
        catalog = Catalog.for_load(context, collection) if collection is not None else None
        stored = stored_notes(catalog) if catalog is not None else {}
        todo = _plan(notes, skipped, stored, report)
        if not todo and not report.removed:
            return report
        if collection is None or catalog is None:
            collection = client.create_collection(
                target, metadata={**COSINE, **wanted.to_metadata()}
            )
            catalog = Catalog.for_load(context, collection)
        writer = _Writer(
            collection,
            catalog,
            wanted,
            embeddings,
            context,
            report,
            options.batch_size,
            notify,
            options.parse_budget,
        )
        with writer.writing():
            writer.write(todo, stored, progress)
            for source in report.removed:
                writer.delete(stored[source].ids)
            writer.finish()
        if wanted.rebuild_of:
            _swap(context, client, collection, context.collection_name)
            mark_written(context)
    return report


def _notes_root(notes_dir: str | Path) -> Path:
    root = Path(notes_dir).expanduser()
    if not root.is_dir():
        raise ConfigError(f"notes folder {root} does not exist or is not a folder")
    return root.resolve()


def _plan(
    notes: list[Note],
    skipped: list[tuple[str, str]],
    stored: dict[str, StoredNote],
    report: LoadReport,
) -> list[Note]:
    """Sort notes into unchanged / updated / added (returned) and find the removed ones."""
    todo: list[Note] = []
    for note in notes:
        entry = stored.get(note.source)
        if entry is not None and _complete(entry, note):
            report.unchanged.append(note.source)
        else:
            (report.updated if entry is not None else report.added).append(note.source)
            todo.append(note)
    present = {n.source for n in notes} | {s for s, _ in skipped}
    unlisted = tuple(s for s, _ in skipped if s.endswith("/"))  # their notes keep their chunks
    report.removed = sorted(s for s in stored if s not in present and not s.startswith(unlisted))
    return todo


@dataclass
class _Writer:
    """Writes one load's changes into a collection, keeping its recorded facts current."""

    collection: Any
    catalog: Catalog
    info: IndexInfo
    embeddings: Embeddings
    context: Context
    report: LoadReport
    batch_size: int
    notify: Notify = lambda _: None
    parse_budget: float = PARSE_BUDGET
    written: dict[str, str] = field(default_factory=dict)
    """Source -> content hash if the note gave no chunk, else '' (for every note written)."""
    mirrored: bool = True
    """The catalog holds every change made to the collection so far."""

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Mark the catalog as being written, then bump the generation before the first write.

        At the end, even after an error, the catalog is marked current, unless a write to
        the collection was cut short before the catalog followed it (then the next load
        reads the collection again into the catalog).
        """
        self.catalog.start_writing()
        self._bump()
        try:
            yield
        finally:
            if self.mirrored:
                self.catalog.finish_writing()

    def finish(self) -> None:
        """Record the facts later reads need, and bump the generation once more."""
        with_images = self.collection.get(where={"has_images": True}, include=["metadatas"])
        count = len({m.get("source") for m in with_images["metadatas"] or []})
        # Notes without chunks leave no record to compare with; their hashes are kept here.
        empty = dict(self._recorded().empty_notes)
        for source in self.report.removed + list(self.written):
            empty.pop(source, None)
        empty.update((s, digest) for s, digest in self.written.items() if digest)
        self._bump(image_notes=count, empty_notes=tuple(sorted(empty.items())))

    def _bump(
        self, image_notes: int | None = None, empty_notes: tuple[tuple[str, str], ...] | None = None
    ) -> None:
        current = self._recorded()
        finished = empty_notes is not None
        replace(
            self.info,
            generation=current.generation + 1,
            image_notes=current.image_notes if image_notes is None else image_notes,
            empty_notes=current.empty_notes if empty_notes is None else empty_notes,
            # The notes an interrupted load did not reach are still its parser's: the empty
            # ones are known by the collection's parser alone (``stored_notes``).
            parser_version=self.info.parser_version if finished else current.parser_version,
        ).record(self.collection)
        mark_written(self.context)

    def _recorded(self) -> IndexInfo:
        """The facts the collection holds now.

        An empty collection that ``rag load`` did not create holds none: this load's own
        (generation 0, no image or empty notes) stand for them.
        """
        return IndexInfo.of(self.collection) or self.info

    def delete(self, ids: set[str]) -> None:
        """Remove chunks by id."""
        if ids:
            self.mirrored = False
            self.collection.delete(ids=sorted(ids))
            mark_written(self.context)
            self.catalog.delete(sorted(ids))
            self.mirrored = True

    def write(
        self, todo: list[Note], stored: dict[str, StoredNote], progress: Progress | None
    ) -> None:
        """Chunk, embed in batches, upsert; then drop each note's chunks that no longer exist.

        A note that cannot be parsed is skipped and keeps what the index held of it, as an
        unreadable file does.
        """
        pending, counts = self._chunk(todo)
        todo = [note for note in todo if note.source in counts]
        for note in todo:
            self.written[note.source] = "" if counts[note.source] else note.digest
            if not counts[note.source]:
                self.report.empty.append(note.source)
        total = len(pending)
        if progress:
            progress(0, total)
        for start in range(0, total, self.batch_size):
            self._store(pending[start : start + self.batch_size])
            if progress:
                progress(min(start + self.batch_size, total), total)
        for note in todo:  # chunks past the note's new count go: all of a note now empty
            if note.source in stored:
                current = {chunk_id(note.source, i) for i in range(counts[note.source])}
                self.delete(stored[note.source].ids - current)

    def _chunk(self, todo: list[Note]) -> tuple[list[_Pending], dict[str, int]]:
        """The chunks of ``todo`` and their count per note; notes that fail are left out.

        A note may come from someone else: whatever error parsing it raises (a
        ``RecursionError`` from a parser, say), and a note whose parsing takes longer than
        the budget, skips that note with a warning, and the others load.
        """
        pending: list[_Pending] = []
        counts: dict[str, int] = {}
        failed: dict[str, str] = {}
        vault = Vault.open(self.info.notes_dir)
        for warning in vault.warnings:
            self.notify(f"warning: {warning}")
        every = parse_notes(
            [(note.text, note.source) for note in todo],
            vault,
            self.info.chunk_size,
            self.info.chunk_overlap,
            budget=self.parse_budget,
            notify=self.notify,
        )
        for note, parsed in zip(todo, every):
            if isinstance(parsed, Unparsed):
                failed[note.source] = parsed.reason
                continue
            for warning in parsed.meta.warnings:
                self.notify(f"warning: {note.source}: {warning}")
            counts[note.source] = len(parsed.chunks)
            pending.extend(
                _Pending(note, chunk, len(parsed.chunks), parsed.meta) for chunk in parsed.chunks
            )
        self._skip(failed)
        return pending, counts

    def _skip(self, failed: dict[str, str]) -> None:
        """Report the notes that could not be parsed as skipped, not added or updated."""
        if not failed:
            return
        report = self.report
        report.added = [source for source in report.added if source not in failed]
        report.updated = [source for source in report.updated if source not in failed]
        for source, reason in sorted(failed.items()):
            report.skipped.append((source, f"could not be parsed ({reason})"))
            self.notify(f"warning: skipped {source}: could not be parsed ({reason})")

    def _store(self, batch: list[_Pending]) -> None:
        texts = [
            document_text(
                self.info.convention, p.note.source, p.chunk.heading, p.chunk.content, p.meta.names
            )
            for p in batch
        ]
        with ollama_errors(self.context.ollama_base_url, self.context.embedding_model):
            vectors = self.embeddings.embed_documents(texts)
        self.report.embed_calls += 1
        ids = [chunk_id(p.note.source, p.chunk.index) for p in batch]
        documents = [p.chunk.content for p in batch]
        metadatas = [_metadata(p.note, p.chunk, p.count, p.meta) for p in batch]
        self.mirrored = False
        try:
            self.collection.upsert(
                ids=ids, embeddings=vectors, documents=documents, metadatas=metadatas
            )
        except Exception as exc:
            raise ServiceError(f"Chroma refused the write: {exc}") from exc
        mark_written(self.context)
        self.catalog.upsert(ids, documents, metadatas)
        self.mirrored = True
        self.report.chunks_written += len(batch)


@dataclass(frozen=True)
class _Pending:
    """A chunk waiting to be embedded, with its note and what the note's syntax said."""

    note: Note
    chunk: Chunk
    count: int
    meta: NoteMeta


def _metadata(note: Note, chunk: Chunk, count: int, meta: NoteMeta) -> dict[str, Any]:
    return {
        **meta.to_metadata(),
        **filter_keys(note.source, meta.tags),
        "source": note.source,
        "heading": chunk.heading,
        "chunk_index": chunk.index,
        "chunk_count": count,
        "note_hash": note.digest,
        "content_hash": hashlib.sha256(chunk.content.encode()).hexdigest()[:16],
        "images": json.dumps(list(chunk.images)),
        "has_images": bool(chunk.images),
    }
