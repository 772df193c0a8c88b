"""Each retrieval choice of the hybrid ranking, measured on every tune and validation set.

The choices: Porter stemming of BM25's words (the load option ``--no-stemming``: the catalog
is read again, nothing re-embedded), leaving question words out of BM25 queries and the rule
that breaks fusion ties (the settings ``skip_question_words`` and ``fusion_ties``), and the
fusion constant. Each variant changes one choice from what ships; ``as of 2026-11-30`` changes all
of them back at once. Per set and variant it prints hybrid MRR; a variant is worth shipping
only when no set gets worse beyond its noise (``app.evaluation.sets.compare``). The test sets
are never measured here.

Embeddings are all-MiniLM-L6-v2 computed in-process (``tests/minilm.py``, the vectors the
stand-in serves as ``all-minilm``); the collections are the ones ``rag eval --sets`` uses.

    python bench/retrieval_choices.py [--manifest tests/eval_sets/sets.json] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_core.embeddings import Embeddings  # noqa: E402

from app.evaluation import sets as protocol  # noqa: E402
from app.evaluation.retrieval import QuestionsEmbeddedOnce, rank_all  # noqa: E402
from graph.context import Context  # noqa: E402
from graph.index import lexical, retrieval  # noqa: E402
from graph.index.ingest import LoadOptions, load_notes  # noqa: E402
from tests.minilm import MiniLM  # noqa: E402


class MiniLMEmbeddings(Embeddings):
    """all-minilm's vectors without a server."""

    def __init__(self) -> None:
        self.model = MiniLM()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text."""
        return self.model.embed(texts)

    def embed_query(self, text: str) -> list[float]:
        """The question's vector."""
        return self.model.embed([text])[0]


#: A variant: given the set's context and a function that reloads its notes with some load
#: options (nothing is embedded again), it yields the context to rank with.
Variant = Callable[[Context, Callable[[LoadOptions], object]], AbstractContextManager[Context]]


@contextlib.contextmanager
def shipped(context: Context, reload: Callable[[LoadOptions], object]) -> Iterator[Context]:
    """Every setting and load option at its default."""
    yield context


@contextlib.contextmanager
def unstemmed(context: Context, reload: Callable[[LoadOptions], object]) -> Iterator[Context]:
    """``rag load --no-stemming``: BM25's words as written (the catalog is read again)."""
    reload(LoadOptions(stemming=False))
    try:
        yield context
    finally:
        reload(LoadOptions(stemming=True))


@contextlib.contextmanager
def question_words_kept(
    context: Context, reload: Callable[[LoadOptions], object]
) -> Iterator[Context]:
    """``RAG_SKIP_QUESTION_WORDS=false``: only Lucene's stopwords are left out of BM25 queries."""
    yield replace(context, skip_question_words=False)


@contextlib.contextmanager
def vector_ties(context: Context, reload: Callable[[LoadOptions], object]) -> Iterator[Context]:
    """``RAG_FUSION_TIES=vector``: fusion ties in the vector ranking's order."""
    yield replace(context, fusion_ties="vector")


@contextlib.contextmanager
def first_seen_ties(context: Context, reload: Callable[[LoadOptions], object]) -> Iterator[Context]:
    """Fusion ties in first-seen order (vector ranking first), as before the BM25 tie rule."""

    def fuse(rankings: list[list[str]], k: int = 60, ties_by: int = 0) -> list[str]:
        scores: dict[str, float] = {}
        for ranking in rankings:
            for rank, item in enumerate(ranking, start=1):
                scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
        return sorted(scores, key=lambda item: -round(scores[item], 12))

    with mock.patch.object(retrieval, "reciprocal_rank_fusion", fuse):
        yield context


def fusion_constant(constant: int) -> Variant:
    """Reciprocal rank fusion with another constant than 60."""

    @contextlib.contextmanager
    def variant(context: Context, reload: Callable[[LoadOptions], object]) -> Iterator[Context]:
        original = lexical.reciprocal_rank_fusion

        def fuse(rankings: list[list[str]], k: int = 60, ties_by: int = 0) -> list[str]:
            return original(rankings, k=constant, ties_by=ties_by)

        with mock.patch.object(retrieval, "reciprocal_rank_fusion", fuse):
            yield context

    return variant


@contextlib.contextmanager
def as_of_2026_11_30(
    context: Context, reload: Callable[[LoadOptions], object]
) -> Iterator[Context]:
    """Every choice as before stemming, question-word removal and the BM25 tie rule."""
    with (
        unstemmed(context, reload),
        question_words_kept(context, reload) as kept,
        first_seen_ties(kept, reload) as old,
    ):
        yield old


VARIANTS: dict[str, Variant] = {
    "shipped": shipped,
    "unstemmed": unstemmed,
    "question words kept": question_words_kept,
    "ties: vector order": vector_ties,
    "ties: first seen": first_seen_ties,
    "fusion k=20": fusion_constant(20),
    "fusion k=120": fusion_constant(120),
    "as of 2026-11-30": as_of_2026_11_30,
}


def main(argv: list[str] | None = None) -> int:
    """Print one row per set, one column per variant (hybrid MRR), and write them as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", default="tests/eval_sets/sets.json")
    parser.add_argument("--json", default=None, help="write every figure to this file")
    parser.add_argument("--chroma-dir", default=None, help="index folder (default: the user's)")
    args = parser.parse_args(argv)
    sets = protocol.selected(protocol.read_manifest(args.manifest), [], test=False)
    embeddings = MiniLMEmbeddings()
    base = Context(embedding_model="all-minilm", retrieval_mode="hybrid")
    if args.chroma_dir:
        base = replace(base, chroma_persist_directory=args.chroma_dir)
    results: dict[str, dict[str, dict]] = {}
    for eval_set in sets:
        context = protocol.context_for(base, eval_set)
        folder = protocol.notes_folder(eval_set)

        def reload(options: LoadOptions) -> object:
            return load_notes(context, folder, embeddings, options)

        reload(LoadOptions(stemming=True))
        questions = protocol.questions_of(eval_set)
        once = QuestionsEmbeddedOnce(embeddings)
        results[eval_set.name] = {}
        for label, variant in VARIANTS.items():
            with variant(context, reload) as varied:
                ranked = rank_all(varied, once, questions, "hybrid", context.k)
            rr = protocol.reciprocal_ranks(ranked)
            results[eval_set.name][label] = {
                "mrr": sum(rr) / max(1, len(rr)),
                "reciprocal_ranks": rr,
            }
            mrr = results[eval_set.name][label]["mrr"]
            print(f"{eval_set.name}\t{label}\t{mrr:.3f}", file=sys.stderr)
    labels = list(VARIANTS)
    print("| set | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    for name, row in results.items():
        shipped = row["shipped"]["reciprocal_ranks"]
        cells = []
        for label in labels:
            rr = row[label]["reciprocal_ranks"]
            low, high = protocol.paired_difference_interval(rr, shipped)
            mark = " (worse)" if high < 0 else " (better)" if low > 0 else ""
            cells.append(f"{row[label]['mrr']:.3f}{mark}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
