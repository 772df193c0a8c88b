"""Errors users see: one clear line each, with the exit code the CLI returns.

Ollama's failures have one mapping, :func:`ollama_failure`, whether they come from the
``ollama`` package (behind langchain-ollama) or from this project's own HTTP client
(``graph.ollama``): each kind of failure is its own ``OllamaError`` subclass, so a caller
that must tell them apart (``rag doctor``) tests the type, never the text.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

import httpx

E = TypeVar("E", bound=BaseException)


class RagError(Exception):
    """A failure explained in one line; ``exit_code`` follows the CLI's convention."""

    exit_code = 1


# Also a ValueError / RuntimeError: the LangGraph server shows the message of those types to
# API clients and replaces any other exception's message with "An internal error occurred".
class ConfigError(RagError, ValueError):
    """Bad arguments or settings (exit 2)."""

    exit_code = 2


class ServiceError(RagError, RuntimeError):
    """Ollama or Chroma unreachable, too slow, or a model missing (exit 3)."""

    exit_code = 3


class OllamaError(ServiceError):
    """An Ollama request failed; the subclass says how, the message names the server."""


class OllamaUnreachable(OllamaError):
    """No connection could be made (refused, unknown host, the connection timed out)."""


class OllamaTimeout(OllamaError):
    """Connected, but the answer did not come within the request timeout."""


class OllamaBrokenOff(OllamaError):
    """The connection broke off while the request or its answer was on its way."""


class OllamaHTTPError(OllamaError):
    """The server answered with an HTTP error status (``status``; -1: none was given)."""

    def __init__(self, message: str, status: int = -1) -> None:
        super().__init__(message)
        self.status = status


class OllamaModelMissing(OllamaHTTPError):
    """The model is not pulled: HTTP 404 saying it is not found."""

    def __init__(self, message: str, status: int = 404) -> None:
        super().__init__(message, status)


class OllamaBadReply(OllamaError):
    """The server answered, but not with the JSON object Ollama's API documents."""


def http_failure(base_url: str, model: str, status: int, text: str) -> OllamaHTTPError:
    """The error for an HTTP error answer (``model``: the one the request named, or '')."""
    if status == 404 and model and "not found" in text.lower():
        return OllamaModelMissing(
            f"Ollama model '{model}' is not available: run `ollama pull {model}`", status
        )
    where = f" for model '{model}'" if model else ""
    code = f" (HTTP {status})" if status > 0 else ""
    return OllamaHTTPError(f"Ollama at {base_url} failed{where}: {text}{code}", status)


def ollama_failure(exc: BaseException, base_url: str, model: str) -> OllamaError | None:
    """What ``exc``, raised while talking to Ollama, means; ``None`` if it is no such failure.

    The ``ollama`` package turns a refused connection into the built-in ``ConnectionError``
    and an HTTP error into ``ResponseError``; timeouts and broken connections reach the
    caller as httpx's own exceptions, as they do from ``graph.ollama.OllamaClient``.
    """
    if isinstance(exc, OllamaError):
        return exc
    model_note = f" (model '{model}')" if model else ""
    if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)) or (
        isinstance(exc, ConnectionError)
        and not isinstance(exc, (ConnectionResetError, BrokenPipeError))
    ):
        return OllamaUnreachable(
            f"cannot reach Ollama at {base_url}: start it with `ollama serve` "
            "or point OLLAMA_HOST / --ollama-host at it"
        )
    if isinstance(exc, httpx.TimeoutException):
        return OllamaTimeout(
            f"Ollama at {base_url} did not answer in time{model_note}; "
            "raise request_timeout / --timeout or check the server load"
        )
    if isinstance(
        exc,
        (
            httpx.RemoteProtocolError,
            httpx.ReadError,
            httpx.WriteError,
            ConnectionResetError,
            BrokenPipeError,
        ),
    ):
        return OllamaBrokenOff(
            f"the connection to Ollama at {base_url} broke off mid-response{model_note}"
        )
    if isinstance(exc, httpx.TransportError):  # e.g. an unsupported URL scheme, a proxy's
        return OllamaError(f"the request to Ollama at {base_url} failed: {_named(exc)}")
    response_error = _response_error_type()
    if response_error is not None and isinstance(exc, response_error):
        text = str(getattr(exc, "error", exc))
        return http_failure(base_url, model, int(getattr(exc, "status_code", -1)), text)
    return None


def _response_error_type() -> type[BaseException] | None:
    """``ollama.ResponseError`` if the package is imported (else nothing can have raised it)."""
    import sys

    module = sys.modules.get("ollama")
    return getattr(module, "ResponseError", None) if module is not None else None


def _named(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextmanager
def ollama_errors(base_url: str, model: str) -> Iterator[None]:
    """Turn a failed Ollama call into its one-line ``OllamaError`` (see :func:`ollama_failure`).

    Exceptions that are no Ollama failure (a bug, an interrupt) pass through unchanged.
    """
    try:
        yield
    except Exception as exc:
        mapped = ollama_failure(exc, base_url, model)
        if mapped is None or mapped is exc:
            raise
        raise mapped from exc


def find_cause(exc: BaseException, kind: type[E]) -> E | None:
    """The first exception of type ``kind`` in ``exc``'s chain (``exc`` itself first).

    Frameworks wrap what a node raised (LangGraph, Chroma's bindings): the chain is followed
    through ``__cause__``, else ``__context__``, and stops at a loop.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
