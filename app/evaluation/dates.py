"""Dates as the answer scorer reads them: one day, however an answer spells it.

A labelled fact that is a date (``14.11.2026``, ``14.11.``, ``2026-11-14``, ``14 November``)
is found in an answer that writes the same day in another spelling: ``14. November 2026``,
``November 14th, 2026``, ``14. Nov. 2026``. The 1.5B writer, given a note's ``14.11.2026``,
wrote ``14. November 2026`` in one run and ``14.11.2026`` in another, and the substring match
of the spellings counted the first wrong. Month names are read in English and German, full
or short. A fact with a year needs that year in the answer; one without a year (``14.11.``)
takes the day in any year, as its substring did. A number without a closing dot or a year
(``6.14``: a time, a price) is no date: it is matched as written.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_MONTH_NAMES = (
    ("january", "jan", "januar", "jänner"),
    ("february", "feb", "februar"),
    ("march", "mar", "märz", "mär", "maerz"),
    ("april", "apr"),
    ("may", "mai"),
    ("june", "jun", "juni"),
    ("july", "jul", "juli"),
    ("august", "aug"),
    ("september", "sep", "sept"),
    ("october", "oct", "oktober", "okt"),
    ("november", "nov"),
    ("december", "dec", "dezember", "dez"),
)

#: Each month's names, lower case, and its number.
MONTHS = {name: number for number, names in enumerate(_MONTH_NAMES, 1) for name in names}

_MONTH = "(?P<month_name>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\b\.?"
_YEAR = r"(?P<year>\d{4})(?!\d)"
_DAY = r"(?P<day>\d{1,2})"

#: The spellings read, on lower-case text: ``14.11.2026`` and ``14.11.``; ``2026-11-14``;
#: ``14. November 2026``, ``14th of November``; ``November 14, 2026``.
_SPELLINGS = (
    re.compile(rf"(?<![\d.]){_DAY}\.(?P<month>\d{{1,2}})\.(?:{_YEAR}|(?!\d))"),
    re.compile(r"(?<![\d-])(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})(?![\d-])"),
    re.compile(rf"(?<![\d.]){_DAY}(?:st|nd|rd|th)?\.?\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?"),
    re.compile(rf"\b{_MONTH}\s+{_DAY}(?:st|nd|rd|th)?\b(?:,?\s+{_YEAR})?"),
)


class Day(NamedTuple):
    """A date as written: its day, month, and year where one is given."""

    day: int
    month: int
    year: int | None


def _day(match: re.Match[str]) -> Day | None:
    found = match.groupdict()
    month = int(found["month"]) if found.get("month") else MONTHS[found["month_name"]]
    day, year = int(found["day"]), found.get("year")
    if not (1 <= day <= 31 and 1 <= month <= 12):
        return None
    return Day(day, month, int(year) if year else None)


def dates_in(text: str) -> set[Day]:
    """Every date ``text`` (lower case) writes, in any of the spellings read."""
    return {
        day
        for pattern in _SPELLINGS
        for match in pattern.finditer(text)
        if (day := _day(match)) is not None
    }


def as_date(spelling: str) -> Day | None:
    """The date a fact's spelling (lower case) is, when it is one date and nothing else."""
    text = spelling.strip()
    for pattern in _SPELLINGS:
        match = pattern.fullmatch(text)
        if match:
            return _day(match)
    return None


def same_day(fact: Day, written: Day) -> bool:
    """Whether ``written`` is the day ``fact`` names (a fact's year, where it has one)."""
    same = (fact.day, fact.month) == (written.day, written.month)
    return same and (fact.year is None or fact.year == written.year)
