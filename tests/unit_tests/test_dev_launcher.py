"""``make dev``'s launcher (app/serving/dev.py): precedence, exposure, the config it hands on.

The launcher through ``make dev`` itself: tests/integration_tests/test_make_dev.py.
"""

from __future__ import annotations

import json
import os

import pytest

from app.serving import dev
from app.serving.dev import merged_environment, parse, served_config


@pytest.mark.parametrize(
    ("shell", "dotenv", "expected", "told"),
    [
        # exported wins over .env; the difference is told by name
        ({"OLLAMA_HOST": "gpu:11434"}, {"OLLAMA_HOST": "localhost"}, "gpu:11434", ["OLLAMA_HOST"]),
        # an empty .env line never erases an exported value
        ({"RAG_API_TOKEN": "secret"}, {"RAG_API_TOKEN": ""}, "secret", []),
        ({"RAG_API_TOKEN": "secret"}, {"RAG_API_TOKEN": None}, "secret", []),
        # an exported empty value counts as unset: the token in .env is kept
        ({"RAG_API_TOKEN": ""}, {"RAG_API_TOKEN": "kept"}, "kept", []),
        ({"RAG_API_TOKEN": "  "}, {"RAG_API_TOKEN": "kept"}, "kept", []),
        # only in .env, or the same in both
        ({}, {"RAG_API_TOKEN": "kept"}, "kept", []),
        ({"RAG_API_TOKEN": "same"}, {"RAG_API_TOKEN": "same"}, "same", []),
    ],
)
def test_the_shell_wins_over_dotenv_and_an_empty_value_counts_as_unset(
    shell, dotenv, expected, told
):
    merged, replaced = merged_environment({"PATH": "/bin", **shell}, dotenv)
    assert merged[next(iter(dotenv))] == expected
    assert replaced == told
    assert merged["PATH"] == "/bin"  # the rest of the environment is kept


def test_the_options_it_reads_are_handed_on_to_langgraph_dev():
    args, forwarded = parse(["--env-file", "x.env", "--no-browser", "--tunnel", "--port", "7"])
    read = (str(args.env_file), args.host, args.port, args.tunnel)
    assert read == ("x.env", "127.0.0.1", 7, True)
    assert forwarded == ["--no-browser", "--host", "127.0.0.1", "--port", "7", "--tunnel"]


