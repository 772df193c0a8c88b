"""Retrieval evaluation: hit@k, MRR and threshold behaviour per retrieval configuration.

A labelled set is a JSON file ``{"notes": "<folder, relative to the file>", "questions":
[{"q": ..., "sources": [note paths], "kind": ...}]}``; a question with no sources is
unanswerable from the notes. ``rag eval`` loads the notes into a collection of their own
and prints one row per configuration.

``notes`` may also be a list of folders: their notes are evaluated as one folder (copied into
one under the user's cache, paths relative to each folder kept), so a labelled set can be mixed
with unrelated notes (``tests/retrieval_eval_distractors.json``) without copying its notes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from langchain_core.embeddings import Embeddings

from graph.context import Context
from graph.errors import ConfigError
from graph.index.paths import cache_folder
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


def eval_collection(set_path: str | Path, embedding_model: str | None) -> str:
    """``rag eval``'s collection when none is named: one per set and embedding model.

    A collection is loaded from one notes folder and each set names its own, so two sets
    sharing one collection would make the second ask for ``--rebuild``.
    """
    parts = [embedding_model or "default", Path(set_path).stem]
    return "eval-" + "-".join(re.sub(r"[^A-Za-z0-9._-]+", "-", p).strip("-._") for p in parts)


def load_set(path: str | Path) -> tuple[Path, list[Labelled]]:
    """The notes folder and the questions of a labelled set."""
    file = Path(path)
    data = json.loads(file.read_text())
    questions = [
        Labelled(q["q"], tuple(q.get("sources", [])), q.get("kind", "")) for q in data["questions"]
    ]
    named = data["notes"] if isinstance(data["notes"], list) else [data["notes"]]
    folders = [(file.parent / folder).resolve() for folder in named]
    if len(folders) == 1:
        return folders[0], questions
    key = hashlib.sha256("\n".join(map(str, folders)).encode()).hexdigest()[:12]
    return merge_folders(folders, cache_folder() / "eval-notes" / key), questions


def _files(folder: Path) -> dict[str, Path]:
    """Every file under ``folder`` by its relative path, hidden entries left out."""
    found = {}
    for parent, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in names:
            if not name.startswith("."):
                file = Path(parent) / name
                found[file.relative_to(folder).as_posix()] = file
    return found


def merge_folders(folders: list[Path], target: Path) -> Path:
    """``target`` holding exactly the files of ``folders``, each at its relative path.

    Unchanged files are not rewritten and files no longer in any folder are removed, so a
    collection loaded from ``target`` is updated incrementally, like any notes folder. Two
    folders holding the same relative path are an error (which note would the set mean?).
    """
    wanted: dict[str, Path] = {}
    for folder in folders:
        if not folder.is_dir():
            raise ConfigError(f"notes folder {folder} does not exist or is not a folder")
        for relative, file in _files(folder).items():
            if relative in wanted:
                raise ConfigError(f"{relative} is in both {wanted[relative]} and {file}")
            wanted[relative] = file
    target.mkdir(parents=True, exist_ok=True)
    for relative, stale in _files(target).items():
        if relative not in wanted:
            stale.unlink()
    for relative, file in wanted.items():
        copy = target / relative
        content = file.read_bytes()
        if not copy.is_file() or copy.read_bytes() != content:
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(content)
    return target


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


class QuestionsEmbeddedOnce(Embeddings):
    """``embeddings``, with each question's vector kept for the next mode.

    Every mode embeds the question (the floor is on its cosine score in every mode), so
    without this each question was embedded once per mode: three model calls instead of one.
    """

    def __init__(self, embeddings: Embeddings) -> None:
        self.embeddings = embeddings
        self.vectors: dict[str, list[float]] = {}

    def embed_query(self, text: str) -> list[float]:
        """The question's vector, from the model the first time only."""
        if text not in self.vectors:
            self.vectors[text] = self.embeddings.embed_query(text)
        return self.vectors[text]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """The model's vectors, not kept (loads embed each chunk once anyway)."""
        return self.embeddings.embed_documents(texts)


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
    embedded_once = QuestionsEmbeddedOnce(embeddings)
    for mode in MODES:
        ranked = rank_all(context, embedded_once, questions, mode, k)
        for floor in floors:
            m = metrics(ranked, floor)
            lines.append(
                f"| {mode} | {floor:.1f} | {m['hit@k']:.3f} | {m['mrr']:.3f} | "
                f"{m['answerable_kept']:.3f} | {m['unanswerable_rejected']:.3f} |"
            )
    return "\n".join(lines)
