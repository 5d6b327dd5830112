"""The memory plan is really used at run time: planned buffers live in one arena per device.

Checked on the arrays the kernels actually receive, by address arithmetic
(``__array_interface__``) and ``np.shares_memory``, never through the runtime's own bookkeeping:
if the runtime gave planned buffers storage of their own instead of their arena slots, these
tests fail.
"""

from __future__ import annotations

import numpy as np
import pytest

import ren
from ren import replay, runtime
from ren.corpus import build
from ren.device import Buffer
from ren.kernel import ScheduledKernel
from ren.memory import MemoryPlan, plan_memory
from ren.reference import evaluate

RING = ren.RingSpec.generate(64, 6)


def address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def root(a: np.ndarray) -> np.ndarray:
    """The array that owns `a`'s memory."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


class ArenaSpy:
    """Wraps the runtime: records each run's plan and arenas, and checks every planned buffer's
    storage as each kernel receives it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.plans: list[MemoryPlan] = []
        self.binds: list[list[runtime.Arena]] = []
        self.seen: dict[Buffer, int] = {}  # planned buffer -> kernel calls that received it
        self.owners: dict[str, dict[int, np.ndarray]] = {}  # device -> id -> owning array
        bind, run = runtime.bind_arenas, replay.run_exec_units

        def spy_bind(plan):
            arenas = bind(plan)
            self.binds.append(arenas)
            return arenas

        def spy_run(units, plan=None):
            assert plan is not None, "realize ran without a memory plan"
            self.plans.append(plan)
            for unit in units:
                if unit.fn is not None:
                    unit.fn = self._checked(unit.fn, unit.bufs, plan)
            return run(units, plan)

        monkeypatch.setattr(runtime, "bind_arenas", spy_bind)
        monkeypatch.setattr(replay, "run_exec_units", spy_run)

    def _checked(self, fn, bufs: tuple[Buffer, ...], plan: MemoryPlan):
        def call(arrays: list[np.ndarray]) -> None:
            for buf, arr in zip(bufs, arrays, strict=True):
                if not plan.is_planned(buf):
                    continue
                owner = root(arr)
                self.owners.setdefault(buf.device, {})[id(owner)] = owner
                # the kernel's array is the buffer's slot of the arena: right place, right size
                # (the arena starts on a cache line inside its block: offsets count from there)
                arena = next(a for a in self.binds[-1] if a.device == buf.device)
                assert owner is root(arena.data), f"{buf} is not in this run's arena"
                assert arena.data.nbytes >= plan.arenas[buf.device]
                assert address(arr) - address(arena.data) == plan.offset(buf), buf
                assert arr.nbytes == buf.nbytes and arr.flags.c_contiguous
                assert np.shares_memory(arr, owner)
                self.seen[buf] = self.seen.get(buf, 0) + 1
            planned = [(b, a) for b, a in zip(bufs, arrays, strict=True) if plan.is_planned(b)]
            out = arrays[0]
            for b, a in planned:  # an item's planned inputs never alias its output
                assert b is bufs[0] or not np.shares_memory(out, a), f"{b} aliases the output"
            fn(arrays)
        return call


def check_run(spy: ArenaSpy) -> None:
    """After one realize(): one arena per device, allocated once, holding every planned buffer."""
    assert len(spy.plans) == 1 and len(spy.binds) == 1
    plan, arenas = spy.plans[0], spy.binds[0]
    assert plan.planned, "the program must have intermediates to place"
    assert sorted(a.device for a in arenas) == sorted(plan.arenas)
    by_device = {a.device: a for a in arenas}
    for dev, owners in spy.owners.items():
        assert len(owners) == 1, f"{dev}: planned buffers in {len(owners)} allocations, not one"
        (owner,) = owners.values()
        assert owner is root(by_device[dev].data)  # the arena bind_arenas made for this run
        assert by_device[dev].data.nbytes >= plan.arenas[dev]
    assert set(spy.seen) == set(plan.planned)  # every planned buffer was used from its slot
    for buf in plan.planned:  # and detached afterwards, so that the arena can be freed
        assert not buf.is_allocated


def test_keyswitch_intermediates_live_in_the_arena(monkeypatch):
    spy = ArenaSpy(monkeypatch)
    outputs = build("keyswitch")
    expected = evaluate(*outputs)
    outputs[0].realize(*outputs[1:])
    check_run(spy)
    plan = spy.plans[0]
    assert len(plan.planned) >= 8 and plan.arena_bytes < plan.planned_bytes  # slots are reused
    for p, e in zip(outputs, expected, strict=True):
        assert np.array_equal(p.numpy(), e)


def test_two_devices_two_arenas(monkeypatch):
    spy = ArenaSpy(monkeypatch)
    rng = np.random.default_rng(5)

    def poly(ring, device="python"):
        res = np.stack([rng.integers(0, q, ring.N) for q in ring.moduli])
        return ren.Poly.from_residues(res, ring, "COEFF", device)

    a, b, c = poly(RING), poly(RING), poly(RING.sub(0, 4))
    x = ((a + b).ntt() * (a - b).ntt()).intt().rescale(RING.moduli[-1])
    y = (x.to_ring(RING.sub(0, 4)) * 3 - c).to("python:1")
    d = poly(RING.sub(0, 4), "python:1")
    z = ((y + d).ntt() * (y - d).ntt()).intt()
    outputs = (x + 1, z.rescale(RING.moduli[3]) + 5)
    expected = evaluate(*outputs)
    outputs[0].realize(*outputs[1:])
    check_run(spy)
    assert set(spy.plans[0].arenas) == {"python", "python:1"}
    for p, e in zip(outputs, expected, strict=True):
        assert np.array_equal(p.numpy(), e)


