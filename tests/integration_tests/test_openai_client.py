"""The OpenAI-compatible API as its clients drive it (the official `openai` client,
LangChain's `ChatOpenAI`, the `llm` CLI), against `langgraph dev` serving the project's
langgraph.json and the Ollama stand-in (which reports Ollama's token counts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import openai
import pytest
from langchain_openai import ChatOpenAI

from tests.integration_tests.conftest import HTTP, langgraph_dev

TOKEN = "open-sesame-42"


def _env(ollama_url, workdir, **extra):
    return {
        "OLLAMA_HOST": ollama_url,
        "XDG_DATA_HOME": str(workdir / "data"),  # where `rag load` put the notes
        "RAG_SCORE_THRESHOLD": "0",
        "RAG_K": "2",
        **extra,
    }


@pytest.fixture(scope="module")
def server(notes_server):
    return notes_server


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=f"{server}/v1", api_key="no-token-configured", max_retries=0)


QUESTION = "How do I practise whiteboarding interviews?"


def chat_openai(url: str, key: str = "no-token-configured", **kwargs) -> ChatOpenAI:
    return ChatOpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0, **kwargs)


def llm_cli(url: str, tmp_path: Path, *args: str, key: str | None = None, name: str = "notes"):
    """The `llm` CLI with the API's model ``name`` configured as an OpenAI-compatible model,
    ``notes-rag``.

    With ``key``, the model needs a key named ``notes-rag`` and the call passes it with
    ``--key``; without, it sends none of its own (`llm` then makes one up).
    """
    model = {"model_id": "notes-rag", "model_name": name, "api_base": f"{url}/v1"}
    if key is not None:
        model["api_key_name"] = "notes-rag"
        args = (*args, "--key", key)
    (tmp_path / "extra-openai-models.yaml").write_text(json.dumps([model]))  # JSON is YAML
    return subprocess.run(
        [str(Path(sys.executable).parent / "llm"), "prompt", "-m", "notes-rag", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "LLM_USER_PATH": str(tmp_path)},
    )


def answered(client):
    """The question's answer from the `openai` client, with the tokens the model counted."""
    out = client.chat.completions.create(
        model="notes", messages=[{"role": "user", "content": QUESTION}]
    )
    assert out.usage.prompt_tokens > 0 and out.usage.completion_tokens > 0
    return out


def chats(ollama_url) -> list:
    with urllib.request.urlopen(f"{ollama_url}/_standin/chats", timeout=10) as response:
        return json.load(response)["chats"]


def test_the_models_are_the_collections(client):
    assert "notes" in [model.id for model in client.models.list()]


def test_a_calculation_is_exact_plain_and_streamed(client):
    messages = [{"role": "user", "content": "calculate: 456*4343 - 56/(443-11+4)"}]
    out = client.chat.completions.create(model="notes", messages=messages)
    assert out.choices[0].message.content == "456*4343 - 56/(443-11+4) ≈ 1980407.87155963"
    stream = client.chat.completions.create(model="notes", messages=messages, stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text == "456*4343 - 56/(443-11+4) ≈ 1980407.87155963"


def test_a_notes_answer_carries_its_sources(client, faults):
    faults(reply="yes")  # every grade relevant, every answer the same text
    question = [{"role": "user", "content": "How do I practise whiteboarding interviews?"}]
    out = client.chat.completions.create(model="notes", messages=question)
    sources = out.model_extra["sources"]
    assert sources and out.model_extra["no_answer_reason"] is None
    content = out.choices[0].message.content
    assert content.startswith("yes\n\nSources:\n[1] ") and sources[0]["path"] in content
    stream = client.chat.completions.create(model="notes", messages=question, stream=True)
    chunks = [chunk for chunk in stream if chunk.choices]
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks)
    assert text == content
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert chunks[-1].model_extra["sources"] == sources


