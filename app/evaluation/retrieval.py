"""Retrieval evaluation: hit@k, MRR and threshold behaviour per retrieval configuration.

A labelled set is a JSON file ``{"notes": "<folder, relative to the file>", "questions":
[{"q": ..., "sources": [note paths], "kind": ...}]}``; a question with no sources is
unanswerable from the notes. ``rag eval`` loads the notes into a collection of their own
and prints one row per configuration. With ``--graded`` the chunks that pass the floor are
also graded by the chat model as ``grade_documents`` grades them, and two rows follow: the
chunks the grader keeps (what the graph answers from) and every chunk with those it keeps
first (the grader as a reranker).

``notes`` may also be a list of folders: their notes are evaluated as one folder (copied into
one under the user's cache, paths relative to each folder kept), so a labelled set can be mixed
with unrelated notes (``tests/retrieval_eval_distractors.json``) without copying its notes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from langchain_core.embeddings import Embeddings

from graph.context import Context
from graph.errors import ConfigError
from graph.index.embedding import relevance_floor
from graph.index.paths import cache_folder
from graph.index.private import private_folder
from graph.index.retrieval import RetrievedChunk, search_notes
from graph.models import MODELS_KEY, ModelProvider
from graph.state import Grade

MODES = ("vector", "bm25", "hybrid")


@dataclass(frozen=True)
class Labelled:
    """One question of the set."""

    question: str
    sources: tuple[str, ...]
    kind: str
    facts: tuple[tuple[str, ...], ...] = ()
    """Each expected fact as its accepted spellings (answer sets only)."""

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
    private_folder(target)  # copies of notes
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
    texts: list[str] = field(default_factory=list)
    """The chunks' texts, in the order of ``hits``."""

    def rank(self) -> int | None:
        """1-based rank of the first chunk from an expected note."""
        for position, (source, _) in enumerate(self.hits, start=1):
            if source in self.item.sources:
                return position
        return None

    def answer_rank(self) -> int | None:
        """1-based rank of the first chunk that answers: from an expected note, or holding facts.

        A chunk holding every expected fact answers too: a note the labels do not name may
        state the answer (a daily note and the project note it was copied into).
        """
        from app.evaluation.answers import fact_found

        for position, (source, _) in enumerate(self.hits, start=1):
            text = self.texts[position - 1] if position <= len(self.texts) else ""
            if source in self.item.sources or (
                self.item.facts and all(fact_found(text, fact) for fact in self.item.facts)
            ):
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
        hits = [(c["source"], c["score"]) for c in found.ranked]
        ranked.append(Ranked(item, hits, [c["content"] for c in found.ranked]))
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


@dataclass
class Graded:
    """One question's top-k after the grader: what it kept, and every chunk with those first."""

    kept: Ranked
    kept_first: Ranked


@dataclass
class GradedRun:
    """Every question graded, with the number of grades and of unreadable ones kept anyway."""

    questions: list[Graded]
    grades: int = 0
    fallbacks: int = 0


def rank_graded(
    context: Context,
    embeddings: Embeddings,
    models: ModelProvider,
    questions: list[Labelled],
    k: int,
    notify: Callable[[str], None] = lambda line: None,
    progress: Callable[[int, int, str], None] = lambda done, total, note: None,
) -> GradedRun:
    """Each question's chunks graded as the graph grades them.

    ``notify`` gets a line per question, ``progress`` the questions graded and their number.

    The chunks and the floor are the graph's (the context's mode and threshold), so a
    question whose chunks are all rejected is one the graph answers "not in your notes"
    (naming the closest notes in retrieval order). A grade still unreadable when asked again
    keeps its chunk, as in the graph (``fallbacks`` counts them).
    """
    from langchain_core.runnables import RunnableLambda

    from nodes.grade_documents import grade_chunks

    def grade_all(call: tuple[list[RetrievedChunk], str]) -> list[Grade]:
        return grade_chunks(*call, context)

    # The grader finds its model provider in the run's configuration, as inside the graph.
    grader = RunnableLambda(grade_all).with_config(configurable={MODELS_KEY: models})
    run = GradedRun([])
    for number, item in enumerate(questions, start=1):
        found = search_notes(context, embeddings, item.question, k=k)
        grades = grader.invoke((found.relevant, item.question)) if found.relevant else []
        run.grades += len(grades)
        run.fallbacks += sum(g["fallback"] for g in grades)
        # found.relevant holds the very chunks of found.ranked at or above the floor; the
        # ones below it are never graded and count as rejected.
        kept_ids = {id(c) for c, g in zip(found.relevant, grades) if g["relevant"]}
        kept = [(c["source"], c["score"]) for c in found.ranked if id(c) in kept_ids]
        rest = [(c["source"], c["score"]) for c in found.ranked if id(c) not in kept_ids]
        run.questions.append(Graded(Ranked(item, kept), Ranked(item, kept + rest)))
        place = run.questions[-1].kept.rank()
        expected = ""
        if item.answerable:
            expected = f"; expected note {place}" if place else "; expected note not kept"
        notify(
            f"[graded {number}/{len(questions)}] {item.question[:60]}: "
            f"kept {len(kept)} of {len(grades)}{expected}"
        )
        progress(number, len(questions), "")
    return run


def table_row(label: str, floor: float, ranking: dict[str, float], reach: dict[str, float]) -> str:
    """One row: hit@k and MRR from ``ranking``, kept / rejected shares from ``reach``."""
    return (
        f"| {label} | {floor:.1f} | {ranking['hit@k']:.3f} | {ranking['mrr']:.3f} | "
        f"{reach['answerable_kept']:.3f} | {reach['unanswerable_rejected']:.3f} |"
    )


def report(
    context: Context,
    embeddings: Embeddings,
    questions: list[Labelled],
    *,
    k: int = 5,
    floors: tuple[float, ...] = (0.2, 0.3, 0.4, 0.5),
    graded_by: ModelProvider | None = None,
    notify: Callable[[str], None] = lambda line: None,
    progress: Callable[[int, int, str], None] = lambda done, total, note: None,
) -> str:
    """The comparison table, one row per (mode, floor); ``graded_by`` adds the grader's rows."""
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
            lines.append(table_row(mode, floor, m, m))
    if graded_by is not None:
        floor = relevance_floor(context)
        at_floor = replace(context, score_threshold=floor)
        run = rank_graded(at_floor, embedded_once, graded_by, questions, k, notify, progress)
        kept = metrics([g.kept for g in run.questions], floor)
        first = metrics([g.kept_first for g in run.questions], floor)
        # What reaches the answer is what the grader keeps, in both rows: every kept chunk is
        # at or above the floor, so "kept" in ``metrics`` is "the grader kept any".
        name = f"{context.retrieval_mode}, graded by {context.chat_model}"
        lines += [
            table_row(f"{name}: kept only", floor, kept, kept),
            table_row(f"{name}: kept first", floor, first, kept),
            f"graded: {run.grades} chunks at or above the floor, one grade each ({run.fallbacks} "
            "unreadable twice, kept as the graph keeps them). Kept only: the chunks an answer "
            "is written from. Kept first: every chunk, those the grader keeps ahead of those "
            "it rejects (the grader as a reranker). Answerable kept / unanswerable rejected: "
            "whether the grader keeps any chunk.",
        ]
    return "\n".join(lines)
