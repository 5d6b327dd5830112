"""The "cpu" device's samplers: `ren.sampling`'s uniform residues from the ring library's own
SHAKE-128 (`cpu_ring_sample.c`: 8 limbs' streams a Keccak permutation on the AVX-512 path, 4 on
AVX2, limbs over the threads), and its small coefficients (ternary, sparse ternary, Gaussian,
uniform on an interval) from the same SHAKE-256 streams, squeezed and mapped in C; `sample`
takes any kind to its residue rows.

Key generation is mostly uniform sampling (each key-switching key holds a uniform polynomial
over the whole key ring per digit), and Python's hashlib squeezes a SHAKE stream holding the
GIL: sampled in Python, key generation ran on one core whatever ``REN_CPU_THREADS`` said.  The C
sampler reads the same streams (FIPS 202 SHAKE-128 of ``UNIFORM_PREFIX || limb || seed``) and
keeps the same words, so its residues are `ren.sampling.sample`'s at every thread count.

Small coefficients (`sample_signed`) are `ren.sampling.sample_signed`'s: a purpose's words come
in parts of `ren.sampling.PART` coefficients, each part its own SHAKE-256 stream, so a task of
the C sampler squeezes a few parts' streams at once in the lanes of one vector permutation
(eight on the AVX-512 path, at about one scalar permutation's cost) and maps their coefficients
(ternary: both its "hi" and "lo" parts; Gaussian: its two-row "gauss" parts), and the tasks run
on the threads and the board, with the GIL released throughout: a lone leaf (key generation's
secret key) or a Gaussian no longer runs one serial stream on one thread (the sparse secret's
positions: a quickselect instead of a sort of N keys, after its parts).  A
Gaussian coefficient takes libm's log and cos (on the AVX-512 path glibc's vector ones, libmvec,
eight at a time: a Gaussian at 2^16 2.1 -> 0.8 ms) where the definition takes NumPy's; the two may
differ in the last bits, which can change a coefficient only where x = normal · sigma sits at a
rounding tie, so the C mapping leaves the coefficients within a small margin of a half-integer
(~1e-8 of them) to NumPy, computed from their words by the definition's own
`ren.sampling.gaussian_from_words`.

Realization draws a graph's random leaves side by side on its caller and a pool, as many at a
time as the device has threads (`ren.realization.sample_random_leaves`); a sampler called on one
of those threads (`side_by_side`) shares the device's threads with the other samplers running at the
time instead of starting a full team of its own under each pool thread, and posts what it can
divide (a uniform's limbs, a mapping's chunks, the residues' limbs, the second of two streams)
on a board (`cpu_ring_share.c`) that the pool threads done with their own leaves join
(`sample` calls `help_side_by_side` after a leaf): a team fixed when a sampler starts no longer
leaves a thread idle while the other leaf runs on (key generation's 59-limb uniform beside a
Gaussian, encryption's ternary after its two Gaussians).  The words never depend on who ran
what.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from collections.abc import Iterator

import numpy as np

from ren.backend.numpy_backend import host_empty
from ren.errors import ParameterError, is_int
from ren.random import RandomSpec
from ren.ring import RingSpec
from ren.sampling import (
    ROWS,
    UNIFORM_PREFIX,
    drawing_side_by_side,
    gaussian_bound,
    gaussian_from_words,
    stream_prefix,
    stream_words,
)
from ren.sampling import validate as validate_spec

_u8p, _i64 = ctypes.c_char_p, ctypes.c_longlong


def _bind(lib: ctypes.CDLL) -> None:
    # once per library (a flag on it): setting the ~20 argument types took ~13 us holding the
    # GIL, and a side-by-side leaf bound 3-4 times while its sibling's Python waited
    if getattr(lib, "_ren_sampling_bound", False):
        return
    lib.ren_cpu_sample_uniform.argtypes = [_u8p, _i64, _u8p, _i64, ctypes.c_void_p, _i64, _i64,
                                           ctypes.c_void_p]
    lib.ren_cpu_sample_uniform.restype = ctypes.c_int
    lib.ren_cpu_sample_uniform_ways.argtypes = [*lib.ren_cpu_sample_uniform.argtypes,
                                                ctypes.c_int]
    lib.ren_cpu_sample_uniform_ways.restype = ctypes.c_int
    lib.ren_cpu_keccak_ways.restype = ctypes.c_int
    lib.ren_cpu_shake.argtypes = [ctypes.c_int, _u8p, _i64, ctypes.c_void_p, _i64]
    lib.ren_cpu_shake.restype = None
    _p = ctypes.c_void_p
    lib.ren_cpu_map_interval.argtypes = [_p, _p, ctypes.c_uint64, _i64, _i64, _p]
    lib.ren_cpu_map_interval.restype = None
    lib.ren_cpu_map_sparse.argtypes = [_p, _p, _i64, _i64, _p]
    lib.ren_cpu_map_sparse.restype = ctypes.c_int
    lib.ren_cpu_map_gaussian.argtypes = [_p, _p, ctypes.c_double, _i64, ctypes.c_double, _i64,
                                         _p, _p, _i64]
    lib.ren_cpu_map_gaussian.restype = _i64
    lib.ren_cpu_sample_interval.argtypes = [_u8p, _i64, _u8p, _i64, _u8p, _i64, ctypes.c_uint64,
                                            _i64, _i64, _p]
    lib.ren_cpu_sample_interval.restype = ctypes.c_int
    lib.ren_cpu_sample_sparse.argtypes = [_u8p, _i64, _u8p, _i64, _u8p, _i64, _i64, _i64, _p]
    lib.ren_cpu_sample_sparse.restype = ctypes.c_int
    lib.ren_cpu_sample_gaussian.argtypes = [_u8p, _i64, _u8p, _i64, ctypes.c_double, _i64,
                                            ctypes.c_double, _i64, _p, _p, _i64]
    lib.ren_cpu_sample_gaussian.restype = _i64
    lib.ren_cpu_gauss_vector.argtypes = [ctypes.c_int]
    lib.ren_cpu_gauss_vector.restype = ctypes.c_int
    lib.ren_cpu_shake256_parted.argtypes = [_u8p, _i64, _u8p, _i64, ctypes.c_int, _i64, _p]
    lib.ren_cpu_shake256_parted.restype = ctypes.c_int
    lib.ren_cpu_signed_residues.argtypes = [_p, _p, _i64, _i64, _p]
    lib.ren_cpu_signed_residues.restype = None
    lib.ren_cpu_signed_residues_form.argtypes = [_p, _p, _i64, _i64, _p, ctypes.c_int]
    lib.ren_cpu_signed_residues_form.restype = None
    lib.ren_cpu_sample_uniform_form.argtypes = [*lib.ren_cpu_sample_uniform_ways.argtypes,
                                                ctypes.c_int]
    lib.ren_cpu_sample_uniform_form.restype = ctypes.c_int
    lib.ren_cpu_sample_threads.argtypes = [ctypes.c_int]
    lib.ren_cpu_sample_threads.restype = None
    lib.ren_cpu_sample_threads_here.restype = ctypes.c_int
    lib.ren_cpu_sample_side_by_side.argtypes = [ctypes.c_int]
    lib.ren_cpu_sample_side_by_side.restype = None
    lib.ren_cpu_sample_help.argtypes = [_i64]
    lib.ren_cpu_sample_help.restype = ctypes.c_int
    lib.ren_cpu_sample_help_joins.restype = _i64
    lib._ren_sampling_bound = True  # type: ignore[attr-defined]  # (a flag on the CDLL)


#: the name prefix of `ren.realization`'s pool, which draws a realization's random leaves side
#: by side, as many at a time as the device has threads (`sample_random_leaves`)
SIDE_BY_SIDE_PREFIX = "ren-sampling"


def side_by_side() -> bool:
    """Whether this thread is one of the pool's that draw a realization's leaves side by side:
    a sampler called on it shares the device's threads with the others running at the time
    (cpu_ring_sample.c: REN_CPU_THREADS / their number, at least one, each time it starts a
    team), instead of starting a full team under each pool thread (twice as many busy threads
    as cores, and a member preempted holding the last limb keeps its team waiting).  A thread
    inside `ren.sampling.side_by_side_here` (a realization's caller that takes leaves beside the
    pool) is one too."""
    return drawing_side_by_side() or \
        threading.current_thread().name.startswith(SIDE_BY_SIDE_PREFIX)


def sampler_threads(lib: ctypes.CDLL) -> int:
    """The OpenMP threads a C sampler of `lib` called now on this thread would start."""
    _bind(lib)
    return int(lib.ren_cpu_sample_threads_here())


@contextlib.contextmanager
def _on_threads(lib: ctypes.CDLL, threads: int | None) -> Iterator[None]:
    """Inside the block the C samplers called on this OS thread (a thread-local setting of the
    library) run on `threads` threads; with None, on the device's, shared with the other
    side-by-side samplers when this is a side-by-side thread (`side_by_side`).  The words never
    depend on it."""
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                or not 1 <= threads <= 256):
        raise ParameterError(f"sampler threads must be an int in [1, 256] or None (the "
                             f"device's), got {threads!r}")
    _bind(lib)
    shared = threads is None and side_by_side()
    lib.ren_cpu_sample_threads(threads or 0)
    lib.ren_cpu_sample_side_by_side(int(shared))
    try:
        yield
    finally:
        lib.ren_cpu_sample_side_by_side(0)
        lib.ren_cpu_sample_threads(0)


#: a pool thread done with its leaf waits for a sampler's next job while the board's last event
#: (a post, a close, a leaf's end) is less than this old: enough for a sampler's next stretch
#: within one C call (~1 us away); not for one a Python step away (~50-100 us), because the pool
#: thread may have a leaf to take: at 150 us, two threads ending together each waited out the
#: other's end before taking encryption's last leaf (its helper then came too late)
HELP_GRACE_S = 20e-6


def help_side_by_side(lib: ctypes.CDLL, grace: float | None = None) -> int:
    """Joins the side-by-side samplers' posted jobs (`cpu_ring_share.c`) on this thread, one
    after another, until none is left and the board has been quiet for `grace` seconds, with the
    GIL released; returns how many it joined."""
    _bind(lib)
    grace = HELP_GRACE_S if grace is None else grace
    return int(lib.ren_cpu_sample_help(max(0, round(grace * 1e9))))


def help_joins(lib: ctypes.CDLL) -> int:
    """How many jobs helpers (`help_side_by_side`) have joined since `lib` loaded."""
    _bind(lib)
    return int(lib.ren_cpu_sample_help_joins())


def keccak_ways(lib: ctypes.CDLL) -> int:
    """How many limbs' SHAKE-128 streams one Keccak permutation of the ring library `lib`
    runs: 8 on the AVX-512 path, 4 on AVX2, 1 on the scalar path."""
    _bind(lib)
    return int(lib.ren_cpu_keccak_ways())


def sample_uniform(lib: ctypes.CDLL, spec: RandomSpec, ring: RingSpec,
                   ways: int | None = None, stored: bool = False) -> np.ndarray | None:
    """`ren.sampling.sample(spec, ring)` for a uniform `spec`, sampled by the ring library
    `lib` on its threads, `ways` limbs' streams a permutation (default: `keccak_ways(lib)`;
    1 runs one stream at a time, the scalar permutation, on any path); None when the stream
    input is longer than the C sampler takes (the caller then samples in Python).  With
    ``stored=True`` the residues in storage form, r·2^32 mod q_i (what every device stores)."""
    validate_spec(spec.kind, spec.params, ring)
    if spec.kind != "uniform":
        raise ValueError(f"sample_uniform: a {spec.kind!r} spec is not uniform")
    seed = bytes(spec.seed)
    _bind(lib)
    out = host_empty((ring.limbs, ring.N))  # the host allocator's own kind of array
    moduli = np.array(ring.moduli, dtype=np.uint32)
    if ways is not None and ways not in (1, keccak_ways(lib)):
        raise ValueError(f"sample_uniform: this library runs 1 or {keccak_ways(lib)} streams "
                         f"a permutation, not {ways}")
    status = lib.ren_cpu_sample_uniform_form(UNIFORM_PREFIX, len(UNIFORM_PREFIX), seed,
                                             len(seed), moduli.ctypes.data, ring.limbs, ring.N,
                                             out.ctypes.data, ways or 0, int(stored))
    return None if status else out


#: a Gaussian coefficient whose x = normal * sigma lies within TIE_EPS (1 + |x| + sigma) of a
#: half-integer is computed by NumPy (module docstring): far above the last-bit differences of
#: two libms' log and cos (~1e-16 relative), and rare (~2e-9 (1 + sigma) of the coefficients)
TIE_EPS = 1e-9


def sample_signed(lib: ctypes.CDLL, spec: RandomSpec, N: int, tie_eps: float = TIE_EPS,
                  words: bool = False) -> np.ndarray:
    """`ren.sampling.sample_signed(spec, N)`: the N int64 coefficients of a small-coefficient
    spec, by the ring library `lib` on its threads: its SHAKE-256 streams squeezed (two at once
    where a kind has two) and mapped in C, or with ``words=True`` the words from
    `ren.sampling.stream_words` (hashlib) mapped in C.  `tie_eps` is the Gaussian's margin
    around rounding ties left to NumPy (module docstring; tests raise it to send every
    coefficient there)."""
    kind, params, seed = spec.kind, spec.params, bytes(spec.seed)
    if kind == "ternary":
        params, kind = (-1, 1), "uniform_on_interval"
    _bind(lib)
    out = np.empty(N, dtype=np.int64)
    if kind == "uniform_on_interval":
        lo, hi = params
        if not (is_int(lo) and is_int(hi)) or not 0 <= hi - lo < 1 << 32 \
                or max(abs(lo), abs(hi)) >= 1 << 62:
            raise ParameterError(f"uniform_on_interval: need ints lo <= hi, hi - lo < 2^32, "
                                 f"|lo|, |hi| < 2^62, got lo={lo!r}, hi={hi!r}")
        if words:
            high, low = stream_words(seed, "hi", N), stream_words(seed, "lo", N)
            lib.ren_cpu_map_interval(high.ctypes.data, low.ctypes.data, hi - lo + 1, lo, N,
                                     out.ctypes.data)
            return out
        p_hi, p_lo = stream_prefix("hi"), stream_prefix("lo")
        status = lib.ren_cpu_sample_interval(p_hi, len(p_hi), p_lo, len(p_lo), seed, len(seed),
                                             hi - lo + 1, lo, N, out.ctypes.data)
        if status == 2:  # a seed longer than the C sampler takes: hashlib's words, mapped in C
            return sample_signed(lib, spec, N, tie_eps, words=True)
        if status:
            raise _no_memory(N, kind)
        return out
    if kind == "sparse_ternary":
        (h,) = params
        if not is_int(h) or not 0 <= h <= N:
            raise ParameterError(f"sparse_ternary: hamming_weight must be an int in [0, N={N}], "
                                 f"got {h!r}")
        if words:
            keys, signs = stream_words(seed, "positions", N), stream_words(seed, "signs", h)
            status = lib.ren_cpu_map_sparse(keys.ctypes.data, signs.ctypes.data, h, N,
                                            out.ctypes.data)
        else:
            p_pos, p_sign = stream_prefix("positions"), stream_prefix("signs")
            status = lib.ren_cpu_sample_sparse(p_pos, len(p_pos), p_sign, len(p_sign), seed,
                                               len(seed), h, N, out.ctypes.data)
            if status == 2:  # a seed longer than the C sampler takes
                return sample_signed(lib, spec, N, tie_eps, words=True)
        if status:
            raise _no_memory(N, kind)
        return out
    if kind == "gaussian":
        (sigma,) = params
        ties = np.empty(max(N, 1), dtype=np.int64)
        args = (float(sigma), gaussian_bound(sigma), tie_eps, N, out.ctypes.data,
                ties.ctypes.data, N)
        w = stream_words(seed, "gauss", 2 * N) if words else None
        if w is not None:
            count = lib.ren_cpu_map_gaussian(w.ctypes.data, w[N:].ctypes.data, *args)
        else:
            prefix = stream_prefix("gauss")
            count = lib.ren_cpu_sample_gaussian(prefix, len(prefix), seed, len(seed), *args)
            if count == -1:  # a seed longer than the C sampler takes
                return sample_signed(lib, spec, N, tie_eps, words=True)
        if count < 0:
            raise _no_memory(N, kind)
        if count:  # the coefficients at a rounding tie: the definition's NumPy, same words
            w = stream_words(seed, "gauss", 2 * N) if w is None else w
            at = ties[:count]
            out[at] = gaussian_from_words(w[at], w[N + at], sigma)
        return out
    raise ParameterError(f"{kind!r} is not a small-coefficient distribution")


def shake256_words(lib: ctypes.CDLL, seed: bytes, purpose: str, count: int) -> np.ndarray | None:
    """`ren.sampling.stream_words(seed, purpose, count)` squeezed by the ring library `lib` (its
    parts in the lanes of its vector permutation, on its threads: to check them against
    hashlib's); None when the seed is longer than the C sampler takes."""
    _bind(lib)
    rows = ROWS.get(purpose, 1)
    if count % rows:
        raise ValueError(f"{purpose!r} takes {rows} words an index, not {count} words in all")
    prefix, seed = stream_prefix(purpose), bytes(seed)
    out = np.empty(max(count, 1), dtype=np.uint64)
    if lib.ren_cpu_shake256_parted(prefix, len(prefix), seed, len(seed), rows, count // rows,
                                   out.ctypes.data):
        return None
    return out[:count]


def _no_memory(N: int, kind: str) -> MemoryError:
    return MemoryError(f"the C sampler could not allocate its buffers for {N} {kind} "
                       "coefficients")


def sample(lib: ctypes.CDLL, spec: RandomSpec, ring: RingSpec, threads: int | None = None,
           stored: bool = False) -> np.ndarray | None:
    """`ren.sampling.sample(spec, ring)`: the residues (L, N) u32 of any RANDOM spec, by the
    ring library `lib` (uniform: `sample_uniform`; the rest: `sample_signed`, then every limb's
    residues in C), on `threads` threads (None: the device's, shared with the other samplers
    running at the time on a `side_by_side` thread); None where the C sampler does not take the
    spec (a uniform seed longer than it takes), which the caller then samples in Python.  The
    same words on any number of threads.  A side-by-side thread then helps the others
    (`help_side_by_side`) before it returns to the pool.  With ``stored=True`` the rows are in
    storage form, r·2^32 mod q_i (one Shoup product a word in the C pass that writes them), so
    realization need not convert them (None where the C sampler declines, as without)."""
    with _on_threads(lib, threads):
        out = _sample(lib, spec, ring, stored)
        if threads is None and side_by_side():  # still marked: its end wakes the other helpers
            help_side_by_side(lib)
        return out


def _sample(lib: ctypes.CDLL, spec: RandomSpec, ring: RingSpec, stored: bool
            ) -> np.ndarray | None:
    if spec.kind == "uniform":
        return sample_uniform(lib, spec, ring, stored=stored)
    validate_spec(spec.kind, spec.params, ring)
    coeffs = sample_signed(lib, spec, ring.N)
    out = host_empty((ring.limbs, ring.N))  # the host allocator's own kind of array
    moduli = np.array(ring.moduli, dtype=np.uint32)
    lib.ren_cpu_signed_residues_form(coeffs.ctypes.data, moduli.ctypes.data, ring.limbs,
                                     ring.N, out.ctypes.data, int(stored))
    return out


def shake128(lib: ctypes.CDLL, msg: bytes, nbytes: int, bits: int = 128) -> bytes:
    """SHAKE-128(msg) (or SHAKE-256 for ``bits=256``) to `nbytes` bytes by the ring library
    (to check it against hashlib)."""
    _bind(lib)
    out = np.empty(max(nbytes, 1), dtype=np.uint8)
    lib.ren_cpu_shake(bits, msg, len(msg), out.ctypes.data, nbytes)
    return out[:nbytes].tobytes()


__all__ = ["HELP_GRACE_S", "SIDE_BY_SIDE_PREFIX", "TIE_EPS", "help_joins", "help_side_by_side",
           "keccak_ways", "sample", "sample_signed", "sample_uniform",
           "sampler_threads", "shake128", "shake256_words", "side_by_side"]
