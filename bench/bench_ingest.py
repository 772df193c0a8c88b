"""Ingestion cost: full load, unchanged re-load, one-note edit, stemming, embedding calls.

A generated corpus of 200 notes (headings, paragraphs, lists, code blocks; 2-12 KB each)
is loaded with a fake embedder that sleeps a fixed time per batch (default 50 ms), into an
embedded Chroma in a temporary folder.

    python bench/bench_ingest.py [--notes 200] [--batch-latency 0.05] [--compare]

``--compare`` first runs the full load with the partitioning used before (unstructured's
language detection and narrative-text classification, one process), into its own collection,
so the two full-load times are measured side by side in one run. The last two rows price
the stemming load option: a full load with ``--no-stemming`` into its own collection, and
switching the first collection to it (its words read again, nothing embedded).
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graph.context import Context  # noqa: E402
from graph.index import chunking  # noqa: E402
from graph.index.ingest import LoadOptions, load_notes  # noqa: E402
from graph.index.offline import unstructured_offline  # noqa: E402
from tests.fakes import KeywordEmbeddings  # noqa: E402

WORDS = (
    "network router cache latency recipe flour starter train ticket budget invoice "
    "python profile deploy kernel garden tomato meeting agenda review lecture"
).split()


def note(rng: random.Random, i: int) -> str:
    parts = [f"# Note {i}: {rng.choice(WORDS)} and {rng.choice(WORDS)}\n"]
    for s in range(rng.randint(2, 6)):
        parts.append(f"## {rng.choice(WORDS).title()} {s}\n")
        for _ in range(rng.randint(1, 4)):
            parts.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 120))) + ".\n")
        if rng.random() < 0.5:
            parts.append(
                "\n".join(
                    f"- {rng.choice(WORDS)} {rng.randint(1, 99)}" for _ in range(rng.randint(2, 6))
                )
                + "\n"
            )
        if rng.random() < 0.3:
            parts.append("```python\nfor item in items:\n    print(item)\n```\n")
    return "\n".join(parts)


#: ``rag load --no-stemming``.
UNSTEMMED = LoadOptions(stemming=False)


def timed(
    label: str, context: Context, folder: Path, latency: float, options: LoadOptions | None = None
) -> None:
    embedder = KeywordEmbeddings(latency=latency)
    started = time.perf_counter()
    report = load_notes(context, folder, embedder, options)
    wall = time.perf_counter() - started
    print(f"{label:26} {wall:>7.2f} s  {embedder.calls:>4} embedding calls  {report.summary()}")


@contextmanager
def old_partitioning() -> Iterator[None]:
    """Partition as loads did before: full classification, in the loading process."""
    fast = chunking.chunk_notes
    chunking_module = sys.modules["graph.index.ingest"]

    def old(texts, size, overlap, **_):
        from unstructured.partition.md import partition_md

        def chunks(text):
            with unstructured_offline():
                elements = partition_md(text=text) if text.strip() else []
            return chunking.chunk_sections(chunking.sections_of(elements), size, overlap)

        return [chunks(t) for t in texts]

    chunking_module.chunk_notes = old  # type: ignore[attr-defined]
    try:
        yield
    finally:
        chunking_module.chunk_notes = fast  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=200)
    parser.add_argument("--batch-latency", type=float, default=0.05)
    parser.add_argument("--compare", action="store_true", help="time the old partitioning too")
    args = parser.parse_args()
    rng = random.Random(7)
    root = Path(tempfile.mkdtemp())
    try:
        folder = root / "notes"
        folder.mkdir()
        for i in range(args.notes):
            sub = folder / f"area-{i % 8}"
            sub.mkdir(exist_ok=True)
            (sub / f"note-{i:04d}.md").write_text(note(rng, i))
        size = sum(p.stat().st_size for p in folder.rglob("*.md")) / 1024
        print(
            f"{args.notes} notes, {size:.0f} KB, fake embedder {args.batch_latency * 1000:.0f} ms"
            " per batch of up to 32 chunks"
        )
        context = Context(
            chroma_persist_directory=str(root / "db"),
            collection_name="bench",
            embedding_model="fake-embed",
        )
        if args.compare:
            with old_partitioning():
                old = Context(
                    chroma_persist_directory=str(root / "db"),
                    collection_name="bench-old",
                    embedding_model="fake-embed",
                )
                timed("full load (old partition)", old, folder, args.batch_latency)
        timed("full load", context, folder, args.batch_latency)
        timed("unchanged re-load", context, folder, args.batch_latency)
        edited = folder / "area-3" / "note-0003.md"
        edited.write_text(edited.read_text() + "\n## Added\n\nA new paragraph.\n")
        timed("one note edited", context, folder, args.batch_latency)
        plain = Context(
            chroma_persist_directory=str(root / "db"),
            collection_name="bench-plain",
            embedding_model="fake-embed",
        )
        timed("full load, --no-stemming", plain, folder, args.batch_latency, UNSTEMMED)
        timed("switch to --no-stemming", context, folder, args.batch_latency, UNSTEMMED)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
