"""Figures an answer gives that the note sections it was drafted from do not hold.

A small model asked for a time or a count its notes do not hold often writes one anyway
("the first slot starts at 9:00 AM", "12% hydration"): a figure from nowhere, or one that is
the wrong kind of figure. No model call can be surer than a lookup, so the answer check looks
first: every number in the answer must be written in those sections (their text, heading or
note path, all of which the model was shown), and a number with a unit must be written there
with that unit, or with none (notes leave a unit out: "between 1 and 1.5 bar").

What counts as the same figure: ``1,240`` and ``1240``; ``9:00`` and ``9``; ``07`` and ``7``;
``1,5``, ``1.5``, ``1.50`` and ``1½``; ``45 s`` and ``45 seconds``; a number an English note
spells out (``twenty-five``, ``two hundred``, ``ten percent``, ``twice``). What does not:
``12 %`` or ``12 days`` where the notes only say ``12 hours``, ``-18`` for ``18``. Left out of
the answer's figures: its citations (``[1]``, ``[1-2]``, ``[Note 1]``) and the numbers of a
numbered list. A figure the model computed (a total, a conversion to other units) is not
written in the notes either, and is reported like any other.

Every other way of writing a figure is not read: ``9h30`` is not ``9:30``, ``10 000`` not
``10,000``, ``31.07.2025`` not ``31 July 2025``, ``1 pm`` not ``13:00``, ``250 degrees`` not
``250 °C``. Each rule here was kept for its measured effect on the evaluation sets
(``bench/check_rules.py``, figures in docs/quality.md); the rules that read those other ways
changed no verdict on any set and were removed, and one that gave no verdict for any figure
whose digits the notes write made a set worse. Number words are read in English only.

A question that asks for a measure (``At what temperature ...?``, ``How many sets ...?``) is
not answered by figures that all measure something else ("24 hours", "45 seconds"): the answer
was drafted from a neighbouring fact (``figures_of_another_kind``). The question is read in
English only, but for a phone number, asked in English or German and answered only by a figure
that cannot be one ("Dr. Brandt hat die Telefonnummer 9.15 Uhr": a time from the same note).

Every pattern here runs in time linear in its text: notes and questions may be written by
someone else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: A figure as compared: its number in one spelling, and its unit's name or ``None``.
Figure = tuple[str, str | None]

#: A number, with a minus sign glued to it, not glued to a word or a separator before it
#: (``WPA3``, ``H2O``, the ``3`` of ``v1.3``), with separators inside it; then the word or
#: sign after it, which may be its unit: ``12``, ``1,240``, ``2.4``, ``9:00``, ``-18``,
#: ``0.5 %``, ``250 °C``, ``24-hour``.
FIGURE = re.compile(
    r"(?<![\w.,:])(-?\d+(?:[.,:]\d+)*)(?:(?:\s|-)?(%|°\s?[CF]?|€|[^\W\d_]+))?", re.IGNORECASE
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
        "degree": "° degree",
        "celsius": "°c celsius",
        "fahrenheit": "°f fahrenheit",
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


#: Citations as models write them: ``[1]``, ``[1, 3]``, ``[1-2]``, ``[^1]``, ``[ Note 1 ]``,
#: ``【1†source】``.
CITATIONS = re.compile(
    r"[\[【]\s*(?:(?:note|source)\s+)?\^?\d+(?:\s*[,;\u2013-]\s*\d+)*\s*(?:†[^\]】]{0,80})?[\]】]",
    re.IGNORECASE,
)

#: A numbered list's item marker starting a line (``1.``, ``2)``), and one inside a line
#: (``1) build 2) check``; unless inside parentheses, as in "(EUR 40) today").
LINE_MARKER = re.compile(r"^([ \t]*)\d+[.)](?=\s)", re.MULTILINE)
INLINE_MARKER = re.compile(r"(?<!\S)\d+\)(?=\s)")

#: Spelled-out numbers as English notes write them; only the notes' are read: an answer's
#: "one of the notes" is not a figure, and its "thirty minutes" may be a note's "half an
#: hour" (a fortnight, a couple of days, every other day: reading an answer's spelled amounts
#: withdrew right answers like these).
_ONES = "one two three four five six seven eight nine".split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        ["zero", *_ONES, "ten", "eleven", "twelve"]
        + "thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
    )
}
NUMBER_WORDS |= {word: str(10 * n) for n, word in enumerate(_TENS, start=2)}
NUMBER_WORDS |= {"once": "1", "twice": "2", "hundred": "100", "dozen": "12", "half": "0.5"}
SPELLED = re.compile(r"\b(" + "|".join(NUMBER_WORDS) + r")\b", re.IGNORECASE)
#: ``twenty-five``, ``two hundred``, ``a hundred``.
COMPOUND = re.compile(rf"\b({'|'.join(_TENS)})[- ]({'|'.join(_ONES)})\b", re.IGNORECASE)
HUNDREDS = re.compile(rf"\b({'|'.join(_ONES)}|a)\s+hundred\b", re.IGNORECASE)


def ungrounded_figures(answer: str, grounds: Iterable[str]) -> list[str]:
    """The figures of ``answer``, as written there, that none of ``grounds`` holds.

    ``grounds`` are the texts the answer was drafted from. Each figure once, first
    mention first.
    """
    held: set[Figure] = set()
    for text in grounds:
        held |= _figures_held(text)
    numbers = {number for number, _ in held}
    text = _answer_text(answer)
    missing: dict[Figure, str] = {}
    for match in FIGURE.finditer(text):
        figure = _figure(match)
        if not _is_held(figure, held, numbers):
            written = match.group() if figure[1] else match[1]
            missing.setdefault(figure, written.strip())
    return list(missing.values())


#: Units by what they measure, every unit of ``UNITS`` in one. A question asking for one of
#: these is answered only by a figure with one of its units, or with none.
MEASURES = {
    "a duration": frozenset({"second", "minute", "hour", "day", "week", "month", "year"}),
    "a distance": frozenset({"km", "mm", "cm"}),
    "a temperature": frozenset({"degree", "celsius", "fahrenheit"}),
    "a price": frozenset({"eur"}),
    "a percentage": frozenset({"%"}),
    "a weight": frozenset({"kg", "g"}),
    "a volume": frozenset({"l", "ml"}),
    "a pressure": frozenset({"bar"}),
    "a frequency": frozenset({"ghz", "mhz"}),
    "a size": frozenset({"gb", "mb"}),
}

#: The English words that ask for a measure, each kept for its measured effect; "how many"
#: is followed by what is counted (``HOW_MANY``). Questions for other measures ("how long",
#: "how much", "what time", "how far") ask for nothing this knows: no verdict.
ASKED = {
    "a temperature": r"\b(?:what|which) temperatures?\b|\bhow (?:hot|warm|cold|cool)\b"
    r"|\bwhat(?:'s|\s+is|\s+was|\s+are|\s+were)\s+the(?:\s+(?!(?:time|and|or)\b)[^\W\d_]+){0,3}?"
    r"\s+temperatures?(?=\s*(?:[?.!,;:]|$|(?:for|of|in|on|at|when|during|inside|outside)\b))",
}
ASKS = {kind: re.compile(pattern, re.IGNORECASE) for kind, pattern in ASKED.items()}
#: "How many sets": a count, answered by a figure without a unit ("3 sets", "three sets");
#: "how many minutes": a duration; "how many km a week": a distance (the first unit named).
#: The three words after it are read.
HOW_MANY = re.compile(r"\bhow many((?:\s+[^\W\d_]+){1,3})", re.IGNORECASE)
#: How many of the figures given a notice names.
SHOWN = 5

#: A question asking for a phone number, in English or German ("What's Gary's phone number?",
#: "Welche Telefonnummer hat Dr. Brandt?"), is answered only by a figure that can be one.
PHONE_NUMBER_ASKED = re.compile(
    r"\b(?:tele)?phone[\s-]*(?:number|no\b)|\b(?:mobile|cell)[\s-]*number"
    r"|\b(?:telefon|handy|mobil|festnetz|ruf)nummer",
    re.IGNORECASE,
)
#: A question for a part of a phone number, or about it, may be answered by a shorter figure.
PHONE_NUMBER_PART = re.compile(
    r"\b(?:area\s+code|country\s+code|digits?|how\s+many|vorwahl|ziffern?|wie\s+viele)\b",
    re.IGNORECASE,
)
#: A figure that can be a phone number: six digits or more, with at most two of the signs
#: numbers are grouped with between two of them ("0341 9123456", "+44 7700 900412",
#: "(030) 12-34-56"). "9.15 Uhr" or "3 pm" is not one.
PHONE_LIKE = re.compile(r"\+?\(?\d(?:[\s/().-]{0,2}\d){5,}")


def figures_of_another_kind(question: str, answer: str) -> tuple[str, list[str]] | None:
    """What ``question`` asks for and the figures of ``answer``, when none of them can give it.

    "At what temperature ...?" answered "24 hours", "How many sets ...?" answered "45
    seconds": the figures measure something else, so the answer is about a neighbouring fact.
    ``None`` when the question asks for no measure this knows, when the answer gives no
    figure, or when one of its figures has a unit of a kind asked or no unit. A number the
    answer spells out ("three sets") is a figure without a unit, and a figure the question
    itself gives ("how many minutes at 24 °C?") is not counted.
    """
    if PHONE_NUMBER_ASKED.search(question) and not PHONE_NUMBER_PART.search(question):
        return _no_phone_number(question, answer)
    asked = measures_asked(question)
    if not asked:
        return None
    allowed = frozenset().union(*(MEASURES.get(kind, ()) for kind in asked))
    text = _answer_text(answer)
    text = SPELLED.sub(" 1 ", COMPOUND.sub(" 1 ", HUNDREDS.sub(" 1 ", text)))
    in_question = _question_figures(question)
    given: dict[Figure, str] = {}
    for match in FIGURE.finditer(text):
        figure = _figure(match)
        if figure in in_question:
            continue
        if figure[1] is None or figure[1] in allowed:
            return None
        given.setdefault(figure, match.group().strip())
    if not given:
        return None
    return " or ".join(dict.fromkeys(asked)), list(given.values())[:SHOWN]


def _no_phone_number(question: str, answer: str) -> tuple[str, list[str]] | None:
    """The figures of ``answer``, when it gives some and none of them can be a phone number."""
    text = _answer_text(answer)
    if PHONE_LIKE.search(text):
        return None
    in_question = _question_figures(question)
    given = [m.group().strip() for m in FIGURE.finditer(text) if _figure(m) not in in_question]
    return ("a phone number", list(dict.fromkeys(given))[:SHOWN]) if given else None


def _question_figures(question: str) -> set[Figure]:
    """The figures ``question`` itself gives: an answer repeating them gives nothing new."""
    return {_figure(m) for m in FIGURE.finditer(_prepared(question))}


def measures_asked(question: str) -> list[str]:
    """The measures ``question`` asks for, in the words a notice says them."""
    asked = [kind for kind, pattern in ASKS.items() if pattern.search(question)]
    for match in HOW_MANY.finditer(question):
        words = match[1].lower().split()
        if words[0] == "times":  # "how many times a week": a count or an interval
            continue
        unit = next(filter(None, map(_unit, words)), None)
        measure = next((kind for kind, units in MEASURES.items() if unit in units), None)
        asked.append(measure or "a count")
    return asked


def _figures_held(text: str) -> set[Figure]:
    """Every figure ``text`` holds, its English number words read as numbers."""
    text = _prepared(text)
    text = HUNDREDS.sub(lambda m: str(100 * int(NUMBER_WORDS.get(m[1].lower(), "1"))), text)
    text = COMPOUND.sub(
        lambda m: str(int(NUMBER_WORDS[m[1].lower()]) + int(NUMBER_WORDS[m[2].lower()])), text
    )
    text = SPELLED.sub(lambda m: NUMBER_WORDS[m[1].lower()], text)
    return {_figure(match) for match in FIGURE.finditer(text)}


def _is_held(figure: Figure, held: set[Figure], numbers: set[str]) -> bool:
    """Whether ``held`` has ``figure``: with its unit or none; a bare one, with any unit.

    ``numbers`` are the numbers of ``held``.
    """
    number, unit = figure
    if unit is None:
        return number in numbers
    return bool({(number, unit), (number, None)} & held)


def _prepared(text: str) -> str:
    """One way of writing what several ways write: markdown emphasis, ½, signs."""
    text = re.sub(r"\bper cent\b", "percent", text, flags=re.IGNORECASE)
    text = text.replace("\u2212", "-").replace("_", " ").replace("*", " ")
    text = re.sub(r"(?<=\d)([½¼¾])", lambda m: {"½": ".5", "¼": ".25", "¾": ".75"}[m[1]], text)
    text = text.replace("½", "0.5").replace("¼", "0.25").replace("¾", "0.75")
    text = re.sub(r"(?<![\w.])\.(?=\d)", "0.", text)  # .5 kg
    text = re.sub(r"(?<=\d)\s?[x×]\s?(?=\d)", " x ", text)  # 3x12
    return text


def _answer_text(answer: str) -> str:
    """``answer`` as its figures are read: prepared, without citations or list numbers."""
    return _without_markers(CITATIONS.sub(" ", _prepared(answer)))


def _without_markers(answer: str) -> str:
    """``answer`` without the item numbers of its numbered lists."""
    answer = LINE_MARKER.sub(r"\1", answer)

    def unless_in_parentheses(match: re.Match[str]) -> str:
        # What comes before it on its line, at most 200 characters: is a "(" still open?
        start = max(match.start() - 200, 0)
        before = answer[start : match.start()].rpartition("\n")[2]
        return match.group() if before.rfind("(") > before.rfind(")") else ""

    return INLINE_MARKER.sub(unless_in_parentheses, answer)


def _figure(match: re.Match[str]) -> Figure:
    """A figure as compared: its number, and its unit's name where the next word is one."""
    after = (match[2] or "").lower().replace(" ", "")
    return _number(match[1]), _unit(after)


def _unit(word: str) -> str | None:
    """The name of the unit ``word`` spells (lower case; singular or plural), or ``None``."""
    return UNITS.get(word) or (UNITS.get(word[:-1]) if word.endswith("s") else None)


def _number(written: str) -> str:
    """One spelling for a number.

    No thousands commas, a decimal point, no ``:00``, no trailing zeros in one or two
    decimals (``2.50`` is ``2.5``; ``5.000`` may be five thousand and stays), no leading zeros.
    """
    sign, digits = ("-", written[1:]) if written.startswith("-") else ("", written)
    digits = re.sub(r",(?=\d{3}(?!\d))", "", digits).replace(",", ".")
    end = len(digits)
    while digits.endswith(":00", 0, end):
        end -= 3
    digits = digits[:end]
    decimal = re.fullmatch(r"(\d+)\.(\d{1,2})", digits)
    if decimal:
        fraction = decimal[2].rstrip("0")
        digits = decimal[1] + (f".{fraction}" if fraction else "")
    return sign + re.sub(r"(?<![\d.:])0+(?=\d)", "", digits)
