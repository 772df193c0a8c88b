"""The served API's queue starts a run at its next look, not one look later."""

import asyncio
import importlib
import uuid
from datetime import UTC, datetime

import pytest
from langgraph_runtime_inmem import ops
from langgraph_runtime_inmem.database import GLOBAL_STORE

import app.serving.http  # langgraph dev imports it as its http.app
from app.serving import run_queue


@pytest.fixture
def queue(monkeypatch):
    """The runtime's own ``Runs.next`` (put back afterwards) over an empty store of runs."""
    current = ops.Runs.__dict__["next"].__func__
    monkeypatch.setattr(ops.Runs, "next", staticmethod(getattr(current, "__wrapped__", current)))
    for table in ("runs", "threads"):
        monkeypatch.setitem(GLOBAL_STORE, table, [])
    return ops.Runs


def taken_when_queued_during_a_wait(runs) -> int:
    """How many runs one waiting look takes when a run is queued 10 ms into its wait."""

    async def look() -> int:
        thread = uuid.uuid4()
        GLOBAL_STORE["threads"].append({"thread_id": thread})

        async def queue_a_run() -> None:
            await asyncio.sleep(0.01)
            GLOBAL_STORE["runs"].append(
                {
                    "run_id": uuid.uuid4(),
                    "thread_id": thread,
                    "status": "pending",
                    "created_at": datetime.now(UTC),
                }
            )

        queued = asyncio.create_task(queue_a_run())
        taken = [run async for run, _ in runs.next(wait=True)]
        await queued
        return len(taken)

    return asyncio.run(look())


def test_a_run_queued_during_a_wait_is_taken_by_that_look(queue, monkeypatch):
    # The runtime's look only takes runs created before its wait began: this one waits
    # for the next look (0.5 s later, 1 s a question in all).
    assert taken_when_queued_during_a_wait(queue) == 0
    assert run_queue.pick_up_runs_promptly()
    waits, sleep = [], asyncio.sleep

    async def recorded(seconds, *args, **kwargs):
        waits.append(seconds)
        return await sleep(seconds, *args, **kwargs)

    monkeypatch.setattr(asyncio, "sleep", recorded)
    assert taken_when_queued_during_a_wait(queue) == 1
    assert max(waits) == run_queue.POLL_SECONDS  # one short wait, not the runtime's 0.5 s


def test_the_served_app_makes_the_queue_prompt(queue):
    assert not hasattr(queue.__dict__["next"].__func__, "prompt_pickup")  # the fixture's own
    importlib.reload(app.serving.http)
    assert queue.__dict__["next"].__func__.prompt_pickup


def test_wrapping_twice_wraps_once(queue):
    assert run_queue.pick_up_runs_promptly() and run_queue.pick_up_runs_promptly()
    wrapped = queue.__dict__["next"].__func__
    assert wrapped.prompt_pickup and not hasattr(wrapped.__wrapped__, "prompt_pickup")


def test_a_queue_of_another_shape_is_left_alone(queue, monkeypatch):
    async def other(limit: int):  # a later runtime's signature
        yield None

    monkeypatch.setattr(ops.Runs, "next", staticmethod(other))
    assert not run_queue.pick_up_runs_promptly()
    assert ops.Runs.__dict__["next"].__func__ is other
