"""A cold build of many kernels compiles in the background, in the order of first use (issue 41:
the first call of a bootstrapping waited for all ~60 of its kernels before its run went on).

`CpuDevice.prepare` hands a build whose new kernels' sources reach `cpu.BACKGROUND_MIN_SOURCE`
characters to one compiler thread per core, cut into consecutive units (`cpu._ordered_units`),
and returns at once; a `build` that needs a kernel still compiling waits for its unit and loads
it.  Checked here: the units (order, coverage, sizes), that prepare does not wait, that the
units are built in order, that the words are the ``"python"`` device's, that each library is
indexed for the next process, and that a failed background compile is raised by the build that
needs it.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace

import numpy as np
import pytest

import ren
from ren import settings
from ren.backend import backend_override, c_host, cpu
from ren.backend.c_host import find_cc
from ren.errors import KernelCompileError
from ren.ring import RingSpec
from ren.schedule import schedule

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")


def _outs(kind: str) -> list[ren.Poly]:
    """Seven distinct elementwise kernels (sums, products, a negation, an automorphism), lazy."""
    ring = RingSpec.generate(64, 3, bits=31)
    with ren.random.seeded(7):
        a, b, c = (ren.Poly.uniform(ring, domain="ntt", device=kind) for _ in range(3))
    ren.realize([a, b, c])
    return [a * b + c, a - b * 7, (a + 5) * (b - c), -(a * c), a.automorph(5) * b,
            a * a * a + 1, a * b * c]


def _fake(names_sizes: list[tuple[str, ...]], size: dict[str, int]):
    """Programs (one per tuple of kernel names) and the `fresh` map of `_ordered_units`."""
    progs = [SimpleNamespace(kernels=tuple(SimpleNamespace(name=n) for n in names))
             for names in names_sizes]
    fresh = {n: SimpleNamespace(source="x" * s) for n, s in size.items()}
    return progs, fresh


def test_units_keep_first_use_order_and_cover_each_new_kernel_once(monkeypatch):
    monkeypatch.setattr(cpu, "BACKGROUND_UNITS", 4)
    size = {f"k{i}": s for i, s in enumerate([10, 10, 10, 10, 100, 10, 10, 10, 10, 10, 10, 10])}
    # (total 210: shares of 52.5; k4 starts at 40, in the first)
    names = [(f"k{i}",) for i in range(12)]
    names.insert(3, ("k0",))  # a kernel used again: its program is left out
    names.insert(5, ("old",))  # a kernel the device has: no unit
    progs, fresh = _fake(names, size)
    units = cpu._ordered_units(progs, fresh)
    order = [k.name for u in units for p in u for k in p.kernels]
    assert order == [f"k{i}" for i in range(12)]  # consecutive, in first use, each once
    assert 2 <= len(units) <= 4
    total = sum(size.values())
    for unit in units:  # no unit longer than a share plus its last kernel
        weights = [size[k.name] for p in unit for k in p.kernels]
        assert sum(weights) - weights[-1] < total / 4
    assert [k.name for p in units[0] for k in p.kernels] == ["k0", "k1", "k2", "k3", "k4"]


def test_prepare_returns_before_the_compiler_and_builds_wait_for_it(tmp_path, monkeypatch):
    """prepare returns while the compiler is held; builds then wait, load in first-use order,
    and give the python device's words; the libraries are indexed (a second device loads them
    without a compiler run)."""
    want = [o.numpy() for o in _outs("python")]
    outs = _outs("cpu")
    items = [i for i in schedule([o.node for o in outs]) if i.kind == "elementwise"]
    monkeypatch.setattr(cpu, "BACKGROUND_MIN_SOURCE", 1)
    monkeypatch.setattr(cpu, "BACKGROUND_UNITS", 3)
    monkeypatch.setattr(cpu.os, "sched_getaffinity", lambda _: {0})  # one compiler thread
    gate = threading.Event()
    built: list[tuple[str, str]] = []
    real = cpu.cached_library

    def held(source, flags, folder):
        assert gate.wait(60)
        built.append((threading.current_thread().name, source))
        return real(source, flags, folder)

    monkeypatch.setattr(cpu, "cached_library", held)
    with settings.override(REN_CACHE_DIR=str(tmp_path)):
        dev = cpu.CpuDevice("cpu:bg")
        compiled = dev.prepare(items)
        assert compiled >= 6 and dev._pending and not dev.entries  # nothing built yet
        gate.set()
        for item in items:
            dev.compile(item)
        assert not dev._pending and len(dev.entries) == compiled
        units_built = list(built)  # (the realization below may compile kernels of its own)
        with backend_override("cpu", lambda _: dev):
            got = [o.numpy() for o in _outs("cpu")]
        assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
        assert 2 <= len(units_built) <= 3
        assert all(t.startswith("ren-cc") for t, _ in units_built)
        first = [i for i in items if i.kind == "elementwise"]
        names = [cpu.render_program(i, cpu.C).kernels[0].name for i in first]
        seen = list(dict.fromkeys(names))
        where = [next(u for u, (_, src) in enumerate(units_built) if f"void {n}(" in src)
                 for n in seen]
        assert where == sorted(where)  # units built in the order of first use
        dev._pool.shutdown(wait=True)
        before = c_host.compiler_invocations
        again = cpu.CpuDevice("cpu:bg2")
        with backend_override("cpu", lambda _: again):
            got2 = [o.numpy() for o in _outs("cpu")]
        assert c_host.compiler_invocations == before  # every kernel found in the index
        assert all(np.array_equal(g, w) for g, w in zip(got2, want, strict=True))


def test_a_failed_background_compile_is_raised_by_the_build_needing_it(tmp_path, monkeypatch):
    outs = _outs("cpu")
    items = [i for i in schedule([o.node for o in outs]) if i.kind == "elementwise"]
    monkeypatch.setattr(cpu, "BACKGROUND_MIN_SOURCE", 1)

    def broken(source, flags, folder):
        raise KernelCompileError("cc failed in ren_ew_test")

    monkeypatch.setattr(cpu, "cached_library", broken)
    with settings.override(REN_CACHE_DIR=str(tmp_path)):
        dev = cpu.CpuDevice("cpu:bgfail")
        assert dev.prepare(items) >= 6  # (the error is not prepare's)
        with pytest.raises(KernelCompileError, match="ren_ew_test"):
            dev.compile(items[0])
