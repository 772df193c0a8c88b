"""``rag questions``: write a labelled set of questions from your own notes, for ``rag eval``.

The project's figures hold on the notes they were measured on; a user's notes are always
unseen. This writes a set from them that ``rag eval --set FILE`` measures retrieval on:

1. A sample of the collection's sections, drawn with a seed as ``rag calibrate`` draws them
   (one chunk read per draw: the cost does not grow with the collection).
2. For each section the chat model writes, in the section's language, a question the section
   answers and a short answer copied from it (``rag calibrate``'s prompt).
3. Rules, not the model, decide what is kept. A question is kept only when its answer is
   written word for word in the section and in its note file as the file has it (the fact
   ``rag eval --answers`` looks for), is not written in the question itself (a question
   that holds its answer measures nothing), and the question is not a repeat of one kept.
4. Each question names its note as the expected source and the answer as its one fact, and
   says how it was made: the model, the note and the heading.

Only answerable questions are written. A near miss (a question the notes almost answer) is
not told from an answerable one without reading the notes; ``rag calibrate`` makes its near
misses by leaving the answer out of the search, which a set file cannot say.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.cli.calibrate import Pair, Section, sample_sections, with_models, write_pair
from app.cli.output import say, warn
from graph.errors import ConfigError

if TYPE_CHECKING:  # the graph's libraries load only when the command runs
    from graph.models import ModelProvider

#: Why a section gave no question, in the order the rules are applied (the summary's words).
REJECTIONS = {
    "unusable": "no usable reply (not JSON, no short answer, or an answer not in the section)",
    "answer in question": "the answer written in the question",
    "not in note": "the answer not in the note file as written",
    "repeat": "a repeat of a question kept",
}


@dataclass(frozen=True)
class Kept:
    """A question kept for the set, with the section it was written from."""

    pair: Pair
    heading: str


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


def judge(pair: Pair | None, note_text: str | None, kept: set[str]) -> str:
    """Why ``pair`` is not kept (a key of ``REJECTIONS``), or ``""`` when it is."""
    from app.cli.answer_eval import fact_found
    from graph.llm import normalise

    if pair is None:
        return "unusable"
    if normalise(pair.answer) in normalise(pair.question):
        return "answer in question"
    if note_text is None or not fact_found(note_text, [pair.answer]):
        return "not in note"
    if normalise(pair.question) in kept:
        return "repeat"
    return ""


def read_note(notes_dir: Path, source: str) -> str | None:
    """The note file's text, or ``None`` when it cannot be read (moved, deleted, not text)."""
    try:
        return (notes_dir / source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def labelled_set(
    kept: list[Kept], notes_dir: Path, out: Path, model: str, collection: str, seed: int
) -> dict[str, Any]:
    """The set file's content, in the format of ``tests/eval_sets``."""
    return {
        "notes": os.path.relpath(notes_dir, out.resolve().parent),
        "about": f"Questions {model} wrote from the notes of collection '{collection}', "
        f"{date.today().isoformat()}.",
        "made": f"rag questions --seed {seed}: each question written by {model} from one "
        "section, its answer copied from the section; kept only when the answer is written in "
        "the section and in its note file word for word, is not written in the question, and "
        "the question is not a repeat. Answerable questions only.",
        "questions": [
            {
                "id": f"q{number:03d}",
                "q": k.pair.question,
                "answerable": True,
                "kind": "generated",
                "sources": [k.pair.source],
                "facts": [[k.pair.answer]],
                "made": f"generated by {model} from {k.pair.source}"
                + (f", {k.heading}" if k.heading else ""),
            }
            for number, k in enumerate(kept, start=1)
        ],
    }


def _partial(out: Path) -> Path:
    return out.with_name(f".{out.name}.partial")


def check_writable(out: Path) -> None:
    """Refuse, before any model call, a file that exists or a folder it cannot be written in."""
    if out.exists():
        raise ConfigError(f"{out} exists: remove it or choose another file")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        _partial(out).touch()
        _partial(out).unlink()
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise ConfigError(f"cannot write {out}: {exc.strerror or exc}{where}") from None


def write_new(out: Path, content: dict[str, Any]) -> None:
    """Write ``out`` whole or not at all, never over an existing file."""
    text = json.dumps(content, indent=1, ensure_ascii=False) + "\n"
    partial = _partial(out)
    try:
        partial.write_text(text, encoding="utf-8")
        try:
            os.link(partial, out)  # fails when ``out`` appeared meanwhile: it is kept
        except FileExistsError:
            raise
        except OSError:  # a file system without hard links: create it, only if it is new
            with open(out, "x", encoding="utf-8") as created:
                created.write(text)
    except FileExistsError:
        raise ConfigError(f"{out} exists: remove it or choose another file") from None
    finally:
        partial.unlink(missing_ok=True)


def cmd_questions(args: argparse.Namespace, models: ModelProvider) -> int:
    """``rag questions``: draw sections, have the model write a question each, keep by rule."""
    from app.cli.main import make_context, require_collection
    from graph.index.vectorstore import get_collection, index_info, reading, with_embedding_model
    from graph.llm import normalise

    if not 1 <= args.sections <= 500:
        raise ConfigError(f"--sections must be between 1 and 500, got {args.sections}")
    out = Path(args.out)
    check_writable(out)
    context = with_embedding_model(make_context(args))
    require_collection(context)
    collection = get_collection(context)
    notes_dir = index_info(collection, context).notes_dir
    if not notes_dir:
        raise ConfigError(
            f"'{context.collection_name}' records no notes folder (not loaded by `rag load`): "
            "a set needs the notes its questions name"
        )
    sections: list[Section] = reading(
        context, lambda: sample_sections(collection, args.sections, args.seed)
    )
    kept: list[Kept] = []
    seen: set[str] = set()
    rejected: Counter[str] = Counter()
    started = time.perf_counter()
    for number, section in enumerate(sections, start=1):
        pair = with_models(models, lambda: write_pair(context, section))
        note_text = read_note(Path(notes_dir), pair.source) if pair else None
        why = judge(pair, note_text, seen)
        if why:
            rejected[why] += 1
        elif pair is not None:
            seen.add(normalise(pair.question))
            kept.append(Kept(pair, section.heading))
        warn(
            f"questions: section {number}/{len(sections)}, {len(kept)} kept "
            f"({time.perf_counter() - started:.0f} s)",
            flush=True,
        )
    if not kept:
        raise ConfigError(
            f"no question kept from {len(sections)} sections of '{context.collection_name}' "
            f"({_reasons(rejected)}): nothing written"
        )
    model = context.chat_model or "the chat model"
    content = labelled_set(kept, Path(notes_dir), out, model, context.collection_name, args.seed)
    write_new(out, content)
    say(
        f"wrote {len(kept)} questions to {out} from {len(sections)} sections"
        + (f" ({_reasons(rejected)})" if rejected else "")
        + f"; measure retrieval with: rag eval --set {out}"
    )
    return 0


def _reasons(rejected: Counter[str]) -> str:
    return "; ".join(f"{rejected[key]} {REJECTIONS[key]}" for key in REJECTIONS if rejected[key])
