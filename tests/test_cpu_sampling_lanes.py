"""The "cpu" device's multi-way uniform sampler (cpu_ring_keccak_x8.c / _x4.c driven by
cpu_ring_sample.c): 8 limbs' SHAKE-128 streams a permutation on the AVX-512 path, 4 on AVX2,
1 on the scalar path, and 1 on any path when asked (``ways=1``).  Every way, on every path this
machine runs and at 1..3 threads, gives `ren.sampling`'s rows word for word: limb counts that
are not multiples of the lanes, rows shorter than a block, moduli of every size a u32 holds."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from sampling_helpers import ring_paths

from ren.backend.c_host import find_cc
from ren.random import RandomSpec
from ren.ring import RingSpec
from ren.sampling import UNIFORM_PREFIX, _uniform_row, sample

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")

#: the lanes of each path's permutation
WAYS = {"avx512": 8, "avx2": 4, "scalar": 1}


def _threads(lib, n: int) -> None:
    from ren.backend import cpu

    lib.ren_set_threads(n if n else cpu.threads())


def test_each_path_runs_its_lanes() -> None:
    from ren.backend.cpu_sampling import keccak_ways, sample_uniform

    paths = ring_paths()
    assert "scalar" in dict(paths)
    ring = RingSpec.generate(16, 1, 17)
    for isa, lib in paths:
        assert keccak_ways(lib) == WAYS[isa], isa
        with pytest.raises(ValueError, match="streams a permutation"):
            sample_uniform(lib, RandomSpec("uniform", (), b"", "cpu"), ring, ways=3)


@pytest.mark.parametrize(("N", "limbs"), [(16, 1), (16, 3), (1024, 5), (1024, 9), (512, 13),
                                          (256, 17)])
def test_every_way_and_thread_count_gives_ren_samplings_rows(N: int, limbs: int) -> None:
    """Limb counts that are not multiples of 8 or 4 (lanes idle at the end, lanes refilled with
    a later limb while others still run), on 1..3 threads (above the library's threshold for a
    team from 1024 x 5 limbs on), each way on each path."""
    from ren.backend.cpu_sampling import sample_uniform

    ring = RingSpec.generate(N, limbs, 30 if limbs % 2 else 24)
    spec = RandomSpec("uniform", (), b"lanes %d" % limbs, "cpu")
    want = sample(spec, ring)
    for isa, lib in ring_paths():
        for ways in sorted({1, WAYS[isa]}):
            for threads in (1, 2, 3):
                _threads(lib, threads)
                try:
                    got = sample_uniform(lib, spec, ring, ways=ways)
                finally:
                    _threads(lib, 0)
                assert got is not None and np.array_equal(got, want), (isa, ways, threads)


def _c_rows(lib, seed: bytes, moduli: list[int], n: int, ways: int) -> np.ndarray:
    """ren_cpu_sample_uniform_ways on any u32 moduli (RingSpec takes only NTT primes)"""
    from ren.backend.cpu_sampling import _bind

    _bind(lib)
    out = np.full((len(moduli), n), 0xDEADBEEF, dtype=np.uint32)
    q = np.array(moduli, dtype=np.uint32)
    status = lib.ren_cpu_sample_uniform_ways(UNIFORM_PREFIX, len(UNIFORM_PREFIX), seed,
                                             len(seed), q.ctypes.data, len(moduli), n,
                                             out.ctypes.data, ways)
    assert status == 0
    return out


@pytest.mark.parametrize("n", [1, 2, 41, 42, 43, 85, 300])
def test_any_u32_modulus_and_row_length(n: int) -> None:
    """Moduli from 1 to 2^32 - 1 (the Barrett step's edge cases: q = 1, q above 2^31, powers
    of two, which keep every word) and rows shorter than, equal to and just over a block's 42
    words: `ren.sampling`'s rejection sample for each."""
    moduli = [3, 1, 2**32 - 1, 2**31 + 11, 2**31 - 1, 2**16, 7, 2**30 + 3, 2**32 - 5, 65537, 2]
    seed = b"moduli"
    want = np.stack([_uniform_row(seed, i, q, n) for i, q in enumerate(moduli)])
    for isa, lib in ring_paths():
        for ways in sorted({1, WAYS[isa]}):
            assert np.array_equal(_c_rows(lib, seed, moduli, n, ways), want), (isa, ways)


def test_long_inputs_and_empty_shapes() -> None:
    """Inputs that take several absorbed blocks, the longest one the sampler takes, and
    0 limbs or 0 words (nothing written)."""
    from ren.backend.cpu_sampling import _bind

    moduli = [2**30 + 3, 12289, 97, 2**31 - 1, 3]
    for isa, lib in ring_paths():
        _bind(lib)
        longest = lib.ren_cpu_sample_max_input() - len(UNIFORM_PREFIX) - 4
        for seed in (b"s" * 150, b"t" * 300, b"u" * longest):
            want = np.stack([_uniform_row(seed, i, q, 50) for i, q in enumerate(moduli)])
            for ways in sorted({1, WAYS[isa]}):
                assert np.array_equal(_c_rows(lib, seed, moduli, 50, ways), want), (isa, ways)
        out = np.zeros(4, dtype=np.uint32)
        q = np.array([97], dtype=np.uint32)
        for L, n in ((0, 4), (1, 0)):
            assert lib.ren_cpu_sample_uniform_ways(UNIFORM_PREFIX, len(UNIFORM_PREFIX), b"x", 1,
                                                   q.ctypes.data, L, n, out.ctypes.data, 0) == 0
        assert not out.any()
        assert lib.ren_cpu_sample_uniform_ways(UNIFORM_PREFIX, len(UNIFORM_PREFIX), b"x", 1,
                                               q.ctypes.data, 1, 4, out.ctypes.data, 3) == 2
        big = ctypes.create_string_buffer(longest + 1)
        assert lib.ren_cpu_sample_uniform_ways(UNIFORM_PREFIX, len(UNIFORM_PREFIX), big.raw,
                                               longest + 1, q.ctypes.data, 1, 4,
                                               out.ctypes.data, 0) == 1
