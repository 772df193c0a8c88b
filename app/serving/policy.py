"""The serving policy: who may reach the server and what one request may cost.

Read once from the server's environment (``.env``); a request can change none of it.
"""

from __future__ import annotations

import functools
import hmac
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

#: Browser origins that are the user's own: pages served from this machine.
LOOPBACK_ORIGIN = re.compile(r"^https?://(localhost|127\.0\.0\.1|\[::1\])(:[0-9]+)?$")
#: LangGraph Studio (a hosted page that talks to the local server from the user's browser).
STUDIO_ORIGINS = ("https://smith.langchain.com", "https://eu.smith.langchain.com")
#: Host names that reach this machine only; anything else may be a DNS-rebound name.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")

#: The biggest request body read (413 above it): room for one question's images in base64.
DEFAULT_MAX_REQUEST_BYTES = 32 * 1024 * 1024
#: The longest question: a long pasted question is a few thousand characters.
DEFAULT_MAX_QUESTION_CHARS = 16_000
#: The largest ``metadata`` of a run, thread, assistant or cron, as JSON: labels, not data.
DEFAULT_MAX_METADATA_BYTES = 16 * 1024
#: The largest ``values`` of one state update through the API, as JSON (Studio's edits).
DEFAULT_MAX_STATE_UPDATE_BYTES = 256 * 1024
#: Runs the LangGraph API holds at once, under way or waiting (the page, MCP, Studio, the API):
#: ``langgraph dev`` runs one at a time; more than this queued is a client in a loop.
DEFAULT_MAX_QUEUED_RUNS = 8


def _items(environ: Mapping[str, str], name: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in environ.get(name, "").split(",") if item.strip())


def _whole(environ: Mapping[str, str], name: str, default: int) -> int:
    raw = environ.get(name, "").strip()
    try:
        return int(raw) if raw else default
    except ValueError:
        raise ValueError(f"{name} must be a whole number, got {raw!r}") from None


#: The refusal of a request without the token (one line, whichever layer refuses it).
TOKEN_NEEDED = "this server needs its token: send 'Authorization: Bearer <token>' (RAG_API_TOKEN)"


class ExposureError(RuntimeError):
    """The server would be reachable from other machines without a token."""


