"""LangGraph custom authentication for the served API (``auth.path`` in ``langgraph.json``).

Every API route passes here (runs, threads, assistants, crons, store, ``/mcp``, and the
project's own routes through ``http.enable_custom_route_auth``), Studio's requests too
(``auth.disable_studio_auth``). Three jobs:

- a token when one is configured (``RAG_API_TOKEN``): ``Authorization: Bearer <token>``
  (the scheme in any case);
- the request checks of ``app.serving.boundary`` on everything that starts or shapes a
  run, before anything runs;
- what the product does not use stays closed whichever way a request comes: every store
  operation (404), a new or changed cron (403). The ``Guard`` refuses the same by path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import uuid4

from langgraph_sdk import Auth

from app.serving.boundary import (
    CRONS_OFF,
    STORE_CLOSED,
    Refused,
    check_assistant,
    check_metadata,
    check_run,
)
from app.serving.policy import TOKEN_NEEDED, serving_policy
from app.serving.run_queue import admit_run

auth = Auth()


@auth.authenticate
async def authenticate(authorization: str | None) -> Auth.types.MinimalUserDict:
    """The local user; with a token configured, only a request that carries it."""
    if not serving_policy().authorized(authorization):
        raise Auth.exceptions.HTTPException(status_code=401, detail=TOKEN_NEEDED)
    return {"identity": "local-user", "is_authenticated": True}


def _hook(check: Callable[[Any], None], doc: str) -> Any:
    """An ``@auth.on`` handler running ``check`` on the request's value.

    A refusal answers with its HTTP status and one-line reason, before anything runs.
    """

    async def handler(ctx: Auth.types.AuthContext, value: Any) -> None:
        try:
            check(value)
        except Refused as exc:
            raise Auth.exceptions.HTTPException(
                status_code=exc.status, detail=exc.message
            ) from None

    handler.__doc__ = doc
    return handler


def _closed(status: int, detail: str) -> Callable[[Any], None]:
    """A check that refuses whatever it is given."""

    def refuse(value: Any) -> None:
        raise Refused(status, detail)

    return refuse


def _check_run_request(value: Any) -> None:
    check_metadata(value.get("metadata"))
    check_run(value["kwargs"])
    _check_room_for_a_run(value.get("run_id") or uuid4())


def _check_room_for_a_run(run_id: Any) -> None:
    """Refuse a run beyond ``RAG_MAX_QUEUED_RUNS`` held at once (429, before it is stored)."""
    limit = serving_policy().max_queued_runs
    held = admit_run(run_id, limit)
    if held is not None:
        raise Refused(
            429,
            f"the server holds {held} questions already, answered one at a time (at most "
            f"{limit} under way or waiting, RAG_MAX_QUEUED_RUNS): try again when one is answered",
        )


# Every run, however it starts (runs, thread runs, batch, /mcp).
auth.on.threads.create_run(_hook(_check_run_request, "Check a run."))
# A thread's metadata is stored with it: bounded (its state is checked by the Guard).
auth.on.threads.create(
    _hook(lambda value: check_metadata(value.get("metadata")), "Check a thread.")
)
auth.on.threads.update(
    _hook(lambda value: check_metadata(value.get("metadata")), "Check a thread's update.")
)
# An assistant's config and context are merged into its runs: checked when stored.
auth.on.assistants.create(_hook(check_assistant, "Check a new assistant."))
auth.on.assistants.update(_hook(check_assistant, "Check an assistant's update."))
# Crons are off: refused when created or changed (listing and deleting still answer).
auth.on.crons.create(_hook(_closed(403, CRONS_OFF), "Refuse a new cron."))
auth.on.crons.update(_hook(_closed(403, CRONS_OFF), "Refuse a cron's update."))
# The graph never uses LangGraph's store: every operation is refused, nothing is kept.
auth.on.store(_hook(_closed(404, STORE_CLOSED), "Refuse every store operation."))
