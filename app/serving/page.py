"""The chat page at ``/ui`` and the small read-only routes it needs (outside ``/ui``)."""

from __future__ import annotations

from starlette.routing import BaseRoute

ROUTES: list[BaseRoute] = []