def test_bind_arenas_places_each_buffer_at_its_offset():
    n = 64
    items, prev = [], Buffer("python", (2, n)).allocate()
    for k in range(12):  # a chain with mixed sizes on two devices
        out = Buffer("python" if k < 6 else "python:1", ((2, 5, 3)[k % 3], n))
        kind = "copy" if k == 6 else "elementwise"
        items.append(ScheduledKernel(kind, f"k{k}", None, (out, prev)))
        prev = out
    plan = plan_memory(items, [prev])
    arenas = runtime.bind_arenas(plan)
    try:
        assert sorted(a.device for a in arenas) == sorted(plan.arenas) == ["python", "python:1"]
        by_device = {a.device: a for a in arenas}
        for buf in plan.planned:
            data, arena = buf.array(), by_device[buf.device].data
            assert arena.nbytes >= plan.arenas[buf.device]
            assert address(data) - address(arena) == plan.offset(buf)
            assert np.shares_memory(data, arena) and data.shape == buf.shape
        for a in plan.planned:  # buffers live at the same time never share memory
            for b in plan.planned:
                (fa, la), (fb, lb) = plan.live_range(a), plan.live_range(b)
                if a is not b and a.device == b.device and fa <= lb and fb <= la:
                    assert not np.shares_memory(a.array(), b.array()), (a, b)
    finally:
        for arena in arenas:
            for buf in arena.buffers:
                buf.release()
    assert runtime.bind_arenas(None) == []


def test_the_next_run_reuses_the_arena(monkeypatch):
    """A finished run hands its arena back to the host allocator, and the next run of a plan
    that fits gets the same memory (already faulted in), with the same results."""
    from ren.backend.numpy_backend import HOST
    HOST.drop_spare()
    spy = ArenaSpy(monkeypatch)
    rng = np.random.default_rng(9)
    results = []
    for _ in range(2):
        res = np.stack([rng.integers(0, q, RING.N) for q in RING.moduli])
        a = ren.Poly.from_residues(res, RING, "COEFF", "python")
        out = ((a + 1).ntt() * (a - 1).ntt()).intt() + 7
        expected = evaluate(out)[0]
        out.realize()
        results.append((out.numpy(), expected))
    assert len(spy.binds) == 2
    (first,), (second,) = spy.binds
    assert root(second.data) is root(first.data)
    assert HOST.spare_bytes() >= root(first.data).nbytes  # handed back again after run 2
    for got, expected in results:
        assert np.array_equal(got, expected)


def test_host_allocator_keeps_the_largest_spare_arena():
    from ren.backend.numpy_backend import HostAllocator
    host = HostAllocator()
    small, big = host.arena(100), host.arena(1000)
    host.recycle(small)
    host.recycle(big)
    host.recycle(np.zeros((2, 3), dtype=np.uint32))  # not an arena: ignored
    assert host.spare_bytes() == root(big).nbytes
    inner = host.arena(500)  # fits in the spare: a view of it, and taken out of the pool
    assert root(inner) is root(big) and inner.size == 500 and host.spare_bytes() == 0
    assert root(host.arena(2000)) is not root(big)  # nothing to reuse: a fresh one
    host.recycle(inner)
    assert host.spare_bytes() == root(big).nbytes
    host.drop_spare()
    assert host.spare_bytes() == 0


@pytest.mark.parametrize("words", [1, 7, 1000, 1 << 18])  # 1 MiB: NumPy mmaps it, 16 B off a line
def test_host_arrays_start_on_a_cache_line(words):
    """Arenas, buffers and an arena reused from a spare all start on HOST_ALIGN bytes, so the
    compiled kernels' 512-bit accesses never straddle two cache lines."""
    from ren.backend.numpy_backend import HOST_ALIGN, HostAllocator
    host = HostAllocator()
    arena, buf = host.arena(words), host.alloc((2, words))
    assert arena.size == words and buf.shape == (2, words) and buf.flags.c_contiguous
    host.recycle(arena)
    again = host.arena(max(1, words - 3))
    assert root(again) is root(arena)
    for a in (arena, buf, again):
        assert a.ctypes.data % HOST_ALIGN == 0
        assert a.dtype == np.uint32


def test_a_spare_arena_is_reused_up_to_its_last_aligned_word():
    """The spare block serves any arena that fits after its first aligned word, and no larger
    one: one word more gets a fresh arena of the size asked for."""
    from ren.backend.numpy_backend import HOST_ALIGN, HostAllocator
    host = HostAllocator()
    first = host.arena(1000)
    block = root(first)
    fits = block.size - (-block.ctypes.data % HOST_ALIGN) // 4  # words after the boundary
    host.recycle(first)
    whole = host.arena(fits)
    assert root(whole) is block and whole.size == fits
    host.recycle(whole)
    bigger = host.arena(fits + 1)
    assert root(bigger) is not block and bigger.size == fits + 1
    assert bigger.ctypes.data % HOST_ALIGN == 0
