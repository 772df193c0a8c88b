"""Every request that stores something is closed like a run's ``input`` (issue #50, item 1).

A run (each of its routes, a batch's items), an assistant, a thread, a thread copy and a
state update take the fields this server uses, each bounded; anything else is a 422 naming
the field, before the API sees the body (the ``Guard``) and again in the server's auth
hooks (a run started over LangGraph's v2 commands or its WebSocket reaches only those).
Before, a run's ``config.metadata`` (5 MB: past ``RAG_MAX_METADATA_BYTES``), ``config.tags``,
``config.run_name``, any other ``config`` key, ``feedback_keys``, ``langsmith_tracer`` and the
text settings of ``context`` (3 MB each) were kept in run records and checkpoints for good,
and an assistant took a 2 MB ``name`` and ``description`` (then listed as an MCP tool).

Each bound is checked one past it (refused) and at it (taken): the page's, the SDK's and
Studio's requests go through unchanged.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient

from app.serving import boundary
from app.serving.boundary import Refused
from app.serving.context import ServedContext
from app.serving.http import Guard
from app.serving.policy import ServingPolicy
from tests.unit_tests import test_serving_guard
from tests.unit_tests.test_closed_routes import refusal
from tests.unit_tests.test_serving_guard import client, run

#: An API behind the guard that remembers what reached it.
api = test_serving_guard.api

T = "5b1f3d0e-0000-4000-8000-000000000000"
A = "5b1f3d0e-0000-4000-8000-00000000000a"
C = "1f0a0b0c-0000-6000-8000-000000000001"
RUN = {"assistant_id": "agentic_rag", "input": {"question": "x"}}
RUN_PATHS = [
    "/runs",
    "/runs/wait",
    "/runs/stream",
    f"/threads/{T}/runs",
    f"/threads/{T}/runs/wait",
    f"/threads/{T}/runs/stream/",
]
METADATA = "RAG_MAX_METADATA_BYTES"
BIG = {"x": "m" * 20_000}


@pytest.fixture(autouse=True)
def _default_bounds(monkeypatch):
    """The server's default bounds, whatever this machine's environment says."""
    monkeypatch.setattr(boundary, "serving_policy", lambda: ServingPolicy())


def refused(api, method: str, path: str, body) -> str:
    """The Guard's 422 for ``body``, its one-line reason; the API never saw the request."""
    response = client(api).request(method, path, json=body)
    assert response.status_code == 422, response.text[:300]
    detail = response.json()["detail"]
    assert len(detail) < 300 and "\n" not in detail
    assert api.reached == []
    return detail


def hook_refusal(resource: str, action: str, value) -> str:
    """The server's auth hook refuses ``value`` with a 422; its reason."""
    answer = refusal(resource, action, value)
    assert answer is not None and answer[0] == 422, answer
    return answer[1]


# ------------------------------------------------------------------ a run's own fields


@pytest.mark.parametrize("path", RUN_PATHS)
@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"junk": "x" * 2**20}, "junk"),
        ({"run_name": "r"}, "run_name"),  # a config key sent at the top
        ({"max_concurrency": 3, "tags": ["t"]}, "max_concurrency, tags"),
    ],
)
def test_a_run_field_the_server_does_not_take_is_refused_by_name(api, path, extra, named):
    detail = refused(api, "POST", path, {**RUN, **extra})
    assert named in detail and "not accepted" in detail


def test_each_item_of_a_batch_is_closed(api):
    detail = refused(api, "POST", "/runs/batch", [RUN, {**RUN, "junk": 1}])
    assert "junk" in detail


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"feedback_keys": ["k"]}, "feedback_keys"),
        ({"langsmith_tracer": {"project_name": "p" * 201}}, "langsmith_tracer"),
        ({"langsmith_tracer": {"project_name": "p", "junk": "x"}}, "langsmith_tracer"),
        ({"langsmith_tracer": "p"}, "langsmith_tracer"),
        ({"on_disconnect": "x" * 1000}, "on_disconnect"),
        ({"on_completion": "forever"}, "on_completion"),
        ({"strict_resume": "yes"}, "strict_resume"),
        ({"stream_subgraphs": "yes"}, "stream_subgraphs"),
        ({"stream_mode": ["values"] * 17}, "stream_mode"),
        ({"stream_mode": ["v" * 201]}, "stream_mode"),
        ({"checkpoint": {"checkpoint_ns": "n" * 201}}, "checkpoint_ns"),
        ({"checkpoint": {"checkpoint_map": {"": "x" * 201}}}, "checkpoint_map"),
    ],
)
def test_a_runs_side_fields_are_bounded(api, extra, named):
    detail = refused(api, "POST", f"/threads/{T}/runs/wait", {**RUN, **extra})
    assert named in detail


