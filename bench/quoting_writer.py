"""The writer quoting the notes first, and a check that verifies the quote, on the tune sets.

The issue's first design of a check a program can verify: the writer copies the sentence of
the notes its answer rests on, then answers; a deterministic check finds the quote in the
sections the answer cites and the answer's figures in the quote, with no model call and in
any language. The writer's last instruction (``ANSWER_REQUEST``) asks for ``Quote:`` then
``Answer:``; nothing else changes (the graph's grades, the surest section first, the sections
written from). What a person would see is the answer; the quote is split off before it is
scored. Three checks of the same drafts:

- ``quote verified``: a draft whose quote is not found, word for word, in a cited section, or
  whose figures are not in its quote, is withdrawn; no model call;
- ``quote verified, then the graph's check``: the same, then the graph's check of the answer;
- ``the graph's check``: the quote ignored (what quoting first does to the writer alone).

Each is scored on the answer alone, and (``, the quote shown``) on the quote and the answer
together, as a page could show them: the note's own sentence, then the model's answer.

Each question of the chosen sets keeps the default's grades (``--drafts``/NAME.properties-
grades.json) and reads its kept sections the surest first, as the graph does; a question the
grader turns away keeps the default's row. Totals only.

    make quoting-writer
"""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from langgraph.runtime import Runtime  # noqa: E402

import graph.prompts as prompts  # noqa: E402
import nodes.generate as generate  # noqa: E402
from app.evaluation.sections import with_models  # noqa: E402
from bench import grader_examples, grader_variants, instructions  # noqa: E402
from bench.check_rules import (  # noqa: E402
    asked_with_work,
    outcome,
    patched,
    the_graph_asks_the_model,
    the_graphs_check,
)
from graph.context import Context  # noqa: E402
from graph.figures import CITATIONS, ungrounded_figures  # noqa: E402
from graph.llm import declines  # noqa: E402
from graph.models import default_models  # noqa: E402
from graph.state import State  # noqa: E402

QUOTE_REQUEST = (
    "First copy, word for word, the sentence of the notes above that answers the question, on "
    "a line starting with 'Quote:'. Then, on a line starting with 'Answer:', answer in a full "
    "sentence from it, and give the number of the note it comes from in square brackets, like "
    "[1]. If the notes do not answer the question, write only the Answer line."
)
QUOTING = [(prompts, "ANSWER_REQUEST", {**prompts.ANSWER_REQUEST, "en": QUOTE_REQUEST})]
_QUOTE = re.compile(r"^\W*quote\W*:\s*(.*?)\s*$", re.IGNORECASE | re.MULTILINE)
_ANSWER = re.compile(r"^\W*answer\W*:[\s*_]*", re.IGNORECASE | re.MULTILINE)
_WORDS = re.compile(r"\w+")


def split_quote(text: str) -> tuple[str, str]:
    """The quote (empty without one) and the answer after ``Answer:``; without an ``Answer:``
    line, what follows ``Quote:`` is the answer too (the model answered with the quote)."""
    quoted = _QUOTE.search(text)
    quote = quoted.group(1).strip("\"'“”„ ") if quoted else ""
    answer = _ANSWER.split(text, maxsplit=1)
    if len(answer) == 2:
        return quote, answer[1].strip()
    return CITATIONS.sub("", quote).strip(), (quote if quoted else text).strip()


def quote_verified(quote: str, answer: str, chunks: list[Any]) -> bool:
    """Whether ``quote``'s words (its citations aside) run, in order, in one of the sections the
    answer was written from and hold ``answer``'s figures (punctuation, case and markdown
    aside)."""
    words = _WORDS.findall(CITATIONS.sub("", quote).casefold())
    if not words:
        return False
    run = " ".join(words)
    found = any(
        f" {run} " in f" {' '.join(_WORDS.findall(c['content'].casefold()))} " for c in chunks
    )
    return found and not ungrounded_figures(answer, [quote])


def quoted_row(question: str, sections: list[Any], context: Context) -> dict[str, Any]:
    """The draft from ``sections`` under ``QUOTING``, its quote split off, the graph's verdict
    where the graph asks for one."""
    models = default_models()
    runtime = Runtime(context=replace(context, check_answers=False, read_ahead=False))
    with patched(QUOTING):
        state = with_models(
            models,
            lambda: generate.generate(State(question=question, documents=sections), runtime),
        )
    draft = str(state.get("answer") or "")
    quote, answer = split_quote(draft)
    cited = {(s["path"], s["heading"]) for s in state.get("sources") or []}
    chunks = [c for c in sections if (c["source"], c["heading"]) in cited]
    row: dict[str, Any] = {
        "state": {
            "answer": answer,
            "sources": state.get("sources"),
            "no_answer_reason": state.get("no_answer_reason"),
            "route": "retrieve",
        },
        "chunks": chunks,
        "quote": quote,
        "draft": draft,
    }
    if answer and not state.get("no_answer_reason") and not declines(answer):
        row["whole"] = {"stated": None, "sure": None}
        if the_graph_asks_the_model(row, question):
            row["whole"] = with_models(
                models, lambda: asked_with_work(chunks, question, answer, context)
            )
    return row


def with_the_quote(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its quote before its answer (the check still reads the answer alone)."""
    if not row.get("quote"):
        return row
    state = {**row["state"], "answer": f"{row['quote']}\n\n{row['state']['answer']}"}
    return {**row, "state": state}


def withdrawn_unverified(row: dict[str, Any], question: str) -> bool:
    answer = row["state"]["answer"]
    return "whole" in row and not quote_verified(row["quote"], answer, row["chunks"])


def measure(name: str, manifest: dict, drafts: Path) -> dict[str, Any]:
    """``name``'s figures under the graph's writer and under the quoting one."""
    questions, default_rows, rows = grader_examples.drafted_from_the_defaults_grades(
        name,
        manifest,
        drafts,
        "quoting",
        lambda question, graded, context: quoted_row(
            question, grader_examples.kept_chunks(graded), context
        ),
    )
    listed = [rows[qid] for qid in questions]
    graph = [{"id": qid, **default_rows[qid]} for qid in questions]
    checks = {
        "quote verified": withdrawn_unverified,
        "quote verified, then the graph's check": lambda row, q: (
            withdrawn_unverified(row, q) or the_graphs_check(row, q)
        ),
        "the graph's check": the_graphs_check,
    }
    shown = [with_the_quote(row) for row in listed]
    alone = {row["id"]: row for row in listed}  # each check reads the answer alone
    figures = {f"quoting, {d}": outcome(listed, questions, how) for d, how in checks.items()}
    for design, how in checks.items():
        figures[f"quoting, {design}, the quote shown"] = outcome(
            shown, questions, lambda row, q, how=how: how(alone[row["id"]], q)
        )
    drafted = [r for r in listed if "whole" in r]
    return {
        "graph": outcome(graph, questions, the_graphs_check),
        **figures,
        "drafts": len(drafted),
        "drafts with a verified quote": sum(
            quote_verified(r["quote"], r["state"]["answer"], r["chunks"]) for r in drafted
        ),
        "model checks": sum(r["whole"].get("stated") is not None for r in drafted),
    }


def main() -> None:
    parser = grader_variants.sets_parser(__doc__)
    args = parser.parse_args()
    args.only = args.only or ["answers", "daily-vault"]
    instructions.each_set(args, {"request": QUOTE_REQUEST}, measure)


if __name__ == "__main__":
    main()
