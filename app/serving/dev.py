"""``make dev``: serve the graph with ``langgraph dev``, the user's environment first.

One precedence for every setting: a variable exported in the shell (non-empty) wins over the
same variable in ``.env``, which wins over the default. ``langgraph dev`` on its own does the
opposite (it loads ``.env`` over the process environment), so this launcher reads ``.env``
itself, merges it under the environment and starts ``langgraph dev`` on a copy of
``langgraph.json`` without ``env``: ``RAG_API_TOKEN=... make dev`` is served with that token,
and an empty ``RAG_API_TOKEN=`` line in ``.env`` cannot erase it. An empty exported value
counts as unset, so a token configured in ``.env`` is never dropped by an empty variable
either. Where the two disagree, the launcher says which one it used (never the value).

Before anything starts, it refuses to serve beyond loopback (another ``--host``, or
``--tunnel``) without a token: ``langgraph dev --tunnel`` itself downloads and starts its
tunnel before the project's code is imported. It also makes what the server writes private
to the user: umask 077 for the server's process (``.langgraph_api/`` holds every thread's
questions, answers and cited note text), ``.langgraph_api/`` made 0700 with every file in it
0600 and every folder 0700, and ``.env`` (it may hold the token) 0600, when they exist
already. The configuration it writes there is never written through a symbolic link.

    python -m app.serving.dev [--env-file .env] [langgraph dev options...]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from app.serving.policy import ExposureError, ServingPolicy
from graph.index.private import tighten, write_private

#: The project's folder (where ``langgraph.json`` is).
ROOT = Path(__file__).resolve().parents[2]
#: Where ``langgraph dev`` keeps its threads, runs and checkpoints (in the folder it runs in).
STATE_FOLDER = ".langgraph_api"
#: The configuration this launcher hands ``langgraph dev`` (``langgraph.json`` without ``env``).
DEV_CONFIG = "langgraph.dev.json"
STUDIO = "https://smith.langchain.com/studio/"


def merged_environment(
    shell: Mapping[str, str], dotenv: Mapping[str, str | None]
) -> tuple[dict[str, str], list[str]]:
    """The server's environment: ``shell`` over ``dotenv`` (an empty value counts as unset).

    Returns the environment and the names whose exported value replaced a different one in
    ``.env`` (to be told, never silently).
    """
    merged = dict(shell)
    replaced = []
    for name, value in dotenv.items():
        value = value or ""
        exported = shell.get(name, "")
        if not exported.strip():
            merged[name] = value
        elif value.strip() and value != exported:
            replaced.append(name)
    return merged, replaced


def served_config(root: Path = ROOT) -> dict[str, Any]:
    """``langgraph.json`` with absolute paths and no ``env``: the environment is the process's.

    Absolute paths let the configuration be read from anywhere (tests serve from a folder
    of their own).
    """
    config = json.loads((root / "langgraph.json").read_text())

    def absolute(target: Any) -> Any:
        if isinstance(target, dict):
            return {**target, "path": absolute(target["path"])}
        return str(root / target)  # pathlib drops a leading "./"

    config["dependencies"] = [str(root)]
    config["graphs"] = {gid: absolute(target) for gid, target in config["graphs"].items()}
    if "auth" in config:
        config["auth"]["path"] = absolute(config["auth"]["path"])
    if "app" in config.get("http", {}):
        config["http"]["app"] = absolute(config["http"]["app"])
    config["env"] = {}
    return config


def exposed_url(host: str, tunnel: bool) -> str:
    """Where the server would be reachable, as the exposure check reads it."""
    return "https://tunnel.invalid" if tunnel else f"http://{host}"


def make_private(state: Path, env_file: Path) -> None:
    """Files the server and this launcher keep: the user's alone."""
    os.umask(0o077)  # everything the server creates: 0600 files, 0700 folders
    state.mkdir(exist_ok=True)
    state.chmod(0o700)  # made 0755 by an earlier `make dev`
    tighten(state)  # what an earlier `make dev` left 0644 stays so until the server rewrites it
    if env_file.is_file():
        env_file.chmod(0o600)


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """This launcher's own option and the ``langgraph dev`` options it must read."""
    parser = argparse.ArgumentParser(prog="python -m app.serving.dev", add_help=False)
    parser.add_argument("--env-file", type=Path, default=Path(".env"))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=2024)
    parser.add_argument("--tunnel", action="store_true")
    args, rest = parser.parse_known_args(argv)
    forwarded = [*rest, "--host", args.host, "--port", str(args.port)]
    if args.tunnel:
        forwarded.append("--tunnel")
    return args, forwarded


def main(argv: list[str] | None = None) -> int:
    """Check, then replace this process with ``langgraph dev`` (or return why not).

    The merged environment is handed to ``langgraph dev`` only: this process's own is left
    as it was.
    """
    from dotenv import dotenv_values

    args, forwarded = parse(sys.argv[1:] if argv is None else argv)
    dotenv = dotenv_values(args.env_file)  # empty when there is no such file
    environment, replaced = merged_environment(os.environ, dotenv)
    for name in replaced:
        print(f"make dev: {name} from your environment, not {args.env_file}", file=sys.stderr)
    try:
        ServingPolicy.from_env(environment).check_exposure(exposed_url(args.host, args.tunnel))
    except (ExposureError, ValueError) as exc:
        print(f"make dev: {exc}", file=sys.stderr)
        return 2
    state = Path(STATE_FOLDER)
    make_private(state, args.env_file)
    config = state / DEV_CONFIG
    write_private(config, json.dumps(served_config(), indent=2))
    url = f"http://{args.host}:{args.port}"
    print(f"Serving agentic_rag at {url}  (Studio: {STUDIO}?baseUrl={url})", flush=True)
    print(f"Chat page: {url}/ui", flush=True)
    langgraph = str(Path(sys.executable).parent / "langgraph")
    os.execve(langgraph, [langgraph, "dev", *forwarded, "--config", str(config)], environment)
    return 0  # not reached: execve replaces this process


if __name__ == "__main__":
    sys.exit(main())
