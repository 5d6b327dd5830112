"""ren.distributed on a Dask LocalCluster of 2 worker processes: map (bit-identical to replaying
the same jit function locally, and decrypted against NumPy), sweep (its table against running
every point directly), a worker killed mid-batch, a task that raises, and no secret key in the
task graph or on any worker.  Skipped without the `distributed` extra."""

from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np
import pytest

distributed = pytest.importorskip(
    "distributed", reason='needs Dask distributed: pip install -e ".[distributed]"')
cloudpickle = pytest.importorskip("cloudpickle", reason="comes with Dask distributed")

from ckks_helpers import context  # noqa: E402
from distributed_helpers import result_holder, square  # noqa: E402

import ren  # noqa: E402
from ren.backend.malloc import tune_allocator  # noqa: E402
from ren.ckks import dumps  # noqa: E402
from ren.distributed import (  # noqa: E402
    DistributedError,
    SecretKeyError,
    TaskError,
    local_client,
    run_point,
    submit,
    sweep,
)
from ren.distributed import map as dmap  # noqa: E402
from ren.distributed.sweep import expand_grid  # noqa: E402
from ren.distributed.wire import Codec, wire_bytes  # noqa: E402
from ren.errors import LevelError, ParameterError  # noqa: E402
from ren.ir import storage_buffer  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with local_client(workers=2) as c:
        yield c


@pytest.fixture(scope="module")
def ckks():
    return context(N=64, depth=3, scale_bits=30, first_bits=40, steps=(1,))


def values(i: int, slots: int) -> np.ndarray:
    return np.random.default_rng(i).uniform(-1, 1, slots)


def batch(ckks, n: int, level: int | None = None) -> list:
    return [ckks.encrypt(values(i, ckks.params.slots), level) for i in range(n)]


def profiler_enabled() -> bool:
    import dask.config

    return bool(dask.config.get("distributed.worker.profile.enabled"))


def test_local_client_turns_the_workers_profiler_off_unless_asked(client):
    # Dask's statistical profiler samples every thread's stack every 10 ms (about 5 % of a
    # worker's time); local_client switches it off in its workers, profile=True keeps it
    assert set(client.run(profiler_enabled).values()) == {False}
    with local_client(workers=1, profile=True) as profiled:
        assert set(profiled.run(profiler_enabled).values()) == {True}


def tick_interval(dask_worker=None, dask_scheduler=None) -> float:
    return (dask_worker or dask_scheduler)._tick_interval


def test_local_client_slows_the_event_loop_tick_unless_configured(client):
    """Dask's 20 ms tick costs idle CPU in every process (cluster.TICK_INTERVAL); local_client
    runs it every second in the scheduler and the workers, and keeps an interval the caller's
    Dask config sets."""
    import dask.config

    from ren.distributed.cluster import TICK_INTERVAL

    assert TICK_INTERVAL == "1s"
    assert set(client.run(tick_interval).values()) == {1.0}
    assert client.run_on_scheduler(tick_interval) == 1.0
    with dask.config.set({"distributed.admin.tick.interval": "50ms"}), \
            local_client(workers=1) as own:
        assert set(own.run(tick_interval).values()) == {0.05}
        assert own.run_on_scheduler(tick_interval) == 0.05


def memory_limit(dask_worker=None) -> int | None:
    return dask_worker.memory_manager.memory_limit


def test_local_client_gives_the_workers_no_dask_memory_limit_unless_asked(client):
    """Dask's default limit (the machine's memory split evenly over the workers; the nanny
    restarts a worker at 95 % of its share) lost a worker of the two-worker n16 bootstrapping
    mid-batch ("lost dependencies"); local_client's workers and nannies have none unless
    memory_limit= names one."""
    from ren.distributed.cluster import LOCAL_MEMORY_LIMIT

    assert LOCAL_MEMORY_LIMIT == 0
    assert set(client.run(memory_limit).values()) == {None}
    nannies = client.cluster.workers.values()  # (the nanny is what restarts a worker)
    assert {n.memory_manager.memory_limit for n in nannies} == {None}
    with local_client(workers=1, memory_limit="1GiB") as capped:
        assert set(capped.run(memory_limit).values()) == {2**30}
        assert {n.memory_manager.memory_limit for n in capped.cluster.workers.values()} == \
            {2**30}


