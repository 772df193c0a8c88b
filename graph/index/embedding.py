"""Per-model embedding conventions, applied identically at load and at query time.

``nomic-embed-text`` was trained with task prefixes (``search_document:`` for stored text,
``search_query:`` for questions); Ollama does not add them. The convention used at load
time is recorded in the collection's metadata and read back for every query.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.embeddings import Embeddings

from graph.context import Context
from graph.language import language_of

#: The embedding model of a new collection when none is chosen.
DEFAULT_EMBEDDING_MODEL = "nomic-embed-text"


@dataclass(frozen=True)
class Convention:
    """Text put in front of documents and queries before embedding."""

    document_prefix: str = ""
    query_prefix: str = ""


#: Relevance floors (1 - cosine distance) per embedding model. Scores are model specific:
#: the floor only drops chunks that are certainly unrelated; abstaining is the grader's job.
#: Both measured with `rag eval` on tests/retrieval_eval.json and among unrelated notes
#: (docs/quality.md): each keeps every answerable question there. nomic-embed-text scores
#: unrelated text higher: at 0.6 it already lost two answerable questions of 43.
THRESHOLDS: dict[str, float] = {"nomic-embed-text": 0.5, "all-minilm": 0.3}
DEFAULT_THRESHOLD = 0.3
#: The floors for a question in German (``graph.language``), where a model trained on English
#: scores a German section lower. With all-minilm at 0.3, a section writing the answer was in
#: the top 5 but below the floor for 5 of the German tune set's 49 answerable questions; at
#: 0.25 the grader kept one for 4 of them, gaining 4 right answers, and kept no added section
#: for a question the notes cannot answer; the German validation sets unchanged
#: (docs/quality.md). Other models keep their floor: no German floor was fitted for them.
GERMAN_THRESHOLDS: dict[str, float] = {"all-minilm": 0.25}


def default_threshold(model: str, question: str = "") -> float:
    """The relevance floor for an embedding model (tag ignored) and ``question``'s language."""
    name = model.split(":", 1)[0]
    if name in GERMAN_THRESHOLDS and question and language_of(question) == "de":
        return GERMAN_THRESHOLDS[name]
    return THRESHOLDS.get(name, DEFAULT_THRESHOLD)


def relevance_floor(context: Context, question: str = "") -> float:
    """The relevance floor in force for ``question``: the context's, else its model's."""
    if context.score_threshold is not None:
        return context.score_threshold
    return default_threshold(context.embedding_model or DEFAULT_EMBEDDING_MODEL, question)


_KNOWN: dict[str, Convention] = {
    "nomic-embed-text": Convention("search_document: ", "search_query: "),
    "nomic-embed-text-v2-moe": Convention("search_document: ", "search_query: "),
    "mxbai-embed-large": Convention(
        "", "Represent this sentence for searching relevant passages: "
    ),
}


#: The e5 family (intfloat's e5-small/base/large, multilingual or not, v2 or not, under any
#: Ollama namespace, e.g. ``jeffh/intfloat-multilingual-e5-small``) is trained with "query: "
#: and "passage: " before each text; the instruct models take an instruction instead.
_E5 = re.compile(r"(?:^|[-_/])e5-(?:small|base|large)(?:-v2)?$")


def convention_for(model: str) -> Convention:
    """The convention for an Ollama model name (tag ignored); none for unknown models."""
    name = model.split(":", 1)[0]
    if name in _KNOWN:
        return _KNOWN[name]
    if _E5.search(name.lower()):
        return Convention("passage: ", "query: ")
    return Convention()


def document_text(
    convention: Convention,
    source: str,
    heading: str,
    content: str,
    names: Sequence[str] = (),
) -> str:
    """What is embedded for a chunk: prefix, where it sits in the notes, then its text.

    The note path and heading path give the vector the context a reader has: measured
    with all-MiniLM on 30 notes, relevant chunks scored higher with this prefix while
    retrieval accuracy stayed the same. ``names`` (a note's title and aliases) join the
    path, so a note is found by any name it goes by.
    """
    location = f"{source} ({'; '.join(names)})" if names else source
    location = f"{location} > {heading}" if heading else location
    return f"{convention.document_prefix}{location}\n\n{content}"


def query_text(convention: Convention, question: str) -> str:
    """What is embedded for a question."""
    return f"{convention.query_prefix}{question}"


def embed_query(embeddings: Embeddings, convention: Convention, question: str) -> list[float]:
    """Embed a question with the collection's convention."""
    return embeddings.embed_query(query_text(convention, question))
