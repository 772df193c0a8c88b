"""The command line's flags for the graph's settings, keyed by ``Context`` field.

``Context`` describes what the graph needs; which of its fields the command line offers, under
which flags and for which subcommands, is the command line's own business and lives here.
Help text, defaults and environment variables still come from the field's metadata, so
``rag --help`` cannot disagree with what a setting does.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The ``rag`` subcommands, grouped by which settings they use.
ALL_COMMANDS = (
    "load",
    "ask",
    "query",
    "eval",
    "collections",
    "drop",
    "doctor",
    "chat",
    "calibrate",
    "questions",
)
SEARCHING = ("ask", "query", "eval", "doctor", "chat", "calibrate")
ASKING = ("ask", "doctor", "chat", "calibrate")
#: The commands that call the chat model: those that ask, and ``rag questions``, which writes.
CHATTING = (*ASKING, "questions")
FILTERING = ("ask", "query", "chat")


@dataclass(frozen=True)
class Flag:
    """How one setting appears on the command line."""

    names: tuple[str, ...]
    commands: tuple[str, ...] = ALL_COMMANDS


#: ``Context`` fields offered on the command line; the others are set by environment only.
FLAGS: dict[str, Flag] = {
    "ollama_base_url": Flag(("--ollama-host",)),
    "chat_model": Flag(("-m", "--model"), CHATTING),
    "embedding_model": Flag(("-e", "--embedding-model")),
    "vision_model": Flag(("--vision-model",), ASKING),
    "collection_name": Flag(("-n", "--collection")),
    "chroma_persist_directory": Flag(("--persist-dir",)),
    "chroma_server_url": Flag(("-d", "--database-url")),
    "k": Flag(("-k", "-r", "--results"), SEARCHING),
    "score_threshold": Flag(("--threshold",), SEARCHING),
    "retrieval_mode": Flag(("--mode",), SEARCHING),
    "tags": Flag(("--tag",), FILTERING),
    "folders": Flag(("--folder",), FILTERING),
    "num_ctx": Flag(("--num-ctx",), CHATTING),
    "grade_concurrency": Flag(("--grade-concurrency",), ASKING),
    "show_thinking": Flag(("--think",), ("ask", "chat")),
    "request_timeout": Flag(("--timeout",)),
}
