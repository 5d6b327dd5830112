"""The "cpu" device's small-coefficient samplers (cpu_ring_sample_small.c's SHAKE-256 squeezes and
mappings through ren.backend.cpu_sampling.sample_signed): ternary, uniform on an interval,
sparse ternary and Gaussian coefficients equal to `ren.sampling.sample_signed`'s on every vector
path and at 1..3 threads, squeezed in C or by hashlib (``words=True``: the tests that craft the
words use it), including the Gaussian coefficients at rounding ties (left to NumPy) and sparse
keys with repeated values (a stable argsort's order)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sampling_helpers import on_threads, ring_paths

import ren.sampling
from ren.backend.c_host import find_cc
from ren.errors import ParameterError
from ren.random import RandomSpec
from ren.sampling import sample_signed

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")

#: the kinds and parameters, with the sizes the mappings split at (4096 a chunk)
SPECS = [("ternary", ()), ("uniform_on_interval", (-5, 2**32 - 6)),
         ("uniform_on_interval", (7, 7)), ("uniform_on_interval", (-(2**62) + 1, -(2**62) + 9)),
         ("gaussian", (3.2,)), ("gaussian", (0.5,)), ("gaussian", (123456.5,)),
         ("gaussian", (2,))]


@pytest.mark.parametrize("N", [1, 16, 1000, 3 * 4096 + 5])
def test_every_kind_is_ren_samplings_on_every_path_and_thread_count(N: int) -> None:
    from ren.backend.cpu_sampling import sample_signed as c_signed

    specs = [*SPECS, ("sparse_ternary", (0,)), ("sparse_ternary", (1,)),
             ("sparse_ternary", (min(N, 192),)), ("sparse_ternary", (N // 2,)),
             ("sparse_ternary", (N,))]
    for kind, params in specs:
        spec = RandomSpec(kind, params, b"small %d" % N, "cpu")
        want = sample_signed(spec, N)
        for isa, lib in ring_paths():
            for threads in (1, 2, 3):
                for words in (False, True):  # C's squeeze, or hashlib's words mapped in C
                    got = on_threads(lib, threads,
                                      lambda s=spec, lib=lib, w=words: c_signed(lib, s, N, words=w))
                    assert got.dtype == np.int64 and np.array_equal(got, want), \
                        (kind, params, isa, threads, words)
    assert len(set(sample_signed(RandomSpec("ternary", (), b"t", "cpu"), 1000).tolist())) == 3


def test_gaussian_ties_go_to_numpy_from_the_same_words() -> None:
    """tie_eps = 1 sends every coefficient to NumPy, 0 none: both give the definition's."""
    from ren.backend import cpu
    from ren.backend.cpu_sampling import sample_signed as c_signed

    lib = cpu.ring_library()
    for sigma in (3.2, 0.7):
        spec = RandomSpec("gaussian", (sigma,), b"ties", "cpu")
        want = sample_signed(spec, 5000)
        for eps in (0.0, 1.0):
            for words in (False, True):
                assert np.array_equal(c_signed(lib, spec, 5000, tie_eps=eps, words=words),
                                      want), (sigma, eps, words)


def test_a_coefficient_at_a_tie_is_numpys(monkeypatch) -> None:
    """All-zero "gauss" words give u1 = 2^-53, u2 = 0, a normal sample r = sqrt(2·53·ln 2);
    sigma = 0.5 / r (and 2.5 / r) puts x at a half-integer, where a last-bit difference between
    libm and NumPy decides the rounding: the C mapping reports every coefficient as a tie and the
    result is NumPy's."""
    from ren.backend import cpu
    from ren.backend.cpu_sampling import _bind
    from ren.backend.cpu_sampling import sample_signed as c_signed

    real = ren.sampling._u64

    def zeros(seed, purpose, count):
        out = real(seed, purpose, count)
        return out * np.uint64(0) if purpose == "gauss" else out

    monkeypatch.setattr(ren.sampling, "_u64", zeros)
    r = math.sqrt(-2.0 * math.log(2.0**-53))
    lib = cpu.ring_library()
    _bind(lib)
    n = 64
    words = np.zeros(n, dtype=np.uint64)
    for half in (0.5, 2.5):
        sigma = half / r
        spec = RandomSpec("gaussian", (sigma,), b"tie", "cpu")
        assert np.array_equal(c_signed(lib, spec, n, words=True), sample_signed(spec, n))
        out, ties = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        count = lib.ren_cpu_map_gaussian(words.ctypes.data, words.ctypes.data, sigma,
                                         ren.sampling.gaussian_bound(sigma), 1e-9, n,
                                         out.ctypes.data, ties.ctypes.data, n)
        assert count == n and sorted(ties.tolist()) == list(range(n))


def test_sparse_positions_with_repeated_keys_follow_a_stable_argsort(monkeypatch) -> None:
    """"positions" words reduced to a few values: many keys tie, and the h chosen positions
    (and which sign each gets) are a stable argsort's, lower index first."""
    from ren.backend.cpu_sampling import sample_signed as c_signed

    real = ren.sampling._u64
    for values in (1, 3, 50):
        def few(seed, purpose, count, values=values):
            out = real(seed, purpose, count)
            return out % np.uint64(values) if purpose == "positions" else out

        monkeypatch.setattr(ren.sampling, "_u64", few)
        for h in (1, 7, 100, 300):
            spec = RandomSpec("sparse_ternary", (h,), b"repeats", "cpu")
            want = sample_signed(spec, 300)
            assert np.count_nonzero(want) == h
            for isa, lib in ring_paths():
                assert np.array_equal(c_signed(lib, spec, 300, words=True), want), (values, h, isa)
        monkeypatch.setattr(ren.sampling, "_u64", real)


def test_bad_parameters_are_parameter_errors() -> None:
    from ren.backend import cpu
    from ren.backend.cpu_sampling import sample_signed as c_signed

    lib = cpu.ring_library()
    for kind, params, match in [("sparse_ternary", (17,), "hamming_weight"),
                                ("uniform_on_interval", (3, 2), "lo <= hi"),
                                ("uniform_on_interval", (0, 2**32), "lo <= hi"),
                                ("uniform", (), "not a small-coefficient")]:
        with pytest.raises(ParameterError, match=match):
            c_signed(lib, RandomSpec(kind, params, b"", "cpu"), 16)


def test_residue_rows_of_every_kind_are_ren_samplings() -> None:
    """`cpu_sampling.sample`, the device's whole sampler: (L, N) u32 rows equal to
    `ren.sampling.sample`'s for every kind (small coefficients below every modulus: no
    division; a wide interval: the remainder), on every path at 1..3 threads."""
    from ren.backend.cpu_sampling import sample as c_sample
    from ren.ring import RingSpec

    ring = RingSpec.generate(4096, 5, 30)  # above the threshold for a team
    specs = [*SPECS[:5], ("sparse_ternary", (64,)), ("uniform", ()),
             ("uniform_on_interval", (-(2**31), 2**31 - 1))]
    for kind, params in specs:
        spec = RandomSpec(kind, params, b"rows", "cpu")
        want = ren.sampling.sample(spec, ring)
        for isa, lib in ring_paths():
            for threads in (1, 2, 3):
                got = on_threads(lib, threads, lambda s=spec, lib=lib: c_sample(lib, s, ring))
                assert got is not None and got.dtype == np.uint32 and np.array_equal(got, want), \
                    (kind, params, isa, threads)
