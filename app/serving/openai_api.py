"""An OpenAI-compatible chat API on the served graph: ``/v1/models``, ``/v1/chat/completions``.

The chat tools people already use (Open WebUI, Obsidian Copilot, Continue, most chat
clients) speak this API. Each collection is a model (its id is the collection name). A
request is stateless: the messages a client sends are the conversation. Earlier turns are
seeded into a thread that lives in this process for the length of the request (no state
update over HTTP), so a follow-up is rewritten from them as on any thread; the last user
message is the question.

The routes sit behind the same protections as the rest of the API: the ``Guard`` (host,
origin, JSON, size) and LangGraph's custom auth (``RAG_API_TOKEN`` is the API key), and the
run checks of ``app.serving.boundary`` (images, models, context size).

A client that leaves takes its question back: the run stops (``graph.stopping``), no model
call starts and the one in flight is aborted, streamed or not. At most
``RAG_OPENAI_MAX_RUNNING`` questions run at once (2) and ``RAG_OPENAI_MAX_WAITING`` more
wait for a place (8); beyond that a question is refused with a 429 (``rate_limit_error``)
and a ``Retry-After``, which OpenAI clients retry after.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, MutableMapping
from dataclasses import replace
from typing import Any

from langchain_core.callbacks import UsageMetadataCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope
from starlette.types import Send as AsgiSend

from app.serving.boundary import Refused, check_question, check_run
from app.serving.context import ServedContext, server_settings
from app.serving.graph import build_served_graph
from app.serving.run_queue import Busy, Place, RunLimit
from graph.errors import ConfigError
from graph.index.catalog import describe_collections
from graph.index.vectorstore import get_collection
from graph.llm import ReasoningFilter, message_text
from graph.models import ModelProvider
from graph.state import Source, source_line, unstreamed_tail
from graph.stopping import Stop, Stopped

Message = MutableMapping[str, Any]
Send = Callable[[Message], Awaitable[None]]

#: Earlier messages kept from a request's conversation (the rewriter reads the last few).
MAX_HISTORY_MESSAGES = 40
#: Nodes whose message tokens are the answer (the others are internal decisions).
_ANSWERING = ("generate", "image")
#: Questions run at once, and more waiting for a place, unless the environment says otherwise.
MAX_RUNNING, MAX_WAITING = 2, 8
#: Seconds a refused client is told to wait before asking again (``Retry-After``).
RETRY_AFTER = 2


def _count(name: str, default: int, least: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        raise ConfigError(f"{name} must be a whole number of at least {least}, not {text!r}")
    return value


def run_limit() -> RunLimit:
    """The API's bound on questions: ``RAG_OPENAI_MAX_RUNNING`` and ``RAG_OPENAI_MAX_WAITING``."""
    return RunLimit(
        _count("RAG_OPENAI_MAX_RUNNING", MAX_RUNNING, 1),
        _count("RAG_OPENAI_MAX_WAITING", MAX_WAITING, 0),
    )


