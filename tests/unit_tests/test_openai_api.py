"""The OpenAI-compatible API in-process (Starlette's test client, fake models, a temp index)."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import threading
import time
from dataclasses import replace

import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from app.serving.context import server_settings
from app.serving.http import Guard
from app.serving.openai_api import ChatCompletions, error_body, sources_markdown
from app.serving.policy import TOKEN_NEEDED, ServingPolicy, serving_policy
from graph.index.ingest import load_notes
from tests.fakes import FakeModels

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32

#: A question's length limit in the refusal tests, and what goes over it.
LIMIT = 100
LONG = "x" * (LIMIT + 1)
TOO_LONG = f"is {LIMIT + 1} characters; this server takes at most {LIMIT} (RAG_MAX_QUESTION_CHARS)"


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
    model = {"id": "notes", "object": "model", "created": 0, "owned_by": "notes-rag"}
    assert listed == {"object": "list", "data": [model]}


#: A completion's (and a chunk's) id, as OpenAI writes them.
COMPLETION_ID = re.compile(r"chatcmpl-[0-9a-f]{32}")


def test_a_calculation_is_exact(api):
    client, _, _ = api
    before = int(time.time())
    out = ask(client, user("calculate: 456*4343 - 56/(443-11+4)")).json()
    message = {"role": "assistant", "content": "456*4343 - 56/(443-11+4) ≈ 1980407.87155963"}
    assert out["choices"] == [{"index": 0, "message": message, "finish_reason": "stop"}]
    assert COMPLETION_ID.fullmatch(out["id"]) and before <= out["created"] <= time.time()
    assert out["object"] == "chat.completion" and out["model"] == "notes"
    assert set(out) == {
        *("id", "object", "created", "model", "choices", "usage", "sources", "no_answer_reason")
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


@pytest.mark.parametrize("stream", [False, True])
def test_the_conversation_is_the_history_the_client_sends(api, stream):
    client, models, chat = api
    history = [
        user("How do I practise whiteboarding interviews?"),
        {"role": "assistant", "content": "Practise on a real whiteboard, timed."},
        user("and how long each session?"),
    ]
    assert ask(client, *history, stream=stream).status_code == 200
    (rewrite,) = models.prompts("rewrite")
    assert "whiteboarding interviews" in rewrite and "real whiteboard, timed" in rewrite
    assert "and how long each session?" in rewrite
    # The request's thread is gone afterwards (a stream's, once its producer has finished).
    deadline = time.monotonic() + 5
    while list(chat._saver.list(None)) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert list(chat._saver.list(None)) == []


def test_system_messages_and_empty_replies_are_not_the_conversation(api, monkeypatch):
    client, models, _ = api
    monkeypatch.setenv("RAG_MAX_QUESTION_CHARS", str(LIMIT))
    serving_policy.cache_clear()
    history = [
        {"role": "system", "content": "Answer briefly. " * LIMIT},  # the client's, unbounded
        user("How do I practise whiteboarding interviews?"),
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "tool", "content": "42"},
        user("and how long each session?"),
    ]
    assert ask(client, *history).status_code == 200
    (rewrite,) = models.prompts("rewrite")
    conversation = "User: How do I practise whiteboarding interviews?\nAssistant: \n\n"
    assert f"Conversation:\n{conversation}Follow-up question: and how long" in rewrite


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
    assert response.headers["cache-control"] == "no-cache"
    chunks = events(response)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    pieces = [c["choices"][0]["delta"].get("content", "") for c in chunks[1:]]
    text = "".join(pieces)
    assert text.startswith("Practise daily. Time each answer. Explain aloud.\n\nSources:\n[1] ")
    assert len([p for p in pieces if p]) > 2  # token by token, not one block
    *answer, last = chunks
    assert last["choices"] == [{"index": 0, "delta": {}, "finish_reason": "stop"}]
    assert last["sources"] and last["no_answer_reason"] is None
    for chunk in answer:
        assert chunk["choices"] == [
            {"index": 0, "delta": chunk["choices"][0]["delta"], "finish_reason": None}
        ]
    # One completion: every chunk carries its id, object, time and model.
    assert COMPLETION_ID.fullmatch(chunks[0]["id"])
    heads = {(c["id"], c["object"], c["created"], c["model"]) for c in chunks}
    assert heads == {(chunks[0]["id"], "chat.completion.chunk", chunks[0]["created"], "notes")}
    first_source = sources_markdown(last["sources"][:1]).split("\n")[-1]
    assert " — " in first_source and first_source in response.text  # UTF-8, not \\u2014


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


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        ({"check": '{"score": "no"}'}, "unsupported"),  # streamed, then "your notes don't say"
        ({"grade": '{"score": "no"}'}, "all_irrelevant"),  # nothing streamed: all at the end
    ],
)
def test_a_streams_text_and_ending_are_the_completions(api, script, reason):
    client, models, _ = api
    models.answers.update(script, generate="Practise daily. Time each answer.")
    question = user("How do I practise whiteboarding interviews?")
    chunks = events(ask(client, question, stream=True))
    out = ask(client, question).json()
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert out["no_answer_reason"] == reason
    assert text == out["choices"][0]["message"]["content"]
    assert chunks[-1]["no_answer_reason"] == reason
    assert chunks[-1]["sources"] == out["sources"]


def test_a_streamed_calculation_sends_its_answer(api):
    client, _, _ = api
    chunks = events(ask(client, user("calculate: 6*7"), stream=True))
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text == "6*7 = 42"


def failing(exc):
    def generate(prompt):
        raise exc

    return generate


@pytest.mark.parametrize(
    ("exc", "said", "streamed"),
    [
        (RuntimeError("the model crashed"), "the model crashed", "the model crashed"),
        (RuntimeError(), "RuntimeError", "RuntimeError()"),  # no message: its class
    ],
)
def test_a_failing_model_is_an_upstream_error(api, exc, said, streamed):
    client, models, _ = api
    models.answers["generate"] = failing(exc)
    question = user("How do I practise whiteboarding interviews?")
    response = ask(client, question)
    assert (response.status_code, response.json()) == refusal(
        502, said, "upstream_error", kind="server_error"
    )
    # A stream has answered 200 already: the error is its last event, then [DONE].
    first, error = events(ask(client, question, stream=True))
    assert first["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert error == {
        "error": {"message": streamed, "type": "server_error", "code": "upstream_error"}
    }


def test_a_no_answer_says_so(api):
    client, models, _ = api
    models.answers["grade"] = '{"score": "no"}'
    out = ask(client, user("How do I practise whiteboarding interviews?")).json()
    assert out["no_answer_reason"] == "all_irrelevant"
    assert out["choices"][0]["message"]["content"] and out["sources"] == []
    assert models.calls("generate") == 0


@pytest.mark.parametrize("as_object", [True, False])  # some clients send the URL alone
def test_an_image_part_reaches_the_vision_model(api, as_object):
    client, models, _ = api
    inline = base64.b64encode(PNG).decode()
    url = f"data:image/png;base64,{inline}"
    content = [
        {"type": "text", "text": "based on the image:"},
        {"type": "image_url", "image_url": {"url": url} if as_object else url},
        {"type": "text", "text": "what is it?"},
    ]
    out = ask(client, user(content)).json()
    assert out["choices"][0]["message"]["content"] == "The image shows a small network diagram."
    assert models.images("vision") == [[inline]]
    assert "based on the image:\nwhat is it?" in models.prompts("vision")[0]  # the text parts


NO_PATHS = "is not base64 or a data: URI (file paths are not accepted here: send the image's bytes)"
PASSWD = [{"type": "image_url", "image_url": {"url": "/etc/passwd"}}, {"type": "text", "text": "x"}]


def refusal(status, message, code, param=None, kind="invalid_request_error"):
    return status, {"error": {"message": message, "type": kind, "code": code, "param": param}}


def in_messages(status, message):
    return refusal(status, message, "invalid_request", "messages")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"{not json", refusal(400, "the body is not JSON (or nests too deep)", "invalid_json")),
        ([user("hi")], refusal(400, "the body must be an object", "invalid_request")),
        ({"model": "notes"}, in_messages(400, "messages must be a non-empty list")),
        ({"messages": []}, in_messages(400, "messages must be a non-empty list")),
        (
            {"messages": [{"role": "assistant", "content": "hi"}]},
            in_messages(400, "the last message must be the user's question"),
        ),
        ({"messages": [user(" \n")]}, in_messages(400, "the question is empty")),
        ({"messages": [user([{"type": "text"}])]}, in_messages(400, "the question is empty")),
        (
            {"messages": [user(7)]},
            in_messages(400, "message content must be a string or a list of parts"),
        ),
        ({"messages": [user(["hi"])]}, in_messages(400, "each content part must be an object")),
        ({"messages": ["hi", user("hi")]}, in_messages(400, "each message must be an object")),
        ({"messages": [user(LONG)]}, in_messages(422, f"the question {TOO_LONG}")),
        (
            {"messages": [user(LONG), user("and then?")]},
            in_messages(422, f"an earlier message {TOO_LONG}"),
        ),
        (
            {"messages": [{"role": "assistant", "content": LONG}, user("and then?")]},
            in_messages(422, f"an earlier message {TOO_LONG}"),
        ),
        (
            {"model": "gpt-4o", "messages": [user("hi")]},
            refusal(
                404,
                "The model 'gpt-4o' does not exist: the models are the collections (notes)",
                "model_not_found",
                "model",
            ),
        ),
        (
            {"messages": [user(PASSWD)]},
            refusal(422, f"image '/etc/passwd' {NO_PATHS}", "invalid_request"),
        ),
        (
            {"messages": [user("hi")], "stream": True, "stream_options": True},
            refusal(400, "stream_options must be an object", "invalid_request", "stream_options"),
        ),
    ],
)
def test_each_refusal_has_its_status_type_code_param_and_message(api, monkeypatch, body, expected):
    client, models, _ = api
    monkeypatch.setenv("RAG_MAX_QUESTION_CHARS", str(LIMIT))
    serving_policy.cache_clear()
    if isinstance(body, dict):
        body = {"model": "notes", **body}
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    response = client.post(
        "/v1/chat/completions", content=content, headers={"content-type": "application/json"}
    )
    assert (response.status_code, response.json()) == expected
    assert models.calls() == 0


def test_an_unknown_models_error_lists_the_collections_or_says_there_are_none(
    api, loaded, notes_copy, models, monkeypatch, tmp_path
):
    client, _, _ = api
    load_notes(replace(loaded, collection_name="work"), notes_copy, models.embedder)
    error = ask(client, user("hi"), model="gpt-4o").json()["error"]
    assert error["message"].endswith("the models are the collections (notes, work)")
    monkeypatch.setenv("RAG_CHROMA_DIR", str(tmp_path / "empty"))
    server_settings.cache_clear()
    error = ask(client, user("hi"), model="notes").json()["error"]
    assert error["message"] == (
        "The model 'notes' does not exist: the models are the collections "
        "(none: load notes with `rag load`)"
    )


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


def guarded(routes, **policy):
    app = Starlette(routes=[*routes, Route("/rag/x", lambda r: JSONResponse({}))])
    return TestClient(Guard(app, ServingPolicy(**policy)), base_url="http://127.0.0.1:2024")


def openai_error(response, status, message, kind, code):
    """``response`` is the error in OpenAI's shape, one JSON body that says its own length."""
    error = {"message": message, "type": kind, "code": code, "param": None}
    assert (response.status_code, response.json()) == (status, {"error": error})
    assert response.headers.get_list("content-type") == ["application/json"]
    assert response.headers["content-length"] == str(len(response.content))


