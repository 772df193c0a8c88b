"""The served API's queue starts a run at its next look, not one look later."""

import asyncio
import importlib
import threading
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


# --- RunLimit: the OpenAI API's bound on questions -------------------------------------------


def test_a_limit_admits_running_plus_waiting_then_refuses():
    limit = run_queue.RunLimit(running=2, waiting=1)
    places = [limit.admit() for _ in range(3)]
    with pytest.raises(run_queue.Busy, match="at most 2 questions at once with 1 more waiting"):
        limit.admit()
    places[0].leave()
    places[0].leave()  # again: nothing more
    assert limit.admitted == 2
    limit.admit()
    assert limit.admitted == 3


def test_waiting_runs_start_in_turn_as_places_are_given_back_from_other_threads():
    limit = run_queue.RunLimit(running=1, waiting=2)
    order = []

    async def run(name, place, seconds):
        await place.start()
        order.append(name)
        # its work on a thread of its own, which gives the place back when done
        threading.Timer(seconds, place.leave).start()

    async def scenario():
        places = [limit.admit() for _ in range(3)]
        await asyncio.wait_for(asyncio.gather(*(run(n, p, 0.05) for n, p in zip("abc", places))), 5)
        for _ in range(100):  # each place is given back 0.05 s after its run starts
            if not limit.admitted:
                break
            await asyncio.sleep(0.01)
        return limit.started, limit.admitted

    assert asyncio.run(scenario()) == (0, 0)
    assert order == ["a", "b", "c"]


def test_a_waiter_that_leaves_passes_its_place_on():
    limit = run_queue.RunLimit(running=1, waiting=2)

    async def scenario():
        first, gone, last = (limit.admit() for _ in range(3))
        await first.start()
        waiting = asyncio.create_task(gone.start())
        started = asyncio.create_task(last.start())
        await asyncio.sleep(0.01)
        waiting.cancel()  # its client left while it waited
        with pytest.raises(asyncio.CancelledError):
            await waiting
        gone.leave()
        first.leave()
        await asyncio.wait_for(started, 1)
        return limit.started, limit.admitted

    assert asyncio.run(scenario()) == (1, 1)


def test_a_limit_needs_a_run_and_no_negative_queue():
    for running, waiting in [(0, 0), (0, 5), (1, -1)]:
        with pytest.raises(ValueError) as refused:
            run_queue.RunLimit(running, waiting)
        assert str(refused.value) == "a run limit needs at least one run and no negative queue"
    assert run_queue.RunLimit(1, 0).admit()  # one at a time, none waiting


def test_runs_within_the_limit_start_at_once():
    limit = run_queue.RunLimit(running=2, waiting=0)

    async def scenario():
        places = [limit.admit() for _ in range(2)]
        await asyncio.wait_for(asyncio.gather(*(p.start() for p in places)), 1)
        return limit.started

    assert asyncio.run(scenario()) == 2


def test_a_waiter_cancelled_as_its_turn_is_given_passes_the_place_on():
    # Its turn is handed over, then its client leaves before it wakes: the place it will not
    # use goes to the next one waiting, not lost.
    limit = run_queue.RunLimit(running=1, waiting=2)

    async def scenario():
        first, handed, last = (limit.admit() for _ in range(3))
        await first.start()
        waiting = asyncio.create_task(handed.start())
        await asyncio.sleep(0.01)
        started = asyncio.create_task(last.start())
        await asyncio.sleep(0.01)
        first.leave()  # the turn goes to the first one waiting
        await asyncio.sleep(0)  # handed over
        waiting.cancel()  # before it wakes
        with pytest.raises(asyncio.CancelledError):
            await waiting
        handed.leave()
        await asyncio.wait_for(started, 1)
        return limit.started, limit.admitted

    assert asyncio.run(scenario()) == (1, 1)


def test_admitting_a_run_works_before_the_runtime_has_stored_any(monkeypatch):
    monkeypatch.delitem(GLOBAL_STORE, "runs", raising=False)
    assert run_queue.admit_run("first", 2) is None
    assert run_queue.admit_run("second", 2) is None
    assert run_queue.admit_run("third", 2) == 2


def test_the_count_of_admitted_runs_follows_each_admit_and_leave():
    limit = run_queue.RunLimit(running=2, waiting=2)
    places = [limit.admit() for _ in range(3)]
    assert limit.admitted == 3
    for left, place in enumerate(places, start=1):
        place.leave()
        assert limit.admitted == 3 - left
