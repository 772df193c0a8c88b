"""A draft that restates the question and leaves out the answer.

"The microchip number of Pilchard is [1].": the 1.5B writer sometimes writes the question
back as a statement and puts the citation where the answer belongs. It states nothing, yet
its names are written in its notes, so the answer check would keep it, and a near miss is
shown as answered. Such a draft ends with a word that needs what follows it (a form of "be",
or a preposition) right before its citations, and holds no word of four letters or more, no
name and no figure that its question does not. English words only: in other languages the
check reads the draft as before. On the tune sets three drafts have that shape: two near
misses (one of them the model's check withdrew too) and one answerable question's draft that
was wrong anyway; no draft of the validation sets has it (docs/quality.md, a draft that
restates the question).
"""

from __future__ import annotations

import re

from graph.figures import CITATIONS, ungrounded_figures
from graph.names import names_of

#: A draft's end (stripped): a form of "be" or a preposition, then only citations ("... is
#: [1]."). Each run of spaces can be read one way only, so a long one costs linear time.
EMPTY_END = re.compile(
    r"\b(?:is|are|was|were|on|at|in|of|by|to|from|for|with)"
    r"(?:\s*[\[【][^\]】\n]{0,80}[\]】])+(?:\s*[.!])?$",
    re.IGNORECASE,
)

#: The words that count: four letters or more (not "the", "is", "of").
WORD = re.compile(r"[^\W\d_]{4,}")


def leaves_out_the_answer(question: str, answer: str) -> bool:
    """Whether ``answer`` restates ``question`` and ends where its answer belongs."""
    if not EMPTY_END.search(answer.strip()):
        return False
    text = CITATIONS.sub(" ", answer)
    asked = {word.casefold() for word in WORD.findall(question) + names_of(question)}
    given = WORD.findall(text) + names_of(text)
    new_words = [word for word in given if word.casefold() not in asked]
    return not new_words and not ungrounded_figures(text, [question])
