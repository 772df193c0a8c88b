"""Time to an answer's first token and to its end: today's code against an earlier commit.

The same questions go to both, alternating question by question on one machine (which side
goes first alternates too, so drift over the run falls on both). Each side is a worker process
running that commit's own graph (a git worktree of it), with a stand-in of its own serving the
real model: each has its own prompt cache, so neither is credited with what the other read.
Both load the same notes with all-minilm into indexes of their own. Per question and side:
seconds to the first answer token and to the end of the run (the check included), model calls,
prompt tokens, and prompt tokens processed (not reused from the server's cache): llama.cpp's
own counts, read from the stand-in's trace (the ollama client drops the cached count); and
the prompt tokens the question needs read: each note section, the question and an answer
under check once (``needed``), against which the tokens processed are also given. The
stand-ins serve as Ollama before 0.30 does, one slot per model; with ``--host-prompt-cache``
as Ollama 0.30 and later do, earlier prompts kept in memory too (``tests/ollama_stand_in.py``).
Prints
each side's medians and today's over the earlier commit's ratio (the first token's also over
the questions both sides streamed an answer to), and writes them as JSON. What a commit has
the server read once an answer is written (``graph/warmup.py``) is read before that answer is
reported, as a person reads it: not timed, never beside the other side's question; its call
and tokens are counted with the next question, for which it reads ahead (the last question's
with none).

    python bench/answer_speed.py --before ee698d2 [--questions 8] [--thread]
        [--host-prompt-cache] [--record FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.worktree import worktree  # noqa: E402
from tests.integration_tests.conftest import _start  # noqa: E402

CHAT_MODEL = "qwen2.5-coder:1.5b"
EMBEDDING_MODEL = "all-minilm"
#: The questions: the held-out half of the project's own answer set (tune role), in order.
QUESTION_SET = ROOT / "tests" / "answer_eval_set.json"

#: What a side's worker runs, in its commit's worktree (only APIs both commits have): load
#: the notes, then for each question read from stdin, stream the graph and time it.
WORKER = r"""
import json, sys, time
from graph.builder import build_graph
from graph.context import Context
from graph.index.ingest import load_notes
from graph.index.vectorstore import with_embedding_model
from graph.models import default_models

try:  # what a commit reads ahead once an answer is written, read before the other side asks
    from graph.warmup import settle
except ImportError:
    settle = lambda: None

notes, folder, thread = sys.argv[1], sys.argv[2], sys.argv[3] == "thread"
context = with_embedding_model(Context(chroma_persist_directory=folder, collection_name="speed"))
models = default_models()
load_notes(context, notes, models.embeddings(context))
if thread:  # one conversation: each question after the first is a follow-up, rewritten first
    from langgraph.checkpoint.memory import InMemorySaver

    app = build_graph(checkpointer=InMemorySaver(), models=models)
    config = {"configurable": {"thread_id": "speed"}}
else:
    app = build_graph(models=models)
    config = {}
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    question = json.loads(line)["question"]
    started, first, final = time.perf_counter(), None, {}
    for mode, payload in app.stream(
        {"question": question}, config, context=context, stream_mode=["messages", "values"]
    ):
        if mode == "values":
            final = payload
        elif first is None and payload[1].get("langgraph_node") == "generate":
            if str(getattr(payload[0], "content", "")).strip():
                first = time.perf_counter() - started
    ended = time.perf_counter() - started
    settle()  # a person reads the answer meanwhile: not timed, and not beside the other side
    print(json.dumps({
        "first_token_s": None if first is None else round(first, 3),
        "end_s": round(ended, 3),
        "answer": str(final.get("answer") or ""),
        "no_answer_reason": final.get("no_answer_reason"),
    }), flush=True)
