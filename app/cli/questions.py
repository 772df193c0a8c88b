"""``rag questions``: write a labelled set of questions from your own notes, for ``rag eval``.

How questions are written and kept is ``app.evaluation.questions``'; this reads the flags,
refuses a file it could not write before the first model call, and says what it wrote.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.cli.output import ProgressBar, say
from app.cli.settings import make_context, require_collection
from graph.errors import ConfigError

if TYPE_CHECKING:  # the graph's libraries load only when the command runs
    from graph.models import ModelProvider


def add_questions_parser(commands: Any) -> None:
    """``rag questions`` and its own flags (the settings' flags are added by the caller)."""
    questions = commands.add_parser(
        "questions",
        help="write an evaluation set of questions the chat model asks of your notes, each "
        "checked by rule (measure it with `rag eval --set FILE`)",
    )
    questions.add_argument("out", help="the set file to write (JSON; an existing file is kept)")
    questions.add_argument(
        "--sections",
        type=int,
        default=50,
        help="sections to write a question from (one chat model call each)",
    )
    questions.add_argument("--seed", type=int, default=0, help="which sections are drawn")


def cmd_questions(args: argparse.Namespace, models: ModelProvider) -> int:
    """``rag questions``: draw sections, have the model write a question each, keep by rule."""
    from app.evaluation.questions import check_writable, labelled_set, write_new, write_questions
    from app.evaluation.sections import draw_sections
    from graph.index.vectorstore import get_collection, index_info, with_embedding_model

    if not 1 <= args.sections <= 500:
        raise ConfigError(f"--sections must be between 1 and 500, got {args.sections}")
    out = Path(args.out)
    check_writable(out)
    context = with_embedding_model(make_context(args))
    require_collection(context)
    notes_dir = index_info(get_collection(context), context).notes_dir
    if not notes_dir:
        raise ConfigError(
            f"'{context.collection_name}' records no notes folder (not loaded by `rag load`): "
            "a set needs the notes its questions name"
        )
    sections = draw_sections(context, args.sections, args.seed)
    with ProgressBar("questions", unit="section") as progress:
        written = write_questions(context, models, sections, Path(notes_dir), progress)
    if not written.kept:
        raise ConfigError(
            f"no question kept from {len(sections)} sections of '{context.collection_name}' "
            f"({written.reasons()}): nothing written"
        )
    model = context.chat_model or "the chat model"
    content = labelled_set(
        written.kept, Path(notes_dir), out, model, context.collection_name, args.seed
    )
    write_new(out, content)
    say(
        f"wrote {len(written.kept)} questions to {out} from {len(sections)} sections"
        + (f" ({written.reasons()})" if written.rejected else "")
        + f"; measure retrieval with: rag eval --set {out}"
    )
    return 0
