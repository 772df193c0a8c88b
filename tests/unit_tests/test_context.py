from dataclasses import fields

import pytest

from graph.context import Context, default_of, normalize_ollama_url
from graph.index.embedding import relevance_floor


def test_defaults():
    ctx = Context()
    assert ctx.ollama_base_url == "http://localhost:11434"
    assert ctx.chat_model == "llama3.1:8b"
    assert ctx.embedding_model == ""  # the collection's model (nomic-embed-text when new)
    assert ctx.k == 5 and ctx.score_threshold is None and relevance_floor(ctx) == 0.5
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


# For every setting: an environment value that differs from the default, and the explicit
# value (equal to the declared default) that must still win over it.
ENV_VALUES = {
    "ollama_base_url": "http://127.0.0.1:11500",
    "chat_model": "qwen3:4b",
    "embedding_model": "all-minilm",
    "vision_model": "llava",
    "collection_name": "other",
    "chroma_persist_directory": "/tmp/elsewhere",
    "chroma_server_url": "http://127.0.0.1:8000",
    "k": "10",
    "score_threshold": "0.7",
    "retrieval_mode": "vector",
    "skip_question_words": "false",
    "fusion_ties": "vector",
    "tags": "a,b",
    "folders": "x",
    "calculator_trigger": "calc:",
    "image_trigger": "look:",
    "enable_calculator": "false",
    "enable_image": "false",
    "num_ctx": "4096",
    "grade_concurrency": "2",
    "show_thinking": "true",
    "check_answers": "false",
    "read_ahead": "false",
    "check_confidence": "0.5",
    "keep_alive": "5m",
    "request_timeout": "30",
}


def test_every_setting_is_covered_by_the_precedence_test():
    assert set(ENV_VALUES) == {f.name for f in fields(Context)}


@pytest.mark.parametrize("name", sorted(ENV_VALUES))
def test_an_explicit_value_equal_to_the_default_still_wins(monkeypatch, name):
    f = next(f for f in fields(Context) if f.name == name)
    monkeypatch.setenv(f.metadata["env"], ENV_VALUES[name])
    from_env = getattr(Context(), name)
    assert from_env != default_of(f)  # the environment does change it
    explicit = Context(**{name: default_of(f)})
    expected = default_of(f)
    if name == "ollama_base_url":
        expected = normalize_ollama_url(expected)
    assert getattr(explicit, name) == expected


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
