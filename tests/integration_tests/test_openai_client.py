"""The OpenAI-compatible API with the official `openai` client, against `langgraph dev`
serving the project's langgraph.json and the Ollama stand-in."""

from __future__ import annotations

import json
import urllib.request

import openai
import pytest

from tests.integration_tests.conftest import langgraph_dev

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


def chats(ollama_url) -> list:
    with urllib.request.urlopen(f"{ollama_url}/_standin/chats", timeout=10) as response:
        return json.load(response)["chats"]


def test_the_models_are_the_collections(client):
    assert "notes" in [model.id for model in client.models.list()]


def test_a_calculation_is_exact_plain_and_streamed(client):
    messages = [{"role": "user", "content": "calculate: 456*4343 - 56/(443-11+4)"}]
    out = client.chat.completions.create(model="notes", messages=messages)
    assert out.choices[0].message.content == "456*4343 - 56/(443-11+4) = 1980407.87155963"
    stream = client.chat.completions.create(model="notes", messages=messages, stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text == "456*4343 - 56/(443-11+4) = 1980407.87155963"


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


def test_a_question_over_the_bound_says_so(client, ollama_url):
    asked = len(chats(ollama_url))
    question = "what do my notes say about " + "sourdough " * 2_000  # 20 KB
    with pytest.raises(openai.UnprocessableEntityError) as refused:
        client.chat.completions.create(
            model="notes", messages=[{"role": "user", "content": question}]
        )
    assert "this server takes at most 16,000 (RAG_MAX_QUESTION_CHARS)" in refused.value.message
    assert len(chats(ollama_url)) == asked  # nothing of it reached the model


def test_with_a_token_the_api_key_is_the_token(ollama_url, loaded_notes, workdir):
    env = _env(ollama_url, workdir, RAG_API_TOKEN=TOKEN)
    with langgraph_dev(workdir / "served-openai-token", env) as url:
        wrong = openai.OpenAI(base_url=f"{url}/v1", api_key="wrong", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            wrong.models.list()
        with pytest.raises(openai.AuthenticationError):
            wrong.chat.completions.create(
                model="notes", messages=[{"role": "user", "content": "calculate: 1+1"}]
            )
        right = openai.OpenAI(base_url=f"{url}/v1", api_key=TOKEN, max_retries=0)
        assert "notes" in [model.id for model in right.models.list()]
        out = right.chat.completions.create(
            model="notes", messages=[{"role": "user", "content": "calculate: 1+1"}]
        )
        assert out.choices[0].message.content == "1+1 = 2"