def test_map_replays_the_plan_bit_identically_and_in_order(client, ckks):
    cts = batch(ckks, 10)
    rlk = ckks.ev.relin_key
    job = submit(square, cts, keys=rlk, client=client)
    outs = job.result(timeout=60)
    assert len(outs) == 10 and job.plans == 1 and job.workers == 2
    for i, (ct, out) in enumerate(zip(cts, outs)):
        assert dumps(out) == dumps(square(ct, keys=rlk)), f"input {i}"  # local replay: same bits
        want = values(i, ckks.params.slots) ** 2
        assert np.max(np.abs(ckks.decrypt(out) - want)) < 2**-15
    # the compact form: each key's uniform half as its seed (about half the full form's bytes)
    assert 0.4 * len(dumps(rlk)) < job.keys_bytes < 0.6 * len(dumps(rlk))
    assert "once per worker: keys" in job.describe()
    assert {t["worker"] for t in job.timings} == set(client.scheduler_info()["workers"])
    # the task thread's CPU seconds (robust on a loaded machine): within the item's, and no
    # more than the wall seconds they were measured over
    for t in job.timings:
        assert 0 < t["run_cpu"] <= t["cpu"] <= sum(t[k] for k in (
            "load", "decode", "run", "encode")) + 1e-3
        assert t["run_cpu"] <= t["run"] + 1e-3
    if sys.platform == "linux":  # glibc: large buffers stay on the heap in the workers
        assert all(client.run(tune_allocator).values())


def test_a_mixed_batch_ships_one_plan_per_input_spec(client, ckks):
    cts = [ckks.encrypt(values(i, 32), level) for i, level in enumerate([3, 2, 3, 2])]
    job = submit(square, cts, keys=ckks.ev.relin_key, client=client)
    outs = job.result(timeout=60)
    assert job.plans == 2 and [o.level for o in outs] == [2, 1, 2, 1]
    for i, out in enumerate(outs):
        assert np.max(np.abs(ckks.decrypt(out) - values(i, 32) ** 2)) < 2**-15


def test_map_over_polys_and_plain_functions(client, ckks):
    ring = ren.RingSpec.generate(32, 3)
    polys = [ren.Poly.from_coefficients((values(i, 32) * 1000).astype(np.int64), ring)
             for i in range(4)]
    mul3 = ren.jit(lambda a, b: a * b + 3)
    pairs = [(polys[i], polys[(i + 1) % 4]) for i in range(4)]
    outs = dmap(mul3, pairs, client=client)
    assert [o.tolist() for o in outs] == [mul3(a, b).tolist() for a, b in pairs]
    ev = ckks.ev  # a plain function runs eagerly on the workers, closing over public keys

    def rotate_then_add(ct):
        return ev.add(ev.rotate(ct, 1), ct)

    cts = batch(ckks, 3)
    outs = dmap(rotate_then_add, cts, client=client)
    for i, out in enumerate(outs):
        x = values(i, ckks.params.slots)
        assert np.max(np.abs(ckks.decrypt(out) - (np.roll(x, -1) + x))) < 2**-15


def test_a_task_that_raises_comes_back_with_its_index(client, ckks):
    ev = ckks.ev

    def square_eagerly(ct):
        return ev.rescale(ev.multiply(ct, ct))

    cts = batch(ckks, 6)
    cts[4] = ckks.encrypt(values(4, 32), level=0)  # no level left for the product
    with pytest.raises(TaskError, match="map: input 4 failed on a worker with ScaleOutOfBoundsError"
                       ) as e:
        dmap(square_eagerly, cts, client=client)
    assert e.value.index == 4 and isinstance(e.value.__cause__, LevelError)
    assert any("while running input 4 on worker tcp://" in n for n in e.value.__cause__.__notes__)


def test_bad_calls_raise_specific_errors(client, ckks):
    with pytest.raises(ParameterError, match="batch must be a list"):
        dmap(square, ckks.encrypt([0.5]), client=client)
    with pytest.raises(ParameterError, match=r"client must be a distributed\.Client"):
        dmap(square, [], client="tcp://localhost:8786")
    with pytest.raises(ParameterError, match=r"fn must be a ren\.jit function or a callable"):
        dmap(42, [1], client=client)
    assert dmap(square, [], keys=ckks.ev.relin_key, client=client) == []


# -- secrets stay on the client ----------------------------------------------------------------
def secret_patterns(sk) -> list[bytes]:
    """Windows of the secret key's data as it may be stored anywhere: NTT domain as stored
    (Montgomery form) and standard form, and the coefficient form; plus its sampling seed."""
    forms = [storage_buffer(sk.poly.node).copyout(), sk.poly.numpy(), sk.poly.intt().numpy()]
    out = [np.ascontiguousarray(row[i:i + 12], np.uint32).tobytes()
           for arr in forms for row in arr for i in (0, 40)]
    origin = sk.poly.random_origin()
    return out + ([origin.seed] if origin is not None else [])


def everything_sent(client) -> list[bytes]:
    """The pickled run spec of every task the scheduler holds, and every value on every worker
    (scattered keys and plans, inputs, results)."""
    scheduler = client.cluster.scheduler
    specs = [cloudpickle.dumps(ts.run_spec) for ts in scheduler.tasks.values()]

    def worker_data(dask_worker):
        return [cloudpickle.dumps(v) for v in dask_worker.data.values()]

    held = [b for blobs in client.run(worker_data).values() for b in blobs]
    assert specs and held
    return specs + held


