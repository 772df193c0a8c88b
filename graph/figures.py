"""Figures an answer gives that the note sections it was drafted from do not hold.

A small model asked for a time or a count its notes do not hold often writes one anyway
("the first slot starts at 9:00 AM", "12% hydration"): a figure from nowhere, or one that is
the wrong kind of figure. No model call can be surer than a lookup, so the answer check looks
first: every number in the answer must be written in those sections (their text, heading or
note path, all of which the model was shown), and a number with a unit must be written there
with that unit, or with none (notes leave a unit out: "between 1 and 1.5 bar").

What counts as the same figure: ``1,240`` and ``1240``; ``9:00`` and ``9``; ``07`` and ``7``;
``1,5`` and ``1.5``; ``13:00`` and ``1 pm``; ``45 s``, ``45-second`` and ``45 seconds``; a
number the notes spell out (``ten percent``, ``fifteen``, ``twice``, ``noon``, ``first``,
``July``). What does not: ``12 %`` or ``12 days`` where the notes only say ``12 hours``.
Left out of the answer's figures: its citations (``[1]``, ``[1-2]``) and the numbers of a
numbered list. A figure the model computed (a total, a conversion to other units) is not
written in the notes either, and is reported like any other.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: A number not glued to a word before it (``WPA3``, ``H2O``), with separators inside it,
#: then the word or sign after it, which may be its unit: ``12``, ``1,240``, ``2.4``,
#: ``9:00``, ``0.5 %``, ``250 °C``, ``24-hour``.
FIGURE = re.compile(
    r"(?<![\w.,:])(\d+(?:[.,:]\d+)*)(?:(?:\s|-)?(%|°\s?[CF]?|€|[^\W\d_]+))?", re.IGNORECASE
)

#: Units, each spelling (lower case, singular) to one name; a word after a number that is
#: not here ("sets", "flour") leaves the number without a unit.
UNITS = {
    unit: name
    for name, spellings in {
        "%": "% percent",
        "second": "s sec second",
        "minute": "min minute",
        "hour": "h hr hour",
        "day": "day",
        "week": "wk week",
        "month": "month",
        "year": "yr year",
        "degree": "° °c °f degree celsius fahrenheit",
        "km": "km kilometre kilometer",
        "mm": "mm millimetre millimeter",
        "cm": "cm centimetre centimeter",
        "kg": "kg kilo kilogram",
        "g": "g gram",
        "l": "l litre liter",
        "ml": "ml millilitre milliliter",
        "bar": "bar",
        "eur": "eur euro €",
        "ghz": "ghz",
        "mhz": "mhz",
        "gb": "gb",
        "mb": "mb",
    }.items()
    for unit in spellings.split()
}

#: Citations as models write them: ``[1]``, ``[1, 3]``, ``[1-2]``, ``[^1]``.
CITATIONS = re.compile(r"\[\^?\d+(?:\s*[,;\u2013-]\s*\d+)*\]")

#: The marker of a numbered list's item: ``1.`` or ``2)`` starting a line, ``3)`` anywhere.
LIST_MARKER = re.compile(r"^(\s*)\d+[.)](?=\s)|(?<!\S)\d+\)(?=\s)", re.MULTILINE)

#: Spelled-out numbers as notes write them; only the notes' are read (an answer's "one of
#: the notes" is not a figure).
NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
} | {"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "ninety": "90"}
NUMBER_WORDS |= {"once": "1", "twice": "2", "hundred": "100", "dozen": "12"}
NUMBER_WORDS |= {"noon": "12", "midday": "12", "midnight": "0"}
#: Ordinals ground their number: "the first slot" in a note, "slot 1" in an answer.
NUMBER_WORDS |= {
    word: str(value)
    for value, word in enumerate(
        "first second third fourth fifth sixth seventh eighth ninth tenth".split(), start=1
    )
}
#: A month's name grounds its number: ``31 July 2025`` in a note, ``2025-07-31`` in an answer.
NUMBER_WORDS |= {
    month: str(number)
    for number, month in enumerate(
        "january february march april may june july august september october november "
        "december".split(),
        start=1,
    )
}
SPELLED = re.compile(r"\b(" + "|".join(NUMBER_WORDS) + r")\b", re.IGNORECASE)

#: An afternoon hour, so that ``1 pm`` in a note grounds ``13:00`` in an answer.
AFTERNOON = re.compile(r"\b(\d{1,2})(?::00)?\s?p\.?m\b", re.IGNORECASE)


def ungrounded_figures(answer: str, grounds: Iterable[str]) -> list[str]:
    """The figures of ``answer``, as written there, that none of ``grounds`` holds.

    ``grounds`` are the texts the answer was drafted from. Each figure once, first
    mention first.
    """
    held: set[tuple[str, str | None]] = set()
    for text in grounds:
        held |= _figures_held(text)
    numbers = {number for number, _ in held}
    answer = LIST_MARKER.sub(r"\1", CITATIONS.sub(" ", answer))
    missing: dict[tuple[str, str | None], str] = {}
    for match in FIGURE.finditer(_spaced(answer)):
        number, unit = figure = _figure(match)
        if number in numbers if unit is None else {figure, (number, None)} & held:
            continue
        written = match.group() if unit else match[1]
        missing.setdefault(figure, written.strip())
    return list(missing.values())


def _figures_held(text: str) -> set[tuple[str, str | None]]:
    """Every figure ``text`` holds: its number, with its unit or ``None``."""
    text = SPELLED.sub(lambda m: NUMBER_WORDS[m[1].lower()], _spaced(text))
    held = {_figure(match) for match in FIGURE.finditer(text)}
    held |= {(str(int(m[1]) + 12), None) for m in AFTERNOON.finditer(text) if 1 <= int(m[1]) <= 11}
    return held


def _spaced(text: str) -> str:
    """``per cent`` as one word, so that it reads as a unit."""
    return re.sub(r"\bper cent\b", "percent", text, flags=re.IGNORECASE)


def _figure(match: re.Match[str]) -> tuple[str, str | None]:
    """A figure as compared: its number, and its unit's name where the next word is one."""
    after = (match[2] or "").lower().replace(" ", "")
    unit = UNITS.get(after) or (UNITS.get(after[:-1]) if after.endswith("s") else None)
    return _number(match[1]), unit


def _number(written: str) -> str:
    """One spelling for a number: no thousands separators, a decimal point, no ``:00``."""
    number = re.sub(r",(?=\d{3}(?!\d))", "", written).replace(",", ".")
    number = re.sub(r"(?::00)+$|(?<=\d)\.0+$", "", number)
    return re.sub(r"(?<![\d.:])0+(?=\d)", "", number)
