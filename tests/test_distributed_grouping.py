"""Packed groups (`ren.distributed.grouping`): a large batch goes as one scattered key, one task
and one result object per group of inputs, sized by the batch, the workers and the bytes."""

from __future__ import annotations

import os
import signal

import pytest

distributed = pytest.importorskip(
    "distributed", reason="ren.distributed needs the distributed extra (Dask)")

from ckks_helpers import context  # noqa: E402
from distributed_helpers import batch, result_holder, square  # noqa: E402

import ren.distributed.batch as batch_module  # noqa: E402
from ren.ckks import dumps  # noqa: E402
from ren.distributed import local_client, posts, shm, submit  # noqa: E402
from ren.distributed.grouping import (  # noqa: E402
    GROUPED_IN_FLIGHT_PER_WORKER,
    IN_FLIGHT_PER_WORKER,
    LAST_TAPER,
    MAX_INPUTS_PER_TASK,
    MAX_TASK_BYTES,
    PACK_FROM,
    TAPER,
    TASKS_PER_WORKER,
    bytes_cap,
    inputs_per_task,
    make_groups,
    window,
)


@pytest.fixture(scope="module")
def ckks():
    return context(N=64, depth=3, scale_bits=30, first_bits=40, steps=(1,))


def test_group_sizes_follow_the_batch_the_workers_and_the_bytes():
    """TASKS_PER_WORKER tasks per worker at least, MAX_INPUTS_PER_TASK inputs and
    MAX_TASK_BYTES at most; groups cover every input once, in order."""
    assert TASKS_PER_WORKER == GROUPED_IN_FLIGHT_PER_WORKER == 2  # one window of tasks each
    assert inputs_per_task(64, 1) == 32 and inputs_per_task(64, 2) == 16  # the bench's batch
    assert inputs_per_task(15, 2) == 1 and inputs_per_task(16, 2) == 4  # packing from 8 each
    assert PACK_FROM == 8 and inputs_per_task(7, 1) == 1 and inputs_per_task(8, 1) == 4
    assert inputs_per_task(10**6, 3) == MAX_INPUTS_PER_TASK == 32
    assert inputs_per_task(0, 0) == 1
    mb = 2_100_000  # an N = 2^14 input
    assert bytes_cap(32, mb) == MAX_TASK_BYTES // mb == 31 and bytes_cap(8, mb) == 8
    assert bytes_cap(8, MAX_TASK_BYTES + 1) == 1 and bytes_cap(8, 0) == 8
    for n, per in ((7, 3), (64, 16), (1, 1), (33, 32)):
        groups = make_groups(n, per)
        assert [i for g in groups for i in g] == list(range(n))
        assert all(len(g) == per for g in groups[:-1]) and 0 < len(groups[-1]) <= per
    # tapered: each worker's first group TAPER times smaller, its last LAST_TAPER times (at
    # least 2; TAPER times where that would take a task more: 46 on 2), the rest even and as
    # many as a multiple of the workers (each worker runs as many of them)
    assert TAPER == 4 and LAST_TAPER == 8
    for n, per, w, sizes in ((64, 31, 1, [7, 27, 27, 3]),  # the bench's batch, one worker
                             (64, 16, 2, [4, 4, 13, 13, 13, 13, 2, 2]),  # and two
                             (64, 16, 1, [4, 15, 15, 14, 14, 2]),
                             (64, 8, 2, [2, 2] + [7] * 8 + [2, 2]),  # not 7 groups of 8
                             (100, 32, 1, [8, 30, 29, 29, 4]),
                             (100, 32, 2, [8, 8, 19, 19, 19, 19, 4, 4]),
                             (96, 16, 3, [4] * 3 + [13] * 6 + [2] * 3),
                             (46, 16, 2, [4, 4, 15, 15, 4, 4]),
                             (24, 6, 2, [6] * 4),  # groups under 2 * TAPER: not tapered
                             (10, 8, 1, [8, 2])):  # too few inputs to taper
        groups = make_groups(n, per, w)
        assert [len(g) for g in groups] == sizes
        assert [i for g in groups for i in g] == list(range(n))
    for n in range(16, 200):  # every worker gets as many middle groups where inputs allow
        for w in (2, 3, 4):
            per = inputs_per_task(n, w)
            sizes = [len(g) for g in make_groups(n, per, w)]
            if per >= 2 * TAPER:
                assert (len(sizes) - 2 * w) % w == 0 and min(sizes) >= 1, (n, w, sizes)
    # too few middle inputs for a multiple of 20 workers: as many groups as before, none empty
    assert [len(g) for g in make_groups(90, 8, 20)] == [2] * 20 + [5, 5] + [2] * 20
    assert window(2, grouped=True) == 2 * GROUPED_IN_FLIGHT_PER_WORKER
    assert window(3, grouped=False) == 3 * IN_FLIGHT_PER_WORKER and window(0, False) > 0


def _task_keys(client, job) -> set[str]:
    """The keys of `job`'s tasks that the scheduler computed (its transition log)."""
    prefix = f"ren-map-{job._sender.job_id}-"

    def memory(dask_scheduler, prefix=prefix):
        return sorted({str(e[0]) for e in dask_scheduler.transition_log
                       if str(e[0]).startswith(prefix) and e[2] == "memory"})

    return set(client.run_on_scheduler(memory))


