"""Stopping a run's model work: once stopped, no model call starts and those in flight end.

A question keeps the model busy for seconds to minutes (on a laptop, 20-40 s of CPU), so
whoever asked it must be able to take that back: a ``/v1`` client that leaves, the chat
page's Stop button, Ctrl-C in ``rag ask`` and ``rag chat``, a LangGraph run cancelled over
the API. Ending the run is not enough. LangGraph runs a synchronous node in a thread, which
goes on after its run is cancelled, and a model call already sent keeps Ollama generating
until the reply is complete, for nobody.

A :class:`Stop` is a callback handler in the run's config. Every chat-model call of the
graph runs inside :func:`model_call` (``graph.llm.reply``), which finds the run's stops in
its callbacks: a call refuses to start once its run is stopped (:class:`Stopped`), and a
call in flight is aborted, its HTTP connection to Ollama shut down (Ollama stops generating
when its client goes, during the prompt's evaluation too). A stop comes two ways:

- whoever started the run calls :meth:`Stop.stop` (the ``/v1`` API when its client leaves,
  the CLI on Ctrl-C: :func:`stop_on_ctrl_c`);
- LangGraph cancels the run (the served API's ``POST /threads/{id}/runs/{run_id}/cancel``,
  a streamed run's client gone with ``on_disconnect: cancel``): the run's task is cancelled
  and LangGraph reports each cancelled node to the run's callbacks (``on_chain_error`` with
  ``CancelledError``); the stop then ends that node's calls, and only those.

The connection is found by :func:`abortable_client_options`, the options of the httpx client
behind each chat model: each request gets a connection of its own (no keep-alive: a pooled
connection reused by a later request would be unknown to it), whose socket httpx's ``trace``
extension hands over as it connects.
"""

from __future__ import annotations

import asyncio
import contextvars
import signal
import socket
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager

from graph.errors import RagError

#: Cancelled runs a shared stop remembers (a node's thread may ask for a call after its cancel).
REMEMBERED_RUNS = 4096


class Stopped(RagError):
    """The run was stopped: no model call starts, the one in flight was aborted."""

    exit_code = 130


class ModelCall:
    """One chat-model call in flight: what aborts it."""

    def __init__(self) -> None:
        """A call not yet connected."""
        self.aborted = threading.Event()
        """Set once the call is aborted (a fake model waits on it instead of sleeping)."""
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []

    def attach(self, sock: Any) -> None:
        """The socket of the call's HTTP connection: shut down when the call is aborted."""
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            self._sockets.append(sock)
            aborted = self.aborted.is_set()
        if aborted:
            _shut(sock)

    def abort(self) -> None:
        """End the call: its connection is shut down, so the model server stops generating."""
        with self._lock:
            self.aborted.set()
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    # shutdown(), not close(): it wakes the thread blocked reading the reply, and the
    # server sees the connection end at once.
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # closed already


_CURRENT: contextvars.ContextVar[ModelCall | None] = contextvars.ContextVar(
    "rag_model_call", default=None
)


def current_call() -> ModelCall | None:
    """The model call the calling thread is making, if any."""
    return _CURRENT.get()