@pytest.mark.parametrize(
    ("request_kwargs", "status", "kind", "code"),
    [
        ({"headers": {"host": "evil.example"}}, 403, "permission_error", "forbidden"),
        (
            {"headers": {"authorization": "Bearer guess"}},
            401,
            "authentication_error",
            "invalid_api_key",
        ),
        (
            {"content": b"{}", "headers": {"content-type": "text/plain"}},
            415,
            "invalid_request_error",
            "unsupported_media_type",
        ),
        ({"content": b"x" * 2048}, 413, "invalid_request_error", "request_too_large"),
        ({"content": b"{not json"}, 400, "invalid_request_error", "invalid_request"),
    ],
)
def test_the_guards_refusals_come_in_openais_shape(request_kwargs, status, kind, code):
    client = guarded([], token="s3cret", max_request_bytes=1024)  # it refuses before routing
    headers = {"content-type": "application/json", "authorization": "Bearer s3cret"}
    kwargs = {**request_kwargs, "headers": {**headers, **request_kwargs.get("headers", {})}}
    # Outside /v1 the Guard's refusal is {"detail": ...}; under /v1 the same words as OpenAI's.
    detail = client.post("/rag/x", **kwargs).json()["detail"]
    openai_error(client.post("/v1/chat/completions", **kwargs), status, detail, kind, code)
    if status == 401:
        assert detail == TOKEN_NEEDED


