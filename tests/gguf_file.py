"""A GGUF file's header, read directly: its key/value fields and where its tensors are.

gguf's own ``GGUFReader`` indexes every tensor and every array element as a numpy view:
about 28 s of CPU for Gemma 3 270M's 262,144-token vocabulary, minutes for larger ones. Here
each array is read in one pass (numbers with ``numpy.frombuffer``, strings one by one),
under a second. Used by the stand-in (a model's template and stop tokens) and by
``tests/tiny_model.py`` (Gemma's tokenizer and token embeddings).
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

#: GGUF value types (gguf's ``GGUFValueType``): the numpy dtype of each fixed-size one.
NUMBERS = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "?",
           10: "<u8", 11: "<i8", 12: "<f8"}  # fmt: skip
STRING, ARRAY = 8, 9

#: Tensor types stored as plain numbers (gguf's ``GGMLQuantizationType`` names).
PLAIN = {"F16": np.float16, "F32": np.float32, "F64": np.float64, "I8": np.int8,
         "I16": np.int16, "I32": np.int32, "I64": np.int64}  # fmt: skip


class Field(NamedTuple):
    """A key's value (arrays as lists, as ``ReaderField.contents()`` gives them) and type."""

    value: Any
    kind: int


class TensorInfo(NamedTuple):
    """A tensor's GGML type, its GGUF dims (innermost first) and its offset in the data."""

    kind: int
    dims: tuple[int, ...]
    offset: int


class GgufFile:
    """The fields and tensors of the GGUF file at ``path`` (memory-mapped, read on demand)."""

    def __init__(self, path: str | Path) -> None:
        self.path = path
        self.data = np.memmap(path, dtype=np.uint8, mode="r")
        self._buffer = memoryview(self.data)
        magic, version, n_tensors, n_fields = struct.unpack_from("<4sIQQ", self._buffer, 0)
        if magic != b"GGUF":
            raise ValueError(f"{path}: not a GGUF file")
        if version < 2:
            raise ValueError(f"{path}: GGUF version {version} is not supported")
        self._offset = 24
        self.fields: dict[str, Field] = {}
        for _ in range(n_fields):
            name = self._string()
            (kind,) = self._unpack("<I")
            self.fields[name] = Field(self._value(kind), kind)
        self.tensors: dict[str, TensorInfo] = {}
        for _ in range(n_tensors):
            name = self._string()
            (n_dims,) = self._unpack("<I")
            dims = self._unpack(f"<{n_dims}Q")
            kind, offset = self._unpack("<IQ")
            self.tensors[name] = TensorInfo(kind, dims, offset)
        alignment = self.fields.get("general.alignment", Field(32, 4)).value
        self._data_start = -(-self._offset // alignment) * alignment

    def metadata(self) -> dict[str, Any]:
        """Every key's value."""
        return {name: field.value for name, field in self.fields.items()}

    def tensor_data(self, name: str) -> np.ndarray:
        """A tensor's data shaped as ``GGUFReader`` shapes it: numbers in numpy's order of
        the dims, quantized blocks as one row of bytes per row of the matrix."""
        import gguf

        info = self.tensors[name]
        kind = gguf.GGMLQuantizationType(info.kind)
        block_size, type_size = gguf.GGML_QUANT_SIZES[kind]
        size = int(np.prod(info.dims)) * type_size // block_size
        start = self._data_start + info.offset
        raw = self.data[start : start + size]
        shape = tuple(reversed(info.dims))
        if kind.name in PLAIN:
            return raw.view(PLAIN[kind.name]).reshape(shape)
        return raw.reshape(gguf.quant_shape_to_byte_shape(shape, kind))

    def _unpack(self, layout: str) -> tuple:
        values = struct.unpack_from(layout, self._buffer, self._offset)
        self._offset += struct.calcsize(layout)
        return values

    def _string(self) -> str:
        (size,) = self._unpack("<Q")
        text = bytes(self._buffer[self._offset : self._offset + size])
        self._offset += size
        return text.decode("utf-8", errors="replace")

    def _value(self, kind: int) -> Any:
        if kind == STRING:
            return self._string()
        if kind == ARRAY:
            item_kind, count = self._unpack("<IQ")
            if item_kind not in NUMBERS:
                return [self._value(item_kind) for _ in range(count)]
            dtype = np.dtype(NUMBERS[item_kind])
            items = np.frombuffer(self._buffer, dtype, count, self._offset)
            self._offset += dtype.itemsize * count
            return items.tolist()
        dtype = np.dtype(NUMBERS[kind])
        (value,) = np.frombuffer(self._buffer, dtype, 1, self._offset).tolist()
        self._offset += dtype.itemsize
        return value
