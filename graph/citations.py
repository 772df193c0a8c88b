"""Each inline citation listed beside the note section that writes what it cites.

The answer cites the note sections it read by number (``[1]``), and every way in lists the
sources under it in that numbering. A small writer takes the right figure or name and cites
the wrong number: "The certificate number for the upstairs rewire is VC-26-0419. This is in
note [1]." where note 2 writes the code and note 1 is the electrician's contact card. The
words are streamed as written, so the text stays as it is; the listing is reordered instead
(``listed_by_what_they_write``): the number a citation gives is listed with the section that
writes the most of the figures and names it follows, where that section writes more of them
than the cited one and no other section writes as many. A citation that needs no change keeps
its section, and a listing no citation needs changed keeps its order.

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
        found.append((claim, [int(n) for n in re.split(r"\s*,\s*", match[1])]))
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
        texts.setdefault(number, []).append(chunk["content"])
    written = {number: "\n".join(parts) for number, parts in texts.items()}
    names = capitals_mark_names([answer, *written.values()])
    wanted: dict[int, int] = {}  # a cited number -> the number of the section listed for it
    for claim, numbers in claims(answer):
        for number in numbers:
            if not 1 <= number <= len(sources):
                continue
            section = _writer(claim, number, written, names) if len(numbers) == 1 else number
            if wanted.setdefault(number, section) != section:
                return list(sources)
    if all(number == section for number, section in wanted.items()):
        return list(sources)
    if len(set(wanted.values())) < len(wanted):
        return list(sources)
    listed: list[Source | None] = [None] * len(sources)
    for number, section in wanted.items():
        listed[number - 1] = sources[section - 1]
    rest = iter(s for n, s in enumerate(sources, start=1) if n not in wanted.values())
    return [source if source is not None else next(rest) for source in listed]


def _writer(claim: str, cited: int, written: dict[int, str], names: bool) -> int:
    """The section listed for a citation of ``claim``: the one writing the most of it.

    Only where no other writes as much; else the ``cited`` one.
    """
    count = {number: _written(claim, text, names) for number, text in written.items()}
    most = max(count.values(), default=0)
    best = [number for number, n in count.items() if n == most]
    return best[0] if len(best) == 1 else cited


def _written(claim: str, text: str, names: bool) -> int:
    """How many of ``claim``'s figures (and names, where ``names``) ``text`` writes."""
    figures = ungrounded_figures(claim, [])
    count = len(figures) - len(ungrounded_figures(claim, [text]))
    if names:
        given = set(names_of(claim))
        count += len(given) - len(unwritten_names(claim, [text]))
    return count


def _checkable(claim: str) -> bool:
    """Whether ``claim`` gives a figure or a name to look up."""
    return bool(ungrounded_figures(claim, []) or names_of(claim))
