"""Image files: what counts as an image, and reading one with its size capped.

Both the index (images embedded in notes) and the graph's input images use these rules, so
they live at the bottom, in the index.
"""

from __future__ import annotations

import base64
from pathlib import Path

from graph.errors import ConfigError

MAX_IMAGES = 4
MAX_IMAGE_BYTES = 20 * 1024 * 1024
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"\xff\xd8\xff", "jpeg"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
)


def image_kind(data: bytes) -> str | None:
    """``png``, ``jpeg``, ``gif`` or ``webp`` from the file's first bytes; ``None`` otherwise."""
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            return kind
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return None


def checked_image(data: bytes, what: str) -> bytes:
    """``data`` if it is an image within the size cap; a one-line ``ConfigError`` otherwise."""
    if len(data) > MAX_IMAGE_BYTES:
        raise ConfigError(f"{what} is larger than {MAX_IMAGE_BYTES // 2**20} MB")
    if image_kind(data) is None:
        raise ConfigError(f"{what} is not a PNG, JPEG, GIF or WebP image")
    return data


def read_image_file(path: Path) -> bytes:
    """An image file's bytes, reading at most one byte more than the cap."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_IMAGE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read image {path}: {exc.strerror or exc}") from None
    return checked_image(data, f"image {path}")


def encode_file(path: Path) -> str:
    """Base64 of an image file (checked), as the vision model takes it."""
    return base64.b64encode(read_image_file(path)).decode()
