"""The C samplers of stop 56.  The Gaussian's log and cos eight at a time (glibc's libmvec on
the AVX-512 path, `cpu_ring_sample_small.c`): they differ from libm's in the last bits only, far
inside the margin that sends a coefficient near a rounding tie to NumPy, so the coefficients stay
`ren.sampling`'s, checked with the vector calls on and off against NumPy's.  The 8-way uniform
sampler's lanes read from transposes of the state instead of gathers (`cpu_ring_sample.c`): the
same rows."""

from __future__ import annotations

import numpy as np
import pytest

from ren.random import RandomSpec
from ren.sampling import gaussian_bound, gaussian_from_words, sample_signed
from tests.sampling_helpers import on_threads, ring_paths


def _vector_libs():
    """(isa, lib) of the paths whose Gaussian runs the vector log and cos (libmvec found)."""
    from ren.backend.cpu_sampling import _bind

    out = []
    for isa, lib in ring_paths():
        _bind(lib)
        if lib.ren_cpu_gauss_vector(-1):
            out.append((isa, lib))
    return out


def _gauss_both(lib, fn):
    """fn() with the vector log and cos off, then on (left on)."""
    try:
        lib.ren_cpu_gauss_vector(0)
        off = fn()
    finally:
        lib.ren_cpu_gauss_vector(1)
    return off, fn()


def test_the_avx512_path_has_the_vector_gaussian_where_libmvec_is() -> None:
    """On glibc with AVX-512 the vector path is found (else every Gaussian test below would
    only compare the scalar loop with itself); the scalar and AVX2 paths never take it."""
    import ctypes.util

    from ren.backend.cpu_sampling import _bind

    paths = dict(ring_paths())
    for isa, lib in paths.items():
        _bind(lib)
        if isa != "avx512":
            assert lib.ren_cpu_gauss_vector(-1) == 0, isa
    if "avx512" in paths and ctypes.util.find_library("mvec"):
        assert paths["avx512"].ren_cpu_gauss_vector(-1) == 1


@pytest.mark.parametrize("N", [8, 13, 1024, 4099, 1 << 14])
def test_vector_gaussian_is_ren_samplings(N: int) -> None:
    """Coefficients with the vector log and cos = with libm's = ren.sampling's (NumPy), for
    sizes with and without a tail of fewer than eight, sigmas small and large, 1-3 threads."""
    from ren.backend.cpu_sampling import sample_signed as c_signed

    libs = _vector_libs()
    if not libs:
        pytest.skip("no vector Gaussian on this machine")
    for sigma in (3.2, 0.5, 19.0, 1000.0):
        spec = RandomSpec("gaussian", (sigma,), f"g{N}-{sigma}".encode(), "cpu")
        want = sample_signed(spec, N)
        for isa, lib in libs:
            for threads in (1, 2, 3):
                off, on = _gauss_both(lib, lambda lib=lib, threads=threads, spec=spec: on_threads(
                    lib, threads, lambda: c_signed(lib, spec, N)))
                assert np.array_equal(off, want), (isa, sigma, threads)
                assert np.array_equal(on, want), (isa, sigma, threads)


def test_vector_gaussian_from_crafted_words() -> None:
    """Words at the ends of both u's: u1 = 1 (w1 = 2^64 - 1: log 1 = 0, radius 0, where a
    last-bit log(1) > 0 would make a NaN without the clamp), u1 = 2^-53 (the largest radius),
    u2 = 0, 1/4, 1/2 and just below 1 (cos at ±1 and 0), mixed with random words, mapped by
    `ren_cpu_map_gaussian` with the vector path on and off: NumPy's coefficients."""
    from ren.backend.cpu_sampling import TIE_EPS

    libs = _vector_libs()
    if not libs:
        pytest.skip("no vector Gaussian on this machine")
    rng = np.random.default_rng(56)
    n = 64
    w1 = rng.integers(0, 2**64, n, dtype=np.uint64)
    w2 = rng.integers(0, 2**64, n, dtype=np.uint64)
    ends1 = [2**64 - 1, 0, 2**64 - 1, 0, 2**64 - 2**11, 2**11, 0]
    ends2 = [0, 0, 2**62, 2**63, 2**64 - 1, 2**62 + 2**11, 2**64 // 6]
    w1[:7], w2[:7] = ends1, ends2  # (the last: radius 8.6, cos 1/2, inside the clip bound)
    w1[40:47], w2[40:47] = ends1, ends2  # inside a later block of eight too
    for sigma in (3.2, 40.0):
        bound = gaussian_bound(sigma)
        want = gaussian_from_words(w1, w2, sigma)
        for isa, lib in libs:
            def run(lib=lib, sigma=sigma, bound=bound, want=want):
                out = np.empty(n, dtype=np.int64)
                ties = np.empty(n, dtype=np.int64)
                count = lib.ren_cpu_map_gaussian(w1.ctypes.data, w2.ctypes.data, sigma, bound,
                                                 TIE_EPS, n, out.ctypes.data, ties.ctypes.data,
                                                 n)
                out[ties[:count]] = want[ties[:count]]  # (the caller's NumPy, as sample_signed)
                return out

            off, on = _gauss_both(lib, run)
            assert np.array_equal(off, want), (isa, sigma)
            assert np.array_equal(on, want), (isa, sigma)


@pytest.mark.parametrize("N", [2048, 1000])
def test_uniform_rows_from_the_transposed_lanes_are_ren_samplings(N: int) -> None:
    """The 8-way uniform sampler reads each lane's rate words from three 8 x 8 transposes of
    the state (`lanes_rate_x8`) and, for a lane that starts a new limb, from its absorbed
    state: rows = ren.sampling's with more limbs than lanes (lanes refill mid-run), moduli
    from 2^31 down to 17 bits (rejection rates that leave the lanes' rows filling at different
    blocks) and short rows (the last partial block), at 1-3 threads, stored and standard."""
    from types import SimpleNamespace

    from ren.backend import cpu_sampling
    from ren.ring.ringspec import ntt_primes
    from ren.sampling import sample

    moduli = (*ntt_primes(2048, 31, 5), *ntt_primes(2048, 30, 5), *ntt_primes(2048, 17, 8))
    ring = SimpleNamespace(N=N, limbs=len(moduli), moduli=moduli)
    spec = RandomSpec("uniform", (), f"transposed{N}".encode(), "cpu")
    want = sample(spec, ring)
    stored = np.array([[(int(r) << 32) % q for r in row] for row, q in zip(want, moduli,
                                                                             strict=True)],
                      dtype=np.uint32)
    for isa, lib in ring_paths():
        for threads in (1, 2, 3):
            for form, expect in ((False, want), (True, stored)):
                got = on_threads(lib, threads, lambda lib=lib, form=form:
                                 cpu_sampling.sample_uniform(lib, spec, ring, stored=form))
                assert np.array_equal(got, expect), (isa, threads, form)