# ---------------------------------------------------------------------- a run's config


CONFIG_REFUSED = [
    ({"metadata": BIG}, "config.metadata"),
    ({"tags": ["t"] * 33}, "config.tags"),
    ({"tags": ["t" * 201]}, "config.tags"),
    ({"tags": "t"}, "config.tags"),
    ({"tags": [1]}, "config.tags"),
    ({"run_name": "r" * 201}, "config.run_name"),
    ({"run_name": 3}, "config.run_name"),
    ({"recursion_limit": 10_001}, "config.recursion_limit"),
    ({"recursion_limit": 0}, "config.recursion_limit"),
    ({"recursion_limit": True}, "config.recursion_limit"),
    ({"recursion_limit": "5"}, "config.recursion_limit"),
    ({"callbacks": None, "junk": 1}, "callbacks, junk"),
    ({"max_concurrency": 2}, "max_concurrency"),
]
CONFIG_AT_ITS_BOUNDS = {
    "tags": ["t" * 200] * 32,
    "run_name": "r" * 200,
    "recursion_limit": 10_000,
    "metadata": {"from_studio": True},
}


@pytest.mark.parametrize(("config", "named"), CONFIG_REFUSED)
def test_a_runs_config_is_closed_and_bounded_before_the_api(api, config, named):
    detail = refused(api, "POST", f"/threads/{T}/runs/wait", {**RUN, "config": config})
    assert named in detail
    if config.get("metadata") is BIG:
        assert METADATA in detail


@pytest.mark.parametrize(("config", "named"), CONFIG_REFUSED)
def test_a_runs_config_is_closed_and_bounded_in_the_run_hook(config, named):
    # Runs started over LangGraph's v2 commands and its WebSocket reach the hook only.
    detail = hook_refusal("threads", "create_run", {"kwargs": run(config=config)})
    assert named in detail


def test_a_config_not_an_object_is_refused(api):
    assert "config must be an object" in refused(api, "POST", "/runs/wait", {**RUN, "config": "x"})


def test_a_config_at_its_bounds_goes_through(api):
    config = {**CONFIG_AT_ITS_BOUNDS, "configurable": {"thread_id": T, "checkpoint_id": C}}
    response = client(api).post(f"/threads/{T}/runs/wait", json={**RUN, "config": config})
    assert response.status_code == 200 and len(api.reached) == 1
    assert refusal("threads", "create_run", {"kwargs": run(config=config)}) is None


def test_the_run_hook_bounds_what_the_api_copies_from_a_request():
    # LangGraph copies langsmith_tracer into the configurable it assembles (``run.start``
    # over v2 streaming takes it without the Guard seeing it); feedback_keys as sent.
    server = {"langgraph_request_id": "r", "__after_seconds__": 0}
    long = {**server, "__langsmith_project__": "p" * 201}
    assert "langsmith_tracer" in hook_refusal(
        "threads", "create_run", {"kwargs": run(config={"configurable": long})}
    )
    fine = {**server, "__langsmith_project__": "p" * 200, "__langsmith_example_id__": C}
    assert refusal("threads", "create_run", {"kwargs": run(config={"configurable": fine})}) is None
    assert "feedback_keys" in hook_refusal(
        "threads", "create_run", {"kwargs": run(feedback_keys=["k"])}
    )
    assert refusal("threads", "create_run", {"kwargs": run(feedback_keys=None)}) is None


# --------------------------------------------------------------------- a run's context


