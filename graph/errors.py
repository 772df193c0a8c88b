"""Errors users see: one clear line each, with the exit code the CLI returns."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx


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


@contextmanager
def ollama_errors(base_url: str, model: str) -> Iterator[None]:
    """Turn the Ollama client's exceptions into one-line ``ServiceError`` messages."""
    # Imported here: the ollama package is only needed once a model is really called.
    from ollama import ResponseError

    try:
        yield
    except ResponseError as exc:
        text = str(getattr(exc, "error", exc))
        if exc.status_code == 404 and "not found" in text.lower():
            raise ServiceError(
                f"Ollama model '{model}' is not available: run `ollama pull {model}`"
            ) from exc
        raise ServiceError(f"Ollama at {base_url} failed for model '{model}': {text}") from exc
    except httpx.TimeoutException as exc:
        raise ServiceError(
            f"Ollama at {base_url} did not answer in time (model '{model}'); "
            "raise request_timeout / --timeout or check the server load"
        ) from exc
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        raise ServiceError(
            f"the connection to Ollama at {base_url} broke off mid-response (model '{model}')"
        ) from exc
    except (ConnectionError, httpx.ConnectError) as exc:
        raise ServiceError(
            f"cannot reach Ollama at {base_url}: start it with `ollama serve` "
            "or point OLLAMA_HOST / --ollama-host at it"
        ) from exc
