"""Every note parsed within a time budget, in worker processes kept between loads.

A note is untrusted input, and parsing it runs libraries whose cost some constructs make
quadratic (python-markdown's HTML block parser on unclosed ``<a `` tags: 10,000 of them,
30 KB, took 25 s; twenty paragraphs of 400 took 26 s). The guards in ``chunking`` and
``obsidian`` keep the known ones linear; this bounds all the others. Each note is parsed
(Obsidian syntax, then unstructured, then the splitter) in a worker process, and a note
that takes longer than the budget is given up: its worker is killed and replaced, and
the note comes back as ``Unparsed``, which a load skips with a warning, keeping whatever
the index held of it (nothing of the note is written before it is parsed).

The workers are new Python processes, not forked (the loading process may run threads:
Chroma's, a server's; a forked copy of a process with threads can deadlock). A worker imports
unstructured before it says it is ready, so its few seconds of imports never count
against a note's budget, and it stays up for the next load (``rag load --watch``).
Sending a note and its chunks between processes costs little next to parsing it.
"""

from __future__ import annotations

import atexit
import math
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

from graph.index.chunking import Chunk, Unparsed, chunk_note, error_line
from graph.index.obsidian import NoteMeta, Vault, prepare_note

#: Seconds one note's parsing may take by default. The generated notes of the loading
#: benchmark (2-12 KB) take about 10 ms each; 1 MB of '[' or of wikilinks about 2 s.
PARSE_BUDGET = 5.0
#: From this many notes on, notes are parsed by ``WORKERS`` processes at once; below it by
#: one. The second worker costs its own imports (about 3-5 s) and memory (about 200 MB).
PARALLEL_FROM = 1000
WORKERS = 2
#: Jobs sent to a worker at once: it starts the next one as soon as it replies, instead of
#: waiting for this process to read the reply and send another (on busy cores a wake-up each
#: way per note). The next job's time counts from the reply before it.
IN_FLIGHT = 2
#: A job is sent to a busy worker only when it is at most this long pickled, so that it fits
#: in the pipe (64 KB on Linux) and sending it returns at once. A longer one would block this
#: process until the worker reads it, after its current job, while the worker blocks sending
#: that job's chunks to this process: each waiting on the other (three notes of 400 KB
#: stalled that way).
QUEUED_BYTES = 16 * 1024
#: Seconds a new worker may take to import unstructured before it counts as broken.
START_TIMEOUT_S = 300.0

_READY = "ready"

Job = Callable[[Any, Any], Any]


def serve(read_fd: int, write_fd: int) -> None:
    """A worker's loop: import, say ready, then run each job sent until told to stop.

    Jobs come on ``read_fd`` and replies go on ``write_fd`` (not on stdin and stdout, which
    a library may print on).
    """
    incoming = Connection(read_fd, writable=False)
    outgoing = Connection(write_fd, readable=False)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the loading process's to handle
    warm_up()
    outgoing.send(_READY)
    shared = None
    while True:
        try:
            message = incoming.recv()
        except EOFError:
            return  # the loading process has gone
        if message is None:
            return
        kind, payload = message
        if kind == "shared":
            shared = payload
        else:
            function, job = payload
            outgoing.send(run_job(function, shared, job))


def warm_up() -> None:
    """Import unstructured and parse one note, so that no note's clock counts either."""
    chunk_note(
        "# Ready\n\nunstructured is imported before the first note's clock starts.\n", 1500, 0
    )


def run_job(function: Job, shared: Any, job: Any) -> Any:
    """``function(shared, job)``, or ``Unparsed`` for the error it raised."""
    try:
        return function(shared, job)
    except Exception as exc:  # a note is untrusted input: one that breaks a parser is skipped
        return Unparsed(error_line(exc))


class WorkersFailed(Exception):
    """No worker process could start (see ``ParserPool.run``)."""


