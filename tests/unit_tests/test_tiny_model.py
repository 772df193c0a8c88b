"""The GGUF reader (tests/gguf_file.py) reads what gguf's own does; the tiny model's recipe is
pinned, on every machine."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import gguf
import numpy as np
import pytest

from tests.gguf_file import GgufFile
from tests.tiny_model import VERSION

#: sha256 of the tiny model built from Gemma 3 270M's file by recipe VERSION 3 (5,426,176 bytes).
BUILT = "9efd8dd69face5910dc4312123350cde98880f3cabcfc238d3f1b7f8a8faaacb"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def written(tmp_path):
    """A GGUF with a field of every value type and tensors of two storage types."""
    path = tmp_path / "every-type.gguf"
    writer = gguf.GGUFWriter(str(path), "gemma3")
    kinds = gguf.GGUFValueType
    scalars = {
        "t.u8": (7, kinds.UINT8),
        "t.i8": (-7, kinds.INT8),
        "t.u16": (700, kinds.UINT16),
        "t.i16": (-700, kinds.INT16),
        "t.u32": (70_000, kinds.UINT32),
        "t.i32": (-70_000, kinds.INT32),
        "t.f32": (0.5, kinds.FLOAT32),
        "t.bool": (True, kinds.BOOL),
        "t.str": ("Grüße ▁piece", kinds.STRING),
        "t.u64": (2**40, kinds.UINT64),
        "t.i64": (-(2**40), kinds.INT64),
        "t.f64": (0.1, kinds.FLOAT64),
    }
    for name, (value, kind) in scalars.items():
        writer.add_key_value(name, value, kind)
    writer.add_array("t.strings", ["<pad>", "▁the", "", "ü"])
    writer.add_array("t.floats", [0.25, -1.5, 3.0])
    writer.add_array("t.ints", [1, -2, 3])
    writer.add_array("t.empty", [])
    rng = np.random.default_rng(1)
    writer.add_tensor("plain.weight", rng.standard_normal((3, 5)).astype(np.float32))
    quantized = gguf.quants.quantize(
        rng.standard_normal((4, 64)).astype(np.float32), gguf.GGMLQuantizationType.Q8_0
    )
    writer.add_tensor("q8.weight", quantized, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_the_reader_reads_every_field_as_gguf_does(written):
    theirs = gguf.GGUFReader(str(written))
    ours = GgufFile(written)
    stored = {n: f for n, f in theirs.fields.items() if not n.startswith("GGUF.")}  # header
    assert list(ours.fields) == list(stored)
    for name, field in stored.items():
        value, kind = ours.fields[name]
        assert kind == int(field.types[0]), name
        assert value == field.contents(), name
        assert type(value) is type(field.contents()), name


def test_the_reader_reads_every_tensor_as_gguf_does(written):
    theirs = gguf.GGUFReader(str(written))
    ours = GgufFile(written)
    assert list(ours.tensors) == [t.name for t in theirs.tensors]
    for tensor in theirs.tensors:
        kind, dims, _ = ours.tensors[tensor.name]
        data = ours.tensor_data(tensor.name)
        assert kind == int(tensor.tensor_type)
        assert list(dims) == tensor.shape.tolist()
        assert data.dtype == tensor.data.dtype and data.shape == tensor.data.shape
        assert data.tobytes() == np.asarray(tensor.data).tobytes()


def test_the_recipe_builds_the_pinned_model_whatever_the_cpu(tmp_path):
    """Recipe VERSION 3 gives exactly these bytes, whichever matrix kernels the CPU gets.

    The build runs with OpenBLAS's Sandybridge kernels, whose float32 sums round differently
    from the Haswell and Zen kernels machines pick by default (recipe 2 built one file with
    those here, another with Sandybridge's, and a third on the machine that pinned it): a
    recipe that depends on the kernels fails here on such machines.
    """
    assert VERSION == 3, "a new recipe version: pin its sha256 here"
    out = tmp_path / "tiny.gguf"
    build = f"import pathlib, tests.tiny_model as t; t._build(pathlib.Path({str(out)!r}))"
    env = {**os.environ, "OPENBLAS_CORETYPE": "Sandybridge", "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", build], env=env, cwd=ROOT, check=True, timeout=120)
    assert hashlib.sha256(out.read_bytes()).hexdigest() == BUILT
