"""The "cpu" device's sampler: `ren.sampling`'s uniform residues from the ring library's own
SHAKE-128 (`cpu_ring_sample.c`), one limb per thread.

Key generation is mostly uniform sampling (each key-switching key holds a uniform polynomial
over the whole key ring per digit), and Python's hashlib squeezes a SHAKE stream holding the
GIL: sampled in Python, key generation ran on one core whatever ``REN_CPU_THREADS`` said.  The C
sampler reads the same streams (FIPS 202 SHAKE-128 of ``UNIFORM_PREFIX || limb || seed``) and
keeps the same words, so its residues are `ren.sampling.sample`'s at every thread count.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ren.random import RandomSpec
from ren.ring import RingSpec
from ren.sampling import UNIFORM_PREFIX, validate

_u8p, _i64 = ctypes.c_char_p, ctypes.c_longlong


def _bind(lib: ctypes.CDLL) -> None:
    # idempotent: the same argument types on every call
    lib.ren_cpu_sample_uniform.argtypes = [_u8p, _i64, _u8p, _i64, ctypes.c_void_p, _i64, _i64,
                                           ctypes.c_void_p]
    lib.ren_cpu_sample_uniform.restype = ctypes.c_int
    lib.ren_cpu_sample_uniform_ways.argtypes = [*lib.ren_cpu_sample_uniform.argtypes,
                                                ctypes.c_int]
    lib.ren_cpu_sample_uniform_ways.restype = ctypes.c_int
    lib.ren_cpu_keccak_ways.restype = ctypes.c_int
    lib.ren_cpu_shake128.argtypes = [_u8p, _i64, ctypes.c_void_p, _i64]
    lib.ren_cpu_shake128.restype = None


def keccak_ways(lib: ctypes.CDLL) -> int:
    """How many limbs' SHAKE-128 streams one Keccak permutation of the ring library `lib`
    runs: 8 on the AVX-512 path, 4 on AVX2, 1 on the scalar path."""
    _bind(lib)
    return int(lib.ren_cpu_keccak_ways())


def sample_uniform(lib: ctypes.CDLL, spec: RandomSpec, ring: RingSpec,
                   ways: int | None = None) -> np.ndarray | None:
    """`ren.sampling.sample(spec, ring)` for a uniform `spec`, sampled by the ring library
    `lib` on its threads, `ways` limbs' streams a permutation (default: `keccak_ways(lib)`;
    1 runs one stream at a time, the scalar permutation, on any path); None when the stream
    input is longer than the C sampler takes (the caller then samples in Python)."""
    validate(spec.kind, spec.params, ring)
    if spec.kind != "uniform":
        raise ValueError(f"sample_uniform: a {spec.kind!r} spec is not uniform")
    seed = bytes(spec.seed)
    _bind(lib)
    out = np.empty((ring.limbs, ring.N), dtype=np.uint32)
    moduli = np.array(ring.moduli, dtype=np.uint32)
    if ways is not None and ways not in (1, keccak_ways(lib)):
        raise ValueError(f"sample_uniform: this library runs 1 or {keccak_ways(lib)} streams "
                         f"a permutation, not {ways}")
    status = lib.ren_cpu_sample_uniform_ways(UNIFORM_PREFIX, len(UNIFORM_PREFIX), seed,
                                             len(seed), moduli.ctypes.data, ring.limbs, ring.N,
                                             out.ctypes.data, ways or 0)
    return None if status else out


def shake128(lib: ctypes.CDLL, msg: bytes, nbytes: int) -> bytes:
    """SHAKE-128(msg) to `nbytes` bytes by the ring library (to check it against hashlib)."""
    _bind(lib)
    out = np.empty(max(nbytes, 1), dtype=np.uint8)
    lib.ren_cpu_shake128(msg, len(msg), out.ctypes.data, nbytes)
    return out[:nbytes].tobytes()


__all__ = ["keccak_ways", "sample_uniform", "shake128"]
