"""Obsidian-flavoured vaults: frontmatter, wikilinks, embeds, tags; tag and folder filters."""

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

import graph.index.obsidian as obsidian_syntax
from app.cli.main import main
from graph.builder import build_graph
from graph.context import Context
from graph.errors import ConfigError
from graph.index.catalog import catalog_path
from graph.index.chunking import partition_note
from graph.index.filters import NoteFilter, filter_keys
from graph.index.ingest import load_notes
from graph.index.note_images import resolve_note_image
from graph.index.obsidian import PARSER_VERSION, Vault, parser_for, prepare_note
from graph.index.retrieval import search_notes
from graph.index.vectorstore import IndexInfo, get_collection, scan
from tests.fakes import FakeModels

VAULT = Path(__file__).resolve().parents[1] / "obsidian_vault"
NOTES = {
    "Baking/Focaccia.md",
    "Baking/Sourdough Starter.md",
    "Journal/Été 2025/2025-03-01 Café ☕.md",
    "Journal/Broken frontmatter.md",
    "Network/Router Setup.md",
    "Network/WireGuard VPN.md",
}


@pytest.fixture
def vault(tmp_path):
    target = tmp_path / "vault"
    shutil.copytree(VAULT, target)
    return target


@pytest.fixture
def warnings():
    return []


@pytest.fixture
def obsidian(ctx, vault, models, warnings):
    """The test vault loaded into an embedded Chroma in a temp folder."""
    load_notes(ctx, vault, models.embedder, notify=warnings.append)
    return ctx


def stored(ctx):
    chunks = []
    for page in scan(get_collection(ctx), ["documents", "metadatas"]):
        chunks.extend(zip(page["documents"], page["metadatas"]))
    return chunks


# --- parsing ---------------------------------------------------------------------------


def test_frontmatter_list_form_becomes_metadata_not_text():
    text = (
        "---\ntitle: Sourdough Starter\naliases: [Levain, Starter care]\n"
        "tags: [recipe, '#Baking']\ncreated: 2025-02-11\n---\n# Starter\n\nFeed daily.\n"
    )
    markdown, meta = prepare_note(text)
    assert markdown.strip() == "# Starter\n\nFeed daily."
    assert meta.title == "Sourdough Starter"
    assert meta.aliases == ["Levain", "Starter care"]
    assert meta.tags == ["recipe", "baking"]
    assert meta.dates == {"created": "2025-02-11"}
    assert meta.names == ["Sourdough Starter", "Levain", "Starter care"]


def test_frontmatter_string_forms_and_block_list():
    _, meta = prepare_note(
        '---\ntags: "#recipe, bread #Sweet"\naliases: Flatbread, Fougasse\n---\n'
    )
    assert meta.tags == ["recipe", "bread", "sweet"] and meta.aliases == ["Flatbread", "Fougasse"]
    _, meta = prepare_note("---\ntags:\n  - homelab\n  - network/vpn\n---\nbody\n")
    assert meta.tags == ["homelab", "network/vpn"]


def test_malformed_frontmatter_warns_and_the_note_still_loads():
    markdown, meta = prepare_note("---\ntags: [unclosed\n---\n# Kayak\n\nJune trip.\n")
    assert markdown.strip() == "# Kayak\n\nJune trip."
    assert meta.warnings and "not valid YAML" in meta.warnings[0]
    _, meta = prepare_note("---\n- just\n- a list\n---\nbody\n")
    assert "not a set of key: value pairs" in meta.warnings[0]


def test_unclosed_dashes_are_not_frontmatter():
    markdown, meta = prepare_note("---\nnot: frontmatter\n")
    assert markdown == "---\nnot: frontmatter\n" and not meta.warnings


def test_wikilinks_render_as_text_and_are_kept_as_links():
    text = "See [[Note.md]], [[Note|the alias]], [[Other note#Heading#Sub]] and [[Note#^abc123]]."
    markdown, meta = prepare_note(text)
    assert markdown == "See Note, the alias, Other note > Heading > Sub and Note."
    assert meta.links == ["Note", "Other note"]


def test_inline_tags_are_collected_and_removed_from_headings_only():
    text = (
        "#homelab #network\n# Focaccia #recipe #baking\n\nA #kitchen/fermentation note, "
        "not https://x.org/a#frag nor `#code` nor #123.\n\n```\n#include <stdio.h>\n```\n"
    )
    markdown, meta = prepare_note(text)
    assert meta.tags == ["homelab", "network", "recipe", "baking", "kitchen/fermentation"]
    lines = markdown.splitlines()
    assert lines[0] == "# Focaccia"  # the tags-only line is gone, the heading has no tags
    assert "A #kitchen/fermentation note" in markdown  # body text stays as written
    assert "#include <stdio.h>" in markdown


