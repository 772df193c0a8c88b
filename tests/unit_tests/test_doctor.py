"""``rag doctor`` on healthy and broken set-ups: one line per check, a fix, the exit code."""

from __future__ import annotations

import json
import threading
from dataclasses import replace

import pytest

from app.cli.main import main
from graph.doctor import TIMING_ROUNDS, NotFound, Unreachable, diagnose, exit_code, report
from graph.index.ingest import load_notes
from tests.fakes import FakeModels

MODELS = {
    "llama3.1:8b": ["completion", "tools"],
    "fake-embed": ["embedding"],
    "llava": ["completion", "vision"],
    "qwen3": ["completion", "thinking"],
}


class FakeOllama:
    """Answers the doctor's requests like an Ollama server with ``models`` pulled.

    Time is virtual: pass ``clock`` to ``diagnose``. A chat takes one second from the last
    reading of the clock; a ``serial`` server (OLLAMA_NUM_PARALLEL=1) starts a chat only
    when the one before has ended. With ``meet_after=N``, every chat after the first N waits
    until another is in flight, so a pair sent one after the other breaks the barrier.
    """

    def __init__(
        self,
        models=None,
        *,
        version="0.33.0",
        down=False,
        serial=False,
        meet_after=None,
        pair_seconds=(),
    ):
        self.models = MODELS if models is None else models
        # How long each chat of the timed pairs takes, pair after pair (default one second):
        # a busy machine slowing the server down.
        self.pair_seconds = list(pair_seconds)
        self.version, self.down, self.serial = version, down, serial
        self.lock = threading.Lock()
        self.chats = 0
        self.read_at = 0.0  # the clock's last reading
        self.last_end = 0.0  # when the latest chat ends
        self.meet_after = meet_after
        self.pair = threading.Barrier(2, timeout=10)

    def clock(self):
        with self.lock:
            self.read_at = max(self.read_at, self.last_end)
            return self.read_at

    def get(self, path):
        if self.down:
            raise Unreachable("connection refused")
        assert path == "/api/version"
        return {"version": self.version}

    def post(self, path, body):
        if self.down:
            raise Unreachable("connection refused")
        if path == "/api/show":
            if body["model"] not in self.models:
                raise NotFound('{"error": "model not found"}')
            return {"capabilities": self.models[body["model"]]}
        assert path == "/api/chat" and body["model"] in self.models
        with self.lock:
            self.chats += 1
            start = max(self.read_at, self.last_end) if self.serial else self.read_at
            meets = self.meet_after is not None and self.chats > self.meet_after
            seconds = 1.0
            if meets and self.pair_seconds:
                # both chats of a pair take the pair's time; the second one moves on
                seconds = self.pair_seconds[0]
                if (self.chats - self.meet_after) % 2 == 0:
                    self.pair_seconds.pop(0)
            self.last_end = max(self.last_end, start + seconds)
        if meets:
            self.pair.wait()
        return {"message": {"role": "assistant", "content": "yes"}, "done": True}


@pytest.fixture
def healthy(ctx, sample_notes):
    load_notes(ctx, sample_notes, FakeModels().embedder)
    return ctx


def by_name(checks):
    return {c.name: c for c in checks}


def test_healthy_set_up_passes(healthy):
    ollama = FakeOllama()
    checks = diagnose(replace(healthy, vision_model="llava"), ollama, clock=ollama.clock)
    assert exit_code(checks) == 0, report(checks)
    found = by_name(checks)
    assert found["ollama"].status == "ok"
    assert found["ollama"].detail.startswith("Ollama 0.33.0 at http://localhost:11434")
    assert found["chat model"].status == "ok" and "completion" in found["chat model"].detail
    assert found["vision model"].status == "ok"
    assert found["context window"].status == "ok"
    assert found["collection notes"].detail.startswith("5 notes")
    assert found["parallel grading"].status == "ok"
    assert all(line.startswith("[  ok]") for line in report(checks).splitlines())


