"""What a job waits for before its first task (issue 42 §1): the client's batched stream to the
scheduler is written at once after a job's tasks are handed to it (`cluster.send_now`), not
after Dask's 10 ms pacing, and the workers of a scheduler in the client's process are read
directly (`cluster.worker_addresses`), without a round trip.  No timing is asserted: the
stream test paces the stream by an hour, so a job whose graph waited for the pacing would not
finish.  Skipped without the `distributed` extra; N = 64."""

from __future__ import annotations

import pytest

distributed = pytest.importorskip(
    "distributed", reason='needs Dask distributed: pip install -e ".[distributed]"')

from ckks_helpers import context  # noqa: E402
from distributed_helpers import batch, square  # noqa: E402

from ren.ckks import dumps  # noqa: E402
from ren.distributed import local_client, submit  # noqa: E402
from ren.distributed.cluster import send_now, worker_addresses  # noqa: E402


@pytest.fixture(scope="module")
def ckks():
    return context(N=64, depth=3, scale_bits=30, first_bits=40, steps=(1,))


class Comm:
    """A stand-in for Dask's BatchedSend: what `send_now` reads and sets."""

    def __init__(self, buffer, deadline):
        self.buffer, self.next_deadline, self.woken = buffer, deadline, False
        self.waker = self

    def set(self):
        self.woken = True


class Loop:
    def __init__(self):
        self.callbacks = []

    def add_callback(self, fn):
        self.callbacks.append(fn)


class Client:
    def __init__(self, comm):
        self.scheduler_comm, self.loop = comm, Loop()


def test_send_now_wakes_a_paced_stream_that_holds_messages_on_the_event_loop():
    """The flush runs on the client's loop (a callback queued behind the messages): a stream
    holding messages within its pacing is woken with no deadline; an empty one, or one already
    woken (no deadline), is left alone; a client without such a stream is ignored."""
    held = Client(Comm(["update-graph"], 123.0))
    send_now(held)
    assert not held.scheduler_comm.woken  # nothing touched outside the loop's thread
    (flush,) = held.loop.callbacks
    flush()
    assert held.scheduler_comm.woken and held.scheduler_comm.next_deadline is None

    for comm in (Comm([], 123.0), Comm(["update-graph"], None)):
        client = Client(comm)
        send_now(client)
        client.loop.callbacks[0]()
        assert not comm.woken and comm.next_deadline == (123.0 if not comm.buffer else None)

    send_now(object())  # no stream, no loop: nothing to do
    bare = Client(None)
    send_now(bare)
    assert bare.loop.callbacks == []


def test_a_job_runs_when_the_clients_stream_is_paced_by_an_hour(ckks):
    """With the client's stream to the scheduler paced by an hour (`interval`), every
    message after the first waits an hour unless something writes it at once: the job's
    tasks (packed groups, sent in several chunks) still run and their results are exact,
    because each chunk's graph is flushed (`send_now`).  Mutation: no send_now -> the job
    times out."""
    cts = batch(ckks, 24)  # 12 a worker on 2: packed groups, in more than one chunk
    want = [dumps(square(ct, keys=ckks.ev.relin_key)) for ct in cts]
    with local_client(workers=2) as c:
        submit(square, cts[:4], keys=ckks.ev.relin_key, client=c).result(timeout=120)
        comm = c.scheduler_comm
        interval = comm.interval
        comm.interval = 3600.0
        try:
            c.sync(lambda: _send_op(c))  # the stream's next write is an hour away now
            job = submit(square, cts, keys=ckks.ev.relin_key, client=c)
            assert len(job.futures) > 2
            assert [dumps(r) for r in job.result(timeout=60)] == want
        finally:
            comm.interval = interval
            send_now(c)  # the releases it held


def _pace(comms, interval, message) -> None:
    """Pace batched streams by `interval` seconds, their next write that far away (`message`
    sent now, one each stream's other side takes without effect)."""
    for comm in comms:
        comm.interval = interval
        if message:
            comm.send(message)
        comm.next_deadline = None
        comm.waker.set()


