"""The OpenAI-compatible API in-process (Starlette's test client, fake models, a temp index)."""

from __future__ import annotations

import base64
import json

import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from app.serving.openai_api import ChatCompletions, sources_markdown
from tests.fakes import FakeModels

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


@pytest.fixture
def api(loaded, monkeypatch):
    monkeypatch.setenv("RAG_CHROMA_DIR", loaded.chroma_persist_directory)
    monkeypatch.setenv("RAG_SCORE_THRESHOLD", "0.1")
    models = FakeModels(capabilities={"llama3.1:8b": {"vision"}})
    chat = ChatCompletions(models=models)
    return TestClient(Starlette(routes=chat.routes)), models, chat


def ask(client, *messages, stream=False, model="notes"):
    body = {"model": model, "messages": list(messages), "stream": stream}
    return client.post("/v1/chat/completions", json=body)


def user(text):
    return {"role": "user", "content": text}


def test_models_are_the_collections(api):
    client, _, _ = api
    listed = client.get("/v1/models").json()
    assert listed["object"] == "list"
    assert [m["id"] for m in listed["data"]] == ["notes"]


def test_an_unknown_model_is_a_404_in_openais_shape(api):
    client, models, _ = api
    response = ask(client, user("hi"), model="gpt-4o")
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "model_not_found" and error["param"] == "model"
    assert "notes" in error["message"] and models.calls() == 0


def test_a_calculation_is_exact(api):
    client, _, _ = api
    out = ask(client, user("calculate: 456*4343 - 56/(443-11+4)")).json()
    assert out["object"] == "chat.completion"
    message = out["choices"][0]["message"]
    assert message == {
        "role": "assistant",
        "content": "456*4343 - 56/(443-11+4) = 1980407.87155963",
    }
    assert out["sources"] == [] and out["no_answer_reason"] is None


def test_a_notes_answer_carries_its_sources(api):
    client, models, _ = api
    out = ask(client, user("How do I practise whiteboarding interviews?")).json()
    content = out["choices"][0]["message"]["content"]
    assert content.startswith("Based on your notes")
    assert out["sources"] and "\n\nSources:\n[1] " in content
    assert out["sources"][0]["path"] in content
    assert models.calls("generate") == 1


def test_the_conversation_is_the_history_the_client_sends(api):
    client, models, chat = api
    history = [
        user("How do I practise whiteboarding interviews?"),
        {"role": "assistant", "content": "Practise on a real whiteboard, timed."},
        user("and how long each session?"),
    ]
    ask(client, *history)
    (rewrite,) = models.prompts("rewrite")
    assert "whiteboarding interviews" in rewrite and "real whiteboard, timed" in rewrite
    assert "and how long each session?" in rewrite
    assert list(chat._saver.list(None)) == []  # the request's thread is gone afterwards


def test_a_question_without_history_is_not_rewritten(api):
    client, models, _ = api
    ask(client, {"role": "system", "content": "be nice"}, user("What about whiteboarding?"))
    assert models.calls("rewrite") == 0


def events(response) -> list:
    lines = [line for line in response.text.split("\n\n") if line.strip()]
    assert all(line.startswith("data: ") for line in lines)
    assert lines[-1] == "data: [DONE]"
    return [json.loads(line[len("data: ") :]) for line in lines[:-1]]


def test_a_streamed_answer_arrives_in_chunks_then_sources(api):
    client, models, _ = api
    models.answers["generate"] = "Practise daily. Time each answer. Explain aloud."
    response = ask(client, user("How do I practise whiteboarding interviews?"), stream=True)
    assert response.headers["content-type"].startswith("text/event-stream")
    chunks = events(response)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    pieces = [c["choices"][0]["delta"].get("content", "") for c in chunks[1:]]
    text = "".join(pieces)
    assert text.startswith("Practise daily. Time each answer. Explain aloud.\n\nSources:\n[1] ")
    assert len([p for p in pieces if p]) > 2  # token by token, not one block
    last = chunks[-1]
    assert last["choices"][0]["finish_reason"] == "stop" and last["sources"]


def test_a_reasoning_models_thinking_never_reaches_the_stream(api):
    client, models, _ = api
    thinking = "<think>\nThe user wants drills. Maybe mention timing.\n</think>\n\n"
    models.answers["generate"] = f"{thinking}Practise daily. Time each answer."
    chunks = events(ask(client, user("How do I practise whiteboarding interviews?"), stream=True))
    pieces = [c["choices"][0]["delta"].get("content", "") for c in chunks[1:]]
    text = "".join(pieces)
    assert text.startswith("Practise daily. Time each answer.\n\nSources:\n[1] ")
    assert "think>" not in text and "Maybe mention timing" not in text
    assert len([p for p in pieces if p]) > 2  # still token by token


def test_a_streamed_calculation_sends_its_answer(api):
    client, _, _ = api
    chunks = events(ask(client, user("calculate: 6*7"), stream=True))
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text == "6*7 = 42"


def test_a_no_answer_says_so(api):
    client, models, _ = api
    models.answers["grade"] = '{"score": "no"}'
    out = ask(client, user("How do I practise whiteboarding interviews?")).json()
    assert out["no_answer_reason"] == "all_irrelevant"
    assert out["choices"][0]["message"]["content"] and out["sources"] == []
    assert models.calls("generate") == 0