@pytest.mark.parametrize(
    ("context", "named"),
    [
        ({"tags": ["t"] * 65}, "tags"),
        ({"tags": ["t" * 513]}, "tags"),
        ({"folders": ["f"] * 65}, "folders"),
        ({"folders": ["f" * 513]}, "folders"),
        ({"calculator_trigger": "c" * 513}, "calculator_trigger"),
        ({"image_trigger": "i" * 513}, "image_trigger"),
        ({"collection_name": "n" * 513}, "collection_name"),
    ],
)
def test_a_runs_context_text_is_bounded(context, named):
    detail = hook_refusal("threads", "create_run", {"kwargs": run(context=context)})
    assert named in detail and "at most" in detail
    with pytest.raises(ValueError, match=named):
        ServedContext(**context)  # the served graph's own context, however a run reaches it


def test_a_context_at_its_bounds_goes_through():
    context = {
        "tags": ["t" * 512] * 64,
        "folders": ["f" * 512] * 64,
        "calculator_trigger": "c" * 512,
        "image_trigger": "i" * 512,
        "collection_name": "n" * 512,
    }
    assert refusal("threads", "create_run", {"kwargs": run(context=context)}) is None
    ServedContext(**context)


# --------------------------------------------------------------------------- assistants


@pytest.mark.parametrize(
    ("method", "path"), [("POST", "/assistants"), ("PATCH", f"/assistants/{A}/")]
)
@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"name": "n" * 201}, "name"),
        ({"name": 3}, "name"),
        ({"description": "d" * 2001}, "description"),
        ({"junk": 1}, "junk"),
        ({"config": {"tags": ["t"] * 33}}, "config.tags"),
        ({"config": {"metadata": BIG}}, METADATA),
        ({"config": {"run_name": "r" * 201}}, "config.run_name"),
        ({"config": {"junk": 1}}, "junk"),
        ({"context": {"image_trigger": "i" * 513}}, "image_trigger"),
    ],
)
def test_an_assistants_fields_are_closed_and_bounded(api, method, path, extra, named):
    detail = refused(api, method, path, {"graph_id": "agentic_rag", **extra})
    assert named in detail


@pytest.mark.parametrize("action", ["create", "update"])
def test_the_assistant_hooks_bound_the_name_and_config(action):
    assert "name" in hook_refusal("assistants", action, {"name": "n" * 201})
    config = {"tags": ["t"] * 33}
    assert "config.tags" in hook_refusal("assistants", action, {"config": config})
    fine = {"name": "n" * 200, "config": CONFIG_AT_ITS_BOUNDS, "metadata": {"a": 1}}
    assert refusal("assistants", action, fine) is None


def test_an_assistant_at_its_bounds_goes_through(api):
    body = {
        "graph_id": "agentic_rag",
        "name": "n" * 200,
        "description": "d" * 2000,
        "config": CONFIG_AT_ITS_BOUNDS,
        "context": {"k": 3},
        "metadata": {"a": 1},
    }
    c = client(api)
    assert c.post("/assistants", json={**body, "if_exists": "do_nothing"}).status_code == 200
    assert c.patch(f"/assistants/{A}", json={**body, "description": None}).status_code == 200
    assert len(api.reached) == 2


# ------------------------------------------------------ threads, copies, state updates


@pytest.mark.parametrize(
    ("method", "path", "body", "named"),
    [
        ("POST", "/threads", {"junk": 1}, "junk"),
        ("POST", "/threads", {"ttl": {"ttl": 5, "junk": "x"}}, "junk"),
        ("POST", "/threads", {"ttl": "x"}, "ttl"),
        ("PATCH", f"/threads/{T}", {"metadata": {}, "values": {"answer": "a"}}, "values"),
        ("PATCH", f"/threads/{T}", {"if_exists": "raise"}, "if_exists"),
        ("POST", f"/threads/{T}/copy", {"metadata": {"x": "y"}}, "metadata"),
        ("POST", f"/threads/{T}/state", {"values": {"question": "x"}, "junk": 1}, "junk"),
        ("POST", f"/threads/{T}/state", {"values": {}, "as_node": "n" * 201}, "as_node"),
        (
            "POST",
            f"/threads/{T}/state",
            {"values": {}, "checkpoint_id": "c" * 201},
            "checkpoint_id",
        ),
        (
            "POST",
            f"/threads/{T}/state",
            {"values": {}, "checkpoint": {"checkpoint_id": "c" * 201}},
            "checkpoint_id",
        ),
        (
            "POST",
            "/threads",
            {"supersteps": [{"updates": [{"values": {}, "as_node": "route", "junk": 1}]}]},
            "junk",
        ),
        (
            "POST",
            "/threads",
            {"supersteps": [{"updates": [{"values": {}, "as_node": "n" * 201}]}]},
            "as_node",
        ),
        ("POST", "/threads", {"supersteps": [{"updates": [], "junk": 1}]}, "junk"),
    ],
)
def test_a_threads_fields_are_closed_and_bounded(api, method, path, body, named):
    assert named in refused(api, method, path, body)


