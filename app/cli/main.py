"""The ``rag`` command line: load notes, ask questions, inspect the index.

Exit codes: 0 success (a clean "no answer" included), 2 usage or configuration error,
3 Ollama or Chroma unreachable / model missing, 130 interrupted. Errors are one line on
stderr; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import Field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from app.cli import output
from app.cli.calibrate import add_calibrate_parser, cmd_calibrate
from app.cli.chat import add_chat_parser, cmd_chat
from app.cli.evaluate import add_eval_parser, cmd_eval
from app.cli.flags import FLAGS
from app.cli.output import ProgressBar, say, warn
from app.cli.questions import add_questions_parser, cmd_questions
from app.cli.settings import make_context, require_collection
from graph.errors import ConfigError, RagError, find_cause
from graph.index.ingest import LoadOptions

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

    from graph.context import Context
    from graph.models import ModelProvider


class _Parser(argparse.ArgumentParser):
    """argparse printing through :mod:`app.cli.output`: its errors echo the arguments back."""

    def print_usage(self, file: SupportsWrite[str] | None = None) -> None:
        say(self.format_usage(), end="", stream=file)

    def print_help(self, file: SupportsWrite[str] | None = None) -> None:
        say(self.format_help(), end="", stream=file)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            warn(message, end="")
        sys.exit(status)


def _setting_help(f: Field) -> str:
    from graph.context import default_of

    description = f.metadata["description"].split(" (env: ")[0].rstrip(".;")
    default = default_of(f) if default_of(f) not in ("", None, []) else None
    shown = f"default {default}; " if default is not None else ""
    return f"{description} ({shown}env {f.metadata['env']})"


def _add_settings(parser: argparse.ArgumentParser, command: str) -> None:
    """Flags for the ``Context`` settings this command uses (``FLAGS``), helped by metadata."""
    from graph.context import Context

    for f in fields(Context):
        flag = FLAGS.get(f.name)
        if flag is None or command not in flag.commands:
            continue
        kind = f.metadata["kind"]
        extra: dict[str, Any] = {}
        if kind is bool:
            extra["action"] = argparse.BooleanOptionalAction
        elif kind is list:  # repeatable; the environment takes a comma-separated list
            extra.update(action="append", type=str, metavar=f.name.rstrip("s").upper())
        else:
            extra["type"] = kind
        parser.add_argument(*flag.names, dest=f.name, default=None, help=_setting_help(f), **extra)
    parser.add_argument("--debug", action="store_true", help="show tracebacks")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    parser = _Parser(prog="rag", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    load = commands.add_parser("load", help="load (or refresh) a folder of markdown notes")
    load.add_argument("-f", "--folder", required=True, help="folder of markdown notes")
    load.add_argument("--chunk-size", type=int, default=LoadOptions.chunk_size)
    load.add_argument("--chunk-overlap", type=int, default=LoadOptions.chunk_overlap)
    load.add_argument(
        "--parse-budget",
        type=float,
        default=LoadOptions.parse_budget,
        metavar="SECONDS",
        help="seconds one note's parsing may take; a note taking longer is skipped with a "
        "warning and the load goes on",
    )
    load.add_argument(
        "--rebuild",
        action="store_true",
        help="re-embed every note into a new collection beside the old one and swap it in when "
        "complete (needed for another model, chunking or folder)",
    )
    load.add_argument(
        "--stemming",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="BM25 matches words by their stem (the default for a new collection) or, with "
        "--no-stemming, as written; kept by later loads until changed (a change re-reads the "
        "words, without embedding)",
    )
    load.add_argument(
        "--watch",
        action="store_true",
        help="after loading, keep the collection in step with the folder (Ctrl-C stops)",
    )

    ask = commands.add_parser("ask", help="ask a question (streams the answer, cites sources)")
    ask.add_argument("-q", "--question", required=True)
    ask.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="PATH",
        help="image to ask about (repeatable)",
    )
    ask.add_argument("--json", action="store_true", help="print the result as JSON")
    ask.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show the path through the graph and each grade",
    )

    query = commands.add_parser("query", help="show the retrieved chunks and scores (no LLM)")
    query.add_argument("-q", "--question", required=True)
    query.add_argument(
        "--json", action="store_true", help="print the ranked chunks (full content) as JSON"
    )

    listing = commands.add_parser("collections", help="list collections with note counts")
    listing.add_argument("--json", action="store_true", help="print the list as JSON")

    drop = commands.add_parser("drop", help="delete a collection")
    drop.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    doctor = commands.add_parser(
        "doctor", help="check Ollama, the models, num_ctx and the index; each problem with a fix"
    )
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")

    add_eval_parser(commands)
    add_chat_parser(commands)
    add_calibrate_parser(commands)
    add_questions_parser(commands)

    for name, sub in commands.choices.items():
        _add_settings(sub, name)
    return parser


def cmd_load(args: argparse.Namespace, models: ModelProvider) -> int:
    """``rag load``."""
    from graph.index.ingest import load_notes
    from graph.index.vectorstore import with_embedding_model

    context = with_embedding_model(make_context(args))
    options = LoadOptions(
        chunk_size=args.chunk_size,
        chunk_overlap=args.chunk_overlap,
        rebuild=args.rebuild,
        parse_budget=args.parse_budget,
        stemming=args.stemming,
    )
    with ProgressBar("embedding", unit="chunk") as progress:
        report = load_notes(
            context,
            args.folder,
            models.embeddings(context),
            options,
            progress=lambda done, total: progress(done, total, ""),
            notify=warn,
        )
    say(f"{context.collection_name}: {report.summary()}", flush=True)
    if args.watch:
        return _watch(context, args, models, options)
    return 0


def _watch(
    context: Context, args: argparse.Namespace, models: ModelProvider, options: LoadOptions
) -> int:
    """``rag load --watch``: one line per changed note; Ctrl-C exits 130 (interrupted)."""
    from graph.index.watch import watch_notes

    try:
        watch_notes(
            context,
            args.folder,
            models.embeddings(context),
            options,
            notify=lambda line: say(line, flush=True),
            on_ready=lambda: say(f"watching {args.folder} (Ctrl-C stops)", flush=True),
        )
    except KeyboardInterrupt:
        warn("stopped watching; the index is consistent")
        return 130
    return 0


def _print_sources(sources: list[dict]) -> None:
    if sources:
        say("\nSources:")
        output.sources(sources)


def _stream_answer(
    rag_graph: Any, question: dict, context: Context, args: argparse.Namespace
) -> tuple[dict[str, Any], str, bool]:
    """Run the graph, printing answer tokens (and ``-v`` steps) as they come.

    On a terminal a status line on stderr says what the graph is doing meanwhile. The
    sources are printed once the answer is written, while it is checked against them.
    Returns the final state, the answer text printed while streaming (its line ended) and
    whether the sources were printed. Ctrl-C stops the run's model work before it
    interrupts: the calls in flight are aborted (graph/stopping.py).
    """
    from graph.llm import ReasoningFilter
    from graph.progress import describe
    from graph.state import NEW_RUN
    from graph.stopping import Stop, stop_on_ctrl_c
    from graph.tracing import run_config

    final: dict[str, Any] = {}
    streamed = ""
    cited = False
    payload: Any
    modes: Any = [*_MODES] if args.json else [*_MODES, "custom"]
    stop = Stop()
    config: Any = {**run_config(context, entry_point="rag ask"), "callbacks": [stop]}
    # One filter per answering node: reasoning goes to stderr (--think) or nowhere.
    filters: dict[str, ReasoningFilter] = {}
    with stop_on_ctrl_c(stop), output.StatusLine(enabled=not args.json) as status:
        for mode, payload in rag_graph.stream(question, config, context=context, stream_mode=modes):
            if mode == "values":
                final = payload
            elif mode == "custom":
                if payload["stage"] == "written" and streamed:
                    status.hide()
                    say()
                    _print_sources(payload.get("sources") or [])
                    cited = True
                status.show(describe(payload))
            elif mode == "messages" and not args.json:
                streamed += output.answer_piece(payload, filters, status, context.show_thinking)
            elif mode == "updates" and args.verbose:
                for update in payload.values():
                    for step in (update or {}).get("steps", []):
                        if step != NEW_RUN:
                            with status.above():
                                warn(f"  [{step}]")
    if streamed and not cited:
        say()
    return final, streamed, cited


#: What ``rag ask`` streams (``custom``, the graph's progress, too unless ``--json``).
_MODES = ("updates", "messages", "values")


def cmd_ask(args: argparse.Namespace, models: ModelProvider) -> int:
    """``rag ask``: stream the answer tokens, then the sources."""
    from graph.builder import build_graph
    from graph.index.image_files import encode_file
    from graph.index.vectorstore import with_embedding_model
    from graph.state import RESULT_FIELDS, unstreamed_tail

    # One question, then the process ends: nothing to read ahead for (graph/warmup.py).
    context = replace(with_embedding_model(make_context(args)), read_ahead=False)
    question: dict[str, Any] = {"question": args.question}
    if args.image:  # read here: the graph itself takes images as bytes (base64)
        question["images"] = [encode_file(Path(path).expanduser()) for path in args.image]
    final, streamed, cited = _stream_answer(build_graph(models=models), question, context, args)
    if args.json:
        keys = ("question", *RESULT_FIELDS)
        output.say_json({k: final.get(k) for k in keys})
        return 0
    if not streamed:
        say(final.get("answer", ""))
    elif tail := unstreamed_tail(final.get("answer") or "", streamed):
        say(f"\n{tail}")
    if not cited:
        _print_sources(final.get("sources") or [])
    return 0


def cmd_query(args: argparse.Namespace, models: ModelProvider) -> int:
    """``rag query``: retrieval only, with scores."""
    from graph.index.browse import spelling_hint
    from graph.index.filters import NoteFilter
    from graph.index.retrieval import search_notes
    from graph.index.vectorstore import with_embedding_model

    require_collection(make_context(args))
    context = with_embedding_model(make_context(args))
    result = search_notes(context, models.embeddings(context), args.question)
    if args.json:
        rows = [
            {
                "rank": rank,
                "score": chunk["score"],
                "source": chunk["source"],
                "heading": chunk["heading"],
                "tags": chunk["tags"],
                "content": chunk["content"],
            }
            for rank, chunk in enumerate(result.ranked, start=1)
        ]
        output.say_json(rows)
        return 0
    if result.collection_size == 0:
        say(f"collection '{context.collection_name}' is empty: run `rag load` first")
        return 0
    if result.filter_empty:
        chosen = NoteFilter.of(context.tags, context.folders)
        hint = spelling_hint(context, chosen) if chosen else ""
        say(f"no note matches the filter ({chosen.describe() if chosen else ''})", end="")
        say(f"; {hint}" if hint else "")
        return 0
    # Rank order (fused in hybrid mode); the score shown is the cosine relevance.
    for rank, chunk in enumerate(result.ranked, start=1):
        mark = "" if any(chunk is kept for kept in result.relevant) else "  (below threshold)"
        place = f"{chunk['source']} — {chunk['heading'] or '(top)'}"
        say(f"{rank}. {chunk['score']:.3f}  {place}{mark}")
        preview = " ".join(output.terminal_text(chunk["content"]).split())
        say(f"   {preview[:200]}{'...' if len(preview) > 200 else ''}")
    return 0


#: How ``rag collections`` says a collection's BM25 words are matched (``rag load --no-stemming``).
WORDS = {True: "words stemmed", False: "words as written"}


def cmd_collections(args: argparse.Namespace, models: ModelProvider) -> int:
    """``rag collections``: name, notes, chunks, embedding model, how words are matched."""
    from graph.index.catalog import describe_collections

    rows = describe_collections(make_context(args))
    if args.json:
        output.say_json(rows)
    elif rows:
        for row in rows:
            empty = f" + {row['empty_notes']} empty" if row["empty_notes"] else ""
            words = WORDS.get(row["stemmed"], "?")
            say(
                f"{row['name']}\t{row['notes']} notes{empty}\t{row['chunks']} chunks\t"
                f"{row['embedding_model'] or '?'}\t{words}"
            )
    else:
        say("no collections")
    return 0


def cmd_drop(args: argparse.Namespace, models: ModelProvider) -> int:
    """``rag drop``: delete a collection after confirmation."""
    from graph.index.ingest import drop_collection

    context = make_context(args)
    require_collection(context)
    if not args.yes:
        if not output.interactive():
            raise ConfigError("refusing to drop without confirmation: pass --yes")
        reply = output.ask(f"Delete collection '{context.collection_name}'? [y/N] ")
        if reply.strip().lower() not in ("y", "yes"):
            say("kept")
            return 0
    drop_collection(context, notify=warn)
    say(f"dropped {context.collection_name}")
    return 0


def cmd_doctor(args: argparse.Namespace, models: ModelProvider) -> int:
    """``rag doctor``: exit 0 all pass, 2 configuration problems, 3 services unreachable."""
    from graph.doctor import diagnose, exit_code, report

    checks = diagnose(make_context(args))
    text = report(checks, as_json=args.json)
    say(output.json_safe(text) if args.json else text)
    return exit_code(checks)


COMMANDS = {
    "load": cmd_load,
    "ask": cmd_ask,
    "query": cmd_query,
    "eval": cmd_eval,
    "collections": cmd_collections,
    "drop": cmd_drop,
    "doctor": cmd_doctor,
    "chat": cmd_chat,
    "calibrate": cmd_calibrate,
    "questions": cmd_questions,
}


def main(argv: list[str] | None = None, models: ModelProvider | None = None) -> int:
    """Entry point of the ``rag`` console script.

    Args:
        argv: The arguments (default: the process's).
        models: Where models come from (default: Ollama); tests pass fakes.
    """
    from graph.models import default_models

    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args, models or default_models())
    except RagError as exc:
        if args.debug:
            output.error_trace()
        output.error(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        warn("\nrag: interrupted; the index is consistent, run the command again to finish")
        return 130
    except Exception as exc:  # the last line of defence: never a traceback for users
        if args.debug:
            output.error_trace()
        cause = _root_rag_error(exc)
        if cause is not None:
            output.error(str(cause))
            return cause.exit_code
        output.error(f"{type(exc).__name__}: {exc} (run with --debug for details)")
        return 1


def _root_rag_error(exc: BaseException) -> RagError | None:
    """A ``RagError`` wrapped by a framework exception, if any."""
    return find_cause(exc, RagError)


if __name__ == "__main__":
    sys.exit(main())