def test_an_image_part_reaches_the_vision_model(api):
    client, models, _ = api
    inline = base64.b64encode(PNG).decode()
    content = [
        {"type": "text", "text": "based on the image: what is it?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{inline}"}},
    ]
    out = ask(client, user(content)).json()
    assert out["choices"][0]["message"]["content"] == "The image shows a small network diagram."
    assert models.images("vision") == [[inline]]


@pytest.mark.parametrize(
    ("messages", "status"),
    [
        ([], 400),
        ([{"role": "assistant", "content": "hi"}], 400),
        ([user("")], 400),
        (
            [
                user(
                    [
                        {"type": "image_url", "image_url": {"url": "/etc/passwd"}},
                        {"type": "text", "text": "x"},
                    ]
                )
            ],
            422,
        ),
    ],
)
def test_bad_requests_are_clear_errors(api, messages, status):
    client, models, _ = api
    response = client.post("/v1/chat/completions", json={"model": "notes", "messages": messages})
    assert response.status_code == status and response.json()["error"]["message"]
    assert models.calls() == 0


def test_sources_are_numbered_with_their_headings():
    text = sources_markdown([{"path": "a.md", "heading": "H"}, {"path": "b.md", "heading": ""}])
    assert text == "\n\nSources:\n[1] a.md — H\n[2] b.md"


#: Distinct token counts per purpose, so a sum that misses or repeats a call shows.
USAGE = {
    "route_calculator": (11, 1),
    "route_image": (13, 2),
    "grade": (101, 3),
    "generate": (1009, 47),
    "check": (211, 5),
}


def expected_usage(models) -> dict:
    prompt = sum(models.calls(p) * USAGE[p][0] for p in USAGE)
    completion = sum(models.calls(p) * USAGE[p][1] for p in USAGE)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def test_usage_is_the_sum_of_every_model_call_of_the_question(api):
    client, models, _ = api
    models.usage = USAGE
    out = ask(client, user("How do I practise whiteboarding interviews?")).json()
    assert models.calls("grade") >= 2 and models.calls("generate", "check") == 2
    assert out["usage"] == expected_usage(models)
    assert out["usage"]["completion_tokens"] > 47  # not the answer's call alone


def test_a_stream_sends_its_usage_last_when_asked(api):
    client, models, _ = api
    models.usage = USAGE
    body = {
        "model": "notes",
        "messages": [user("How do I practise whiteboarding interviews?")],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    chunks = events(client.post("/v1/chat/completions", json=body))
    *answer, last = chunks
    assert last["choices"] == [] and last["usage"] == expected_usage(models)
    assert all(chunk["usage"] is None for chunk in answer)
    assert answer[-1]["choices"][0]["finish_reason"] == "stop"
    plain = events(ask(client, user("How do I practise whiteboarding interviews?"), stream=True))
    assert plain[-1]["choices"] and all("usage" not in chunk for chunk in plain)


def test_a_calculation_uses_no_tokens(api):
    client, models, _ = api
    models.usage = USAGE
    out = ask(client, user("calculate: 6*7")).json()
    assert models.calls() == 0
    assert out["usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


def guarded(api_fixture, **policy):
    from app.serving.http import Guard
    from app.serving.policy import ServingPolicy

    _, _, chat = api_fixture
    app = Starlette(routes=[*chat.routes, Route("/rag/x", lambda r: JSONResponse({}))])
    return TestClient(Guard(app, ServingPolicy(**policy)), base_url="http://127.0.0.1:2024")


@pytest.mark.parametrize(
    ("request_kwargs", "status", "kind", "words"),
    [
        ({"headers": {"host": "evil.example"}}, 403, "permission_error", "not served here"),
        (
            {"content": b"{}", "headers": {"content-type": "text/plain"}},
            415,
            "invalid_request_error",
            "must be JSON",
        ),
        ({"content": b"x" * 2048}, 413, "invalid_request_error", "larger than"),
    ],
)
def test_the_guards_refusals_come_in_openais_shape(api, request_kwargs, status, kind, words):
    client = guarded(api, max_request_bytes=1024)
    kwargs = {"headers": {"content-type": "application/json"}, **request_kwargs}
    response = client.post("/v1/chat/completions", **kwargs)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["type"] == kind and words in error["message"]
    assert set(error) == {"message", "type", "code", "param"}
    assert response.headers["content-length"] == str(len(response.content))


def test_unknown_v1_routes_are_openai_errors_and_other_routes_keep_their_shape(api):
    client = guarded(api)
    missing = client.get("/v1/embeddings")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    wrong_method = client.get("/v1/chat/completions")
    assert wrong_method.status_code == 405 and wrong_method.json()["error"]["message"]
    # An error the API writes itself passes unchanged (its own code kept).
    asked = {"model": "nosuch", "messages": [{"role": "user", "content": "hi"}]}
    unknown = client.post("/v1/chat/completions", json=asked)
    assert unknown.json()["error"]["code"] == "model_not_found"
    outside = client.get("/rag/x", headers={"host": "evil.example"})
    assert outside.status_code == 403 and "detail" in outside.json()