def test_callouts_lose_their_marker_and_properties_read_as_text():
    text = (
        "> [!warning] Hooch\n> Pour it off.\n\n> [!tip]-\n> Bake hot.\n\n"
        "owner:: [[Alice]]\nalias:: Gateway\n- created:: 2025-01-02\n"
    )
    markdown, meta = prepare_note(text + "embed:: <script>\n")
    assert "[!" not in markdown and "::" not in markdown
    assert "> Hooch" in markdown and "> Tip" in markdown
    # a fact of the note stays where it was written, as text; its metadata is recorded
    assert markdown.endswith("> Bake hot.\n\nowner: Alice\nembed: &lt;script>\n")
    assert meta.aliases == ["Gateway"] and meta.links == ["Alice"]


def test_frontmatter_properties_read_as_text_under_the_opening_heading():
    text = (
        "---\ntitle: Gary Pruett\naliases: [Gary]\ntags: [people]\ncreated: 2025-02-11\n"
        "phone: 07700 900412\nmy_role: [plumber, '[[Gas Safe]]']\nvisited: 2026-03-03\n"
        "cash_only: true\ndoors: 19:30\nzip: 01234\naddress:\n  town: Millbrook\nnotes:\n"
        "cssclasses: wide\nembed: '<iframe src=x>'\nbig: 0x" + "f" * 5000 + "\n---\n\n"
        "# Gary Pruett\n\nPlumber.\n"
    )
    markdown, meta = prepare_note(text)
    # as written (YAML 1.1 reads 19:30 as 1170, 01234 as 668), and as text, not HTML
    assert markdown == (
        "\n# Gary Pruett\n\n- phone: 07700 900412\n- my role: plumber, Gas Safe\n"
        "- visited: 2026-03-03\n- cash only: true\n- doors: 19:30\n- zip: 01234\n"
        "- embed: &lt;iframe src=x>\n- big: 0x" + "f" * 5000 + "\n\n\nPlumber.\n"
    )
    assert partition_note(markdown)[0].text.endswith("Plumber.")  # the note's text all there
    assert meta.links == ["Gas Safe"] and meta.names == ["Gary Pruett", "Gary"]
    assert meta.tags == ["people"] and meta.dates["created"] == "2025-02-11"
    markdown, _ = prepare_note("---\nrehearsal: Thursdays 19:30\n---\nBand practice.\n")
    assert markdown == "- rehearsal: Thursdays 19:30\n\nBand practice.\n"  # no heading: on top
    # key:: value lines before any text are the note's own properties too (Logseq's)
    markdown, meta = prepare_note("#band\nday:: Thursday\nalias:: Practice\n\n# Band\nLoud.\n")
    assert markdown == "\n# Band\n\n- day: Thursday\n\nLoud.\n" and meta.aliases == ["Practice"]


def _as_parser_1(text: str) -> str:
    """``text`` as parser 1 read it: every property metadata, none shown."""
    original = obsidian_syntax.shown_key
    obsidian_syntax.shown_key = lambda key: ""
    try:
        return prepare_note(text)[0]
    finally:
        obsidian_syntax.shown_key = original


def test_a_note_without_properties_reads_as_parser_1_read_it():
    # Upgrading re-reads (and embeds again) only the notes parser_for says 2 for: every other
    # note must read exactly as before. Checked on every note of the test vault and the sets.
    notes = [*VAULT.rglob("*.md"), *(VAULT.parents[0] / "eval_sets").rglob("*.md")]
    needed = {path: parser_for(path.read_text("utf-8")) for path in notes}
    assert 100 < sum(v == 1 for v in needed.values()) and 20 < sum(v == 2 for v in needed.values())
    for path, version in needed.items():
        text = path.read_text("utf-8")
        if version == 1:
            assert prepare_note(text)[0] == _as_parser_1(text), path
        else:
            assert prepare_note(text)[0] != _as_parser_1(text), path
    assert parser_for("---\ntags: [a]\nAliases: b\nupdated: 2025-01-01\n---\nx\ntags:: c\n") == 1
    assert parser_for("---\n  phone: 1\n---\n") == parser_for("a\n- rating:: 4\n") == 2
    # keys of other shapes are whatever YAML makes of them: read again
    for frontmatter in ("tags:x: 1", '"title:": x', "-phone: 1", "{? x\n  tags : 1}", "? x"):
        assert parser_for(f"---\n{frontmatter}\n---\nbody\n") == 2, frontmatter


