"""bench_ckks.py --threads: how much other load stretched each timed run (issue 42 §4).  The
calling thread's run-queue wait over a run (`run_queue_wait`, Linux schedstat) as a share of the
run's wall time, per op and thread count (`PREEMPTED`, `preempted_table`).  Checked by pinning
the caller and two busy processes to one core: the caller then waits for it about two thirds
of the time, and its own CPU is about the rest."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from bench_helpers import load_benchmark

bench = load_benchmark("bench_ckks")

_SCHED = pytest.mark.skipif(not os.path.exists("/proc/thread-self/schedstat")
                            or not hasattr(os, "sched_setaffinity"),
                            reason="needs Linux's per-thread schedstat and CPU affinity")


def _spin_wall(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@_SCHED
def test_a_run_that_shares_its_core_is_seen_waiting() -> None:
    core = min(os.sched_getaffinity(0))
    saved = os.sched_getaffinity(0)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    bench.PREEMPTED.clear()
    cpu: list[float] = []

    def op() -> None:
        c0 = time.thread_time()
        t0 = time.perf_counter()
        _spin_wall(0.15)
        cpu.append((time.thread_time() - c0) / (time.perf_counter() - t0))

    try:
        for p in busy:
            os.sched_setaffinity(p.pid, {core})
        os.sched_setaffinity(0, {core})  # this thread only
        time.sleep(0.05)  # the busy processes running
        bench.threads_timed(op, 3, "shared core", 2, warmup=1)
    finally:
        os.sched_setaffinity(0, saved)
        for p in busy:
            p.kill()
            p.wait()
    waits = bench.PREEMPTED.pop(("shared core", 2))
    assert len(waits) == 3  # the warm-up left out
    for wait, share in zip(waits, cpu[1:], strict=True):
        # three runnable on one core: the caller waits ~2/3, runs ~1/3 (other load adds waiting)
        assert 0.45 < wait <= 1.0, waits
        assert abs(wait + share - 1) < 0.15, (wait, share)


@_SCHED
def test_the_table_gives_each_op_its_median_share_per_thread_count() -> None:
    bench.PREEMPTED.clear()
    try:
        bench.PREEMPTED["encrypt", 1] = [0.1, 0.3, 0.2]
        bench.PREEMPTED["encrypt", 2] = [0.5]
        bench.PREEMPTED["decrypt", 2] = [0.07]
        table = bench.preempted_table((1, 2))
        rows = {line.split()[0]: line.split()[1:] for line in table.splitlines()[2:4]}
        assert rows == {"encrypt": ["20%", "50%"], "decrypt": ["-", "7%"]}
        assert bench.preempted_table((4,)) == ""
    finally:
        bench.PREEMPTED.clear()


@_SCHED
def test_run_queue_wait_only_grows() -> None:
    a = bench.run_queue_wait()
    _spin_wall(0.01)
    b = bench.run_queue_wait()
    assert a is not None and b is not None and 0 <= a <= b