def other_layers_errors():
    """Errors as other layers answer /v1 requests: plain text, {"detail": ...}, streamed."""

    def split(request):
        return StreamingResponse(iter([b"over", b"loaded\n"]), 503, media_type="text/plain")

    def own(request):
        return JSONResponse(error_body(429, "slow down"), 429, headers={"retry-after": "3"})

    listed = {"detail": [{"loc": ["body"], "msg": "bad"}]}
    return [
        Route("/v1/chat/completions", lambda r: JSONResponse({}), methods=["POST"]),
        Route("/v1/split", split),
        Route("/v1/empty", lambda r: Response(status_code=500)),
        Route("/v1/latin-1", lambda r: Response(b"caf\xe9 closed", 502, media_type="text/plain")),
        Route("/v1/listed", lambda r: JSONResponse(listed, 422)),
        Route("/v1/other", lambda r: JSONResponse({"message": "bad"}, 400)),
        Route("/v1/own", own),
    ]


@pytest.mark.parametrize(
    ("path", "status", "message", "kind", "code", "kept"),
    [
        ("/v1", 404, "Not Found", "invalid_request_error", "not_found", {}),
        ("/v1/embeddings", 404, "Not Found", "invalid_request_error", "not_found", {}),
        (
            "/v1/chat/completions",  # GET: the method is not allowed
            405,
            "Method Not Allowed",
            "invalid_request_error",
            "invalid_request",
            {"allow": "POST"},
        ),
        ("/v1/split", 503, "overloaded", "server_error", "server_error", {}),
        ("/v1/empty", 500, "500", "server_error", "server_error", {}),
        ("/v1/latin-1", 502, "caf\ufffd closed", "server_error", "server_error", {}),
        (
            "/v1/listed",
            422,
            '[{"loc": ["body"], "msg": "bad"}]',
            "invalid_request_error",
            "invalid_request",
            {},
        ),
        ("/v1/other", 400, '{"message":"bad"}', "invalid_request_error", "invalid_request", {}),
        (
            "/v1/own",
            429,
            "slow down",
            "rate_limit_error",
            "rate_limit_exceeded",
            {"retry-after": "3"},
        ),
    ],
)
def test_v1_errors_of_other_layers_are_rewritten_in_openais_shape(
    path, status, message, kind, code, kept
):
    client = guarded(other_layers_errors())
    response = client.get(path)
    openai_error(response, status, message, kind, code)
    assert {name: response.headers.get(name) for name in kept} == kept


