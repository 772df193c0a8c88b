"""The grader's instructions read while the person reads the answer.

Ollama (one slot per model) and llama.cpp keep the prompt they read last and reuse the
longest prefix the next prompt shares with it. After an answer that prompt is the answer's
(or its check's), so the next question's first grade would read the grader's instructions
again before its section: 144 tokens of the 1.5B model's 210, about 1.5 s of a first grade's
2.9 s on 2 cores. Once an answer is written the server is asked to read them (``warm_grader``),
in a thread of its own, while the person reads; the next question's first grade then reads
only its section and the question. The instructions are read once a question either way: the
warm-up moves that reading out of the wait. A question turned away by the grader leaves its
last grade's prompt in the slot, which begins with the instructions already.

Not in a thread (the page, ``rag chat``, ``/v1``): its next question carries the earlier turns
and is first rewritten to stand on its own (``nodes/retrieve.py``), a call whose prompt would
replace the grader's instructions in the slot before the first grade. So it reads ahead for
questions asked one by one: ``graph.invoke`` from Python, MCP's tool, a stateless run.
"""

from __future__ import annotations

import logging
import threading

from graph.context import Context, keep_alive_seconds
from graph.models import ModelProvider, get_models

log = logging.getLogger(__name__)

_running: set[threading.Thread] = set()
_lock = threading.Lock()


def warm_grader(context: Context, system: str) -> None:
    """Have the server read ``system``, the grader's next system prompt, in the background.

    Not when ``warm_grader`` is off, nor when ``keep_alive`` is 0 (the model is unloaded
    after each request: warming would load it again), nor in a thread.
    A failure is logged, never raised: the next grade reads the instructions itself then. The
    request is not one of the run's model calls (``graph/stopping.py`` does not abort it): it
    writes one token.
    """
    if not context.warm_grader or keep_alive_seconds(context.keep_alive) == 0:
        return
    if _in_a_thread():
        return
    provider = get_models()  # the run's provider: read here, where the run's config is
    thread = threading.Thread(
        target=_warm, args=(provider, context, system), name="warm-grader", daemon=True
    )
    with _lock:
        _running.add(thread)
    try:
        thread.start()
    except RuntimeError as exc:  # no thread to be had: the next grade reads them itself
        with _lock:
            _running.discard(thread)
        log.debug("no thread to warm the grader's instructions: %s", exc)


def _in_a_thread() -> bool:
    """Whether the run belongs to a thread (its next question would carry this one)."""
    from langgraph.config import get_config

    try:
        return bool(get_config().get("configurable", {}).get("thread_id"))
    except RuntimeError:  # outside a run
        return False


def _warm(provider: ModelProvider, context: Context, system: str) -> None:
    try:
        provider.warm(context, "grade", system)
    except Exception as exc:  # noqa: BLE001 - a warm-up only saves time; the grade reads anyway
        log.debug("warming the grader's instructions failed: %s", exc)
    finally:
        with _lock:
            _running.discard(threading.current_thread())


def settle(timeout: float | None = None) -> None:
    """Wait until every warm-up started so far has finished (benchmarks, tests)."""
    with _lock:
        running = list(_running)
    for thread in running:
        thread.join(timeout)
