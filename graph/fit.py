"""Prompts that fit the context window, so Ollama never cuts one.

Ollama silently drops the *front* of a prompt longer than ``num_ctx`` — the instructions.

Before a grade or answer call the prompt's tokens are estimated with a conservative
characters-per-token bound, refined by what Ollama reports (``prompt_eval_count``) for this
model's earlier prompts. If the prompt would not fit with room for the reply, the
lowest-ranked chunks are dropped (never the instructions or the question); if one chunk
alone is still too long, the tail of that chunk is cut. Each change is reported as a step.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

#: English prose runs about 4 characters per token in the tokenizers of the usual chat
#: models; 3 leaves a margin for code, numbers and other languages.
DEFAULT_CHARS_PER_TOKEN = 3.0
#: Observations from prompts shorter than this say more about the template than the text.
MIN_OBSERVED_CHARS = 400
#: Room kept for a reply whose length is not capped (the answer), at most a quarter of
#: the window.
ANSWER_RESERVE = 1024
#: The chat template's role markers and separators around the messages.
TEMPLATE_TOKENS = 32

Chunk = TypeVar("Chunk", bound=Mapping[str, Any])


class TokenRatios:
    """Characters per token seen per model: the smallest observed ratio, else the default.

    The smallest, because a prompt whose prefix Ollama found in its cache reports fewer
    evaluated tokens than it has, which would make the text look cheaper than it is.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, float] = {}

    def record(self, model: str, chars: int, tokens: int | None) -> None:
        """Remember that ``chars`` characters of prompt took ``tokens`` tokens."""
        if not tokens or chars < MIN_OBSERVED_CHARS:
            return
        ratio = chars / tokens
        with self._lock:
            self._seen[model] = min(ratio, self._seen.get(model, ratio))

    def chars_per_token(self, model: str) -> float:
        """The bound to estimate with for ``model``."""
        with self._lock:
            return self._seen.get(model, DEFAULT_CHARS_PER_TOKEN)

    def forget(self) -> None:
        """Drop every observation (tests)."""
        with self._lock:
            self._seen.clear()


ratios = TokenRatios()
"""The process-wide observations; :func:`graph.llm.reply` feeds it."""


def estimate_tokens(text: str, chars_per_token: float = DEFAULT_CHARS_PER_TOKEN) -> int:
    """A bound on the tokens of ``text`` (rounded up)."""
    return math.ceil(len(text) / chars_per_token)


def reply_reserve(num_predict: int | None, num_ctx: int) -> int:
    """Tokens kept for the reply: its cap, else :data:`ANSWER_RESERVE` (a quarter at most)."""
    return num_predict if num_predict else min(ANSWER_RESERVE, num_ctx // 4)


def prompt_budget(num_ctx: int, reply_tokens: int) -> int:
    """Tokens a prompt may take: the window less the reply's room and the template's."""
    return num_ctx - reply_tokens - TEMPLATE_TOKENS


def fit_chunks(
    chunks: Sequence[Chunk],
    render: Callable[[list[Chunk]], str],
    *,
    num_ctx: int,
    reply_tokens: int,
    chars_per_token: float = DEFAULT_CHARS_PER_TOKEN,
) -> tuple[list[Chunk], list[str]]:
    """The chunks (in rank order) whose prompt ``render(chunks)`` fits, and what was changed.

    Args:
        chunks: Best first; the last ones are dropped first.
        render: The whole prompt (instructions, chunks and question) for a list of chunks.
        num_ctx: The context window requested from Ollama.
        reply_tokens: Room kept for the reply.
        chars_per_token: The estimate's bound (see :class:`TokenRatios`).
    """
    budget = prompt_budget(num_ctx, reply_tokens)
    kept = list(chunks)

    def tokens(selection: list[Chunk]) -> int:
        return estimate_tokens(render(selection), chars_per_token)

    steps: list[str] = []
    dropped = 0
    while len(kept) > 1 and tokens(kept) > budget:
        kept.pop()
        dropped += 1
    if dropped:
        steps.append(
            f"dropped {dropped} lowest-ranked chunk(s) of {len(chunks)} to fit num_ctx "
            f"{num_ctx} (prompt about {tokens(kept)} tokens, {reply_tokens} kept for the reply)"
        )
    if kept and tokens(kept) > budget:
        first = kept[0]
        content = str(first.get("content", ""))
        excess = math.ceil((tokens(kept) - budget) * chars_per_token)
        keep = max(0, len(content) - excess)
        kept[0] = cast(Chunk, {**first, "content": content[:keep]})
        where = f"{first.get('source', '?')} > {first.get('heading') or '(top)'}"
        steps.append(
            f"truncated {where} to {keep} of {len(content)} characters to fit num_ctx {num_ctx}"
        )
        if tokens(kept) > budget:
            steps.append(
                f"the instructions and question alone exceed num_ctx {num_ctx}: "
                "raise num_ctx (--num-ctx)"
            )
    return kept, steps
