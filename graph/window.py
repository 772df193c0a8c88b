"""The part of a note section a question is about: what the grader and the writer read.

A section longer than the window is cut to its lines (sentences, for a long line) that share
the most words with the question, in their order, with ``[…]`` where lines were left out.
A section with no line sharing a word with the question is left whole, and so is one that
fits the window, and one whose lines all fit in it. The grader reads the window, so a long
section's one relevant line is not lost among the rest, and so does the answer's writer; the
answer check reads the whole section.

Words are matched loosely, so that German compounds and inflections meet: a question's word
matches where the line holds it anywhere ("mehl" in "Roggenmehl"), and a word of six letters
or more matches its first five ("vorheizen" and "vorgeheizt" do not, "Sauerteigbrot" and
"Sauerteig" do).
"""

from __future__ import annotations

import re

from graph.index.retrieval import RetrievedChunk

#: How many characters of a long section the grader and the writer read (each node can be
#: set on its own: ``GRADE_WINDOW``, ``ANSWER_WINDOW``). Set before any set was measured with
#: it, and not changed after.
QUESTION_WINDOW = 600

#: What marks lines left out of a window.
LEFT_OUT = "[…]"

#: Words too common to say what a question is about (English and German); words shorter than
#: four letters are never read.
COMMON = frozenset(
    """what which when where does have with from that this your there into about many much
    long were will would should could them they their then than also just only after before
    welche welcher welches wann wie viel viele lange wird werden habe haben mein meine
    meinem meinen meiner einen eine einer eines nicht oder sind bei beim fuer für auf dem
    den des der die das und mit nach""".split()
)
_WORD = re.compile(r"\w{4,}")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def question_terms(question: str) -> set[str]:
    """The words of ``question`` that say what it is about, lower-cased."""
    return {w for w in (m.lower() for m in _WORD.findall(question)) if w not in COMMON}


def mentions(term: str, text: str) -> bool:
    """Whether ``text`` (lower-cased) holds ``term``, or for a long word its first five letters."""
    return term in text or (len(term) >= 6 and term[:5] in text)


def question_window(chunk: RetrievedChunk, question: str, size: int) -> RetrievedChunk:
    """``chunk`` with its text cut to about ``size`` characters of the lines ``question`` is about.

    The chunk itself when its text fits ``size``, no line shares a word with the question, or
    every line fits. The best line is kept even when it alone is longer than ``size``.
    """
    text = chunk["content"]
    if len(text) <= size:
        return chunk
    units: list[str] = []
    for line in text.splitlines():
        if line.strip():
            units.extend(_SENTENCE_END.split(line) if len(line) > size // 2 else [line])
    terms = question_terms(question)
    shared = [sum(mentions(t, unit.lower()) for t in terms) for unit in units]
    chosen: set[int] = set()
    used = 0
    # The lines sharing the most words first, earlier lines first among equals.
    for i in sorted(range(len(units)), key=lambda i: (-shared[i], i)):
        if shared[i] == 0:
            break
        if chosen and used + len(units[i]) + 1 > size:
            continue
        chosen.add(i)
        used += len(units[i]) + 1
    if not chosen or len(chosen) == len(units):
        return chunk  # nothing to leave out: the section itself
    kept, last = [], -1
    for i in sorted(chosen):
        if last >= 0 and i != last + 1:
            kept.append(LEFT_OUT)
        kept.append(units[i])
        last = i
    return {**chunk, "content": "\n".join(kept)}
