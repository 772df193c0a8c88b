"""The image store: a run's images are used once, dropped when not needed, and expire.

Every image a run sends waits in the process's memory (``graph.images.IMAGES``) until the
run looks at it: one that stays after its run is memory the server never gets back.
"""

from __future__ import annotations

import base64
import re
from dataclasses import replace

import pytest

from graph.builder import build_graph
from graph.errors import ConfigError
from graph.images import IMAGES, ImageStore, take_images
from tests.fakes import FakeModels

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_image_is_taken_once():
    store = ImageStore()
    reference = store.put(PNG)
    assert store.holds(reference) and store.held_bytes == len(PNG)
    assert store.take(reference) == PNG
    assert not store.holds(reference) and store.held_bytes == 0
    assert store.take(reference) is None


def test_an_image_nobody_takes_expires():
    clock = Clock()
    store = ImageStore(ttl_seconds=600.0, clock=clock)
    left = store.put(PNG)
    clock.now += 599.0
    assert store.holds(left)  # still within its time
    clock.now += 2.0
    assert not store.holds(left) and store.held_bytes == 0
    assert store.take(left) is None
    # A later put clears what expired before it, without anyone asking about it.
    old = store.put(PNG)
    clock.now += 601.0
    store.put(b"new")
    assert store.held_bytes == 3 and not store.holds(old)


def test_the_store_keeps_to_its_bytes_oldest_first():
    store = ImageStore(max_bytes=2 * len(PNG))
    first, second, third = store.put(PNG), store.put(PNG), store.put(PNG)
    assert not store.holds(first) and store.holds(second) and store.holds(third)
    assert store.held_bytes == 2 * len(PNG)


def test_expiry_drops_only_what_is_older_than_its_time():
    clock = Clock()
    store = ImageStore(ttl_seconds=600.0, clock=clock)
    old = store.put(PNG)
    clock.now += 400.0
    fresh = store.put(PNG)
    clock.now += 201.0  # old is 601 s old, fresh 201 s
    assert not store.holds(old) and store.holds(fresh)


def test_the_newest_image_is_kept_even_alone_over_the_bound():
    store = ImageStore(max_bytes=len(PNG))
    first, second = store.put(PNG), store.put(PNG)
    assert not store.holds(first) and store.holds(second)
    big = store.put(PNG * 3)  # larger than the bound: the question still gets its image
    assert store.holds(big) and not store.holds(second) and store.held_bytes == 3 * len(PNG)


def test_a_large_image_drops_as_many_old_ones_as_it_needs():
    store = ImageStore(max_bytes=2 * len(PNG))
    small = [store.put(PNG), store.put(PNG)]
    big = store.put(PNG * 2)
    assert store.holds(big) and not any(store.holds(r) for r in small)


def test_discarding_what_is_already_gone_is_harmless():
    store = ImageStore()
    reference = store.put(PNG)
    store.take(reference)
    store.discard([reference, "rag-image:unknown"])
    assert store.held_bytes == 0