def test_no_secret_key_in_the_task_graph_or_on_a_worker(client, ckks):
    sk = ckks.keygen.secret_key()
    patterns = secret_patterns(sk)
    job = submit(square, batch(ckks, 4), keys=ckks.ev.relin_key, client=client)
    distributed.wait(job.futures)  # the tasks are still held: inspect them before gathering
    sent = everything_sent(client)
    assert not [p for p in patterns for blob in sent if p in blob]
    job.result()
    # the check can fail: a secret key's bytes on a worker are found
    leak = client.scatter(dumps(sk, allow_secret=True))
    assert any(p in blob for p in patterns for blob in everything_sent(client))
    del leak


def test_secret_keys_are_refused_before_anything_is_sent(client, ckks):
    sk, cts = ckks.keygen.secret_key(), batch(ckks, 2)
    with pytest.raises(SecretKeyError, match="keys: refusing to send a SecretKey"):
        dmap(square, cts, keys=sk, client=client)
    with pytest.raises(SecretKeyError, match=r"batch\[1\]\[1\]: refusing to send a Decryptor"):
        dmap(lambda ct, d: ct, [(cts[0], 1), (cts[1], ckks.dec)], client=client)
    dec = ckks.dec

    def peek(ct):
        return dec.decrypt(ct)

    with pytest.raises(SecretKeyError, match="refusing to send a Decryptor"):
        dmap(peek, cts, client=client)
    # a jitted function that computes with the secret bakes it into its plan: refused too
    s = sk.poly

    @ren.jit
    def half_decrypt(ct):
        return ct.parts[0] + ct.parts[1] * s.to_ring(ct.parts[1].ring)

    with pytest.raises(SecretKeyError, match="the captured plan contains the data of a secret"):
        dmap(half_decrypt, cts, client=client)
    with pytest.raises(SecretKeyError, match=r"batch\[0\]: refusing to send a Poly over a secret"):
        dmap(lambda p: p * 2, [s, cts[0].parts[0]], client=client)


def test_the_processes_objects_are_walked_for_secrets_only_when_a_check_needs_them(
        client, ckks, monkeypatch):
    """live_secret_keys walks every object of the client process (~20 ms with a cluster): a
    job of ciphertexts whose program an earlier job pickled needs no secret's data, so it does
    not walk them; a Poly input or a newly pickled program does, once per job, and is still
    refused when it is (or holds) a secret."""
    import ren.distributed.wire as wire_module

    calls: list[int] = []
    real = wire_module.live_secret_keys
    monkeypatch.setattr(wire_module, "live_secret_keys", lambda: calls.append(1) or real())
    cts, rlk, sk = batch(ckks, 3), ckks.ev.relin_key, ckks.keygen.secret_key()
    dmap(square, cts, keys=rlk, client=client)  # the program pickled (here or earlier)
    calls.clear()
    outs = dmap(square, cts, keys=rlk, client=client)
    assert calls == [] and [dumps(o) for o in outs] == [dumps(square(c, keys=rlk)) for c in cts]
    with pytest.raises(SecretKeyError, match=r"batch\[1\]: refusing to send a Poly over a secret"):
        dmap(square_poly, [cts[0].parts[0], sk.poly], client=client)
    assert calls == [1]  # once for the job: the first Poly looked them up
    calls.clear()
    dmap(lambda ct: ct, cts[:1], client=client)  # a plain function: pickled anew, checked
    assert calls == [1]


def square_poly(p):
    return p * p


# -- sweep ---------------------------------------------------------------------------------------
def rotate_multiply(ev, ct):
    return ev.rescale(ev.multiply(ev.rotate(ct, 1), ct))


def rotate_multiply_reference(x):
    return np.roll(x, -1) * x


GRID = {"N": [64, 128], "depth": [2, 3], "scale_bits": [25, 30], "dnum": [None, 3],
        "first_bits": 40, "insecure": True}
POINTS = expand_grid(GRID) + [  # and the secret's type: sparse ternary
    {"N": n, "depth": 2, "scale_bits": 30, "first_bits": 40, "secret": ("sparse", 16),
     "insecure": True} for n in (64, 128)]
MEASURED = ["N", "depth", "scale_bits", "dnum", "secret", "log2_QP", "security_bits",
            "levels_used", "output_level", "output_log2_scale", "bits", "relin_key_bytes",
            "galois_keys", "galois_key_bytes", "key_bytes", "key_bytes_compact"]


