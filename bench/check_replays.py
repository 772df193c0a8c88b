"""Designs of the answer check replayed on the graph's own drafts, every set.

The drafts are the graph's: on the five sets of ``bench/grader_variants.py`` its default's
rows (grader 6, the answer written from the same windows), on the daily vault those of
``bench/writer_variants.py`` (the graph's writer). Each design below changes what settles a
draft or withdraws it; where a design leaves to the model a draft the graph settled without
it, the model is asked as the graph asks it (verdicts kept in
``--drafts``/check-replays.verdicts.json). Scored as ``rag eval --answers`` scores the graph;
totals only.

- **the model on every draft the figure lookups keep** (the check until 2026-12-06, without
  the names lookup).
- **months as names**: the names lookup before a month or a weekday counted as written by
  any date of it (``graph/names.py``: ``date_written``).
- **figures on a line about the question** (``any``, ``half``, ``all`` of its words): a
  draft's figures settle it only where each stands on a line (a sentence, in a long line)
  that, with its section's heading and note name, mentions that many of the question's words
  (``graph/window.py``: ``question_terms``); otherwise the model decides.
- **a draft that says nothing new**: a draft without figures whose every word of four
  letters or more is one of the question's is withdrawn without the model.
- **a bar on the grader's surest kept section** (0.6, 0.7, 0.8): a question is turned away
  where every section the grader kept (on its window) has a P(yes) below the bar. First order
  only: a question that keeps a section above the bar keeps its draft.

    .venv/bin/python bench/check_replays.py --record bench/results/check_replays.json
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import graph.names as names  # noqa: E402
import nodes.generate as generate  # noqa: E402
from app.evaluation import sets as protocol  # noqa: E402
from app.evaluation.answers import load_questions, select  # noqa: E402
from app.evaluation.sections import with_models  # noqa: E402
from bench import grader_variants, writer_variants  # noqa: E402
from bench.check_rules import asked_with_work, flagged_by_model, outcome  # noqa: E402
from graph.context import CHECK_CONFIDENCE, Context  # noqa: E402
from graph.figures import ungrounded_figures  # noqa: E402
from graph.models import default_models  # noqa: E402
from graph.window import mentions, question_terms  # noqa: E402

#: How many of the question's words a figure's line must mention, of how many it has.
ON_A_LINE: dict[str, Callable[[int, int], bool]] = {
    "any": lambda hit, of: hit >= 1 or of == 0,
    "half": lambda hit, of: hit >= math.ceil(of / 2),
    "all": lambda hit, of: hit >= of,
}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[^\W\d_]{4,}")
#: Words a draft that says nothing new may add to the question's.
_FILLER = frozenset(
    "note notes information found mentioned this that which there with from".split()
)


def lines_about(chunks: list[Any], question: str, enough: Callable[[int, int], bool]) -> list[str]:
    """The lines (sentences, in a line over 200 characters) of ``chunks`` about ``question``."""
    terms = question_terms(question)
    about = []
    for chunk in chunks:
        place = f"{chunk['source']}\n{chunk['heading']}".lower()
        for line in chunk["content"].split("\n"):
            for piece in _SENTENCE_END.split(line) if len(line) > 200 else [line]:
                text = piece.lower()
                hit = sum(1 for t in terms if mentions(t, text) or mentions(t, place))
                if piece.strip() and enough(hit, len(terms)):
                    about.append(piece)
    return about


def says_nothing_new(question: str, answer: str) -> bool:
    """Whether ``answer`` gives no figure and no word of four letters the question lacks."""
    if generate.declines(answer) or generate.gives_figures(answer):
        return False
    asked = {w.lower().removesuffix("'s").rstrip("s") for w in _WORD.findall(question)}
    said = {w.lower().removesuffix("'s").rstrip("s") for w in _WORD.findall(answer)}
    return not (said - asked - _FILLER)


class Checks:
    """The graph's check and each design, the model asked where a design needs it."""

    def __init__(self, kept: Path, context: Context, set_name: str) -> None:
        self.kept, self.context, self.set_name = kept, context, set_name
        self.verdicts: dict[str, Any] = json.loads(kept.read_text()) if kept.is_file() else {}
        #: Drafts the model was consulted about (asked now, or its kept verdict read).
        self.consulted = 0

    def model(self, row: dict[str, Any], question: str) -> bool:
        self.consulted += 1
        verdict = row["whole"]
        if verdict.get("stated") is None and verdict.get("sure") is None:  # never asked
            answer = row["state"]["answer"]
            key = json.dumps([self.set_name, row["id"], answer], ensure_ascii=False)
            if key not in self.verdicts:
                self.verdicts[key] = with_models(
                    default_models(),
                    lambda: asked_with_work(row["chunks"], question, answer, self.context),
                )
                self.kept.write_text(json.dumps(self.verdicts, ensure_ascii=False))
            verdict = self.verdicts[key]
        return flagged_by_model(verdict, CHECK_CONFIDENCE)

    def graph(self, row: dict[str, Any], question: str, on_a_line: str = "") -> bool:
        """Whether the check withdraws ``row``'s draft (``on_a_line``: that design)."""
        if "whole" not in row:
            return False
        answer = row["state"]["answer"]
        settled = generate.without_the_model(question, answer, row["chunks"])
        if settled and settled[0] == "figures" and on_a_line:
            about = lines_about(row["chunks"], question, ON_A_LINE[on_a_line])
            if ungrounded_figures(answer, about):
                settled = None
        if settled:
            return settled[0] == "lookup"
        return self.model(row, question)

    def model_on_every_draft(self, row: dict[str, Any], question: str) -> bool:
        if "whole" not in row:
            return False
        if generate.lookup(question, row["state"]["answer"], row["chunks"]):
            return True
        return self.model(row, question)

    def months_as_names(self, row: dict[str, Any], question: str) -> bool:
        with mock.patch.object(names, "date_written", lambda name, written: False):
            return self.graph(row, question)

    def nothing_new(self, row: dict[str, Any], question: str) -> bool:
        if "whole" in row and says_nothing_new(question, row["state"]["answer"]):
            return True
        return self.graph(row, question)


