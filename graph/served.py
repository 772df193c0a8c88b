"""The trust boundary of the graph served over HTTP (``langgraph dev``, Studio, ``/mcp``).

A served run's input and ``context`` come from whoever can reach the server — with a
permissive browser policy, any web page the user visits. Such a run may ask questions and
tune retrieval, but it may not choose where the server connects or stores data, and it
may not make the server read a file: endpoints and storage come from the server's own
environment, and images must arrive as bytes (base64 or ``data:`` URIs).

Python callers who build ``Context(...)`` themselves and run ``graph.builder.graph`` keep
full control; only ``graph.builder.served_graph`` (what ``langgraph.json`` serves) checks.
"""

from __future__ import annotations

from dataclasses import fields

from graph.context import Context
from graph.errors import ConfigError


def check_served_context(context: Context) -> None:
    """Refuse a run whose context points the server at other endpoints or storage."""
    server = Context()  # the server's own settings: defaults and its environment
    for f in fields(Context):
        if not f.metadata["server_only"]:
            continue
        if getattr(context, f.name) != getattr(server, f.name):
            raise ConfigError(
                f"{f.name} cannot be set by a request to the server; it is configured where "
                f"the server runs ({f.metadata['env']})"
            )