def test_code_keeps_wikilink_syntax():
    markdown, _ = prepare_note("Use `[[x]]` here.\n\n```\n[[not a link]]\n```\n")
    assert "`[[x]]`" in markdown and "[[not a link]]" in markdown


def test_embeds_resolve_like_obsidian(vault):
    found = Vault.open(vault)
    assert found.attachment_folder == "attachments"
    # attachment folder; a sub path inside it; a unique name elsewhere; nothing
    assert found.resolve("wireguard-topology.png", "Network/WireGuard VPN.md") == (
        "attachments/wireguard-topology.png"
    )
    assert found.resolve("diagrams/lan map.png", "Network/Router Setup.md") == (
        "attachments/diagrams/lan map.png"
    )
    assert found.resolve("crumb shot.png", "Journal/x.md") == "Baking/img/crumb shot.png"
    assert found.resolve("missing.png", "Journal/x.md") is None
    assert found.resolve("../../etc/passwd.png", "Journal/x.md") is None
    (vault / ".obsidian" / "secret.png").write_bytes(b"x")
    assert found.resolve("secret.png", "x.md") is None  # hidden folders never
    markdown, meta = prepare_note(
        "![[wireguard-topology.png|300]] ![[Router Setup]] ![[Notes#Part]]",
        "Network/WireGuard VPN.md",
        found,
    )
    assert markdown == (
        "![wireguard topology](<../attachments/wireguard-topology.png>) Router Setup Notes > Part"
    )
    assert meta.links == ["Router Setup", "Notes"]


# --- loading the vault ----------------------------------------------------------------


def test_vault_chunks_hold_no_obsidian_syntax(obsidian, warnings):
    chunks = stored(obsidian)
    assert {m["source"] for _, m in chunks} == NOTES  # no hidden folder, no empty note
    for text, _ in chunks:
        for marker in ("[[", "]]", "[!", "tags:", "aliases:", "created:", "::", "---"):
            assert marker not in text, (marker, text)
        assert "Zanzibar" not in text  # .obsidian/ and .trash/ notes
    headings = {m["heading"] for _, m in chunks}
    assert "Focaccia" in headings and not any("#" in h for h in headings)
    assert any("Broken frontmatter.md" in w and "not valid YAML" in w for w in warnings)


def test_percent_encoded_markdown_image_resolves_and_stays_confined(vault):
    root = str(vault)
    note = "Network/x.md"
    assert resolve_note_image(root, note, "../attachments/diagrams/lan%20map.png") == (
        vault / "attachments" / "diagrams" / "lan map.png"
    )
    assert resolve_note_image(root, note, "..%2F..%2F..%2Fetc%2Fpasswd") is None
    (vault / ".obsidian" / "x y.png").write_bytes(
        (vault / "attachments/rack-photo.png").read_bytes()
    )
    assert resolve_note_image(root, note, "../.obsidian/x%20y.png") is None


def test_vault_metadata_per_chunk(obsidian):
    meta = {m["source"]: m for _, m in stored(obsidian)}
    starter = meta["Baking/Sourdough Starter.md"]
    assert starter["title"] == "Sourdough Starter"
    assert json.loads(starter["aliases"]) == ["Levain", "Starter care"]
    assert json.loads(starter["tags"]) == ["recipe", "baking", "kitchen/fermentation"]
    assert starter["created"] == "2025-02-11"
    assert json.loads(meta["Baking/Focaccia.md"]["dates"]) == {
        "updated": "2025-03-02",
        "modified": "2025-03-02",
    }
    assert starter["tag:kitchen"] is True and starter["tag:kitchen/fermentation"] is True
    assert starter["folder:Baking"] is True and starter["parser"] == PARSER_VERSION
    assert json.loads(meta["Baking/Focaccia.md"]["links"]) == ["Sourdough Starter"]
    assert IndexInfo.of(get_collection(obsidian)).parser_version == PARSER_VERSION


