"""Images for the vision model: checked to be images, bounded in number and size.

A run's ``images`` are untrusted when the graph is served over HTTP: there they must be
inline (base64 or a ``data:`` URI) and are never taken as file paths. The command line and
Python callers may pass paths; the file is read here with a cap on the read itself.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path

from graph.errors import ConfigError
from graph.index.image_files import (
    MAX_IMAGE_BYTES,
    MAX_IMAGES,
    checked_image,
    image_kind,
    read_image_file,
)

__all__ = ["MAX_IMAGE_BYTES", "MAX_IMAGES", "decode_inline", "image_kind", "input_images"]


def decode_inline(item: str) -> bytes:
    """The bytes of an image given as base64 text or a ``data:`` URI (never a path)."""
    payload = item.split(",", 1)[1] if item.startswith("data:") else item
    # 4 base64 characters carry 3 bytes: refuse oversized input before decoding it.
    if len(payload) > (MAX_IMAGE_BYTES // 3 + 1) * 4 + 16:
        raise ConfigError(f"image is larger than {MAX_IMAGE_BYTES // 2**20} MB")
    try:
        data = base64.b64decode("".join(payload.split()), validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(
            f"image {item[:40]!r} is not base64 or a data: URI (file paths are not accepted "
            "here: send the image's bytes)"
        ) from None
    return checked_image(data, "image")


def input_images(items: list[str], *, allow_paths: bool) -> list[str]:
    """Base64 of each input image; paths only when ``allow_paths`` (the CLI, Python callers)."""
    if len(items) > MAX_IMAGES:
        raise ConfigError(f"at most {MAX_IMAGES} images per question, got {len(items)}")
    encoded = []
    for item in items:
        if not isinstance(item, str):
            raise ConfigError("each image must be a string (base64 or a data: URI)")
        path = Path(item).expanduser() if allow_paths and len(item) < 4096 else None
        data = read_image_file(path) if path and path.is_file() else decode_inline(item)
        encoded.append(base64.b64encode(data).decode())
    return encoded
