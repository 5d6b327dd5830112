"""What a map job pays besides the replays (issue 42): the keys and plan a job broadcast stay on
every worker between jobs (Dask's active memory manager dropped all copies but one, and the
next job's tasks fetched them from a busy worker: the two-worker n16 gap), a job's keys are
encoded once per key object (the client checksummed every key byte each job), and a job asks
the scheduler for its workers at most every `ADDRESSES_TTL` seconds (and after a task that did
not finish).  Skipped without the `distributed` extra; N = 64."""

from __future__ import annotations

import pytest

distributed = pytest.importorskip(
    "distributed", reason='needs Dask distributed: pip install -e ".[distributed]"')

from ckks_helpers import context  # noqa: E402
from distributed_helpers import batch, square  # noqa: E402

import ren.distributed.batch as batch_module  # noqa: E402
from ren.ckks import dumps  # noqa: E402
from ren.distributed import local_client, submit  # noqa: E402
from ren.distributed.batch import ADDRESSES_TTL, MapJob, encode_keys  # noqa: E402
from ren.distributed.wire import Codec  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with local_client(workers=2, keep_broadcasts=True) as c:
        yield c


@pytest.fixture(scope="module")
def ckks():
    return context(N=64, depth=3, scale_bits=30, first_bits=40, steps=(1,))


def shared_holders(client) -> dict[str, set[str]]:
    """The workers holding each blob the client keeps broadcast (`remote.share`)."""
    from ren.distributed.remote import _shared

    futures = list(_shared.get(client, {}).values())
    return {k: set(v) for k, v in client.who_has(futures).items()}


def test_a_local_cluster_keeps_the_broadcast_keys_and_plan_on_every_worker(client, ckks):
    """After a job, a cycle of Dask's memory manager (the ReduceReplicas policy, on by default,
    drops the extra copies of a key no task waits for) leaves the keys and the plan on both
    workers; the next job sends nothing and runs right."""
    cts = batch(ckks, 4)
    submit(square, cts, keys=ckks.ev.relin_key, client=client).result(timeout=60)
    assert client.run_on_scheduler(
        lambda dask_scheduler: len(dask_scheduler.extensions["amm"].policies)) == 0
    client.amm.run_once()
    workers = set(client.scheduler_info(n_workers=-1)["workers"])
    holders = shared_holders(client)
    assert len(workers) == 2 and holders and all(h == workers for h in holders.values())


def test_a_blob_dropped_from_a_worker_is_copied_back_before_the_tasks(client, ckks):
    """On a cluster whose memory manager drops replicas (added here by hand), the next job
    copies its keys and plan back to every worker before its tasks go, sends no byte of them
    from the client, and its results are the local replay's."""
    from distributed.active_memory_manager import ReduceReplicas

    cts = batch(ckks, 4)
    rlk = ckks.ev.relin_key
    submit(square, cts, keys=rlk, client=client).result(timeout=60)

    def drop(dask_scheduler):
        amm = dask_scheduler.extensions["amm"]
        policy = ReduceReplicas()
        amm.add_policy(policy)
        amm.run_once()
        amm.policies.discard(policy)

    client.run_on_scheduler(drop)
    client.sync(lambda: __import__("asyncio").sleep(0.5))  # the drops reach the workers
    assert all(len(h) == 1 for h in shared_holders(client).values())
    job = submit(square, cts, keys=rlk, client=client)
    workers = set(client.scheduler_info(n_workers=-1)["workers"])
    assert all(h == workers for h in shared_holders(client).values())
    outs = job.result(timeout=60)
    assert job.shared_sent_bytes == 0
    assert [dumps(o) for o in outs] == [dumps(square(ct, keys=rlk)) for ct in cts]


