"""Stopping a run's model work (graph/stopping.py): no call starts, the one in flight ends."""

from __future__ import annotations

import asyncio
import re
import socket
import threading
import time

import httpx
import ollama
import pytest

from app.serving.graph import build_served_graph
from graph.builder import build_graph
from graph.stopping import Stop, Stopped, abortable_client_options, model_call
from tests.fakes import FakeModels

QUESTION = {"question": "How do I practise whiteboarding interviews?"}
#: Each fake model call's latency: a run would go on for seconds unless stopped.
SLOW = 2.0


async def until(condition, seconds):
    """Wait up to ``seconds`` for ``condition()``; the seconds waited."""
    start = time.monotonic()
    while not condition() and time.monotonic() - start < seconds:
        await asyncio.sleep(0.01)
    return time.monotonic() - start


def test_a_cancelled_served_run_stops_calling_the_model_within_a_second(loaded):
    # LangGraph cancels a served run's task (the API's cancel, a client gone); its sync node
    # goes on in a thread: the call in flight must end and no other one start.
    models = FakeModels(latency=SLOW)
    served = build_served_graph(models=models)

    async def scenario():
        run = asyncio.create_task(served.ainvoke(QUESTION, context=loaded))
        assert await until(lambda: models.concurrency.active > 0, SLOW) < SLOW
        run.cancel()
        cancelled = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await run
        waited = await until(lambda: models.concurrency.active == 0, SLOW)
        calls = models.calls()
        await asyncio.sleep(0.3)
        return cancelled, waited, calls

    _, waited, calls = asyncio.run(scenario())
    assert waited < 1.0, "the cancelled run's model call went on"
    assert models.concurrency.aborted >= 1  # aborted, not waited out
    assert models.calls() == calls and models.calls("generate") == 0


def test_cancelling_one_served_run_leaves_the_others_running(loaded):
    models = FakeModels(latency=0.3)
    served = build_served_graph(models=models)

    async def scenario():
        stopped = asyncio.create_task(served.ainvoke(QUESTION, context=loaded))
        kept = asyncio.create_task(served.ainvoke(QUESTION, context=loaded))
        await until(lambda: models.concurrency.active >= 2, SLOW)
        stopped.cancel()
        return await kept

    result = asyncio.run(scenario())
    assert result["answer"].startswith("Based on your notes")
    assert models.calls("generate") == 1


def test_a_stopped_run_starts_no_model_call(loaded):
    models = FakeModels()
    stop = Stop()
    stop.stop()
    with pytest.raises(Stopped):
        build_graph(models=models).invoke(QUESTION, {"callbacks": [stop]}, context=loaded)
    assert models.calls() == 0


def test_a_stop_outside_any_call_changes_nothing_for_the_next_run(loaded):
    models = FakeModels()
    graph = build_graph(models=models)
    Stop().stop()  # another run's
    assert graph.invoke(QUESTION, {"callbacks": [Stop()]}, context=loaded)["answer"]


# --- aborting the HTTP call itself -----------------------------------------------------------


#: A whole reply, as Ollama streams one (one NDJSON line, then the end).
REPLY = b'{"model": "m", "message": {"role": "assistant", "content": "hi"}, "done": true}\n'


class SilentServer:
    """A model server on a Unix socket that answers its first request and then, on any
    connection, reads requests and says nothing (a prompt still being read): it records when
    each connection was closed by its client."""

    def __init__(self, path: str) -> None:
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen()
        self.requests: list[bytes] = []
        self.closed: list[float] = []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.hold, args=(conn,), daemon=True).start()

    def hold(self, conn: socket.socket) -> None:
        conn.settimeout(30)
        with conn:
            try:
                while request := self.read_request(conn):
                    self.requests.append(request)
                    if len(self.requests) == 1:
                        head = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\n"
                        conn.sendall(head + b"content-length: %d\r\n\r\n" % len(REPLY) + REPLY)
            except OSError:
                pass
            self.closed.append(time.monotonic())

    @staticmethod
    def read_request(conn: socket.socket) -> bytes:
        data = b""
        while b"\r\n\r\n" not in data:
            if not (more := conn.recv(65536)):
                return b""
            data += more
        head, body = data.split(b"\r\n\r\n", 1)
        length = int(re.search(rb"content-length: *(\d+)", head, re.IGNORECASE).group(1))
        while len(body) < length:
            if not (more := conn.recv(65536)):
                return b""
            body += more
        return head


