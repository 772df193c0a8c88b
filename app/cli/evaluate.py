"""``rag eval``: measure retrieval or answers on a labelled set, or on every set of a manifest.

What is measured and how is ``app.evaluation``'s; this reads the flags, refuses the ones that
do not go together, prints the tables and writes the records asked for.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.cli.answer_flags import add_answer_arguments, answer_options
from app.cli.output import ProgressBar, say, warn
from app.cli.settings import make_context
from graph.errors import ConfigError

if TYPE_CHECKING:  # the graph's libraries load only when the command runs
    from graph.models import ModelProvider


def add_eval_parser(commands: Any) -> None:
    """``rag eval`` and its own flags (the settings' flags are added by the caller)."""
    evaluate = commands.add_parser(
        "eval",
        help="measure retrieval (hit@k, MRR, threshold) or, with --answers, answers on a "
        "labelled set",
    )
    which = evaluate.add_mutually_exclusive_group(required=True)
    which.add_argument("--set", help="labelled set (JSON), e.g. tests/retrieval_eval.json")
    which.add_argument(
        "--sets",
        metavar="MANIFEST",
        help="every set a manifest lists (tests/eval_sets/sets.json), side by side, the worst "
        "first; tune and validation sets unless --role or --test",
    )
    evaluate.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NAME",
        help="with --sets: only the set of this name (repeatable)",
    )
    evaluate.add_argument(
        "--role",
        action="append",
        default=[],
        choices=("tune", "validation"),
        help="with --sets: only the sets of this role (repeatable)",
    )
    evaluate.add_argument(
        "--test",
        action="store_true",
        help="with --sets: only the frozen test sets, totals only, recorded once per commit "
        "in --record",
    )
    evaluate.add_argument(
        "--record",
        default=None,
        metavar="FILE",
        help="with --sets: write the figures to FILE (JSON); with --test, append the run",
    )
    evaluate.add_argument(
        "--compare",
        default=None,
        metavar="FILE",
        help="with --sets: judge each set against figures recorded with --record (worse only "
        "beyond the paired bootstrap's noise); exit 1 when a set is worse",
    )
    evaluate.add_argument(
        "--graded",
        action="store_true",
        help="add two rows after the chat model's grader: the chunks it keeps (what the "
        "graph answers from) and every chunk with those first (one model call per chunk at "
        "or above the floor)",
    )
    add_answer_arguments(evaluate)


def cmd_eval(args: argparse.Namespace, models: ModelProvider) -> int:
    """``rag eval``: load the set's notes into their own collection, compare configurations."""
    from app.evaluation.answers import render, run_answers
    from app.evaluation.retrieval import eval_collection, load_set, report
    from graph.index.ingest import load_notes
    from graph.index.vectorstore import with_embedding_model

    if args.sets:
        return eval_sets(args, models)
    if args.role or args.only or args.test or args.record or args.compare:
        raise ConfigError("--role, --only, --test, --record and --compare: only with --sets")
    answers = answer_options(args)
    if answers is not None and args.graded:
        raise ConfigError("--graded: only without --answers (the answer evaluation grades anyway)")
    if args.collection_name is None:
        args.collection_name = eval_collection(args.set, args.embedding_model)
    context = with_embedding_model(make_context(args))
    notes, questions = load_set(args.set)
    embeddings = models.embeddings(context)
    load_notes(context, notes, embeddings)
    if answers is not None:
        with ProgressBar("answers", unit="question") as progress:
            answered = run_answers(args.set, answers, context, models, warn, progress)
        say(render(answered))
        return 0
    with ProgressBar("graded", unit="question") as progress:
        measured = report(
            context,
            embeddings,
            questions,
            k=context.k,
            graded_by=models if args.graded else None,
            notify=warn,
            progress=progress,
        )
    say(measured)
    return 0


def eval_sets(args: argparse.Namespace, models: ModelProvider) -> int:
    """``rag eval --sets``: every set of the manifest, each in its own collection."""
    from app.evaluation import sets as protocol

    answers = answer_options(args)
    if args.graded:
        raise ConfigError("--sets: no --graded (the answer evaluation grades anyway)")
    if args.test and (args.role or args.compare):
        raise ConfigError("--test: the test sets alone, with nothing to compare against")
    if answers is not None and (args.compare or answers.report):
        raise ConfigError("--sets --answers: --record FILE keeps the figures (no --compare)")
    manifest = protocol.read_manifest(args.sets)
    chosen = protocol.selected(manifest, args.role, args.test, args.only)
    commit = ""
    if args.test:
        if not args.record:
            raise ConfigError("--test needs --record FILE: a test run is recorded once")
        commit = protocol.measured_commit()
    with ProgressBar("answers", unit="question") as progress:
        run = protocol.evaluate_sets(chosen, make_context(args), models, answers, warn, progress)
    figures = run.figures
    if answers is None:
        say(protocol.render(figures, run.context.retrieval_mode))
    else:
        say(protocol.render_answers(figures))
    if args.test:
        digests = {s.name: s.digest for s in chosen}
        totals = [dict(f.totals() if answers is None else asdict(f)) for f in figures]
        for entry in totals:
            entry["sha256"] = digests[entry["name"]]
        measured = "retrieval" if answers is None else "answers"
        protocol.record_test_run(Path(args.record), commit, run.context, measured, totals)
        say(f"recorded in {args.record} (commit {commit[:12]})")
    elif args.record:
        record = protocol.figures_record(figures, answers is not None)
        Path(args.record).write_text(json.dumps(record, indent=1) + "\n")
    if args.compare:
        verdicts = protocol.compare(figures, json.loads(Path(args.compare).read_text()))
        for line in verdicts:
            say(line)
        if any("WORSE" in line for line in verdicts):
            return 1
    return 0
