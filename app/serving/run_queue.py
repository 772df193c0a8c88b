"""How soon the dev server starts a queued run (every question asked through the API is one).

``langgraph dev`` runs each question as a queued run. Its in-memory queue
(``langgraph_runtime_inmem``) looks for pending runs every 0.5 s, and it only takes runs
created before the look *began*: a run created during that half second waits for the next
look. Measured on this project's served calculator question: 1.0 s a run, nearly all of it
waiting, for the page, MCP, Studio and ``/runs/wait`` alike.

:func:`pick_up_runs_promptly` makes each look start after its wait and waits
:data:`POLL_SECONDS` instead, so a run starts within that time of being created (measured:
0.11-0.23 s a calculator question instead of 1.0 s). The runtime's own look is kept as it
is; only its wait changes. An idle server looks ten times a second, each look one pass over
its runs in memory.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator
from typing import Any

#: The longest a queued run waits before the server starts it (the runtime's own is 0.5 s,
#: plus up to 0.5 s more for a run created during a wait).
POLL_SECONDS = 0.1


def pick_up_runs_promptly() -> bool:
    """Make the in-memory queue start runs within :data:`POLL_SECONDS`.

    Returns False, changing nothing, when the in-memory runtime is not installed or its
    queue no longer has the shape this wraps (runs then start as the runtime decides).
    """
    try:
        from langgraph_runtime_inmem import ops
    except ImportError:
        return False
    runs = ops.Runs
    original = runs.__dict__.get("next")
    if not isinstance(original, staticmethod):
        return False
    look = original.__func__
    if getattr(look, "prompt_pickup", False):
        return True  # wrapped already
    if list(inspect.signature(look).parameters) != ["wait", "limit"]:
        return False

    async def next_run(wait: bool, limit: int = 1) -> AsyncIterator[tuple[Any, int]]:
        """The runtime's look for pending runs, made after the wait rather than before it."""
        if wait:
            await asyncio.sleep(POLL_SECONDS)
        async for run in look(wait=False, limit=limit):
            yield run

    next_run.prompt_pickup = True  # type: ignore[attr-defined]
    next_run.__wrapped__ = look  # type: ignore[attr-defined]
    runs.next = staticmethod(next_run)
    return True
