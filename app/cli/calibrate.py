"""``rag calibrate``: fit the answer check's bar to your own notes and chat model.

The method is ``app.evaluation.calibrate``'s; this reads the flags, draws the sections and
prints the figures (``--json``: as JSON). Nothing is written: the suggestion is a line to
put in your environment.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from app.cli import output
from app.cli.output import ProgressBar, say
from app.cli.settings import make_context, require_collection
from graph.errors import ConfigError

if TYPE_CHECKING:  # the graph's libraries load only when the command runs
    from graph.models import ModelProvider


def add_calibrate_parser(commands: Any) -> None:
    """``rag calibrate`` and its own flags (the settings' flags are added by the caller)."""
    calibrate = commands.add_parser(
        "calibrate",
        help="fit the answer check's confidence bar to your notes and chat model (questions "
        "written from your notes by the model; nothing is changed)",
    )
    calibrate.add_argument(
        "--sections",
        type=int,
        default=20,
        help="sections to write a question from (each costs about two `rag ask` runs)",
    )
    calibrate.add_argument("--seed", type=int, default=0, help="which sections are drawn")
    calibrate.add_argument("--json", action="store_true", help="print the figures as JSON")


def cmd_calibrate(args: argparse.Namespace, models: ModelProvider) -> int:
    """``rag calibrate``: write questions, draft, check once each, replay every bar."""
    from app.evaluation.calibrate import as_json, calibrate, render
    from app.evaluation.sections import MIN_SECTION_CHARS, draw_sections
    from graph.index.vectorstore import with_embedding_model

    if not 1 <= args.sections <= 500:
        raise ConfigError(f"--sections must be between 1 and 500, got {args.sections}")
    context = with_embedding_model(make_context(args))
    require_collection(context)
    sections = draw_sections(context, args.sections, args.seed)
    if not sections:
        raise ConfigError(
            f"'{context.collection_name}' has no section of {MIN_SECTION_CHARS} characters or "
            "more to write questions from"
        )
    with ProgressBar("calibrate", unit="section") as progress:
        run = calibrate(context, models, sections, progress)
    if args.json:
        output.say_json(as_json(context, run))
    else:
        say(render(context, run))
    return 0
