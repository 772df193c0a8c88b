"""The one HTTP client this project uses to call Ollama's API itself (JSON in, JSON out).

Chat and embeddings go through langchain-ollama; what it does not offer (``/api/show``,
``/api/version``, the doctor's timed requests) goes through :class:`OllamaClient`. Plain
HTTP rather than the ``ollama`` package, whose response types drop the fields this project
reads from newer servers (``/api/show``'s ``thinking``). Its failures are the same
``OllamaError`` types that :func:`graph.errors.ollama_errors` makes of langchain-ollama's.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from graph.errors import OllamaBadReply, http_failure, ollama_errors

if TYPE_CHECKING:
    import ssl

    import httpx


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The one TLS context every Ollama client of this process verifies servers with.

    httpx builds a context for each client it creates, reading every CA certificate of the
    system (SSL_CERT_FILE / SSL_CERT_DIR, else certifi's), about 80 ms of CPU each time.
    langchain-ollama creates two clients (sync and async) for each chat model and embedder,
    so a fresh `rag ask` spent most of a second building contexts it could share. Built
    once, the same way httpx builds it, so verification is unchanged.
    """
    import httpx

    return httpx.create_ssl_context()


def client_options(timeout: float) -> dict[str, Any]:
    """The httpx options of every client that talks to Ollama: its timeout and TLS context."""
    return {"timeout": timeout, "verify": tls_context()}


class OllamaClient:
    """Requests to the Ollama server at ``base_url``; every failure is an ``OllamaError``.

    ``transport`` replaces the network (tests pass ``httpx.MockTransport``).
    """

    def __init__(
        self, base_url: str, timeout: float, *, transport: httpx.BaseTransport | None = None
    ) -> None:
        """Talk to the server at ``base_url``, waiting at most ``timeout`` seconds a request."""
        self.base_url, self.timeout, self.transport = base_url, timeout, transport

    def get(self, path: str) -> dict[str, Any]:
        """GET ``path``'s JSON object."""
        return self._send("GET", path, None)

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body`` to ``path``; the answer's JSON object."""
        return self._send("POST", path, body)

    def _send(self, method: str, path: str, body: dict[str, Any] | None) -> dict[str, Any]:
        import httpx

        model = str((body or {}).get("model", ""))
        with ollama_errors(self.base_url, model):
            with httpx.Client(transport=self.transport, **client_options(self.timeout)) as client:
                response = client.request(method, self.base_url + path, json=body)
        if response.status_code >= 400:
            raise http_failure(self.base_url, model, response.status_code, _error_text(response))
        try:
            answer = response.json()
        except ValueError as exc:
            raise OllamaBadReply(
                f"Ollama at {self.base_url} answered {path} with something that is not JSON "
                f"({_excerpt(response.text)}): is OLLAMA_HOST / --ollama-host an Ollama server?"
            ) from exc
        if not isinstance(answer, dict):
            raise OllamaBadReply(
                f"Ollama at {self.base_url} answered {path} with JSON that is not an object "
                f"({_excerpt(response.text)})"
            )
        return answer


def _error_text(response: httpx.Response) -> str:
    """Ollama's ``{"error": ...}`` text, else the body itself."""
    try:
        answer = response.json()
    except ValueError:
        return _excerpt(response.text) or response.reason_phrase
    if isinstance(answer, dict) and "error" in answer:
        return str(answer["error"])
    return _excerpt(response.text)


def _excerpt(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"
