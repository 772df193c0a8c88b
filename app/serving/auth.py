"""LangGraph custom authentication for the served API (``auth.path`` in ``langgraph.json``).

Every API route passes here (runs, threads, assistants, crons, store, ``/mcp``, and the
project's own routes through ``http.enable_custom_route_auth``), Studio's requests too
(``auth.disable_studio_auth``). Two jobs:

- a token when one is configured (``RAG_API_TOKEN``): ``Authorization: Bearer <token>``;
- the request checks of ``app.serving.boundary`` on everything that starts or shapes a
  run, before anything runs.
"""

from __future__ import annotations

import hmac
from typing import Any

from langgraph_sdk import Auth

from app.serving.boundary import Refused, check_assistant, check_cron, check_run
from app.serving.policy import serving_policy

auth = Auth()


@auth.authenticate
async def authenticate(authorization: str | None) -> Auth.types.MinimalUserDict:
    """The local user; with a token configured, only a request that carries it."""
    token = serving_policy().token
    if token:
        expected = f"Bearer {token}"
        if not hmac.compare_digest((authorization or "").encode(), expected.encode()):
            raise Auth.exceptions.HTTPException(
                status_code=401,
                detail="this server needs its token: send 'Authorization: Bearer <token>' "
                "(RAG_API_TOKEN)",
            )
    return {"identity": "local-user", "is_authenticated": True}


def _refusal(exc: Refused) -> Auth.exceptions.HTTPException:
    return Auth.exceptions.HTTPException(status_code=exc.status, detail=exc.message)


@auth.on.threads.create_run
async def on_run(ctx: Auth.types.AuthContext, value: Any) -> None:
    """Every run, however it starts (runs, thread runs, batch, ``/mcp``, a cron firing)."""
    try:
        check_run(value["kwargs"])
    except Refused as exc:
        raise _refusal(exc) from None


@auth.on.assistants.create
async def on_assistant_create(ctx: Auth.types.AuthContext, value: Any) -> None:
    """An assistant's config and context are merged into its runs: checked when stored."""
    try:
        check_assistant(value)
    except Refused as exc:
        raise _refusal(exc) from None


@auth.on.assistants.update
async def on_assistant_update(ctx: Auth.types.AuthContext, value: Any) -> None:
    """As for a new assistant."""
    try:
        check_assistant(value)
    except Refused as exc:
        raise _refusal(exc) from None


@auth.on.crons.create
async def on_cron_create(ctx: Auth.types.AuthContext, value: Any) -> None:
    """A cron's payload becomes runs later: checked when stored."""
    try:
        check_cron(value)
    except Refused as exc:
        raise _refusal(exc) from None


@auth.on.crons.update
async def on_cron_update(ctx: Auth.types.AuthContext, value: Any) -> None:
    """As for a new cron."""
    try:
        check_cron(value)
    except Refused as exc:
        raise _refusal(exc) from None
