"""Helpers shared by the ren.distributed test files: the jitted operation most of them map (the
benchmark's `square`: multiply, relinearize, rescale), a batch of CKKS inputs, the worker
to kill in the killed-worker tests (one that holds a finished result), and a shared-memory job
of this client for the tests that write pool slots without a cluster (`shm_job`)."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

import ren
from ren.ckks import Evaluator
from ren.distributed import shm


@ren.jit
def square(ct: Any, keys: Any) -> Any:
    """The benchmark's operation (benchmarks/bench_distributed.py): multiply, relinearize,
    rescale (keys: the relinearization key)."""
    ev = Evaluator(ct.params, relin_key=keys)
    return ev.rescale(ev.multiply(ct, ct))


def values(i: int, slots: int) -> np.ndarray:
    """The i-th input's slot values (uniform in [-1, 1], reproducible)."""
    return np.random.default_rng(i).uniform(-1, 1, slots)


def batch(ctx: Any, n: int) -> list:
    """`n` encryptions of `values(0..n-1)` under a `ckks_helpers.context`."""
    return [ctx.encrypt(values(i, ctx.params.slots)) for i in range(n)]


def result_holder(client: Any, job: Any, timeout: float, poll: float = 0.005) -> str:
    """The address of a worker that holds a finished result of `job` (a `MapJob`), waiting up
    to `timeout` seconds for one; fails the test when none arrives."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = [f for f in job.futures if f is not None and f.done()]
        holders = client.who_has(done) if done else {}
        victim = next((w for ws in holders.values() for w in ws), None)
        if victim is not None:
            return victim
        time.sleep(poll)
    raise AssertionError("no result arrived")


@contextlib.contextmanager
def shm_job(tag: str) -> Iterator[str]:
    """The name of a shared-memory job of this client (its ``.job`` file made), ended on exit:
    what a map job's slots live under (`ren.distributed.shm`)."""
    name = shm.client_prefix() + tag
    open(os.path.join(shm.SHM_DIR, name + ".job"), "wb").close()
    try:
        yield name
    finally:
        shm.end_job(name)