def test_embedded_images_are_stored_and_resolve_inside_the_vault(obsidian, vault):
    images = {(m["source"], i) for _, m in stored(obsidian) for i in json.loads(m["images"])}
    assert ("Network/WireGuard VPN.md", "../attachments/wireguard-topology.png") in images
    assert ("Network/Router Setup.md", "../attachments/diagrams/lan map.png") in images
    assert ("Baking/Focaccia.md", "img/crumb shot.png") in images
    assert (
        "Journal/Été 2025/2025-03-01 Café ☕.md",
        "../../attachments/rack-photo.png",
    ) in images  # plain
    for source, reference in images:
        assert resolve_note_image(str(vault), source, reference) is not None


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_a_property_is_searched_and_read_with_its_note(ctx, vault, models, mode):
    (vault / "People").mkdir()
    (vault / "People" / "Gary Pruett.md").write_text(
        "---\nrole: plumber\nphone: 07700 900412\n---\n# Gary Pruett\n\nDoes no gas work.\n"
    )
    load_notes(ctx, vault, models.embedder)
    best = search_notes(ctx, models.embedder, "plumber phone", mode=mode).ranked[0]
    # the note's first section, under its heading, holds its properties as text
    assert (best["source"], best["heading"]) == ("People/Gary Pruett.md", "Gary Pruett")
    assert "phone: 07700 900412" in best["content"] and "Does no gas work." in best["content"]


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_an_alias_finds_its_note(obsidian, models, mode):
    best = search_notes(obsidian, models.embedder, "flatbread", mode=mode).ranked[0]
    # found through the alias, in the note's text chunk (not a chunk of raw YAML)
    assert (best["source"], best["heading"]) == ("Baking/Focaccia.md", "Focaccia")


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
@pytest.mark.parametrize(
    ("tags", "folders", "expected"),
    [
        (["baking"], [], {"Baking/Focaccia.md", "Baking/Sourdough Starter.md"}),
        (["#Network"], [], {"Network/Router Setup.md", "Network/WireGuard VPN.md"}),
        (["network/vpn"], [], {"Network/WireGuard VPN.md"}),
        (
            [],
            ["Journal/"],
            {"Journal/Été 2025/2025-03-01 Café ☕.md", "Journal/Broken frontmatter.md"},
        ),
        (["journal", "homelab"], ["Journal", "Baking"], {"Journal/Été 2025/2025-03-01 Café ☕.md"}),
        ([], ["Journal/Été 2025"], {"Journal/Été 2025/2025-03-01 Café ☕.md"}),
    ],
)
def test_tag_and_folder_filters_limit_both_rankings(
    obsidian, models, mode, tags, folders, expected
):
    context = replace(obsidian, tags=tags, folders=folders, score_threshold=0.0, k=20)
    # words of every note, so an unfiltered search would return all of them
    question = "starter router wireguard café kayak focaccia tunnel gateway"
    found = {
        c["source"] for c in search_notes(context, models.embedder, question, mode=mode).ranked
    }
    assert found == expected
    unfiltered = replace(obsidian, score_threshold=0.0, k=20)
    assert len(
        {c["source"] for c in search_notes(unfiltered, models.embedder, question).ranked}
    ) > len(expected)


def test_bm25_hits_outside_the_filter_are_dropped(obsidian, models):
    from graph.index.catalog import Catalog

    collection = get_collection(obsidian)
    catalog = Catalog.open(obsidian, collection)
    everywhere = catalog.search("router wireguard starter", 10)
    only = NoteFilter.of(["baking"], [])
    assert only is not None
    filtered = catalog.search("router wireguard starter", 10, only)
    assert filtered and set(filtered) < set(everywhere)
    sources = {
        m["source"] for m in collection.get(ids=filtered, include=["metadatas"])["metadatas"]
    }
    assert sources == {"Baking/Sourdough Starter.md", "Baking/Focaccia.md"}


def test_filter_matching_nothing_is_explained(obsidian):
    context = replace(obsidian, tags=["gardening"], folders=["Baking"])
    out = build_graph(models=FakeModels()).invoke(
        {"question": "what about tomatoes?"}, context=context
    )
    assert out["no_answer_reason"] == "filter_empty"
    assert "#gardening" in out["answer"] and "Baking/" in out["answer"]


