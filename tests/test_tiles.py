"""Tiles of the cpu plan runner (cpu_ring_plan.c, ren/backend/cpu_plan.py): on more than one
thread, a chain of row-local kernels (NTT, INTT, elementwise kernels whose row r reads rows r
alone) runs row by row, each thread the whole chain on its own rows, without barriers.  The
words must be the untiled run's at every thread count; a kernel that mixes rows (a basis
conversion, a rescale, a read of another row) must never join a tile; and a kernel's row entry
(``ren_rows_*``) must compute row r from rows r of its inputs alone."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from backend_programs import row_step
from conftest import cpu_or_skip
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ren


def _words(ring: ren.RingSpec, seed: int) -> np.ndarray:
    q = np.array(ring.moduli, dtype=np.uint64).reshape(-1, 1)
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 1 << 62, (ring.limbs, ring.N), dtype=np.uint64) % q).astype(np.uint32)


def _program(a: ren.Poly, b: ren.Poly, steps: tuple[int, ...]) -> ren.Poly:
    """A chain on a's ring (NTT domain) that `steps` picks: products and sums (row-local),
    automorphisms (row-local, permuted within the row), NTT round trips, a read of a's rows
    from the second one on (rows at an offset: mixes rows), a basis conversion and a rescale
    (mix rows)."""
    ring = a.ring
    x, y = a.ntt(), b.ntt()
    for s in steps:
        if s == 3 and ring.limbs > 1:  # rows 1.. of x beside rows 0.. of y: an offset
            low = ren.RingSpec(ring.N, ring.moduli[:-1])
            high = ren.RingSpec(ring.N, ring.moduli[1:])
            z = x.intt().to_ring(high).ntt() * 5
            x = (z.intt().to_ring(ring).ntt() + x) * y.intt().to_ring(low).to_ring(ring).ntt()
        elif s == 4 and ring.limbs > 1:  # a rescale and back
            x = x.intt().rescale(ring.moduli[-1]).to_ring(ring).ntt() * y
        else:  # row-local steps (0-2), or x·x − y
            x = row_step(x, y, s)
    return x.intt() * 7


def _lib(cpu):
    lib = cpu.ring_library()
    lib.ren_cpu_tiles_run.restype = ctypes.c_longlong
    return lib


def _check(limbs: int, N: int, steps: tuple[int, ...], counts=(2, 3)) -> int:
    """The words of a replay at 1 thread (no tiles), against `counts` threads with tiles on and
    off; returns how many tiles the replays ran."""
    cpu = cpu_or_skip()
    lib = _lib(cpu)
    ring = ren.RingSpec.generate(N, limbs)
    a, b = (ren.Poly.from_residues(_words(ring, s), ring, device="cpu").realize()
            for s in (limbs, limbs + 1))
    jitted = ren.jit(lambda u, v: _program(u, v, steps))
    dev = cpu.CpuDevice("cpu")
    tiles = 0
    default = lib.ren_cpu_plan_tiles()
    try:
        dev.set_threads(1)
        want = jitted(a, b).numpy()
        for t in counts:
            dev.set_threads(t)
            for on in (1, 0, default):  # tiles of any height (>= 1 row per thread), none
                lib.ren_set_plan_tiles(on)
                jitted(a, b).numpy()  # capture (or the plan of another count)
                t0 = lib.ren_cpu_tiles_run()
                got = jitted(a, b).numpy()
                tiles += lib.ren_cpu_tiles_run() - t0
                assert np.array_equal(got, want), f"{limbs} limbs, N={N}, {t} threads, tiles {on}"
    finally:
        lib.ren_set_plan_tiles(default)
        dev.set_threads(None)
    return tiles


def test_tiled_replays_give_the_untiled_words():
    """Chains at N = 2^12 and 2^13 over 1..7 rows (one row: fewer rows than threads; odd
    counts: a thread takes one row more) at 2 and 3 threads; tiles do run."""
    tiles = 0
    for limbs, N in ((1, 1 << 12), (2, 1 << 12), (5, 1 << 13), (7, 1 << 12)):
        tiles += _check(limbs, N, (0, 1, 2, 3, 4, 0))
    assert tiles > 0


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(limbs=st.integers(1, 5), log_n=st.integers(11, 13),
       steps=st.lists(st.integers(0, 5), min_size=1, max_size=6))
def test_tiled_words_hypothesis(limbs, log_n, steps):
    _check(limbs, 1 << log_n, tuple(steps), counts=(2, 3))


def test_tiles_need_rows_for_every_thread():
    """By default a tile runs row by row only where it has 4 rows per thread or more: a chain
    of one row runs kernel by kernel (its kernels split the row's coefficients instead), one of
    8 rows is tiled on 2 threads."""
    cpu = cpu_or_skip()
    lib = _lib(cpu)
    assert lib.ren_cpu_plan_tiles() == 4
    ran = {}
    dev = cpu.CpuDevice("cpu")
    try:
        dev.set_threads(2)
        for limbs in (1, 8):
            ring = ren.RingSpec.generate(1 << 12, limbs)
            a, b = (ren.Poly.from_residues(_words(ring, s), ring, device="cpu").realize()
                    for s in (1, 2))
            jitted = ren.jit(lambda u, v: _program(u, v, (0, 1, 0)))
            jitted(a, b).numpy()
            t0 = lib.ren_cpu_tiles_run()
            jitted(a, b).numpy()
            ran[limbs] = lib.ren_cpu_tiles_run() - t0
    finally:
        dev.set_threads(None)
    assert ran[1] == 0 and ran[8] > 0, ran


def _ring_call(name: str, out: np.ndarray, src: np.ndarray):
    """A stand-in for a ring kernel's CpuCall (team_flags reads its name, slots and sizes)."""
    from ren.backend.cpu_calls import CpuCall, sizes

    cpu = cpu_or_skip()
    lib = cpu.ring_library()
    entry = {"ntt": "ren_cpu_ntt", "intt": "ren_cpu_intt", "rescale": "ren_cpu_rescale",
             "basis_convert": "ren_cpu_bconv"}[name]
    addr = ctypes.cast(lib[entry], ctypes.c_void_p).value
    call = CpuCall(name, addr, 2, [sizes(out.shape[-1], out.shape[0])], lib)
    return call, [out, src]


@pytest.mark.parametrize("second, joins", [
    ("same rows", True),     # reads the first one's output where it starts
    ("offset rows", False),  # reads it from its second row: row r is another thread's row r+1
    ("other array", True),   # touches nothing the first one touched
    ("rescale", False),      # mixes rows
    ("basis_convert", False),
])
def test_tile_flags(second, joins):
    """team_flags puts a kernel into the tile of the one before it only where both are
    row-local and every array they share starts at one address."""
    from ren.backend.cpu_plan import BARRIER, TEAM, TILE, team_flags, tile_entry

    N = 1 << 12
    buf = np.zeros((6, N), np.uint32)
    src, other, out2 = (np.zeros((4, N), np.uint32) for _ in range(3))
    first = _ring_call("ntt", buf[0:4], src)
    if second == "same rows":
        nxt = _ring_call("intt", out2, buf[0:4])
    elif second == "offset rows":
        nxt = _ring_call("intt", out2, buf[1:5])
    elif second == "other array":
        nxt = _ring_call("intt", out2, other)
    else:
        nxt = _ring_call(second, out2, buf[0:4])
    run = [first, nxt]
    flags = team_flags(run, [{}, {}], [tile_entry(c) for c, _ in run])
    assert flags[0] == TEAM
    assert bool(flags[1] & TILE) == joins
    if not joins and second != "other array":
        assert flags[1] & BARRIER  # it reads what the first one wrote: the team meets first


def test_per_run_arrays_join_only_the_same_one():
    """A per-run (patched) array is the same array as another only where it is the same index
    of the run's arrays: any two others may alias at any offset."""
    from ren.backend.cpu_plan import TILE, team_flags, tile_entry

    N = 1 << 12
    out, mid = np.zeros((4, N), np.uint32), np.zeros((4, N), np.uint32)
    run = [_ring_call("ntt", mid, out), _ring_call("intt", out, mid)]
    run = [(run[0][0], [mid, None]), (run[1][0], [None, mid])]  # None: patched per run
    entries = [tile_entry(c) for c, _ in run]
    same = team_flags(run, [{1: 0}, {0: 0}], entries)  # reads run array 0, writes run array 0
    other = team_flags(run, [{1: 0}, {0: 1}], entries)  # writes run array 1: may alias array 0
    assert same[1] & TILE and not other[1] & TILE


def test_row_entries_read_their_own_rows_alone():
    """Every elementwise kernel with a row entry (``ren_rows_*``) in a captured chain: row r of
    its output from the row entry, with every other row of its inputs overwritten, is row r of
    the whole kernel's output.  Kernels that mix rows have no row entry (the offset read of
    `_program`'s step 3 is among them)."""
    cpu_or_skip()
    from ren.backend.cpu_plan import tile_entry

    N, limbs = 1 << 12, 4
    ring = ren.RingSpec.generate(N, limbs)
    a, b = (ren.Poly.from_residues(_words(ring, s), ring, device="cpu").realize() for s in (1, 2))
    jitted = ren.jit(lambda u, v: _program(u, v, (0, 2, 3, 1, 0)))
    jitted(a, b).numpy()
    runner = jitted.plans[0].template.runner
    rng = np.random.default_rng(3)
    checked = without = 0
    for call, args in zip(runner._calls, runner._keep):
        if not getattr(call, "name", "").startswith("ren_ew_"):
            continue
        entry = tile_entry(call)
        if entry is None:
            without += 1
            continue
        if any(x is None for x in args[: call.nslots]):
            continue  # a per-run array: no words here
        slots = [np.asarray(x).reshape(-1, N) for x in args[: call.nslots]]
        rows_fn = ctypes.CFUNCTYPE(ctypes.c_longlong, ctypes.c_void_p, ctypes.c_longlong,
                                   ctypes.c_longlong)(entry[0])
        saved = [s.copy() for s in slots]
        for r in range(slots[0].shape[0]):
            call(args)
            want = slots[0][r].copy()
            for s in slots[1:]:
                mask = np.arange(s.shape[0]) != r
                s[mask] = rng.integers(0, 1 << 30, (int(mask.sum()), N), dtype=np.uint32)
            slots[0][:] = 0
            argv = call.argv(args)
            assert rows_fn(ctypes.addressof(argv), r, r + 1) == slots[0].shape[0]
            assert np.array_equal(slots[0][r], want), f"{call.name} row {r}"
            for s, v in zip(slots, saved):
                s[:] = v
        checked += 1
    assert checked > 0
    assert without > 0  # the offset read has no row entry


def test_the_call_after_a_tile_meets_for_every_kernel_of_it():
    """Tile [A, B] where B reads A's output (the untiled run meets between them), then C, which
    reads A's output too but nothing B touches: run row by row, the tile meets nowhere inside,
    so C needs a barrier for A (untiled, the one before B covered it)."""
    from ren.backend.cpu_plan import BARRIER, TILE, team_flags, tile_entry

    N = 1 << 12
    src, x, y, z = (np.zeros((4, N), np.uint32) for _ in range(4))
    run = [_ring_call("ntt", x, src), _ring_call("intt", y, x), _ring_call("rescale", z, x)]
    flags = team_flags(run, [{}, {}, {}], [tile_entry(c) for c, _ in run])
    assert flags[1] & TILE and flags[1] & BARRIER
    assert not flags[2] & TILE and flags[2] & BARRIER
