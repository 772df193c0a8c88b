"""The chat page at ``/ui``, driven in a real browser against ``langgraph dev`` and the stand-in.

Debian's Chromium (``/usr/bin/chromium``; ``make test`` installs it when missing) through
Playwright, headless, one browser for the whole worker. The server runs the project's
``langgraph.json`` with a token (``RAG_API_TOKEN``), as private serving does: the page must
ask for it and send it on its own calls. Every request the page makes is recorded, and a
test fails if one leaves the server's origin, if the Content-Security-Policy refused
anything, or if the page's script threw.

Screenshots at desktop and phone width are written to ``tests/artifacts/chat-page/``
(``RAG_TEST_ARTIFACTS`` elsewhere).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import struct
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import (
    Browser,
    ConsoleMessage,
    Locator,
    Page,
    Request,
    Route,
    expect,
    sync_playwright,
)

from tests.integration_tests.conftest import HTTP, ROOT, VISION_MODEL, langgraph_dev, rag

CHROMIUM = Path(os.environ.get("RAG_TEST_CHROMIUM", "/usr/bin/chromium"))
#: Headless, and nothing of its own on the network (no updates, no sync, no field trials):
#: the test checks that every request is the page's, to the server's origin.
CHROMIUM_ARGS = [
    "--no-sandbox",  # Chromium refuses to run as root with its sandbox (CI runs as root)
    "--headless",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(os.environ.get("RAG_TEST_ARTIFACTS") or ROOT / "tests" / "artifacts") / "chat-page"
TOKEN = "page-test-token"
VAULT_NAME = "My Vault"  # a space, so the obsidian:// link's encoding is checked too
#: The calls a run makes take a few seconds with the stand-in; a cold first run longer.
RUN_TIMEOUT_MS = 90_000
ANSWER = "Practise on a real whiteboard, against a timer, saying your reasoning aloud."
CALCULATION = "calculate: 456*4343 - 56/(443-11+4)"
EXACT = "456*4343 - 56/(443-11+4) ≈ 1980407.87155963"
DESKTOP = {"width": 1280, "height": 860}
PHONE = {"width": 390, "height": 844}

# Records the text of every answer element each time it changes, and whether it was still
# streaming then: the tests read what the page ever showed, not only where it ended.
RECORD_ANSWERS = """
window.__shown = [];
new MutationObserver(() => {
  for (const node of document.querySelectorAll(".answer-text")) {
    const text = node.textContent;
    if (node.__last !== text) {
      node.__last = text;
      window.__shown.push({text, streaming: node.classList.contains("streaming")});
    }
  }
  for (const node of document.querySelectorAll(".answer")) {
    window.__shown.push({text: node.textContent, streaming: false, whole: true});
  }
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One headless Chromium for the page's tests (the only module that uses a browser, so one
    per worker). Module-scoped: sync Playwright keeps an event loop running in the worker's
    main thread while it is started, and every later ``asyncio.run()`` in that worker (the
    Python API's async tests, the MCP client) would fail."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: `make test` installs it (apt-get install "
            "--no-install-recommends chromium), or point RAG_TEST_CHROMIUM at a Chromium"
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def served(ollama_url, tmp_path_factory) -> Iterator[str]:
    """``langgraph dev`` with a token, over an index of its own: the sample notes ("notes")
    and the Obsidian test vault ("vault", loaded from a folder named ``VAULT_NAME``)."""
    work = tmp_path_factory.mktemp("chat-page")
    shutil.copytree(ROOT / "tests" / "sample_notes", work / "notes")
    shutil.copytree(ROOT / "tests" / "obsidian_vault", work / VAULT_NAME)
    for folder, name in ((work / "notes", "notes"), (work / VAULT_NAME, "vault")):
        loaded = rag("load", "-f", str(folder), "-n", name, url=ollama_url, workdir=work)
        assert loaded.returncode == 0, loaded.stderr
    env = {
        "OLLAMA_HOST": ollama_url,
        "XDG_DATA_HOME": str(work / "data"),  # where the loads above put the index
        "XDG_CACHE_HOME": str(work / "cache"),
        "RAG_API_TOKEN": TOKEN,
        "RAG_COLLECTION": "notes",
        "RAG_SCORE_THRESHOLD": "0",
        "RAG_K": "6",
        "RAG_VISION_MODEL": VISION_MODEL,
        # The collections' own model, named: a served run may only use the server's models.
        "RAG_EMBEDDING_MODEL": "nomic-embed-text",
    }
    with langgraph_dev(work / "served", env) as url:
        yield url


@dataclass
class Chat:
    """One tab of the page, with everything it requested and every problem it reported."""

    page: Page
    url: str
    requests: list[Request] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def ask(self, question: str) -> Locator:
        """Type ``question``, press Enter, wait for the answer to finish; its turn."""
        turns = self.page.locator("#log > .turn")
        before = turns.count()
        box = self.page.locator("#question")
        box.fill(question)
        box.press("Enter")
        expect(turns).to_have_count(before + 1)
        turn = turns.nth(before)
        expect(turn.locator(".answer")).not_to_have_attribute(
            "aria-busy", "true", timeout=RUN_TIMEOUT_MS
        )
        expect(turn.locator(".error")).to_have_count(0)
        return turn

    def runs(self) -> list[dict]:
        """The bodies of the runs the page started, in order."""
        return [
            json.loads(r.post_data or "{}")
            for r in self.requests
            if r.method == "POST" and r.url.endswith("/runs/stream")
        ]

    def sources(self, turn: Locator) -> list[str]:
        return turn.locator(".sources-box .source button").evaluate_all(
            "nodes => nodes.map(n => n.dataset.source)"
        )

    def path(self, turn: Locator) -> str:
        """The folded "path taken" of a turn, unfolded."""
        details = turn.locator("details.path")
        details.locator("summary").click()
        return details.inner_text()

    def shown(self) -> list[dict]:
        return self.page.evaluate("window.__shown")

    def choose_collection(self, name: str) -> None:
        """Switch to the vault collection and wait for its own tags and folders."""
        assert name == "vault"
        self.page.locator("#collection").select_option(name)
        expect(self.page.locator("#collection-info")).to_contain_text(VAULT_NAME)
        expect(self.page.locator("#tags input[value='baking']")).to_have_count(1)


@pytest.fixture
def chat(browser, served) -> Iterator[Chat]:
    """A fresh tab on ``/ui``, past the token prompt; checks the tab's requests afterwards."""
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    opened = Chat(page, served)
    context.on("request", lambda request: opened.requests.append(request))
    page.on("pageerror", lambda error: opened.problems.append(f"script error: {error}"))

    def console(message: ConsoleMessage) -> None:
        if message.type == "error" and "401" not in message.text:
            opened.problems.append(f"console: {message.text}")

    page.on("console", console)
    page.add_init_script(RECORD_ANSWERS)
    page.goto(f"{served}/ui")
    # The page asks for the token when its first API call answers 401, then keeps it.
    dialog = page.locator("#token-dialog")
    expect(dialog).to_be_visible()
    page.locator("#token").fill(TOKEN)
    page.locator("#token").press("Enter")
    expect(dialog).to_be_hidden()
    expect(page.locator("#collection option")).to_have_count(2)
    expect(page.locator("#question")).to_be_focused()
    try:
        yield opened
        origin = served.rstrip("/")
        elsewhere = [
            r.url
            for r in opened.requests
            if not (r.url == origin or r.url.startswith(origin + "/"))
            and not r.url.startswith(("data:", "blob:"))
        ]
        assert elsewhere == [], "requests left the server's origin"
        assert opened.problems == []
        # The page's first call was refused (no token yet), and only that one.
        refused = [r.url for r in opened.requests if (r.response() or _OK).status == 401]
        assert refused == [f"{origin}/rag/collections"]
    finally:
        context.close()


class _OK:
    status = 200


def screenshot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    print(f"screenshot: {path}")
    return path


# --------------------------------------------------------------------------------- no browser


def test_the_page_holds_no_data_and_its_data_needs_the_token(served):
    page = HTTP.get(f"{served}/ui", timeout=30)
    assert page.status_code == 200
    assert page.headers["content-security-policy"] == (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
        "connect-src 'self'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'"
    )
    for name in ("notes", "vault", VAULT_NAME, "interviews", "Network"):
        assert f'"{name}"' not in page.text and f">{name}<" not in page.text
    script = HTTP.get(f"{served}/ui/app.js", timeout=30)
    assert script.status_code == 200 and script.headers["content-type"].startswith(
        "text/javascript"
    )
    # Only the page's own files: nothing else of the project, however the name is spelled.
    for name in ("pyproject.toml", "..%2Fpyproject.toml", "page.py", "%2E%2E%2Fpage.py"):
        assert HTTP.get(f"{served}/ui/{name}", timeout=30).status_code == 404, name

    for path in ("/rag/collections", "/rag/facets?collection=vault", "/threads/search"):
        method = "POST" if path.startswith("/threads") else "GET"
        refused = HTTP.request(method, f"{served}{path}", json={} if method == "POST" else None)
        assert refused.status_code == 401, path
    with_token = HTTP.get(
        f"{served}/rag/collections", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
    )
    assert with_token.status_code == 200
    described = {row["name"]: row for row in with_token.json()["collections"]}
    assert with_token.json()["default"] == "notes"
    assert set(described) == {"notes", "vault"}
    assert described["vault"]["vault"] == VAULT_NAME and described["notes"]["vault"] == ""


# --------------------------------------------------------------------------------- in a browser


def test_a_calculation_shows_its_exact_answer_keyboard_only(chat):
    page = chat.page
    box = page.locator("#question")
    # Shift+Enter is a new line, not a question.
    box.press_sequentially("1 +")
    box.press("Shift+Enter")
    box.press_sequentially("2")
    expect(box).to_have_value("1 +\n2")
    assert chat.runs() == []
    # The composer's controls in order: the image picker, then Send.
    page.keyboard.press("Tab")
    expect(page.locator("#image")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.locator("#send")).to_be_focused()
    box.focus()
    turn = chat.ask(CALCULATION)
    expect(turn.locator(".answer-text.exact")).to_have_text(EXACT)
    assert "Route\ncalculator" in chat.path(turn)
    (run,) = chat.runs()
    assert run["input"] == {"question": CALCULATION}
    assert run["context"]["collection_name"] == "notes"
    # The token went with the run, in the header (never in the address).
    stream = next(r for r in chat.requests if r.url.endswith("/runs/stream"))
    assert stream.headers["authorization"] == f"Bearer {TOKEN}"
    assert all(TOKEN not in r.url for r in chat.requests)


def test_a_notes_question_streams_an_answer_with_links_to_its_notes(chat, faults):
    # Unreadable grades keep every chunk, so the tiny model's answer is generated, streamed
    # token by token.
    faults(malformed_json=True)
    turn = chat.ask("How should I practise whiteboarding?")
    final = turn.locator(".answer-text").text_content() or ""
    partial = [s["text"] for s in chat.shown() if s.get("streaming")]
    assert len(set(partial)) >= 3, "the answer did not arrive piece by piece"
    assert all(final.startswith(text.strip()[:40]) for text in partial if text.strip())
    state = HTTP.get(
        f"{chat.url}/threads/{chat.page.url.split('#thread=')[1]}/state",
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    ).json()["values"]
    assert state["route"] == "retrieve"
    cited = [s["path"] for s in state["sources"]]
    assert cited and chat.sources(turn) == cited
    # numbered as the answer cites them inline: [1], [2], ...
    numbers = turn.locator(".sources-box .source .number").all_text_contents()
    assert [n.strip() for n in numbers] == [f"[{i}]" for i in range(1, len(cited) + 1)]
    turn.locator(".sources-box").scroll_into_view_if_needed()
    screenshot(chat.page, "desktop-sources")
    # Not an Obsidian vault: no obsidian:// links, but every source opens its section.
    expect(turn.locator("a.obsidian")).to_have_count(0)
    first = state["sources"][0]
    button = turn.locator(".sources-box .source button").first
    button.focus()
    button.press("Enter")
    view = chat.page.locator("#section-view")
    expect(view).to_be_visible()
    section = HTTP.get(
        f"{chat.url}/rag/section",
        params={"collection": "notes", "source": first["path"], "heading": first["heading"]},
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    ).json()
    expect(view.locator("#section-text")).to_have_text(section["text"])
    chat.page.keyboard.press("Escape")
    expect(view).to_be_hidden()


def test_a_follow_up_on_the_thread_uses_its_history(chat, faults):
    faults(reply=ANSWER)
    first = chat.ask("How should I prepare for interviews?")
    expect(first.locator(".answer-text")).to_have_text(ANSWER)
    assert "rewrote follow-up" not in chat.path(first)
    second = chat.ask("and what about whiteboarding?")
    assert "retrieve: rewrote follow-up as" in chat.path(second)
    one, two = (r for r in chat.requests if r.url.endswith("/runs/stream"))
    assert one.url == two.url  # the same thread
    thread = one.url.split("/threads/")[1].split("/")[0]
    listed = chat.page.locator("#thread-list .thread").first
    expect(listed).to_have_attribute("data-thread", thread)
    expect(listed).to_have_attribute("aria-current", "true")
    expect(listed.locator(".title")).to_have_text("How should I prepare for interviews?")
    # A new conversation starts empty; the past one opens again from the list.
    chat.page.locator("#new-thread").click()
    expect(chat.page.locator("#log > .turn")).to_have_count(0)
    listed.click()
    turns = chat.page.locator("#log > .turn")
    expect(turns).to_have_count(2)
    expect(turns.nth(1).locator(".question")).to_have_text("and what about whiteboarding?")
    expect(turns.nth(1).locator(".sources-box .source")).not_to_have_count(0)


def test_filters_narrow_the_sources_and_vault_notes_link_to_obsidian(chat, faults):
    faults(reply=ANSWER)  # not a yes or no: every grade is unreadable, so every chunk is kept
    chat.choose_collection("vault")
    filters = chat.page.locator("#filters")
    filters.locator("summary").click()
    tags = filters.locator("#tags input").evaluate_all("nodes => nodes.map(n => n.value)")
    folders = filters.locator("#folders input").evaluate_all("nodes => nodes.map(n => n.value)")
    assert {"baking", "network", "network/vpn"} <= set(tags)
    assert {"Baking", "Network", "Journal"} <= set(folders)
    question = "How do I reach the admin page?"

    everything = chat.sources(chat.ask(question))
    assert any(not s.startswith("Network/") for s in everything), everything

    chat.page.locator("#new-thread").click()
    filters.locator("#folders input[value='Network']").check()
    expect(filters.locator("#filter-count")).to_have_text("(1 on)")
    turn = chat.ask(question)
    narrowed = chat.sources(turn)
    assert narrowed and all(s.startswith("Network/") for s in narrowed), narrowed
    assert chat.runs()[-1]["context"] == {"collection_name": "vault", "folders": ["Network"]}
    link = turn.locator("a.obsidian").first
    source = chat.sources(turn)[0]
    expect(link).to_have_attribute(
        "href",
        f"obsidian://open?vault={quote(VAULT_NAME, safe='')}"
        f"&file={quote(source.removesuffix('.md'), safe='')}",
    )

    chat.page.locator("#new-thread").click()
    filters.locator("#folders input[value='Network']").uncheck()
    filters.locator("#tags input[value='baking']").check()
    tagged = chat.sources(chat.ask(question))
    assert tagged and all(s.startswith("Baking/") for s in tagged), tagged


def test_a_question_over_the_servers_bound_shows_the_reason(chat):
    page = chat.page
    turns = page.locator("#log > .turn")
    page.locator("#question").fill("what do my notes say about " + "sourdough " * 2_000)
    page.locator("#question").press("Enter")
    error = turns.nth(0).locator(".error")
    expect(error).to_contain_text("this server takes at most 16,000 (RAG_MAX_QUESTION_CHARS)")
    expect(page.locator("#status")).to_contain_text("could not be answered")
    # the browser logs the refused request; that one is expected
    chat.problems[:] = [p for p in chat.problems if "422" not in p]
    # the page stays usable: the next question is answered
    turn = chat.ask(CALCULATION)
    expect(turn.locator(".answer-text.exact")).to_have_text(EXACT)


def test_a_no_answer_shows_its_reason_and_the_closest_notes(chat, faults):
    faults(reply="No.")  # every chunk judged irrelevant

    def second_chunk(route: Route) -> None:
        # A long section is several chunks: the run's near misses can hold one twice.
        body = route.fetch().json()
        near = body["values"].get("near_misses") or []
        if near:
            near.append({**near[0], "score": near[0]["score"] / 2})
        route.fulfill(json=body)

    chat.page.route("**/threads/*/state", second_chunk)
    turn = chat.ask("What is the capital of Mongolia?")
    box = turn.locator(".no-answer")
    expect(box).to_be_visible()
    expect(box).to_have_attribute("data-reason", "all_irrelevant")
    expect(box.locator(".reason")).to_have_text("The closest sections were judged not relevant")
    # The closest notes are named once: as the page's list, in the order and with the
    # sections the graph's message named them (its "Closest notes: …" line is not repeated).
    thread = chat.page.url.split("#thread=")[1]
    said = _state(chat, thread)["answer"]
    named = said.split("Closest notes: ", 1)[1].removesuffix(".").split("; ")
    listed = box.locator(".closest .source button").evaluate_all(
        "nodes => nodes.map(n => [n.dataset.source, n.dataset.heading || ''])"
    )
    shown = [f"{src}{' > ' + heading if heading else ''}" for src, heading in listed]
    assert shown == [re.sub(r" \([0-9.]+\)$", "", name) for name in named]
    expect(box.locator(".answer-text")).to_have_text(said.split(" Closest notes: ")[0])
    assert box.inner_text().count("Closest notes") == 1
    for button in box.locator(".closest .source button").all():
        expect(button).to_have_attribute("title", button.inner_text())
    box.scroll_into_view_if_needed()
    screenshot(chat.page, "desktop-no-answer")
    chat.page.set_viewport_size(PHONE)
    box.scroll_into_view_if_needed()
    screenshot(chat.page, "phone-no-answer")
    chat.page.set_viewport_size(DESKTOP)
    expect(turn.locator(".sources-box")).to_have_count(0)
    assert "no_answer: all_irrelevant" in chat.path(turn)

    # A filter that matches no note says so, without asking a model.
    chat.choose_collection("vault")
    filters = chat.page.locator("#filters")
    filters.locator("summary").click()
    filters.locator("#tags input[value='baking']").check()
    filters.locator("#folders input[value='Network']").check()
    turn = chat.ask("How do I proof dough?")
    expect(turn.locator(".no-answer")).to_have_attribute("data-reason", "filter_empty")
    expect(turn.locator(".no-answer .reason")).to_have_text("No note matches the filters")
    expect(turn.locator(".no-answer h3")).to_have_text("No answer")


def _state(chat: Chat, thread: str) -> dict:
    return HTTP.get(
        f"{chat.url}/threads/{thread}/state",
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    ).json()["values"]


def test_an_answer_not_stated_in_its_notes_shows_the_draft_then_your_notes_don_t_say(chat, faults):
    # The stand-in's one fixed reply answers the grades and the answer check alike, so the
    # check's "no" is written into the run's result on its way to the page: this checks how
    # the page shows such a result (test_answer_check.py checks the graph's side).
    faults(reply=ANSWER)
    added = "Your notes don't say this: checked against the note sections it was drafted from."

    def unsupported(route: Route) -> None:
        body = route.fetch().text()
        body = re.sub(r'"no_answer_reason":\s*null', '"no_answer_reason":"unsupported"', body)
        body = body.replace(json.dumps(ANSWER), json.dumps(f"{ANSWER}\n\n{added}"))
        route.fulfill(status=200, headers={"content-type": "text/event-stream"}, body=body)

    def state(route: Route) -> None:
        # A run can also have had chunks below the floor (retrieve's near misses).
        body = route.fetch().json()
        far = {"source": "career/salary.md", "heading": "Far", "score": 0.12, "content": "x"}
        body["values"]["near_misses"] = [far]
        route.fulfill(json=body)

    chat.page.route("**/runs/stream", unsupported)
    chat.page.route("**/threads/*/state", state)
    turn = chat.ask("How should I practise whiteboarding?")
    box = turn.locator(".no-answer")
    expect(box).to_have_attribute("data-reason", "unsupported")
    # The draft is shown, so the heading does not say there is no answer.
    expect(box.locator("h3")).to_have_text("Not supported by your notes")
    expect(box.locator(".reason")).to_have_text(
        "Checked against your notes, the answer is not what they state"
    )
    expect(box.locator(".answer-text")).to_have_text(f"{ANSWER}\n\n{added}")
    # The sources it was drafted from are listed; the run's notes below the floor are not:
    # the answer did not come from them.
    expect(box.locator(".closest")).to_have_count(0)
    expect(turn.locator(".sources-box .source")).not_to_have_count(0)
    screenshot(chat.page, "desktop-unsupported")
    # At phone width the longer heading and the draft wrap: no sideways scrolling.
    chat.page.set_viewport_size(PHONE)
    turn.locator(".no-answer h3").scroll_into_view_if_needed()
    for scrolled in ("document.scrollingElement", "document.getElementById('scroller')"):
        wide, shown = chat.page.evaluate(f"[{scrolled}.scrollWidth, {scrolled}.clientWidth]")
        assert wide <= shown <= PHONE["width"], scrolled
    screenshot(chat.page, "phone-unsupported")


def test_reasoning_stays_out_of_the_answer_unless_asked_for(chat, faults):
    faults(reply=f"<think>secret plan</think>{ANSWER}")
    turn = chat.ask("How should I practise whiteboarding?")
    expect(turn.locator(".answer-text")).to_have_text(ANSWER)
    expect(turn.locator(".reasoning")).to_be_hidden()
    assert not any("secret plan" in s["text"] for s in chat.shown())
    assert "show_thinking" not in chat.runs()[-1]["context"]

    chat.page.locator("#show-reasoning").check()
    turn = chat.ask("And on paper?")
    expect(turn.locator(".reasoning")).to_be_visible()
    expect(turn.locator(".reasoning-text")).to_have_text("secret plan")
    expect(turn.locator(".answer-text")).to_have_text(ANSWER)
    assert chat.runs()[-1]["context"]["show_thinking"] is True


def test_an_attached_image_goes_to_the_image_branch_as_base64(chat, faults):
    faults(reply="A small network diagram.")
    picture = ROOT / "tests" / "sample_notes" / "tech" / "img" / "network.png"
    chat.page.locator("#image").set_input_files(str(picture))
    expect(chat.page.locator("#attachments img")).to_have_count(1)
    turn = chat.ask("based on the image: what does it show?")
    expect(turn.locator(".answer-text")).to_have_text("A small network diagram.")
    expect(turn.locator(".question img")).to_have_count(1)
    expect(chat.page.locator("#attachments img")).to_have_count(0)
    assert "Route\nimage" in chat.path(turn)
    (run,) = chat.runs()
    assert run["input"]["images"] == [base64.b64encode(picture.read_bytes()).decode()]


def _grey_png(width: int, height: int) -> bytes:
    """A PNG of ``width`` by ``height`` pixels, grey from black at the top to white."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\0" + bytes([255 * y // (height - 1)]) * width for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def test_a_large_attached_image_is_a_thumbnail_that_opens_full_size(chat, faults, tmp_path):
    faults(reply="A wide picture.")
    picture = tmp_path / "wide.png"
    picture.write_bytes(_grey_png(1600, 1000))
    chat.page.locator("#image").set_input_files(str(picture))
    turn = chat.ask("based on the image: what does it show?")
    thumb = turn.locator(".question img")
    expect(thumb).to_have_count(1)
    # Bounded in the bubble (8rem by 5rem), not its natural 1600 by 1000 pixels.
    shown = thumb.bounding_box()
    assert shown and shown["width"] <= 128 and shown["height"] <= 80, shown
    expect(thumb.locator("xpath=..")).to_have_attribute("title", re.compile("^wide.png"))
    screenshot(chat.page, "desktop-image")
    chat.page.set_viewport_size(PHONE)
    turn.locator(".question").scroll_into_view_if_needed()
    screenshot(chat.page, "phone-image")
    # A click shows it whole, within the window.
    thumb.click()
    view = chat.page.locator("#image-view")
    expect(view).to_be_visible()
    full = view.locator("#image-full")
    assert full.evaluate("n => n.naturalWidth") == 1600
    whole = full.bounding_box()
    assert whole and 128 < whole["width"] <= PHONE["width"], whole
    screenshot(chat.page, "phone-image-full")
    chat.page.keyboard.press("Escape")
    expect(view).to_be_hidden()


def test_a_conversation_keeps_its_collection_and_filters(chat, faults):
    page = chat.page
    faults(reply=ANSWER, delay=0.5)
    chat.choose_collection("vault")
    filters = page.locator("#filters")
    filters.locator("summary").click()
    filters.locator("#folders input[value='Network']").check()
    question = "How do I reach the admin page of the office network from home, and which " + (
        "settings of the VPN client matter when the connection drops every few minutes?"
    )
    box = page.locator("#question")
    box.fill(question)
    box.press("Enter")
    # Listed as soon as it is asked, titled by its question, before the answer is written;
    # the whole question is the title's tooltip.
    listed = page.locator("#thread-list .thread").first
    expect(listed.locator(".title")).to_have_text(question)
    expect(page.locator("#log > .turn .answer")).to_have_attribute("aria-busy", "true")
    expect(listed).to_have_attribute("title", question)
    expect(listed.locator(".when")).to_contain_text("· vault")
    thread = page.url.split("#thread=")[1]
    expect(listed).to_have_attribute("data-thread", thread)
    turn = page.locator("#log > .turn").first
    expect(turn.locator(".answer")).not_to_have_attribute(
        "aria-busy", "true", timeout=RUN_TIMEOUT_MS
    )
    faults(reply=ANSWER)
    cited = chat.sources(turn)
    assert cited and all(s.startswith("Network/") for s in cited), cited

    # Another collection is another conversation, and the page says so.
    page.locator("#collection").select_option("notes")
    expect(page.locator("#log > .turn")).to_have_count(0)
    expect(page.locator("#status")).to_have_text(
        "A new conversation in “notes”: the one in “vault” stays under Conversations."
    )
    assert "#thread=" not in page.url
    expect(page.locator("#filter-count")).to_have_text("")

    # Reopened: its collection and filters are back; its sources open in its collection.
    page.locator(f"#thread-list .thread[data-thread='{thread}']").click()
    restored = page.locator("#log > .turn").first
    expect(page.locator("#collection")).to_have_value("vault")
    expect(page.locator("#collection-info")).to_contain_text(VAULT_NAME)
    expect(filters.locator("#folders input[value='Network']")).to_be_checked()
    expect(filters.locator("#filter-count")).to_have_text("(1 on)")
    expect(restored.locator("a.obsidian")).not_to_have_count(0)
    first = restored.locator(".sources-box .source button").first
    expect(first).to_have_attribute("title", first.inner_text())
    source, heading = first.evaluate("n => [n.dataset.source, n.dataset.heading || '']")
    first.click()
    section = HTTP.get(
        f"{chat.url}/rag/section",
        params={"collection": "vault", "source": source, "heading": heading},
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    )
    assert section.status_code == 200
    expect(page.locator("#section-text")).to_have_text(section.json()["text"])
    expect(page.locator("#section-where")).to_contain_text("as indexed in vault")
    page.keyboard.press("Escape")
    screenshot(page, "desktop-restored")

    # A follow-up goes to the conversation's collection, with its filters, on its thread.
    chat.ask("and from a hotel?")
    last = [r for r in chat.requests if r.url.endswith("/runs/stream")][-1]
    assert f"/threads/{thread}/" in last.url
    assert chat.runs()[-1]["context"] == {"collection_name": "vault", "folders": ["Network"]}

    # A filter changed in the conversation is kept with it too; a reload restores it all.
    filters.locator("#folders input[value='Network']").uncheck()
    filters.locator("#tags input[value='network']").check()
    chat.ask("and the VPN?")
    assert chat.runs()[-1]["context"] == {"collection_name": "vault", "tags": ["network"]}
    page.evaluate("sessionStorage.removeItem('notes-rag-collection')")  # the picker's memory
    page.set_viewport_size(PHONE)
    page.reload()
    expect(page.locator("#log > .turn")).to_have_count(3)
    expect(page.locator("#collection")).to_have_value("vault")
    expect(filters.locator("#tags input[value='network']")).to_be_checked()
    expect(filters.locator("#folders input[value='Network']")).not_to_be_checked()
    page.evaluate("document.getElementById('scroller').scrollTop = 0")
    screenshot(page, "phone-restored")


def test_open_filters_stay_compact_at_phone_width(chat):
    page = chat.page
    page.set_viewport_size(PHONE)

    # A collection with many tags and folders, as a real vault has.
    def many(route: Route) -> None:
        tags = [{"name": f"topic-{n}/long-subtopic-name", "notes": n} for n in range(40)]
        folders = [{"name": f"Area {n}/Projects", "notes": n} for n in range(25)]
        route.fulfill(json={"filterable": True, "tags": tags, "folders": folders})

    page.route("**/rag/facets?*", many)
    page.locator("#collection").select_option("vault")
    filters = page.locator("#filters")
    filters.locator("summary").click()
    expect(filters.locator("#tags input")).to_have_count(40)
    height = filters.bounding_box()["height"]
    print("open filters at phone width, px:", height)
    assert height <= PHONE["height"] / 4, height
    expect(page.locator("#question")).to_be_in_viewport()
    expect(page.locator("#send")).to_be_in_viewport()
    for scrolled in ("document.scrollingElement", "document.getElementById('scroller')"):
        wide, shown = page.evaluate(f"[{scrolled}.scrollWidth, {scrolled}.clientWidth]")
        assert wide <= shown <= PHONE["width"], scrolled
    label = filters.locator("#tags .facet").first
    expect(label).to_have_attribute("title", "#topic-0/long-subtopic-name")
    screenshot(page, "phone-filters")


def test_screenshots_at_desktop_and_phone_width(chat, faults):
    page = chat.page
    faults(reply=ANSWER)
    chat.ask("How should I practise whiteboarding?")
    faults(reply="No.")
    chat.path(chat.ask("What is the capital of Mongolia?"))
    chat.ask(CALCULATION)
    shots = [screenshot(page, "desktop")]
    # The same tab at phone width, reloaded: the page opens the thread named in its address.
    page.set_viewport_size(PHONE)
    page.reload()
    expect(page.locator("#log > .turn")).to_have_count(3)
    # Nothing wider than the phone: no sideways scrolling of the page or of the conversation,
    # and the question box in view.
    for scrolled in ("document.scrollingElement", "document.getElementById('scroller')"):
        wide, shown = page.evaluate(f"[{scrolled}.scrollWidth, {scrolled}.clientWidth]")
        assert wide <= shown <= PHONE["width"], scrolled
    expect(page.locator("#question")).to_be_in_viewport()
    expect(page.locator("#send")).to_be_in_viewport()
    shots.append(screenshot(page, "phone"))
    page.locator(".sources-box .source button").first.click()
    expect(page.locator("#section-text")).not_to_have_text("Loading…")
    shots.append(screenshot(page, "phone-section"))
    page.keyboard.press("Escape")
    page.locator("#threads-panel summary").click()
    page.locator("#filters summary").click()
    shots.append(screenshot(page, "phone-panels"))
    assert all(shot.stat().st_size > 10_000 for shot in shots)


# ------------------------------------------------------------------------------- progress

#: Seconds the stand-in waits before answering each request: every stage lasts about this.
STEP_DELAY = 1.0
#: Records, for the last turn, each stage the progress line shows (with the time the graph
#: reported it, ``data-at``), the first answer token, the sources and the end, each with the
#: time it reached the page (ms since the epoch, the clock the server's ``at`` uses), and
#: the moment Enter sent the question.
RECORD_PROGRESS = """
window.__timeline = {stages: [], sent: null, token: null, sources: null, done: null};
const t = window.__timeline;
document.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && event.target.id === "question" && !event.shiftKey) {
    Object.assign(t, {stages: [], sent: Date.now(), token: null, sources: null, done: null});
  }
}, true);
new MutationObserver(() => {
  const now = Date.now();
  const turn = document.querySelector("#log > .turn:last-child");
  if (!turn || t.sent === null) return;
  const line = turn.querySelector(".progress");
  const busy = turn.querySelector(".answer[aria-busy='true']");
  if (line) {
    const text = line.querySelector(".stage").textContent;
    const last = t.stages[t.stages.length - 1];
    if (!last || last.text !== text) {
      t.stages.push({stage: line.dataset.stage, text, at: Number(line.dataset.at || 0) * 1000,
                     elapsed: line.querySelector(".elapsed").textContent, seen: now});
    }
  }
  if (t.token === null && turn.querySelector(".answer-text.streaming")) t.token = now;
  if (t.sources === null && busy && turn.querySelector(".sources-box")) t.sources = now;
  if (t.done === null && !busy) t.done = now;
}).observe(document, {subtree: true, childList: true, characterData: true, attributes: true});
"""


def _ask_watching(chat: Chat, question: str, name: str) -> tuple[Locator, dict]:
    """Ask, screenshot the turn while grading and while the answer is checked; the timeline."""
    page = chat.page
    box = page.locator("#question")
    box.fill(question)
    box.press("Enter")
    turn = page.locator("#log > .turn").last
    stage = turn.locator(".progress .stage")
    expect(stage).to_contain_text("Grading", timeout=RUN_TIMEOUT_MS)
    screenshot(page, f"{name}-grading")
    # The answer is written: its sources are listed while the check runs.
    expect(stage).to_have_text("Checking against your notes…", timeout=RUN_TIMEOUT_MS)
    # Not waited for: listed already, with the stage that says the check is running.
    assert turn.locator(".answer[aria-busy='true'] .sources-box .source").count() > 0
    expect(turn.locator(".answer-text")).to_have_text(ANSWER)
    turn.locator(".progress").scroll_into_view_if_needed()
    screenshot(page, f"{name}-checking")
    expect(turn.locator(".answer")).not_to_have_attribute(
        "aria-busy", "true", timeout=RUN_TIMEOUT_MS
    )
    expect(turn.locator(".progress")).to_have_count(0)
    return turn, page.evaluate("window.__timeline")


def test_progress_is_shown_live_and_the_sources_before_the_check(chat, faults):
    faults(reply=ANSWER, delay=STEP_DELAY)
    chat.page.evaluate(RECORD_PROGRESS)
    turn, timeline = _ask_watching(chat, "How should I practise whiteboarding?", "desktop")
    stages = [s["stage"] for s in timeline["stages"]]
    # Every stage of the run, in order, each shown as the graph reported it.
    assert [s for i, s in enumerate(stages) if s not in stages[:i]] == [
        "sending",
        "routing",
        "searching",
        "searched",
        "grading",
        "writing",
        "written",
        "checked",
    ], timeline["stages"]
    grading = [s["text"] for s in timeline["stages"] if s["stage"] == "grading"]
    assert grading[0] == "Grading 0 of 6 sections (0 relevant)"
    assert grading[-1] == "Grading 6 of 6 sections (6 relevant)" and len(grading) >= 3, grading
    sent = timeline["sent"]
    first_graph = next(s for s in timeline["stages"] if s["at"])
    assert timeline["stages"][0]["seen"] - sent <= 500  # "Sending the question", at once
    assert first_graph["seen"] - sent <= 500, timeline
    late = [(s["text"], s["seen"] - s["at"]) for s in timeline["stages"] if s["at"]]
    assert all(ms <= 500 for _, ms in late), late
    # The seconds count while it works.
    seconds = [float(s["elapsed"].split()[0]) for s in timeline["stages"]]
    assert seconds == sorted(seconds) and seconds[-1] >= 3 * STEP_DELAY, seconds
    # The sources came once the answer was written, a model call before the end.
    assert timeline["token"] < timeline["sources"] <= timeline["done"] - 0.8 * STEP_DELAY * 1000
    assert chat.sources(turn)  # and stay, numbered, after the verdict
    timings = {
        "step_delay_s": STEP_DELAY,
        "first_progress_s": (timeline["stages"][0]["seen"] - sent) / 1000,
        "first_graph_progress_s": (first_graph["seen"] - sent) / 1000,
        "first_token_s": (timeline["token"] - sent) / 1000,
        "sources_s": (timeline["sources"] - sent) / 1000,
        "done_s": (timeline["done"] - sent) / 1000,
        "most_late_s": max(ms for _, ms in late) / 1000,
        "shown_s": [(s["text"], (s["seen"] - sent) / 1000) for s in timeline["stages"]],
    }
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "progress-timings.json").write_text(json.dumps(timings, indent=2))
    print("progress timings:", timings)

    # At phone width: the progress line and the early sources fit, nothing scrolls sideways.
    chat.page.set_viewport_size(PHONE)
    _ask_watching(chat, "And on paper?", "phone")
    for scrolled in ("document.scrollingElement", "document.getElementById('scroller')"):
        wide, shown = chat.page.evaluate(f"[{scrolled}.scrollWidth, {scrolled}.clientWidth]")
        assert wide <= shown <= PHONE["width"], scrolled


# ------------------------------------------------------------------------------------ Stop

#: Seconds between the words of the stand-in's answer: it would take half a minute.
PACE = 3.0
STOPPED = "Stopped: this question is left out of the conversation."


def _model_calls(ollama_url: str) -> dict:
    """The stand-in's chat requests: how many are in flight, and how each ended."""
    return HTTP.get(f"{ollama_url}/_standin/calls", timeout=10).json()