def _pace_scheduler(dask_scheduler, interval, message=True) -> None:
    _pace(dask_scheduler.stream_comms.values(), interval, message and
          {"op": "free-keys", "keys": [], "stimulus_id": "ren-test-pace"})


def test_a_job_runs_when_the_schedulers_streams_to_the_workers_are_paced_by_an_hour(ckks):
    """`local_client`'s scheduler has the plugin that writes a map job's tasks to the workers
    at once (`ren.distributed.dispatch`): with its streams to the workers paced by an hour,
    the tasks still reach the workers and the results are exact.  Mutation: no flush (or
    not on processing) -> the job times out."""
    from ren.distributed.dispatch import NAME

    cts = batch(ckks, 24)
    want = [dumps(square(ct, keys=ckks.ev.relin_key)) for ct in cts]
    with local_client(workers=2) as c:
        assert NAME in c.cluster.scheduler.plugins
        submit(square, cts[:4], keys=ckks.ev.relin_key, client=c).result(timeout=120)
        c.run_on_scheduler(_pace_scheduler, interval=3600.0)
        try:
            job = submit(square, cts, keys=ckks.ev.relin_key, client=c)
            assert [dumps(r) for r in job.result(timeout=60)] == want
        finally:
            c.run_on_scheduler(_pace_scheduler, interval=0.005, message=False)


async def _send_op(client) -> None:
    """One message on the client's stream (on its loop): its pacing starts now."""
    client.scheduler_comm.send({"op": "heartbeat-client"})
    client.scheduler_comm.next_deadline = None
    client.scheduler_comm.waker.set()


def test_the_workers_of_a_scheduler_in_this_process_are_read_without_a_round_trip():
    """`local_client`'s scheduler lives in the client's process: its workers are read from
    it, so no call goes through the client's event loop (`Client.sync` made to fail), and
    they are the scheduler's own, in its order; a worker that joins is there at once."""
    with local_client(workers=1) as c:
        scheduler = c.cluster.scheduler
        sync = c.sync

        def no_round_trip(*args, **kwargs):
            raise AssertionError("worker_addresses went through the event loop")

        c.sync = no_round_trip
        try:
            one = worker_addresses(c)
        finally:
            c.sync = sync
        assert one == list(scheduler.workers) and len(one) == 1
        c.cluster.scale(2)
        c.wait_for_workers(2, timeout=120)
        c.sync = no_round_trip
        try:
            two = worker_addresses(c)
        finally:
            c.sync = sync
        assert two == list(scheduler.workers) and len(two) == 2 and set(one) < set(two)


def test_the_workers_of_a_remote_scheduler_are_asked_of_it():
    """A client whose cluster has no scheduler here (a stand-in for one of a real cluster)
    asks the scheduler (`Client.scheduler_info` on a client without `sync`)."""

    class Remote:
        status = "running"

        def scheduler_info(self, n_workers=0):
            assert n_workers == -1
            return {"workers": {"tcp://b:1": {}, "tcp://a:1": {}}}

    assert worker_addresses(Remote()) == ["tcp://b:1", "tcp://a:1"]


def test_the_schedulers_flush_wakes_only_streams_with_dasks_fields_that_hold_messages():
    """`dispatch.flush` (the scheduler plugin's) and `send_now` share `wake_batched`: a stream
    that holds messages within its pacing is woken; an empty one, one already woken, None and
    an object without BatchedSend's fields (another Dask) are left alone, with no error."""
    pytest.importorskip("distributed")
    from ren.distributed import dispatch

    held, empty, woken = Comm(["compute-task"], 5.0), Comm([], 5.0), Comm(["x"], None)
    dispatch.flush([held, empty, woken, None, object()])
    assert held.woken and held.next_deadline is None
    assert not empty.woken and empty.next_deadline == 5.0 and not woken.woken