def graphs_rows(
    name: str, eval_set: Any, context: Context, drafts: Path
) -> tuple[list, dict, dict]:
    """The graph's drafts of ``name``, its questions by id and their grades."""
    split = "tune" if name == "answers" else "all"
    graded = grader_variants.grade_set(eval_set, split, context, drafts / f"{name}.grades.json")
    questions = {q.id: q for q in select(load_questions(eval_set.path), split)}
    if name in grader_variants.DRAFTS:
        kept = json.loads((drafts / grader_variants.DRAFTS[name]).read_text())["rows"]
        cache_file = drafts / f"{name}.grader-drafts.json"
        cache = json.loads(cache_file.read_text())
        rows = grader_variants.design_rows("writer", kept, graded, questions, context, cache)
        cache_file.write_text(json.dumps(cache, ensure_ascii=False))
    else:
        cache_file = drafts / f"{name}.writer-drafts.json"
        cache = json.loads(cache_file.read_text()) if cache_file.is_file() else {}
        rows = writer_variants.rows_of(writer_variants.GRAPHS, graded, questions, context, cache)
        cache_file.write_text(json.dumps(cache, ensure_ascii=False))
    return rows, questions, graded


def below(bar: float, grades: dict[str, Any]) -> bool:
    """Whether every section kept by ``grades`` (on its window) has a P(yes) below ``bar``."""
    kept = [g for g in grades["window"] if g["verdict"] is not False]
    return bool(kept) and all((g["p_yes"] or 0.0) < bar for g in kept)


def main() -> None:
    args = grader_variants.sets_parser(__doc__).parse_args()
    manifest = {s.name: s for s in protocol.read_manifest(args.sets)}
    drafts = Path(args.drafts)
    results: dict[str, Any] = {}
    for name in args.only or [*grader_variants.DRAFTS, "daily-vault"]:
        eval_set = manifest[name]
        context = grader_variants.loaded(eval_set)
        rows, questions, graded = graphs_rows(name, eval_set, context, drafts)
        checks = Checks(drafts / "check-replays.verdicts.json", context, name)
        designs: dict[str, Callable[[dict, str], bool]] = {
            "the graph's check": checks.graph,
            "the model on every draft the figure lookups keep": checks.model_on_every_draft,
            "months and weekdays read as names (before 2026-12-06)": checks.months_as_names,
            "a draft that says nothing new withdrawn": checks.nothing_new,
        }
        for enough in ON_A_LINE:
            designs[f"figures settle only on a line about {enough} of the question's words"] = (
                lambda row, question, enough=enough: checks.graph(row, question, enough)
            )
        for bar in (0.6, 0.7, 0.8):
            designs[f"turned away below a P(yes) of {bar} on every kept section"] = (
                lambda row, question, bar=bar: (
                    below(bar, graded[row["id"]]) or checks.graph(row, question)
                )
            )
        asked = len(checks.verdicts)
        results[name] = {}
        for design, how in designs.items():
            checks.consulted = 0
            results[name][design] = outcome(rows, questions, how)
            results[name][design]["model calls"] = checks.consulted
        results[name]["model asked here"] = len(checks.verdicts) - asked
        print(name, json.dumps(results[name], ensure_ascii=False), flush=True)
    if args.record:
        Path(args.record).write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
