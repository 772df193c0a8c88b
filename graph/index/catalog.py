"""A SQLite file beside each collection: per chunk its note's facts and its words (BM25).

Two reads used to need every chunk of the collection: planning a load (which notes are
stored, from which text) and building the BM25 index for hybrid search. At 100,000 chunks
those took 10 s and 30 s. The catalog keeps both ready on disk, updated by the load that
changes the collection, so neither read grows with the collection:

- ``chunks``: chunk id, note path, note hash, chunk count and parser of every chunk;
- ``words``: an SQLite FTS5 full-text index of each chunk's searchable text (its BM25
  ranking is FTS5's ``bm25()``), plus one token per tag/folder filter key. Words are stored
  stemmed (FTS5's Porter tokenizer), so "plants" in a question finds "Plant" in a note, or
  as written for a collection loaded with ``--no-stemming`` (``IndexInfo.stemmed``).

The catalog records the collection generation it reflects. A load marks it as being written
before its first change and as current when it finishes; a catalog that is neither (an
interrupted load, a collection written by another machine's load through a Chroma server,
an index made before the catalog existed), or that was made with another ``SCHEMA_VERSION``,
or whose words were stemmed otherwise than the collection now asks, is rebuilt from a paged
scan of the collection by the next process that opens it. SQLite's
own locking lets every process read while a load writes.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graph.context import Context
from graph.errors import ServiceError
from graph.index.filters import FOLDER, TAG, NoteFilter
from graph.index.lexical import query_terms, searchable_text
from graph.index.paths import cache_folder, server_id
from graph.index.private import private_file
from graph.index.vectorstore import IndexInfo, open_client, reading, scan

#: The catalog files of an embedded index live in this folder of the index folder.
FOLDER_NAME = "catalog"
#: Seconds a write waits for another process's (reading a large collection again takes a while;
#: readers never wait).
BUSY_TIMEOUT_S = 300
#: Above this many chunks, a question's words found in more than half of the chunks are left
#: out of the BM25 query: FTS5 gives them an inverse document frequency of zero (clamped to
#: 1e-6), so they cannot change the ranking of the chunks matching any other word, while
#: scoring them costs a pass over half the collection (0.4 s at 100,000 chunks).
COMMON_WORDS_FROM = 1000
#: How the catalog's tables are made; a catalog recording another version is rebuilt.
SCHEMA_VERSION = 2
#: The ``words`` table's tokenizers: words as written, or their Porter stems (``porter`` wraps
#: ``unicode61``), so "plants" matches "Plant" and "tomato" "tomatoes". Stemming is a load
#: option; its effect on each evaluation set and its cost at load time are in docs/quality.md.
_PLAIN = "unicode61 remove_diacritics 2"
_STEMMED = f"porter {_PLAIN}"

_SCHEMA = """
create table if not exists state (key text primary key, value integer not null);
create table if not exists chunks (
    rowid integer primary key,
    id text not null unique,
    source text not null,
    note_hash text not null,
    chunk_count integer not null,
    parser integer not null
);
create index if not exists chunks_by_source on chunks (source);
"""


def _words_tables(stemmed: bool) -> tuple[str, ...]:
    return (
        "create virtual table if not exists words using fts5 "
        f"(text, keys, tokenize = '{_STEMMED if stemmed else _PLAIN}')",
        "create virtual table if not exists vocabulary using fts5vocab (words, 'row')",
    )


#: A question's terms are tokenized the way the ``words`` table does (for ``_telling``'s
#: vocabulary lookup) by writing them into this table of the connection's own, one row each.
def _stems_tables(stemmed: bool) -> tuple[str, ...]:
    return (
        "create virtual table if not exists temp.stems using fts5 "
        f"(term, tokenize = '{_STEMMED if stemmed else _PLAIN}')",
        "create virtual table if not exists temp.stems_vocabulary "
        "using fts5vocab (temp, stems, instance)",
    )


@dataclass
class StoredNote:
    """What the collection holds of one note."""

    digests: set[str] = field(default_factory=set)
    ids: set[str] = field(default_factory=set)
    expected: int = -1
    parsers: set[int] = field(default_factory=set)


def catalog_path(context: Context, collection: Any) -> Path:
    """The collection's catalog file (a Chroma server's catalogs live in the user's cache)."""
    if context.chroma_server_url:
        folder = cache_folder() / FOLDER_NAME / server_id(context.chroma_server_url)
    else:
        folder = Path(context.effective_chroma_dir) / FOLDER_NAME
    return folder / f"{collection.id}.sqlite3"


def forget_catalog(context: Context, collection: Any) -> None:
    """Delete a dropped or replaced collection's catalog."""
    path = catalog_path(context, collection)
    for leftover in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        leftover.unlink(missing_ok=True)


def key_token(key: str) -> str:
    """A filter key (``tag:area/sub``) as one FTS5 token: letters and digits only."""
    return "k" + hashlib.sha256(key.encode()).hexdigest()[:16]


