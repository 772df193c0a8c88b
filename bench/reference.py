"""Writes ``docs/configuration.md``: every setting and every ``rag`` option, from the code.

The settings come from ``graph.context.Context`` (each field's description, environment
variable, default, bounds and whether it is server-only), their flags from
``app.cli.flags.FLAGS``, and each command's own options from the ``rag`` argument parser, so
the reference says what the code does. ``tests/unit_tests/test_docs.py`` fails when the
committed page differs from what this script writes.

    python bench/reference.py           # rewrite docs/configuration.md
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from dataclasses import Field, fields
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from app.cli.flags import ALL_COMMANDS, FLAGS  # noqa: E402
from graph.context import Context, default_of  # noqa: E402

PAGE = ROOT / "docs" / "configuration.md"

INTRO = """\
# Configuration reference

<!-- Written by bench/reference.py (`make plots`) from graph/context.py, app/cli/flags.py and
the rag argument parser; tests/unit_tests/test_docs.py fails when it is out of date. -->

Every setting is a field of `graph.context.Context`, LangGraph's `context_schema` (Studio
shows the descriptions). A value given explicitly (a `rag` flag, a run's `context`, a Python
`Context(...)`) wins over the environment variable, which wins over the default; the
environment is read only for the settings a caller leaves out. The server's environment
under `make dev` is the shell's, then `.env` (`make dev` copies `.env.example` there on first
use): a variable you export wins over the same one in `.env`, and an empty one counts as unset
([serving.md](serving.md#langgraph-dev)). A value of the wrong type or out of bounds is a
one-line error (exit code 2).

**Server-only settings** are the server's own: where it connects, where it stores the index,
how long Ollama keeps the models loaded. The served graph's context
(`app.serving.context.ServedContext`) has no such field: a request cannot name them, and a
served run uses the server's own values, read from its environment. The serving policy can
narrow further what a served run may choose (see [security.md](security.md)).
"""


_KINDS = {
    str: "text",
    int: "whole number",
    float: "number",
    bool: "true or false",
    list: "list: comma-separated in the environment, a repeated flag",
}


def _wrap(text: str, indent: str = "") -> str:
    return textwrap.fill(
        text, 96, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
    )


def _description(f: Field) -> str:
    text = f.metadata["description"].rsplit(" (env: ", 1)[0]
    return text if text.endswith(".") else text + "."


def _default(f: Field) -> str:
    value = default_of(f)
    if value in ("", None):
        return "(empty)"
    if value == []:
        return "(none)"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float):
        return f"`{value:g}`"
    return f"`{value}`"


def _bounds(f: Field) -> str:
    if "bounds" not in f.metadata:
        return ""
    low, high = f.metadata["bounds"]
    return f"{low:g}–{high:g}"


def _flags(name: str) -> str:
    flag = FLAGS.get(name)
    if flag is None:
        return "(environment only)"
    names = ", ".join(f"`{n}`" for n in flag.names)
    commands = "every command" if flag.commands == ALL_COMMANDS else ", ".join(flag.commands)
    return f"{names} ({commands})"


def settings_table() -> str:
    """One row per ``Context`` field."""
    rows = [
        "| setting | environment | default | bounds | `rag` flags | served run |",
        "|---|---|---|---|---|---|",
    ]
    for f in fields(Context):
        served = "server's own" if f.metadata["server_only"] else "may set"
        rows.append(
            f"| `{f.name}` | `{f.metadata['env']}` | {_default(f)} | {_bounds(f)} | "
            f"{_flags(f.name)} | {served} |"
        )
    return "\n".join(rows) + "\n"


def settings_meanings() -> str:
    """What each setting means (its description, as Studio and ``rag --help`` show it)."""
    lines = []
    for f in fields(Context):
        kind = _KINDS[f.metadata["kind"]]
        lines.append(_wrap(f"- **`{f.name}`** ({kind}): {_description(f)}", indent="  "))
    return "\n".join(lines) + "\n"


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, Any]]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
    return [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]


def _option_help(action: argparse.Action) -> str:
    text = action.help or ""
    if action.required:
        text = (text + "; " if text else "") + "required"
    if action.default not in (None, False, [], argparse.SUPPRESS) and action.const is None:
        text = (text + "; " if text else "") + f"default {action.default}"
    return text


def commands_reference() -> str:
    """Per ``rag`` command: what it does, its own options, and the settings it takes."""
    from app.cli.main import build_parser

    setting_names = {f.name for f in fields(Context)}
    out = []
    for name, help_text, sub in _subcommands(build_parser()):
        own = [
            a
            for a in sub._actions
            if a.option_strings and a.dest not in setting_names and a.dest != "help"
        ]
        taken = [
            ", ".join(f"`{n}`" for n in FLAGS[f.name].names)
            for f in fields(Context)
            if f.name in FLAGS and name in FLAGS[f.name].commands
        ]
        out.append(f"### `rag {name}`\n\n{help_text[:1].upper() + help_text[1:]}.\n")
        out.append("| option | meaning |\n|---|---|")
        for action in own:
            names = ", ".join(f"`{n}`" for n in action.option_strings)
            out.append(f"| {names} | {_option_help(action)} |")
        out.append("\n" + _wrap(f"Settings: {'; '.join(taken)}.") + "\n")
    return "\n".join(out)


def page() -> str:
    """The whole of ``docs/configuration.md``."""
    return (
        f"{INTRO}\n## Settings\n\n{settings_table()}\n{settings_meanings()}\n"
        "## Commands\n\n"
        "Options of each `rag` command besides the settings above (`rag COMMAND --help`\n"
        "prints the same).\n\n"
        f"{commands_reference()}"
    )


def main() -> int:
    """Rewrite ``docs/configuration.md``."""
    PAGE.write_text(page())
    print(PAGE.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