@dataclass(frozen=True)
class ServingPolicy:
    """Who may call the served API, and the bounds of one request."""

    token: str = ""
    """``RAG_API_TOKEN``: when set, every request needs ``Authorization: Bearer <token>``
    (the scheme in any case)."""
    allowed_origins: tuple[str, ...] = ()
    """``RAG_ALLOWED_ORIGINS``: browser or desktop-app origins allowed besides loopback and
    Studio (e.g. ``app://obsidian.md``), comma-separated."""
    allowed_hosts: tuple[str, ...] = ()
    """``RAG_ALLOWED_HOSTS``: host names the server answers besides loopback (e.g. the name
    a reverse proxy or the LAN uses), comma-separated."""
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    """``RAG_MAX_REQUEST_BYTES``: bodies above it are refused (413) before being read."""
    max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS
    """``RAG_MAX_QUESTION_CHARS``: longer questions are refused (422), by every way in."""
    max_metadata_bytes: int = DEFAULT_MAX_METADATA_BYTES
    """``RAG_MAX_METADATA_BYTES``: larger ``metadata`` (as JSON) is refused (422)."""
    max_state_update_bytes: int = DEFAULT_MAX_STATE_UPDATE_BYTES
    """``RAG_MAX_STATE_UPDATE_BYTES``: larger state updates (their values, as JSON) are
    refused (422)."""
    served_models: tuple[str, ...] = ()
    """``RAG_SERVED_MODELS``: Ollama models a run may choose besides the server's own chat,
    vision and embedding models, comma-separated."""
    max_queued_runs: int = DEFAULT_MAX_QUEUED_RUNS
    """``RAG_MAX_QUEUED_RUNS``: runs held at once, under way or waiting; one more is refused
    (429) before it is stored."""
    max_num_ctx: int = 0
    """``RAG_MAX_NUM_CTX``: the largest context window a run may ask for (0: the server's
    own ``num_ctx``)."""
    webhooks: bool = False
    """``RAG_WEBHOOKS``: allow runs to name a webhook (off: refused)."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServingPolicy:
        """The policy in the server's environment (or in ``environ``, before it starts)."""
        environ = os.environ if environ is None else environ
        bounds = {
            "max_request_bytes": _whole(
                environ, "RAG_MAX_REQUEST_BYTES", DEFAULT_MAX_REQUEST_BYTES
            ),
            "max_question_chars": _whole(
                environ, "RAG_MAX_QUESTION_CHARS", DEFAULT_MAX_QUESTION_CHARS
            ),
            "max_metadata_bytes": _whole(
                environ, "RAG_MAX_METADATA_BYTES", DEFAULT_MAX_METADATA_BYTES
            ),
            "max_state_update_bytes": _whole(
                environ, "RAG_MAX_STATE_UPDATE_BYTES", DEFAULT_MAX_STATE_UPDATE_BYTES
            ),
            "max_queued_runs": _whole(environ, "RAG_MAX_QUEUED_RUNS", DEFAULT_MAX_QUEUED_RUNS),
            "max_num_ctx": _whole(environ, "RAG_MAX_NUM_CTX", 0),
        }
        if bounds["max_queued_runs"] < 1:
            raise ValueError(
                f"RAG_MAX_QUEUED_RUNS must be at least 1, got {bounds['max_queued_runs']}"
            )
        return cls(
            token=environ.get("RAG_API_TOKEN", "").strip(),
            allowed_origins=tuple(o.rstrip("/") for o in _items(environ, "RAG_ALLOWED_ORIGINS")),
            allowed_hosts=tuple(h.lower() for h in _items(environ, "RAG_ALLOWED_HOSTS")),
            served_models=_items(environ, "RAG_SERVED_MODELS"),
            **bounds,
            webhooks=environ.get("RAG_WEBHOOKS", "").strip().lower() in ("1", "true", "on"),
        )

    def authorized(self, authorization: str | None) -> bool:
        """Whether a request's ``Authorization`` header carries the token (or none is set)."""
        if not self.token:
            return True
        # The scheme is case-insensitive (RFC 9110 11.1), the token is not.
        scheme, _, credentials = (authorization or "").partition(" ")
        matches = hmac.compare_digest(credentials.lstrip(" ").encode(), self.token.encode())
        return scheme.lower() == "bearer" and matches

    def origin_allowed(self, origin: str) -> bool:
        """Whether a page of ``origin`` may call the API (loopback, Studio, configured)."""
        origin = origin.rstrip("/")
        return (
            bool(LOOPBACK_ORIGIN.match(origin))
            or origin in STUDIO_ORIGINS
            or origin in self.allowed_origins
        )

    def host_allowed(self, host_header: str) -> bool:
        """Whether the ``Host`` a request names is this machine or a configured name."""
        host = _host_name(host_header)
        return host in LOOPBACK_HOSTS or host in self.allowed_hosts

    def check_exposure(self, api_url: str) -> None:
        """Refuse to serve beyond loopback (another address, a tunnel) without a token."""
        host = _host_name(urlsplit(api_url).netloc) if api_url else "127.0.0.1"
        if host not in LOOPBACK_HOSTS and not self.token:
            raise ExposureError(
                f"refusing to serve on {api_url} without a token: other machines could read "
                "your notes. Set RAG_API_TOKEN (clients then send 'Authorization: Bearer "
                "<token>'), or serve on 127.0.0.1"
            )


def _host_name(netloc: str) -> str:
    """``Host`` header → lower-case host name without port (IPv6 kept in brackets)."""
    netloc = netloc.strip().lower().rsplit("@", 1)[-1]
    if netloc.startswith("["):
        return netloc[: netloc.find("]") + 1] if "]" in netloc else netloc
    return netloc.split(":", 1)[0]


@functools.cache
def serving_policy() -> ServingPolicy:
    """The server's policy, read once."""
    return ServingPolicy.from_env()