@dataclass
class _Worker:
    process: subprocess.Popen[bytes]
    requests: Connection
    connection: Connection
    """Where its replies come."""
    started: float
    ready: bool = False
    call: int = -1
    """The ``run`` whose shared value this worker holds."""
    jobs: deque[int] = field(default_factory=deque)
    """The jobs sent to it, the first one running (see ``IN_FLIGHT``)."""
    deadline: float = 0.0
    """When its first job runs out of time."""

    def stop(self) -> int | None:
        """Kill the process; its exit code."""
        self.process.kill()
        code = self.process.wait()
        self.requests.close()
        self.connection.close()
        return code


class ParserPool:
    """Worker processes that run jobs, each within a time budget (see the module docs)."""

    def __init__(self) -> None:
        self._workers: list[_Worker] = []
        self._lock = threading.Lock()  # one run at a time: the workers are shared
        self._calls = 0

    def _start(self) -> _Worker:
        """A new worker: a Python process of its own, started with this one's import path.

        Not a ``multiprocessing`` process: a spawned one imports this process's main script
        again (``rag``'s, a benchmark's with Chroma: a second or two more per worker), and
        fails in a script without a ``__name__ == "__main__"`` guard.
        """
        job_read, job_write = os.pipe()
        reply_read, reply_write = os.pipe()
        paths = [path for path in sys.path if path]
        code = (
            f"import sys; sys.path[:0] = {paths!r}; "
            f"from graph.index.parsing import serve; serve({job_read}, {reply_write})"
        )
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", code],
                stdin=subprocess.DEVNULL,
                pass_fds=(job_read, reply_write),
            )
        except OSError as exc:
            os.close(job_write)
            os.close(reply_read)
            raise WorkersFailed(f"cannot start a worker: {exc}") from exc
        finally:  # the worker holds its own copies of its ends
            os.close(job_read)
            os.close(reply_write)
        return _Worker(
            process,
            Connection(job_write, readable=False),
            Connection(reply_read, writable=False),
            time.monotonic(),
        )

    def close(self) -> None:
        """Stop every worker (at exit too: a worker may be stuck in a note)."""
        for worker in self._workers:
            worker.stop()
        self._workers = []

    def run(
        self, function: Job, shared: Any, jobs: Sequence[Any], budget: float, workers: int
    ) -> list[Any]:
        """``function(shared, job)`` for each job, in order, by up to ``workers`` processes.

        A job that takes more than ``budget`` seconds gives ``Unparsed``, and so does one
        whose worker dies (its process is replaced); one that raises gives ``Unparsed`` with
        the error. ``function`` must be importable by name (it is sent to the worker).
        Raises ``WorkersFailed`` when a worker dies before it is ready, the results found
        so far discarded.
        """
        with self._lock:
            self._calls += 1
            call = self._calls
            self._workers = [w for w in self._workers if w.process.poll() is None]
            while len(self._workers) < workers:
                self._workers.append(self._start())
            try:
                return self._run(function, shared, jobs, budget, call)
            except BaseException:
                # Interrupted, or a worker broke: a busy worker's late reply must not be read
                # as the next run's, so those go.
                for worker in self._workers:
                    if worker.jobs:
                        worker.stop()
                self._workers = [w for w in self._workers if w.process.poll() is None]
                raise

    def _run(
        self, function: Job, shared: Any, jobs: Sequence[Any], budget: float, call: int
    ) -> list[Any]:
        results: list[Any] = [None] * len(jobs)
        todo, left = deque(range(len(jobs))), len(jobs)
        while left:
            for worker in self._workers:
                while worker.ready and len(worker.jobs) < IN_FLIGHT and todo:
                    if worker.call != call:
                        worker.requests.send(("shared", shared))
                        worker.call = call
                    message = pickle.dumps(("job", (function, jobs[todo[0]])))
                    if worker.jobs and len(message) > QUEUED_BYTES:
                        break  # sent when the worker is free (see QUEUED_BYTES)
                    if not worker.jobs:
                        worker.deadline = time.monotonic() + budget
                    worker.jobs.append(todo.popleft())
                    worker.requests.send_bytes(message)
            left -= self._collect(results, todo, budget)
        return results

    def _collect(self, results: list[Any], todo: deque[int], budget: float) -> int:
        """Wait for the first reply or deadline; the number of jobs that ended.

        A worker that dies or runs out of time is replaced; its first job ends as
        ``Unparsed``, the others it was sent go back to the front of ``todo``.
        """
        now = time.monotonic()
        ends = [
            w.deadline if w.jobs else math.inf if w.ready else w.started + START_TIMEOUT_S
            for w in self._workers
        ]
        first = min(ends)
        readable = wait(
            [w.connection for w in self._workers],
            None if first == math.inf else max(0.0, first - now),
        )
        ended = 0
        for index, worker in enumerate(self._workers):
            failure = None
            if worker.connection in readable:
                try:
                    message = worker.connection.recv()
                except (EOFError, OSError):
                    code = worker.stop()
                    if not worker.ready:
                        raise WorkersFailed(f"a worker exited with code {code} before it was ready")
                    failure = f"the parsing process ended (exit code {code})"
                else:
                    if isinstance(message, str) and message == _READY:
                        worker.ready = True
                    elif worker.jobs:
                        results[worker.jobs.popleft()], ended = message, ended + 1
                        worker.deadline = time.monotonic() + budget
            elif time.monotonic() >= ends[index]:
                worker.stop()
                if not worker.ready:
                    raise WorkersFailed(f"a worker was not ready after {START_TIMEOUT_S:g} s")
                failure = f"took longer than {budget:g} s to parse"
            if failure is not None:
                if worker.jobs:
                    results[worker.jobs.popleft()], ended = Unparsed(failure), ended + 1
                todo.extendleft(reversed(worker.jobs))
                self._workers[index] = self._start()
        return ended