def test_missing_chat_model_says_how_to_pull_it(healthy):
    models = {k: v for k, v in MODELS.items() if k != "llama3.1:8b"}
    checks = diagnose(healthy, FakeOllama(models))
    assert exit_code(checks) == 2
    line = by_name(checks)["chat model"].line()
    assert line == "[FAIL] chat model: llama3.1:8b is not pulled — fix: `ollama pull llama3.1:8b`"
    assert "parallel grading" not in by_name(checks)  # nothing to time with


def test_vision_model_without_vision_fails(healthy):
    checks = diagnose(replace(healthy, vision_model="qwen3"), FakeOllama())
    assert exit_code(checks) == 2
    assert "cannot do 'vision'" in by_name(checks)["vision model"].detail
    assert "RAG_VISION_MODEL" in by_name(checks)["vision model"].fix


def test_no_vision_model_at_all_is_a_warning(healthy):
    checks = diagnose(healthy, FakeOllama())
    assert by_name(checks)["vision model"].status == "warn"
    assert exit_code(checks) == 0


def test_reasoning_model_is_reported(healthy):
    checks = diagnose(replace(healthy, chat_model="qwen3"), FakeOllama())
    assert "reasoning switched off" in by_name(checks)["chat model"].detail


def test_unreachable_ollama_exits_3(healthy):
    checks = diagnose(healthy, FakeOllama(down=True))
    assert exit_code(checks) == 3
    assert by_name(checks)["ollama"].fix.startswith("start it with `ollama serve`")
    assert "chat model" not in by_name(checks)


