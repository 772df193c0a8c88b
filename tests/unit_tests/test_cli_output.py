"""Everything `rag` prints goes through app/cli/output.py: no control character reaches the
terminal, whatever the notes, their file names, the models or the arguments carry."""

from __future__ import annotations

import ast
import io
import json
import re
import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from pytest_socket import enable_socket, socket_allow_hosts

from app.cli import output
from app.cli.main import COMMANDS, main
from tests.fakes import FakeModels, KeywordEmbeddings
from tests.unit_tests.test_watch import Watcher

ROOT = Path(__file__).resolve().parents[2]

#: Sets the terminal's title (OSC ... BEL), clears the screen (CSI 2J), then the one-byte C1
#: CSI (U+009B) and DEL.
NASTY = "\x1b]0;PWN\x07\x1b[2J\x9b31m\x7f"
#: What is left of it on the terminal.
SHOWN = "]0;PWN[2J31m"
#: What must never be written: C0 but tab and newline, DEL, C1, lone surrogates.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def assert_clean(text: str) -> None:
    found = sorted({f"U+{ord(ch):04X}" for ch in CONTROL.findall(text)})
    assert not found, f"control characters {found} in {text!r}"


# --- the cleaning itself -------------------------------------------------------------------


def test_terminal_text_strips_exactly_the_control_characters():
    for code in range(0xA0):
        ch = chr(code)
        printable = ch in "\t\n" or 0x20 <= code < 0x7F
        assert (output.terminal_text(f"a{ch}b") == f"a{ch}b") is printable, hex(code)
    assert output.terminal_text("x\udc9by") == "xy"  # an undecodable byte of a file name
    assert output.terminal_text("é — 😀 ¡") == "é — 😀 ¡"


def test_json_safe_escapes_what_json_dumps_leaves_raw_and_keeps_the_data():
    data = {"every": "".join(map(chr, range(0xA0))) + "\udc9b", "kept": "é — 😀"}
    text = output.json_safe(json.dumps(data, indent=2, ensure_ascii=False))
    assert_clean(text.replace("\n", ""))
    assert json.loads(text) == data
    assert "é — 😀" in text  # only what a terminal would act on is escaped


def test_a_progress_bar_shows_count_rate_and_time_left_only_on_a_terminal(capsys, monkeypatch):
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    with output.ProgressBar(f"what{NASTY}", unit="note") as bar:
        bar(0, 4)
        bar(4, 4, f"3 kept{NASTY}")
    err = capsys.readouterr().err
    last = err.split("\r")[-1]
    assert last.startswith(f"what{SHOWN}: 100%") and last.endswith("\n")
    assert "4/4 [" in last and "note/s" in last and f"3 kept{SHOWN}]" in last
    assert_clean(err.replace("\r", ""))  # the bar's own carriage returns, nothing else
    monkeypatch.setattr("sys.stderr.isatty", lambda: False)
    with output.ProgressBar("what", unit="note") as bar:
        bar(0, 4)
        bar(4, 4, "done")
    assert capsys.readouterr().err == ""


def test_a_progress_bar_starts_anew_after_one_ends_and_ends_its_line_when_stopped(
    capsys, monkeypatch
):
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    with pytest.raises(KeyboardInterrupt):
        with output.ProgressBar("answers", unit="question") as bar:
            bar(2, 2, "graph")
            bar(1, 3, "classic")
            raise KeyboardInterrupt
    lines = capsys.readouterr().err.split("\n")
    assert "2/2" in lines[0] and "graph" in lines[0]
    assert "1/3" in lines[1] and "classic" in lines[1]  # its own line, ended when stopped
    assert lines[2] == ""


