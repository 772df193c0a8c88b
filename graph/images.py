"""Images for the vision model: checked to be images, bounded, and never kept in state.

A run's ``images`` are untrusted when the graph is served over HTTP: there they must be
inline (base64 or a ``data:`` URI) and are never taken as file paths. The command line and
Python callers may pass paths; the file is read with a cap on the read itself.

Checked images wait in :data:`IMAGES`, an in-process store, and the state holds only a
reference to them (``rag-image:<id>``): a thread's checkpoints (every one of them is kept)
and, when served, the stored run records stay small. The ``image`` node takes them out of
the store when it looks at them; ``route`` drops them at once when the question goes
elsewhere; anything a failed run left behind expires.
"""

from __future__ import annotations

import base64
import binascii
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from graph.errors import ConfigError
from graph.index.image_files import (
    MAX_IMAGE_BYTES,
    MAX_IMAGES,
    checked_image,
    image_kind,
    read_image_file,
)

__all__ = [
    "IMAGES",
    "MAX_IMAGES",
    "MAX_IMAGE_BYTES",
    "MAX_RUN_IMAGE_BYTES",
    "ImageStore",
    "decode_inline",
    "image_kind",
    "input_images",
]

#: All images of one run together, decoded.
MAX_RUN_IMAGE_BYTES = 20 * 1024 * 1024
#: A reference to an image in :data:`IMAGES`, as the state holds it.
REFERENCE = "rag-image:"


class ImageStore:
    """Images waiting for the run that sent them: bounded in bytes and in time."""

    def __init__(
        self,
        max_bytes: int = 4 * MAX_RUN_IMAGE_BYTES,
        ttl_seconds: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Hold at most ``max_bytes`` (oldest dropped first), each for ``ttl_seconds``."""
        self.max_bytes, self.ttl_seconds, self._clock = max_bytes, ttl_seconds, clock
        self._items: OrderedDict[str, tuple[float, bytes]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def held_bytes(self) -> int:
        """Bytes held now."""
        with self._lock:
            return sum(len(data) for _, data in self._items.values())

    def put(self, data: bytes) -> str:
        """Keep ``data`` (already checked) and return its reference."""
        reference = REFERENCE + secrets.token_hex(16)
        with self._lock:
            self._expire()
            self._items[reference] = (self._clock(), data)
            held = sum(len(d) for _, d in self._items.values())
            while held > self.max_bytes and len(self._items) > 1:
                _, (_, dropped) = self._items.popitem(last=False)
                held -= len(dropped)
        return reference

    def holds(self, reference: str) -> bool:
        """Whether ``reference`` still names an image here."""
        with self._lock:
            self._expire()
            return reference in self._items

    def size(self, reference: str) -> int:
        """The size of the image ``reference`` names (0 if none)."""
        with self._lock:
            item = self._items.get(reference)
            return len(item[1]) if item else 0

    def take(self, reference: str) -> bytes | None:
        """The image ``reference`` names, removed from the store; ``None`` if gone."""
        with self._lock:
            self._expire()
            item = self._items.pop(reference, None)
        return item[1] if item else None

    def discard(self, references: list[str]) -> None:
        """Forget these images (the run does not need them)."""
        with self._lock:
            for reference in references:
                self._items.pop(reference, None)

    def _expire(self) -> None:
        oldest = self._clock() - self.ttl_seconds
        while self._items and next(iter(self._items.values()))[0] < oldest:
            self._items.popitem(last=False)


IMAGES = ImageStore()
"""The process's images in flight (the served graph and Python callers alike)."""


def decode_inline(item: str) -> bytes:
    """The bytes of an image given as base64 text or a ``data:`` URI (never a path)."""
    payload = item.split(",", 1)[1] if item.startswith("data:") else item
    # 4 base64 characters carry 3 bytes: refuse oversized input before decoding it.
    if len(payload) > (MAX_IMAGE_BYTES // 3 + 1) * 4 + 16:
        raise ConfigError(f"image is larger than {MAX_IMAGE_BYTES // 2**20} MB")
    try:
        try:
            data = base64.b64decode(payload, validate=True)
        except binascii.Error:  # line-wrapped base64: strict decoding refuses the line breaks
            data = base64.b64decode("".join(payload.split()), validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(
            f"image {item[:40]!r} is not base64 or a data: URI (file paths are not accepted "
            "here: send the image's bytes)"
        ) from None
    return checked_image(data, "image")


def input_images(items: list[str], *, allow_paths: bool) -> list[str]:
    """References to the run's images in :data:`IMAGES`, each checked, all bounded together.

    Items are references already (put there by the server when the request arrived), inline
    images (base64 or ``data:`` URIs), or, only when ``allow_paths`` (the command line and
    Python callers), file paths.
    """
    if not isinstance(items, list):
        raise ConfigError("images must be a list of base64 strings or data: URIs")
    if len(items) > MAX_IMAGES:
        raise ConfigError(f"at most {MAX_IMAGES} images per question, got {len(items)}")
    references, total = [], 0
    try:
        for item in items:
            if not isinstance(item, str):
                raise ConfigError("each image must be a string (base64 or a data: URI)")
            if item.startswith(REFERENCE):
                if not IMAGES.holds(item):
                    raise ConfigError("an image of this question is no longer held: send it again")
                total += IMAGES.size(item)
                references.append(item)
            else:
                path = Path(item).expanduser() if allow_paths and len(item) < 4096 else None
                data = read_image_file(path) if path and path.is_file() else decode_inline(item)
                total += len(data)
                references.append(IMAGES.put(data))
            if total > MAX_RUN_IMAGE_BYTES:
                raise ConfigError(
                    f"the images of one question may hold {MAX_RUN_IMAGE_BYTES // 2**20} MB in all"
                )
    except ConfigError:
        IMAGES.discard(references)
        raise
    return references


def take_images(references: list[str]) -> list[str]:
    """Base64 of each referenced image, taken out of :data:`IMAGES` (used once)."""
    encoded = []
    for reference in references:
        data = IMAGES.take(reference)
        if data is None:
            raise ConfigError("an image of this question is no longer held: send it again")
        encoded.append(base64.b64encode(data).decode())
    return encoded