"""


class Side:
    """One commit: its worktree, its stand-in (and trace), its worker."""

    def __init__(
        self,
        name: str,
        tree: Path,
        model_path: str,
        notes: Path,
        work: Path,
        thread: bool,
        host_prompt_cache: bool,
    ) -> None:
        self.name, self.trace = name, work / f"{name}.trace"
        env = {**os.environ, "STANDIN_TRACE": str(self.trace)}
        self.standin, url = _start_with_env(model_path, env, host_prompt_cache)
        self.worker = subprocess.Popen(
            [
                sys.executable,
                "-c",
                WORKER,
                str(notes),
                str(work / f"{name}-index"),
                "thread" if thread else "one by one",
            ],
            cwd=tree,
            env={
                **os.environ,
                "PYTHONPATH": str(tree),
                "OLLAMA_HOST": url,
                "RAG_CHAT_MODEL": CHAT_MODEL,
                "RAG_EMBEDDING_MODEL": EMBEDDING_MODEL,
                "RAG_REQUEST_TIMEOUT": "600",
            },
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert json.loads(self._line())["ready"]
        self.read = self._trace_size()
        #: The warm-ups of the question before (``graph/warmup.py``): counted with this one.
        self.ahead: list[dict] = []

    def _line(self) -> str:
        assert self.worker.stdout is not None
        line = self.worker.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.name}'s worker stopped (exit {self.worker.poll()})")
        return line

    def _trace_size(self) -> int:
        return self.trace.stat().st_size if self.trace.exists() else 0

    def ask(self, question: str) -> dict[str, Any]:
        """One question through this side's graph: its timings and its model work."""
        assert self.worker.stdin is not None
        self.worker.stdin.write(json.dumps({"question": question}) + "\n")
        self.worker.stdin.flush()
        result = json.loads(self._line())
        with self.trace.open() as trace:
            trace.seek(self.read)
            lines = [json.loads(line) for line in trace if line.strip()]
        self.read = self._trace_size()
        work, self.ahead = model_work(lines, self.ahead)
        return {**result, **work}

    def close(self) -> None:
        for process in (self.worker, self.standin):
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def model_work(lines: list[dict], ahead: list[dict]) -> tuple[dict[str, int], list[dict]]:
    """A question's model calls and prompt tokens from its trace ``lines``, and its warm-ups.

    Each model call's "chat" line holds llama.cpp's counts: ``cache_n`` tokens reused,
    ``prompt_n`` processed. A warm-up (one token written, no reply begun) reads ahead for the
    next question: it is returned to be counted with that one, and ``ahead``, the warm-ups of
    the question before, are counted with this one. A grade's verdict after its opening is
    one token too (graph/verdict.py), and is counted here.
    """
    chats = [line for line in lines if line["kind"] == "chat"]
    counted = [chat for chat in chats if not warm_up(chat)] + ahead
    work = {
        "calls": len(counted),
        "prompt_tokens": sum(chat["cache_n"] + chat["prompt_n"] for chat in counted),
        "processed_tokens": sum(chat["prompt_n"] for chat in counted),
        "needed_tokens": needed(counted),
    }
    return work, [chat for chat in chats if warm_up(chat)]


def needed(chats: list[dict]) -> int:
    """The prompt tokens a question needs read: each note section its calls show the model,
    its question and an answer under check, once each (the stand-in's ``read``: the tokens of
    each distinct piece). Instructions are not counted: a server that keeps them reads them
    once for every question; what a question reads beyond this is read again."""
    pieces: dict[str, int] = {}
    for chat in chats:
        pieces.update(chat.get("read") or {})
    return sum(pieces.values())


def warm_up(chat: dict) -> bool:
    """Whether a traced chat call read ahead: one token written, not after a reply's opening."""
    return chat.get("max_tokens") == 1 and not chat.get("continued")


def _start_with_env(
    model_path: str, env: dict[str, str], host_prompt_cache: bool
) -> tuple[subprocess.Popen, str]:
    """A stand-in serving the real model and all-minilm, with ``env`` (its trace file)."""
    args = ["--host", "127.0.0.1", "--port", "0", "--model-path", model_path]
    args += ["--host-prompt-cache"] if host_prompt_cache else []
    standin = [sys.executable, "-m", "tests.ollama_stand_in", *args, "--chat-model", CHAT_MODEL]
    return _start(standin, env=env)


def questions(count: int) -> tuple[Path, list[str]]:
    """The notes folder and the first ``count`` held-out questions of the project's set."""
    data = json.loads(QUESTION_SET.read_text())
    chosen = [q["q"] for q in data["questions"] if q.get("split") in ("heldout", None)]
    return (QUESTION_SET.parent / data["notes"]).resolve(), chosen[:count]


