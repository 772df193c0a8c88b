"""What the next question's first model call reads first, read while the person reads.

Ollama (one slot per model) and llama.cpp keep the prompt they read last and reuse the
longest prefix the next prompt shares with it. After an answer that prompt is the answer's
(or its check's). So once an answer is written the server is asked, in a thread of its own,
to read what the next question's first call begins with (``warm_next_question``):

- asked one by one (``graph.invoke``, MCP's tool, a stateless run), that call is the first
  grade, which begins with the grader's instructions: 144 tokens of the 1.5B model's 210,
  about 1.5 s of a first grade's 2.9 s on 2 cores;
- in a thread (the page, ``rag chat``, ``/v1``), it is the rewrite of the follow-up into a
  question that stands alone (``nodes/retrieve.py``), which begins with the conversation so
  far, this answer included: all of it but the follow-up is known now.

Each is read once a question either way: the warm-up moves that reading out of the wait. A
question without an answer (``nodes/no_answer.py``) reads ahead in a thread only: outside one,
its last grade's prompt, which the slot holds, begins with the grader's instructions already.
"""

from __future__ import annotations

import logging
import threading

from graph.context import Context, keep_alive_seconds
from graph.models import ModelProvider, Purpose, get_models, warm_messages
from graph.prompts import condense_prompt

log = logging.getLogger(__name__)

_running: set[threading.Thread] = set()
_lock = threading.Lock()


def warm_next_question(context: Context, grader: str | None, turns: list[tuple[str, str]]) -> None:
    """Have the server read what the next question's first call begins with, in the background.

    ``grader``: the grader's system prompt (``None``: the slot begins with it already);
    ``turns``: the conversation, this answer included.
    Not when ``read_ahead`` is off, nor when ``keep_alive`` is 0 (the model is unloaded after
    each request: warming would load it again). A failure is logged, never raised: the next
    call reads it all itself then. The request is not one of the run's model calls
    (``graph/stopping.py`` does not abort it): it writes one token.
    """
    if not context.read_ahead or keep_alive_seconds(context.keep_alive) == 0:
        return
    if _in_a_thread():  # the rewrite, up to the follow-up it will be asked about
        purpose: Purpose = "rewrite"
        messages = [{"role": "user", "content": condense_prompt(turns, "")}]
    elif grader is not None:
        purpose, messages = "grade", warm_messages(grader)
    else:
        return
    provider = get_models()  # the run's provider: read here, where the run's config is
    thread = threading.Thread(
        target=_warm, args=(provider, context, purpose, messages), name="warm-up", daemon=True
    )
    with _lock:
        _running.add(thread)
    try:
        thread.start()
    except RuntimeError as exc:  # no thread to be had: the next call reads it all itself
        with _lock:
            _running.discard(thread)
        log.debug("no thread to read ahead for the next question: %s", exc)


def _in_a_thread() -> bool:
    """Whether the run belongs to a thread that keeps its conversation.

    A thread id and a checkpointer: its next question then carries this one's turns. A
    stateless run of the served API (and MCP's tool) has a thread id of its own and no
    checkpointer: it keeps nothing.
    """
    from langgraph.config import get_config
    from langgraph.constants import CONFIG_KEY_CHECKPOINTER

    try:
        configurable = get_config().get("configurable", {})
    except RuntimeError:  # outside a run
        return False
    kept = configurable.get(CONFIG_KEY_CHECKPOINTER) is not None
    return bool(configurable.get("thread_id")) and kept


def _warm(
    provider: ModelProvider, context: Context, purpose: Purpose, messages: list[dict[str, str]]
) -> None:
    try:
        provider.warm(context, purpose, messages)
    except Exception as exc:  # noqa: BLE001 - a warm-up only saves time; the call reads anyway
        log.debug("reading ahead for the next question failed: %s", exc)
    finally:
        with _lock:
            _running.discard(threading.current_thread())


def settle(timeout: float | None = None) -> None:
    """Wait until every warm-up started so far has finished (benchmarks, tests)."""
    with _lock:
        running = list(_running)
    for thread in running:
        thread.join(timeout)
