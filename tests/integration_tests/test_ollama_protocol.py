"""The model server speaks Ollama's protocol as langchain-ollama and the ollama client use it."""

import base64
import functools
import math
import operator

import pytest
from langchain_core.messages import HumanMessage
from langchain_ollama import ChatOllama, OllamaEmbeddings
from ollama import Client, ResponseError

from graph.models import GRADE_SCHEMA
from tests.integration_tests.conftest import HTTP


def test_version_tags_and_show(ollama_url):
    client = Client(host=ollama_url)
    names = {m.model for m in client.list().models}
    assert {"llama3.1:8b", "nomic-embed-text:latest"} <= names
    shown = client.show("llama3.1:8b")
    assert "completion" in shown.capabilities
    assert HTTP.get(f"{ollama_url}/api/version").json()["version"]


def test_unknown_model_is_404_with_pull_hint(ollama_url):
    with pytest.raises(ResponseError) as exc:
        Client(host=ollama_url).show("nope:1b")
    assert exc.value.status_code == 404
    assert 'model "nope:1b" not found, try pulling it first' in exc.value.error


def test_chat_streams_ndjson_with_options(ollama_url):
    model = ChatOllama(
        model="llama3.1:8b",
        base_url=ollama_url,
        temperature=0,
        seed=1,
        num_predict=8,
        num_ctx=2048,
        top_p=0.9,
        stop=["\n\n"],
    )
    chunks = list(model.stream("Write one word."))
    assert len(chunks) >= 2
    final = functools.reduce(operator.add, chunks)
    assert final.response_metadata.get("done_reason") in ("stop", "length")
    assert final.usage_metadata["output_tokens"] <= 8


def test_raw_stream_lines_have_role_and_final_stats(ollama_url):
    body = {
        "model": "llama3.1:8b",
        "messages": [{"role": "user", "content": "Hi"}],
        "options": {"num_predict": 4, "temperature": None},
        "keep_alive": "5m",
    }
    with HTTP.stream("POST", f"{ollama_url}/api/chat", json=body, timeout=60) as response:
        lines = [line for line in response.iter_lines() if line]
    import json

    parsed = [json.loads(line) for line in lines]
    assert all(p["message"]["role"] == "assistant" for p in parsed)
    assert parsed[-1]["done"] is True
    assert {"done_reason", "eval_count", "prompt_eval_count", "total_duration"} <= set(parsed[-1])


def test_json_schema_format_is_enforced(ollama_url):
    model = ChatOllama(
        model="llama3.1:8b", base_url=ollama_url, temperature=0, format=GRADE_SCHEMA, num_predict=24
    )
    reply = model.invoke("Is the sky blue? Answer as JSON with key score.")
    import json

    assert json.loads(reply.content)["score"] in ("yes", "no")


def test_embeddings_are_batched_and_normalised(ollama_url):
    emb = OllamaEmbeddings(model="nomic-embed-text", base_url=ollama_url)
    vectors = emb.embed_documents(["search_document: hello", "search_document: world"])
    assert len(vectors) == 2 and len(vectors[0]) == len(vectors[1]) > 100
    for v in vectors:
        assert math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, rel_tol=1e-3)


def test_images_need_a_vision_model(ollama_url):
    from tests.integration_tests.conftest import VISION_MODEL

    png = base64.b64encode(open("tests/sample_notes/tech/img/network.png", "rb").read()).decode()
    message = HumanMessage(
        content=[
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": f"data:image/png;base64,{png}"},
        ]
    )
    with pytest.raises(ResponseError):
        ChatOllama(model="llama3.1:8b", base_url=ollama_url, num_predict=4).invoke([message])
    reply = ChatOllama(model=VISION_MODEL, base_url=ollama_url, num_predict=4).invoke([message])
    assert isinstance(reply.content, str)
    assert "vision" in Client(host=ollama_url).show(VISION_MODEL).capabilities