def test_unwritable_index_folder_exits_2(ctx, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    checks = diagnose(replace(ctx, chroma_persist_directory=str(blocker / "chroma")), FakeOllama())
    assert exit_code(checks) == 2
    assert "is not writable" in by_name(checks)["chroma"].detail


def test_collection_of_another_embedding_model_exits_2(healthy):
    checks = diagnose(replace(healthy, embedding_model="llama3.1:8b"), FakeOllama())
    assert exit_code(checks) == 2
    mismatch = by_name(checks)["collection notes"]
    assert "loaded with fake-embed" in mismatch.detail
    assert "RAG_EMBEDDING_MODEL=fake-embed" in mismatch.fix


def test_small_num_ctx_for_k_exits_2(healthy):
    checks = diagnose(replace(healthy, num_ctx=2048, k=10), FakeOllama())
    assert exit_code(checks) == 2
    assert "raise RAG_NUM_CTX" in by_name(checks)["context window"].fix


def test_serial_ollama_is_a_warning_with_the_setting_to_change(healthy):
    ollama = FakeOllama(serial=True)
    checks = diagnose(healthy, ollama, clock=ollama.clock)
    found = by_name(checks)["parallel grading"]
    assert found.status == "warn" and "OLLAMA_NUM_PARALLEL=5" in found.fix
    assert found.detail.startswith("two requests took 2.0x one: Ollama answers one at a time")
    assert exit_code(checks) == 0


def test_parallel_ollama_passes_and_the_timed_pair_is_sent_at_once(healthy):
    ollama = FakeOllama(meet_after=1 + TIMING_ROUNDS)  # the warm-up and the singles go alone
    checks = diagnose(healthy, ollama, clock=ollama.clock)
    found = by_name(checks)["parallel grading"]
    assert found.status == "ok", found.detail
    assert found.detail == "two requests took 1.0x one: served in parallel"
    assert ollama.chats == 1 + 3 * TIMING_ROUNDS and not ollama.pair.broken


def test_a_busy_moment_does_not_flip_the_parallel_verdict(healthy):
    # One pair slowed down as much as a serial server's (2x): the fastest pair counts.
    ollama = FakeOllama(meet_after=1 + TIMING_ROUNDS, pair_seconds=[2.0, 1.0, 2.0])
    found = by_name(diagnose(healthy, ollama, clock=ollama.clock))["parallel grading"]
    assert found.status == "ok" and found.detail.endswith("served in parallel"), found.detail


def test_a_timing_between_parallel_and_serial_is_called_inconclusive(healthy):
    ollama = FakeOllama(meet_after=1 + TIMING_ROUNDS, pair_seconds=[1.5] * TIMING_ROUNDS)
    found = by_name(diagnose(healthy, ollama, clock=ollama.clock))["parallel grading"]
    assert found.status == "ok" and found.detail.startswith(
        "inconclusive: two requests took 1.5x one"
    ), found.detail


def test_old_ollama_is_a_warning(healthy):
    checks = diagnose(healthy, FakeOllama(version="0.4.7"))
    assert by_name(checks)["ollama"].status == "warn"


def test_ollama_without_token_probabilities_is_a_warning_while_answers_are_checked(healthy):
    found = by_name(diagnose(healthy, FakeOllama(version="0.12.3")))["ollama"]
    assert found.status == "warn" and "predates token log-probabilities" in found.detail
    assert "0.12.11" in found.fix
    unchecked = replace(healthy, check_answers=False)
    for context, version in ((unchecked, "0.12.3"), (healthy, "0.12.11"), (healthy, "0.30.0")):
        found = by_name(diagnose(context, FakeOllama(version=version)))["ollama"]
        assert "log-probabilities" not in found.detail


@pytest.mark.parametrize(
    ("version", "status"),
    [("0.12.11", "warn"), ("0.29.9", "warn"), ("0.30.0", "ok"), ("0.33.0-rc2", "ok"), ("", "ok")],
)
def test_ollama_that_keeps_only_its_last_prompt_is_a_warning(healthy, version, status):
    # Before 0.30 each question reads the grader's and the answer's instructions again; since,
    # llama-server keeps earlier prompts in memory.
    found = by_name(diagnose(healthy, FakeOllama(version=version)))["ollama"]
    assert found.status == status
    assert ("0.30 or later" in found.fix) == (status == "warn")


def test_cli_json_and_exit_code_with_ollama_unreachable(tmp_path, capsys):
    import socket

    from pytest_socket import enable_socket, socket_allow_hosts

    # A real refused connection, on loopback only: a port bound but never listening.
    enable_socket()
    socket_allow_hosts(["127.0.0.1"], allow_unix_socket=True)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        host = f"127.0.0.1:{closed.getsockname()[1]}"
        code = main(["doctor", "--json", "--ollama-host", host, "--persist-dir", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    assert code == 3 == out["exit_code"]
    assert out["checks"][0]["name"] == "ollama" and out["checks"][0]["status"] == "unreachable"


# --- the real client (graph.ollama) behind the doctor: each failure reported as what it is ---


def ollama_answering(handler):
    import httpx

    from graph.ollama import OllamaClient

    return OllamaClient("http://localhost:11434", 5.0, transport=httpx.MockTransport(handler))


def fails(kind):
    import httpx

    def handler(request):
        if kind == "http 500":
            return httpx.Response(500, json={"error": "llama runner process has terminated"})
        if kind == "not json":
            return httpx.Response(200, text="<html>router login</html>")
        if kind == "timeout":
            raise httpx.ReadTimeout("timed out", request=request)
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    return handler


@pytest.mark.parametrize(
    ("kind", "status", "words"),
    [
        ("http 500", "failed", "llama runner process has terminated (HTTP 500)"),
        ("not json", "failed", "not JSON (<html>router login</html>)"),
        ("timeout", "failed", "did not answer in time"),
        ("refused", "unreachable", "no answer from http://localhost:11434 ([Errno 111]"),
    ],
)
def test_only_a_connection_that_cannot_be_made_is_unreachable(ctx, kind, status, words):
    checks = diagnose(ctx, ollama_answering(fails(kind)))
    found = by_name(checks)["ollama"]
    assert found.status == status and words in found.detail, found
    assert found.fix and exit_code(checks) == 3
    assert "chat model" not in by_name(checks)


def test_a_failing_model_lookup_is_a_failed_check_not_a_crash(healthy):
    import httpx

    def handler(request):
        if request.url.path == "/api/version":
            return httpx.Response(200, json={"version": "0.12.3"})
        return fails("http 500")(request)

    checks = diagnose(healthy, ollama_answering(handler))
    chat = by_name(checks)["chat model"]
    assert chat.status == "failed" and "llama runner process has terminated" in chat.detail
    assert exit_code(checks) == 3 and "parallel grading" not in by_name(checks)