def test_aborting_a_call_closes_its_connection_while_the_server_is_still_silent(tmp_path):
    # As the served model's own client: a first call answered, then one aborted while the
    # server has sent nothing back (Ollama evaluating the prompt).
    server = SilentServer(str(tmp_path / "ollama.sock"))
    options = abortable_client_options()
    transport = httpx.HTTPTransport(uds=str(tmp_path / "ollama.sock"), limits=options["limits"])
    client = ollama.Client(host="http://ollama", transport=transport, **options)
    message = [{"role": "user", "content": "hi"}]
    with model_call():
        assert [
            r.message.content for r in client.chat(model="m", messages=message, stream=True)
        ] == ["hi"]
    failed: list[BaseException] = []
    calls = []

    def ask() -> None:
        try:
            with model_call() as call:
                calls.append(call)
                for _ in client.chat(model="m", messages=message, stream=True):
                    pass
        except BaseException as exc:
            failed.append(exc)

    asking = threading.Thread(target=ask)
    asking.start()
    deadline = time.monotonic() + 5
    while len(server.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [r.split(b" ", 2)[:2] for r in server.requests] == [[b"POST", b"/api/chat"]] * 2
    aborted = time.monotonic()
    calls[0].abort()
    asking.join(5)
    assert not asking.is_alive() and failed, "the call went on"
    deadline = time.monotonic() + 5
    while len(server.closed) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    # Each call had a connection of its own; the aborted one's closed at once.
    assert len(server.closed) == 2 and server.closed[-1] - aborted < 1.0
    assert isinstance(failed[0], Stopped)
    server.listener.close()


# --- the pieces, one at a time -----------------------------------------------------------


def shut_down(sock: socket.socket) -> bool:
    """Whether ``sock`` was shut down: its peer reads the end of the stream at once."""
    sock.settimeout(1.0)
    return sock.recv(1) == b""


def test_a_connection_made_after_its_call_was_aborted_is_shut_down_at_once():
    from graph.stopping import ModelCall

    ours, peer = socket.socketpair()
    call = ModelCall()
    call.abort()
    call.attach(ours)
    assert shut_down(peer)
    ours2, peer2 = socket.socketpair()
    later = ModelCall()
    later.attach(ours2)  # connected first, aborted after
    later.abort()
    assert shut_down(peer2)
    for s in (ours, peer, ours2, peer2):
        s.close()


def test_a_stop_remembers_the_latest_cancelled_runs_only(monkeypatch):
    import uuid

    import graph.stopping as stopping
    from graph.stopping import ModelCall

    monkeypatch.setattr(stopping, "REMEMBERED_RUNS", 2)
    stop = Stop()
    first, second, third = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    for run in (first, second, third):
        stop.stop(run)
    stop._begin(ModelCall(), first)  # forgotten: the oldest of three
    for run in (second, third):
        with pytest.raises(Stopped, match="^the run was stopped$"):
            stop._begin(ModelCall(), run)


def test_a_finished_call_is_no_longer_tracked_and_a_stopped_run_starts_none():
    stop = Stop()

    def calls_made():
        with model_call():
            assert stop.in_flight == 1
        return stop.in_flight

    # model_call finds the run's stops in its callbacks: run it as a graph node would
    from langchain_core.runnables import RunnableLambda

    assert RunnableLambda(lambda _: calls_made()).invoke(None, {"callbacks": [stop]}) == 0
    stop.stop()
    with pytest.raises(Stopped, match="^the run was stopped$"):
        RunnableLambda(lambda _: calls_made()).invoke(None, {"callbacks": [stop]})


class Stream:
    def __init__(self, sock):
        self.sock = sock

    def get_extra_info(self, name):
        return self.sock if name == "socket" else None


@pytest.mark.parametrize("event", ["connection.connect_tcp", "connection.start_tls"])
def test_each_connection_a_call_makes_is_attached_to_it(event):
    from graph.stopping import _trace

    ours, peer = socket.socketpair()
    _trace(f"{event}.complete", {"return_value": Stream(ours)})  # no call: nothing attached
    _trace(f"{event}.started", {})
    with pytest.raises(Stopped), model_call() as call:  # aborted: its reply is not used
        _trace(f"{event}.started", {"return_value": Stream(ours)})  # not connected yet
        assert not call._sockets
        _trace(f"{event}.complete", {"return_value": Stream(ours)})
        call.abort()
    assert shut_down(peer)
    ours.close()
    peer.close()


def test_stopping_one_run_aborts_its_calls_only():
    import uuid

    from graph.stopping import ModelCall

    stop = Stop()
    one, other = uuid.uuid4(), uuid.uuid4()
    ours, theirs = ModelCall(), ModelCall()
    stop._begin(ours, one)
    stop._begin(theirs, other)
    stop.stop(one)
    assert ours.aborted.is_set() and not theirs.aborted.is_set()
    with pytest.raises(Stopped):
        stop._begin(ModelCall(), one)  # and no new call of that run starts
    stop._begin(ModelCall(), other)  # the other run goes on
