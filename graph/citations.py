"""Each inline citation listed beside the note section that writes what it cites.

The answer cites the note sections it read by number (``[1]``), and every way in lists the
sources under it in that numbering. A small writer takes the right figure or name and cites
the wrong number: "The certificate number for the upstairs rewire is VC-26-0419. This is in
note [1]." where note 2 writes the code and note 1 is the electrician's contact card. The
words are streamed as written, so the text stays as it is; the listing is reordered instead
(``listed_by_what_they_write``): the number a citation gives is listed with the section that
writes the most of the figures and names it follows, where that section writes more of them
than the cited one and no other section writes as many. A citation that needs no change keeps
its section, every other number keeps its own where it is free (a number written outside
brackets, "note 2", still names it), and a listing no citation needs changed keeps its order.

What a citation follows is its claim: the text since the citation before it (or the answer's
start); a claim without figures or names ("This is in note [1].") is judged by the claim
before it. Figures are read as the answer check reads them (``graph/figures.py``), names only
where capitals mark them (``graph/names.py``), each in a section's text, not its heading. With
Qwen2.5-Coder-1.5B-Instruct the daily vault kept 3 more right answers, the runbooks one, and no
set fewer (docs/quality.md, citations listed by what they write).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from graph.figures import ungrounded_figures
from graph.names import capitals_mark_names, names_of, unwritten_names
from graph.prompts import source_numbers
from graph.state import CITATION, Source

#: Numbers a draft cites a source by, outside square brackets: "(1)", "(Note 2)", "note 3".
LOOSE_CITATIONS = re.compile(r"\((?:notes?\s*)?\d{1,2}\)|\bnotes?\s+\d{1,2}\b", re.IGNORECASE)

#: The citations judged, the first ones of an answer; an answer citing more is listed as read.
#: Each is scored against every section: an answer written from hostile notes may cite many.
MOST_CITATIONS = 24


def claims(answer: str) -> list[tuple[str, list[int]]]:
    """Each inline citation's numbers with the text it follows, in order.

    The text since the previous citation, or the answer's start; where that gives no figure
    or name, the claim before it (the first claim stays as it is).
    """
    found: list[tuple[str, list[int]]] = []
    start, before = 0, ""
    for match in CITATION.finditer(answer):
        claim = LOOSE_CITATIONS.sub(" ", answer[start : match.start()])
        if before and not _checkable(claim):
            claim = before
        before, start = claim, match.end()
        numbers = re.split(r"\s*,\s*", match[1])
        found.append((claim, [int(n) for n in numbers if len(n) <= 3]))  # [0004...] names none
    return found


def listed_by_what_they_write(
    answer: str, sources: Sequence[Source], chunks: Sequence[Any]
) -> list[Source]:
    """``sources`` reordered so that each citation of ``answer`` lists what writes its claim.

    ``chunks`` are the sections the answer read, in its order (``sources`` are their distinct
    (note, heading) pairs, numbered as ``graph.prompts.source_numbers`` numbers them). Where
    two citations would need one number listed beside two sections, or two numbers beside one,
    nothing is reordered.
    """
    texts: dict[int, list[str]] = {}
    for chunk, number in zip(chunks, source_numbers(list(chunks)), strict=True):
        if number <= len(sources):
            texts.setdefault(number, []).append(chunk["content"])
    written = {number: "\n".join(parts) for number, parts in texts.items()}
    names = capitals_mark_names([answer, *written.values()])
    cited = claims(answer)
    if len(cited) > MOST_CITATIONS:
        return list(sources)
    scores: dict[str, dict[int, int]] = {}  # a claim -> how much of it each section writes
    wanted: dict[int, int] = {}  # a cited number -> the number of the section listed for it
    for claim, numbers in cited:
        for number in numbers:
            if not 1 <= number <= len(sources):
                continue
            section = number
            if len(numbers) == 1:  # several numbers cite several sections: each stays
                if claim not in scores:
                    scores[claim] = _written(claim, written, names)
                section = _writer(scores[claim], number)
            if wanted.setdefault(number, section) != section:
                return list(sources)
    if all(number == section for number, section in wanted.items()):
        return list(sources)
    if len(set(wanted.values())) < len(wanted):
        return list(sources)
    # Each number cited lists its section; every other keeps its own where that is free (a
    # number written outside brackets still names it), else takes one no citation lists.
    listed = {number: sources[section - 1] for number, section in wanted.items()}
    taken = set(wanted.values())
    free = [n for n in range(1, len(sources) + 1) if n not in wanted]
    spare = iter(
        sources[n - 1] for n in range(1, len(sources) + 1) if n not in taken and n in wanted
    )
    for number in free:
        listed[number] = sources[number - 1] if number not in taken else next(spare)
    return [listed[number] for number in range(1, len(sources) + 1)]


def _writer(count: dict[int, int], cited: int) -> int:
    """The section listed for a citation: the one writing the most of its claim (``count``).

    Only where no other writes as much; else the ``cited`` one.
    """
    most = max(count.values(), default=0)
    best = [number for number, n in count.items() if n == most]
    return best[0] if len(best) == 1 else cited


def _written(claim: str, written: dict[int, str], names: bool) -> dict[int, int]:
    """How many of ``claim``'s figures (and names, where ``names``) each section writes."""
    figures = len(ungrounded_figures(claim, []))
    given = len(set(names_of(claim))) if names else 0
    return {
        number: figures
        - len(ungrounded_figures(claim, [text]))
        + (given - len(unwritten_names(claim, [text])) if given else 0)
        for number, text in written.items()
    }


def _checkable(claim: str) -> bool:
    """Whether ``claim`` gives a figure or a name to look up."""
    return bool(ungrounded_figures(claim, []) or names_of(claim))