def test_a_sweep_of_18_points_matches_running_each_point_directly(client):
    table = sweep(rotate_multiply, POINTS, reference=rotate_multiply_reference, seed=11,
                  repeat=1, client=client)
    rows = table.to_dict("records") if hasattr(table, "to_dict") else table
    assert len(rows) == 18 and [r["point"] for r in rows] == list(range(18))
    assert {r["worker"] for r in rows} == set(client.scheduler_info()["workers"])
    assert {r["dnum"] for r in rows} == {1, 2, 3} and rows[-1]["secret"] == "sparse(16)"
    for i, (row, point) in enumerate(zip(rows, POINTS)):
        direct = run_point(rotate_multiply, point, reference=rotate_multiply_reference,
                           seed=11 + i, repeat=1)
        assert {k: row[k] for k in MEASURED} == {k: direct[k] for k in MEASURED}, i
        assert row["seconds"] > 0 and row["error"] is None
        assert 15 < row["bits"] < 40  # against NumPy, not only against the direct run


def test_a_failing_point_raises_with_its_index_or_is_recorded(client):
    grid = [{"N": 64, "depth": 2, "scale_bits": 30, "first_bits": 40, "insecure": True},
            {"N": 64, "depth": 1, "scale_bits": 30, "first_bits": 40, "insecure": True}]

    def two_products(ev, ct):
        return ev.rescale(ev.multiply(ev.rescale(ev.multiply(ct, ct)), ct))

    with pytest.raises(TaskError, match="sweep: point 1 failed on a worker with") as e:
        sweep(two_products, grid, reference=lambda x: x**3, client=client, repeat=1)
    assert e.value.index == 1
    rows = sweep(two_products, grid, reference=lambda x: x**3, client=client, repeat=1,
                 errors="record", frame=False)
    assert rows[0]["error"] is None and rows[0]["levels_used"] == 2
    assert rows[1]["error"].startswith(("OutOfLevelsError", "LevelError", "ScaleOutOfBounds"))


def test_the_meter_per_point_and_records_without_pandas(client):
    grid = {"N": [64], "depth": [2], "scale_bits": [25, 30], "first_bits": 40, "insecure": True}
    rows = sweep(rotate_multiply, grid, meter=True, client=client, repeat=1, frame=False)
    assert isinstance(rows, list) and len(rows) == 2
    for r in rows:
        assert "largest loss" in r["meter"] and r["meter_min_bits"] > 10
        assert r["bits"] > 15  # no reference: the meter's last step


# -- a worker killed mid-batch ---------------------------------------------------------------
@pytest.mark.parametrize("path", ["off", "auto"])
def test_a_worker_killed_mid_batch_has_its_tasks_run_elsewhere(ckks, path, monkeypatch):
    """Records in messages (``off``): the victim's results run again elsewhere and its
    scattered inputs are sent again.  Through shared memory (``auto``: packed groups carry
    their inputs and post their results, `ren.distributed.posts`) a finished group's results
    outlive the victim, and its queued groups run elsewhere."""
    monkeypatch.setenv("REN_DISTRIBUTED_SHM", path)
    cts = batch(ckks, 24)
    rlk = ckks.ev.relin_key
    with local_client(workers=2) as c:
        pids = c.run(os.getpid)
        job = submit(square, cts, keys=rlk, client=c)
        victim = result_holder(c, job, 30)
        sent = [f for f in job.futures if f is not None]  # the rest is not out yet
        lost = [k for k, ws in c.who_has(sent).items() if victim in ws]
        os.kill(pids[victim], signal.SIGKILL)  # with results held and tasks still queued there
        outs = job.result(timeout=60)
        assert lost, "the killed worker held no result"
        if path == "off":
            assert victim not in {t["worker"] for t in job.timings}  # all recomputed elsewhere
            log = c.cluster.scheduler.transition_log
            computed = [entry[0] for entry in log if entry[2] == "memory"]
            # ran twice (under its key, or, when its input died with the worker and the client
            # sent it again, under a resend's key), delivered once
            assert all(sum(1 for k2 in computed if k2 == k or k2.startswith(f"{k}-resend")) >= 2
                       for k in lost)
            # the inputs scattered to the victim died with it: the client sent them again
            assert job.resends >= 1 and any("-resend" in f.key for f in job.futures)
        else:
            assert job._groups is not None and all(f is None for f in job._inputs)
            assert job._sender.post_names  # (packed: inputs in the tasks, results posted)
    assert len(outs) == 24
    for i, (ct, out) in enumerate(zip(cts, outs)):
        assert dumps(out) == dumps(square(ct, keys=rlk)), f"input {i}"


def test_a_cancelled_job_is_not_sent_again(client, ckks):
    """A task cancelled by the caller (job.cancel()) is not taken for one whose input died with
    its worker: result() raises instead of scattering the input again."""
    job = submit(square, batch(ckks, 12), keys=ckks.ev.relin_key, client=client)
    job.cancel()  # the last inputs were sent a moment ago: their tasks have not run
    with pytest.raises(DistributedError, match="its task was cancelled"):
        job.result(timeout=60)
    assert job.resends == 0