def test_by_default_a_local_cluster_keeps_dasks_memory_policy():
    """Memory first: without ``keep_broadcasts`` the scheduler runs Dask's ReduceReplicas (a
    worker holds no second, serialized copy of keys it decoded: 3.2 GB more per worker at n16
    lean put two workers past a 23 GiB machine) and share copies nothing back."""
    import dask

    from ren.distributed.cluster import AMM_POLICIES, keeps_broadcasts

    # Dask's default list (a keep_broadcasts cluster open in this module empties it meanwhile)
    default = [{"class": "distributed.active_memory_manager.ReduceReplicas"}]
    with dask.config.set({AMM_POLICIES: default}), local_client(workers=1) as c:
        assert c.run_on_scheduler(
            lambda dask_scheduler: len(dask_scheduler.extensions["amm"].policies)) == 1
        assert not keeps_broadcasts(c)


def test_the_default_policies_are_the_ones_local_client_turns_off():
    """`local_client` replaces Dask's default policy list (ReduceReplicas alone) and nothing
    else: a caller's own policies stay (while a local_client is open, Dask's config holds its
    empty list)."""
    from ren.distributed.cluster import _default_amm_policies

    assert _default_amm_policies([{"class": "distributed.active_memory_manager.ReduceReplicas"}])
    assert not _default_amm_policies([])
    assert not _default_amm_policies([{"class": "my.Policy"}])


def test_keys_are_encoded_once_per_key_object(ckks):
    """A second job's keys reuse the first job's records (no checksum over them again); a
    different key object, or one whose Polys changed, is encoded anew; the parameters are
    registered in the job's codec either way."""
    rlk, gks = ckks.ev.relin_key, ckks.ev.rotation_keys
    first = encode_keys(Codec(), (rlk, gks))
    codec = Codec()
    again = encode_keys(codec, (rlk, gks))
    assert type(again) is tuple and again[0] is first[0] and again[1] is first[1]
    assert list(codec.params) == [ckks.params.fingerprint]
    assert dumps(Codec(codec.params).decode(again[0])) == dumps(rlk)
    other = ckks.keygen.relin_key()
    assert encode_keys(Codec(), [other])[0] is not first[0]
    # the same object holding other Polys (a Galois key replaced in place): encoded anew
    new = ckks.keygen.rotation_keys([1])
    g = next(iter(new.keys))
    key = gks.keys[g]
    gks.keys[g] = new.keys[g]
    try:
        fresh = encode_keys(Codec(), gks)
        assert fresh is not first[1]
        assert encode_keys(Codec(), gks) is fresh
    finally:
        gks.keys[g] = key


