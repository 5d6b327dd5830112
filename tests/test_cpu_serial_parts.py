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
