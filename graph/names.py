"""Names an answer gives that the note sections it was drafted from do not write.

A small model also writes a name from nowhere or from a neighbouring note: another host,
another tool, another town. A name is what can be looked up as written: a capitalised word
that does not start a sentence (``Backblaze``), a word mixing letters and digits (``WPA3``,
``wg0``), or a term between double quotes, guillemets or backticks. Each must be written in
one of the sections (their text, heading or note path, all of which the model was shown),
ignoring case. The answer's citations (``[1]``) are not names. A month or a weekday is a
date, written in more forms than one: "March" is written by ``Mar`` or by a date of that month
(``2026-03-19``, a daily note's name), "Saturday" by ``Sat``.

Only where capitals mark names: German capitalises every noun, and inflects it, so a German
answer's nouns are "names" its notes write in another form: on the German notes the lookup
withdrew 6 more right answers (and stopped 6 more near misses) than the figure lookups alone
(docs/quality.md, the answer path's designs). A draft from a German section is left to the
other checks.

Every pattern here runs in time linear in its text: notes and answers may be written by
someone else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from graph.figures import CITATIONS, ungrounded_figures
from graph.prompts import language_of

#: A list item's, a heading's or a quotation's marker at a line's start (``- ``, ``1) ``,
#: ``## ``, ``> ``): the word after it starts a sentence.
MARKER = re.compile(r"(?m)^[ \t]*(?:[-*+>]|#{1,6}|\d{1,3}[.)])[ \t]+")

#: A capitalised word after a space (not a line's start) that does not follow a sentence's
#: end; a word mixing letters and digits; a term between double quotes, guillemets or
#: backticks.
NAME = re.compile(
    r"(?<![.!?:;]\s)(?<=[ \t])([A-ZÀ-ÖØ-Þ][\w-]*\w)"
    r"|\b((?=\w*\d)(?=\w*[^\W\d_])\w+)\b"
    r"|[\"“„«`]([^\"”“«»`\n]{2,40})[\"”“»`]"
)


def names_of(answer: str) -> list[str]:
    """The names, codes and quoted terms of ``answer``, in order.

    Its citations, list and heading markers are left out first, and runs of spaces made one,
    so that ``done.[1] Then`` and ``- Restart`` start sentences. A code the figure lookup reads
    as a figure (``9am``, ``5GB``, ``2nd``) is the figure lookup's.
    """
    text = re.sub(r"[ \t]+", " ", MARKER.sub("", CITATIONS.sub("", answer)))
    found = [next(group for group in match.groups() if group) for match in NAME.finditer(text)]
    return [name for name in found if not ungrounded_figures(name, [])]


MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def date_forms(name: str) -> list[str]:
    """Patterns (on casefolded text) that write the month or weekday ``name``; none for a name.

    The name or a short form of it as a word of its own (``mar``, ``sept``, ``thurs``), and
    for a month an ISO date in it (``2026-03``, ``2026-03-19``).
    """
    folded = name.casefold()
    if folded not in MONTHS and folded not in WEEKDAYS:
        return []
    short = "|".join(folded[:end] for end in range(len(folded), 2, -1))
    forms = [rf"(?<!\w)(?:{short})(?!\w)"]
    if folded in MONTHS:
        forms.append(rf"(?<!\d)\d{{4}}-{MONTHS.index(folded) + 1:02d}(?!\d)")
    return forms


def unwritten_names(answer: str, grounds: Iterable[str], *, whole_words: bool = False) -> list[str]:
    """The names of ``answer`` that none of ``grounds`` writes (any case), each once.

    ``whole_words``: a name counts as written only as a word of its own, not inside a longer
    one (``Go`` is not in ``go-to``'s ``good``). The lookup that withdraws a draft reads any
    occurrence (``Postgres`` is in ``PostgreSQL``: a short form is not withdrawn); what keeps
    a draft without the model reads whole words: each errs towards the model's check.
    """
    written = "\n".join(grounds).casefold()
    missing: list[str] = []
    for name in names_of(answer):
        folded = name.casefold()
        found = (
            re.search(rf"(?<!\w){re.escape(folded)}(?!\w)", written)
            if whole_words
            else folded in written
        )
        found = found or any(re.search(form, written) for form in date_forms(name))
        if not found and name not in missing:
            missing.append(name)
    return missing


#: Languages that capitalise every noun: their capitals mark no names.
NOUNS_CAPITALISED = frozenset({"de"})


def capitals_mark_names(texts: Iterable[str]) -> bool:
    """Whether names can be read by their capitals in ``texts``.

    Not when one of them is in a language that capitalises every noun (``language_of``, as
    the grader reads a section's language).
    """
    return not any(language_of(text) in NOUNS_CAPITALISED for text in texts)