def test_reads_are_not_stores_and_stay_open(api):
    c = client(api)
    for path, body in [
        ("/threads/search", {"metadata": {"a": 1}, "limit": 5, "select": ["thread_id"]}),
        ("/threads/count", {"metadata": {}}),
        ("/assistants/search", {"graph_id": "agentic_rag", "limit": 5}),
        (f"/threads/{T}/history", {"limit": 10, "before": None}),
        (f"/threads/{T}/state/checkpoint", {"checkpoint": {"checkpoint_id": C}}),
        ("/runs/cancel", {"run_ids": [C], "action": "interrupt"}),
        (f"/threads/{T}/runs/{C}/cancel", {}),
    ]:
        assert c.post(path, json=body).status_code == 200, path
    assert len(api.reached) == 7


# ------------------------------------------------- what the page, SDK and Studio send

PAGE = {
    "assistant_id": "agentic_rag",
    "input": {"question": "x"},
    "context": {"k": 3, "tags": ["area"], "folders": ["projects"]},
    "stream_mode": ["messages-tuple", "values", "custom"],
    "on_disconnect": "cancel",
}
STUDIO = {
    **RUN,
    "config": {"configurable": {}, "recursion_limit": 50, "tags": [], "metadata": {}},
    "context": {"k": 3},
    "metadata": {"from_studio": True, "LANGGRAPH_API_URL": "http://127.0.0.1:2024"},
    "stream_mode": ["values", "messages-tuple", "updates", "debug", "custom"],
    "stream_subgraphs": True,
    "stream_resumable": True,
    "checkpoint": {"checkpoint_id": C, "checkpoint_ns": ""},
    "multitask_strategy": "rollback",
    "on_disconnect": "cancel",
    "if_not_exists": "create",
    "after_seconds": 0,
    "durability": "async",
    "checkpoint_during": True,
    "interrupt_before": [],
    "feedback_keys": [],
    "langsmith_tracer": {"project_name": "notes", "example_id": C},
}


@pytest.mark.parametrize("body", [PAGE, STUDIO], ids=["page", "studio"])
def test_the_pages_and_studios_runs_go_through(api, body):
    assert client(api).post(f"/threads/{T}/runs/stream", json=body).status_code == 200
    assert len(api.reached) == 1
    kwargs = {key: body.get(key) for key in ("input", "config", "context", "feedback_keys")}
    assert refusal("threads", "create_run", {"kwargs": run(**kwargs)}) is None


def test_what_the_sdk_sends_goes_through(api):
    async def calls() -> None:
        transport = httpx.ASGITransport(app=Guard(api.app, ServingPolicy()))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:2024") as http:
            sdk = LangGraphClient(http)
            config = {"configurable": {"thread_id": T}, "tags": ["t"], "recursion_limit": 25}
            await sdk.runs.create(
                T,
                "agentic_rag",
                input={"question": "x"},
                config={**config, "run_name": "r", "metadata": {"a": 1}},
                metadata={"a": 1},
                stream_mode=["values", "custom"],
                stream_subgraphs=True,
                stream_resumable=True,
                checkpoint_id=C,
                multitask_strategy="enqueue",
                if_not_exists="create",
                after_seconds=0,
                durability="async",
            )
            await sdk.runs.wait(
                None, "agentic_rag", input={"question": "x"}, context={"k": 3},
                on_disconnect="cancel", on_completion="delete",
            )  # fmt: skip
            await sdk.runs.create_batch(
                [{"assistant_id": "agentic_rag", "input": {"question": "x"}}]
            )
            await sdk.threads.create(
                metadata={"a": 1},
                thread_id=T,
                if_exists="do_nothing",
                ttl=60,
                supersteps=[{"updates": [{"values": {"question": "x"}, "as_node": "route"}]}],
            )
            await sdk.threads.update(T, metadata={"a": 2}, ttl={"ttl": 60, "strategy": "delete"})
            await sdk.threads.update_state(T, {"question": "x"}, as_node="route", checkpoint_id=C)
            await sdk.threads.copy(T)
            await sdk.assistants.create(
                "agentic_rag",
                config={"tags": ["t"]},
                context={"k": 3},
                metadata={"a": 1},
                assistant_id=A,
                if_exists="do_nothing",
                name="notes",
                description="my notes",
            )
            await sdk.assistants.update(
                A, graph_id="agentic_rag", context={"k": 4}, name="notes", description="d"
            )
            await sdk.assistants.set_latest(A, 2)

    asyncio.run(calls())
    assert len(api.reached) == 10


