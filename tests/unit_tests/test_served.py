"""The served graph's trust boundary, driven the way the HTTP API drives it."""

import base64
from dataclasses import fields

import pytest

from app.serving.context import SERVER_ONLY, ServedContext
from app.serving.graph import build_served_graph
from graph.builder import build_graph
from graph.context import Context
from graph.errors import ConfigError
from graph.images import MAX_IMAGE_BYTES, MAX_IMAGES, decode_inline, image_kind, input_images
from tests.fakes import FakeModels

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def served(models):
    return build_served_graph(models=models)


def test_the_served_context_has_no_server_only_setting():
    schema = served(FakeModels()).get_context_jsonschema()["properties"]
    server_only = {f.name for f in fields(Context) if f.metadata["server_only"]}
    assert server_only == set(SERVER_ONLY)
    assert server_only == {
        "ollama_base_url",
        "chroma_persist_directory",
        "chroma_server_url",
        "keep_alive",
        "read_ahead",
    }
    assert not server_only & set(schema)
    # everything else a request may still choose
    assert set(schema) == {f.name for f in fields(Context)} - server_only


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("ollama_base_url", "http://attacker.example:80"),
        ("chroma_server_url", "http://attacker.example:8000"),
        ("chroma_persist_directory", "/tmp/elsewhere"),
        ("keep_alive", "-1"),
    ],
)
def test_a_served_run_cannot_name_a_server_only_setting(ctx, name, value, monkeypatch):
    monkeypatch.setenv("RAG_CHROMA_DIR", ctx.chroma_persist_directory)
    models = FakeModels()
    with pytest.raises(TypeError, match=name):
        served(models).invoke({"question": "calculate: 1+1"}, context={name: value})
    assert models.calls() == 0 and models.capability_calls == 0


def test_a_served_runs_server_settings_are_the_servers(ctx, monkeypatch):
    monkeypatch.setattr(
        "app.serving.context.server_settings",
        lambda: Context(
            ollama_base_url="http://127.0.0.1:9",
            chroma_persist_directory=ctx.chroma_persist_directory,
            keep_alive="5m",
        ),
    )
    context = ServedContext(k=3)
    assert context.ollama_base_url == "http://127.0.0.1:9"
    assert context.effective_chroma_dir == ctx.chroma_persist_directory
    assert context.keep_alive == "5m" and context.chroma_server_url == ""
    assert not context.trusted and Context.trusted


def test_a_served_run_with_the_servers_own_settings_runs(ctx, monkeypatch):
    monkeypatch.setenv("RAG_CHROMA_DIR", ctx.chroma_persist_directory)
    out = served(FakeModels()).invoke({"question": "calculate: 6*7"}, context={"k": 3})
    assert out["answer"] == "6*7 = 42"


def test_a_served_run_never_reads_a_file_named_in_images(ctx, tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_CHROMA_DIR", ctx.chroma_persist_directory)
    secret = tmp_path / "id_rsa.png"
    secret.write_bytes(PNG)  # even a real image file is not read through the API
    models = FakeModels(capabilities={"llama3.1:8b": {"vision"}})
    with pytest.raises(ConfigError, match="file paths are not accepted"):
        served(models).invoke(
            {"question": "based on the image: what is it?", "images": [str(secret)]},
            context={},
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
    wrapped = base64.encodebytes(PNG * 20).decode()  # 76 characters a line, as MIME writes it
    assert "\n" in wrapped.strip() and decode_inline(wrapped) == PNG * 20
    with pytest.raises(ConfigError, match="not base64"):
        decode_inline(base64.b64encode(PNG).decode() + "*")  # not the base64 alphabet
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


def test_the_served_graph_keeps_its_threads_in_the_callers_checkpointer():
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver()
    thread = {"configurable": {"thread_id": "t1"}}
    out = build_served_graph(saver, FakeModels()).invoke(
        {"question": "calculate: 6*7"}, thread, context={}
    )
    assert out["answer"] == "6*7 = 42"
    assert saver.get_tuple(thread).checkpoint["channel_values"]["answer"] == "6*7 = 42"


def test_the_served_context_is_context_less_the_server_only_fields():
    # Made again here (the module makes it once, at import): each field keeps Context's
    # type, default and metadata, keyword-only, with the server's side for the rest.
    import typing
    from dataclasses import MISSING

    from app.serving import context as served_context

    made = served_context._served_context()
    assert made.__name__ == "ServedContext" and made.__module__ == "app.serving.context"
    assert made.__doc__ == (
        "Settings a served run may choose; the server's own settings are fixed."
    )
    assert issubclass(made, served_context._ServerSide)
    hints = typing.get_type_hints(Context)
    ours = {f.name: f for f in fields(Context)}
    theirs = {f.name: f for f in fields(made)}
    assert set(theirs) == set(ours) - set(SERVER_ONLY)
    for name, f in theirs.items():
        assert f.type == hints[name] and f.metadata == ours[name].metadata, name
        assert f.kw_only and f.default is MISSING, name
    defaults, expected = made(), Context()
    assert all(getattr(defaults, n) == getattr(expected, n) for n in theirs)
    with pytest.raises(TypeError):
        made("notes")  # keyword-only