def test_v1_answers_and_other_routes_errors_pass_unchanged(api):
    _, _, chat = api
    client = guarded(chat.routes)
    listed = client.get("/v1/models")
    assert listed.status_code == 200 and listed.json()["data"][0]["id"] == "notes"
    # An error the API writes itself passes unchanged (its own code kept).
    asked = {"model": "nosuch", "messages": [{"role": "user", "content": "hi"}]}
    unknown = client.post("/v1/chat/completions", json=asked)
    assert unknown.json()["error"]["code"] == "model_not_found"
    outside = client.get("/rag/x", headers={"host": "evil.example"})
    assert outside.status_code == 403 and "detail" in outside.json()


# --- a client that leaves stops its run; runs are bounded ------------------------------------

QUESTION = user("How do I practise whiteboarding interviews?")
#: Each fake model call's latency in the tests of stopping: a run would go on for seconds.
SLOW = 2.0


async def leaving(app, body, *, chunks=None, after=None, starts=None):
    """POST ``body`` to ``/v1/chat/completions`` over ASGI as uvicorn would (spec 2.3) for a
    client that leaves after ``chunks`` body chunks or ``after`` seconds: its status, what it
    got, and when it left (monotonic). ``starts`` receives each response's start message."""
    data = json.dumps(body).encode()
    gone = asyncio.Event()
    got: list[bytes] = []
    status, asked, left = 0, False, [0.0]

    def leave():
        if not gone.is_set():
            left[0] = time.monotonic()
            gone.set()

    async def receive():
        nonlocal asked
        if not asked:
            asked = True
            return {"type": "http.request", "body": data, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message):
        nonlocal status
        if gone.is_set():
            return  # uvicorn drops what is sent to a client that left
        if message["type"] == "http.response.start":
            status = message["status"]
            if starts is not None:
                starts.append(message)
        elif message.get("body"):
            got.append(message["body"])
            if (chunks is not None and len(got) >= chunks) or status != 200:
                leave()
        if message["type"] == "http.response.body" and not message.get("more_body"):
            leave()

    if after is not None:
        asyncio.get_running_loop().call_later(after, leave)
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/chat/completions",
        "raw_path": b"/v1/chat/completions",
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(data)).encode()),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 2024),
    }
    await app(scope, receive, send)
    return status, b"".join(got), left[0]