def test_resend_counts_and_stops_after_max_resends():
    """MapJob._resend, the client's answer to an input lost with its worker, on fakes: it
    releases the lost input, sends to the workers alive now, counts, and gives up (None) after
    MAX_RESENDS sends of one input or once the job is cancelled; no workers left is an error."""
    from ren.distributed.batch import MAX_RESENDS, MapJob

    class FakeTask:
        def __init__(self, key):
            self.key = key

        def add_done_callback(self, fn):
            pass

    class Fake:
        def __init__(self):
            self.workers = {"tcp://b": {}}
            self.sent, self.released = [], []

        def scheduler_info(self, n_workers):
            return {"workers": self.workers}

        def send_many(self, indices, attempt):
            (i,) = indices
            self.sent.append((i, attempt, tuple(self.addresses)))
            return [(FakeTask(f"task-{i}-{attempt}"), self, 0)]

        def release(self):
            self.released.append(True)

    fake = Fake()
    fake.addresses = ["tcp://a", "tcp://b"]
    job = MapJob(fake, [None, None], None, 0, 0, 0, 0, 1, 2, _inputs=[fake, fake],
                 _sender=fake, _attempts=[0, 0])
    for k in range(1, MAX_RESENDS + 1):
        assert job._resend(1).key == f"task-1-{k}"
        assert job.resends == k and job._attempts == [0, k] and len(fake.released) == k
    assert fake.sent[-1] == (1, MAX_RESENDS, ("tcp://b",))  # only the worker alive now
    assert job._resend(1) is None and job.resends == MAX_RESENDS  # given up
    fake.workers = {}
    with pytest.raises(DistributedError, match="every worker of the cluster is gone"):
        job._resend(0)
    job._cancelled = True
    assert job._resend(0) is None


def test_a_job_keeps_a_window_of_inputs_out_and_goes_on_without_result(client, ckks):
    """At most IN_FLIGHT_PER_WORKER inputs per worker are out; the rest are sent from Dask's
    callback thread as tasks finish, so the job completes before result() is even called."""
    from ren.distributed.batch import IN_FLIGHT_PER_WORKER, size

    cts = batch(ckks, 15)  # one input a task (`inputs_per_task`)
    rlk = ckks.ev.relin_key
    job = submit(square, cts, keys=rlk, client=client)
    window = IN_FLIGHT_PER_WORKER * 2
    assert sum(f is not None for f in job.futures) == window  # the rest waits its turn
    deadline = time.monotonic() + 60
    most = 0
    while not all(f is not None and f.done() for f in job.futures):
        most = max(most, len(job._out))
        assert time.monotonic() < deadline, "the job stalled without result()"
        time.sleep(0.002)
    assert most <= window
    outs = job.result(timeout=60)
    assert [dumps(o) for o in outs] == [dumps(square(ct, keys=rlk)) for ct in cts]
    codec = Codec()  # every input counted once, in its wire form
    assert job.input_bytes == sum(wire_bytes(codec.encode(ct, "ct")) for ct in cts)
    text = job.describe()
    assert "at most 8 inputs out at a time" in text
    assert f"inputs sent {size(job.input_bytes)} ({size(job.input_bytes // 15)} each)" in text
    assert f"results {size(job.result_bytes)}; on the workers per input: run" in text


