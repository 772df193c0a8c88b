"""Run configuration, passed as LangGraph's ``context`` (Studio shows every description).

Each field has a default, a description and an environment variable that overrides the
default (an explicitly passed value always wins over the environment).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from graph.embedding import default_threshold


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


def _describe(description: str, env: str) -> dict[str, str]:
    return {"description": f"{description} (env: {env})", "env": env}


@dataclass(kw_only=True)
class Context:
    """Settings for one run of the agentic RAG graph."""

    ollama_base_url: str = field(
        default="http://localhost:11434",
        metadata=_describe("Base URL of the Ollama server.", "OLLAMA_HOST"),
    )
    chat_model: str = field(
        default="llama3.1:8b",
        metadata=_describe(
            "Ollama model for classification, grading and answers.", "RAG_CHAT_MODEL"
        ),
    )
    embedding_model: str = field(
        default="nomic-embed-text",
        metadata=_describe(
            "Ollama embedding model; must match the one the collection was loaded with.",
            "RAG_EMBEDDING_MODEL",
        ),
    )
    vision_model: str = field(
        default="",
        metadata=_describe(
            "Multimodal Ollama model for image questions; empty means the chat model.",
            "RAG_VISION_MODEL",
        ),
    )
    collection_name: str = field(
        default="notes",
        metadata=_describe("Chroma collection holding the notes.", "RAG_COLLECTION"),
    )
    chroma_persist_directory: str = field(
        default="",
        metadata=_describe(
            "Folder of the embedded Chroma index; empty means ~/.local/share/notes-rag/chroma.",
            "RAG_CHROMA_DIR",
        ),
    )
    chroma_server_url: str = field(
        default="",
        metadata=_describe(
            "URL of a Chroma server (e.g. http://localhost:8000); empty means embedded Chroma.",
            "RAG_CHROMA_URL",
        ),
    )
    k: int = field(default=5, metadata=_describe("Number of chunks to retrieve.", "RAG_K"))
    score_threshold: float | None = field(
        default=None,
        metadata={
            **_describe(
                "Minimum relevance (1 - cosine distance) for a chunk to reach the grader; "
                "empty means the embedding model's floor (nomic-embed-text 0.5, all-minilm 0.3)",
                "RAG_SCORE_THRESHOLD",
            ),
            "kind": float,
        },
    )
    retrieval_mode: str = field(
        default="hybrid",
        metadata=_describe(
            "'hybrid' (BM25 and vector rankings fused) or 'vector' (similarity only).",
            "RAG_RETRIEVAL_MODE",
        ),
    )
    calculator_trigger: str = field(
        default="calculate:",
        metadata=_describe(
            "Prefix that forces the calculator (case-insensitive).", "RAG_CALCULATOR_TRIGGER"
        ),
    )
    image_trigger: str = field(
        default="based on the image",
        metadata=_describe(
            "Prefix that forces the image branch (case-insensitive).", "RAG_IMAGE_TRIGGER"
        ),
    )
    enable_calculator: bool = field(
        default=True,
        metadata=_describe("Allow the calculator branch.", "RAG_ENABLE_CALCULATOR"),
    )
    enable_image: bool = field(
        default=True, metadata=_describe("Allow the image branch.", "RAG_ENABLE_IMAGE")
    )
    num_ctx: int = field(
        default=8192,
        metadata=_describe("Context window (tokens) requested from Ollama.", "RAG_NUM_CTX"),
    )
    grade_concurrency: int = field(
        default=5,
        metadata=_describe("How many chunks are graded at once.", "RAG_GRADE_CONCURRENCY"),
    )
    request_timeout: float = field(
        default=120.0,
        metadata=_describe(
            "Seconds to wait for one Ollama response before giving up.", "RAG_REQUEST_TIMEOUT"
        ),
    )

    def __post_init__(self) -> None:
        """Fill every field still at its default from its environment variable, if set."""
        for f in fields(self):
            env = f.metadata.get("env")
            raw = os.environ.get(env) if env else None
            if raw is None or raw == "" or getattr(self, f.name) != f.default:
                continue
            kind = f.metadata.get("kind", type(f.default))
            setattr(self, f.name, _parse(raw, kind, env or f.name))
        self.ollama_base_url = normalize_ollama_url(self.ollama_base_url)
        if self.k < 1:
            raise ValueError(f"k must be at least 1, got {self.k}")
        if self.score_threshold is not None and not 0.0 <= self.score_threshold <= 1.0:
            raise ValueError(f"score_threshold must be in [0, 1], got {self.score_threshold}")
        if self.retrieval_mode not in ("hybrid", "vector"):
            raise ValueError(
                f"retrieval_mode must be 'hybrid' or 'vector', got {self.retrieval_mode!r}"
            )

    @property
    def effective_threshold(self) -> float:
        """The relevance floor in force: explicit, else the embedding model's default."""
        if self.score_threshold is not None:
            return self.score_threshold
        return default_threshold(self.embedding_model)

    @property
    def effective_vision_model(self) -> str:
        """The model asked about images."""
        return self.vision_model or self.chat_model

    @property
    def effective_chroma_dir(self) -> str:
        """The embedded index folder actually used."""
        return self.chroma_persist_directory or default_chroma_dir()


def _parse(raw: str, kind: type, name: str) -> Any:
    if kind is bool:
        lowered = raw.strip().lower()
        if lowered in {"1", "true", "yes", "on"}:
            return True
        if lowered in {"0", "false", "no", "off"}:
            return False
        raise ValueError(f"{name}={raw!r} is not a boolean (use true or false)")
    try:
        return kind(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a valid {kind.__name__}") from None