def stream_threads() -> list[threading.Thread]:
    """The threads that run /v1 questions (each named after its completion)."""
    return [t for t in threading.enumerate() if t.name.startswith("chatcmpl-")]


async def settled(models, seconds):
    """Wait up to ``seconds`` for no model call in flight and no question's thread; the wait."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        if models.concurrency.active == 0 and not stream_threads():
            break
        await asyncio.sleep(0.01)
    return time.monotonic() - start


@pytest.fixture
def slow_api(loaded, monkeypatch):
    monkeypatch.setenv("RAG_CHROMA_DIR", loaded.chroma_persist_directory)
    monkeypatch.setenv("RAG_SCORE_THRESHOLD", "0.1")
    models = FakeModels(latency=SLOW)
    return ChatCompletions(models=models), models


@pytest.mark.parametrize("stream", [True, False])
def test_a_client_that_leaves_stops_its_runs_model_work_within_a_second(slow_api, stream):
    chat, models = slow_api
    app = Starlette(routes=chat.routes)
    body = {"model": "notes", "messages": [QUESTION], "stream": stream}

    async def scenario():
        # It leaves half a second in (a stream has had its first chunk), a model call in flight.
        asked = asyncio.create_task(leaving(app, body, after=0.5))
        await asyncio.sleep(0.4)
        assert models.concurrency.active >= 1
        waited = await settled(models, SLOW)
        calls = models.calls()
        await asyncio.sleep(0.3)
        status, got, _ = await asyncio.wait_for(asked, SLOW * 10)
        assert got.startswith(b"data: ") if stream else got == b""
        return status, waited, calls

    status, waited, calls = asyncio.run(scenario())
    assert status == (200 if stream else 0)  # a client gone before its answer gets none
    assert waited < 1.0, "a run still calls the model after its client left"
    assert models.concurrency.aborted >= 1  # the calls in flight was aborted, not waited out
    assert models.calls() == calls and models.calls("generate") == 0  # none started after


def test_eighty_streams_that_leave_leave_no_run_calling_the_model_and_threads_bounded(
    slow_api, monkeypatch
):
    monkeypatch.setenv("RAG_OPENAI_MAX_RUNNING", "2")
    monkeypatch.setenv("RAG_OPENAI_MAX_WAITING", "8")
    _, models = slow_api
    app = Starlette(routes=ChatCompletions(models=models).routes)
    body = {"model": "notes", "messages": [QUESTION], "stream": True}
    baseline = threading.active_count()
    peak = {"streams": 0, "threads": 0}
    starts: list[dict] = []

    async def sample():
        while True:
            peak["streams"] = max(peak["streams"], len(stream_threads()))
            peak["threads"] = max(peak["threads"], threading.active_count() - baseline)
            await asyncio.sleep(0.005)

    async def scenario():
        sampler = asyncio.create_task(sample())
        # Each leaves half a second in, after its first chunk (or at once when refused).
        answered = await asyncio.gather(
            *(leaving(app, body, after=0.5, starts=starts) for _ in range(80))
        )
        waited = await settled(models, SLOW)
        calls = models.calls()
        await asyncio.sleep(0.3)
        sampler.cancel()
        return answered, waited, calls

    answered, waited, calls = asyncio.run(scenario())
    statuses = [status for status, _, _ in answered]
    assert statuses.count(200) == 10 and statuses.count(429) == 70  # 2 running, 8 waiting
    refused = json.loads(next(got for status, got, _ in answered if status == 429))
    assert refused["error"]["type"] == "rate_limit_error"
    assert refused["error"]["code"] == "rate_limit_exceeded"
    assert "at most 2" in refused["error"]["message"]
    (busy, *_) = [dict(m["headers"]) for m in starts if m["status"] == 429]
    assert busy[b"retry-after"] == b"2"  # seconds, as OpenAI's clients read it
    assert waited < 1.0, f"{models.concurrency.active} calls, {len(stream_threads())} threads"
    assert models.calls() == calls and models.calls("generate") == 0
    assert peak["streams"] <= 2, peak
    # Threads go back to what there was: a worker may still be returning (up to a second).
    deadline = time.monotonic() + 1.0
    while threading.active_count() > baseline and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() <= baseline


def test_the_run_limit_is_read_from_its_two_settings(monkeypatch):
    from app.serving.openai_api import MAX_RUNNING, MAX_WAITING, run_limit
    from graph.errors import ConfigError

    limit = run_limit()
    assert (limit.running, limit.waiting) == (MAX_RUNNING, MAX_WAITING) == (2, 8)
    monkeypatch.setenv("RAG_OPENAI_MAX_RUNNING", " 1 ")
    monkeypatch.setenv("RAG_OPENAI_MAX_WAITING", "0")
    limit = run_limit()
    assert (limit.running, limit.waiting) == (1, 0)  # the least of each is taken
    for name, value, least in [
        ("RAG_OPENAI_MAX_RUNNING", "0", 1),
        ("RAG_OPENAI_MAX_RUNNING", "two", 1),
        ("RAG_OPENAI_MAX_WAITING", "-1", 0),
    ]:
        monkeypatch.setenv(name, value)
        with pytest.raises(ConfigError) as refused:
            run_limit()
        assert str(refused.value) == (
            f"{name} must be a whole number of at least {least}, not {value!r}"
        )
        monkeypatch.setenv(name, "1")
