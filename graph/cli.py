"""The ``rag`` command line: load notes, ask questions, inspect the index.

Exit codes: 0 success (a clean "no answer" included), 2 usage or configuration error,
3 Ollama or Chroma unreachable / model missing, 130 interrupted. Errors are one line on
stderr; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from typing import Any

import graph  # noqa: F401  (switches off telemetry before anything else is imported)
from graph.errors import ConfigError, RagError


def _common(parser: argparse.ArgumentParser, *, collection_required: bool = True) -> None:
    parser.add_argument(
        "-n", "--collection", required=collection_required, help="Chroma collection name"
    )
    parser.add_argument("-d", "--database-url", help="Chroma server URL (default: embedded)")
    parser.add_argument(
        "--persist-dir", help="embedded Chroma folder (default: ~/.local/share/notes-rag/chroma)"
    )
    parser.add_argument(
        "--ollama-host", help="Ollama URL (default: $OLLAMA_HOST or localhost:11434)"
    )
    parser.add_argument(
        "-e", "--embedding-model", help="embedding model (default nomic-embed-text)"
    )
    parser.add_argument("--timeout", type=float, help="seconds to wait for one Ollama response")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    parser = argparse.ArgumentParser(prog="rag", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    load = commands.add_parser("load", help="load (or refresh) a folder of markdown notes")
    load.add_argument("-f", "--folder", required=True, help="folder of markdown notes")
    _common(load)
    load.add_argument("--chunk-size", type=int, default=1500)
    load.add_argument("--chunk-overlap", type=int, default=300)
    load.add_argument(
        "--rebuild",
        action="store_true",
        help="replace a collection built with another model, chunking or folder",
    )

    ask = commands.add_parser("ask", help="ask a question (streams the answer, cites sources)")
    ask.add_argument("-q", "--question", required=True)
    _common(ask)
    ask.add_argument("-m", "--model", help="chat model (default llama3.1:8b)")
    ask.add_argument("--vision-model", help="multimodal model for image questions")
    ask.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="PATH",
        help="image to ask about (repeatable)",
    )
    ask.add_argument("-k", type=int, help="chunks to retrieve (default 5)")
    ask.add_argument("--threshold", type=float, help="relevance threshold (default 0.5)")
    ask.add_argument("--json", action="store_true", help="print the final state as JSON")
    ask.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show the path through the graph and each grade",
    )

    query = commands.add_parser("query", help="show the retrieved chunks and scores (no LLM)")
    query.add_argument("-q", "--question", required=True)
    _common(query)
    query.add_argument("-r", "--results", type=int, default=5, help="how many chunks")
    query.add_argument("--threshold", type=float, help="relevance threshold (default 0.5)")

    evaluate = commands.add_parser(
        "eval", help="measure retrieval (hit@k, MRR, threshold) on a labelled set"
    )
    evaluate.add_argument(
        "--set", required=True, help="labelled set (JSON), e.g. tests/retrieval_eval.json"
    )
    _common(evaluate, collection_required=False)
    evaluate.add_argument("-k", type=int, default=5)

    listing = commands.add_parser("collections", help="list collections with note counts")
    _common(listing, collection_required=False)

    drop = commands.add_parser("drop", help="delete a collection")
    _common(drop)
    drop.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    return parser


def make_context(args: argparse.Namespace) -> Any:
    """A ``Context`` with only the settings given on the command line (env fills the rest)."""
    from graph.context import Context

    given = {
        "collection_name": getattr(args, "collection", None),
        "chroma_server_url": args.database_url,
        "chroma_persist_directory": args.persist_dir,
        "ollama_base_url": args.ollama_host,
        "embedding_model": args.embedding_model,
        "request_timeout": args.timeout,
        "chat_model": getattr(args, "model", None),
        "vision_model": getattr(args, "vision_model", None),
        "k": getattr(args, "k", None),
        "score_threshold": getattr(args, "threshold", None),
    }
    try:
        return Context(**{key: value for key, value in given.items() if value is not None})
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _progress_bar(done: int, total: int) -> None:
    if not sys.stderr.isatty() or total == 0:
        return
    width = 30
    filled = width * done // total
    sys.stderr.write(f"\rembedding [{'#' * filled}{'.' * (width - filled)}] {done}/{total} chunks")
    if done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def cmd_load(args: argparse.Namespace) -> int:
    """``rag load``."""
    from graph.ingest import load_notes
    from graph.models import default_models

    context = make_context(args)
    report = load_notes(
        context,
        args.folder,
        default_models().embeddings(context),
        chunk_size=args.chunk_size,
        chunk_overlap=args.chunk_overlap,
        rebuild=args.rebuild,
        progress=_progress_bar,
        notify=lambda line: print(line, file=sys.stderr),
    )
    print(f"{context.collection_name}: {report.summary()}")
    return 0


def _print_sources(sources: list[dict]) -> None:
    if sources:
        print("\nSources:")
        for source in sources:
            print(
                f"  - {source['path']}" + (f" — {source['heading']}" if source["heading"] else "")
            )


def cmd_ask(args: argparse.Namespace) -> int:
    """``rag ask``: stream the answer tokens, then the sources."""
    from graph.builder import graph as rag_graph
    from graph.tracing import run_config

    context = make_context(args)
    question: Any = {"question": args.question}
    if args.image:
        question["images"] = args.image
    final: dict[str, Any] = {}
    streamed = False
    payload: Any
    modes: Any = ["updates", "messages", "values"]
    config: Any = run_config(context, entry_point="rag ask")
    for mode, payload in rag_graph.stream(question, config, context=context, stream_mode=modes):
        if mode == "values":
            final = payload
        elif mode == "messages" and not args.json:
            chunk, metadata = payload
            if metadata.get("langgraph_node") in ("generate", "image") and chunk.content:
                print(chunk.content, end="", flush=True)
                streamed = True
        elif mode == "updates" and args.verbose:
            for update in payload.values():
                for step in (update or {}).get("steps", []):
                    if not step.startswith("\x00"):
                        print(f"  [{step}]", file=sys.stderr)
    if args.json:
        keys = (
            "question",
            "route",
            "answer",
            "sources",
            "steps",
            "grades",
            "no_answer_reason",
            "standalone_question",
            "expression",
        )
        print(json.dumps({k: final.get(k) for k in keys}, indent=2, ensure_ascii=False))
        return 0
    if streamed:
        print()
    else:
        print(final.get("answer", ""))
    _print_sources(final.get("sources") or [])
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    """``rag query``: retrieval only, with scores."""
    from graph.models import default_models
    from graph.retrieval import search_notes

    context = make_context(args)
    result = search_notes(
        context, default_models().embeddings(context), args.question, k=args.results
    )
    if result.collection_size == 0:
        print(f"collection '{context.collection_name}' is empty or missing: run `rag load` first")
        return 0
    # Rank order (fused in hybrid mode); the score shown is the cosine relevance.
    for rank, chunk in enumerate(result.ranked, start=1):
        mark = "" if chunk["score"] >= context.effective_threshold else "  (below threshold)"
        print(
            f"{rank}. {chunk['score']:.3f}  {chunk['source']} — {chunk['heading'] or '(top)'}{mark}"
        )
        preview = " ".join(chunk["content"].split())
        print(f"   {preview[:200]}{'...' if len(preview) > 200 else ''}")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    """``rag eval``: load the set's notes into their own collection, compare configurations."""
    from graph.evaluation import load_set, report
    from graph.ingest import load_notes
    from graph.models import default_models

    if not args.collection:
        model = (args.embedding_model or "default").replace(":", "-")
        args.collection = f"eval-{model}"
    context = make_context(args)
    notes, questions = load_set(args.set)
    embeddings = default_models().embeddings(context)
    load_notes(context, notes, embeddings)
    print(report(context, embeddings, questions, k=args.k))
    return 0


