"""``make dev`` itself: the user's exported settings win, exposure is refused up front, the
server's files are private.

Each test runs the real target (``make dev PORT=... ENV_FILE=...``) in the project folder, on
a free port and with an env file of its own; the server's state lands in the project's
``.langgraph_api/``, as it does for a user.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.integration_tests.conftest import HTTP, ROOT, free_port

TOKEN = "exported-token"
REPLY = "Practise on a whiteboard every day."
QUESTION = {"question": "How do I practise whiteboarding?"}
#: What the user's shell must not carry into these tests.
UNSET = ("RAG_API_TOKEN", "OLLAMA_HOST", "RAG_CHROMA_DIR", "RAG_CHROMA_URL")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def environment(workdir: Path, **exported: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    env.update(
        XDG_DATA_HOME=str(workdir / "data"),  # where `rag load` put the sample notes
        RAG_COLLECTION="notes",
        RAG_SCORE_THRESHOLD="0",
        RAG_K="2",
        **exported,
    )
    return env


def start(env_file: Path, env: dict[str, str], *make_args: str) -> tuple[subprocess.Popen, str]:
    """Start ``make dev``; its output goes to ``log`` beside the env file."""
    port = free_port()
    with open(env_file.parent / "log", "w") as log:
        proc = subprocess.Popen(
            ["make", "--no-print-directory", "dev", f"PORT={port}", f"ENV_FILE={env_file}"]
            + list(make_args),
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # make and the server it starts: one group to stop
        )
    return proc, f"http://127.0.0.1:{port}"


def stop(proc: subprocess.Popen, env_file: Path) -> str:
    """Stop ``make dev`` and the server it started; returns what they printed."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return (env_file.parent / "log").read_text()


@contextmanager
def make_dev(env_file: Path, env: dict[str, str]) -> Iterator[str]:
    """``make dev`` serving; yields its URL once it answers HTTP (any status)."""
    proc, url = start(env_file, env, "DEV_ARGS=--no-reload")
    try:
        deadline = time.time() + 180
        while time.time() < deadline and proc.poll() is None:
            try:
                HTTP.get(f"{url}/ok", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.3)
        else:
            pytest.fail("make dev did not serve: " + stop(proc, env_file))
        yield url
    finally:
        stop(proc, env_file)


def ask(url: str, token: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    body = {"assistant_id": "agentic_rag", "input": QUESTION}
    return HTTP.post(f"{url}/runs/wait", json=body, headers=headers, timeout=300)


def test_make_dev_serves_with_the_exported_token_and_ollama_host(
    tmp_path, workdir, loaded_notes, ollama_url, faults
):
    faults(reply=REPLY)
    env_file = tmp_path / ".env"  # absent: make dev copies .env.example (empty token line)
    state = ROOT / ".langgraph_api"
    state.mkdir(exist_ok=True)
    state.chmod(0o755)  # as an earlier `make dev` left it
    started = time.time()
    env = environment(workdir, RAG_API_TOKEN=TOKEN, OLLAMA_HOST=ollama_url)
    with make_dev(env_file, env) as url:
        assert ask(url, None).status_code == 401  # the exported token is required...
        assert ask(url, "wrong").status_code == 401
        answered = ask(url, TOKEN)  # ...and works; the answer comes from the exported Ollama
        assert answered.status_code == 200, answered.text
        assert answered.json()["answer"] == REPLY, answered.text
    assert "RAG_API_TOKEN=\n" in env_file.read_text()  # .env's empty line did not win
    assert mode(env_file) == 0o600  # it may hold the token
    assert mode(state) == 0o700  # threads: questions, answers, cited note text
    written = [p for p in state.rglob("*") if p.is_file() and p.stat().st_mtime >= started]
    assert written, "the server wrote nothing to .langgraph_api"
    assert {p.name: mode(p) & 0o077 for p in written} == {p.name: 0 for p in written}


def test_an_exported_value_wins_over_dotenv_and_a_dotenv_token_is_never_dropped(
    tmp_path, workdir, loaded_notes, ollama_url, faults
):
    faults(reply=REPLY)
    env_file = tmp_path / ".env"
    env_file.write_text("OLLAMA_HOST=http://127.0.0.1:9\nRAG_API_TOKEN=from-dotenv\n")
    # exported: the right Ollama, and an empty token (not a reason to serve without one)
    env = environment(workdir, OLLAMA_HOST=ollama_url, RAG_API_TOKEN="")
    with make_dev(env_file, env) as url:
        assert ask(url, None).status_code == 401
        answered = ask(url, "from-dotenv")
        assert answered.status_code == 200, answered.text
        assert answered.json()["answer"] == REPLY, answered.text
    told = (tmp_path / "log").read_text()
    assert f"OLLAMA_HOST from your environment, not {env_file}" in told  # said, not silent
    assert "from-dotenv" not in told  # which one, never the value


@pytest.mark.parametrize(
    "exposure", ["DEV_ARGS=--tunnel --no-reload", "HOST=0.0.0.0"], ids=["tunnel", "host"]
)
def test_serving_beyond_loopback_without_a_token_is_refused_before_anything_starts(
    tmp_path, workdir, exposure
):
    env_file = tmp_path / ".env"  # from .env.example: no token
    name, _, value = exposure.partition("=")
    proc, _ = start(env_file, environment(workdir), f"{name}={value}")
    try:
        code = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("make dev started serving: " + stop(proc, env_file))
    output = stop(proc, env_file)
    assert code != 0, output
    assert "refusing to serve" in output and "RAG_API_TOKEN" in output, output
    # nothing of langgraph ran: no tunnel download or start, no server banner
    for started in ("Cloudflare", "cloudflared", "Welcome to", "Serving agentic_rag"):
        assert started not in output, output
