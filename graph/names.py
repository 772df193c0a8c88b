"""Names an answer gives that the note sections it was drafted from do not write.

A small model also writes a name from nowhere or from a neighbouring note: another host,
another tool, another town. A name is what can be looked up as written: a capitalised word
that does not start a sentence (``Backblaze``), a word mixing letters and digits (``WPA3``,
``wg0``), or a term between double quotes, guillemets or backticks. Each must be written in
one of the sections (their text, heading or note path, all of which the model was shown),
ignoring case. The answer's citations (``[1]``) are not names. A month or a weekday is a
date, written in more forms than one: "March" is written by ``30 Mar`` or by a date of that
month (``2026-03-19``, a daily note's name), "Saturday" by ``Sat 18`` (``date_written``).

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
from graph.language import language_of

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
#: The usual short forms of each month and weekday, in the order of ``MONTHS``, ``WEEKDAYS``.
MONTH_SHORT = (
    ("jan",), ("feb",), ("mar",), ("apr",), (), ("jun",),
    ("jul",), ("aug",), ("sep", "sept"), ("oct",), ("nov",), ("dec",),
)  # fmt: skip
WEEKDAY_SHORT = (
    ("mon",),
    ("tue", "tues"),
    ("wed",),
    ("thu", "thur", "thurs"),
    ("fri",),
    ("sat",),
    ("sun",),
)


def date_of(name: str) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...], int] | None:
    """The names and short forms of ``name``'s kind (months or weekdays) and its place in them.

    ``None`` when ``name`` is no month or weekday, by its name, its plural or a short form.
    """
    folded = name.casefold().rstrip(".")
    for full, short in ((MONTHS, MONTH_SHORT), (WEEKDAYS, WEEKDAY_SHORT)):
        for index, month_or_day in enumerate(full):
            if folded in (month_or_day, month_or_day + "s", *short[index]):
                return full, short, index
    return None


def date_written(name: str, written: str) -> bool:
    """Whether casefolded ``written`` writes the month or weekday ``name`` in any of its forms.

    Its name as a word ("Thursdays" for "Thursday"); a short form beside a figure (``Sat 18``,
    ``30 Oct``, ``Thurs 19:30``) or in a list or range of its kind (``Mon, Wed``,
    ``Mon–Fri``), since short forms are also words (``sat``, ``sun``, ``wed``, ``mar``); for a
    month, an ISO date in it (``2026-03-19``, a daily note's name). ``False`` for a name that is
    no month or weekday.
    """
    kind = date_of(name)
    if kind is None:
        return False
    full, short, index = kind
    if re.search(rf"(?<!\w){full[index]}s?(?!\w)", written):
        return True
    if full is MONTHS and re.search(rf"(?<!\d)\d{{4}}-{index + 1:02d}-\d{{2}}(?!\d)", written):
        return True
    mine = "|".join(short[index])
    if mine and re.search(
        rf"(?<!\w)(?:{mine})\.?(?=[ \t]*\d)|(?<=\d)[ \t]+(?:{mine})(?!\w)", written
    ):
        return True
    item = "|".join(sorted({*full, *(f for forms in short for f in forms)}, key=len, reverse=True))
    listed = rf"(?<!\w)(?:{item})\.?(?:[ \t]*[,/&–-][ \t]*(?:{item})\.?)+(?!\w)"
    return any(
        set(re.findall(r"[a-z]+", found.group())) & {*short[index], full[index]}
        for found in re.finditer(listed, written)
    )


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
        found = found or date_written(name, written)
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
