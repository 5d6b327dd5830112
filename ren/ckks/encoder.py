"""The CKKS encoder: N/2 complex slots <-> a real polynomial through the canonical embedding.

Slot j is the evaluation m(ζ^(5^j)) with ζ = exp(iπ/N).  Then X -> X^(5^k) (`Poly.rotate(k)`)
moves slot j + k to slot j (a left rotation by k) and X -> X^-1 conjugates every slot, because m
has real coefficients.  All evaluations at the odd powers ζ^(2t+1) are one length-N FFT of the
twisted coefficients m_i·ζ^i, so both directions cost O(N log N) with NumPy's FFT.
"""

from __future__ import annotations

import ctypes
import itertools
import math
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from functools import lru_cache
from numbers import Number
from typing import Any

import numpy as np

from ren import settings
from ren.ckks.ciphertext import Plaintext
from ren.ckks.errors import DecodeOverflowError, ParamsMismatchError, ScaleOutOfBoundsError
from ren.ckks.params import CKKSParams, log2_exact, scale_arg
from ren.errors import ParameterError, RenError, ShapeError, check_int_range
from ren.ir import storage_buffer
from ren.ops import Op
from ren.poly import Poly
from ren.realization import host_residues
from ren.ring import RingSpec, get_tables, rns
from ren.ring.rns import centered_floats

#: Coefficients stay below 2^62 in magnitude on the fast (int64) path.
_INT64_SAFE = float(1 << 62)
#: Scaled values below this stay far from float64's overflow (2^1024) on the float path.
_FLOAT_SAFE = 2.0 ** 960

