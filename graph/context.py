"""Run configuration, passed as LangGraph's ``context`` (Studio shows every description).

Each field has a default, a description and an environment variable that overrides the
default. A value passed explicitly always wins over the environment, even one equal to the
default: the environment is read only for the fields a caller leaves out.

This module imports nothing else of the project: every layer reads it.
"""

from __future__ import annotations

import os
import re
from dataclasses import Field, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

#: The answer check's default bar (``check_confidence``): on the tune half of
#: tests/answer_eval_set.json, Qwen2.5-Coder-1.5B-Instruct's "yes" had P(yes) 0.86 to 0.99 for
#: the 21 drafts with every fact and 0.82 and 0.65 for two wrong ones; 0.84 is the middle of
#: that gap. Replayed on other sets (bench/check_rules.py) it withdraws right answers there
#: too: the trade-off differs by set and model, so it is a setting.
CHECK_CONFIDENCE = 0.84
#: Which ranking orders the chunks that hybrid search's fusion scores alike (``fusion_ties``):
#: its index in the list handed to ``reciprocal_rank_fusion``.
FUSION_TIES = {"vector": 0, "bm25": 1}


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


def setting(
    default: Any,
    description: str,
    env: str,
    *,
    bounds: tuple[float, float] | None = None,
    kind: type | None = None,
    server_only: bool = False,
) -> Any:
    """A ``Context`` field described once: Studio, ``rag --help`` and checks all read this.

    Args:
        default: The value when neither the caller nor the environment sets one.
        description: What the setting means (Studio and ``--help`` show it).
        env: The environment variable that overrides the default.
        bounds: Inclusive (low, high) a value must lie in.
        kind: The value's type where the default does not tell (``None`` defaults).
        server_only: Endpoint or storage of the server: a run served over HTTP can never
            set it (the served graph's context has no such field).
    """
    kind = kind or type(default)
    metadata: dict[str, Any] = {
        "description": f"{description} (env: {env})",
        # Pydantic reads a dataclass field's metadata as ``Field`` arguments: this puts the
        # declared default in the JSON schema (Studio shows it) although the field's
        # default is a factory (it reads the environment).
        "json_schema_extra": {"default": default},
        "env": env,
        "kind": kind,
        "server_only": server_only,
    }
    if bounds is not None:
        metadata["bounds"] = bounds
    # The environment is read when the caller leaves the field out, and only then.
    return field(default_factory=lambda: from_env(env, kind, default), metadata=metadata)


def from_env(env: str, kind: type, default: Any) -> Any:
    """The value of setting ``env``: the environment variable if set and not empty."""
    raw = os.environ.get(env)
    if raw is None or raw == "":
        return list(default) if isinstance(default, list) else default
    return _parse(raw, kind, env)


def default_of(f: Field) -> Any:
    """A setting's declared default (what applies when the environment does not set it)."""
    default = f.metadata["json_schema_extra"]["default"]
    return list(default) if isinstance(default, list) else default