def test_as_many_images_as_allowed_are_taken_and_references_count_in_the_total():
    from graph.images import MAX_IMAGES, MAX_RUN_IMAGE_BYTES, input_images

    inline = base64.b64encode(PNG).decode()
    references = input_images([inline] * MAX_IMAGES, allow_paths=False)
    assert len(references) == MAX_IMAGES
    IMAGES.discard(references)
    # A reference the server made when the request arrived counts with its bytes.
    big = IMAGES.put(PNG + b"\x00" * (MAX_RUN_IMAGE_BYTES // 2))
    with pytest.raises(ConfigError, match="20 MB in all"):
        input_images([big, big, inline], allow_paths=False)
    assert not IMAGES.holds(big)  # a refused question leaves nothing behind
    with pytest.raises(ConfigError, match="no longer held"):
        input_images(["rag-image:unknown"], allow_paths=False)


def test_taking_an_image_already_used_is_a_clear_error():
    reference = IMAGES.put(PNG)
    assert take_images([reference]) == [base64.b64encode(PNG).decode()]
    with pytest.raises(ConfigError, match="no longer held"):
        take_images([reference])


def inline_png(sample_notes) -> str:
    return base64.b64encode((sample_notes / "tech" / "img" / "network.png").read_bytes()).decode()


@pytest.mark.parametrize(
    ("question", "capabilities", "route"),
    [
        # looked at by the vision model
        ("based on the image: what colour?", {"llava": {"vision"}}, "image"),
        # no vision model: said so, the image dropped
        ("based on the image: what colour?", {}, "image"),
        # a question about the notes: the image is dropped at once
        ("how do I feed a sourdough starter?", {}, "retrieve"),
    ],
)
def test_no_image_stays_in_the_store_after_its_run(
    loaded, sample_notes, question, capabilities, route
):
    held = IMAGES.held_bytes
    models = FakeModels(
        {"route_image": '{"score": "%s"}' % ("yes" if route == "image" else "no")},
        capabilities=capabilities,
    )
    context = replace(loaded, vision_model="llava")
    out = build_graph(models=models).invoke(
        {"question": question, "images": [inline_png(sample_notes)]}, context=context
    )
    assert out["route"] == route
    assert IMAGES.held_bytes == held


def test_an_image_is_held_to_the_end_of_its_time_and_no_longer():
    clock = Clock()
    store = ImageStore(clock=clock)  # the default time: ten minutes
    reference = store.put(PNG)
    clock.now += 600.0
    assert store.holds(reference)  # exactly its time: still held
    clock.now += 0.001
    assert not store.holds(reference)


def test_a_reference_is_unguessable_and_its_size_is_what_it_holds():
    store = ImageStore()
    reference = store.put(PNG)
    # 128 random bits: a reference cannot be guessed to take another run's image.
    assert re.fullmatch(r"rag-image:[0-9a-f]{32}", reference)
    assert store.size(reference) == len(PNG)
    assert store.size("rag-image:unknown") == 0


def test_inline_images_are_bounded_before_decoding_to_the_exact_cap():
    from graph.images import MAX_IMAGE_BYTES, decode_inline

    bound = (MAX_IMAGE_BYTES // 3 + 1) * 4 + 16  # the base64 of the largest image, and slack
    encoded = base64.b64encode(PNG).decode()
    # Line breaks count towards the bound: the text is refused before anything is decoded.
    at_bound = encoded + "\n" * (bound - len(encoded))
    assert decode_inline(at_bound) == PNG
    with pytest.raises(ConfigError) as refused:
        decode_inline(at_bound + "\n")
    assert str(refused.value) == "image is larger than 20 MB"


def test_a_data_uri_holds_one_payload_after_its_first_comma():
    from graph.images import decode_inline

    encoded = base64.b64encode(PNG).decode()
    with pytest.raises(ConfigError, match="is not base64"):
        decode_inline(f"data:image/png;base64,{encoded},{encoded}")


def test_each_refusal_of_inline_images_says_why_in_one_line():
    from graph.images import decode_inline, input_images

    long_text = "not an image at all, and not base64 either: " * 3
    with pytest.raises(ConfigError) as refused:
        decode_inline(long_text)
    assert str(refused.value) == (
        f"image {long_text[:40]!r} is not base64 or a data: URI (file paths are not accepted "
        "here: send the image's bytes)"
    )
    with pytest.raises(ConfigError) as refused:
        decode_inline(base64.b64encode(b"plain text").decode())
    assert str(refused.value) == "image is not a PNG, JPEG, GIF or WebP image"
    with pytest.raises(ConfigError) as refused:
        input_images("one.png", allow_paths=True)  # type: ignore[arg-type]
    assert str(refused.value) == "images must be a list of base64 strings or data: URIs"
    with pytest.raises(ConfigError) as refused:
        input_images([b"bytes"], allow_paths=False)  # type: ignore[list-item]
    assert str(refused.value) == "each image must be a string (base64 or a data: URI)"
    for gone in (
        lambda: input_images(["rag-image:unknown"], allow_paths=False),
        lambda: take_images(["rag-image:unknown"]),
    ):
        with pytest.raises(ConfigError) as refused:
            gone()
        assert str(refused.value) == "an image of this question is no longer held: send it again"


def test_a_text_that_long_is_never_taken_for_a_path():
    from graph.images import input_images

    # 4,096 characters and more are read as base64 even where paths are allowed (no file
    # system call with them): here, valid base64 of something that is not an image.
    with pytest.raises(ConfigError, match="is not a PNG"):
        input_images(["a" * 4096], allow_paths=True)


def test_the_images_of_one_question_may_hold_exactly_the_run_bound():
    from graph.images import MAX_RUN_IMAGE_BYTES, input_images

    halves = [IMAGES.put(PNG + b"\x00" * (MAX_RUN_IMAGE_BYTES // 2 - len(PNG))) for _ in "ab"]
    try:
        assert input_images(halves, allow_paths=False) == halves
        one_more = IMAGES.put(PNG)
        with pytest.raises(ConfigError, match="20 MB in all"):
            input_images([*halves, one_more], allow_paths=False)
    finally:
        IMAGES.discard(halves)