def test_the_window_is_refilled_by_halves_and_stops_on_cancel_or_failure():
    """MapJob._feed on fakes: the first window, nothing while more than half of it is out, a
    refill up to the window once half has finished; no sending after cancel(); a send that
    keeps failing stops the job and result()'s walk raises it."""
    from ren.distributed.batch import IN_FLIGHT_PER_WORKER, MAX_RESENDS, MapJob

    class Task:
        def __init__(self, key):
            self.key = key

        def add_done_callback(self, fn):
            pass

        def done(self):
            return False

    class Sender:
        addresses = ["tcp://a", "tcp://b"]
        fail = False

        def scheduler_info(self, n_workers):
            return {"workers": dict.fromkeys(self.addresses)}

        def send_many(self, indices, attempt=0):
            if self.fail:  # True: always; a number: that many times
                if self.fail is not True:
                    self.fail -= 1
                raise OSError("connection refused")
            self.sent.append(indices)
            return [(Task(f"t{i}"), None, 10) for i in indices]

        def cancel(self, futures):
            pass

    lone = MapJob(None, [], None, 0, 0, 0, 0, 1, 1, _sender=Sender())
    lone._sender.addresses = ["tcp://a"]
    assert lone._window() == IN_FLIGHT_PER_WORKER  # per worker
    fake = Sender()
    fake.sent = []
    n, window = 20, IN_FLIGHT_PER_WORKER * 2
    job = MapJob(fake, [None] * n, None, 0, 0, 0, 0, 1, 2, _inputs=[None] * n, _sender=fake,
                 _attempts=[0] * n)
    with job._cond:
        job._feed()
    assert fake.sent == [range(0, window)] and job._next == window
    assert [i for i, _ in job._more(0)] == list(range(window))
    for i in range(window // 2 - 1):  # more than half still out: nothing is sent
        job._finished(Task(f"t{i}"))
    assert len(fake.sent) == 1
    job._finished(Task(f"t{window // 2 - 1}"))  # half out: refilled to the window
    assert fake.sent[-1] == range(window, window + window // 2)
    assert len(job._out) == window and job.input_bytes == 10 * (window + window // 2)
    assert [i for i, _ in job._more(0)] == list(range(window, window + window // 2))
    assert job._more(0) == []
    fake.fail = True
    for i in range(window // 2, window):
        job._finished(Task(f"t{i}"))
    with pytest.raises(DistributedError, match=r"sending the inputs from 12 on failed with "
                                               r"OSError: connection refused"):
        job._more(0)
    # a send that fails fewer times than MAX_RESENDS + 1 (a worker died under the scatter) is
    # tried again, on the workers alive then
    fake.fail, job._failed = MAX_RESENDS, None
    with job._cond:
        job._feed()
    assert job._failed is None and fake.sent[-1] == range(12, 16) and job._next == 16
    fake.fail, job._next, job._out = MAX_RESENDS + 1, 12, set()
    with job._cond:
        job._feed()
    assert isinstance(job._failed, OSError) and job._next == 12
    fake.fail, job._failed, job._new = False, None, []
    with pytest.raises(DistributedError, match="no input was sent for 0 s"):
        job._more(0.01)  # nothing sent, nothing failed, inputs left: a stuck cluster
    sent = list(fake.sent)
    job.cancel()
    job._finished(Task(f"t{window}"))
    assert fake.sent == sent  # nothing after cancel


def test_gather_takes_futures_sent_later_each_exactly_once(client):
    """gather_as_completed with `more`: futures that were None at the start arrive when `more`
    gives them, a future given again (already tracked) is not taken twice, and an empty answer
    to a waiting call ends the walk."""
    from ren.distributed.cluster import gather_as_completed

    first = client.submit(abs, -1, pure=False)
    later = client.submit(abs, -2, pure=False)
    answers = [[(0, first), (1, later)]]  # `first` again: it was in the list from the start
    asked = []

    def more(wait):
        asked.append(wait)
        return answers.pop(0) if answers and wait != 0 else []

    got = list(gather_as_completed(client, [first, None], "x", 30, more=more))
    assert sorted(got) == [(0, 1), (1, 2)]
    assert asked[-1] is not None and 0 < asked[-1] <= 30  # the waiting calls carry the time left


def test_results_that_finished_together_are_fetched_in_one_call():
    """The futures that complete together are gathered in one call (one message per worker),
    and a batch whose gather fails is taken future by future, each result still once.  Dask's
    as_completed decides which futures come together (a race even after `wait`), so this drives
    `_completed` with fixed batches."""
    from ren.distributed.cluster import _completed

    class Fut:
        def __init__(self, key, value, status="finished"):
            self.key, self.value, self.status = key, value, status

        def result(self):
            return self.value

    class Done:
        def __init__(self, *batches):
            self._batches = batches

        def batches(self):
            yield from self._batches

    class Client:
        def __init__(self, fail=False):
            self.calls, self.fail = [], fail

        def gather(self, fs):
            self.calls.append([f.key for f in fs])
            if self.fail:
                raise OSError("lost on the way")
            return [f.value for f in fs]

    a, b, c, d = (Fut(k, v) for k, v in zip("abcd", (1, 2, 3, 4)))
    pending = Fut("p", None, status="pending")
    client = Client()
    got = [(f.key, ready) for f, ready in _completed(client, Done([a, b, pending], [c], [d]))]
    assert client.calls == [["a", "b"]]  # one call for the finished pair; none for one alone
    assert [k for k, _ in got] == ["a", "b", "p", "c", "d"]
    assert got[0][1] == {"a": 1, "b": 2} and got[3][1] == {}

    failing = Client(fail=True)
    got = [(f.key, ready) for f, ready in _completed(failing, Done([a, b, c]))]
    assert failing.calls == [["a", "b", "c"]]
    assert got == [("a", {}), ("b", {}), ("c", {})]  # each then taken on its own


def test_gather_as_completed_survives_a_failing_batch_gather(client, monkeypatch):
    """On a real cluster: whatever batches Dask makes, a gather that fails loses nothing and
    takes nothing twice."""
    from ren.distributed.cluster import gather_as_completed

    futures = client.map(abs, [-5, -6, -7], pure=False)
    distributed.wait(futures)

    def failing(fs, *args, **kwargs):
        raise OSError("lost on the way")

    monkeypatch.setattr(client, "gather", failing)
    assert sorted(gather_as_completed(client, list(futures), "x", 30)) == \
        [(0, 5), (1, 6), (2, 7)]


def test_a_cluster_without_workers_is_refused(ckks):
    cts = batch(ckks, 1)
    with (distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as cl,
          distributed.Client(cl, set_as_default=False) as c,
          pytest.raises(DistributedError, match="the cluster has no workers")):
        submit(square, cts, keys=ckks.ev.relin_key, client=c)


def test_a_closed_client_is_refused(client, ckks):
    c = distributed.Client(client.scheduler.address, set_as_default=False)
    c.close()
    with pytest.raises(DistributedError, match="the Dask client is closed"):
        dmap(square, batch(ckks, 1), keys=ckks.ev.relin_key, client=c)


def test_a_large_batch_goes_as_tasks_of_several_inputs(client, ckks, monkeypatch):
    """A batch of many inputs per worker goes as packed groups of several inputs
    (Dask's cost is per task): results in input order and bit-identical to the local replay,
    one timing per input, and a failing input named by its own index."""
    import ren.distributed.batch as batch_module

    assert batch_module.inputs_per_task(64, 2) == 16  # (sizes: test_distributed_grouping)
    assert batch_module.inputs_per_task(6, 2) == batch_module.inputs_per_task(15, 2) == 1
    assert batch_module.inputs_per_task(16, 2) == 4
    monkeypatch.setattr(batch_module, "inputs_per_task", lambda n, workers: 3)
    cts, rlk = batch(ckks, 7), ckks.ev.relin_key
    job = submit(square, cts, keys=rlk, client=client)
    outs = job.result(timeout=60)
    assert job._groups == [[0, 1, 2], [3, 4, 5], [6]] and len(job.futures) == 3
    assert job._window() == batch_module.GROUPED_IN_FLIGHT_PER_WORKER * 2  # tasks, 2 workers
    assert len(job) == len(outs) == 7 and "7 inputs" in job.describe()
    assert [dumps(o) for o in outs] == [dumps(square(ct, keys=rlk)) for ct in cts]
    assert len(job.timings) == 7 and all(t["run"] > 0 for t in job.timings)
    ev = ckks.ev

    def square_eagerly(ct):
        return ev.rescale(ev.multiply(ct, ct))

    cts[4] = ckks.encrypt(values(4, 32), level=0)  # no level left for the product
    with pytest.raises(TaskError, match="map: input 4 failed on a worker with "
                                        "ScaleOutOfBoundsError") as e:
        dmap(square_eagerly, cts, client=client)
    assert e.value.index == 4 and isinstance(e.value.__cause__, LevelError)


def test_workers_are_asked_of_the_scheduler_not_the_clients_cache(client, ckks, monkeypatch):
    """Client.scheduler_info returns the client's cache, which its periodic refresh (totals
    only, no workers) overwrites at any moment; a map that trusted it saw "no workers" on a
    healthy cluster under load.  With the cache empty, a map (and a scatter, and the keys'
    broadcast count) still finds both workers."""
    from ren.distributed import scatter
    from ren.distributed.remote import forget_shared

    monkeypatch.setattr(client, "scheduler_info", lambda *a, **k: {"workers": {}})
    cts = batch(ckks, 3)
    forget_shared(client)
    job = submit(square, cts, keys=ckks.ev.relin_key, client=client)
    outs = job.result(timeout=60)
    assert [dumps(o) for o in outs] == [dumps(square(ct, keys=ckks.ev.relin_key)) for ct in cts]
    assert job.shared_sent_bytes == (job.context_bytes + job.program_bytes) * 2
    assert len(scatter(cts, client=client)) == 3


def test_the_benchmark_takes_the_median_of_its_rounds(capsys, monkeypatch) -> None:
    """benchmarks/bench_distributed.py at a toy size: two rounds of 1 and 2 workers, taking
    turns; the speedup line is the median of the rounds' ratios and lists them."""
    import importlib
    import re
    from pathlib import Path

    # importable by name: its ceiling runs a function of it in spawned processes
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = importlib.import_module("bench_distributed")
    monkeypatch.setattr(bench, "CEILING_TIMEOUT", 120)  # an error, not a hang, if one dies
    bench.main(["--log-n", "10", "--batch", "4", "--distinct", "2", "--local-repeat", "2",
                "--rounds", "2"])
    out = capsys.readouterr().out
    jobs = re.findall(r"^(\d) worker\(s\) \(round (\d)\): ([\d.]+) s", out, re.M)
    assert [(w, r) for w, r, _ in jobs] == [("1", "1"), ("2", "1"), ("1", "2"), ("2", "2")]
    walls = {(w, r): float(t) for w, r, t in jobs}
    line = re.search(r"speedup 2 workers / 1: ([\d.]+)x \(median of 2 rounds: ([\d.]+), "
                     r"([\d.]+)\)", out)
    assert line is not None, out
    median, *rounds = (float(g) for g in line.groups())
    assert median == pytest.approx(sum(rounds) / 2, abs=0.011)
    # each round's ratio is its two jobs' (walls printed to 10 ms, hence the tolerance)
    for r, up in zip("12", rounds):
        assert up == pytest.approx(walls[("1", r)] / walls[("2", r)], rel=0.25)
    assert "overhead of the distributed path (1 worker)" in out
    assert out.count("Dask memory limit per worker: none (") == 1  # local_client's default
    assert bench.cluster_options("none") == {"memory_limit": 0}
    assert bench.cluster_options("8GiB") == {"memory_limit": "8GiB"}
    with pytest.raises(SystemExit):
        bench.main(["--rounds", "0"])


@pytest.mark.parametrize("lean", [False, True])
def test_the_benchmark_bootstraps_a_batch_on_one_and_two_workers(capsys, monkeypatch,
                                                                 lean) -> None:
    """bench_distributed.py --bootstrap at the small preset, a batch of 2: every result is a
    bootstrapping (precise, at the output level), the keys and plan go to each worker once
    (the warm-up job sends them, the timed job none), and the 2/1 line is printed; with
    --lean too (lean keys arrive lean: the plan captured on them replays on the workers)."""
    import importlib
    import re
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = importlib.import_module("bench_distributed")
    bench.main(["--bootstrap", "--preset", "small", "--batch", "2", "--local-repeat", "1",
                *(["--lean"] if lean else [])])
    out = capsys.readouterr().out
    assert (bench.LEAN_NOTE in out) is lean
    jobs = re.findall(r"^(\d) worker\(s\): ([\d.]+) bootstrappings/s .* sent ([\d.]+) MB of "
                      r"keys, parameters and plan, the timed job 0 B; .* precision ([\d.]+) "
                      r"bits \(worst of 2, level (\d+)\)", out, re.M)
    assert [w for w, *_ in jobs] == ["1", "2"], out
    sent = {w: float(mb) for w, _, mb, _, _ in jobs}
    assert sent["2"] == pytest.approx(2 * sent["1"], abs=0.02)  # once per worker
    assert all(float(bits) > 20 and int(level) > 0 for *_, bits, level in jobs)
    assert re.search(r"^bootstrapping throughput 2 workers / 1: [\d.]+x$", out, re.M)
    for w in ("1", "2"):  # where the timed job's tasks ran: every task seen, on w workers
        line = re.search(rf"^{w} worker\(s\), where the timed job's tasks ran: (.*)$", out, re.M)
        assert line, out
        counts = [int(c) for c in re.findall(r": (\d+) task\(s\)", line.group(1))]
        assert sum(counts) == 2 and 1 <= len(counts) <= int(w), line.group(0)


def test_the_n16_bootstrap_benchmark_refuses_what_memory_cannot_hold(monkeypatch) -> None:
    """--preset n16 estimates the memory of the client and each worker (keys and diagonals,
    from the parameters alone) and stops before making any key where it does not fit."""
    import importlib
    from pathlib import Path

    from ren.ckks.circuits import bootstrap_params_n16

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    bench = importlib.import_module("bench_distributed")
    one, _ = bench.memory_needed(bootstrap_params_n16(), 1)
    three, _ = bench.memory_needed(bootstrap_params_n16(), 3)
    assert three == pytest.approx(3 * one) and one > 12  # keys 8.4 GiB, diagonals 3.5 GiB
    lean, _ = bench.memory_needed(bootstrap_params_n16(), 1, lean=True)
    assert 3 < lean < one / 2  # lean keys ~3 GiB, diagonals as coefficients 158 MiB
    monkeypatch.setattr(bench, "memory_needed", lambda params, n, lean: (n * 18.0, 20.0))
    with pytest.raises(SystemExit, match="about 54 GiB needed, 20 GiB available"):
        bench.main(["--bootstrap", "--preset", "n16"])


def test_jobs_of_one_program_share_the_keys_and_plan_the_client_broadcast(client, ckks):
    """Two jobs of one program use the same broadcast copies of its keys and plan (the client
    keeps them on the workers, `ren.distributed.remote.share`): the second sends neither, and
    the first job going away does not take them from the second."""
    cts = batch(ckks, 2)
    rlk = ckks.ev.relin_key
    first = submit(square, cts, keys=rlk, client=client)
    second = submit(square, cts, keys=rlk, client=client)
    a, b = first._sender, second._sender
    assert (a.context_key, a.program_key) == (b.context_key, b.program_key)  # one cache entry
    assert {f.key for f in a.shared.values()} == {f.key for f in b.shared.values()}
    assert second.shared_sent_bytes == 0
    del first, a  # the first job goes while the second still runs
    got = second.result(timeout=60)
    assert [dumps(g) for g in got] == [dumps(square(ct, keys=rlk)) for ct in cts]