@pytest.mark.parametrize(
    "argv", [["--tunnel"], ["--host", "0.0.0.0"], ["--host", "192.168.1.5", "--no-reload"]]
)
def test_exposure_without_a_token_is_refused_before_langgraph_starts(
    argv, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAG_API_TOKEN", raising=False)
    (tmp_path / ".env").write_text("RAG_API_TOKEN=\n")
    started = []
    monkeypatch.setattr(dev.os, "execve", lambda *a: started.append(a))
    assert dev.main(["--env-file", str(tmp_path / ".env"), *argv]) == 2
    assert "refusing to serve" in capsys.readouterr().err
    assert started == [] and not (tmp_path / ".langgraph_api").exists()


def test_with_a_token_it_starts_langgraph_dev_on_a_config_without_env(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAG_API_TOKEN", "")
    monkeypatch.setenv("OLLAMA_HOST", "http://gpu:11434")
    (tmp_path / ".env").write_text("RAG_API_TOKEN=from-dotenv\nOLLAMA_HOST=localhost\n")
    started = []
    monkeypatch.setattr(dev.os, "execve", lambda *a: started.append(a))
    monkeypatch.setattr(dev.os, "umask", lambda mask: started.append(("umask", mask)))
    assert dev.main(["--env-file", str(tmp_path / ".env"), "--tunnel"]) == 0
    assert started[0] == ("umask", 0o077)
    _, argv, environment = started[1]
    assert environment["RAG_API_TOKEN"] == "from-dotenv"  # the empty export does not drop it
    assert environment["OLLAMA_HOST"] == "http://gpu:11434"
    assert os.environ["RAG_API_TOKEN"] == ""  # this process's own environment is untouched
    assert argv[1:] == [
        "dev", "--host", "127.0.0.1", "--port", "2024", "--tunnel",
        "--config", ".langgraph_api/langgraph.dev.json",
    ]  # fmt: skip
    config = json.loads((tmp_path / ".langgraph_api" / "langgraph.dev.json").read_text())
    assert config == served_config() and config["env"] == {}
    assert config["graphs"]["agentic_rag"]["path"].startswith(str(dev.ROOT))


def test_the_served_config_names_auth_and_the_routes_by_absolute_path(tmp_path):
    # The auth module is what asks for the token and checks every run: served from another
    # folder, a relative path to it would not be found.
    (tmp_path / "langgraph.json").write_text(json.dumps({
        "dependencies": ["."],
        "graphs": {"g": "./graph.py:graph"},
        "auth": {"path": "./app/auth.py:auth", "disable_studio_auth": True},
        "http": {"app": "./app/http.py:app", "disable_ui": True},
        "env": ".env",
    }))  # fmt: skip
    config = served_config(tmp_path)
    assert config["dependencies"] == [str(tmp_path)]
    assert config["graphs"] == {"g": f"{tmp_path}/graph.py:graph"}
    assert config["auth"] == {"path": f"{tmp_path}/app/auth.py:auth", "disable_studio_auth": True}
    assert config["http"] == {"app": f"{tmp_path}/app/http.py:app", "disable_ui": True}
    assert config["env"] == {}


def test_a_tunnel_counts_as_exposed_and_a_host_as_itself():
    assert dev.exposed_url("127.0.0.1", tunnel=True) == "https://tunnel.invalid"
    assert dev.exposed_url("0.0.0.0", tunnel=False) == "http://0.0.0.0"


def test_what_the_server_keeps_is_made_private(tmp_path):
    state, env_file = tmp_path / "state", tmp_path / ".env"
    env_file.write_text("RAG_API_TOKEN=secret\n")
    env_file.chmod(0o644)
    old = os.umask(0o022)
    try:
        dev.make_private(state, env_file)
        assert os.umask(0o022) == 0o077
        state.chmod(0o755)  # as an earlier `make dev` left it
        dev.make_private(state, env_file)  # a second start finds the folder there
    finally:
        os.umask(old)
    assert state.stat().st_mode & 0o777 == 0o700
    assert env_file.stat().st_mode & 0o777 == 0o600


def test_on_loopback_without_a_token_it_starts_and_says_where(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAG_API_TOKEN", raising=False)
    started = []
    monkeypatch.setattr(dev.os, "execve", lambda *a: started.append(a))
    monkeypatch.setattr(dev.os, "umask", lambda mask: None)
    assert dev.main(["--env-file", str(tmp_path / "none.env"), "--port", "7"]) == 0
    langgraph, argv, _ = started[0]
    assert langgraph == argv[0] and langgraph.endswith("/langgraph")
    out = capsys.readouterr().out
    assert "Serving agentic_rag at http://127.0.0.1:7" in out
    assert "Chat page: http://127.0.0.1:7/ui" in out


def test_by_default_it_reads_dot_env_and_says_which_exported_value_won(
    tmp_path, monkeypatch, capsys
):
    assert parse([])[0].env_file == dev.Path(".env")
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("OLLAMA_HOST=localhost\n")
    monkeypatch.setenv("OLLAMA_HOST", "http://gpu:11434")
    monkeypatch.setattr(dev.os, "execve", lambda *a: None)
    monkeypatch.setattr(dev.os, "umask", lambda mask: None)
    assert dev.main([]) == 0
    assert capsys.readouterr().err == "make dev: OLLAMA_HOST from your environment, not .env\n"


def test_a_config_without_http_routes_is_served_as_it_is(tmp_path):
    (tmp_path / "langgraph.json").write_text(
        json.dumps({"dependencies": ["."], "graphs": {"g": "graph.py:graph"}})
    )
    config = served_config(tmp_path)
    assert config == {
        "dependencies": [str(tmp_path)],
        "graphs": {"g": f"{tmp_path}/graph.py:graph"},
        "env": {},
    }


def test_help_goes_to_langgraph_dev_and_a_bad_option_names_this_launcher(capsys):
    # --help is langgraph dev's: this launcher reads only the options it needs.
    assert parse(["--help"])[1] == ["--help", "--host", "127.0.0.1", "--port", "2024"]
    with pytest.raises(SystemExit):
        parse(["--port", "seven"])
    assert "python -m app.serving.dev: error: argument --port" in capsys.readouterr().err


def test_without_arguments_it_reads_the_command_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAG_API_TOKEN", raising=False)
    monkeypatch.setattr(dev.os, "execve", lambda *a: pytest.fail("langgraph dev started"))
    monkeypatch.setattr(dev.sys, "argv", ["dev.py", "--host", "0.0.0.0"])
    assert dev.main() == 2
    assert "refusing to serve" in capsys.readouterr().err


def test_what_it_prints_is_out_before_langgraph_dev_replaces_the_process(tmp_path, monkeypatch):
    # execve drops whatever Python still buffers: both lines must be flushed before it,
    # and the config langgraph dev reads is written whole, indented for a person.
    import io

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAG_API_TOKEN", raising=False)
    monkeypatch.setattr(dev.os, "umask", lambda mask: None)
    raw = io.BytesIO()
    monkeypatch.setattr(dev.sys, "stdout", io.TextIOWrapper(raw, write_through=False))
    seen = []

    def execve(*args):
        seen.append(raw.getvalue().decode())
        seen.append((tmp_path / ".langgraph_api" / "langgraph.dev.json").read_text())

    monkeypatch.setattr(dev.os, "execve", execve)
    assert dev.main(["--env-file", str(tmp_path / "none.env"), "--port", "7"]) == 0
    printed, written = seen
    assert printed.splitlines() == [
        f"Serving agentic_rag at http://127.0.0.1:7  (Studio: {dev.STUDIO}"
        "?baseUrl=http://127.0.0.1:7)",
        "Chat page: http://127.0.0.1:7/ui",
    ]
    assert written == json.dumps(served_config(), indent=2)
