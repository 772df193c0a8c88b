"""Run configuration, passed as LangGraph's ``context`` (Studio shows every description).

Each field has a default, a description and an environment variable that overrides the
default (an explicitly passed value always wins over the environment).
"""

from __future__ import annotations

import os
import re
from dataclasses import MISSING, Field, dataclass, field, fields
from pathlib import Path
from typing import Any

from graph.index.embedding import DEFAULT_EMBEDDING_MODEL, default_threshold


def default_chroma_dir() -> str:
    """Where the embedded Chroma index lives unless told otherwise (XDG data dir)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return str(Path(base) / "notes-rag" / "chroma")


def normalize_ollama_url(value: str) -> str:
    """Accept Ollama's own ``OLLAMA_HOST`` forms (``host``, ``host:port``, full URL)."""
    value = value.strip().rstrip("/")
    if not value:
        return "http://localhost:11434"
    if "://" not in value:
        value = "http://" + value
    scheme, rest = value.split("://", 1)
    if ":" not in rest.split("/", 1)[0]:
        rest = rest.replace("/", ":11434/", 1) if "/" in rest else rest + ":11434"
    if rest.startswith("0.0.0.0"):  # a bind address, not something a client can reach
        rest = "127.0.0.1" + rest[len("0.0.0.0") :]
    return f"{scheme}://{rest}"


_DURATION = re.compile(r"(-?\d+(?:\.\d+)?)(h|m|s)?")
_UNIT_SECONDS = {"h": 3600, "m": 60, "s": 1, None: 1}


def keep_alive_seconds(text: str) -> int | None:
    """``RAG_KEEP_ALIVE`` in seconds (``5m``, ``1h``, ``300``; negative: forever); empty: None."""
    text = text.strip().lower()
    if not text:
        return None
    match = _DURATION.fullmatch(text)
    if match is None:
        raise ValueError(f"keep_alive must be seconds or a duration like 5m or 1h, got {text!r}")
    return int(float(match.group(1)) * _UNIT_SECONDS[match.group(2)])


#: The ``rag`` subcommands, grouped by which settings they use.
ALL_COMMANDS = ("load", "ask", "query", "eval", "collections", "drop", "doctor")
SEARCHING = ("ask", "query", "eval", "doctor")
ASKING = ("ask", "doctor")
FILTERING = ("ask", "query")


