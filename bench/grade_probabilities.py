"""How sure the grader is: P(yes) of every grade `rag eval --graded` asks for, one per line.

Each question of a labelled set is searched as the graph searches (hybrid, the embedding
model's floor) and every chunk at or above the floor is graded with the graph's own grade
prompt and options, plus Ollama's token log-probabilities (which only the answer check asks
for in the graph). P(yes) is read as the check reads it (``graph.llm.yes_probability``). The
set's notes must already be loaded as `rag eval` loads them (run `rag eval --set SET -e
MODEL` once). Needs a server that returns log-probabilities (Ollama 0.12.11 or later, or
the stand-in). Figures in docs/quality.md, "After the grader".

    OLLAMA_HOST=http://127.0.0.1:11435 RAG_CHAT_MODEL=qwen2.5-coder:1.5b \\
        .venv/bin/python bench/grade_probabilities.py \\
        --set tests/retrieval_eval_distractors.json -e nomic-embed-text -k 3
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from langchain_ollama import ChatOllama  # noqa: E402

from app.evaluation.retrieval import eval_collection, load_set  # noqa: E402
from graph.context import Context  # noqa: E402
from graph.index.retrieval import search_notes  # noqa: E402
from graph.index.vectorstore import with_embedding_model  # noqa: E402
from graph.llm import message_text, parse_grade, yes_probability  # noqa: E402
from graph.models import CHECK_TOP_LOGPROBS, default_models, options_for  # noqa: E402
from graph.ollama import client_options  # noqa: E402
from nodes.grade_documents import fitted_prompt  # noqa: E402


def grader(context: Context) -> ChatOllama:
    """The graph's grade model (same options), asked for token log-probabilities too."""
    options = options_for("grade", None)
    options.update(logprobs=True, top_logprobs=CHECK_TOP_LOGPROBS)
    return ChatOllama(
        model=context.chat_model,
        base_url=context.ollama_base_url,
        num_ctx=context.num_ctx,
        client_kwargs=client_options(context.request_timeout),
        **options,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", required=True, help="labelled set (JSON)")
    parser.add_argument("-e", "--embedding-model", required=True)
    parser.add_argument("-k", type=int, default=3)
    args = parser.parse_args()
    named = Context(
        collection_name=eval_collection(args.set, args.embedding_model),
        embedding_model=args.embedding_model,
    )
    context = with_embedding_model(replace(named, k=args.k))
    embeddings = default_models().embeddings(context)
    model = grader(context)
    _, questions = load_set(args.set)
    for item in questions:
        found = search_notes(context, embeddings, item.question)
        for chunk in found.relevant:
            # As the graph asks it: a long section on its window, a prompt fitted to num_ctx.
            prompt, _ = fitted_prompt(chunk, item.question, context)
            reply = model.invoke(prompt)
            row = {
                "q": item.question,
                "answerable": item.answerable,
                "source": chunk["source"],
                "heading": chunk["heading"],
                "expected": chunk["source"] in item.sources,
                "verdict": parse_grade(message_text(reply)),
                "p_yes": yes_probability(reply),
            }
            print(json.dumps(row, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