def medians(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    """Each measure's median over the questions (first token: those that streamed one)."""
    firsts = [r["first_token_s"] for r in rows if r["first_token_s"] is not None]
    return {
        "first_token_s": round(statistics.median(firsts), 2) if firsts else None,
        "end_s": round(statistics.median(r["end_s"] for r in rows), 2),
        "calls": statistics.median(r["calls"] for r in rows),
        "prompt_tokens": statistics.median(r["prompt_tokens"] for r in rows),
        "processed_tokens": statistics.median(r["processed_tokens"] for r in rows),
        "needed_tokens": statistics.median(r["needed_tokens"] for r in rows),
        "processed over needed": round(
            statistics.median(r["processed_tokens"] / max(1, r["needed_tokens"]) for r in rows), 2
        ),
    }


def paired_first_tokens(rows: dict[str, list[dict[str, Any]]]) -> dict[str, float | None]:
    """Each side's median first token over the questions both sides streamed an answer to.

    A side that declines a question streams no token for it, so its own median covers other
    questions than the other side's; this one compares the same questions.
    """
    both = [
        (before["first_token_s"], now["first_token_s"])
        for before, now in zip(rows["before"], rows["now"], strict=True)
        if before["first_token_s"] is not None and now["first_token_s"] is not None
    ]
    if not both:
        return {"before": None, "now": None, "questions": 0}
    return {
        "before": round(statistics.median(b for b, _ in both), 2),
        "now": round(statistics.median(n for _, n in both), 2),
        "questions": len(both),
    }


def ratio(now: float | None, before: float | None) -> float | None:
    return round(now / before, 3) if now is not None and before else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="ee698d2", help="the earlier commit")
    parser.add_argument("--questions", type=int, default=8)
    parser.add_argument("--model-path", help="the GGUF (default: `python -m tests.fetch_model`)")
    parser.add_argument("--record", help="write the figures here (JSON)")
    parser.add_argument(
        "--traces", help="copy each side's stand-in trace (one JSON line per call) to this folder"
    )
    parser.add_argument(
        "--thread",
        action="store_true",
        help="ask the questions as one conversation on a thread (each after the first a "
        "follow-up, rewritten first); by default each is asked on its own",
    )
    parser.add_argument(
        "--host-prompt-cache",
        action="store_true",
        help="serve as Ollama 0.30 and later: earlier prompts kept in memory besides the slot",
    )
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
    head = ["git", "rev-parse", "--short", "HEAD"]
    found = subprocess.run(head, cwd=ROOT, check=True, capture_output=True, text=True)
    now_commit = found.stdout.strip()
    notes, asked = questions(args.questions)
    with worktree(args.before, "answer-speed-") as (work, before_tree):
        sides: dict[str, Side] = {}
        try:
            for name, tree in (("before", before_tree), ("now", ROOT)):
                sides[name] = Side(
                    name, tree, model_path, notes, work, args.thread, args.host_prompt_cache
                )
            rows: dict[str, list[dict[str, Any]]] = {"before": [], "now": []}
            for number, question in enumerate(asked):
                order = ("before", "now") if number % 2 == 0 else ("now", "before")
                for name in order:
                    result = sides[name].ask(question)
                    rows[name].append({"question": question, **result})
                    print(
                        f"[{number + 1}/{len(asked)} {name}] first token "
                        f"{result['first_token_s']} s, end {result['end_s']} s, "
                        f"{result['processed_tokens']} of {result['prompt_tokens']} prompt "
                        "tokens processed",
                        file=sys.stderr,
                        flush=True,
                    )
        finally:
            for side in sides.values():
                side.close()
                if args.traces and side.trace.exists():
                    Path(args.traces).mkdir(parents=True, exist_ok=True)
                    shutil.copy(side.trace, Path(args.traces) / side.trace.name)
    summary = {name: medians(rows[name]) for name in rows}
    paired = paired_first_tokens(rows)
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "before": args.before,
        "now": now_commit,
        "chat_model": CHAT_MODEL,
        "questions": len(asked),
        "thread": args.thread,
        "prompt_cache": "host memory too (Ollama 0.30 and later)"
        if args.host_prompt_cache
        else "one slot (Ollama before 0.30)",
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "medians": summary,
        "ratios": {
            key: ratio(summary["now"][key], summary["before"][key])
            for key in ("first_token_s", "end_s", "prompt_tokens", "processed_tokens")
        },
        "first_token_s, questions both streamed": {
            **paired,
            "ratio": ratio(paired["now"], paired["before"]),
        },
        "rows": rows,
    }
    print("| measure (median) | before | now | now / before |\n|---|---|---|---|")
    for key in (
        "first_token_s",
        "end_s",
        "calls",
        "prompt_tokens",
        "processed_tokens",
        "needed_tokens",
        "processed over needed",
    ):
        b, n = summary["before"][key], summary["now"][key]
        print(f"| {key} | {b} | {n} | {ratio(n, b) if isinstance(b, (int, float)) else '-'} |")
    print(
        f"| first_token_s, the {paired['questions']} questions both streamed | "
        f"{paired['before']} | {paired['now']} | {ratio(paired['now'], paired['before'])} |"
    )
    if args.record:
        Path(args.record).write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