#: columns (coefficients) per piece of the decoder's CRT lift: pieces of this width (and the lift
#: of a ring of fewer than two of them) are the same at every REN_CPU_THREADS, so the floats are
#: too; they run on min(REN_CPU_THREADS, pieces) threads (NumPy releases the GIL).  Lifting the
#: (L, N) residues in pieces of 8192 columns is also ~2x faster on one thread (N = 2^16, 21
#: limbs: 15 ms against 32 ms): each piece's rows stay in cache.
LIFT_PIECE = 8192
#: the lift's thread pools, by (process, workers): a process forked from one that had a pool
#: (a worker of ren.distributed, say) has none of its threads, so it makes its own
_pools: dict[tuple[int, int], ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()
_POOL_PREFIX = "ren-lift"


def _pool(workers: int) -> ThreadPoolExecutor:
    key = (os.getpid(), workers)
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = ThreadPoolExecutor(workers, thread_name_prefix=_POOL_PREFIX)
        return pool


def _side_by_side(fn: Callable[[int], Any], starts: Sequence[int], workers: int) -> list[Any]:
    """[fn(c) for c in starts] on the caller and up to `workers` − 1 lift-pool threads, each
    taking the next start nobody has taken yet (the caller the first): a helper that wakes late
    (a descheduled or halted core) takes fewer, or none, instead of holding the caller, which
    goes on with the rest, and a helper task that has not started when the caller is through is
    cancelled.  One task (one wake-up) a helper; each result is fn's own whichever thread
    computes it, in the order of `starts`."""
    workers = max(1, min(workers, len(starts)))
    if workers == 1:
        return [fn(c) for c in starts]
    out: list[Any] = [None] * len(starts)
    taken = itertools.count()
    lock = threading.Lock()
    failed: list[bool] = []

    def drain(i: int | None = None) -> None:
        while not failed:
            if i is None:
                with lock:
                    i = next(taken)
            if i >= len(starts):
                return
            try:
                out[i] = fn(starts[i])
            except BaseException:
                failed.append(True)  # the others take no more
                raise
            i = None

    mine = next(taken)  # the caller's first, before any helper can take it
    pool = _pool(workers - 1)
    rest = [pool.submit(drain) for _ in range(workers - 1)]
    try:
        drain(mine)
    finally:
        for f in rest:
            if not f.cancel():  # started: it may hold a piece; wait for it (and its error)
                f.result()
    return out


def _lift(words: np.ndarray, ring: RingSpec, shift: int, bits: int,
          compiled: bool = False) -> np.ndarray:
    """`centered_floats(words, ring, shift, bits=bits, montgomery=True)` of Montgomery-form
    `words` (as every device stores them), in pieces of LIFT_PIECE columns over REN_CPU_THREADS
    threads: each piece is lifted by itself, in cache.  A piece whose
    values pass the prefix bound falls back to the whole basis by itself, where the whole array
    would have fallen back at once; so when any value reaches 2^(bits+1) (the only case where a
    piece can have fallen back) the lift runs again on the whole array: the floats are
    `centered_floats`'s own in every case.  `compiled` (words of a compiled device): the prefix
    digits and the check run compiled first (`_lift_compiled`: the same words, no GIL)."""
    n = words.shape[1]
    if compiled and n >= 2 * LIFT_PIECE:
        x = _lift_compiled(words, ring, shift, bits)
        if x is not None:
            return x
    if n < 2 * LIFT_PIECE or n % LIFT_PIECE:
        return centered_floats(words, ring, shift, bits=bits, montgomery=True)
    starts = range(0, n, LIFT_PIECE)

    def piece(c: int) -> np.ndarray:
        return centered_floats(words[:, c:c + LIFT_PIECE], ring, shift, bits=bits,
                               montgomery=True)

    workers = min(settings.get("REN_CPU_THREADS"), len(starts))
    parts = _side_by_side(piece, starts, workers)
    x = np.concatenate(parts)
    if float(np.max(np.abs(x), initial=0.0)) >= math.ldexp(1.0, bits + 1 - shift):
        return centered_floats(words, ring, shift, bits=bits, montgomery=True)
    return x


#: the compiled prefix lift (`_lift_compiled`): per column, the Montgomery words of the k prefix
#: rows to standard form, Garner's digits and sign (exactly `rns._garner_digits`'s), and the
#: check of every other row (exactly `rns._matches_float`'s: float64 sums of integers below
#: 2^53, in any order); columns in blocks over the OpenMP threads.  Returns the count of columns
#: whose check fails.
_LIFT_C = r"""
#include <stdint.h>
#include <math.h>
typedef uint32_t u32; typedef uint64_t u64; typedef int64_t i64;
#define REN_LIFT_MAX_K 32
#define REN_LIFT_BLOCK 256
long long ren_lift_prefix(const u32* w, long long L, long long n, long long k,
                          const u64* q, const u64* qneg, const u64* red, const u64* gw,
                          const u64* gws, const u64* half,
                          const double* m, const double* qf, const double* qinv,
                          u64* dig, unsigned char* above, int threads) {
  long long bad = 0;
  const i64 mk = 2 * k + 1;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) reduction(+:bad) \
    if(threads > 1)
#endif
  for (i64 c0 = 0; c0 < n; c0 += REN_LIFT_BLOCK) {
    const i64 c1 = c0 + REN_LIFT_BLOCK < n ? c0 + REN_LIFT_BLOCK : n;
    const i64 nc = c1 - c0;
    double rows[2 * REN_LIFT_MAX_K + 1][REN_LIFT_BLOCK];
    u64 t[REN_LIFT_MAX_K][REN_LIFT_BLOCK];  /* row j becomes digit v_j (loops over columns) */
    for (i64 i = 0; i < k; ++i) {  /* from Montgomery form: x * 2^-32 mod q_i */
      const u64 qi = q[i], qn = qneg[i];
      for (i64 c = 0; c < nc; ++c) {
        u64 x = w[i * n + c0 + c];
        const u64 mm = (x * qn) & 0xFFFFFFFFULL;
        x = (x + mm * qi) >> 32;
        t[i][c] = x >= qi ? x - qi : x;
      }
    }
    for (i64 i = 0; i + 1 < k; ++i)  /* Garner: row j becomes (t_j - v_i) q_i^-1 mod q_j */
      for (i64 j = i + 1; j < k; ++j) {
        const u64 qj = q[j], rj = red[j], g = gw[j * k + i], gs = gws[j * k + i];
        for (i64 c = 0; c < nc; ++c) {
          const u64 v = t[i][c];
          u64 vr = v - ((v * rj) >> 32) * qj;  /* v mod q_j, first in [0, 2 q_j) */
          vr = vr >= qj ? vr - qj : vr;
          const u64 d = t[j][c] >= vr ? t[j][c] - vr : t[j][c] + qj - vr;
          const u64 r = d * g - ((d * gs) >> 32) * qj;  /* Shoup: d g mod q_j, in [0, 2 q_j) */
          t[j][c] = r >= qj ? r - qj : r;
        }
      }
    unsigned char ab[REN_LIFT_BLOCK], eq[REN_LIFT_BLOCK];
    for (i64 c = 0; c < nc; ++c) { ab[c] = 0; eq[c] = 1; }
    for (i64 j = k - 1; j >= 0; --j) {  /* x > floor(Q_k/2): digits compared from the top */
      const u64 h = half[j];
      for (i64 c = 0; c < nc; ++c) {
        ab[c] |= eq[c] & (t[j][c] > h);
        eq[c] &= t[j][c] == h;
      }
    }
    for (i64 c = 0; c < nc; ++c) {
      above[c0 + c] = ab[c];
      rows[2 * k][c] = (double)ab[c];
    }
    for (i64 i = 0; i < k; ++i)
      for (i64 c = 0; c < nc; ++c) {
        dig[i * n + c0 + c] = t[i][c];
        rows[i][c] = (double)(t[i][c] & 0xFFFFULL);
        rows[k + i][c] = (double)(t[i][c] >> 16);
      }
    for (i64 j = k; j < L; ++j) {  /* the check, vectorised over the block's columns */
      const double* mr = m + (j - k) * mk;
      const double qj = qf[j - k], qi = qinv[j - k];
      double x[REN_LIFT_BLOCK];
      for (i64 c = 0; c < nc; ++c) x[c] = -(double)w[j * n + c0 + c];
      for (i64 i = 0; i < mk; ++i) {
        const double mi = mr[i];
        for (i64 c = 0; c < nc; ++c) x[c] += rows[i][c] * mi;
      }
      for (i64 c = 0; c < nc; ++c) bad += rint(x[c] * qi) * qj != x[c];
    }
  }
  return bad;
}
"""
_lift_lib: list[Any] = []  # [the loaded library, or None where it cannot be built]
_lift_lock = threading.Lock()


def _lift_library() -> Any:
    """The compiled prefix lift (ctypes), built once per process; None without a C compiler."""
    with _lift_lock:
        if not _lift_lib:
            try:
                from ren.backend import c_host, cpu
                cpu.omp_environment()
                lib = c_host.compile_source(_LIFT_C, (*cpu.cpu_flags(), "-lm"), cpu.cache_dir())
                fn = lib.ren_lift_prefix
                fn.restype = ctypes.c_longlong
                fn.argtypes = [ctypes.c_void_p, ctypes.c_longlong, ctypes.c_longlong,
                               ctypes.c_longlong, *[ctypes.c_void_p] * 11, ctypes.c_int]
                _lift_lib.append(fn)
            except (RenError, OSError, AttributeError):
                _lift_lib.append(None)
        return _lift_lib[0]


@lru_cache(maxsize=64)
def _compiled_lift_constants(ring: RingSpec, k: int) -> tuple[np.ndarray, ...]:
    """The compiled lift's tables: q, −q^-1 mod 2^32 and floor(2^32/q) (rows < k), q_i^-1 mod
    q_j with its Shoup companion (k × k), the digits of floor(Q_k/2), and
    `rns._float_check_constants(ring, k, montgomery=True)` (as `rns._garner_constants`)."""
    t = get_tables(ring)
    gw = np.zeros((k, k), dtype=np.uint64)
    gws = np.zeros((k, k), dtype=np.uint64)
    for j in range(k):
        for i in range(j):
            gw[j, i] = pow(ring.moduli[i], -1, ring.moduli[j])
            gws[j, i] = (int(gw[j, i]) << 32) // ring.moduli[j]
    red = np.array([(1 << 32) // qq for qq in ring.moduli[:k]], dtype=np.uint64)
    half, digits = ring.sub(0, k).Q // 2, []
    for qq in ring.moduli[:k]:
        digits.append(half % qq)
        half //= qq
    m, qf, qinv = rns._float_check_constants(ring, k, True)
    return (np.ascontiguousarray(t.q64[:k, 0]), np.ascontiguousarray(t.qneg[:k, 0]), red, gw,
            gws, np.array(digits, dtype=np.uint64), np.ascontiguousarray(m),
            np.ascontiguousarray(qf[:, 0]), np.ascontiguousarray(qinv[:, 0]))


def _host_words(p: Poly) -> np.ndarray:
    """A realized Poly's words as its device stores them (Montgomery form): the host array
    itself where the device keeps it in host memory (read only; `p` holds it), else a copy
    (`host_residues`)."""
    leaf = p.node.src[0]
    if leaf.op is not Op.CONST:
        words = storage_buffer(leaf).array()
        if isinstance(words, np.ndarray) and words.dtype == np.uint32:
            return words
    return host_residues(p.node, montgomery=True)


def _threads(device: str) -> int:
    """The threads the host work of an encoding for `device` may take: the "cpu" device's
    (`ren.backend.cpu.threads()`), one for any other."""
    if not _compiled_device(device):
        return 1
    from ren.backend.cpu import threads
    return threads()


def _compiled_device(name: str) -> bool:
    """Whether device `name` runs compiled kernels (the "cpu" device, whatever its name)."""
    from ren.backend import get_device
    from ren.backend.cpu import CpuDevice
    return isinstance(get_device(name), CpuDevice)


def _lift_compiled(words: np.ndarray, ring: RingSpec, shift: int, bits: int
                   ) -> np.ndarray | None:
    """`_lift` with the prefix digits and the check compiled (`_LIFT_C`, on the "cpu" device's
    thread count `ren.backend.cpu.threads()`, without the GIL): the same digits and the same
    decision, exact integer work; the floats are made from the digits by `rns._to_floats` in
    LIFT_PIECE pieces as `_lift`'s pieces make them.  None where it does not apply (no
    compiler; a prefix of more than 32 moduli or of the whole basis; a ring `_lift` does not
    split), or where a column fails the check."""
    n = words.shape[1]
    k = rns._prefix_for(ring, bits)
    if not (k < ring.limbs and k <= rns._FLOAT_CHECK_MAX_K) or n % LIFT_PIECE:
        return None
    fn = _lift_library()
    if fn is None:
        return None
    w = np.ascontiguousarray(words, dtype=np.uint32)
    consts = _compiled_lift_constants(ring, k)
    dig = np.empty((k, n), dtype=np.uint64)
    above = np.empty(n, dtype=np.uint8)
    from ren.backend.cpu import threads
    bad = fn(w.ctypes.data, ring.limbs, n, k, *(c.ctypes.data for c in consts),
             dig.ctypes.data, above.ctypes.data, threads())
    if bad:
        return None
    sub, ab = ring.sub(0, k), above.view(bool)
    x = np.empty(n)

    def floats(c: int) -> None:
        x[c:c + LIFT_PIECE] = rns._to_floats(dig[:, c:c + LIFT_PIECE], ab[c:c + LIFT_PIECE],
                                             sub, shift)

    # the pieces side by side on the threads (NumPy and single-threaded BLAS release the GIL):
    # each piece's floats are the same whichever thread makes them
    starts = range(0, n, LIFT_PIECE)
    workers = min(threads(), len(starts))
    _side_by_side(floats, starts, workers)
    if float(np.max(np.abs(x), initial=0.0)) >= math.ldexp(1.0, bits + 1 - shift):
        return None  # where `_lift` lifts the whole array again: let it
    return x


@lru_cache(maxsize=16)
def slot_powers(N: int) -> np.ndarray:
    """e_j = 5^j mod 2N for the N/2 slots: slot j is the evaluation at ζ^(e_j) (read-only)."""
    e = np.empty(N // 2, dtype=np.int64)
    g = 1
    for j in range(N // 2):
        e[j] = g
        g = g * 5 % (2 * N)
    e.flags.writeable = False
    return e


@lru_cache(maxsize=16)
def _tables(N: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t_j, t'_j, ζ^i): slot j sits at odd power 2t_j+1 = 5^j mod 2N, its conjugate at 2t'_j+1
    = -5^j mod 2N; ζ^i are the twist factors."""
    e = slot_powers(N)
    t = (e - 1) // 2
    tc = (2 * N - e - 1) // 2
    twist = np.exp(1j * np.pi * np.arange(N) / N)
    for a in (t, tc, twist):
        a.flags.writeable = False
    return t, tc, twist


@lru_cache(maxsize=16)
def _untwist(N: int) -> np.ndarray:
    """ζ^-i = conj(ζ^i) (exact), kept instead of conjugated at every encoding (read-only)."""
    u = np.conj(_tables(N)[2])
    u.flags.writeable = False
    return u


#: from this ring degree up `embed_inverse` takes its length-N transform as two independent
#: halves (below it one length-N FFT, as before): the same floats at every thread count
_INVERSE_SPLIT_MIN = 1 << 14


@lru_cache(maxsize=16)
def _inverse_tables(N: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`embed_inverse`'s split: exp(−2πi·n/N) for n < N/2 (the odd half's twiddles), and
    ζ^-k/N for the even and for the odd k (read-only; 1/N is a power of two, so scaling the
    untwist by it is exact)."""
    u = _untwist(N) / N
    out = (np.exp(-2j * np.pi * np.arange(N // 2) / N), np.ascontiguousarray(u[0::2]),
           np.ascontiguousarray(u[1::2]))
    for a in out:
        a.flags.writeable = False
    return out


def _inverse_half(v: np.ndarray, N: int, which: int, out: np.ndarray) -> None:
    """One half of `embed_inverse`'s length-N transform (decimation in frequency): which = 0
    the even outputs, the N/2 transform of v_n + v_(n+N/2); 1 the odd ones, that of
    (v_n − v_(n+N/2))·exp(−2πi·n/N); untwisted, their real parts to out[which::2].  NumPy's
    FFT releases the GIL, so the halves run side by side, each the same floats on any thread."""
    h = N // 2
    twiddle, even, odd = _inverse_tables(N)
    a = v[:h] + v[h:] if which == 0 else (v[:h] - v[h:]) * twiddle
    out[which::2] = (np.fft.fft(a) * (odd if which else even)).real


def embed_inverse(z: np.ndarray, N: int, threads: int = 1) -> np.ndarray:
    """The real coefficients m (float) whose slots are z (N/2 complex values), on up to two
    `threads` (the lift pool's), the same floats at any count.

    m is the real part of ζ^-k/N times output k of the length-N FFT of v (v at the slots' odd
    powers: z, and conj(z) at their conjugates').  From N = _INVERSE_SPLIT_MIN up that FFT is
    split once by decimation in frequency into its even outputs (the N/2 transform of
    v_n + v_(n+N/2)) and its odd ones (that of (v_n − v_(n+N/2))·exp(−2πi·n/N)), two
    independent transforms, one a thread where a helper is free in time (`_side_by_side`; about
    as fast as the one long FFT on one thread).  Those floats are not the single length-N FFT's bit
    for bit (a last-bit difference in most coefficients; `tests` bound it against exact
    evaluation), but they are the same at every thread count."""
    threads = check_int_range(threads, "embed_inverse: threads", 1, 256,
                              hint="REN_CPU_THREADS's range; 1 runs both halves on the caller")
    t, tc, _ = _tables(N)
    v = np.zeros(N, dtype=np.complex128)
    v[t] = z
    v[tc] = np.conj(z)
    if N < _INVERSE_SPLIT_MIN:
        return (np.fft.fft(v) / N * _untwist(N)).real
    out = np.empty(N)
    _side_by_side(lambda which: _inverse_half(v, N, which, out), (0, 1), threads)
    return out


#: below this ring degree `embed` takes one length-N transform (the quarter split needs N/4 >= 2)
_EMBED_SPLIT_MIN = 16


@lru_cache(maxsize=16)
def _embed_tables(N: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`embed`'s constants: ζ^i for i < N/2, exp(2πi·n/(N/2)) for n < N/4 (the odd quarter's
    twiddles) and the slot each output of [E, O] is (read-only)."""
    t, _, twist = _tables(N)
    k = t // 2  # slot j is output k = t_j/2 of the half-length transform (every t_j is even)
    where = np.where(k % 2 == 0, k // 2, N // 4 + k // 2)  # slot j's place in [E, O]
    odd = np.exp(2j * np.pi * np.arange(N // 4) / (N // 2))
    out = (np.ascontiguousarray(twist[: N // 2]), odd, np.argsort(where))
    for a in out:
        a.flags.writeable = False
    return out


def _embed_quarter(m: np.ndarray, N: int, which: int, out: np.ndarray) -> None:
    """One half of `embed`'s half-length transform, written to its slots of `out`: which = 0
    the even outputs E, 1 the odd ones O (module docstring of `embed`).  NumPy's FFT releases
    the GIL, so the two run side by side on two threads, each the same floats on either."""
    q = N // 4
    twist, odd, slot = _embed_tables(N)
    lo = twist[:q] * (m[:q] + 1j * m[2 * q:3 * q])  # a_n = ζ^n (m_n + i m_(n+N/2)), n < N/4
    hi = twist[q:2 * q] * (m[q:2 * q] + 1j * m[3 * q:])  # a_(n+N/4)
    b = lo + hi if which == 0 else (lo - hi) * odd
    # Σ b_n e^(2πi nk/(N/4)), put straight into its slots (the halves' slots are disjoint)
    out[slot[which * q:(which + 1) * q]] = np.fft.ifft(b, norm="forward")


def embed(m: np.ndarray, N: int, threads: int = 1) -> np.ndarray:
    """The N/2 slots of the real coefficient vector m, z_j = Σ_i m_i ζ^(i·e_j), on up to two
    `threads` (the lift pool's), the same floats at any count.

    Every e_j = 5^j mod 2N is 1 mod 4, so slot j is output t_j = (e_j − 1)/2 (even) of the
    length-N transform of m_i·ζ^i, and the even outputs of that are one length-N/2 transform
    of a_n = ζ^n·(m_n + i·m_(n+N/2)) (ζ^(N/2) = i).  That one splits once more into its even
    outputs E = the N/4 transform of a_n + a_(n+N/4) and its odd ones O = that of
    (a_n − a_(n+N/4))·exp(2πi·n/(N/2)): two independent transforms of a quarter of the length,
    one a thread.  The floats are not the single length-N FFT's bit for bit (`tests` bound the
    difference: the same error against exact evaluation)."""
    threads = check_int_range(threads, "embed: threads", 1, 256,
                              hint="REN_CPU_THREADS's range; 1 runs both halves on the caller")
    m = np.asarray(m)
    if m.shape != (N,):
        raise ShapeError(f"embed: expected the N = {N} coefficients of one polynomial, got "
                         f"shape {m.shape}")
    if N < _EMBED_SPLIT_MIN or np.iscomplexobj(m):  # (complex m: the general transform)
        t, _, twist = _tables(N)
        return np.fft.ifft(m * twist)[t] * N
    m = m.astype(np.float64, copy=False)
    out = np.empty(N // 2, dtype=np.complex128)
    _side_by_side(lambda which: _embed_quarter(m, N, which, out), (0, 1), threads)
    return out


def _check_numbers(values) -> None:
    """Reject bools and strings, which NumPy would turn into 1.0/0.0 or parse ("1.5") (a
    ShapeError, as for other values that are not numbers)."""
    if isinstance(values, bool | np.bool_ | str | bytes):
        raise ShapeError(f"encode: values must be numbers, got {type(values).__name__} "
                         f"{values!r}" + _BOOL_HINT * isinstance(values, bool | np.bool_))
    if isinstance(values, np.ndarray):
        if values.dtype.kind in "iufc":
            return
        if values.dtype.kind != "O":
            raise ShapeError(f"encode: values must be numbers, got an array of dtype "
                             f"{values.dtype}" + _BOOL_HINT * (values.dtype.kind == "b"))
        values = values.ravel().tolist()
    if isinstance(values, list | tuple):
        for i, v in enumerate(values):
            if isinstance(v, bool | np.bool_ | str | bytes):
                raise ShapeError(f"encode: values must be numbers, got {type(v).__name__} {v!r} "
                                 f"at index {i}" + _BOOL_HINT * isinstance(v, bool | np.bool_))


_BOOL_HINT = " (a bool is a flag, not a number: convert with float() if 1.0/0.0 is meant)"


def _as_slots(values, slots: int) -> np.ndarray:
    _check_numbers(values)
    if isinstance(values, Number):
        z = np.full(slots, values, dtype=np.complex128)
    else:
        try:
            z = np.asarray(values, dtype=np.complex128)
        except (TypeError, ValueError):
            raise ShapeError(
                f"encode: values must be numbers, got {type(values).__name__}") from None
        if z.ndim != 1:
            raise ShapeError(f"encode: values must be a 1-D vector, got shape {z.shape}")
        if z.size > slots:
            raise ShapeError(f"encode: {z.size} values do not fit {slots} slots (N/2); use N >= "
                             f"{2 * z.size} or split the vector")
        z = np.concatenate([z, np.zeros(slots - z.size, dtype=np.complex128)])
    if not np.all(np.isfinite(z)):
        raise ParameterError("encode: values must be finite (no NaN or infinity)")
    return z


class Encoder:
    """Encode vectors of up to N/2 real or complex numbers into Plaintexts and decode back."""

    def __init__(self, params: CKKSParams) -> None:
        if not isinstance(params, CKKSParams):
            raise ParameterError(f"Encoder needs CKKSParams, got {type(params).__name__}")
        self.params = params

    def coefficients(self, values, scale: Fraction | int | float) -> list[int]:
        """The integer coefficients round(Δ·m) of `values` at `scale` (exact Python ints)."""
        c, _ = self._coefficients(values, scale)
        return c.tolist() if isinstance(c, np.ndarray) else c

    def _coefficients(self, values, scale: Fraction | int | float
                      ) -> tuple[np.ndarray | list[int], int]:
        """(`coefficients`, the largest |coefficient|): the coefficients as an int64 array when
        they fit one (the common case: no Python ints are made), else exact Python ints.

        On the int64 path the bound takes no pass over the coefficients: rounding is monotone
        and odd, so max |fl(m_i·Δ)| = fl(max |m_i|·Δ) and max |rint(x_i)| = rint(max |x_i|)."""
        scale = scale_arg(scale, "coefficients: scale")
        z = _as_slots(values, self.params.slots)
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused below
            m = embed_inverse(z, self.params.N, _threads(self.params.device))
            top = float(np.max(np.abs(m), initial=0.0))
        if not math.isfinite(top):  # finite values near float64's limit (1e308) overflow the FFT
            raise ScaleOutOfBoundsError(
                f"encode: values up to {float(np.max(np.abs(z))):.3g} overflow float64 in the "
                "embedding (no modulus could hold them anyway); scale the values down")
        if top == 0 or log2_exact(scale) + math.log2(top) < math.log2(_FLOAT_SAFE):
            scaled = m * float(scale)
            peak = top * float(scale)  # = max |scaled| (see above)
            if peak < _INT64_SAFE:
                return np.rint(scaled).astype(np.int64), int(np.rint(peak))
            c = [int(x) for x in np.rint(scaled)]
        else:  # a scale beyond float64's range (log2 Q > 1024 allows it): exact products, rounded
            c = [round(Fraction(float(x)) * scale) for x in m]
        return c, max(map(abs, c), default=0)

    def _slot_count(self, slots: int | None, op: str = "encode") -> int:
        """`slots` checked: a power of two n in [1, N/2] (None: N/2)."""
        full = self.params.slots
        if slots is None:
            return full
        hint = (f"a power of two in [1, {full}] (N/2): sparse packing replicates n values "
                f"N/(2n) times")
        n = check_int_range(slots, f"{op}: slots", 1, full, hint=hint)
        if n & (n - 1):
            raise ParameterError(f"{op}: slots must be {hint}, got {n}")
        return n

    def encode(self, values, level: int | None = None,
               scale: Fraction | int | float | None = None,
               slots: int | None = None) -> Plaintext:
        """A Plaintext of `values` (a vector of up to N/2 numbers, zero-padded, or one number
        for every slot) at `level` (default: the top) and `scale` (default: the level's scale).
        With `slots` = n < N/2 (sparse packing, as `Bootstrapper(slots=n)` takes): up to n
        values, zero-padded to n and repeated N/(2n) times, a polynomial in X^(N/2n); the
        plaintext remembers the repeated vector.
        The polynomial is built lazily with `Poly.from_coefficients` and kept in the NTT domain.
        A scale that does not fit the level (`CKKSParams.check_scale`), or values whose scaled
        coefficients reach Q/2, raise ScaleOutOfBoundsError."""
        p = self.params
        n = self._slot_count(slots)
        level = p.depth if level is None else p.check_level(level)
        if n != p.slots:
            values = np.tile(_as_slots(values, n), p.slots // n)
        default = scale is None
        scale = p.check_scale(
            p.scale(level) if default else scale_arg(scale, "encode: scale"), level, "encode",
            fix=(f"the default scale of level {level} does not fit its modulus: use parameters "
                 "with first_bits >= scale_bits + 2, or encode at a higher level") if default
            else "use a smaller scale or a higher level")
        coeffs, bound = self._coefficients(values, scale)
        ring = p.ring(level)
        if 2 * bound >= ring.Q:
            raise ScaleOutOfBoundsError(
                f"encode: the scaled values reach 2^{bound.bit_length()}, beyond Q/2 at level "
                f"{level} (2^{ring.Q.bit_length() - 1}); use a smaller scale or a higher level")
        pt = Plaintext(Poly.from_coefficients(coeffs, ring, device=p.device).ntt(), scale, level,
                       p)
        return pt.keep_values(values if isinstance(values, Number) else  # (checked above)
                              np.asarray(values, dtype=np.complex128))

    def decode(self, pt: Plaintext, slots: int | None = None) -> np.ndarray:
        """The N/2 complex slots of a Plaintext (realizes it); with `slots` = n, the first n
        (a sparse packing's values)."""
        n = self._slot_count(slots, "decode")
        return self._decode(pt)[:n]

    def _decode(self, pt: Plaintext) -> np.ndarray:
        if not isinstance(pt, Plaintext):
            raise ParameterError(f"decode expects a Plaintext, got {type(pt).__name__}; decrypt "
                                 "a Ciphertext first")
        if pt.params != self.params:
            raise ParamsMismatchError("decode: the plaintext was made under other CKKSParams")
        ring = pt.poly.ring
        # coefficient form on the plaintext's own device (the compiled INTT on "cpu"; realized
        # with the decryption where `Decryptor.decrypt` made it), then the centred CRT lift
        # straight to floats (Garner's mixed radix: no Python ints)
        coeffs = pt.coefficient_form
        if coeffs is None:
            coeffs = pt.poly.intt()
            coeffs.realize()
        words = _host_words(coeffs)  # from Montgomery form in _lift
        shift = max(0, ring.Q.bit_length() - 1000)  # Q·2^-shift fits a float64
        # messages up to 2^62 take the short path (a prefix of the moduli, checked against the
        # rest); anything larger falls back to the whole basis by itself
        x = _lift(words, ring, shift, bits=math.ceil(log2_exact(pt.scale)) + 64,
                  compiled=_compiled_device(coeffs.device))
        peak = float(np.max(np.abs(x), initial=0.0))
        top_bits = (math.frexp(peak)[1] + shift) if peak else 0  # bits of the largest |coefficient|
        log2_scale = log2_exact(pt.scale)
        if top_bits - log2_scale > 1000:  # |m| would pass float64's 2^1024
            raise DecodeOverflowError(
                f"decode: the coefficients reach 2^{top_bits} at scale 2^"
                f"{log2_scale:.2f}, values near 2^{top_bits - log2_scale:.0f}, beyond "
                "float64's range (2^1024). This is no encoding at this scale: check that the "
                "ciphertext was decrypted with the secret key it was encrypted under, and that "
                "its message stayed below Q/2 (operations raise ScaleOutOfBoundsError when a "
                "scale cannot hold a message of magnitude 1)")
        m = x * float(Fraction(1 << shift) / pt.scale)
        return embed(m, self.params.N, _threads(coeffs.device))

    def decode_real(self, pt: Plaintext) -> np.ndarray:
        """The N/2 slots of a Plaintext as real numbers (float64): the real parts of `decode`,
        for messages that are real (SEAL's ``decode_double``).  Imaginary parts, which for a
        real message are only noise, are dropped."""
        return np.ascontiguousarray(self.decode(pt).real)