def setting(
    default: Any,
    description: str,
    env: str,
    *,
    flags: tuple[str, ...] = (),
    commands: tuple[str, ...] = ALL_COMMANDS,
    bounds: tuple[float, float] | None = None,
    kind: type | None = None,
    server_only: bool = False,
) -> Any:
    """A ``Context`` field described once: Studio, ``rag --help`` and checks all read this.

    Args:
        default: The value when neither the caller nor the environment sets one.
        description: What the setting means (Studio and ``--help`` show it).
        env: The environment variable that overrides the default.
        flags: Command-line flags of the setting (none: not on the command line).
        commands: The ``rag`` subcommands that take the flags.
        bounds: Inclusive (low, high) a value must lie in.
        kind: The value's type where the default does not tell (``None`` defaults).
        server_only: Endpoint or storage of the server: a run served over HTTP may not
            change it (see ``graph.served``).
    """
    metadata: dict[str, Any] = {
        "description": f"{description} (env: {env})",
        "env": env,
        "flags": flags,
        "commands": commands,
        "kind": kind or type(default),
        "server_only": server_only,
    }
    if bounds is not None:
        metadata["bounds"] = bounds
    if isinstance(default, list):  # a dataclass default must not be shared and mutable
        return field(default_factory=lambda: list(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def default_of(f: Field) -> Any:
    """A setting's default value (list settings have a factory instead)."""
    if f.default_factory is not MISSING:
        return f.default_factory()
    return f.default


@dataclass(kw_only=True)
class Context:
    """Settings for one run of the agentic RAG graph."""

    ollama_base_url: str = setting(
        "http://localhost:11434",
        "Base URL of the Ollama server.",
        "OLLAMA_HOST",
        flags=("--ollama-host",),
        server_only=True,
    )
    chat_model: str = setting(
        "llama3.1:8b",
        "Ollama model for classification, grading and answers.",
        "RAG_CHAT_MODEL",
        flags=("-m", "--model"),
        commands=ASKING,
    )
    embedding_model: str = setting(
        "",
        f"Ollama embedding model; empty means the one the collection was loaded with "
        f"({DEFAULT_EMBEDDING_MODEL} for a new collection). Another model than the "
        "collection's is an error.",
        "RAG_EMBEDDING_MODEL",
        flags=("-e", "--embedding-model"),
    )
    vision_model: str = setting(
        "",
        "Multimodal Ollama model for image questions; empty means the chat model.",
        "RAG_VISION_MODEL",
        flags=("--vision-model",),
        commands=ASKING,
    )
    collection_name: str = setting(
        "notes",
        "Chroma collection holding the notes.",
        "RAG_COLLECTION",
        flags=("-n", "--collection"),
    )
    chroma_persist_directory: str = setting(
        "",
        "Folder of the embedded Chroma index; empty means ~/.local/share/notes-rag/chroma.",
        "RAG_CHROMA_DIR",
        flags=("--persist-dir",),
        server_only=True,
    )
    chroma_server_url: str = setting(
        "",
        "URL of a Chroma server (e.g. http://localhost:8000); empty means embedded Chroma.",
        "RAG_CHROMA_URL",
        flags=("-d", "--database-url"),
        server_only=True,
    )
    k: int = setting(
        5,
        "Number of chunks to retrieve.",
        "RAG_K",
        flags=("-k", "-r", "--results"),
        commands=SEARCHING,
        bounds=(1, 50),
    )
    score_threshold: float | None = setting(
        None,
        "Minimum relevance (1 - cosine distance) for a chunk to reach the grader; "
        "empty means the embedding model's floor (nomic-embed-text 0.5, all-minilm 0.3)",
        "RAG_SCORE_THRESHOLD",
        flags=("--threshold",),
        commands=SEARCHING,
        bounds=(0.0, 1.0),
        kind=float,
    )
    retrieval_mode: str = setting(
        "hybrid",
        "'hybrid' (BM25 and vector rankings fused) or 'vector' (similarity only).",
        "RAG_RETRIEVAL_MODE",
        flags=("--mode",),
        commands=SEARCHING,
    )
    tags: list[str] = setting(
        [],
        "Search only notes with any of these tags (frontmatter or inline #tags; "
        "'area' also matches 'area/sub').",
        "RAG_TAGS",
        flags=("--tag",),
        commands=FILTERING,
    )
    folders: list[str] = setting(
        [],
        "Search only notes under any of these folders (relative to the notes folder).",
        "RAG_FOLDERS",
        flags=("--folder",),
        commands=FILTERING,
    )
    calculator_trigger: str = setting(
        "calculate:",
        "Prefix that forces the calculator (case-insensitive).",
        "RAG_CALCULATOR_TRIGGER",
    )
    image_trigger: str = setting(
        "based on the image",
        "Prefix that forces the image branch (case-insensitive).",
        "RAG_IMAGE_TRIGGER",
    )
    enable_calculator: bool = setting(True, "Allow the calculator branch.", "RAG_ENABLE_CALCULATOR")
    enable_image: bool = setting(True, "Allow the image branch.", "RAG_ENABLE_IMAGE")
    num_ctx: int = setting(
        8192,
        "Context window (tokens) requested from Ollama.",
        "RAG_NUM_CTX",
        flags=("--num-ctx",),
        commands=ASKING,
        bounds=(512, 262144),
    )
    grade_concurrency: int = setting(
        5,
        "How many chunks are graded at once.",
        "RAG_GRADE_CONCURRENCY",
        flags=("--grade-concurrency",),
        commands=ASKING,
        bounds=(1, 16),
    )
    show_thinking: bool = setting(
        False,
        "Let a reasoning model reason before answering and show its reasoning apart from "
        "the answer (rag ask prints it on stderr); off: reasoning is switched off where the "
        "model allows.",
        "RAG_SHOW_THINKING",
        flags=("--think",),
        commands=("ask",),
    )
    keep_alive: str = setting(
        "",
        "How long Ollama keeps the models loaded after a request: seconds or 5m / 1h, "
        "negative for ever, 0 to unload at once; empty means the server's default.",
        "RAG_KEEP_ALIVE",
        server_only=True,
    )
    request_timeout: float = setting(
        120.0,
        "Seconds to wait for one Ollama response before giving up.",
        "RAG_REQUEST_TIMEOUT",
        flags=("--timeout",),
        bounds=(1.0, 3600.0),
    )

    def __post_init__(self) -> None:
        """Fill fields still at their default from the environment, then check every value."""
        for f in fields(self):
            env = f.metadata["env"]
            raw = os.environ.get(env)
            if raw is None or raw == "" or getattr(self, f.name) != default_of(f):
                continue
            setattr(self, f.name, _parse(raw, f.metadata["kind"], env))
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            kind = f.metadata["kind"]
            if not _is_kind(value, kind):
                raise ValueError(f"{f.name} must be {_KIND_NAMES[kind]}, got {value!r}")
            low, high = f.metadata.get("bounds", (value, value))
            if not low <= value <= high:
                raise ValueError(f"{f.name} must be between {low:g} and {high:g}, got {value}")
        self.ollama_base_url = normalize_ollama_url(self.ollama_base_url)
        keep_alive_seconds(self.keep_alive)  # refuse a value Ollama would not understand
        if self.retrieval_mode not in ("hybrid", "vector"):
            raise ValueError(
                f"retrieval_mode must be 'hybrid' or 'vector', got {self.retrieval_mode!r}"
            )

    @property
    def effective_threshold(self) -> float:
        """The relevance floor in force: explicit, else the embedding model's default."""
        if self.score_threshold is not None:
            return self.score_threshold
        return default_threshold(self.embedding_model or DEFAULT_EMBEDDING_MODEL)

    @property
    def effective_vision_model(self) -> str:
        """The model asked about images."""
        return self.vision_model or self.chat_model

    @property
    def effective_chroma_dir(self) -> str:
        """The embedded index folder actually used."""
        return self.chroma_persist_directory or default_chroma_dir()


_KIND_NAMES = {
    int: "a whole number",
    float: "a number",
    str: "a string",
    bool: "true or false",
    list: "a list of strings",
}


def _is_kind(value: Any, kind: type) -> bool:
    if kind is float:  # JSON has one number type: 60 is a fine timeout
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is list:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return isinstance(value, kind)


def _parse(raw: str, kind: type, name: str) -> Any:
    if kind is bool:
        lowered = raw.strip().lower()
        if lowered in {"1", "true", "yes", "on"}:
            return True
        if lowered in {"0", "false", "no", "off"}:
            return False
        raise ValueError(f"{name}={raw!r} is not a boolean (use true or false)")
    if kind is list:  # comma-separated
        return [item.strip() for item in raw.split(",") if item.strip()]
    try:
        return kind(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a valid {kind.__name__}") from None