def _keys_text(metadata: dict[str, Any]) -> str:
    return " ".join(
        key_token(key)
        for key, value in metadata.items()
        if value is True and key.startswith((TAG, FOLDER))
    )


class Catalog:
    """One collection's catalog file, current with the collection (see the module docs)."""

    def __init__(self, path: Path, collection: Any) -> None:
        self.path = path
        self.collection = collection
        info = IndexInfo.of(collection)
        #: Whether the collection's words are matched by their stem (its load option; a load
        #: that changes it does so before it opens the catalog).
        self.stemmed = info.stemmed if info else True

    @classmethod
    def open(cls, context: Context, collection: Any) -> Catalog:
        """The collection's catalog for reading: rebuilt first unless current or being written.

        A catalog being written follows a running load's changes (or was left by an
        interrupted one, which the next load repairs).
        """
        catalog = cls(catalog_path(context, collection), collection)
        catalog._rebuild_unless(writing_will_do=True)
        return catalog

    @classmethod
    def for_load(cls, context: Context, collection: Any) -> Catalog:
        """The catalog for a load (under its lock): rebuilt unless current.

        Under the load lock, a catalog still marked as being written was left by an
        interrupted load.
        """
        catalog = cls(catalog_path(context, collection), collection)
        catalog._rebuild_unless(writing_will_do=False)
        return catalog

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        try:
            # The catalog holds the notes' words: made 0600 before SQLite opens it, so its
            # -wal and -shm files, which SQLite gives the database's mode, are 0600 too.
            private_file(self.path)
            connection = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)
        except (OSError, sqlite3.Error) as exc:
            raise ServiceError(f"cannot open the index catalog {self.path}: {exc}") from exc
        with closing(connection):
            try:
                connection.execute("pragma journal_mode = wal")
                connection.executescript(_SCHEMA)
                for statement in _words_tables(self.stemmed):
                    connection.execute(statement)
                with connection:  # one transaction: committed, or rolled back on error
                    yield connection
            except sqlite3.Error as exc:
                raise ServiceError(f"index catalog {self.path}: {exc}") from exc

    def _state(self, connection: sqlite3.Connection) -> dict[str, int]:
        return dict(connection.execute("select key, value from state").fetchall())

    def _generation(self) -> int:
        info = IndexInfo.of(self.collection)
        return info.generation if info else 0

    def _fits(self, state: dict[str, int], writing_will_do: bool) -> bool:
        if state.get("schema", 1) != SCHEMA_VERSION:
            return False
        if state.get("stemmed", 1) != int(self.stemmed):
            return False
        if state.get("writing"):
            return writing_will_do
        return state.get("generation") == self._generation()

    def _rebuild_unless(self, writing_will_do: bool) -> None:
        """Rebuild unless the catalog fits.

        Checked again under SQLite's write lock: two processes finding the same stale
        catalog read the collection once.
        """
        if self.path.exists():
            with self._connect() as connection:
                if self._fits(self._state(connection), writing_will_do):
                    return
        with self._connect() as connection:
            connection.execute("begin immediate")
            if not self._fits(self._state(connection), writing_will_do):
                self._read_collection(connection)

    def _read_collection(self, connection: sqlite3.Connection) -> None:
        """Read the whole collection again, in pages (into a ``words`` table made anew)."""
        connection.execute("delete from chunks")
        connection.execute("drop table if exists vocabulary")
        connection.execute("drop table if exists words")
        for statement in _words_tables(self.stemmed):  # the tokenizer the collection asks for
            connection.execute(statement)
        for page in scan(self.collection, ["documents", "metadatas"]):
            self._insert(connection, page["ids"], page["documents"], page["metadatas"])
        self._set(
            connection,
            writing=0,
            generation=self._generation(),
            schema=SCHEMA_VERSION,
            stemmed=int(self.stemmed),
        )

    def _set(self, connection: sqlite3.Connection, **values: int) -> None:
        connection.executemany(
            "insert into state (key, value) values (?, ?) "
            "on conflict (key) do update set value = excluded.value",
            list(values.items()),
        )

    def start_writing(self) -> None:
        """A load is about to change the collection: readers keep using the catalog."""
        with self._connect() as connection:
            self._set(connection, writing=1)

    def finish_writing(self) -> None:
        """The load finished: the catalog reflects the collection's generation."""
        with self._connect() as connection:
            self._set(connection, writing=0, generation=self._generation())

    def upsert(self, ids: list[str], documents: list[str], metadatas: list[dict]) -> None:
        """Record chunks just written to the collection (same arguments as its upsert)."""
        with self._connect() as connection:
            self._delete(connection, ids)
            self._insert(connection, ids, documents, metadatas)

    def delete(self, ids: list[str]) -> None:
        """Forget chunks just deleted from the collection."""
        with self._connect() as connection:
            self._delete(connection, ids)

    def _delete(self, connection: sqlite3.Connection, ids: list[str]) -> None:
        rows = [(i,) for i in ids]
        connection.executemany(
            "delete from words where rowid = (select rowid from chunks where id = ?)", rows
        )
        connection.executemany("delete from chunks where id = ?", rows)

    def _insert(
        self,
        connection: sqlite3.Connection,
        ids: Sequence[str],
        documents: Sequence[str | None] | None,
        metadatas: Sequence[Any] | None,
    ) -> None:
        for chunk, text, metadata in zip(ids, documents or [], metadatas or []):
            metadata = metadata or {}
            row = connection.execute(
                "insert into chunks (id, source, note_hash, chunk_count, parser) "
                "values (?, ?, ?, ?, ?)",
                (
                    chunk,
                    str(metadata.get("source", "")),
                    str(metadata.get("note_hash", "")),
                    int(metadata.get("chunk_count", -1)),
                    int(metadata.get("parser", 0)),
                ),
            ).lastrowid
            connection.execute(
                "insert into words (rowid, text, keys) values (?, ?, ?)",
                (row, searchable_text(metadata, text or ""), _keys_text(metadata)),
            )

    def notes(self) -> dict[str, StoredNote]:
        """What the collection holds, per note (chunks only; see ``stored_notes``)."""
        stored: dict[str, StoredNote] = {}
        with self._connect() as connection:
            rows = connection.execute(
                "select source, id, note_hash, chunk_count, parser from chunks"
            )
            for source, chunk, digest, count, parser in rows:
                entry = stored.setdefault(source, StoredNote())
                entry.ids.add(chunk)
                entry.digests.add(digest)
                entry.expected = count
                entry.parsers.add(parser)
        return stored

    def note_count(self) -> int:
        """How many notes have chunks in the collection."""
        with self._connect() as connection:
            (count,) = connection.execute("select count(distinct source) from chunks").fetchone()
        return int(count)

    def search(
        self,
        question: str,
        n: int,
        chosen: NoteFilter | None = None,
        skip_question_words: bool = True,
    ) -> list[str]:
        """Ids of the chunks sharing words with ``question``, best BM25 score first.

        ``chosen`` keeps only the chunks of the notes it selects (the same keys as the
        vector search's ``where``); ``skip_question_words``: see ``lexical.query_terms``.
        """
        terms = query_terms(question, skip_question_words)
        if not terms:
            return []
        with self._connect() as connection:
            terms = self._telling(connection, terms)
            if not terms:
                return []
            query = "text : (" + " OR ".join(f'"{t}"' for t in terms) + ")"
            for group in chosen.key_groups() if chosen else []:
                query += " AND keys : (" + " OR ".join(key_token(k) for k in group) + ")"
            rows = connection.execute(
                "select chunks.id from words join chunks on chunks.rowid = words.rowid "
                "where words match ? order by bm25(words, 1.0, 0.0) limit ?",
                (query, n),
            ).fetchall()
        return [chunk for (chunk,) in rows]

    def _telling(self, connection: sqlite3.Connection, terms: list[str]) -> list[str]:
        """The terms worth scoring (see ``COMMON_WORDS_FROM``)."""
        (total,) = connection.execute("select count(*) from chunks").fetchone()
        if total <= COMMON_WORDS_FROM:
            return terms
        telling = []
        for term, stem in zip(terms, _stems(connection, terms, self.stemmed)):
            found = connection.execute(
                "select doc from vocabulary where term = ?", (stem,)
            ).fetchone()
            if found is None or found[0] * 2 <= total:
                telling.append(term)
        return telling


