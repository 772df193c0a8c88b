"""The chat page's files and data routes, in-process over a real embedded index.

The routes are driven through the served app (``app.serving.http.app``, with its ``Guard``)
by Starlette's TestClient; the token is LangGraph's auth, in front of this app, and is
checked end to end in ``tests/integration_tests/test_chat_page.py``.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from app.serving.context import server_settings
from app.serving.page import CSP, STATIC
from graph.index.browse import forget_facets, join_chunks
from graph.index.ingest import LoadOptions, load_notes

ROOT = Path(__file__).resolve().parents[2]
VAULT = ROOT / "tests" / "obsidian_vault"
VAULT_NAME = "My Vault"
LONG_SECTION = " ".join(f"Step {n}: fold the dough gently." for n in range(1, 40))


@pytest.fixture
def index(tmp_path, ctx, sample_notes, models, monkeypatch):
    """ "notes" (plain folder) and "vault" (an Obsidian vault) in one embedded index, served."""
    notes = tmp_path / "notes"
    shutil.copytree(sample_notes, notes)
    # One section long enough to be split into overlapping chunks (chunk_size 300 below).
    (notes / "long.md").write_text("# Long\n\n## Proofing\n\n" + LONG_SECTION + "\n")
    vault = tmp_path / VAULT_NAME
    shutil.copytree(VAULT, vault)
    load_notes(ctx, notes, models.embedder, LoadOptions(chunk_size=300, chunk_overlap=80))
    load_notes(replace(ctx, collection_name="vault"), vault, models.embedder)
    monkeypatch.setenv("RAG_CHROMA_DIR", ctx.chroma_persist_directory)
    monkeypatch.setenv("RAG_COLLECTION", "notes")
    server_settings.cache_clear()
    forget_facets()
    yield {"notes": notes, "vault": vault, "ctx": ctx, "models": models}
    forget_facets()


@pytest.fixture
def client():
    from app.serving.http import app

    return TestClient(app, base_url="http://127.0.0.1:2024")


# ----------------------------------------------------------------------------- the page's files


def test_the_content_security_policy_allows_only_the_pages_own_origin(client):
    # The served header itself, directive by directive: whatever the page needs beyond its
    # own origin (a CDN, inline script, a frame) must be a deliberate change here too.
    served = client.get("/ui").headers["content-security-policy"]
    directives = {}
    for part in served.split(";"):
        name, *sources = part.split()
        directives[name] = set(sources)
    assert directives == {
        "default-src": {"'self'"},
        "script-src": {"'self'"},
        "style-src": {"'self'"},
        "img-src": {"'self'", "data:", "blob:"},
        "connect-src": {"'self'"},
        "base-uri": {"'none'"},
        "frame-ancestors": {"'none'"},
        "form-action": {"'none'"},
    }


def test_the_page_is_served_with_a_strict_content_security_policy(client):
    page = client.get("/ui")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert page.headers["content-security-policy"] == CSP
    assert "default-src 'self'" in CSP and "connect-src 'self'" in CSP
    assert page.headers["x-content-type-options"] == "nosniff"
    assert client.get("/ui/").text == page.text
    # Only files of the page's own, each with its own type (nosniff makes browsers check).
    for name, kind in (
        ("app.js", "text/javascript"),
        ("style.css", "text/css"),
        ("icon.svg", "image/svg+xml"),
    ):
        answer = client.get(f"/ui/{name}")
        assert answer.status_code == 200 and answer.headers["content-type"].startswith(kind)
        assert answer.content == (STATIC / name).read_bytes()
    for name in ("page.py", "index.htm", "..%2Fpage.py", "%2E%2E%2Fhttp.py", "static"):
        assert client.get(f"/ui/{name}").status_code == 404, name


def test_the_page_loads_nothing_from_elsewhere_and_nothing_inline():
    html = (STATIC / "index.html").read_text()
    # No inline script or style (the policy would refuse them): every script has a src.
    assert re.findall(r"<script(?![^>]*\bsrc=)", html) == []
    assert "<style" not in html and " style=" not in html and " on" + "click=" not in html
    for name in ("index.html", "app.js", "style.css", "icon.svg"):
        # The SVG namespace is a name, not something fetched.
        text = (STATIC / name).read_text().replace('xmlns="http://www.w3.org/2000/svg"', "")
        outside = re.findall(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text)
        assert outside == [], name
        assert "@import" not in text and "url(" not in text, name
    assert all(ref.startswith("/ui/") for ref in re.findall(r'(?:src|href)="([^"#]+)"', html)), (
        "every file the page loads is under /ui/"
    )


# ----------------------------------------------------------------------------- the data routes


def test_collections_name_their_vault_but_not_its_folder(client, index):
    answer = client.get("/rag/collections")
    assert answer.status_code == 200
    body = answer.json()
    assert body["default"] == "notes"
    rows = {row["name"]: row for row in body["collections"]}
    assert set(rows) == {"notes", "vault"}
    assert rows["notes"]["notes"] == 6 and rows["vault"]["notes"] == 6
    assert rows["vault"]["vault"] == VAULT_NAME  # the folder has .obsidian/
    assert rows["notes"]["vault"] == ""
    assert str(index["vault"]) not in answer.text  # the folder's name only, never its path


def test_facets_are_the_collections_own_tags_and_folders(client, index):
    vault = client.get("/rag/facets", params={"collection": "vault"}).json()
    assert vault["collection"] == "vault"
    tags = {f["name"]: f["notes"] for f in vault["tags"]}
    folders = {f["name"]: f["notes"] for f in vault["folders"]}
    assert vault["filterable"] is True
    # Nested tags count for their parents too, as the filter matches them.
    assert tags["kitchen/fermentation"] == 1 and tags["kitchen"] >= 1
    assert tags["baking"] == 2 and tags["network/vpn"] == 1
    assert folders == {"Baking": 2, "Journal": 2, "Network": 2, "Journal/Été 2025": 1}
    counts = [f["notes"] for f in vault["tags"]]
    assert counts == sorted(counts, reverse=True)  # the most used first

    notes = client.get("/rag/facets", params={"collection": "notes"}).json()
    assert notes["tags"] == []
    assert {f["name"] for f in notes["folders"]} == {"career", "personal", "tech"}


def test_facets_follow_a_reload_of_the_collection(client, index):
    before = client.get("/rag/facets", params={"collection": "vault"}).json()
    assert "pastry" not in {f["name"] for f in before["tags"]}
    note = index["vault"] / "Baking" / "Focaccia.md"
    note.write_text(note.read_text() + "\n\n#pastry\n")
    vault_ctx = replace(index["ctx"], collection_name="vault")
    load_notes(vault_ctx, index["vault"], index["models"].embedder)
    after = client.get("/rag/facets", params={"collection": "vault"}).json()
    assert {"name": "pastry", "notes": 1} in after["tags"]


def test_facets_of_a_missing_or_misnamed_collection(client, index):
    missing = client.get("/rag/facets", params={"collection": "nothing-here"})
    assert missing.status_code == 404
    assert missing.json() == {"detail": "there is no collection 'nothing-here'"}
    refused = client.get("/rag/facets", params={"collection": "../x"})
    assert refused.status_code == 400 and "invalid collection name" in refused.json()["detail"]
    assert client.get("/rag/facets").status_code == 400


def test_a_section_is_read_from_the_index_not_the_notes_folder(client, index):
    params = {"collection": "notes", "source": "long.md", "heading": "Long > Proofing"}
    first = client.get("/rag/section", params=params).json()
    assert (first["collection"], first["source"], first["heading"]) == (
        "notes",
        "long.md",
        "Long > Proofing",
    )  # the page shows these above the text
    assert first["chunks"] > 1  # split into overlapping chunks, joined back as it was
    assert first["text"] == LONG_SECTION
    # The index is what the answer came from: a changed or deleted note does not change it.
    (index["notes"] / "long.md").unlink()
    again = client.get("/rag/section", params=params).json()
    assert again["text"] == first["text"]


def test_a_section_of_a_vault_note_and_one_that_is_not_there(client, index):
    found = client.get(
        "/rag/section",
        params={
            "collection": "vault",
            "source": "Network/Router Setup.md",
            "heading": "Router Setup > Addressing",
        },
    )
    assert found.status_code == 200
    assert "192.168.50.0/24" in found.json()["text"]
    missing = {"collection": "vault", "source": "Network/Router Setup.md", "heading": "Nope"}
    not_there = client.get("/rag/section", params=missing)
    assert not_there.status_code == 404
    assert not_there.json() == {
        "detail": "the index has no section 'Nope' of 'Network/Router Setup.md'"
    }
    no_source = client.get("/rag/section", params={"collection": "vault"})
    assert no_source.status_code == 400
    assert no_source.json()["detail"] == "the query parameter 'source' is missing"
    too_long = client.get("/rag/section", params={"collection": "vault", "source": "x" * 5000})
    assert too_long.status_code == 400
    assert too_long.json()["detail"] == "the query parameter 'source' is too long"


def test_the_data_routes_sit_behind_the_guard(client, index):
    assert client.get("/rag/collections").status_code == 200
    from_elsewhere = client.get("/rag/collections", headers={"origin": "https://evil.example"})
    assert from_elsewhere.status_code == 403
    rebound = client.get("/rag/collections", headers={"host": "evil.example"})
    assert rebound.status_code == 403


# --------------------------------------------------------------------------- joining chunks


def test_joining_chunks_writes_each_overlap_once():
    assert join_chunks(["one two three four five six", "four five six seven"]) == (
        "one two three four five six seven"
    )
    # No overlap (or one too short to be the splitter's): a paragraph break between them.
    assert join_chunks(["first part.", "second part."]) == "first part.\n\nsecond part."
    # A cut before ". " (the sentence separator) lost only the space before the next chunk.
    assert join_chunks(["It rose", ". Then it fell"]) == "It rose. Then it fell"
    assert join_chunks(["ends with a", "a begins"]) == "ends with a\n\na begins"
    assert join_chunks([]) == "" and join_chunks(["alone"]) == "alone"


def test_every_project_route_documents_itself_in_openapi():
    # langgraph-api builds its OpenAPI schema from each route's docstring at start-up, read
    # as YAML after the last "---" (Starlette's convention); one that is not YAML is logged
    # with a traceback. Starlette's own generator raises instead.
    from starlette.schemas import SchemaGenerator

    from app.serving.http import app

    schema = SchemaGenerator({"openapi": "3.0.0"}).get_schema(app.routes)
    documented = {
        (path, method): operation["summary"]
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
    }
    assert {path for path, _ in documented} == {
        route.path for route in app.routes if getattr(route, "methods", None)
    }
    assert all(summary.strip() for summary in documented.values())


@pytest.mark.parametrize("name", ["index.html", "nope.js"])
def test_ui_serves_only_the_pages_own_assets(client, name):
    refused = client.get(f"/ui/{name}")
    assert refused.status_code == 404
    assert refused.json() == {"detail": "not found"}
    assert "default-src 'self'" in refused.headers["content-security-policy"]
