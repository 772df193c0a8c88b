"""The served graph's trust boundary, driven the way the HTTP API drives it."""

import base64
from dataclasses import replace

import pytest

from graph.builder import build_graph
from graph.context import Context
from graph.errors import ConfigError
from graph.images import MAX_IMAGE_BYTES, MAX_IMAGES, decode_inline, image_kind, input_images
from tests.fakes import FakeModels

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def served(models):
    return build_graph(models=models, served=True)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("ollama_base_url", "http://attacker.example:80"),
        ("chroma_server_url", "http://attacker.example:8000"),
        ("chroma_persist_directory", "/tmp/elsewhere"),
    ],
)
def test_a_served_run_cannot_redirect_endpoints_or_storage(ctx, name, value, monkeypatch):
    monkeypatch.setenv("RAG_CHROMA_DIR", ctx.chroma_persist_directory)
    models = FakeModels()
    with pytest.raises(ConfigError, match=f"{name} cannot be set by a request"):
        served(models).invoke({"question": "calculate: 1+1"}, context=replace(ctx, **{name: value}))
    assert models.calls() == 0 and models.capability_calls == 0


def test_a_served_run_with_the_servers_own_settings_runs(ctx, monkeypatch):
    monkeypatch.setenv("RAG_CHROMA_DIR", ctx.chroma_persist_directory)
    out = served(FakeModels()).invoke({"question": "calculate: 6*7"}, context=Context(k=3))
    assert out["answer"] == "6*7 = 42"


def test_a_served_run_never_reads_a_file_named_in_images(ctx, tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_CHROMA_DIR", ctx.chroma_persist_directory)
    secret = tmp_path / "id_rsa.png"
    secret.write_bytes(PNG)  # even a real image file is not read through the API
    models = FakeModels(capabilities={"llama3.1:8b": {"vision"}})
    with pytest.raises(ConfigError, match="file paths are not accepted"):
        served(models).invoke(
            {"question": "based on the image: what is it?", "images": [str(secret)]},
            context=Context(),
        )
    assert models.calls() == 0


def test_python_callers_may_pass_paths_and_images_do_not_carry_over(ctx, tmp_path):
    from langgraph.checkpoint.memory import InMemorySaver

    picture = tmp_path / "p.png"
    picture.write_bytes(PNG)
    models = FakeModels(capabilities={"llama3.1:8b": {"vision"}})
    app = build_graph(checkpointer=InMemorySaver(), models=models)
    thread = {"configurable": {"thread_id": "t"}}
    first = app.invoke(
        {"question": "based on the image: what?", "images": [str(picture)]}, thread, context=ctx
    )
    assert first["route"] == "image" and models.calls("vision") == 1
    second = app.invoke({"question": "based on the image: and now?"}, thread, context=ctx)
    assert second["answer"].startswith("There is no image to look at")
    assert models.calls("vision") == 1


def test_inline_images_must_be_images():
    assert image_kind(PNG) == "png"
    assert image_kind(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "webp"
    assert decode_inline("data:image/png;base64," + base64.b64encode(PNG).decode()) == PNG
    with pytest.raises(ConfigError, match="not a PNG, JPEG, GIF or WebP"):
        decode_inline(base64.b64encode(b"[core]\n\trepositoryformatversion = 0\n").decode())
    with pytest.raises(ConfigError, match="not base64"):
        decode_inline("/etc/passwd")


def test_image_count_and_size_are_checked_before_decoding():
    with pytest.raises(ConfigError, match=f"at most {MAX_IMAGES} images"):
        input_images(["!"] * (MAX_IMAGES + 1), allow_paths=False)  # "!" is not even base64
    with pytest.raises(ConfigError, match="larger than"):
        decode_inline("!" * (MAX_IMAGE_BYTES // 3 * 4 + 100))


@pytest.mark.parametrize(
    ("field", "value"),
    [("k", 10_000), ("grade_concurrency", 1_000), ("num_ctx", 10), ("request_timeout", 1e9)],
)
def test_numeric_settings_are_bounded(field, value):
    with pytest.raises(ValueError, match=f"{field} must be between"):
        Context(**{field: value})


def test_a_setting_of_the_wrong_type_is_a_clear_error():
    with pytest.raises(ValueError, match="k must be a whole number"):
        Context(k="5")  # type: ignore[arg-type]