class Stop(BaseCallbackHandler):
    """Stops the model calls of the runs whose callbacks hold it.

    One per run (``stop()`` stops it), or one shared by every run of a served graph
    (LangGraph's cancel of a run stops that run's calls).
    """

    run_inline = True  # from an async run: at once, on the event loop (it never blocks)

    def __init__(self) -> None:
        """Nothing stopped yet."""
        self._lock = threading.Lock()
        self._everything = False
        self._runs: OrderedDict[UUID, None] = OrderedDict()
        self._calls: dict[ModelCall, UUID | None] = {}

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` was called (a cancelled run's stop does not count)."""
        return self._everything

    @property
    def in_flight(self) -> int:
        """Model calls under way now."""
        with self._lock:
            return len(self._calls)

    def stop(self, run_id: UUID | None = None) -> None:
        """Stop every call (``run_id`` None), or those of one LangGraph run (a node's)."""
        with self._lock:
            if run_id is None:
                self._everything = True
                calls = list(self._calls)
            else:
                self._runs[run_id] = None
                while len(self._runs) > REMEMBERED_RUNS:
                    self._runs.popitem(last=False)
                calls = [c for c, run in self._calls.items() if run == run_id]
        for call in calls:
            call.abort()

    def on_chain_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **_: Any
    ) -> None:
        """A node (or the run) cancelled by LangGraph: its model calls stop."""
        if isinstance(error, asyncio.CancelledError):
            self.stop(run_id)

    def _begin(self, call: ModelCall, run_id: UUID | None) -> None:
        with self._lock:
            if self._everything or (run_id is not None and run_id in self._runs):
                raise Stopped("the run was stopped")
            self._calls[call] = run_id

    def _end(self, call: ModelCall) -> None:
        with self._lock:
            self._calls.pop(call, None)


def _run_stops() -> tuple[list[Stop], UUID | None]:
    """The stops in the current run's callbacks, and the run (the node) that is calling."""
    from langgraph.config import get_config

    try:
        callbacks = get_config().get("callbacks")
    except RuntimeError:  # not inside a run
        return [], None
    if isinstance(callbacks, BaseCallbackManager):
        return [h for h in callbacks.handlers if isinstance(h, Stop)], callbacks.parent_run_id
    if isinstance(callbacks, list):
        return [h for h in callbacks if isinstance(h, Stop)], None
    return [], None


@contextmanager
def model_call() -> Iterator[ModelCall]:
    """Make one model call under the run's stops: refused once stopped, aborted when stopped.

    Raises :class:`Stopped` when the run is stopped before the call or while it is in flight
    (whatever the aborted call itself raised is its cause).
    """
    stops, run_id = _run_stops()
    call = ModelCall()
    begun: list[Stop] = []
    try:
        for stop in stops:
            stop._begin(call, run_id)
            begun.append(stop)
        token = _CURRENT.set(call)
        try:
            yield call
        except Exception as exc:
            if call.aborted.is_set():
                raise Stopped("the run was stopped") from exc
            raise
        finally:
            _CURRENT.reset(token)
        if call.aborted.is_set():  # it came back anyway: its reply is not used
            raise Stopped("the run was stopped")
    finally:
        for stop in begun:
            stop._end(call)


def _trace(event: str, info: dict[str, Any]) -> None:
    """The ``trace`` extension of httpx: a connection made for the current call is attached."""
    call = _CURRENT.get()
    if call is None or not event.endswith(".complete"):
        return
    if event.startswith(("connection.connect_", "connection.start_tls")):
        stream = info.get("return_value")
        if stream is not None:
            call.attach(stream.get_extra_info("socket"))


def _traced(request: Any) -> None:
    """The httpx request hook: trace the request's connection when it is a model call's."""
    if _CURRENT.get() is not None:
        request.extensions["trace"] = _trace


def abortable_client_options() -> dict[str, Any]:
    """Options of the synchronous httpx client behind a chat model, so its calls can be aborted.

    No keep-alive: each request connects anew (on loopback a fraction of a millisecond, small
    beside a model call), so the connection of a call in flight is known from its start,
    while Ollama is still reading the prompt and has sent nothing back.
    """
    import httpx

    return {
        "limits": httpx.Limits(max_keepalive_connections=0),
        "event_hooks": {"request": [_traced]},
    }


@contextmanager
def stop_on_ctrl_c(stop: Stop) -> Iterator[None]:
    """While in the block, Ctrl-C stops ``stop`` first, then interrupts as it always does.

    Without it, a ``KeyboardInterrupt`` in the main thread leaves the calls that other threads
    make (grading, several at once) running until each is answered.
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread handles signals
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:
        yield  # Ctrl-C does nothing here: nor does it stop
        return

    def handler(signum: int, frame: Any) -> None:
        stop.stop()
        if callable(previous):
            previous(signum, frame)
        else:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