def test_a_follow_up_uses_the_history_the_client_sends(client, faults, ollama_url):
    faults(reply="What do my notes say about sourdough proofing temperature?")
    messages = [
        {"role": "user", "content": "How long do I proof sourdough?"},
        {"role": "assistant", "content": "About 4 hours at room temperature."},
        {"role": "user", "content": "and at what temperature?"},
    ]
    client.chat.completions.create(model="notes", messages=messages)
    prompts = [json.dumps(messages) for messages in chats(ollama_url)]
    rewrite = [p for p in prompts if "and at what temperature?" in p and "How long do I proof" in p]
    assert rewrite, "no model call saw the conversation"
    assert any("About 4 hours at room temperature." in p for p in rewrite)


def test_an_unknown_model_is_a_404(client):
    with pytest.raises(openai.NotFoundError) as refused:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert refused.value.code == "model_not_found"
    assert "The model 'gpt-4o' does not exist" in str(refused.value)


def test_a_question_over_the_bound_says_so(client, ollama_url):
    asked = len(chats(ollama_url))
    question = "what do my notes say about " + "sourdough " * 2_000  # 20 KB
    with pytest.raises(openai.UnprocessableEntityError) as refused:
        client.chat.completions.create(
            model="notes", messages=[{"role": "user", "content": question}]
        )
    assert "this server takes at most 16,000 (RAG_MAX_QUESTION_CHARS)" in refused.value.message
    assert len(chats(ollama_url)) == asked  # nothing of it reached the model


def test_with_a_token_the_api_key_is_the_token(ollama_url, loaded_notes, workdir, tmp_path):
    env = _env(ollama_url, workdir, RAG_API_TOKEN=TOKEN)
    with langgraph_dev(workdir / "served-openai-token", env) as url:
        wrong = openai.OpenAI(base_url=f"{url}/v1", api_key="wrong", max_retries=0)
        with pytest.raises(openai.AuthenticationError) as refused:
            wrong.models.list()
        assert refused.value.code == "invalid_api_key"
        assert refused.value.type == "authentication_error"
        assert "this server needs its token" in str(refused.value)  # not just "Error code: 401"
        with pytest.raises(openai.AuthenticationError, match="needs its token"):
            wrong.chat.completions.create(
                model="notes", messages=[{"role": "user", "content": "calculate: 1+1"}]
            )
        with pytest.raises(openai.AuthenticationError, match="needs its token"):
            chat_openai(url, key="wrong", model="notes").invoke("calculate: 1+1")
        refused_cli = llm_cli(url, tmp_path, "calculate: 1+1", "--no-log", key="wrong")
        assert refused_cli.returncode == 1
        assert "this server needs its token" in refused_cli.stderr, refused_cli.stderr
        accepted = llm_cli(url, tmp_path, "calculate: 1+1", "--no-log", key=TOKEN)
        assert accepted.stdout.strip() == "1+1 = 2", accepted.stderr
        right = openai.OpenAI(base_url=f"{url}/v1", api_key=TOKEN, max_retries=0)
        assert "notes" in [model.id for model in right.models.list()]
        out = right.chat.completions.create(
            model="notes", messages=[{"role": "user", "content": "calculate: 1+1"}]
        )
        assert out.choices[0].message.content == "1+1 = 2"


