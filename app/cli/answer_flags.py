"""``rag eval --answers``'s flags, read into the evaluation's ``AnswerOptions``."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.evaluation.answer_options import DESIGNS, SPLITS, AnswerOptions
from graph.errors import ConfigError


def add_answer_arguments(parser: argparse.ArgumentParser) -> None:
    """``rag eval``'s flags for the answer evaluation."""
    parser.add_argument(
        "--answers",
        action="store_true",
        help="evaluate answers instead of retrieval: each question through this graph and "
        "the classic design (facts, citations, abstention, model calls, tokens, time)",
    )
    parser.add_argument(
        "--split",
        choices=SPLITS,
        default=None,
        help="with --answers: the half of the set to run (default heldout)",
    )
    parser.add_argument(
        "--design",
        choices=("both", *DESIGNS),
        default=None,
        help="with --answers: the design(s) to run (default both)",
    )
    parser.add_argument(
        "--limit",
        type=int,
        default=None,
        metavar="N",
        help="with --answers: only the first N questions of the split",
    )
    parser.add_argument(
        "--report",
        default=None,
        metavar="PATH",
        help="with --answers: write every question's result to PATH (JSON)",
    )


def answer_options(args: argparse.Namespace) -> AnswerOptions | None:
    """The answer evaluation asked for, or ``None`` for a retrieval evaluation."""
    given = [
        flag
        for flag, value in (
            ("--split", args.split),
            ("--design", args.design),
            ("--limit", args.limit),
            ("--report", args.report),
        )
        if value is not None
    ]
    if not args.answers:
        if given:
            raise ConfigError(f"{', '.join(given)}: only with --answers")
        return None
    if args.limit is not None and args.limit < 1:
        raise ConfigError(f"--limit must be at least 1, not {args.limit}")
    design = args.design or "both"
    return AnswerOptions(
        split=args.split or "heldout",
        designs=DESIGNS if design == "both" else (design,),
        limit=args.limit,
        report=Path(args.report) if args.report else None,
    )
