"""Integration lane: the real HTTP path (langchain-ollama, ollama client, Chroma server).

By default the models are served by the project's Ollama-API stand-in (a tiny real model
over llama.cpp) on a free loopback port. With ``RAG_TEST_OLLAMA_HOST`` set, the same tests
run against a real Ollama that has the default models pulled; the tests that need the
stand-in's fault hooks are then skipped with the reason shown.
"""

from __future__ import annotations

import functools
import http.cookiejar
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest
from pytest_socket import socket_allow_hosts

from app.serving.dev import served_config
from tests.cli_launcher import Launcher

ROOT = Path(__file__).resolve().parents[2]
REAL_OLLAMA = os.environ.get("RAG_TEST_OLLAMA_HOST", "")
VISION_MODEL = os.environ.get("RAG_TEST_VISION_MODEL", "llava-standin")


#: The tests' own HTTP requests go through this one client. ``httpx.post`` and friends build a
#: client per call, and each client reads every CA certificate into a TLS context of its own
#: (about 80 ms): a tenth of the suite's CPU went there. It keeps no cookies, so no request
#: is authorised by what an earlier one was sent.
HTTP = httpx.Client(
    timeout=60,
    cookies=http.cookiejar.CookieJar(http.cookiejar.DefaultCookiePolicy(allowed_domains=[])),
)


def pytest_collection_modifyitems(items):
    for item in items:
        if "integration_tests" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_http(url: str, proc: subprocess.Popen, seconds: float) -> bool:
    """Poll ``url`` until it answers; False if ``proc`` exits or time runs out."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1):
                return True
        except OSError:
            if proc.poll() is not None:
                return False
            time.sleep(0.2)
    return False


def start_langgraph_dev(
    work: Path, env: dict[str, str], host: str = "127.0.0.1"
) -> tuple[subprocess.Popen, str, Path]:
    """Start ``langgraph dev`` on the project's langgraph.json from ``work``; no waiting.

    The configuration is the project's own minus its ``.env`` (a developer's .env must not
    change what a test serves), served from ``work`` so ``.langgraph_api/`` lands there.
    Returns the process, its URL and its log file.
    """
    config = served_config(ROOT)
    work.mkdir(parents=True, exist_ok=True)
    (work / "langgraph.json").write_text(json.dumps(config))
    port = free_port()
    quiet = {
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "1",
        "LANGSMITH_TRACING": "false",
    }
    log = work / "langgraph-dev.log"
    with open(log, "w") as output:
        proc = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "langgraph"),
                "dev",
                "--no-browser",
                "--no-reload",
                "--host",
                host,
                "--port",
                str(port),
                "--config",
                str(work / "langgraph.json"),
            ],
            cwd=work,
            env={**os.environ, **quiet, **env},
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    return proc, f"http://127.0.0.1:{port}", log


@contextmanager
def langgraph_dev(work: Path, env: dict[str, str]) -> Iterator[str]:
    """Serve the project's langgraph.json with ``env`` from ``work``; yields the base URL."""
    proc, url, log = start_langgraph_dev(work, env)
    try:
        if not wait_for_http(f"{url}/ok", proc, seconds=90):
            pytest.fail("langgraph dev did not start: " + log.read_text())
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(autouse=True)
def _loopback_only():
    hosts = ["127.0.0.1", "localhost", "::1"]
    if REAL_OLLAMA:
        hosts.append(
            urlparse(REAL_OLLAMA if "://" in REAL_OLLAMA else "http://" + REAL_OLLAMA).hostname
        )
    socket_allow_hosts(hosts, allow_unix_socket=True)
    yield


def _start(
    args: list[str], ready_timeout: float = 180, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT, env=env
    )
    deadline = time.time() + ready_timeout
    line = ""
    while time.time() < deadline and not line:
        line = proc.stdout.readline().strip()
        if proc.poll() is not None:
            break
    if not line.startswith("http"):
        proc.kill()
        raise RuntimeError(f"stand-in did not start (exit {proc.poll()}): {line!r}")
    return proc, line


@pytest.fixture(scope="session")
def ollama_url():
    """URL of the model server: a real Ollama if configured, else the stand-in."""
    if REAL_OLLAMA:
        yield REAL_OLLAMA
        return
    proc, url = _start(
        [
            sys.executable,
            "-m",
            "tests.ollama_stand_in",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--vision-model",
            VISION_MODEL,
            "--tiny-model",  # plumbing only: the tests need no sensible answers
        ]
    )
    yield url
    proc.terminate()
    assert proc.wait(timeout=20) == 0, "the stand-in must stop cleanly on SIGTERM"


@pytest.fixture
def needs_standin():
    if REAL_OLLAMA:
        pytest.skip("needs the stand-in's fault hooks (RAG_TEST_OLLAMA_HOST points at Ollama)")


@pytest.fixture
def faults(ollama_url, needs_standin):
    """Set stand-in faults for one test; always reset afterwards."""

    def set_faults(**values):
        request = urllib.request.Request(
            f"{ollama_url}/_standin/faults",
            data=json.dumps(values).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)

    yield set_faults
    set_faults()


@pytest.fixture(scope="session")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("rag")


#: RAG_TEST_FRESH_PROCESSES=1 runs every `rag` command in a fresh interpreter (slower).
FRESH_PROCESSES = os.environ.get("RAG_TEST_FRESH_PROCESSES") == "1"


@functools.cache
def _launcher() -> Launcher:
    """This worker's launcher, started by its first `rag` command."""
    return Launcher()


