"""The notes whose chunks are pinned by test_chunk_stability (shared with the script that pins)."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

EDGE_NOTES = {
    "edge/mixed.md": (
        "# Contacts\n\nJohn Smith\n\nBoston, MA 02110\n\nmail@example.com\n\nA\n\n"
        "• a bullet made with a dot\n\n* star item\n1. numbered item\n2. second\n\n"
        "## Français\n\nLe chat est sur la table. Il fait beau aujourd'hui à Paris.\n\n"
        "## Deutsch\n\nDer Hund läuft schnell über die Straße.\n\n"
        "## SHOUTING TITLE LIKE TEXT.\n\nITEM 1A. RISK FACTORS\n\n"
        "Short line\n\nAnother line, ending with a comma,\n\n12345\n\n"
        "![diagram of the network](images/net.png)\n\n"
        "```bash\nls -la\n```\n\n> a quoted remark about routers\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n"
    ),
    "edge/empty.md": "",
    "edge/only-heading.md": "# Only a heading\n",
    "edge/no-heading.md": "Plain text without any heading at all. " * 80,
}


def generated_notes(count: int = 12, seed: int = 11) -> dict[str, str]:
    """Notes shaped like the bench's (headings, paragraphs, lists, code)."""
    from bench.bench_ingest import note

    rng = random.Random(seed)
    return {f"gen/note-{i}.md": note(rng, i) for i in range(count)}


def corpus() -> dict[str, str]:
    """Every pinned note: source -> text."""
    notes = {}
    for folder in ("sample_notes", "eval_notes"):
        base = ROOT / "tests" / folder
        for path in sorted(base.rglob("*.md")):
            notes[f"{folder}/{path.relative_to(base).as_posix()}"] = path.read_text()
    notes.update(EDGE_NOTES)
    notes.update(generated_notes())
    return notes


def fingerprint(chunks) -> list[str]:
    """One short hash per chunk of everything a chunk carries."""
    return [
        hashlib.sha256(
            f"{c.index}\x00{c.heading}\x00{c.content}\x00{'|'.join(c.images)}".encode()
        ).hexdigest()[:20]
        for c in chunks
    ]