def test_stop_ends_the_run_and_its_model_call_within_a_second(chat, faults, ollama_url):
    faults(reply=ANSWER, answer_pace=PACE)  # the answer comes word by word, slowly
    page = chat.page
    asked = time.time()
    box = page.locator("#question")
    box.fill("How should I practise whiteboarding?")
    box.press("Enter")
    turn = page.locator("#log > .turn").last
    expect(page.locator("#stop")).to_be_visible()
    expect(turn.locator(".answer-text")).to_have_text("Practise", timeout=RUN_TIMEOUT_MS)
    assert _model_calls(ollama_url)["in_flight"] == 1  # the answer is being generated
    thread = page.evaluate("decodeURIComponent(location.hash.slice('#thread='.length))")
    stopped = time.time()
    page.locator("#stop").click()
    expect(turn.locator(".stopped")).to_have_text(STOPPED)
    shown = time.time() - stopped
    deadline = time.time() + 10
    while (calls := _model_calls(ollama_url))["in_flight"] and time.time() < deadline:
        time.sleep(0.05)
    mine = [c for c in calls["calls"] if c["started"] >= asked]
    answer = mine[-1]
    took = "still in flight" if answer["ended"] is None else f"{answer['ended'] - stopped:.2f} s"
    print(f"stopped: shown after {shown:.2f} s, the model call ended after {took}")
    assert calls["in_flight"] == 0, f"the model call went on after Stop ({took})"
    assert answer["outcome"] == "client left" and answer["ended"] - stopped < 1.0
    assert all(c["started"] < stopped for c in mine)  # no model call after Stop
    assert shown < 1.0
    # What was streamed stays; the answer is not finished, the page is ready again.
    expect(turn.locator(".answer-text")).to_have_text("Practise")
    expect(turn.locator(".answer")).not_to_have_attribute("aria-busy", "true")
    expect(page.locator("#stop")).to_be_hidden()
    expect(page.locator("#send")).to_be_enabled()
    turn.scroll_into_view_if_needed()
    screenshot(page, "desktop-stopped")
    page.set_viewport_size(PHONE)
    turn.scroll_into_view_if_needed()
    screenshot(page, "phone-stopped")
    page.set_viewport_size(DESKTOP)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    runs = HTTP.get(f"{chat.url}/threads/{thread}/runs", headers=headers, timeout=30).json()
    assert [r["status"] for r in runs if r["status"] in ("pending", "running")] == []
    # The next question on the same conversation is answered, without the stopped one.
    faults(reply=ANSWER)
    again = chat.ask("And on paper?")
    expect(again.locator(".answer-text")).to_have_text(ANSWER)
    asked_on_thread = [
        m["content"] for m in _state(chat, thread)["messages"] if m["type"] == "human"
    ]
    assert asked_on_thread == ["And on paper?"]


def test_an_answer_its_names_settle_says_so_while_and_after_it_is_checked(chat, faults):
    # "Whiteboard" is written in the whiteboarding section's text: the names lookup settles
    # the check without the model, and the progress line says which lookup did
    named = "Practise on a Whiteboard, against a timer [1]."
    faults(reply=named, delay=STEP_DELAY)
    page = chat.page
    page.evaluate(RECORD_PROGRESS)
    for size, name in ((DESKTOP, "desktop-names"), (PHONE, "phone-names")):
        page.set_viewport_size(size)
        box = page.locator("#question")
        box.fill("How should I practise whiteboarding?")
        box.press("Enter")
        turn = page.locator("#log > .turn").last
        expect(turn.locator(".answer")).not_to_have_attribute(
            "aria-busy", "true", timeout=RUN_TIMEOUT_MS
        )
        expect(turn.locator(".answer-text")).to_have_text(named)
        screenshot(page, name)
        checked = [
            s["text"]
            for s in page.evaluate("window.__timeline")["stages"]
            if s["stage"] == "checked"
        ]
        assert checked[-1] == "Checked: the names it gives are in your notes", checked
    page.set_viewport_size(DESKTOP)
