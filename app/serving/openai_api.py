"""An OpenAI-compatible chat API on the served graph (``/v1/models``, ``/v1/chat/completions``)."""

from __future__ import annotations

from starlette.routing import BaseRoute

ROUTES: list[BaseRoute] = []
