"""Question cost: model calls, sequential model stages and wall time per question.

A fake chat model sleeps a fixed latency per call (default 200 ms), so wall time measures
how many calls the graph makes one after another. The baseline is the first, sequential
design: 2 classifications + k sequential grades + 1 generation. A second run with
zero-latency fakes on a 1,000-chunk collection measures the framework's own overhead.

    python bench/bench_graph.py [--latency 0.2]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graph.builder import build_graph  # noqa: E402
from graph.context import Context  # noqa: E402
from graph.index.ingest import load_notes  # noqa: E402
from graph.prompts import CLASSIFY, IS_ABOUT_IMAGE, IS_CALCULATION  # noqa: E402
from nodes.grade_documents import grade_prompt  # noqa: E402
from tests.fakes import FakeModels  # noqa: E402

#: (label, question, what the model answers when asked "is this a calculation?")
QUESTIONS = [
    ("retrieval, no digits", "How should I practise whiteboarding for interviews?", "no"),
    ("retrieval with a number", "Which service listens on port 51820 at home?", "no"),
    ("retrieval, digits+sign", "What is the 3-2-1 backup rule in my notes?", "no"),
    ("arithmetic expression", "456*4343 - 56/(443-11+4)", "yes"),
    ("calculator trigger", "calculate: what is 17 * 23?", "yes"),
    ("arithmetic in words", "what's 12*7?", "yes"),
]


def baseline(models: FakeModels, question: str, context: Context) -> int:
    """The first design: every decision and grade in sequence (k grades)."""
    models.chat(context, "route_calculator").invoke(
        CLASSIFY.format(question=IS_CALCULATION, prompt=question)
    )
    models.chat(context, "route_image").invoke(
        CLASSIFY.format(question=IS_ABOUT_IMAGE, prompt=question)
    )
    grader = models.chat(context, "grade")
    for _ in range(context.k):
        chunk = {"source": "a.md", "heading": "", "content": "chunk", "score": 1.0, "images": []}
        grader.invoke(grade_prompt(chunk, question))  # type: ignore[arg-type]
    models.chat(context, "generate").invoke(question)
    return 2 + context.k + 1


def corpus(folder: Path, notes: int) -> None:
    topics = ["networking", "cooking", "travel", "python", "interviews", "finance", "health"]
    for i in range(notes):
        topic = topics[i % len(topics)]
        body = [f"# {topic.title()} note {i}\n"]
        for s in range(4):
            body.append(f"## Section {s} on {topic}\n")
            body.append(f"Paragraph about {topic} detail {i}-{s}. " * 12 + "\n")
            body.append("- point one\n- point two\n- point three\n")
        (folder / f"{topic}-{i:04d}.md").write_text("\n".join(body))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp())
    try:
        context = Context(
            chroma_persist_directory=str(root / "db"),
            collection_name="bench",
            embedding_model="fake-embed",
            score_threshold=0.0,
            k=5,
        )
        load_notes(
            context,
            Path(__file__).resolve().parents[1] / "tests" / "sample_notes",
            FakeModels().embedder,
        )

        # Warm up: the first question in a process imports the model and Chroma clients and
        # opens the index; measured separately below.
        started = time.perf_counter()
        build_graph(models=FakeModels()).invoke({"question": "warm up"}, context=context)
        cold = time.perf_counter() - started

        print(f"Per question, fake model latency {args.latency * 1000:.0f} ms per call, k=5")
        print(
            f"{'question':24} {'calls':>5} {'stages':>6} {'wall s':>7} {'baseline s':>10} "
            f"{'ratio':>6}"
        )
        for label, question, is_calculation in QUESTIONS:
            models = FakeModels({"route_calculator": is_calculation}, latency=args.latency)
            app = build_graph(models=models)
            started = time.perf_counter()
            app.invoke({"question": question}, context=context)
            wall = time.perf_counter() - started
            calls = models.calls()
            base_models = FakeModels(latency=args.latency)
            started = time.perf_counter()
            baseline(base_models, question, context)
            base = time.perf_counter() - started
            stages = round(wall / args.latency) if args.latency else 0
            print(
                f"{label:24} {calls:>5} {stages:>6} {wall:>7.2f} {base:>10.2f} {wall / base:>6.2f}"
            )

        print(
            f"\nFirst question in a process (imports, opening the index), 0 latency: {cold:.2f} s"
        )

        big = replace(context, collection_name="bench-1000")
        folder = root / "notes-1000"
        folder.mkdir()
        corpus(folder, 250)
        models = FakeModels()
        report = load_notes(big, folder, models.embedder)
        app = build_graph(models=models)
        app.invoke({"question": "warm up"}, context=big)
        timings = []
        for i in range(20):
            started = time.perf_counter()
            app.invoke(
                {"question": f"What is the detail about travel section {i % 4}?"}, context=big
            )
            timings.append((time.perf_counter() - started) * 1000)
        print(
            f"\nFramework overhead, zero-latency fakes, {report.chunks_written}-chunk collection,"
            f" retrieval question (route + retrieve + 5 grades + generate):"
        )
        print(
            f"  median {statistics.median(timings):.1f} ms, max {max(timings):.1f} ms "
            f"over {len(timings)} questions"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
