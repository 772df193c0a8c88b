"""On the command line a flag beats the environment, which beats the default: for every
setting in app/cli/flags.py, on every command that offers it, even a flag equal to the
default (``RAG_K=10 rag query -r 5`` used to return 10 chunks)."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest

from app.cli.flags import FLAGS
from app.cli.main import COMMANDS, build_parser, main, make_context
from graph.context import Context, default_of, normalize_ollama_url
from graph.index.embedding import DEFAULT_EMBEDDING_MODEL
from tests.fakes import FakeModels
from tests.unit_tests.test_cli_output import refused_port

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = {f.name: f for f in fields(Context)}

# For every setting the command line offers: a value in its environment variable, the flag,
# and what the flag must give. The flag spells the declared default wherever it can (only
# score_threshold's None and the empty lists of tags and folders have no spelling).
CASES: dict[str, tuple[str, list[str], object]] = {
    "ollama_base_url": (
        "http://127.0.0.1:11500",
        ["--ollama-host", "http://localhost:11434"],
        "http://localhost:11434",
    ),
    "chat_model": ("qwen3:4b", ["-m", "llama3.1:8b"], "llama3.1:8b"),
    "embedding_model": ("all-minilm", ["-e", ""], ""),
    "vision_model": ("llava", ["--vision-model", ""], ""),
    "collection_name": ("other", ["-n", "notes"], "notes"),
    "chroma_persist_directory": ("/nonexistent/elsewhere", ["--persist-dir", ""], ""),
    "chroma_server_url": ("http://127.0.0.1:8000", ["-d", ""], ""),
    "k": ("10", ["-r", "5"], 5),
    "score_threshold": ("0.7", ["--threshold", "0.2"], 0.2),
    "retrieval_mode": ("vector", ["--mode", "hybrid"], "hybrid"),
    "tags": ("personal", ["--tag", "career"], ["career"]),
    "folders": ("personal", ["--folder", "career"], ["career"]),
    "num_ctx": ("4096", ["--num-ctx", "8192"], 8192),
    "grade_concurrency": ("2", ["--grade-concurrency", "5"], 5),
    "show_thinking": ("true", ["--no-think"], False),
    "request_timeout": ("30", ["--timeout", "120"], 120.0),
}
NO_SPELLING = {"score_threshold", "tags", "folders"}

#: What each command needs besides settings.
REQUIRED = {
    "load": ["-f", "notes"],
    "ask": ["-q", "hello"],
    "query": ["-q", "hello"],
    "eval": ["--set", "set.json"],
    "collections": [],
    "drop": [],
    "doctor": [],
    "chat": [],
    "calibrate": [],
    "questions": ["set.json"],
}


def env_name(name: str) -> str:
    return SETTINGS[name].metadata["env"]


def test_every_flag_and_every_command_is_covered():
    assert set(CASES) == set(FLAGS)
    assert set(REQUIRED) == set(COMMANDS)


@pytest.mark.parametrize("name", sorted(set(CASES) - NO_SPELLING))
def test_the_flags_spell_the_declared_defaults(name):
    expected = CASES[name][2]
    default = default_of(SETTINGS[name])
    if name == "ollama_base_url":
        default = normalize_ollama_url(default)
    assert expected == default


PAIRS = [(name, command) for name, flag in FLAGS.items() for command in flag.commands]


@pytest.mark.parametrize(("name", "command"), PAIRS, ids=[f"{c}-{n}" for n, c in PAIRS])
def test_a_flag_beats_the_environment(monkeypatch, name, command):
    env, flag, expected = CASES[name]
    monkeypatch.setenv(env_name(name), env)
    parser = build_parser()
    left_out = make_context(parser.parse_args([command, *REQUIRED[command]]))
    assert getattr(left_out, name) != expected  # the environment does apply
    given = make_context(parser.parse_args([command, *REQUIRED[command], *flag]))
    assert getattr(given, name) == expected


def test_think_beats_the_environment_both_ways(monkeypatch):
    parser = build_parser()
    monkeypatch.setenv("RAG_SHOW_THINKING", "false")
    assert make_context(parser.parse_args(["ask", "-q", "x", "--think"])).show_thinking is True
    monkeypatch.setenv("RAG_SHOW_THINKING", "true")
    assert make_context(parser.parse_args(["ask", "-q", "x", "--no-think"])).show_thinking is False
    assert make_context(parser.parse_args(["ask", "-q", "x"])).show_thinking is True


# --- whole commands: the context they run with --------------------------------------------


class Recording(FakeModels):
    """Fake models that keep every context a command hands them."""

    def __init__(self, answers=None):
        super().__init__(answers)
        self.contexts: list[Context] = []

    def chat(self, context, purpose):
        self.contexts.append(context)
        return super().chat(context, purpose)

    def embeddings(self, context):
        self.contexts.append(context)
        return super().embeddings(context)


#: Commands that hand their context to the models, and how to run them.
WITH_MODELS = {
    "load": ["load", "-f", "{notes}"],
    "ask": ["ask", "-q", "How do I practise whiteboarding?"],
    "query": ["query", "-q", "wireguard port forwarding"],
    "eval": ["eval", "--set", "{set}"],
    "eval --answers": ["eval", "--set", "{set}", "--answers", "--limit", "1"],
}


@pytest.mark.parametrize("command", list(WITH_MODELS))
def test_every_flag_at_once_beats_every_variable(command, monkeypatch, sample_notes, capsys):
    offered = [name for name, flag in FLAGS.items() if command.split()[0] in flag.commands]
    for name in FLAGS:
        monkeypatch.setenv(env_name(name), CASES[name][0])
    places = {"notes": str(sample_notes), "set": str(ROOT / "tests" / "retrieval_eval.json")}
    argv = [part.format(**places) for part in WITH_MODELS[command]]
    argv += [part for name in offered for part in CASES[name][1]]
    if command == "query":  # a query needs its collection: loaded first with the same flags
        loading = [name for name, flag in FLAGS.items() if "load" in flag.commands]
        load = ["load", "-f", str(sample_notes), *(p for n in loading for p in CASES[n][1])]
        assert main(load, models=FakeModels()) == 0, capsys.readouterr().err
    models = Recording()
    assert main(argv, models=models) == 0, capsys.readouterr().err
    assert models.contexts
    for context in models.contexts:
        for name in offered:
            expected = CASES[name][2]
            if name == "embedding_model":  # "": the collection's, a new one's default
                expected = DEFAULT_EMBEDDING_MODEL
            assert getattr(context, name) == expected, name


def test_query_r_5_returns_5_chunks_whatever_rag_k_says(monkeypatch, sample_notes, capsys):
    load = ["load", "-f", str(sample_notes), "-e", "fake-embed"]
    assert main(load, models=FakeModels()) == 0
    monkeypatch.setenv("RAG_K", "10")
    query = ["query", "-q", "wireguard port forwarding", "--json"]
    capsys.readouterr()
    assert main(query, models=FakeModels()) == 0
    assert len(json.loads(capsys.readouterr().out)) == 10
    assert main([*query, "-r", "5"], models=FakeModels()) == 0
    assert len(json.loads(capsys.readouterr().out)) == 5


@pytest.mark.parametrize(
    ("env", "flag", "shown"), [("true", "--no-think", False), ("false", "--think", True)]
)
def test_think_flag_beats_rag_show_thinking(env, flag, shown, monkeypatch, sample_notes, capsys):
    models = FakeModels({"generate": "<think>Mulling it over.</think>Practise daily."})
    assert main(["load", "-f", str(sample_notes), "-e", "fake-embed"], models=models) == 0
    monkeypatch.setenv("RAG_SHOW_THINKING", env)
    capsys.readouterr()
    ask = ["ask", "-q", "How do I practise whiteboarding?", "--threshold", "0.1", flag]
    assert main(ask, models=models) == 0
    out, err = capsys.readouterr()
    assert out.startswith("Practise daily.")
    assert ("Mulling" in err) is shown


def test_doctor_checks_the_settings_given_not_the_environment(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("RAG_K", "10")
    monkeypatch.setenv("RAG_NUM_CTX", "4096")
    monkeypatch.setenv("RAG_CHROMA_DIR", str(tmp_path / "elsewhere"))
    given = ["-k", "5", "--num-ctx", "8192", "--persist-dir", ""]
    with refused_port() as host:
        code = main(["doctor", "--json", "--ollama-host", host, *given])
    checks = {c["name"]: c["detail"] for c in json.loads(capsys.readouterr().out)["checks"]}
    assert code == 3  # Ollama is not there
    assert checks["context window"].startswith("num_ctx 8192 holds 5 chunks")
    assert str(tmp_path / "xdg-data" / "notes-rag" / "chroma") in checks["chroma"]


def test_collections_and_drop_use_the_index_and_collection_given(
    monkeypatch, sample_notes, tmp_path, capsys
):
    elsewhere = tmp_path / "elsewhere"
    notes = ["load", "-f", str(sample_notes), "-e", "fake-embed"]
    assert main([*notes, "-n", "notes"], models=FakeModels()) == 0  # the default index
    assert main([*notes, "-n", "other", "--persist-dir", str(elsewhere)], models=FakeModels()) == 0
    monkeypatch.setenv("RAG_CHROMA_DIR", str(elsewhere))
    monkeypatch.setenv("RAG_COLLECTION", "other")
    capsys.readouterr()
    assert main(["collections", "--json", "--persist-dir", ""]) == 0
    assert [row["name"] for row in json.loads(capsys.readouterr().out)] == ["notes"]
    assert main(["drop", "--yes", "-n", "notes", "--persist-dir", ""]) == 0
    assert capsys.readouterr().out == "dropped notes\n"
