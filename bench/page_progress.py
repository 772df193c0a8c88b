"""What the chat page shows of a question while a real model works, and when.

The page's Playwright test (``tests/integration_tests/test_chat_page.py``) times its progress
line against the stand-in with a fixed delay per model call. This script takes the same
timings with the real Qwen2.5-Coder-1.5B-Instruct behind the stand-in: it loads the sample
notes with all-minilm into a temporary index, serves the project's ``langgraph.json`` with
``langgraph dev`` on a free port, and asks each question once on ``/ui`` in headless Chromium.
Seconds from Enter to the first progress, the graph's first stage, the first answer token,
the sources and the verdict, plus the load average before and after (the cores may be
shared), are printed as JSON, one run per question.

    python bench/page_progress.py [--model-path GGUF] [--question TEXT ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.sync_api import expect, sync_playwright  # noqa: E402

from tests.integration_tests.conftest import (  # noqa: E402
    _start,
    start_langgraph_dev,
    wait_for_http,
)
from tests.integration_tests.test_chat_page import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    DESKTOP,
    RECORD_PROGRESS,
)

ROOT = Path(__file__).resolve().parents[1]
CHAT_MODEL = "qwen2.5-coder:1.5b"
EMBEDDING_MODEL = "all-minilm"
COLLECTION = "sample"
QUESTIONS = [
    "How often do I feed the sourdough starter?",
    "How should I practise whiteboarding?",
    "Which port is forwarded on my home router, and for what?",
]
#: A cold model on 2 shared cores: a question can take minutes.
RUN_TIMEOUT_MS = 600_000


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def start_standin(model_path: str) -> tuple[subprocess.Popen, str]:
    """The stand-in serving the real 1.5B model and all-minilm on a free port; its URL."""
    return _start(
        [
            sys.executable,
            "-m",
            "tests.ollama_stand_in",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--model-path",
            model_path,
            "--chat-model",
            CHAT_MODEL,
        ]
    )


def ask(page, question: str) -> dict:
    """Ask on the page, wait for the verdict; the timings in seconds from Enter."""
    page.evaluate(RECORD_PROGRESS)
    box = page.locator("#question")
    box.fill(question)
    box.press("Enter")
    turn = page.locator("#log > .turn").last
    expect(turn.locator(".answer")).not_to_have_attribute(
        "aria-busy", "true", timeout=RUN_TIMEOUT_MS
    )
    timeline = page.evaluate("window.__timeline")
    sent = timeline["sent"]

    def since(ms: float | None) -> float | None:
        return None if ms is None else round((ms - sent) / 1000, 3)

    reported = [s for s in timeline["stages"] if s["at"]]
    return {
        "question": question,
        "first_progress_s": since(timeline["stages"][0]["seen"]),
        "first_graph_progress_s": since(reported[0]["seen"]) if reported else None,
        "first_token_s": since(timeline["token"]),
        "sources_s": since(timeline["sources"]),
        "done_s": since(timeline["done"]),
        "most_late_s": round(max((s["seen"] - s["at"] for s in reported), default=0) / 1000, 3),
        "shown_s": [[s["text"], since(s["seen"])] for s in timeline["stages"]],
        "answer": turn.locator(".answer-text").inner_text(),
        "sources": turn.locator(".sources-box .source button").evaluate_all(
            "nodes => nodes.map(n => n.dataset.source)"
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-path", help="the GGUF (default: `python -m tests.fetch_model`)")
    parser.add_argument("--question", action="append", help="ask this (repeatable)")
    args = parser.parse_args()
    model_path = (
        args.model_path
        or subprocess.run(
            [sys.executable, "-m", "tests.fetch_model"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    standin, ollama = start_standin(model_path)
    try:
        with tempfile.TemporaryDirectory(prefix="page-progress-") as tmp:
            work = Path(tmp)
            env = {
                "OLLAMA_HOST": ollama,
                "RAG_CHROMA_DIR": str(work / "index"),
                "RAG_CHAT_MODEL": CHAT_MODEL,
                "RAG_EMBEDDING_MODEL": EMBEDDING_MODEL,
                "RAG_COLLECTION": COLLECTION,
                "XDG_CACHE_HOME": str(work / "cache"),
            }
            rag = str(Path(sys.executable).parent / "rag")
            notes = str(ROOT / "tests" / "sample_notes")
            load = ["load", "-f", notes, "-n", COLLECTION, "-e", EMBEDDING_MODEL]
            subprocess.run([rag, *load], env={**os.environ, **env}, check=True, cwd=ROOT)
            server, url, log = start_langgraph_dev(work / "served", env)
            try:
                if not wait_for_http(f"{url}/ok", server, seconds=120):
                    raise SystemExit("langgraph dev did not start: " + log.read_text())
                runs = []
                with sync_playwright() as playwright:
                    browser = playwright.chromium.launch(
                        executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
                    )
                    for question in args.question or QUESTIONS:
                        # A tab of its own: each question opens a conversation, no history.
                        context = browser.new_context(viewport=DESKTOP)
                        page = context.new_page()
                        page.goto(f"{url}/ui")
                        expect(page.locator("#collection")).to_have_value(COLLECTION)
                        before = load_average()
                        run = ask(page, question)
                        context.close()
                        run["load_before"], run["load_after"] = before, load_average()
                        print(json.dumps(run), flush=True)
                        runs.append(run)
                    browser.close()
            finally:
                server.terminate()
                server.wait(timeout=30)
    finally:
        standin.terminate()
        standin.wait(timeout=30)
    print(json.dumps({"runs": runs}, indent=2))


if __name__ == "__main__":
    main()
