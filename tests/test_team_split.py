"""Basis conversions split by coefficient ranges (cpu_ring_rns.c, ``bconv_ranges``; issue 42 §4).

Where a conversion's y rows (L_src rows of N words) do not fit in a core's L2, each task takes a
range of coefficients of every row: its y words, then every output row's sums over it.  The
range count is a power of two of at least 4 per thread, so two threads take equal shares whatever
the output row count (whole rows gave one thread a row more for an odd count), and no barrier
sits between the two loops.  The words must be the python device's, and the row loops' (the
ranges turned off), on 1, 2 and 3 threads, eager and in a JIT plan's team."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from conftest import cpu_or_skip

import ren


def _words(ring: ren.RingSpec, seed: int) -> np.ndarray:
    q = np.array(ring.moduli, dtype=np.uint64).reshape(-1, 1)
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 1 << 62, (ring.limbs, ring.N), dtype=np.uint64) % q).astype(np.uint32)


def _lib():
    cpu = cpu_or_skip()
    lib = cpu.ring_library()
    lib.ren_cpu_bconv_ranges.restype = ctypes.c_longlong
    lib.ren_cpu_bconv_ranges.argtypes = [ctypes.c_longlong] * 3
    lib.ren_cpu_set_bconv_ranges.argtypes = [ctypes.c_int]
    return cpu, lib


def test_ranges_are_chosen_where_the_rows_leave_l2_and_share_out_evenly():
    _, lib = _lib()
    ranges = lib.ren_cpu_bconv_ranges
    assert ranges(1 << 12, 3, 2) == 0  # y is 48 KiB: the row loops
    assert ranges(1 << 13, 5, 2) == 0  # 160 KiB
    for n, ls in ((1 << 14, 5), (1 << 14, 7), (1 << 13, 9), (1 << 16, 21), (1 << 16, 60)):
        for t in (1, 2, 3):
            r = ranges(n, ls, t)
            if n // 1024 < 4 * t:  # too few ranges of 1024 words for the threads: rows
                assert r == 0, (n, ls, t, r)
                continue
            assert r >= 4 * t and r & (r - 1) == 0 and n % r == 0, (n, ls, t, r)
            assert n // r >= 1024 and ls * (n // r) * 4 <= 256 << 10, (n, ls, t, r)
    assert ranges(1 << 16, 21, 2) == 32  # 2048 words a range: 168 KiB of y
    assert ranges(1 << 12, 40, 2) == 0  # 4 ranges of 1024 words at least: too few for 2 threads


def _converted(x: ren.Poly, target: ren.RingSpec) -> ren.Poly:
    """x (coefficient form) onto `target`, then through an NTT, a product and an INTT (a plan of
    ring and elementwise kernels around the conversion)."""
    return (x.to_ring(target).ntt() * 3).intt()


@pytest.mark.parametrize("log_n,src,extra,keep", [
    (14, 5, 3, True),    # the source rows copied (from[d] >= 0) and 3 rows converted
    (14, 7, 9, False),   # onto 9 other moduli: an odd row count
    (13, 9, 5, True),
    (12, 3, 4, True),    # the row loops (y fits in L2)
])
def test_conversion_words_at_1_2_3_threads_ranges_and_rows(log_n, src, extra, keep):
    cpu, lib = _lib()
    N = 1 << log_n
    ring = ren.RingSpec.generate(N, src + extra)
    base = ren.RingSpec(N, ring.moduli[:src])
    target = ring if keep else ren.RingSpec(N, ring.moduli[src:])
    w = _words(base, log_n + src)
    want = _converted(ren.Poly.from_residues(w, base, device="python"), target).numpy()
    a = ren.Poly.from_residues(w, base, device="cpu").realize()
    jitted = ren.jit(lambda u: _converted(u, target))
    dev = cpu.CpuDevice("cpu")
    try:
        for on in (1, 0):
            lib.ren_cpu_set_bconv_ranges(on)
            for t in (1, 2, 3):
                dev.set_threads(t)
                eager = _converted(a, target).numpy()
                jitted(a).numpy()  # capture (or the plan of another count)
                got = jitted(a).numpy()
                assert np.array_equal(eager, want), (log_n, src, extra, on, t, "eager")
                assert np.array_equal(got, want), (log_n, src, extra, on, t, "jit")
    finally:
        lib.ren_cpu_set_bconv_ranges(1)
        dev.set_threads(None)


def test_conversions_by_ranges_meet_the_team_at_no_barrier_of_their_own():
    """A JIT replay at N = 2^14 on 2 threads whose one conversion takes ranges: the team meets
    exactly at the barriers its flags ask for (the row loops met once more per conversion,
    between y's rows and the sums)."""
    cpu, lib = _lib()
    from ren.backend.cpu_plan import BARRIER, TEAM

    N = 1 << 14
    ring = ren.RingSpec.generate(N, 8)  # even: the transforms split no row (no barrier)
    base = ren.RingSpec(N, ring.moduli[:5])
    assert lib.ren_cpu_bconv_ranges(N, 5, 2) > 0
    a = ren.Poly.from_residues(_words(base, 3), base, device="cpu").realize()
    jitted = ren.jit(lambda u: _converted(u, ring))
    lib.ren_cpu_team_barriers.restype = ctypes.c_longlong
    dev = cpu.CpuDevice("cpu")
    tiles = lib.ren_cpu_plan_tiles()
    try:
        dev.set_threads(2)
        jitted(a).numpy()
        runner = jitted.plans[0].template.runner
        expected = 0
        for seg in runner.segments:
            if seg[0] != "c":
                continue
            f = list(seg[5])
            expected += sum(1 for k in range(1, len(f))
                            if f[k] & TEAM and f[k - 1] & TEAM and f[k] & BARRIER)
        assert any(c.name == "basis_convert" for c in runner._calls)
        # kernel by kernel: a tile run row by row (4 rows a thread here) meets none of the
        # barriers its members' flags keep for their untiled run (tests/test_tiles.py)
        lib.ren_set_plan_tiles(0)
        before = lib.ren_cpu_team_barriers()
        jitted(a).numpy()
        assert lib.ren_cpu_team_barriers() - before == expected
        lib.ren_set_plan_tiles(tiles)
        before = lib.ren_cpu_team_barriers()
        jitted(a).numpy()
        assert lib.ren_cpu_team_barriers() - before <= expected
    finally:
        lib.ren_set_plan_tiles(tiles)
        dev.set_threads(None)


@pytest.mark.parametrize("bits", [30, 31])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_conversion_by_ranges_gives_ren_ring_words_on_every_path(bits, threads):
    """Each vector path's library (AVX-512, AVX2, scalar) converts 7 rows at N = 2^14 (y is
    448 KiB: ranges) onto the source's last 6 moduli (copied) and 5 new ones, with ren.ring's
    words, on 1-3 threads (an eager call: the kernel's own OpenMP team)."""
    from ren.backend import cpu_isa
    from ren.kernel import RingCall
    from ren.ring import RingKernel, RingSpec, ring_convert_mont

    cpu, _ = _lib()
    N, limbs = 1 << 14, 7
    ring = RingSpec.generate(N, limbs, bits=bits)
    extra = RingSpec.generate(N, limbs + 5, bits=bits).moduli[limbs:]
    dst = RingSpec(N, (*ring.moduli[1:], *extra))
    x = _words(ring, bits)
    x[:, :7] = 0  # the sums' boundaries: 0 and q - 1 words
    x[:, 7:14] = np.array(ring.moduli, dtype=np.uint32).reshape(-1, 1) - 1
    want = ring_convert_mont(x, ring, dst)
    ran = 0
    for isa in cpu_isa.ISAS:
        if isa not in cpu.available_isas():
            continue
        lib = cpu.ring_library(isa)
        lib.ren_cpu_bconv_ranges.restype = ctypes.c_longlong
        lib.ren_cpu_bconv_ranges.argtypes = [ctypes.c_longlong] * 3
        lib.ren_set_threads(threads)
        try:
            assert lib.ren_cpu_bconv_ranges(N, limbs, threads) > 0
            fn = cpu.library_call(RingCall(RingKernel.BASIS_CONVERT, N, ring.moduli, dst.moduli),
                                  isa)
            out = np.empty((dst.limbs, N), np.uint32)
            fn([out, x])
        finally:
            lib.ren_set_threads(cpu.threads())
        assert np.array_equal(out, want), (isa, bits, threads)
        ran += 1
    assert ran >= 1