#: OpenAI's error ``type`` and a default ``code`` for each status this API answers with.
_ERROR_KINDS = {
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", "forbidden"),
    404: ("invalid_request_error", "not_found"),
    413: ("invalid_request_error", "request_too_large"),
    415: ("invalid_request_error", "unsupported_media_type"),
    422: ("invalid_request_error", "invalid_request"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
}


def error_body(
    status: int, message: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """An error in OpenAI's shape: ``{"error": {"message", "type", "code", "param"}}``.

    Clients read ``error.message`` (the ``openai`` client, LangChain, ``llm``) and pick their
    exception class from the status.
    """
    kind, default = _ERROR_KINDS.get(
        status,
        ("invalid_request_error", "invalid_request")
        if status < 500
        else ("server_error", "server_error"),
    )
    return {"error": {"message": message, "type": kind, "param": param, "code": code or default}}


def error(status: int, message: str, code: str | None = None, param: str | None = None) -> Response:
    """An error response in OpenAI's shape."""
    return JSONResponse(error_body(status, message, code, param), status_code=status)


def _error_message(body: bytes) -> str:
    """The reason in an error body another layer wrote (``{"detail": …}``, or plain text)."""
    text = body.decode("utf-8", "replace").strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    if isinstance(parsed, dict) and "detail" in parsed:
        detail = parsed["detail"]
        return detail if isinstance(detail, str) else json.dumps(detail)
    return text


def openai_errors(scope: MutableMapping[str, Any], send: Send) -> Send:
    """``send`` for a ``/v1/*`` request: every error response rewritten in OpenAI's shape.

    Any other request's ``send`` comes back as it is.

    The API's own errors already have that shape; the ones other layers answer with (the
    ``Guard``'s refusals, LangGraph's authentication, an unknown route) come as
    ``{"detail": …}`` or plain text, which OpenAI clients show only as "Error code: 401".
    Such a body is collected and sent again as ``{"error": {…}}``, with its status kept.
    """
    path: str = scope.get("path", "")
    if scope["type"] != "http" or not (path == "/v1" or path.startswith("/v1/")):
        return send
    status = 0
    start: Message = {}
    chunks: list[bytes] = []

    async def sending(message: Message) -> None:
        nonlocal status, start
        if message["type"] == "http.response.start" and message["status"] >= 400:
            status, start = message["status"], message
            return
        if not status or message["type"] != "http.response.body":
            await send(message)
            return
        chunks.append(message.get("body", b""))
        if message.get("more_body", False):
            return
        body = b"".join(chunks)
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        if not (isinstance(parsed, dict) and isinstance(parsed.get("error"), dict)):
            body = json.dumps(error_body(status, _error_message(body) or str(status))).encode()
        headers = [
            (k, v)
            for k, v in start.get("headers", [])
            if k.lower() not in (b"content-length", b"content-type")
        ]
        headers += [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return sending


def sources_markdown(sources: list[Source]) -> str:
    """The answer's sources as a numbered markdown list (note and heading)."""
    if not sources:
        return ""
    lines = [source_line(n, s) for n, s in enumerate(sources, start=1)]
    return "\n\nSources:\n" + "\n".join(lines)


def _text(content: Any) -> tuple[str, list[str]]:
    """A message's text and its images (``data:`` URIs or base64) from OpenAI content."""
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        raise Refused(400, "message content must be a string or a list of parts")
    texts, images = [], []
    for part in content:
        if not isinstance(part, dict):
            raise Refused(400, "each content part must be an object")
        if part.get("type") == "text":
            texts.append(str(part.get("text", "")))
        elif part.get("type") == "image_url":
            url = part.get("image_url")
            images.append(str(url.get("url", "") if isinstance(url, dict) else url))
    return "\n".join(texts), images


def parse_messages(messages: Any) -> tuple[str, list[str], list[BaseMessage]]:
    """The question (last user message), its images, and the conversation before it."""
    if not isinstance(messages, list) or not messages:
        raise Refused(400, "messages must be a non-empty list")
    *earlier, last = messages
    if not isinstance(last, dict) or last.get("role") != "user":
        raise Refused(400, "the last message must be the user's question")
    question, images = _text(last.get("content"))
    if not question.strip():
        raise Refused(400, "the question is empty")
    check_question(question)
    history: list[BaseMessage] = []
    for message in earlier[-MAX_HISTORY_MESSAGES:]:
        if not isinstance(message, dict):
            raise Refused(400, "each message must be an object")
        text, _ = _text(message.get("content") or "")
        if message.get("role") in ("user", "assistant"):
            check_question(text, "an earlier message")  # bounded as a question is
        if message.get("role") == "user":
            history.append(HumanMessage(text))
        elif message.get("role") == "assistant":
            history.append(AIMessage(text))
        # system and tool messages are the client's business: the graph has its own prompts
    return question, images, history


class ChatCompletions:
    """The API's routes over one served graph (its own in-process threads)."""

    def __init__(self, models: ModelProvider | None = None, limit: RunLimit | None = None) -> None:
        """Serve the graph with ``models`` (Ollama when ``None``; tests pass fakes).

        ``limit`` bounds the questions run at once and waiting (default: :func:`run_limit`).
        """
        self._saver = InMemorySaver()
        self._graph = build_served_graph(checkpointer=self._saver, models=models)
        self.limit = limit or run_limit()

    @property
    def routes(self) -> list[BaseRoute]:
        """The routes to mount."""
        return [
            Route("/v1/models", self.models, methods=["GET"]),
            Route("/v1/chat/completions", self.completions, methods=["POST"]),
        ]

    async def models(self, request: Request) -> Response:
        """``GET /v1/models``: one model per collection.

        ---
        summary: The models, one per collection (OpenAI API)
        tags: [OpenAI API]
        """
        rows = await run_in_threadpool(describe_collections, server_settings())
        data = [
            {"id": row["name"], "object": "model", "created": 0, "owned_by": "notes-rag"}
            for row in rows
        ]
        return JSONResponse({"object": "list", "data": data})

    async def completions(self, request: Request) -> Response:
        """``POST /v1/chat/completions``, streamed (SSE) or not.

        ---
        summary: A chat completion, streamed (SSE) or not (OpenAI API)
        tags: [OpenAI API]
        """
        try:
            body = await request.json()
        except (ValueError, RecursionError):  # the Guard refuses deep JSON first
            return error(400, "the body is not JSON (or nests too deep)", "invalid_json")
        if not isinstance(body, dict):
            return error(400, "the body must be an object", "invalid_request")
        model = body.get("model")
        try:  # a question the server would refuse costs no lookup
            question, images, history = parse_messages(body.get("messages"))
        except Refused as exc:
            return error(exc.status, exc.message, "invalid_request", "messages")
        # A place before anything runs on a thread (the collection's lookup included).
        try:
            place = self.limit.admit()
        except Busy as exc:
            refused = error(429, str(exc), "rate_limit_exceeded")
            refused.headers["retry-after"] = str(RETRY_AFTER)
            return refused
        return await self._complete(request, body, model, question, images, history, place)

    async def _complete(
        self,
        request: Request,
        body: dict[str, Any],
        model: Any,
        question: str,
        images: list[str],
        history: list[BaseMessage],
        place: Place,
    ) -> Response:
        """The question with its place: refused (the place given back), streamed or answered.

        Once the completion exists, it gives the place back (its thread, or its closing).
        """
        try:
            refusal = await self._refusal(body, model, question, images)
        except BaseException:
            place.leave()
            raise
        if isinstance(refusal, Response):
            place.leave()
            return refusal
        run_input, context = refusal
        options = body.get("stream_options") or {}
        completion = _Completion(
            self._graph, self._saver, str(model), run_input, history, context, place
        )
        if body.get("stream"):
            return _Stream(completion, include_usage=bool(options.get("include_usage")))
        try:
            result = await completion.answer(request)
        except Stopped:  # the client left: nobody reads this
            return Response(status_code=499)
        except Exception as exc:  # the graph's own one-line errors (Ollama down, ...)
            return error(502, str(exc) or type(exc).__name__, "upstream_error")
        return JSONResponse(completion.response(result))

    async def _refusal(
        self, body: dict[str, Any], model: Any, question: str, images: list[str]
    ) -> Response | tuple[dict[str, Any], Any]:
        """The error response for a question the server refuses, else its input and context."""
        # One lookup of the named collection per request; the listing (note counts of every
        # collection) only for the error message.
        exists = (
            isinstance(model, str)
            and bool(model)
            and await run_in_threadpool(
                lambda: (
                    get_collection(replace(server_settings(), collection_name=model)) is not None
                )
            )
        )
        if not exists:
            rows = await run_in_threadpool(describe_collections, server_settings())
            listed = ", ".join(row["name"] for row in rows) or "none: load notes with `rag load`"
            return error(
                404,
                f"The model '{model}' does not exist: the models are the collections ({listed})",
                "model_not_found",
                "model",
            )
        try:
            run_input: dict[str, Any] = {"question": question}
            if images:
                run_input["images"] = images
            check_run({"input": run_input, "context": {"collection_name": model}})
            context = ServedContext(collection_name=model)
        except Refused as exc:
            return error(exc.status, exc.message, "invalid_request")
        except ValueError as exc:
            return error(422, str(exc), "invalid_request")
        if not isinstance(body.get("stream_options") or {}, dict):
            return error(400, "stream_options must be an object", param="stream_options")
        return run_input, context


async def _until_disconnected(receive: Receive) -> None:
    """Return once the client has gone (its request already read whole)."""
    while (await receive())["type"] != "http.disconnect":
        pass


class _Stream(StreamingResponse):
    """A completion's events, streamed; however the response ends, the run stops.

    A client that left mid-stream, or before the first event was sent, takes its question
    back: its run stops and a run never started gives its place back.
    """

    def __init__(self, completion: _Completion, include_usage: bool) -> None:
        super().__init__(
            completion.events(include_usage=include_usage),
            media_type="text/event-stream",
            headers={"cache-control": "no-cache"},
        )
        self.completion = completion

    async def __call__(self, scope: Scope, receive: Receive, send: AsgiSend) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.completion.close()


class _Completion:
    """One chat completion: the run on a short-lived thread, then its answer and sources.

    The run waits for its ``place`` first and gives it back when its thread is done; it
    stops (:meth:`close`) when its client leaves.
    """

    def __init__(
        self,
        graph: Any,
        saver: InMemorySaver,
        model: str,
        run_input: dict[str, Any],
        history: list[BaseMessage],
        context: Any,
        place: Place,
    ) -> None:
        self.graph, self.saver, self.model = graph, saver, model
        self.run_input, self.history, self.context = run_input, history, context
        self.place = place
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.thread = f"openai-{uuid.uuid4().hex}"
        # Every chat-model call of the run reports Ollama's counts (``prompt_eval_count``,
        # ``eval_count``) as the reply's ``usage_metadata``; this handler adds them up.
        self._usage = UsageMetadataCallbackHandler()
        self.stop = Stop()
        self._lock = threading.Lock()
        self._running = False  # a thread runs the graph (it gives the place back)

    @property
    def _config(self) -> dict[str, Any]:
        return {
            "configurable": {"thread_id": self.thread},
            "callbacks": [self._usage, self.stop],
        }

    def close(self) -> None:
        """The client is gone or served: stop the run; a run never started gives its place back."""
        self.stop.stop()
        with self._lock:
            running = self._running
        if not running:
            self.place.leave()

    def _run_in_thread(self, work: Callable[[], None]) -> None:
        """Run ``work`` on a thread of its own, which gives the place back when done."""

        def run() -> None:
            try:
                work()
            finally:
                self.place.leave()

        with self._lock:
            if self.stop.stopped:
                return  # gone while it waited for its place
            self._running = True
        threading.Thread(target=run, daemon=True, name=self.id).start()

    async def answer(self, request: Request) -> dict[str, Any]:
        """The whole run (non-streamed); :class:`Stopped` when the client leaves meanwhile."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Any] = loop.create_future()

        def settle(future: asyncio.Future[Any], outcome: Any, failed: bool) -> None:
            if future.done():
                return
            if failed:
                future.set_exception(outcome)
            else:
                future.set_result(outcome)

        def work() -> None:
            outcome: Any
            try:
                outcome, failed = self.run(), False
            except Exception as exc:
                outcome, failed = exc, True
            try:
                loop.call_soon_threadsafe(settle, done, outcome, failed)
            except RuntimeError:  # the server's loop has closed: nobody waits
                pass

        gone: asyncio.Future[Any] = asyncio.ensure_future(_until_disconnected(request.receive))
        try:
            started: asyncio.Future[Any] = asyncio.ensure_future(self.place.start())
            await asyncio.wait({started, gone}, return_when=asyncio.FIRST_COMPLETED)
            if not started.done():
                started.cancel()
                raise Stopped("the client left while its question waited")
            self._run_in_thread(work)
            await asyncio.wait({done, gone}, return_when=asyncio.FIRST_COMPLETED)
            if not done.done():
                raise Stopped("the client left")
            return done.result()
        finally:
            gone.cancel()
            done.cancel()  # what the stopped run still ends with is nobody's
            self.close()

    def usage(self) -> dict[str, int]:
        """The run's tokens in OpenAI's shape: every chat-model call of the question, summed.

        That is the routing questions, a follow-up's rewrite, each chunk's grade, the answer
        and its check (or the vision model's reply, or the calculator's extraction), each as
        the model server counted it. Embedding the question is not counted (Ollama's
        embeddings API reports no counts to LangChain), nor is the calculator's own
        arithmetic (no model).
        """
        counts = list(self._usage.usage_metadata.values())
        prompt = sum(c.get("input_tokens", 0) for c in counts)
        completion = sum(c.get("output_tokens", 0) for c in counts)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }

    def _seed(self) -> None:
        if self.history:
            self.graph.update_state(self._config, {"messages": self.history}, as_node="generate")

    def run(self) -> dict[str, Any]:
        """The whole run; the thread is forgotten afterwards."""
        try:
            self._seed()
            return self.graph.invoke(self.run_input, self._config, context=self.context)
        finally:
            self.saver.delete_thread(self.thread)

    def stream(self) -> Iterator[tuple[str, Any]]:
        """``("token", text)`` for each answer token, then ``("result", final values)``."""
        try:
            self._seed()
            filters: dict[str, ReasoningFilter] = {}
            final: dict[str, Any] = {}
            modes = ["messages", "values"]
            for mode, payload in self.graph.stream(
                self.run_input, self._config, context=self.context, stream_mode=modes
            ):
                if self.stop.stopped:
                    return  # the client left: the graph's stream is closed here
                if mode == "values":
                    final = payload
                    continue
                chunk, metadata = payload
                node = metadata.get("langgraph_node")
                if node not in _ANSWERING:
                    continue
                _, text = filters.setdefault(node, ReasoningFilter()).feed(message_text(chunk))
                if text:
                    yield "token", text
            yield "result", final
        finally:
            self.saver.delete_thread(self.thread)

    def response(self, result: dict[str, Any]) -> dict[str, Any]:
        """The non-streamed answer in OpenAI's shape, with ``sources`` beside it."""
        sources = result.get("sources") or []
        content = (result.get("answer") or "") + sources_markdown(sources)
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": self.usage(),
            "sources": sources,
            "no_answer_reason": result.get("no_answer_reason"),
        }

    def _event(self, choices: list[dict[str, Any]], **extra: Any) -> str:
        chunk = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
            **extra,
        }
        return f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"

    def _chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        return self._event([{"index": 0, "delta": delta, "finish_reason": finish}], **extra)

    async def events(self, include_usage: bool = False) -> AsyncIterator[str]:
        """Server-sent events: the answer's tokens as they come, its sources, ``[DONE]``.

        With ``include_usage`` (``stream_options``), as OpenAI does: every chunk carries
        ``usage: null`` and a last chunk before ``[DONE]`` has no choices and the run's usage.
        """
        extra: dict[str, Any] = {"usage": None} if include_usage else {}
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

        def put(item: tuple[str, Any]) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the server's loop has closed: nobody reads
                self.stop.stop()

        def produce() -> None:
            try:
                for item in self.stream():
                    put(item)
            except Stopped:
                pass  # the client left: nobody reads
            except Exception as exc:  # reported to the client as the stream's last event
                put(("error", str(exc) or repr(exc)))

        # The stream opens at once; a question that waits for a place waits inside it.
        yield self._chunk({"role": "assistant", "content": ""}, **extra)
        await self.place.start()
        self._run_in_thread(produce)
        streamed = ""
        while True:
            kind, payload = await queue.get()
            if kind == "token":
                streamed += payload
                yield self._chunk({"content": payload}, **extra)
            elif kind == "error":
                body = {
                    "error": {"message": payload, "type": "server_error", "code": "upstream_error"}
                }
                yield f"data: {json.dumps(body)}\n\n"
                break
            else:
                sources = payload.get("sources") or []
                answer = payload.get("answer") or ""
                if streamed:  # only what the answer adds: "your notes don't say this"
                    added = unstreamed_tail(answer, streamed)
                    text = f"\n\n{added}" if added else ""
                else:
                    text = answer
                tail = text + sources_markdown(sources)
                if tail:
                    yield self._chunk({"content": tail}, **extra)
                yield self._chunk(
                    {},
                    "stop",
                    sources=sources,
                    no_answer_reason=payload.get("no_answer_reason"),
                    **extra,
                )
                if include_usage:
                    yield self._event([], usage=self.usage())
                break
        yield "data: [DONE]\n\n"


ROUTES: list[BaseRoute] = ChatCompletions().routes
