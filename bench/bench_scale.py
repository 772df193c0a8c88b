"""A large index: full load, unchanged re-load, questions, listing, peak memory.

Two parts, so the figures stay measurable on a small machine:

1. Load throughput: a generated vault of ``--load-notes`` notes (about 6 KB, 5 chunks each)
   is loaded through ``rag load``'s own code path (partitioning included), then re-loaded
   unchanged.
2. Query side at scale: a collection of ``--chunks`` chunks is written directly (chunk texts
   generated, ids and metadata as a load writes them, partitioning bypassed: partitioning
   20,000 notes would take longer than this bench should), its catalog is built from it (what
   happens once to an index made before the catalog existed; a load keeps it current), then
   an unchanged re-load of the matching notes folder is planned against it, hybrid questions
   are asked, and the collections are listed.

Embeddings are the unit tests' keyword fake (instant), so every figure is the index's own
cost. Run it under ``flock /tmp/heavy.lock`` on shared machines:

    python bench/bench_scale.py [--chunks 100000] [--load-notes 1000]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graph.context import Context  # noqa: E402
from graph.index.catalog import Catalog, describe_collections  # noqa: E402
from graph.index.embedding import convention_for, document_text  # noqa: E402
from graph.index.ingest import COSINE, chunk_id, load_notes, scan_notes  # noqa: E402
from graph.index.obsidian import PARSER_VERSION  # noqa: E402
from graph.index.retrieval import search_notes  # noqa: E402
from graph.index.vectorstore import (  # noqa: E402
    IndexInfo,
    get_collection,
    open_client,
)
from tests.fakes import KeywordEmbeddings  # noqa: E402

WORDS = (
    "network router cache latency recipe flour starter train ticket budget invoice python "
    "profile deploy kernel garden tomato meeting agenda review lecture bicycle mountain "
    "harbour lantern violin pepper ferry glacier orchard canyon meadow compass"
).split()
CHUNKS_PER_NOTE = 5


def paragraph(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)) + "."


def vault_note(rng: random.Random, i: int) -> str:
    """About 6 KB: a title and five sections of about 1,200 characters."""
    parts = [f"# Note {i} {rng.choice(WORDS)}\n"]
    for s in range(CHUNKS_PER_NOTE):
        parts.append(f"## Part {s} {rng.choice(WORDS)} code{i}x{s}\n")
        parts.append(paragraph(rng, 160) + "\n")
    return "\n".join(parts)


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_vault(folder: Path, notes: int, seed: int) -> None:
    rng = random.Random(seed)
    for i in range(notes):
        sub = folder / f"area-{i % 50}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"note-{i:05d}.md").write_text(vault_note(rng, i))


def write_chunks_directly(context: Context, folder: Path, chunks: int) -> float:
    """A collection as a load of ``folder`` would leave it, without partitioning."""
    notes, _ = scan_notes(folder)
    info = IndexInfo(
        embedding_model=context.embedding_model,
        convention=convention_for(context.embedding_model),
        chunk_size=1500,
        chunk_overlap=300,
        notes_dir=str(folder.resolve()),
        generation=1,
        parser_version=PARSER_VERSION,
    )
    client = open_client(context)
    collection = client.create_collection(
        context.collection_name, metadata={**COSINE, **info.to_metadata()}
    )
    embedder = KeywordEmbeddings()
    started = time.perf_counter()
    batch: dict[str, list] = {"ids": [], "documents": [], "metadatas": [], "embeddings": []}
    written = 0
    for note in notes:
        sections = note.text.split("\n## ")[1:]
        for index, section in enumerate(sections):
            heading, _, body = section.partition("\n")
            text = body.strip()
            batch["ids"].append(chunk_id(note.source, index))
            batch["documents"].append(text)
            batch["metadatas"].append(
                {
                    "source": note.source,
                    "heading": heading,
                    "chunk_index": index,
                    "chunk_count": len(sections),
                    "note_hash": note.digest,
                    "content_hash": hashlib.sha256(text.encode()).hexdigest()[:16],
                    "images": "[]",
                    "has_images": False,
                    "parser": PARSER_VERSION,
                }
            )
            batch["embeddings"].append(
                embedder.embed_documents(
                    [document_text(info.convention, note.source, heading, text)]
                )[0]
            )
            written += 1
            if len(batch["ids"]) >= 1000:
                collection.upsert(**batch)
                batch = {key: [] for key in batch}
        if written >= chunks:
            break
    if batch["ids"]:
        collection.upsert(**batch)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--load-notes", type=int, default=1000)
    parser.add_argument("--questions", type=int, default=20)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp())
    try:
        # 1. load throughput through the real load path
        small = root / "small"
        write_vault(small, args.load_notes, seed=1)
        context = Context(
            chroma_persist_directory=str(root / "db"),
            collection_name="loaded",
            embedding_model="fake-embed",
        )
        started = time.perf_counter()
        report = load_notes(context, small, KeywordEmbeddings())
        wall = time.perf_counter() - started
        print(
            f"full load, {args.load_notes} notes: {wall:.1f} s "
            f"({report.chunks_written} chunks, {args.load_notes / wall:.0f} notes/s)"
        )
        started = time.perf_counter()
        load_notes(context, small, KeywordEmbeddings())
        print(f"unchanged re-load, {args.load_notes} notes: {time.perf_counter() - started:.2f} s")

        # 2. the query side at scale
        notes = -(-args.chunks // CHUNKS_PER_NOTE)
        big = root / "big"
        write_vault(big, notes, seed=2)
        scale = Context(
            chroma_persist_directory=str(root / "db"),
            collection_name="scale",
            embedding_model="fake-embed",
            retrieval_mode="hybrid",
        )
        wall = write_chunks_directly(scale, big, args.chunks)
        print(f"wrote {args.chunks} chunks of {notes} notes directly: {wall:.1f} s")
        started = time.perf_counter()
        Catalog.for_load(scale, get_collection(scale))
        print(f"catalog read from the collection (once): {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        report = load_notes(scale, big, KeywordEmbeddings())
        print(
            f"unchanged re-load, {notes} notes / {args.chunks} chunks: "
            f"{time.perf_counter() - started:.2f} s ({len(report.unchanged)} unchanged, "
            f"{len(report.added) + len(report.updated)} to embed)"
        )
        embedder = KeywordEmbeddings()
        rng = random.Random(3)
        times = []
        for q in range(args.questions + 1):
            question = f"{rng.choice(WORDS)} {rng.choice(WORDS)} code{rng.randrange(notes)}x1"
            started = time.perf_counter()
            result = search_notes(scale, embedder, question, k=4)
            times.append(time.perf_counter() - started)
            assert result.ranked, question
        print(
            f"first hybrid question: {times[0]:.2f} s; "
            f"median of the next {args.questions}: {statistics.median(times[1:]) * 1000:.0f} ms"
        )
        started = time.perf_counter()
        rows = describe_collections(scale)
        listing = {row["name"]: row["chunks"] for row in rows}
        print(f"rag collections: {time.perf_counter() - started:.2f} s {listing}")
        print(f"peak memory (ru_maxrss): {peak_mb():.0f} MB")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
