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
    lib.ren_cpu_shake128.argtypes = [_u8p, _i64, ctypes.c_void_p, _i64]
    lib.ren_cpu_shake128.restype = None


def sample_uniform(lib: ctypes.CDLL, spec: RandomSpec, ring: RingSpec) -> np.ndarray | None:
    """`ren.sampling.sample(spec, ring)` for a uniform `spec`, sampled by the ring library
    `lib` on its threads; None when the stream input is longer than the C sampler takes (the
    caller then samples in Python)."""
    validate(spec.kind, spec.params, ring)
    if spec.kind != "uniform":
        raise ValueError(f"sample_uniform: a {spec.kind!r} spec is not uniform")
    seed = bytes(spec.seed)
    _bind(lib)
    out = np.empty((ring.limbs, ring.N), dtype=np.uint32)
    moduli = np.array(ring.moduli, dtype=np.uint32)
    too_long = lib.ren_cpu_sample_uniform(UNIFORM_PREFIX, len(UNIFORM_PREFIX), seed, len(seed),
                                          moduli.ctypes.data, ring.limbs, ring.N,
                                          out.ctypes.data)
    return None if too_long else out


def shake128(lib: ctypes.CDLL, msg: bytes, nbytes: int) -> bytes:
    """SHAKE-128(msg) to `nbytes` bytes by the ring library (to check it against hashlib)."""
    _bind(lib)
    out = np.empty(max(nbytes, 1), dtype=np.uint8)
    lib.ren_cpu_shake128(msg, len(msg), out.ctypes.data, nbytes)
    return out[:nbytes].tobytes()


__all__ = ["sample_uniform", "shake128"]