def cmd_collections(args: argparse.Namespace) -> int:
    """``rag collections``: name, notes, chunks, embedding model."""
    from graph.vectorstore import IndexInfo, open_client

    client = open_client(make_context(args))
    rows = []
    for entry in client.list_collections():
        collection = client.get_collection(entry if isinstance(entry, str) else entry.name)
        metadatas = collection.get(include=["metadatas"])["metadatas"] or []
        info = IndexInfo.from_metadata(collection.metadata)
        notes = len({m.get("source") for m in metadatas if m})
        model = info.embedding_model if info else "?"
        rows.append(f"{collection.name}\t{notes} notes\t{len(metadatas)} chunks\t{model}")
    print("\n".join(sorted(rows)) if rows else "no collections")
    return 0


def cmd_drop(args: argparse.Namespace) -> int:
    """``rag drop``: delete a collection after confirmation."""
    from graph.vectorstore import get_collection, open_client

    context = make_context(args)
    if get_collection(context) is None:
        raise ConfigError(f"no collection named '{context.collection_name}'")
    if not args.yes:
        if not sys.stdin.isatty():
            raise ConfigError("refusing to drop without confirmation: pass --yes")
        reply = input(f"Delete collection '{context.collection_name}'? [y/N] ")
        if reply.strip().lower() not in ("y", "yes"):
            print("kept")
            return 0
    open_client(context).delete_collection(context.collection_name)
    print(f"dropped {context.collection_name}")
    return 0


COMMANDS = {
    "load": cmd_load,
    "ask": cmd_ask,
    "query": cmd_query,
    "eval": cmd_eval,
    "collections": cmd_collections,
    "drop": cmd_drop,
}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rag`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except RagError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"rag: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(
            "\nrag: interrupted; the index is consistent, run the command again to finish",
            file=sys.stderr,
        )
        return 130
    except Exception as exc:  # the last line of defence: never a traceback for users
        if args.debug:
            traceback.print_exc()
        cause = _root_rag_error(exc)
        if cause is not None:
            print(f"rag: error: {cause}", file=sys.stderr)
            return cause.exit_code
        print(
            f"rag: error: {type(exc).__name__}: {exc} (run with --debug for details)",
            file=sys.stderr,
        )
        return 1


def _root_rag_error(exc: BaseException) -> RagError | None:
    """A ``RagError`` wrapped by a framework exception, if any."""
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < 10:
        if isinstance(current, RagError):
            return current
        current = current.__cause__ or current.__context__
        seen += 1
    return None


if __name__ == "__main__":
    sys.exit(main())
