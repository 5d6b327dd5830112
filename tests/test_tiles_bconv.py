"""Basis conversions heading plan tiles (cpu_ring_plan.c's ren_tile_prologue, ren/backend/
cpu_plan.py's `_head`): a conversion from few source rows (y's rows fit a core's L2,
`BCONV_TILE_BYTES`) may start a tile; the prologue writes y and meets the team, then output row d
runs on the thread that runs the tile's later kernels on row d.  Its rows read every input row,
so it never joins a tile after its first kernel; where every output row converts (no copied
row) the prologue's barrier fences the tile, so that a later member may write the conversion's
input (the arena reuses a mod-down's buffers so); where a row is copied from the input, it may
not.  The words must be the untiled run's at every thread count."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from conftest import cpu_or_skip
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ren


def _words(ring: ren.RingSpec, seed: int) -> np.ndarray:
    q = np.array(ring.moduli, dtype=np.uint64).reshape(-1, 1)
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 1 << 62, (ring.limbs, ring.N), dtype=np.uint64) % q).astype(np.uint32)


def _program(a: ren.Poly, b: ren.Poly, big: ren.RingSpec, steps: tuple[int, ...]) -> ren.Poly:
    """`a` (few rows) squared and converted to the ring `big` and chained with row-local kernels
    (`steps`: 0 a product and sum, 1 an NTT round trip, 2 an automorphism, 3 a conversion that
    keeps a's moduli: copied rows)."""
    a, b = a.ntt(), b.ntt()
    x = (a * a).intt().to_ring(big).ntt() * b
    for s in steps:
        if s == 0:
            x = x * b + x
        elif s == 1:
            x = (x - b * 3).intt().ntt()
        elif s == 2:
            x = x.automorph(5) * b
        else:
            both = ren.RingSpec(a.ring.N, a.ring.moduli + big.moduli)
            y = (a.intt() * 3).to_ring(both).ntt() * 5
            x = y.intt().to_ring(big).ntt() + x
    return x.intt() * 7


def _plan_heads(jitted) -> int:
    """How many basis conversions of the last plan head a tile (the next call has TILE)."""
    from ren.backend.cpu_plan import TILE

    runner = jitted.plans[-1].template.runner
    heads, k = 0, 0  # k: the segment's first call
    for seg in runner.segments:
        if seg[0] != "c":  # a host call
            k += 1
            continue
        flags = seg[5]
        for j in range(seg[1] - 1):
            heads += runner._calls[k + j].name == "basis_convert" and bool(flags[j + 1] & TILE)
        k += seg[1]
    return heads


def _check(small: int, large: int, N: int, steps: tuple[int, ...], counts=(2, 3)) -> int:
    """Words at 1 thread against `counts` threads with tiles forced on (1 row per thread), off
    and default; returns the conversions that headed a tile."""
    cpu = cpu_or_skip()
    lib = cpu.ring_library()
    ring = ren.RingSpec.generate(N, small + large)
    low = ren.RingSpec(N, ring.moduli[:small])
    big = ren.RingSpec(N, ring.moduli[small:])
    a = ren.Poly.from_residues(_words(low, 1), low, device="cpu").realize()
    b = ren.Poly.from_residues(_words(big, 2), big, device="cpu").realize()
    jitted = ren.jit(lambda u, v: _program(u, v, big, steps))
    dev = cpu.CpuDevice("cpu")
    default = lib.ren_cpu_plan_tiles()
    heads = 0
    try:
        dev.set_threads(1)
        want = jitted(a, b).numpy()
        for t in counts:
            dev.set_threads(t)
            for on in (1, 0, default):
                lib.ren_set_plan_tiles(on)
                jitted(a, b).numpy()
                got = jitted(a, b).numpy()
                heads = max(heads, _plan_heads(jitted))
                assert np.array_equal(got, want), f"{small}->{large} rows, N={N}, {t} threads"
    finally:
        lib.ren_set_plan_tiles(default)
        dev.set_threads(None)
    return heads


def test_conversions_head_tiles_with_the_untiled_words():
    heads = 0
    for small, large, N in ((1, 6, 1 << 12), (2, 9, 1 << 12), (2, 5, 1 << 13), (3, 4, 1 << 12)):
        heads += _check(small, large, N, (0, 1, 2, 3, 0))
    assert heads > 0


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small=st.integers(1, 3), large=st.integers(1, 7), log_n=st.integers(11, 13),
       steps=st.lists(st.integers(0, 3), min_size=0, max_size=5))
def test_conversion_tiles_hypothesis(small, large, log_n, steps):
    _check(small, large, 1 << log_n, tuple(steps))


def _bconv(out: np.ndarray, src: np.ndarray, copy: bool):
    """A basis conversion's CpuCall (tables of the right shapes; team_flags reads its sizes and
    its copy_from table) converting src's rows into out's."""
    from ren.backend.cpu_calls import CpuCall, sizes

    lib = cpu_or_skip().ring_library()
    addr = ctypes.cast(lib["ren_cpu_bconv"], ctypes.c_void_p).value
    ls, ld, n = src.shape[0], out.shape[0], out.shape[1]
    u = np.ones(ls, np.uint32)
    from_ = np.full(ld, -1, np.int64)
    if copy:
        from_[0] = 0
    extra = [sizes(n, ls, ld), u, u, u, np.ones(ld, np.uint32), np.ones(ld, np.uint32),
             np.ones(ld * ls, np.uint32), from_]
    return CpuCall("basis_convert", addr, 2, extra, lib), [out, src]


def _ntt(name: str, out: np.ndarray, src: np.ndarray):
    from ren.backend.cpu_calls import CpuCall, sizes

    lib = cpu_or_skip().ring_library()
    addr = ctypes.cast(lib[f"ren_cpu_{name}"], ctypes.c_void_p).value
    return CpuCall(name, addr, 2, [sizes(out.shape[-1], out.shape[0])], lib), [out, src]


@pytest.mark.parametrize("case, joins", [
    ("reads its rows", True),           # NTT of the conversion's output, row by row
    ("writes its input, fenced", True),  # every row converts: the prologue read the input
    ("writes its input, copies", False),  # row 0 copies input row 0 while a member writes it
    ("many source rows", False),         # y would not fit in L2: no tile
    ("conversion second", False),        # a conversion never joins a tile
])
def test_conversion_tile_flags(case, joins):
    from ren.backend.cpu_plan import BCONV_TILE_BYTES, TILE, team_flags, tile_entry

    N = 1 << 12
    src = np.zeros((2, N), np.uint32)
    mid, out = np.zeros((6, N), np.uint32), np.zeros((6, N), np.uint32)
    if case == "many source rows":
        src = np.zeros((BCONV_TILE_BYTES // (4 * N) + 1, N), np.uint32)
    head = _bconv(mid, src, copy=case.endswith("copies"))
    if case.startswith("writes its input"):
        nxt = _ntt("ntt", src, mid[:2])  # row r of src after row r of mid: src rows 0, 1
    elif case == "conversion second":
        head, nxt = _ntt("ntt", mid, out), _bconv(src, mid[:1], copy=False)
    else:
        nxt = _ntt("ntt", out, mid)
    run = [head, nxt]
    flags = team_flags(run, [{}, {}], [tile_entry(c) for c, _ in run])
    assert bool(flags[1] & TILE) == joins, flags