def test_a_question_is_cleaned_and_the_reply_returned(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", Tty("y\n"))
    assert output.ask(f"Delete {NASTY}? ") == "y"
    assert capsys.readouterr().out == f"Delete {SHOWN}? "


# --- one way out: no module of the command line writes to the terminal itself ------------

#: Functions that write to the terminal, by the module they come from ("" for builtins).
WRITERS = {"": {"print", "input", "breakpoint"}, "pprint": {"pprint", "pp"}}
STREAMS = {"stdout", "stderr", "__stdout__", "__stderr__"}


def terminal_writes(source: str) -> list[str]:
    """Where ``source`` writes to the terminal other than through ``app.cli.output``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        where = f"line {getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in WRITERS[""] | WRITERS["pprint"]:
                found.append(f"{where}: {node.func.id}()")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            module, name = node.value.id, node.attr
            if module == "sys" and name in STREAMS:
                found.append(f"{where}: sys.{name}")
            elif module == "traceback" and name.startswith("print"):
                found.append(f"{where}: traceback.{name}")
            elif module in ("os", "pprint") and name in ("write", "pprint", "pp"):
                found.append(f"{where}: {module}.{name}")
        elif isinstance(node, ast.ImportFrom) and node.module in ("sys", "traceback", "pprint"):
            for alias in node.names:
                if alias.name in STREAMS or alias.name.startswith(("print", "pp")):
                    found.append(f"{where}: from {node.module} import {alias.name}")
    return found


@pytest.mark.parametrize(
    "source",
    [
        "print('x')",
        "input('sure? ')",
        "import sys\nsys.stdout.write('x')",
        "import sys\nsys.stderr.flush()",
        "import sys\nf(file=sys.stderr)",
        "import traceback\ntraceback.print_exc()",
        "from sys import stderr",
        "from traceback import print_exception",
        "import os\nos.write(1, b'x')",
        "from pprint import pprint",
    ],
)
def test_the_checker_sees_each_way_of_writing(source):
    assert terminal_writes(source)


def test_only_the_output_module_writes_to_the_terminal():
    # The command line, the evaluation lab, and the graph and index they run: library code
    # reports through return values and ``notify`` / ``progress`` callbacks, never by printing.
    paths = [*(ROOT / "app" / "cli").glob("*.py"), *(ROOT / "graph").rglob("*.py")]
    paths += (ROOT / "app" / "evaluation").rglob("*.py")
    paths += (ROOT / "nodes").rglob("*.py")
    offences = {
        f"{path.relative_to(ROOT)} {where}"
        for path in paths
        if path != ROOT / "app" / "cli" / "output.py"
        for where in terminal_writes(path.read_text())
    }
    assert offences == set()


# --- every command, fed escape sequences from every side ----------------------------------


class Boom(KeywordEmbeddings):
    """An embedder failing with a message that quotes something hostile."""

    def embed_query(self, text):
        raise RuntimeError(f"embedder said {NASTY}")


class Tty(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """Notes whose names, headings and text carry escape sequences, loaded into an index."""
    root = tmp_path_factory.mktemp("hostile")
    notes = root / "notes"
    notes.mkdir()
    (notes / f"x_{NASTY}.md").write_text(f"# Trap {NASTY}\n\nwireguard port {NASTY} here\n")
    # invalid frontmatter: load warns, naming the file
    (notes / f"y_{NASTY}.md").write_text(f"---\nkey: [open {NASTY}\n---\n# Y\n\nwireguard\n")
    # long enough for `rag calibrate` to draw it
    (notes / f"z_{NASTY}.md").write_text(f"# Z {NASTY}\n\n" + "The tunnel keeps its keys. " * 12)
    labelled = root / "set.json"
    question = {"q": f"wireguard {NASTY}", "sources": [f"x_{NASTY}.md"], "kind": "answerable"}
    labelled.write_text(json.dumps({"notes": "notes", "questions": [question]}))
    db = ["--persist-dir", str(root / "db")]
    argv = ["load", "-f", str(notes), "-n", "notes", "-e", f"fake{NASTY}", *db]
    assert main(argv, models=FakeModels()) == 0
    return {"notes": str(notes), "set": str(labelled), "db": db}


def hostile_models() -> FakeModels:
    return FakeModels({"generate": f"<think>mull {NASTY}</think>The answer {NASTY} is."})


ASK = ["-q", f"wireguard port {NASTY}", "--threshold", "0"]

#: Every command with hostile input, and whether the output must show (cleaned) what came in.
WALK = {
    "load": (["load", "-f", "{notes}", "-n", "walked", "-e", f"fake{NASTY}"], True),
    "ask": (["ask", *ASK, "-v", "--think"], True),
    "ask --json": (["ask", *ASK, "--json"], True),
    "query": (["query", "-q", "wireguard port"], True),
    "query --json": (["query", "-q", "wireguard port", "--json"], True),
    "eval": (["eval", "--set", "{set}", "-n", "labelled", "-e", f"fake{NASTY}"], True),
    "eval --answers": (
        ["eval", "--set", "{set}", "-n", "labelled", "-e", f"fake{NASTY}", "--answers"],
        True,
    ),
    "calibrate": (["calibrate", "--sections", "1", "-n", "notes", "-m", f"qwen{NASTY}"], True),
    "calibrate --json": (
        ["calibrate", "--sections", "1", "-n", "notes", "-m", f"qwen{NASTY}", "--json"],
        True,
    ),
    # The set file named is a note that exists: the refusal names it.
    "questions": (["questions", f"{{notes}}/x_{NASTY}.md", "-n", "notes"], True),
    "collections": (["collections"], True),
    "collections --json": (["collections", "--json"], True),
    "drop (asks)": (["drop", "-n", "notes"], False),
    "drop --yes": (["drop", "-n", "doomed", "--yes"], False),
    "doctor": (["doctor", "--ollama-host", "{refused}", "-e", f"other{NASTY}"], True),
    "chat": (["chat", "-n", "notes", "--threshold", "0", "-v", "--think"], True),
    "doctor --json": (["doctor", "--json", "--ollama-host", "{refused}", "-e", NASTY], True),
    "error": (["load", "-f", f"/nonexistent/{NASTY}"], True),
    "error --debug": (["load", "-f", f"/nonexistent/{NASTY}", "--debug"], True),
    "unexpected error --debug": (["query", "-q", "x", "--debug"], True),
    "usage error": (["query", "-q", "x", NASTY], True),
    "usage error, bad value": (["query", "-q", "x", "-k", NASTY], True),
}


def strings(data: object) -> list[str]:
    """Every string in a JSON document."""
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [text for value in data.values() for text in strings(value)]
    if isinstance(data, list):
        return [text for value in data for text in strings(value)]
    return []


def run(argv: list[str], models: FakeModels) -> int:
    try:
        return main(argv, models=models)
    except SystemExit as exc:  # argparse
        return int(exc.code or 0)


@contextmanager
def refused_port() -> Iterator[str]:
    """A loopback address where nothing listens: the doctor's Ollama check fails for real."""
    enable_socket()
    socket_allow_hosts(["127.0.0.1"], allow_unix_socket=True)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{closed.getsockname()[1]}"


@pytest.mark.parametrize("case", list(WALK))
def test_no_control_character_reaches_the_terminal(case, hostile, capsys, monkeypatch):
    template, shows_input = WALK[case]
    models = hostile_models()
    if case.startswith("unexpected"):
        models.embedder = Boom()
    if case == "drop (asks)":
        monkeypatch.setattr("sys.stdin", Tty("n\n"))
    if case == "chat":  # piped: a question, then the commands that print what it found
        monkeypatch.setattr("sys.stdin", io.StringIO(f"wireguard port {NASTY}\n/sources\n/new\n"))
    if case == "drop --yes":
        assert run(["load", "-f", hostile["notes"], "-n", "doomed", *hostile["db"]], models) == 0
    with ExitStack() as stack:
        refused = stack.enter_context(refused_port()) if case.startswith("doctor") else ""
        places = {**hostile, "refused": refused}
        argv = [part.format(**places) if part.startswith("{") else part for part in template]
        code = run([*argv, *hostile["db"]], models)
    out, err = capsys.readouterr()
    assert_clean(out)
    assert_clean(err)
    if shows_input:  # the hostile text did reach the output, cleaned
        assert "PWN" in out + err, (code, out, err)
    if case.endswith("--json"):  # valid, and the data kept whole: escaped, not stripped
        assert any(NASTY in text for text in strings(json.loads(out)))
    if case == "drop (asks)":
        assert out == "Delete collection 'notes'? [y/N] kept\n"


def test_the_walk_covers_every_command_and_every_json_output(capsys):
    walked = [argv for argv, _ in WALK.values()]
    assert {argv[0] for argv in walked} == set(COMMANDS)
    with_json = set()
    for command in COMMANDS:
        with pytest.raises(SystemExit):
            main([command, "--help"])
        if "--json" in capsys.readouterr().out:
            with_json.add(command)
    assert with_json == {argv[0] for argv in walked if "--json" in argv}


def test_the_progress_bar_is_the_only_control_character(hostile, capsys, monkeypatch):
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    argv = ["load", "-f", hostile["notes"], "-n", "bar", *hostile["db"], "-e", f"fake{NASTY}"]
    assert main(argv, models=hostile_models()) == 0
    err = capsys.readouterr().err
    assert "\rembedding: " in err and SHOWN in err
    assert_clean(err.replace("\rembedding: ", "embedding: "))


def test_watch_lines_are_cleaned(ctx, tmp_path):
    folder = tmp_path / "watched"
    folder.mkdir()
    (folder / "plain.md").write_text("# Plain\n\nThe zebra grazes.\n")
    watcher = Watcher(ctx, folder)
    try:
        seen = watcher.expect("watching ")
        (folder / f"x_{NASTY}.md").write_text(f"# Trap {NASTY}\n\nwireguard {NASTY}\n")
        seen += watcher.expect("added x_")
        status, errors = watcher.stop()
    finally:
        if watcher.proc.poll() is None:
            watcher.proc.kill()
            watcher.proc.wait()
    assert seen[-1] == f"added x_{SHOWN}.md"
    assert status == 130
    assert_clean("\n".join(seen))
    assert_clean(errors)