def test_a_job_asks_for_its_workers_again_only_after_the_ttl_or_a_task_that_failed(
        monkeypatch):
    """MapJob._feed on fakes: within `ADDRESSES_TTL` of the last ask no chunk asks the
    scheduler again; a task that came back cancelled, or the TTL passing, makes the next
    chunk ask."""
    asked = []

    def addresses(client):
        asked.append(1)
        return ["tcp://a", "tcp://b"]

    monkeypatch.setattr(batch_module, "worker_addresses", addresses)

    class Task:
        status = "finished"

        def __init__(self, key):
            self.key = key

        def add_done_callback(self, fn):
            pass

    class Sender:
        addresses = ["tcp://a", "tcp://b"]

        def send_many(self, indices, attempt=0):
            return [(Task(f"t{i}"), None, 10) for i in indices]

    now = [100.0]
    monkeypatch.setattr(batch_module.time, "monotonic", lambda: now[0])
    n = 40
    job = MapJob(None, [None] * n, None, 0, 0, 0, 0, 1, 2, _inputs=[None] * n,
                 _sender=Sender(), _attempts=[0] * n, _asked=now[0])
    with job._cond:
        job._feed()
    window = job._next
    for i in range(window // 2):  # half finished: one refill, no ask
        job._finished(Task(f"t{i}"))
    assert job._next > window and not asked
    lost = Task(f"t{window // 2}")
    lost.status = "cancelled"
    for i in range(window // 2 + 1, window):
        job._finished(Task(f"t{i}"))
    job._finished(lost)
    assert len(asked) == 1  # the cancelled task: asked again
    sent = job._next
    now[0] += ADDRESSES_TTL + 0.1
    for i in range(window, sent):
        job._finished(Task(f"t{i}"))
    assert job._next > sent and len(asked) == 2  # the TTL passed: asked again


def test_the_benchmark_runs_the_n16_bootstrapping_shape_at_a_smaller_ring(monkeypatch) -> None:
    """bench_distributed.py --bootstrap --preset n16 --log-n 13: the n16 preset's depth,
    prime sizes and secret at N = 2^13 (as bench_bootstrap.py's); --log-n is refused with the small
    preset or outside 13..16."""
    import importlib
    from pathlib import Path

    from ren.ckks.circuits import bootstrap_params_n16

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = importlib.import_module("bench_distributed")
    params, n16 = bench.n16_at(13, "cpu"), bootstrap_params_n16("python")
    assert params.N == 2**13 and params.device == "cpu"
    assert (params.depth, params.scale_bits, params.first_bits, len(params.special_moduli),
            params.secret) == (n16.depth, n16.scale_bits, n16.first_bits,
                               len(n16.special_moduli), n16.secret)
    for argv in (["--preset", "small", "--log-n", "13"], ["--preset", "n16", "--log-n", "12"]):
        with pytest.raises(SystemExit):
            bench.main(["--bootstrap", *argv])


def test_the_benchmark_reports_the_seconds_a_worker_fetched_before_its_tasks(monkeypatch):
    """bench_distributed.task_placement: per worker, its Ren tasks, their compute seconds and
    the seconds spent fetching from other workers (Dask's task stream); other keys ignored."""
    import importlib
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = importlib.import_module("bench_distributed")

    def record(key, worker, *steps):
        return {"key": key, "worker": worker,
                "startstops": [{"action": a, "start": s, "stop": e} for a, s, e in steps]}

    line = bench.task_placement([
        record("ren-map-1-0", "tcp://h:1", ("compute", 0.0, 2.0)),
        record("ren-map-1-1", "tcp://h:2", ("transfer", 0.0, 2.5), ("compute", 2.5, 4.5)),
        record("ren-map-1-2", "tcp://h:2", ("compute", 4.5, 6.0)),
        record("other", "tcp://h:1", ("transfer", 0.0, 9.0)),
    ])
    assert line == ("1: 1 task(s), 2.0 s computing, 0.0 s fetching from other workers; "
                    "2: 2 task(s), 3.5 s computing, 2.5 s fetching from other workers")


def test_each_job_places_its_tasks_on_the_workers_of_now_one_that_joined_or_left(ckks):
    """Each job asks the scheduler for its workers (`worker_addresses`): a worker that joined
    since the last job gets tasks, one that left gets none, and the results are exact each
    time (a guard for any cache of the addresses across jobs)."""
    from ren.distributed.cluster import worker_addresses

    cts = batch(ckks, 16)  # 8 a worker on 2: packed groups
    want = [dumps(square(ct, keys=ckks.ev.relin_key)) for ct in cts]
    with local_client(workers=1) as c:
        one = worker_addresses(c)
        assert len(one) == 1
        job = submit(square, cts, keys=ckks.ev.relin_key, client=c)
        assert [dumps(r) for r in job.result()] == want
        c.cluster.scale(2)
        c.wait_for_workers(2, timeout=120)
        two = worker_addresses(c)
        assert len(two) == 2 and set(one) < set(two)
        job = submit(square, cts, keys=ckks.ev.relin_key, client=c)
        assert job.workers == 2
        assert [dumps(r) for r in job.result()] == want
        assert {t["worker"] for t in job.timings} == set(two)  # the new one ran some
        c.retire_workers(one)
        left = worker_addresses(c)
        assert left == sorted(set(two) - set(one))
        job = submit(square, cts, keys=ckks.ev.relin_key, client=c)
        assert job.workers == 1
        assert [dumps(r) for r in job.result()] == want
        assert {t["worker"] for t in job.timings} == set(left)