def test_usage_is_the_models_own_counts_plain_and_streamed(client, faults):
    faults(reply="yes")
    question = [{"role": "user", "content": QUESTION}]
    out = client.chat.completions.create(model="notes", messages=question)
    usage = out.usage
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    stream = client.chat.completions.create(
        model="notes", messages=question, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    assert chunks[-1].choices == [] and chunks[-1].usage == usage  # same calls, same counts
    assert all(chunk.usage is None for chunk in chunks[:-1])
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == out.choices[0].message.content


def test_langchains_chat_openai_reads_answer_usage_and_errors(server, client, faults):
    faults(reply="yes")
    expected = answered(client)
    model = chat_openai(server, model="notes")
    reply = model.invoke(QUESTION)
    assert reply.content == expected.choices[0].message.content
    assert reply.usage_metadata["input_tokens"] == expected.usage.prompt_tokens
    assert reply.usage_metadata["output_tokens"] == expected.usage.completion_tokens
    streamed = None
    for chunk in chat_openai(server, model="notes", stream_usage=True).stream(QUESTION):
        streamed = chunk if streamed is None else streamed + chunk
    assert streamed.content == reply.content
    assert streamed.usage_metadata["total_tokens"] == expected.usage.total_tokens
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        chat_openai(server, model="gpt-4o").invoke("hi")


def test_the_llm_cli_streams_answers_with_usage_and_shows_errors(server, client, faults, tmp_path):
    faults(reply="yes")
    expected = answered(client)
    content, usage = expected.choices[0].message.content, expected.usage
    for mode in ((), ("--no-stream",)):
        result = llm_cli(server, tmp_path, QUESTION, "--usage", "--no-log", *mode)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == content.strip()
        tokens = f"{usage.prompt_tokens:,} input, {usage.completion_tokens:,} output"
        assert f"Token usage: {tokens}" in result.stderr, mode
    unknown = llm_cli(server, tmp_path, "hi", "--no-log", name="gpt-4o")
    assert unknown.returncode == 1
    assert "The model 'gpt-4o' does not exist" in unknown.stderr, unknown.stderr


def _server_threads(url: str) -> int:
    """Threads of the `langgraph dev` process serving ``url`` (from /proc)."""
    port = url.rsplit(":", 1)[1].encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"dev" in command and port in command and b"--port" in command:
                return len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            continue
    raise AssertionError(f"no langgraph dev process serves {url}")


def _model_calls(ollama_url: str) -> dict:
    with urllib.request.urlopen(f"{ollama_url}/_standin/calls", timeout=10) as response:
        return json.load(response)


def test_eighty_streams_that_leave_leave_no_model_call_and_threads_bounded(
    server, faults, ollama_url
):
    # The answer's model call reads its prompt for half a minute (the stand-in watches its
    # client, as Ollama does); the decisions before it are quick.
    faults(answer_delay=30)
    baseline = _server_threads(server)
    body = {"model": "notes", "messages": [{"role": "user", "content": QUESTION}], "stream": True}
    answered: list[tuple[int, bytes]] = []
    peak = [0, 0]  # server threads, model calls in flight

    together = threading.Barrier(80)

    def leaving() -> None:
        together.wait()
        with HTTP.stream("POST", f"{server}/v1/chat/completions", json=body) as response:
            if response.status_code == 200:
                lines = response.iter_lines()
                next(lines)  # the first chunk; it leaves five seconds later
                time.sleep(5.0)
                lines.close()
                answered.append((200, b""))
            else:
                answered.append((response.status_code, response.read()))

    clients = [threading.Thread(target=leaving) for _ in range(80)]
    asked = time.time()
    for client_thread in clients:
        client_thread.start()
    while any(t.is_alive() for t in clients):
        peak[0] = max(peak[0], _server_threads(server) - baseline)
        peak[1] = max(peak[1], _model_calls(ollama_url)["in_flight"])
        time.sleep(0.05)
    left = time.time()
    deadline = left + 10
    while (calls := _model_calls(ollama_url))["in_flight"] and time.time() < deadline:
        time.sleep(0.05)
    mine = [c for c in calls["calls"] if c["started"] >= asked]
    ended = max((c["ended"] or float("inf") for c in mine), default=left)
    print(
        f"80 streams: {[s for s, _ in answered].count(200)} taken, "
        f"{[s for s, _ in answered].count(429)} refused; peak {peak[0]} server threads over "
        f"{baseline}, {peak[1]} model calls in flight; the last call ended "
        f"{ended - left:+.2f} s from the last client leaving (inf: not yet); in flight now "
        f"{calls['in_flight']}; server threads {_server_threads(server) - baseline:+d}"
    )
    statuses = sorted(s for s, _ in answered)
    assert statuses == [200] * 10 + [429] * 70  # 2 running, 8 waiting
    refused = json.loads(next(b for s, b in answered if s == 429))
    assert refused["error"]["type"] == "rate_limit_error"
    assert calls["in_flight"] == 0 and ended - left < 1.0
    # The runs under way were writing their answers when their clients left: aborted.
    assert [c["outcome"] for c in mine].count("client left") >= 2
    assert peak[1] <= 4  # two runs at once, each grading its two chunks at most
