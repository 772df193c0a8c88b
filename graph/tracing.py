"""LangSmith tracing: opt-in through LangSmith's own environment variables.

Nothing is traced or sent unless ``LANGSMITH_TRACING=true`` (with ``LANGSMITH_API_KEY``, and
optionally ``LANGSMITH_PROJECT`` / ``LANGSMITH_ENDPOINT``) is set; that is LangChain's own
switch, so there is no second one here. When it is on, runs carry a name, tags and the
settings that explain their behaviour.
"""

from __future__ import annotations

from typing import Any

from graph.context import Context
from graph.index.embedding import relevance_floor

RUN_NAME = "agentic_rag"


def run_config(context: Context, **extra: Any) -> dict[str, Any]:
    """Name, tags and metadata for one question's run (merge into the invoke config)."""
    return {
        "run_name": RUN_NAME,
        "tags": ["notes-rag"],
        "metadata": {
            "chat_model": context.chat_model,
            "embedding_model": context.embedding_model,
            "vision_model": context.effective_vision_model,
            "collection": context.collection_name,
            "k": context.k,
            "score_threshold": relevance_floor(context),
            **retrieval_settings(context),
            **extra,
        },
    }


def retrieval_settings(context: Context) -> dict[str, Any]:
    """The settings that change a ranking, as recorded with a run or a measured figure."""
    return {
        "retrieval_mode": context.retrieval_mode,
        "skip_question_words": context.skip_question_words,
        "fusion_ties": context.fusion_ties,
    }


def tag_current_run(*tags: str, **metadata: Any) -> None:
    """Add tags/metadata to the traced run of the calling node; a no-op when not tracing."""
    from langsmith import get_current_run_tree

    run = get_current_run_tree()
    if run is None:
        return
    run.add_tags(list(tags))
    if metadata:
        run.add_metadata(metadata)