def _stems(connection: sqlite3.Connection, terms: list[str], stemmed: bool) -> list[str]:
    """Each term as the ``words`` table stores it (one token: ``query_terms`` made it so)."""
    for statement in _stems_tables(stemmed):
        connection.execute(statement)
    connection.execute("delete from temp.stems")
    connection.executemany(
        "insert into temp.stems (rowid, term) values (?, ?)", list(enumerate(terms))
    )
    stems = dict(connection.execute("select doc, term from temp.stems_vocabulary").fetchall())
    return [stems.get(number, term) for number, term in enumerate(terms)]


def describe_collections(context: Context) -> list[dict[str, Any]]:
    """Name, note and chunk counts, embedding model and stemming of every collection.

    ``notes`` counts the notes with chunks (what a question can find); ``empty_notes`` the
    notes loaded with no text to index, tracked for the next load.
    """
    return reading(context, lambda: _describe_collections(context, open_client(context)))


def _describe_collections(context: Context, client: Any) -> list[dict[str, Any]]:
    rows = []
    for entry in client.list_collections():
        collection = client.get_collection(entry if isinstance(entry, str) else entry.name)
        info = IndexInfo.of(collection)
        rows.append(
            {
                "name": collection.name,
                "notes": Catalog.open(context, collection).note_count(),
                "empty_notes": len(info.empty_notes) if info else 0,
                "chunks": collection.count(),
                "embedding_model": info.embedding_model if info else None,
                "stemmed": info.stemmed if info else None,
            }
        )
    return sorted(rows, key=lambda row: row["name"])
