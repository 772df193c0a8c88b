"""Retrieval evaluation: hit@k, MRR and threshold behaviour per retrieval configuration.

A labelled set is a JSON file ``{"notes": "<folder, relative to the file>", "questions":
[{"q": ..., "sources": [note paths], "kind": ...}]}``; a question with no sources is
unanswerable from the notes. ``rag eval`` loads the notes into a collection of their own
and prints one row per configuration.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from langchain_core.embeddings import Embeddings

from graph.context import Context
from graph.index.retrieval import search_notes

MODES = ("vector", "bm25", "hybrid")


@dataclass(frozen=True)
class Labelled:
    """One question of the set."""

    question: str
    sources: tuple[str, ...]
    kind: str

    @property
    def answerable(self) -> bool:
        """Whether the notes contain the answer."""
        return bool(self.sources)


def load_set(path: str | Path) -> tuple[Path, list[Labelled]]:
    """The notes folder and the questions of a labelled set."""
    file = Path(path)
    data = json.loads(file.read_text())
    questions = [
        Labelled(q["q"], tuple(q.get("sources", [])), q.get("kind", "")) for q in data["questions"]
    ]
    return (file.parent / data["notes"]).resolve(), questions


@dataclass
class Ranked:
    """Top-k (source, cosine score) for one question in one mode."""

    item: Labelled
    hits: list[tuple[str, float]]

    def rank(self) -> int | None:
        """1-based rank of the first chunk from an expected note."""
        for position, (source, _) in enumerate(self.hits, start=1):
            if source in self.item.sources:
                return position
        return None

    def kept(self, floor: float) -> bool:
        """Whether any chunk reaches the grader at this floor."""
        return any(score >= floor for _, score in self.hits)


def rank_all(
    context: Context, embeddings: Embeddings, questions: list[Labelled], mode: str, k: int
) -> list[Ranked]:
    """Search every question in one mode, with no threshold (floors are applied later)."""
    open_floor = replace(context, score_threshold=0.0)
    ranked = []
    for item in questions:
        found = search_notes(open_floor, embeddings, item.question, k=k, mode=mode)
        ranked.append(Ranked(item, [(c["source"], c["score"]) for c in found.ranked]))
    return ranked


def metrics(ranked: list[Ranked], floor: float) -> dict[str, float]:
    """hit@k and MRR over answerable questions; kept / rejected shares at ``floor``."""
    answerable = [r for r in ranked if r.item.answerable]
    unanswerable = [r for r in ranked if not r.item.answerable]
    ranks = [r.rank() for r in answerable]
    return {
        "hit@k": sum(x is not None for x in ranks) / max(1, len(answerable)),
        "mrr": sum(1 / x for x in ranks if x) / max(1, len(answerable)),
        "answerable_kept": sum(r.kept(floor) for r in answerable) / max(1, len(answerable)),
        "unanswerable_rejected": sum(not r.kept(floor) for r in unanswerable)
        / max(1, len(unanswerable)),
    }


def report(
    context: Context,
    embeddings: Embeddings,
    questions: list[Labelled],
    *,
    k: int = 5,
    floors: tuple[float, ...] = (0.2, 0.3, 0.4, 0.5),
) -> str:
    """The comparison table, one row per (mode, floor)."""
    answerable = sum(q.answerable for q in questions)
    lines = [
        f"{len(questions)} questions ({answerable} answerable, "
        f"{len(questions) - answerable} unanswerable), embedding model "
        f"{context.embedding_model}, k={k}",
        f"| mode | floor | hit@{k} | MRR | answerable kept | unanswerable rejected |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for mode in MODES:
        ranked = rank_all(context, embeddings, questions, mode, k)
        for floor in floors:
            m = metrics(ranked, floor)
            lines.append(
                f"| {mode} | {floor:.1f} | {m['hit@k']:.3f} | {m['mrr']:.3f} | "
                f"{m['answerable_kept']:.3f} | {m['unanswerable_rejected']:.3f} |"
            )
    return "\n".join(lines)
