"""The words side of hybrid search: what BM25 sees of a chunk and of a question, and fusion.

The BM25 index itself is the catalog's FTS5 table (``graph.index.catalog``), updated by
every load, so no process builds it from the whole collection.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

_WORD = re.compile(r"[^\W_]{2,}")
#: Lucene's English stopword set (the one bm25s and Elasticsearch use): left out of questions.
_STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with".split()
)
#: The words questions are phrased with (question words, auxiliaries, the asker): left out too
#: unless the ``skip_question_words`` setting is off. A note rarely answers with them, yet a
#: short chunk that shares two of them ("how", "much") outranked the only chunk that shares
#: "rent" once notes on other topics were mixed in (BM25 MRR there 0.876 with them, 0.950
#: without); its effect on every set is in docs/quality.md.
_QUESTION_WORDS = frozenset(
    "how what when where which who whom whose why do does did am has have had been being "
    "can could should would shall may might must me my mine we our us you your".split()
)
#: Words of a question that are ranked; the rest of a very long question is ignored.
MAX_QUERY_TERMS = 64


def searchable_text(metadata: dict[str, Any], content: str) -> str:
    """What BM25 sees: note path, title, aliases and heading path count as words of the chunk.

    Aliases are stored as a JSON list; the tokenizer drops its brackets and quotes.
    """
    given = (str(metadata.get("title") or ""), str(metadata.get("aliases") or ""))
    names = " ".join(n for n in given if n and n != "[]")
    location = f"{metadata.get('source', '')} {names}" if names else metadata.get("source", "")
    return f"{location} {metadata.get('heading', '')} {content}"


def _fold(text: str) -> str:
    """Lower case without diacritics, as the FTS5 tokenizer (``remove_diacritics 2``) stores."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def query_terms(question: str, skip_question_words: bool = True) -> list[str]:
    """The question's distinct words of two or more letters or digits, without stopwords.

    Stopwords are Lucene's and, with ``skip_question_words``, the words questions are phrased
    with (``_QUESTION_WORDS``).
    """
    skipped = _STOPWORDS | _QUESTION_WORDS if skip_question_words else _STOPWORDS
    words = dict.fromkeys(w for w in _WORD.findall(_fold(question)) if w not in skipped)
    return list(words)[:MAX_QUERY_TERMS]


def reciprocal_rank_fusion(rankings: list[list[str]], k: int = 60, ties_by: int = 0) -> list[str]:
    """Fuse rankings: each id scores sum(1 / (k + rank)).

    Equal scores are common: an id first in one ranking and second in the other scores the
    same as the id placed the other way round. Of tied ids, one that every ranking holds comes
    first, and those ids follow the order of ``rankings[ties_by]``; the others keep first-seen
    order (the first ranking's order, then ids it lacks in the next ranking's order).
    """
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    held = [set(ranking) for ranking in rankings]
    decider = {item: rank for rank, item in enumerate(rankings[ties_by])} if rankings else {}

    def tie(item: str) -> tuple[int, int]:
        if all(item in ids for ids in held):
            return (0, decider[item])
        return (1, 0)  # the sort is stable: first-seen order

    # Rounded: the same terms added in another order can differ in the last bit.
    return sorted(scores, key=lambda item: (-round(scores[item], 12), tie(item)))