def test_filter_where_and_catalog_keys_agree(tmp_path):
    from graph.index.catalog import Catalog

    chosen = NoteFilter.of(["a", "B/c"], ["x/"])
    assert chosen.where() == {
        "$and": [{"$or": [{"tag:a": True}, {"tag:b/c": True}]}, {"folder:x": True}]
    }
    chunks = {
        "in": filter_keys("x/y/n.md", ["b/c"]),
        "other-folder": filter_keys("y/n.md", ["a"]),
        "parent-tag-only": filter_keys("x/n.md", ["b"]),  # a parent tag is not a child
    }

    class Stub:
        id = "stub"
        metadata: dict = {}

        def get(self, include, limit, offset):
            page = list(chunks)[offset : offset + limit]
            return {
                "ids": page,
                "documents": ["word"] * len(page),
                "metadatas": [chunks[i] for i in page],
            }

    catalog = Catalog.open(Context(chroma_persist_directory=str(tmp_path)), Stub())
    assert sorted(catalog.search("word", 10)) == sorted(chunks)
    assert catalog.search("word", 10, chosen) == ["in"]
    assert NoteFilter.of([" "], ["./"]) is None


def test_a_collection_of_parser_1_still_searches_by_tag(obsidian, models):
    # parser 1 recorded tags and folders; only parser 0 collections must be loaded again
    collection = get_collection(obsidian)
    replace(IndexInfo.of(collection), parser_version=1).record(collection)
    found = search_notes(replace(obsidian, tags=["baking"]), models.embedder, "starter").ranked
    assert {c["source"] for c in found} <= {"Baking/Focaccia.md", "Baking/Sourdough Starter.md"}
    assert found


def test_old_parser_collection_is_re_read_whole(ctx, vault, models):
    load_notes(ctx, vault, models.embedder)
    collection = get_collection(ctx)
    # make it look like a collection the parser before this one wrote
    got = collection.get(include=["metadatas"])
    collection.update(ids=got["ids"], metadatas=[{**m, "parser": 0} for m in got["metadatas"]])
    replace(IndexInfo.of(collection), parser_version=0).record(collection)
    catalog_path(ctx, collection).unlink()  # that parser's loads kept no catalog
    with pytest.raises(ConfigError) as refused:
        search_notes(replace(ctx, tags=["baking"]), models.embedder, "starter")
    assert str(refused.value) == (
        f"collection {ctx.collection_name!r} was loaded before tags and folders were "
        "recorded: run `rag load` again to search by tag or folder"
    )
    lines = []
    report = load_notes(ctx, vault, models.embedder, notify=lines.append)
    # every note is read again, the empty one (remembered by the old load) included
    assert sorted(report.updated) == sorted(NOTES | {"Inbox/Empty note.md"})
    assert not report.unchanged
    assert any("another note parser" in line for line in lines)
    assert IndexInfo.of(get_collection(ctx)).parser_version == PARSER_VERSION
    assert load_notes(ctx, vault, models.embedder).unchanged  # and then it is settled


# --- the image branch and the command line ---------------------------------------------


def test_embedded_image_reaches_the_vision_model(obsidian):
    models = FakeModels(capabilities={"llama3.1:8b": {"vision"}})
    out = build_graph(models=models).invoke(
        {"question": "based on the image: what does the wireguard topology diagram show?"},
        context=obsidian,
    )
    assert out["route"] == "image"
    # the best chunk's image first (the Journal note's own image is a plain markdown one)
    assert out["sources"][0] == {"path": "attachments/wireguard-topology.png", "heading": ""}
    assert models.calls("vision") == 1


def test_query_uses_the_collections_embedding_model(vault, tmp_path, capsys):
    db = ["--persist-dir", str(tmp_path / "db"), "-n", "vault"]
    models = FakeModels()
    assert main(["load", "-f", str(vault), "-e", "all-minilm", *db], models=models) == 0
    capsys.readouterr()
    assert main(["query", "-q", "flatbread", "--json", *db], models=models) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["rank"] == 1 and rows[0]["source"] == "Baking/Focaccia.md"
    assert set(rows[0]) == {"rank", "score", "source", "heading", "tags", "content"}
    assert "recipe" in rows[0]["tags"] and "Dimple the dough" in rows[0]["content"]
    # an explicit, different choice is still an error
    assert main(["query", "-q", "flatbread", "-e", "nomic-embed-text", *db], models=models) == 2
    assert "leave the embedding model unset" in capsys.readouterr().err


