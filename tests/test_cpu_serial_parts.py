"""The serial parts the threads helper took out of the "cpu" device's encrypt, keygen and
decrypt (issue 42 §4): samples come in the host allocator's own kind of array (so realization
can adopt one as a buffer's storage instead of copying it on one thread), and the decoder's
float pieces run side by side (tests/test_cpu_threads.py checks their words)."""

from __future__ import annotations

import numpy as np
import pytest

import ren.sampling
from ren.backend.c_host import find_cc
from ren.backend.numpy_backend import HOST_ALIGN
from ren.random import RandomSpec
from ren.ring import RingSpec

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")


@pytest.mark.parametrize("kind, params", [("uniform", ()), ("ternary", ()), ("gaussian", (3.2,))])
def test_cpu_samples_are_aligned_host_arrays_with_the_python_words(kind, params):
    """Every kind the cpu device samples comes as a C-contiguous u32 (L, N) array starting on a
    HOST_ALIGN boundary (what `HostAllocator.alloc` gives), with `ren.sampling`'s words."""
    from ren.backend import cpu

    ring = RingSpec.generate(1024, 3)
    dev = cpu.CpuDevice("cpu")
    for seed in range(4):  # a lucky alignment of a plain np.empty passes one, not four
        spec = RandomSpec(kind, params, bytes([seed]) * 32, "cpu")
        out = dev.sample(spec, ring)
        assert out.dtype == np.uint32 and out.shape == (3, 1024) and out.flags.c_contiguous
        assert out.ctypes.data % HOST_ALIGN == 0, (kind, seed, out.ctypes.data % HOST_ALIGN)
        assert np.array_equal(out, ren.sampling.sample(spec, ring))


@pytest.mark.parametrize("N, src_limbs, dst_limbs, copies", [
    (1 << 14, 3, 1, 0),   # one output row on 2 threads: rows split in pieces
    (1 << 13, 2, 3, 1),   # 3 output rows (one a copy) on 2 threads: pieces too
    (4096, 12, 8, 4),     # whole rows, the conversion's work above the team's threshold
    (4096, 2, 2, 0),      # below the threshold: no team at all
])
def test_basis_conversion_gives_the_same_words_on_one_and_two_threads(N, src_limbs, dst_limbs,
                                                                      copies):
    """The conversion's two loops share one team (one wake-up, a barrier between them): the
    words of `ren.ring.ring_convert_mont` at 1 and 2 threads, with rows copied from the
    source and rows converted."""
    from ren.backend import cpu
    from ren.kernel import RingCall
    from ren.ring import RingKernel, ring_convert_mont

    ring = RingSpec.generate(N, src_limbs + dst_limbs)
    src = RingSpec(N, ring.moduli[:src_limbs])
    dst = RingSpec(N, ring.moduli[src_limbs - copies:src_limbs - copies + dst_limbs])
    rng = np.random.default_rng(N + src_limbs)
    q = np.array(src.moduli, dtype=np.uint64).reshape(-1, 1)
    x = (rng.integers(0, 1 << 62, (src.limbs, N), dtype=np.uint64) % q).astype(np.uint32)
    x[:, :3] = (q - 1).astype(np.uint32)  # the largest residues
    fn = cpu.library_call(RingCall(RingKernel.BASIS_CONVERT, N, src.moduli, dst.moduli))
    assert fn is not None
    dev = cpu.CpuDevice("cpu")
    want = ring_convert_mont(x, src, dst)
    try:
        for t in (1, 2):
            dev.set_threads(t)
            out = np.full((dst.limbs, N), 7, np.uint32)
            fn([out, x])
            assert np.array_equal(out, want), t
    finally:
        dev.set_threads(None)
