"""A cold compile cache at a jitted function's first call: `CpuDevice.lacks` tells a cold first
chunk from a warm one without compiling, and the first call then compiles every kernel of its
schedule (the first chunk's included) in one batch of compiler runs, rather than a run of the
first chunk's kernels before the rest.  Results are bit for bit those of the eager graph."""

from __future__ import annotations

import numpy as np
import pytest
from test_first_run import fresh, keyswitch_like

import ren
from ren import realization, replay, settings
from ren.backend import backend_override, cpu
from ren.backend.c_host import cached_library


@pytest.fixture
def counted(monkeypatch) -> list[str]:
    """The sources of the compiler runs the cpu devices make from now on."""
    built: list[str] = []

    def count(source, flags, folder):
        built.append(source)
        return cached_library(source, flags, folder)

    monkeypatch.setattr(cpu, "cached_library", count)
    return built


def test_lacks_compiles_nothing_and_sees_the_compile_cache(tmp_path, counted):
    a, b = fresh(41, "cpu"), fresh(42, "cpu")
    x, y = keyswitch_like(a, b)
    items, _, _ = realization.schedule_and_plan([x.node, y.node])
    dev = cpu.CpuDevice("cpu:lacks")
    with settings.override(REN_CACHE_DIR=str(tmp_path)):
        assert dev.lacks(items) and counted == [] and not dev.entries  # cold: nothing built
        assert dev.prepare(items) > 0 and len(counted) >= 1
        assert not dev.lacks(items)  # all loaded now
        again = cpu.CpuDevice("cpu:lacks2")
        counted.clear()
        assert not again.lacks(items) and counted == []  # the index has them: loaded, no run
        assert set(again.entries) == set(dev.entries) and again.entries


def test_a_cold_first_call_compiles_its_kernels_in_one_batch(tmp_path, counted, monkeypatch):
    """FIRST_CHUNK = 2: the first chunk's kernels are compiled with the rest (one `_load` with
    compiler runs, `compiler_runs` == 1), not in a run of their own before them."""
    monkeypatch.setattr(replay, "PIPELINE_ITEMS", 1)
    monkeypatch.setattr(replay, "FIRST_CHUNK", 2)
    a, b = fresh(43, "cpu"), fresh(44, "cpu")
    eager = [p.numpy() for p in keyswitch_like(a, b)]
    dev = cpu.CpuDevice("cpu:cold")
    with settings.override(REN_CACHE_DIR=str(tmp_path), REN_PLAN_CACHE=0), \
            backend_override("cpu", lambda _: dev):
        fn = ren.jit(keyswitch_like)
        got = [p.numpy() for p in fn(a, b)]
        assert dev.compiler_runs == 1 and counted  # one batch, every kernel in it
        replayed = [p.numpy() for p in fn(a, b)]
    assert all(np.array_equal(u, v) for u, v in zip(got, replayed, strict=True))
    assert all(np.array_equal(u, v) for u, v in zip(got, eager, strict=True))
