import pytest

from graph.context import Context, normalize_ollama_url


def test_defaults():
    ctx = Context()
    assert ctx.ollama_base_url == "http://localhost:11434"
    assert ctx.chat_model == "llama3.1:8b"
    assert ctx.embedding_model == ""  # the collection's model (nomic-embed-text when new)
    assert ctx.k == 5 and ctx.score_threshold is None and ctx.effective_threshold == 0.5
    assert ctx.effective_vision_model == "llama3.1:8b"
    assert ctx.effective_chroma_dir.endswith("notes-rag/chroma")


def test_environment_fills_defaults_but_explicit_values_win(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:11500")
    monkeypatch.setenv("RAG_K", "8")
    monkeypatch.setenv("RAG_ENABLE_IMAGE", "false")
    monkeypatch.setenv("RAG_CHAT_MODEL", "qwen3:4b")
    ctx = Context(chat_model="gemma3:4b")
    assert ctx.ollama_base_url == "http://127.0.0.1:11500"
    assert ctx.k == 8
    assert ctx.enable_image is False
    assert ctx.chat_model == "gemma3:4b"


def test_bad_environment_value_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("RAG_K", "many")
    with pytest.raises(ValueError, match="RAG_K='many' is not a valid int"):
        Context()


def test_every_field_is_described_for_studio():
    from dataclasses import fields

    for f in fields(Context):
        assert f.metadata["description"] and f.metadata["env"] in f.metadata["description"]


@pytest.mark.parametrize(
    ("raw", "url"),
    [
        ("localhost", "http://localhost:11434"),
        ("0.0.0.0:11434", "http://127.0.0.1:11434"),
        ("https://ollama.example:443/", "https://ollama.example:443"),
        ("http://127.0.0.1:9", "http://127.0.0.1:9"),
    ],
)
def test_ollama_host_forms(raw, url):
    assert normalize_ollama_url(raw) == url