@pytest.mark.parametrize("path", ["off", "on"])
def test_a_packed_group_is_one_key_one_task_and_one_result(ckks, monkeypatch, path):
    """24 inputs as 4 groups of 6: 4 tasks on the cluster (not 24), each task's value one list
    of its 6 results; results in order with the local bits; a group's bytes bound its size.
    Records in messages (``off``): 4 scattered keys.  Through shared memory (``on``): no
    scattered key at all, each group's wire trees travel pickled in its task (`Packed`)."""
    monkeypatch.setattr(batch_module, "inputs_per_task", lambda n, workers: 6)
    monkeypatch.setenv(shm.ENV, path)
    cts, rlk = batch(ckks, 24), ckks.ev.relin_key
    want = [dumps(square(ct, keys=rlk)) for ct in cts]
    with local_client(workers=2) as c:
        scattered: list[str] = []  # the keys of every scatter the job makes
        scatter = c.scatter
        monkeypatch.setattr(c, "scatter", lambda data, **kw: (scattered.extend(data),
                                                              scatter(data, **kw))[1])
        job = submit(square, cts, keys=rlk, client=c)
        groups = [f.result() for f in job.futures if f is not None]
        outs = job.result(timeout=60)
        tasks = _task_keys(c, job)
        inputs = {k for k in scattered if k.startswith(f"ren-map-{job._sender.job_id}-")}
        # the group's bytes: a cap of 2 inputs' worth makes groups of 2
        one = job.input_bytes // 24
        monkeypatch.setattr("ren.distributed.grouping.MAX_TASK_BYTES", 2 * one + 1)
        small = submit(square, cts[:8], keys=rlk, client=c)
        assert [dumps(o) for o in small.result(timeout=60)] == want[:8]
    assert job._groups == [list(range(s, s + 6)) for s in range(0, 24, 6)]
    assert len(job.futures) == 4 and len(tasks) == 4, tasks
    assert len(inputs) == (4 if path == "off" else 0), inputs
    assert all((f is None) == (path == "on") for f in job._inputs)
    # through shared memory a group posts its results (`ren.distributed.posts`): its task's
    # value on the cluster is only the marker
    assert all(isinstance(g, list) and len(g) == 6 for g in groups) if path == "off" else \
        groups == [posts.POSTED] * 4
    assert [dumps(o) for o in outs] == want and len(job.timings) == 24
    assert small._groups == [[0, 1], [2, 3], [4, 5], [6, 7]]


def test_packed_groups_survive_a_killed_worker_at_the_default_size(ckks):
    """96 inputs on 2 workers at the default packing (4 groups of 19-20 between two of 6
    and two of 3, `make_groups`' taper): a worker SIGKILLed once a result arrived; something
    ran again (Dask, or the client's resend of a lost group) or the victim's results were
    taken from their posts, and every result arrived exactly once, in its place, with the local
    replay's bits."""
    cts, rlk = batch(ckks, 96), ckks.ev.relin_key
    want = [dumps(square(ct, keys=rlk)) for ct in cts]
    with local_client(workers=2) as c:
        pids = c.run(os.getpid)
        job = submit(square, cts, keys=rlk, client=c)
        assert job._groups is not None and inputs_per_task(96, 2) == 24
        assert [len(g) for g in job._groups] == [6, 6, 20, 20, 19, 19, 3, 3]
        victim = result_holder(c, job, 60)
        os.kill(pids[victim], signal.SIGKILL)
        outs = job.result(timeout=120)
        computed = [e[0] for e in c.cluster.scheduler.transition_log if e[2] == "memory"]
    # (through shared memory the victim's finished groups had posted their results, which
    # outlive it: nothing need run again; `test_distributed_packed` covers a second run)
    posted = bool(job._sender.post_names)
    assert len(computed) > len(set(computed)) or job.resends >= 1 or posted
    assert len(outs) == 96 and [dumps(o) for o in outs] == want


def test_a_default_job_runs_two_tasks_per_worker_each_once(ckks):
    """64 inputs on 2 workers at the default packing: 8 tasks (two of 4 inputs, four of 13, two
    of 2: `TASKS_PER_WORKER` 2, the middle groups a multiple of the workers), each computed
    exactly once by the scheduler, every result once, in its place, with the local bits."""
    cts, rlk = batch(ckks, 64), ckks.ev.relin_key
    want = [dumps(square(ct, keys=rlk)) for ct in cts]
    with local_client(workers=2) as c:
        job = submit(square, cts, keys=rlk, client=c)
        outs = job.result(timeout=120)
        prefix = f"ren-map-{job._sender.job_id}-"
        computed = [str(e[0]) for e in c.cluster.scheduler.transition_log
                    if str(e[0]).startswith(prefix) and e[2] == "memory"]
    assert [len(g) for g in job._groups] == [4, 4, 13, 13, 13, 13, 2, 2]
    assert len(job.futures) == 8 and sorted(computed) == sorted(set(computed))
    assert len(computed) == 8
    assert [dumps(o) for o in outs] == want and len(job.timings) == 64