def test_environment_choice_counts_as_explicit(vault, tmp_path, capsys, monkeypatch):
    db = ["--persist-dir", str(tmp_path / "db"), "-n", "vault"]
    models = FakeModels()
    assert main(["load", "-f", str(vault), "-e", "all-minilm", *db], models=models) == 0
    monkeypatch.setenv("RAG_EMBEDDING_MODEL", "nomic-embed-text")
    assert main(["query", "-q", "flatbread", *db], models=models) == 2
    monkeypatch.setenv("RAG_EMBEDDING_MODEL", "all-minilm")
    assert main(["query", "-q", "flatbread", *db], models=models) == 0


def test_graph_uses_the_collections_embedding_model(obsidian):
    context = replace(obsidian, embedding_model="")  # a run context that names none
    out = build_graph(models=FakeModels()).invoke(
        {"question": "how often is a starter in the fridge fed?"}, context=context
    )
    assert out["no_answer_reason"] is None
    assert "Baking/Sourdough Starter.md" in {s["path"] for s in out["sources"]}


def test_query_flags_filter_by_tag_and_folder(vault, tmp_path, capsys):
    db = ["--persist-dir", str(tmp_path / "db"), "-n", "vault", "--threshold", "0"]
    models = FakeModels()
    assert (
        main(
            ["load", "-f", str(vault), "-n", "vault", "--persist-dir", str(tmp_path / "db")],
            models=models,
        )
        == 0
    )
    capsys.readouterr()
    argv = ["query", "-q", "starter router café", "--json", "-k", "20", *db]
    assert main([*argv, "--tag", "journal", "--tag", "recipe"], models=models) == 0
    sources = {r["source"] for r in json.loads(capsys.readouterr().out)}
    assert sources == {
        "Journal/Été 2025/2025-03-01 Café ☕.md",
        "Baking/Focaccia.md",
        "Baking/Sourdough Starter.md",
    }
    assert main([*argv, "--folder", "Network"], models=models) == 0
    sources = {r["source"] for r in json.loads(capsys.readouterr().out)}
    assert sources == {"Network/Router Setup.md", "Network/WireGuard VPN.md"}
    assert main(["query", "-q", "x", "--tag", "nothing", *db], models=models) == 0
    assert "no note matches the filter (tag #nothing)" in capsys.readouterr().out


def test_a_vault_s_properties_reach_rag_query_as_text(vault, tmp_path, capsys):
    # A vault may come from someone else: a property is searched and shown as the note's
    # text, and markup in one neither runs nor hides the rest of the note.
    (vault / "People").mkdir()
    (vault / "People" / "Gary Pruett.md").write_text(
        "---\nphone: 07700 900412\nsite: '<iframe src=http://x>'\n---\n# Gary Pruett\n\n"
        "Plumber, no gas work.\n"
    )
    db = ["--persist-dir", str(tmp_path / "db"), "-n", "vault"]
    models = FakeModels()
    assert main(["load", "-f", str(vault), *db], models=models) == 0
    capsys.readouterr()
    argv = ["query", "-q", "Gary phone", "--json", "-k", "1", "--threshold", "0", *db]
    assert main(argv, models=models) == 0
    [found] = json.loads(capsys.readouterr().out)
    assert found["source"] == "People/Gary Pruett.md"
    assert "phone: 07700 900412" in json.dumps(found)
    assert "site: <iframe src=http://x>" in json.dumps(found) and "no gas work" in json.dumps(found)


def test_ask_with_a_folder_cites_only_notes_there(vault, tmp_path, capsys):
    db = ["--persist-dir", str(tmp_path / "db"), "-n", "vault", "--threshold", "0"]
    models = FakeModels()
    assert main(["load", "-f", str(vault), *db[:4]], models=models) == 0
    capsys.readouterr()
    question = ["ask", "-q", "how is the router and the starter set up?", "--json", *db]
    assert main([*question, "--folder", "Baking"], models=models) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sources"] and {s["path"] for s in out["sources"]} <= {
        "Baking/Focaccia.md",
        "Baking/Sourdough Starter.md",
    }
    assert main([*question, "--tag", "gardening"], models=models) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["no_answer_reason"] == "filter_empty" and "#gardening" in out["answer"]


def test_list_settings_from_environment_and_checked(monkeypatch):
    monkeypatch.setenv("RAG_TAGS", "recipe, baking")
    assert Context().tags == ["recipe", "baking"]
    assert Context(tags=["x"]).tags == ["x"]  # explicit wins
    assert Context().folders == [] and Context().folders is not Context().folders
    with pytest.raises(ValueError, match="tags must be a list of strings"):
        Context(tags="recipe")  # type: ignore[arg-type]
