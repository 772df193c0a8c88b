"""The words side of hybrid search: what BM25 sees of a chunk and of a question, and fusion.

The BM25 index itself is the catalog's FTS5 table (``graph.index.catalog``), updated by
every load, so no process builds it from the whole collection.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from graph.language import language_of

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
#: German function words, left out of a question written in German (``language_of``): the
#: Snowball project's German stop list, and the words German questions are phrased with
#: (left out with ``_QUESTION_WORDS``), folded as the index folds ("für" is "fur"). Only for
#: German questions: "die", "man", "war" and "hat" are English words too.
_GERMAN_STOPWORDS = frozenset(
    """aber alle allem allen aller alles als also am an ander andere anderem anderen anderer
    anderes anderm andern anderr anders auch auf aus bei bin bis bist da damit dann der den des
    dem die das daß du er ihn ihm ihr ihre ihrem ihren ihrer ihres euch euer eure eurem euren
    eurer eures es ein eine einem einen einer eines einig einige einigem einigen einiger
    einiges einmal etwas für gegen gewesen hab habe haben hat hatte hatten hier hin hinter ich
    mich mir im in indem ins ist jede jedem jeden jeder jedes jene jenem jenen jener jenes jetzt
    kann kein keine keinem keinen keiner keines können könnte machen man manche manchem manchen
    mancher manches mein meine meinem meinen meiner meines mit muss musste nach nicht nichts
    noch nun nur ob oder ohne sehr sein seine seinem seinen seiner seines selbst sich sie ihnen
    sind so solche solchem solchen solcher solches soll sollte sondern sonst über um und uns
    unsere unserem unseren unser unseres unter viel vom von vor während war waren warst was weg
    weil weiter welche welchem welchen welcher welches wenn werde werden wie wieder will wir
    wird wirst wo wollen wollte würde würden zu zum zur zwar zwischen""".split()
)
_GERMAN_QUESTION_WORDS = frozenset(
    """wann wer wen wem wessen warum wieso weshalb woher wohin womit wofür wozu worauf wieviel
    wieviele viele""".split()
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


_GERMAN_STOPWORDS_FOLDED = frozenset(_fold(w) for w in _GERMAN_STOPWORDS)
_GERMAN = _GERMAN_STOPWORDS_FOLDED | frozenset(_fold(w) for w in _GERMAN_QUESTION_WORDS)

#: Whether a German question's function words are left out (``_GERMAN_STOPWORDS``). Left out,
#: the German sets' hybrid MRR rose (the tune set 0.683 → 0.719, hit@5 0.796 → 0.837; the
#: validation set 0.787 → 0.822, 0.820 → 0.920) and no other set's changed; but questions the
#: notes cannot answer kept more sections above the floor (the function words had ranked
#: chunks below it into the top 5), and the German tune set's answers got worse: 16 of 49 right
#: (17) and 17 of 21 abstained (19). Off (docs/quality.md, the German function words).
GERMAN_STOPWORDS = False


def query_terms(question: str, skip_question_words: bool = True) -> list[str]:
    """The question's distinct words of two or more letters or digits, without stopwords.

    Stopwords are Lucene's and, with ``skip_question_words``, the words questions are phrased
    with (``_QUESTION_WORDS``); for a question in German, German ones too where
    ``GERMAN_STOPWORDS`` is on.
    """
    skipped = _STOPWORDS | _QUESTION_WORDS if skip_question_words else _STOPWORDS
    if GERMAN_STOPWORDS and language_of(question) == "de":
        skipped |= _GERMAN if skip_question_words else _GERMAN_STOPWORDS_FOLDED
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
