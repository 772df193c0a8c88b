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

The OpenAI-compatible API runs its questions itself, each in threads of its own:
:class:`RunLimit` bounds them (so many at once, so many more waiting, the rest refused).
The runtime's own queue is bounded where runs are created (``app.serving.auth``), by
:func:`admit_run`.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections import deque
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


#: Seconds a run let through counts before the runtime has stored it: one the runtime refuses
#: after the check (a busy thread with ``multitask_strategy`` ``reject``) never is.
ADMITTED_SECONDS = 10.0

_admitting = threading.Lock()
_admitted: dict[str, float] = {}


def admit_run(run_id: Any, limit: int) -> int | None:
    """Let a run about to be stored count against ``limit``: ``None``, or the runs held.

    Held: the runs the in-memory runtime keeps pending or running, and those let through here
    that it has not stored yet (between the check and storing a run it awaits, so the items of
    a batch and requests at the same moment each see the others). One pass over the runs of
    the server's lifetime so far. ``None`` too without that runtime.
    """
    try:
        from langgraph_runtime_inmem.database import GLOBAL_STORE
    except ImportError:
        return None
    now = time.monotonic()
    with _admitting:
        runs = GLOBAL_STORE.get("runs", [])
        stored = {str(run["run_id"]) for run in runs}
        for admitted, at in list(_admitted.items()):
            if admitted in stored or now - at > ADMITTED_SECONDS:
                del _admitted[admitted]
        held = sum(run["status"] in ("pending", "running") for run in runs) + len(_admitted)
        if held >= limit:
            return held
        _admitted[str(run_id)] = now
        return None


def forget_admitted_runs() -> None:
    """Count no run as let through (a new server; each test starts with none)."""
    with _admitting:
        _admitted.clear()


class Busy(Exception):
    """More questions than the server takes at once: the caller should try again later."""


class RunLimit:
    """At most ``running`` runs at once and ``waiting`` more queued for a place; no more.

    Each question the OpenAI-compatible API takes runs in threads of its own (the graph's,
    its model calls'), and on a laptop the model answers one at a time anyway: a question
    beyond the queue is refused at once (:class:`Busy`) rather than held on to. A run's
    place is given back when its threads are done (:meth:`Place.leave`, from any thread),
    so the threads, not only the requests, stay within the bound.
    """

    def __init__(self, running: int, waiting: int) -> None:
        """Allow ``running`` runs at once (at least one) and queue ``waiting`` more."""
        if running < 1 or waiting < 0:
            raise ValueError("a run limit needs at least one run and no negative queue")
        self.running, self.waiting = running, waiting
        self._lock = threading.Lock()
        self._admitted = 0
        self._started = 0
        self._queue: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()

    @property
    def started(self) -> int:
        """Runs under way now."""
        return self._started

    @property
    def admitted(self) -> int:
        """Runs under way or waiting for a place."""
        return self._admitted

    def admit(self) -> Place:
        """A place in the queue; :class:`Busy` when it is full."""
        with self._lock:
            if self._admitted >= self.running + self.waiting:
                raise Busy(
                    f"the server is answering at most {self.running} questions at once with "
                    f"{self.waiting} more waiting, and is full: try again shortly"
                )
            self._admitted += 1
        return Place(self)

    async def _start(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._started < self.running and not self._queue:
                self._started += 1
                return
            turn: asyncio.Future[None] = loop.create_future()
            self._queue.append((loop, turn))
        try:
            await turn
        except asyncio.CancelledError:
            with self._lock:
                try:
                    self._queue.remove((loop, turn))
                    handed = False
                except ValueError:  # the place was handed over meanwhile
                    handed = True
            if handed and turn.done() and not turn.cancelled():
                self._finish()  # given a place it will not use: pass it on
            raise

    def _finish(self) -> None:
        """A started run is done: its place goes to the first one waiting."""
        while True:
            with self._lock:
                if not self._queue:
                    self._started -= 1
                    return
                loop, turn = self._queue.popleft()
            try:
                loop.call_soon_threadsafe(self._hand_over, turn)
                return
            except RuntimeError:  # that one's loop is closed: nobody waits there
                continue

    def _hand_over(self, turn: asyncio.Future[None]) -> None:
        if turn.done():  # cancelled as it was handed over: the place goes on
            self._finish()
        else:
            turn.set_result(None)

    def _leave(self) -> None:
        with self._lock:
            self._admitted -= 1


class Place:
    """One question's place: wait with :meth:`start`, give it back with :meth:`leave`."""

    def __init__(self, limit: RunLimit) -> None:
        """A place admitted by ``limit``."""
        self._limit = limit
        self._lock = threading.Lock()
        self._started = False
        self._left = False

    async def start(self) -> None:
        """Wait until the run may start (first come, first served)."""
        await self._limit._start()
        with self._lock:
            self._started = True

    def leave(self) -> None:
        """Give the place back (the run is done, or never started); again does nothing."""
        with self._lock:
            if self._left:
                return
            self._left, started = True, self._started
        if started:
            self._limit._finish()
        self._limit._leave()