def rag(
    *args: str,
    url: str,
    workdir: Path,
    timeout: float = 600,
    fresh: bool = False,
    merged: bool = False,
    **env: str,
):
    """Run the real `rag` CLI in a process of its own; returns CompletedProcess (text).

    The process is forked from this worker's launcher, which has the CLI's libraries
    imported already (tests/cli_launcher.py); ``fresh=True`` starts the console script in a
    new interpreter instead, for tests of what a whole process prints. ``merged=True`` (a
    fresh process too) writes stderr into the same pipe as stdout, so ``stdout`` holds both
    in the order the command wrote them (stderr is then ``None``).
    """
    environment = {
        **os.environ,
        "OLLAMA_HOST": url,
        "XDG_DATA_HOME": str(workdir / "data"),
        "XDG_CACHE_HOME": str(workdir / "cache"),
        "PYTHONPATH": str(ROOT),
        **env,
    }
    if fresh or merged or FRESH_PROCESSES:
        return subprocess.run(
            [str(Path(sys.executable).parent / "rag"), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merged else subprocess.PIPE,
            text=True,
            timeout=timeout,
            env=environment,
            cwd=ROOT,
        )
    return _launcher().run(list(args), env=environment, cwd=ROOT, timeout=timeout)


#: Each drawing of ``rag``'s status line: the seconds shown, and what it says.
STATUS = re.compile(r"\r\x1b\[2K\[ *([\d.]+) s\] ([^\r\n]*)")
#: A line up to where it was erased (carriage return, erase line): the status line's redraw.
ERASED = re.compile(r"[^\n]*\r\x1b\[2K")
#: What the status line says, in order, of a question answered from 2 chunks, both kept.
STAGES = [
    "choosing how to answer",
    "searching your notes",
    "found 2 sections",
    "grading 0 of 2 sections (0 relevant)",
    "grading 1 of 2 sections (1 relevant)",
    "grading 2 of 2 sections (2 relevant)",
    "writing the answer",
    "checking against your notes",
]


def said_in_order(raw: str) -> list[str]:
    """What the status line said in ``raw``, checked: every stage of ``STAGES`` in order,
    the seconds counting up past one."""
    drawn = STATUS.findall(raw)
    said = [text for _, text in drawn]
    assert [s for s in STAGES if s in said] == STAGES, said
    assert [said.index(s) for s in STAGES] == sorted(said.index(s) for s in STAGES), said
    seconds = [float(shown) for shown, _ in drawn]
    assert seconds == sorted(seconds) and seconds[-1] > 1, seconds
    return said


def rag_on_terminal(
    *args: str, url: str, workdir: Path, stdout_piped: bool = False, stdin: str = "", **env: str
) -> tuple[str, str, int]:
    """`rag ARGS` in a fresh process with stderr, and stdout unless ``stdout_piped``, on a
    pseudo-terminal (200 columns); ``stdin`` is piped in. Returns what the terminal got
    (raw: codes and carriage returns kept), the piped stdout, and the exit status."""
    import fcntl
    import select
    import struct
    import termios

    primary, secondary = os.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "rag"), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE if stdout_piped else secondary,
        stderr=secondary,
        env={
            **os.environ,
            "OLLAMA_HOST": url,
            "XDG_DATA_HOME": str(workdir / "data"),
            "XDG_CACHE_HOME": str(workdir / "cache"),
            "PYTHONPATH": str(ROOT),
            "TERM": "xterm",
            **env,
        },
        cwd=ROOT,
    )
    os.close(secondary)
    assert proc.stdin is not None
    proc.stdin.write(stdin.encode())
    proc.stdin.close()
    raw = b""
    poller = select.poll()
    poller.register(primary, select.POLLIN)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if not poller.poll(1000):
            continue
        try:
            data = os.read(primary, 65536)
        except OSError:  # EIO: the command has exited and closed the terminal
            break
        if not data:
            break
        raw += data
    os.close(primary)
    piped = proc.stdout.read().decode() if proc.stdout else ""
    return raw.decode(errors="replace"), piped, proc.wait(timeout=60)


@pytest.fixture(scope="session")
def loaded_notes(ollama_url, workdir):
    notes = workdir / "notes"
    shutil.copytree(ROOT / "tests" / "sample_notes", notes)
    result = rag("load", "-f", str(notes), "-n", "notes", url=ollama_url, workdir=workdir)
    assert result.returncode == 0, result.stderr
    return result


@pytest.fixture(scope="session")
def notes_server(ollama_url, loaded_notes, workdir):
    """``langgraph dev`` over the loaded sample notes, with no token: one per worker, shared
    by the modules that talk to a plain server (Studio's API, MCP, the OpenAI API)."""
    env = {
        "OLLAMA_HOST": ollama_url,
        "XDG_DATA_HOME": str(workdir / "data"),  # where `rag load` put the notes
        "RAG_COLLECTION": "notes",
        "RAG_SCORE_THRESHOLD": "0",
        "RAG_K": "2",
    }
    with langgraph_dev(workdir / "served", env) as url:
        yield url


@pytest.fixture(scope="session")
def chroma_server(workdir):
    """A real Chroma server (the one shipped with chromadb) on a free loopback port."""
    port = free_port()
    chroma = shutil.which("chroma", path=str(Path(sys.executable).parent)) or "chroma"
    proc = subprocess.Popen(
        [
            chroma,
            "run",
            "--path",
            str(workdir / "chroma-server"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    if not wait_for_http(f"{url}/api/v2/heartbeat", proc, seconds=30):
        proc.kill()
        raise RuntimeError("chroma server did not start")
    yield url
    proc.terminate()
    proc.wait(timeout=20)
