"""The chat page at ``/ui`` and the small read-only routes it needs (outside ``/ui``).

The page is plain HTML, CSS and JavaScript from ``static/`` (no build step, nothing fetched
from elsewhere: a strict Content-Security-Policy keeps it to this origin). It holds no data:
``langgraph-api`` lets every ``GET /ui…`` through without authentication, so everything the
page shows comes from routes that need the token when one is configured:

- the LangGraph API on the same origin: threads, streamed runs, a thread's state;
- ``GET /rag/collections``: the collections (name, notes, chunks), the server's default one,
  and per collection the Obsidian vault name when its notes folder is a vault;
- ``GET /rag/facets?collection=``: the collection's own tags and folders, for the filters;
- ``GET /rag/section?collection=&source=&heading=``: a cited section's text, from the index
  (read-only: never the notes folder).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from app.serving.context import server_settings
from graph.context import Context
from graph.errors import ConfigError, RagError
from graph.index.browse import collection_facets, notes_folder, section_text
from graph.index.catalog import describe_collections
from graph.index.vectorstore import get_collection, reading

STATIC = Path(__file__).with_name("static")

#: Everything the page loads comes from this origin; no inline script or style, no frames,
#: no form posts: the page talks to the API with ``fetch`` only.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'"
)
_PAGE_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    # The files change with the project: a browser revalidates instead of keeping an old page.
    "cache-control": "no-cache",
}
_FILES = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
    "icon.svg": "image/svg+xml",
}
#: Longest ``source`` or ``heading`` accepted by ``/rag/section`` (a note path, a heading path).
MAX_PARAM_CHARS = 2000


def _static(name: str) -> Response:
    # Read on each request (a few kB), so an edited page shows without restarting the server.
    return Response((STATIC / name).read_bytes(), media_type=_FILES[name], headers=_PAGE_HEADERS)


def page(request: Request) -> Response:
    """``GET /ui``: the page itself (no data in it).

    ---
    summary: The chat page
    tags: [Chat page]
    """
    return _static("index.html")


def asset(request: Request) -> Response:
    """``GET /ui/{name}``: the page's script, style and icon; nothing else.

    ---
    summary: The chat page's script, style and icon
    tags: [Chat page]
    """
    name = request.path_params["name"]
    if name not in _FILES or name == "index.html":
        return JSONResponse({"detail": "not found"}, status_code=404, headers=_PAGE_HEADERS)
    return _static(name)


def _error(exc: RagError) -> JSONResponse:
    status = 400 if isinstance(exc, ConfigError) else 503
    return JSONResponse({"detail": str(exc)}, status_code=status)


def _context(collection: str | None) -> Context:
    """The server's settings, for ``collection`` (its default collection when none)."""
    settings = server_settings()
    return replace(settings, collection_name=collection) if collection else settings


def _param(request: Request, name: str, required: bool = True) -> str:
    value = request.query_params.get(name)
    if value is None and required:
        raise ConfigError(f"the query parameter {name!r} is missing")
    if value is not None and len(value) > MAX_PARAM_CHARS:
        raise ConfigError(f"the query parameter {name!r} is too long")
    return value or ""


def collections(request: Request) -> Response:
    """``GET /rag/collections``: what there is to ask, and how to link to its notes.

    ---
    summary: The collections, and how to link to their notes
    tags: [Chat page]
    """
    try:
        settings = server_settings()
        rows = describe_collections(settings)
        for row in rows:
            row["vault"] = _vault(_context(row["name"]))
    except RagError as exc:
        return _error(exc)
    return JSONResponse({"default": settings.collection_name, "collections": rows})


def _vault(context: Context) -> str:
    def read() -> str:
        collection = get_collection(context)
        return notes_folder(collection).vault if collection is not None else ""

    return reading(context, read)


def facets(request: Request) -> Response:
    """``GET /rag/facets?collection=``: the collection's tags and folders, most used first.

    ---
    summary: A collection's tags and folders, most used first
    tags: [Chat page]
    """
    try:
        context = _context(_param(request, "collection"))
        found = collection_facets(context)
    except RagError as exc:
        return _error(exc)
    if found is None:
        return JSONResponse(
            {"detail": f"there is no collection {context.collection_name!r}"}, status_code=404
        )
    return JSONResponse(
        {
            "collection": context.collection_name,
            "filterable": found.filterable,
            "tags": [_facet(f) for f in found.tags],
            "folders": [_facet(f) for f in found.folders],
        }
    )


def _facet(facet: Any) -> dict[str, Any]:
    return {"name": facet.name, "notes": facet.notes}


def section(request: Request) -> Response:
    """``GET /rag/section?collection=&source=&heading=``: a cited section, from the index.

    ---
    summary: A cited note section, from the index
    tags: [Chat page]
    """
    try:
        context = _context(_param(request, "collection"))
        source, heading = _param(request, "source"), _param(request, "heading", required=False)
        found = section_text(context, source, heading)
    except RagError as exc:
        return _error(exc)
    if found is None:
        return JSONResponse(
            {"detail": f"the index has no section {heading!r} of {source!r}"}, status_code=404
        )
    return JSONResponse(
        {
            "collection": context.collection_name,
            "source": found.source,
            "heading": found.heading,
            "text": found.text,
            "chunks": found.chunks,
        }
    )


# Every route is a plain function: Starlette runs it in its thread pool, so file, Chroma and
# SQLite reads never hold up the server's event loop.
ROUTES: list[BaseRoute] = [
    Route("/ui", page, methods=["GET"]),
    Route("/ui/", page, methods=["GET"]),
    Route("/ui/{name}", asset, methods=["GET"]),
    Route("/rag/collections", collections, methods=["GET"]),
    Route("/rag/facets", facets, methods=["GET"]),
    Route("/rag/section", section, methods=["GET"]),
]