def test_refusals_name_their_bound(api):
    with pytest.raises(Refused) as refusal_:
        boundary.check_run_request({**RUN, "config": {"run_name": "r" * 201}})
    assert str(refusal_.value) == "config.run_name must be text of at most 200 characters, got 201"


# ----------------------------------------------------------------------- the run queue


def test_a_run_beyond_the_queue_is_refused_before_it_is_stored(monkeypatch):
    # langgraph dev answers one run at a time and queues the rest: a client in a loop could
    # queue hours of model work. Runs under way or waiting count; finished ones do not.
    from langgraph_runtime_inmem.database import GLOBAL_STORE

    from app.serving.policy import serving_policy

    statuses = ("pending", "running", "success", "interrupted", "error")
    held = [{"run_id": f"r{n}", "status": s} for n, s in enumerate(statuses)]
    monkeypatch.setitem(GLOBAL_STORE, "runs", held)
    monkeypatch.setenv("RAG_MAX_QUEUED_RUNS", "4")
    serving_policy.cache_clear()
    assert refusal("threads", "create_run", {"run_id": "new", "kwargs": run()}) is None
    held.append({"run_id": "new", "status": "pending"})  # the runtime stores it: counted once
    assert refusal("threads", "create_run", {"run_id": "next", "kwargs": run()}) is None
    held.append({"run_id": "next", "status": "pending"})
    assert refusal("threads", "create_run", {"run_id": "third", "kwargs": run()}) == (
        429,
        "the server holds 4 questions already, answered one at a time (at most 4 under way "
        "or waiting, RAG_MAX_QUEUED_RUNS): try again when one is answered",
    )
    held[0]["status"] = "success"  # one answered: room again
    assert refusal("threads", "create_run", {"run_id": "third", "kwargs": run()}) is None


def test_runs_created_at_the_same_moment_each_count_before_they_are_stored(monkeypatch):
    # The runtime awaits between the auth hook and storing the run: a batch's items, or
    # requests at once, each pass the hook before any is stored. Each counts from its check.
    from langgraph_runtime_inmem.database import GLOBAL_STORE

    import app.serving.run_queue as run_queue
    from app.serving.policy import serving_policy

    monkeypatch.setitem(GLOBAL_STORE, "runs", [])
    monkeypatch.setenv("RAG_MAX_QUEUED_RUNS", "3")
    serving_policy.cache_clear()
    answers = [
        refusal("threads", "create_run", {"run_id": f"b{n}", "kwargs": run()}) for n in range(5)
    ]
    assert answers[:3] == [None, None, None]
    assert [a[0] for a in answers[3:]] == [429, 429]
    # one the runtime never stores (refused after the hook) stops counting after a while
    monkeypatch.setattr(run_queue, "ADMITTED_SECONDS", 0.0)
    assert refusal("threads", "create_run", {"run_id": "later", "kwargs": run()}) is None


def test_the_queue_holds_eight_runs_unless_configured():
    from app.serving.policy import DEFAULT_MAX_QUEUED_RUNS

    assert DEFAULT_MAX_QUEUED_RUNS == 8
    assert ServingPolicy.from_env({}).max_queued_runs == 8
    assert ServingPolicy.from_env({"RAG_MAX_QUEUED_RUNS": "2"}).max_queued_runs == 2
    with pytest.raises(ValueError, match="RAG_MAX_QUEUED_RUNS must be a whole number"):
        ServingPolicy.from_env({"RAG_MAX_QUEUED_RUNS": "many"})
    with pytest.raises(ValueError, match="RAG_MAX_QUEUED_RUNS must be at least 1, got 0"):
        ServingPolicy.from_env({"RAG_MAX_QUEUED_RUNS": "0"})