_POOL = ParserPool()
atexit.register(_POOL.close)


def parse_in_workers(
    function: Job,
    shared: Any,
    jobs: Sequence[Any],
    *,
    budget: float = PARSE_BUDGET,
    workers: int = WORKERS,
    parallel_from: int = PARALLEL_FROM,
    notify: Callable[[str], None] = lambda _: None,
    pool: ParserPool | None = None,
) -> list[Any]:
    """``function(shared, job)`` for each job, each within ``budget`` seconds (``Unparsed`` if not).

    ``pool`` defaults to this process's workers, kept between calls. If no worker can start,
    the jobs run in this process, without the time limit, and ``notify`` is told so.
    """
    if not jobs:
        return []
    count = workers if len(jobs) >= parallel_from else 1
    try:
        return (pool or _POOL).run(function, shared, jobs, budget, max(1, count))
    except WorkersFailed as exc:
        notify(
            f"warning: worker processes failed ({error_line(exc)}); "
            f"parsing the {len(jobs)} notes in this process instead, without a time limit"
        )
    return [run_job(function, shared, job) for job in jobs]


def _chunk_job(sizes: tuple[int, int], text: str) -> list[Chunk]:
    return chunk_note(text, *sizes)


def chunk_notes(
    texts: Sequence[str],
    chunk_size: int,
    chunk_overlap: int,
    **options: Any,
) -> list[list[Chunk] | Unparsed]:
    """The chunks of each markdown text, in order (``parse_in_workers`` takes ``options``)."""
    return parse_in_workers(_chunk_job, (chunk_size, chunk_overlap), texts, **options)


@dataclass(frozen=True)
class ParsedNote:
    """A note's chunks and what its Obsidian syntax said."""

    chunks: list[Chunk]
    meta: NoteMeta


def _parse_job(shared: tuple[Vault, int, int], job: tuple[str, str]) -> ParsedNote:
    vault, size, overlap = shared
    text, source = job
    markdown, meta = prepare_note(text, source, vault)
    return ParsedNote(chunk_note(markdown, size, overlap), meta)


def parse_notes(
    notes: Sequence[tuple[str, str]],
    vault: Vault,
    chunk_size: int,
    chunk_overlap: int,
    **options: Any,
) -> list[ParsedNote | Unparsed]:
    """Each ``(text, source)`` note prepared and chunked, in order, within the time budget.

    ``options`` are ``parse_in_workers``'s. The vault is sent once to each worker per call.
    """
    shared = (vault, chunk_size, chunk_overlap)
    return parse_in_workers(_parse_job, shared, notes, **options)