@dataclass(kw_only=True)
class Context:
    """Settings for one run of the agentic RAG graph."""

    #: Python callers and the command line are trusted: they may pass image paths. The
    #: served graph's context (``app.serving.context``) is not.
    trusted: ClassVar[bool] = True

    ollama_base_url: str = setting(
        "http://localhost:11434",
        "Base URL of the Ollama server.",
        "OLLAMA_HOST",
        server_only=True,
    )
    chat_model: str = setting(
        "llama3.1:8b",
        "Ollama model for classification, grading and answers.",
        "RAG_CHAT_MODEL",
    )
    embedding_model: str = setting(
        "",
        "Ollama embedding model; empty means the one the collection was loaded with "
        "(nomic-embed-text for a new collection). Another model than the "
        "collection's is an error.",
        "RAG_EMBEDDING_MODEL",
    )
    vision_model: str = setting(
        "",
        "Multimodal Ollama model for image questions; empty means the chat model.",
        "RAG_VISION_MODEL",
    )
    collection_name: str = setting(
        "notes",
        "Chroma collection holding the notes.",
        "RAG_COLLECTION",
    )
    chroma_persist_directory: str = setting(
        "",
        "Folder of the embedded Chroma index; empty means ~/.local/share/notes-rag/chroma.",
        "RAG_CHROMA_DIR",
        server_only=True,
    )
    chroma_server_url: str = setting(
        "",
        "URL of a Chroma server (e.g. http://localhost:8000); empty means embedded Chroma.",
        "RAG_CHROMA_URL",
        server_only=True,
    )
    k: int = setting(
        5,
        "Number of chunks to retrieve.",
        "RAG_K",
        bounds=(1, 50),
    )
    score_threshold: float | None = setting(
        None,
        "Minimum relevance (1 - cosine distance) for a chunk to reach the grader; "
        "empty means the embedding model's floor (nomic-embed-text 0.5, all-minilm 0.3, or 0.25 "
        "for a question in German)",
        "RAG_SCORE_THRESHOLD",
        bounds=(0.0, 1.0),
        kind=float,
    )
    retrieval_mode: str = setting(
        "hybrid",
        "'hybrid' (BM25 and vector rankings fused) or 'vector' (similarity only).",
        "RAG_RETRIEVAL_MODE",
    )
    skip_question_words: bool = setting(
        True,
        "Leave the words questions are phrased with (how, what, does, my...) out of the BM25 "
        "query, as stopwords are; off ranks them like any other word.",
        "RAG_SKIP_QUESTION_WORDS",
    )
    fusion_ties: str = setting(
        "bm25",
        "Which ranking orders the chunks that hybrid fusion scores alike when both rankings "
        "found them: 'bm25' (the chunk sharing more of the question's words first) or "
        "'vector'.",
        "RAG_FUSION_TIES",
    )
    tags: list[str] = setting(
        [],
        "Search only notes with any of these tags (frontmatter or inline #tags; "
        "'area' also matches 'area/sub').",
        "RAG_TAGS",
    )
    folders: list[str] = setting(
        [],
        "Search only notes under any of these folders (relative to the notes folder).",
        "RAG_FOLDERS",
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
        bounds=(512, 262144),
    )
    grade_concurrency: int = setting(
        5,
        "How many chunks are graded at once.",
        "RAG_GRADE_CONCURRENCY",
        bounds=(1, 16),
    )
    show_thinking: bool = setting(
        False,
        "Let a reasoning model reason before answering and show its reasoning apart from "
        "the answer (rag ask prints it on stderr); off: reasoning is switched off where the "
        "model allows.",
        "RAG_SHOW_THINKING",
    )
    check_answers: bool = setting(
        True,
        "Check each answer against the note sections it was drafted from and the question "
        "(every figure it gives must be written in them, and be of the kind asked for, and "
        "outside German notes every name; then, unless its figures or names settle it, one "
        "more model call) and, "
        "when they do not state it or the model is not sure they do, say that your notes "
        "don't say; off: answers are not checked.",
        "RAG_CHECK_ANSWERS",
    )
    read_ahead: bool = setting(
        True,
        "Once an answer is written, have Ollama read what the next question's first model "
        "call begins with (the grader's instructions; in a thread, the conversation the "
        "follow-up is rewritten from), so that call reads little more than what is new "
        "(Ollama keeps the prompt it read last); off: that call reads it all. Not when "
        "keep_alive is 0.",
        "RAG_READ_AHEAD",
        server_only=True,
    )
    check_confidence: float = setting(
        CHECK_CONFIDENCE,
        'The least probability of "yes" (against "no") at which the answer check takes '
        "an answer as stated, where Ollama reports token probabilities; higher withdraws "
        "more wrong answers and more right ones (measured per model and set in "
        "docs/quality.md; `rag calibrate` fits it to your notes and model), 0 takes the "
        "model's verdict as it is.",
        "RAG_CHECK_CONFIDENCE",
        bounds=(0.0, 1.0),
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
        bounds=(1.0, 3600.0),
    )

    def __post_init__(self) -> None:
        """Check every value (type, bounds) and normalise the Ollama URL."""
        check_settings(self)
        self.ollama_base_url = normalize_ollama_url(self.ollama_base_url)

    @property
    def effective_vision_model(self) -> str:
        """The model asked about images."""
        return self.vision_model or self.chat_model

    @property
    def effective_chroma_dir(self) -> str:
        """The embedded index folder actually used."""
        return self.chroma_persist_directory or default_chroma_dir()


def check_settings(settings: Any) -> None:
    """Refuse a value of the wrong type or out of bounds, with a one-line ``ValueError``."""
    for f in fields(settings):
        value = getattr(settings, f.name)
        if value is None:
            continue
        kind = f.metadata["kind"]
        if not _is_kind(value, kind):
            raise ValueError(f"{f.name} must be {_KIND_NAMES[kind]}, got {value!r}")
        low, high = f.metadata.get("bounds", (value, value))
        if not low <= value <= high:
            raise ValueError(f"{f.name} must be between {low:g} and {high:g}, got {value}")
    if "keep_alive" in {f.name for f in fields(settings)}:
        keep_alive_seconds(settings.keep_alive)  # refuse a value Ollama would not understand
    if settings.retrieval_mode not in ("hybrid", "vector"):
        raise ValueError(
            f"retrieval_mode must be 'hybrid' or 'vector', got {settings.retrieval_mode!r}"
        )
    if settings.fusion_ties not in FUSION_TIES:
        raise ValueError(f"fusion_ties must be 'bm25' or 'vector', got {settings.fusion_ties!r}")


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
