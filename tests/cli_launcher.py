"""Runs `rag` commands in forks of one process that has already imported the CLI's libraries.

A `rag` process spends 3-4 s of its life importing LangGraph, Chroma, langchain-ollama and
unstructured before it reads its arguments; the integration tests run about fifty of them.
Here those imports happen once per test worker. Each command still runs in a process of its
own, with its own arguments, environment, working directory and standard streams, through
``app.cli.main.main`` exactly as the console script calls it, and its exit status comes back.

What a fork does not repeat is the interpreter's start-up and the imports' own reading of
the environment: the tests that check a whole process (one line on stderr, no traceback) run
the console script in a fresh interpreter as well (``rag(..., fresh=True)`` in the
integration conftest).

Protocol, one connection per command over a Unix socket: the client sends one JSON line
(``argv``, ``env``, ``cwd``) with its stdin, stdout and stderr as passed file descriptors;
a monitor forked for the command answers ``pid N`` when the command's process starts and
``exit N`` when it ends (N as ``subprocess`` reports it: negative for a signal).
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _preload() -> None:
    """Import what the `rag` commands import (the CLI imports each command's needs lazily)."""
    import langchain_ollama  # noqa: F401

    import app.cli.main  # noqa: F401  (loading, through graph.index.ingest)
    import app.evaluation.retrieval  # noqa: F401
    import graph.builder  # noqa: F401  (LangGraph, the nodes, Chroma through retrieval)
    import graph.doctor  # noqa: F401
    from graph.index.chunking import partition_note

    partition_note("# Title\n\nunstructured is imported on the first note.\n")


def _start_command(connection: socket.socket, request: dict, fds: list[int]) -> None:
    """In a forked monitor: fork the command's process, report its pid and exit status."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the monitor waits for its child itself
        pid = os.fork()
        if pid == 0:
            connection.close()
            _become_command(request, fds)
        for fd in fds:
            os.close(fd)
        connection.sendall(f"pid {pid}\n".encode())
        _, status = os.waitpid(pid, 0)
        connection.sendall(f"exit {os.waitstatus_to_exitcode(status)}\n".encode())
    except OSError:  # the client is gone (it timed out and killed the command)
        pass
    finally:
        os._exit(0)


def _become_command(request: dict, fds: list[int]) -> None:
    """Take the command's streams, environment, directory and arguments; run `rag`; exit."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    import graph

    importlib.reload(graph)  # re-apply its telemetry switches to the new environment
    os.chdir(request["cwd"])
    sys.argv = ["rag", *request["argv"]]
    from app.cli.main import main

    # What the console script's `sys.exit(main())` and the interpreter's end do, minus
    # tearing down the modules (1.5 s here, no output): the exit status as Python derives it,
    # non-daemon threads joined, atexit handlers, streams flushed.
    try:
        code = main(request["argv"])
    except SystemExit as exc:  # argparse: --help, usage errors
        code = exc.code
    except BaseException:  # noqa: BLE001  (an uncaught exception: traceback, status 1)
        sys.excepthook(*sys.exc_info())
        code = 1
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            pass
    os._exit(code & 0xFF)


def serve(path: str) -> None:
    """Accept commands on the Unix socket ``path`` until stopped (SIGTERM)."""
    _preload()
    if threading.active_count() != 1:
        raise RuntimeError(f"threads running before fork: {threading.enumerate()}")
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the monitors are reaped at once
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    listener.settimeout(1.0)
    parent = os.getppid()
    print("ready", flush=True)
    while os.getppid() == parent:  # a test worker that died takes its launcher along
        try:
            connection, _ = listener.accept()
        except TimeoutError:
            continue
        connection.settimeout(None)
        with connection:
            try:
                request, fds = _receive(connection)
            except (OSError, ValueError) as exc:  # a client gone or garbled: serve the next
                print(f"cli_launcher: bad request: {exc}", file=sys.stderr)
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            if os.fork() == 0:
                listener.close()
                _start_command(connection, request, fds)
            for fd in fds:
                os.close(fd)


def _receive(connection: socket.socket) -> tuple[dict, list[int]]:
    message, fds, _, _ = socket.recv_fds(connection, 1 << 16, 3)
    while not message.endswith(b"\n"):  # the file descriptors came with the first part
        part = connection.recv(1 << 16)
        if not part:
            break
        message += part
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError(f"{len(fds)} file descriptors instead of 3")
    return json.loads(message), fds


class Launcher:
    """The client: one launcher process per test worker, started on first use."""

    def __init__(self) -> None:
        self._directory = tempfile.mkdtemp(prefix="rag-launcher-")
        self.path = os.path.join(self._directory, "socket")
        environment = {**os.environ, "PYTHONPATH": str(ROOT)}
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "tests.cli_launcher", self.path],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=environment,
        )
        if self._proc.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the rag launcher did not start (exit {self._proc.wait()})")
        atexit.register(self.stop)

    def stop(self) -> None:
        self._proc.terminate()
        self._proc.wait(timeout=20)
        shutil.rmtree(self._directory, ignore_errors=True)

    def run(
        self, argv: list[str], *, env: dict[str, str], cwd: Path, timeout: float
    ) -> subprocess.CompletedProcess:
        """Run ``rag ARGV`` as :func:`subprocess.run` would with ``capture_output=True``."""
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        try:
            with open(os.devnull, "rb") as stdin, socket.socket(socket.AF_UNIX) as connection:
                connection.connect(self.path)
                request = json.dumps({"argv": argv, "env": env, "cwd": str(cwd)}).encode()
                streams = [stdin.fileno(), out_write, err_write]
                socket.send_fds(connection, [request + b"\n"], streams)
                os.close(out_write)
                os.close(err_write)
                out_write = err_write = -1
                output = _read_until_closed(connection, out_read, err_read, timeout, argv)
        finally:
            for fd in (out_read, err_read, out_write, err_write):
                if fd != -1:
                    os.close(fd)
        return subprocess.CompletedProcess(
            ["rag", *argv], output["status"], output["stdout"], output["stderr"]
        )


def _read_until_closed(
    connection: socket.socket, out_read: int, err_read: int, timeout: float, argv: list[str]
) -> dict:
    """The command's stdout, stderr and exit status; kills it when ``timeout`` runs out."""
    names = {out_read: "stdout", err_read: "stderr", connection.fileno(): "control"}
    data = {name: b"" for name in names.values()}
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        for fd in names:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                pid = _field(data["control"], "pid")
                if pid is None and connection.fileno() in selector.get_map():
                    data["control"] += connection.recv(4096)  # the pid comes at once
                    pid = _field(data["control"], "pid")
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
                raise subprocess.TimeoutExpired(
                    ["rag", *argv], timeout, _text(data["stdout"]), _text(data["stderr"])
                )
            for key, _ in selector.select(left):
                chunk = os.read(key.fd, 65536)
                if chunk:
                    data[names[key.fd]] += chunk
                else:
                    selector.unregister(key.fd)
    status = _field(data["control"], "exit")
    if status is None:
        raise RuntimeError(f"the launcher lost `rag {' '.join(argv)}`: {data['stderr']!r}")
    return {  # as subprocess.run(text=True) decodes: universal newlines
        "stdout": _text(data["stdout"]),
        "stderr": _text(data["stderr"]),
        "status": status,
    }


def _text(raw: bytes) -> str:
    return raw.decode().replace("\r\n", "\n").replace("\r", "\n")


def _field(control: bytes, name: str) -> int | None:
    for line in control.decode().splitlines():
        key, _, value = line.partition(" ")
        if key == name:
            return int(value)
    return None


if __name__ == "__main__":
    serve(sys.argv[1])
