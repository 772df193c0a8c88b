"""Names an answer gives that the note sections it was drafted from do not write.

The figure lookup (``graph/figures.py``) catches a number from nowhere; a small model also
writes a name from nowhere or from a neighbouring note: another host, another tool, another
town. A name here is what can be looked up as written: a capitalised word that does not
start a sentence (``Quad9``, ``Kyoto``), a word mixing letters and digits (``WPA3``,
``wg0``), or a term between double quotes or backticks. Each must be written in those
sections (their text, heading or note path), ignoring case. Any language: nothing here reads
words, only their shape.

Every pattern runs in time linear in its text: answers quote notes someone else may have
written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from graph.figures import CITATIONS

#: A capitalised word after a space that does not follow a sentence's end; a word mixing
#: letters and digits; a term between double quotes, guillemets or backticks.
NAME = re.compile(
    r"(?<![.!?:\n]\s)(?<=\s)([A-ZÀ-ÖØ-Þ][\w-]*\w)"
    r"|\b((?=\w*\d)(?=\w*[^\W\d_])\w+)\b"
    r"|[\"“„«`]([^\"”“«»`\n]{2,40})[\"”“»`]"
)


def names_of(answer: str) -> list[str]:
    """The names, codes and quoted terms of ``answer``, its citations left out."""
    text = CITATIONS.sub(" ", answer)
    return [next(group for group in match.groups() if group) for match in NAME.finditer(text)]


def unwritten_names(answer: str, grounds: Iterable[str]) -> list[str]:
    """The names of ``answer`` that none of ``grounds`` writes (case-insensitive), in order."""
    written = "\n".join(grounds).casefold()
    missing: list[str] = []
    for name in names_of(answer):
        if name.casefold() not in written and name not in missing:
            missing.append(name)
    return missing
