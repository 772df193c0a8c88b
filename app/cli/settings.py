"""The settings a command runs with, from its flags, and the collection it needs.

Every command that reads the index goes through here, so each takes its ``Context`` the same
way: the flags given on the command line, the environment for the rest.
"""

from __future__ import annotations

import argparse
from dataclasses import fields
from typing import TYPE_CHECKING

from graph.errors import ConfigError

if TYPE_CHECKING:
    from graph.context import Context


def make_context(args: argparse.Namespace) -> Context:
    """A ``Context`` with only the settings given on the command line (env fills the rest)."""
    from graph.context import Context

    given = {
        f.name: getattr(args, f.name)
        for f in fields(Context)
        if getattr(args, f.name, None) is not None
    }
    try:
        return Context(**given)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def require_collection(context: Context) -> None:
    """Refuse a command on a collection that does not exist (a usage error, exit 2)."""
    from graph.index.vectorstore import get_collection

    if get_collection(context) is None:
        raise ConfigError(
            f"no collection named '{context.collection_name}' (`rag collections` lists them)"
        )
