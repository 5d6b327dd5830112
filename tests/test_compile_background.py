"""`CpuDevice.prepare_background`: a large build's compiler units start in the order the schedule
first uses their kernels and `build` waits only for the unit holding its kernel (issue 41: a
first call runs its early kernels while its later ones compile)."""

from __future__ import annotations

import threading
import time

import pytest
from backend_programs import PROGRAMS_UNDER_TEST, run_recording, same_words

import ren
from ren.backend import backend_override, cpu
from ren.backend.c_host import find_cc
from ren.errors import KernelCompileError

pytestmark = pytest.mark.skipif(find_cc() is None, reason="needs a C compiler")


@pytest.fixture(scope="module")
def numpy_runs():
    ren.random.seed(None)
    return {name: run_recording(fn) for name, fn in PROGRAMS_UNDER_TEST.items()}


@pytest.fixture
def slow_units(monkeypatch, tmp_path):
    """Small units on two cores, a cold cache, and compiler runs that take 0.3 s longer (so a
    build that did not wait for its unit would find its kernel missing)."""
    monkeypatch.setattr(cpu, "KERNELS_PER_UNIT", 2)
    monkeypatch.setattr(cpu.os, "sched_getaffinity", lambda _: {0, 1})
    monkeypatch.setattr(cpu, "cache_dir", lambda: str(tmp_path))
    real = cpu.cached_library
    threads: list[str] = []

    def slow(source, flags, folder):
        threads.append(threading.current_thread().name)
        time.sleep(0.3)
        return real(source, flags, folder)

    monkeypatch.setattr(cpu, "cached_library", slow)
    return threads


def test_background_units_give_numpys_words(numpy_runs, slow_units):
    """Every kernel is compiled once, in a unit of its own thread, and each build waits for its
    unit: the words are NumPy's, and nothing is left pending."""
    from ren.backend import c_host

    items = [item for _, its in numpy_runs.values() for item in its]
    devices: list[cpu.CpuDevice] = []
    counts: list[int] = []

    def open_cpu(name: str) -> cpu.CpuDevice:
        d = cpu.CpuDevice(name)
        before = c_host.compiler_invocations
        counts.append(d.prepare_background(items))
        assert d._pending  # returned before its units were loaded
        counts.append(c_host.compiler_invocations - before)
        devices.append(d)
        return d

    with backend_override("python", open_cpu):
        got = {name: fn() for name, fn in PROGRAMS_UNDER_TEST.items()}
    assert all(same_words(got[n], want) for n, (want, _) in numpy_runs.items())
    for d in devices:  # (a device that built only some kernels: the rest still compile)
        d._compilers.shutdown(wait=True)
    assert devices and all(not d._pending for d in devices)
    d = devices[0]
    names = [n for _, ns in d._libs.values() for n in ns]
    assert len(names) == len(set(names)) and set(names) == d.entries.keys() | d.hosted.keys()
    assert counts[0] >= 4 and 2 <= len(d._libs) <= 4 and d.compiler_runs == 1
    assert slow_units and all(t.startswith("ren-cc") for t in slow_units)


def test_units_follow_first_use():
    """`_in_order` cuts consecutive programs, first ones first, into at most `units` runs that
    grow (unit k ends at (k / units)^2 of the weight); a kernel two programs share goes with
    the first."""
    from types import SimpleNamespace as NS

    def prog(*names):
        return NS(kernels=[NS(name=n) for n in names])

    names = [f"k{i}" for i in range(16)]
    fresh = {n: NS(source="x" * 100) for n in names}
    progs = [prog(names[0]), prog(names[1], names[0]), prog(names[0])]
    progs += [prog(n) for n in names[2:]]
    units = cpu._in_order(progs, fresh, 4)
    flat = [p for u in units for p in u]
    assert flat == [p for i, p in enumerate(progs) if i != 2]  # in order, the repeat left out
    seen: set[str] = set()
    sizes = []  # new kernels per unit: 16 of equal weight -> 1/16, 3/16, 5/16, 7/16
    for u in units:
        new = {k.name for p in u for k in p.kernels} - seen
        sizes.append(len(new))
        seen |= new
    assert sizes == [1, 3, 5, 7], sizes
    assert cpu._in_order(progs, fresh, 1) == [flat]


def test_a_failing_background_unit_fails_its_builds(numpy_runs, monkeypatch, tmp_path):
    """A compiler error in a background unit is raised by the builds that need its kernels."""
    monkeypatch.setattr(cpu, "KERNELS_PER_UNIT", 2)
    monkeypatch.setattr(cpu.os, "sched_getaffinity", lambda _: {0, 1})
    monkeypatch.setattr(cpu, "cache_dir", lambda: str(tmp_path))

    def broken(source, flags, folder):
        raise KernelCompileError("the C compiler failed (test)")

    monkeypatch.setattr(cpu, "cached_library", broken)
    items = [item for _, its in numpy_runs.values() for item in its
             if item.kind == "elementwise"]
    d = cpu.CpuDevice("cpu:broken")
    assert d.prepare_background(items) >= 4
    with pytest.raises(KernelCompileError, match="test"):
        d.compile(items[0])
