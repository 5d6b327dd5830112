"""A cold first call of a long schedule compiles its kernels chunk by chunk (the switch
REN_COMPILE_SPLIT_BYTES): the first chunks' kernels before the run starts,
then each next chunk's while the chunks before it run.  Every kernel is compiled in one of
those batches (never one by one as the items are lowered), and the results are bit for bit the
eager graph's and the replay's."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from test_first_run import fresh, keyswitch_like

import ren
from ren import compile_batches, realization, replay, settings
from ren.backend import backend_override, cpu
from ren.backend.c_host import cached_library
from ren.kernel import LIGHT_KINDS


class _Device:
    def __init__(self, threads: int) -> None:
        self.threads = threads

    def host_threads(self) -> int:
        return self.threads


def test_compile_split_point(monkeypatch):
    a, b = fresh(51, "cpu"), fresh(52, "cpu")
    items, _, _ = realization.schedule_and_plan([p.node for p in keyswitch_like(a, b)])
    n = len(items)
    assert n > 14
    one = _Device(1)
    written = sum(i.bufs[0].nbytes for i in items if i.kind not in LIGHT_KINDS and i.bufs)
    default = settings.SWITCHES["REN_COMPILE_SPLIT_BYTES"].default
    assert default == 12 << 30 > written
    with settings.override(REN_COMPILE_SPLIT_BYTES=default):
        assert compile_batches.split_point(items, 2, one) == n  # this run is short
    with settings.override(REN_COMPILE_SPLIT_BYTES=written + 1):
        assert compile_batches.split_point(items, 2, one) == n  # a short run: one batch
    with settings.override(REN_COMPILE_SPLIT_BYTES=written):
        # chunks of 2, 4, 8 ... items end at 2, 6, 14, 30 ...: the first end at or past the
        # fraction
        for fraction, end in [(0.0, 2), (2 / n, 2), (3 / n, 6), (6 / n, 6), (7 / n, 14)]:
            monkeypatch.setattr(compile_batches, "COMPILE_SPLIT_FRACTION", fraction)
            assert compile_batches.split_point(items, 2, one) == min(end, n)
        # a run on every core (the device's threads) would share them with the compiler: one
        # batch
        cores = len(os.sched_getaffinity(0))
        assert compile_batches.split_point(items, 2, _Device(cores)) == n
        monkeypatch.setattr(compile_batches, "COMPILE_SPLIT_FRACTION", 1.0)
        assert compile_batches.split_point(items, 2, one) == n


@pytest.mark.parametrize("fraction", [0.0, 0.3, 0.6])
def test_a_split_cold_compile_builds_every_kernel_in_its_chunk_batches(tmp_path, monkeypatch,
                                                                    fraction):
    monkeypatch.setattr(replay, "PIPELINE_ITEMS", 1)
    monkeypatch.setattr(replay, "FIRST_CHUNK", 2)
    monkeypatch.setattr(compile_batches, "COMPILE_SPLIT_FRACTION", fraction)
    batches: list[tuple[int, int]] = []  # (first item, items) of each `_prepare`
    inside: list[bool] = []  # per compiler run: whether a batch asked for it
    prepare, whole = compile_batches.prepare, [0]

    def spy_prepare(items):
        batches.append((len(items), whole[0]))
        inside.append(True)
        try:
            return prepare(items)
        finally:
            inside.pop()

    built: list[bool] = []

    def count(source, flags, folder):
        built.append(bool(inside))
        return cached_library(source, flags, folder)

    seen: list[int] = []
    split = compile_batches.split_point
    threads: set[int] = set()  # the threads that asked where to split

    def spy_split(items, first, device):
        whole[0] = len(items)
        threads.add(threading.get_ident())
        seen.append(split(items, first, _Device(1)))
        return seen[-1]

    monkeypatch.setattr(compile_batches, "prepare", spy_prepare)
    monkeypatch.setattr(compile_batches, "split_point", spy_split)
    a, b = fresh(53, "cpu"), fresh(54, "cpu")
    eager = [p.numpy() for p in keyswitch_like(a, b)]
    # counted from here: the eager run above compiles outside any batch on a cold cache
    monkeypatch.setattr(cpu, "cached_library", count)
    dev = cpu.CpuDevice("cpu:split")
    # REN_COMPILE_SPLIT_BYTES=0: this short run splits.  The override holds for this thread
    # only, so the split below shows that the first call is lowered (and asks) here, not on
    # `lower_and_run`'s worker thread, which runs the chunks
    with settings.override(REN_CACHE_DIR=str(tmp_path), REN_PLAN_CACHE=0,
                           REN_COMPILE_SPLIT_BYTES=0), \
            backend_override("cpu", lambda _: dev):
        fn = ren.jit(keyswitch_like)
        got = [p.numpy() for p in fn(a, b)]
        replayed = [p.numpy() for p in fn(a, b)]
    (k,) = seen
    assert threads == {threading.get_ident()}
    n = whole[0]
    assert 0 < k < n  # split: the first chunks, then each next chunk
    ends = [2]
    while ends[-1] < n:
        ends.append(ends[-1] + 2 * (ends[-1] - (ends[-2] if len(ends) > 1 else 0)))
    after = [e for e in ends if e > k]
    want = [k] + [min(e, n) - max(k, p) for p, e in zip([k, *after], after)]
    assert [m for m, _ in batches] == want  # items[:k], then chunk by chunk, nothing else
    assert built and all(built)  # every compiler run came from one of those batches
    assert dev.compiler_runs >= 1
    assert all(np.array_equal(u, v) for u, v in zip(got, eager, strict=True))
    assert all(np.array_equal(u, v) for u, v in zip(got, replayed, strict=True))
