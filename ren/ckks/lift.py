"""The decoder's CRT lift: a polynomial's RNS words (Montgomery form, as every device stores
them) to centred floats, `ren.ring.rns.centered_floats`'s own values, in pieces of LIFT_PIECE
columns side by side on the host pool (`ren.ckks.hostpool`), and on the "cpu" device with the
prefix digits and their check compiled (no GIL).
"""

from __future__ import annotations

import ctypes
import math
import threading
from functools import lru_cache
from typing import Any

import numpy as np

from ren import settings
from ren.ckks.hostpool import side_by_side
from ren.errors import RenError
from ren.ring import RingSpec, get_tables, rns
from ren.ring.rns import centered_floats

#: columns (coefficients) per piece of the decoder's CRT lift: pieces of this width (and the lift
#: of a ring of fewer than two of them) are the same at every REN_CPU_THREADS, so the floats are
#: too; they run on min(REN_CPU_THREADS, pieces) threads (NumPy releases the GIL).  Lifting the
#: (L, N) residues in pieces of 8192 columns is also ~2x faster on one thread (N = 2^16, 21
#: limbs: 15 ms against 32 ms): each piece's rows stay in cache.
LIFT_PIECE = 8192


def lift(words: np.ndarray, ring: RingSpec, shift: int, bits: int,
          compiled: bool = False) -> np.ndarray:
    """`centered_floats(words, ring, shift, bits=bits, montgomery=True)` of Montgomery-form
    `words` (as every device stores them), in pieces of LIFT_PIECE columns over REN_CPU_THREADS
    threads: each piece is lifted by itself, in cache.  A piece whose
    values pass the prefix bound falls back to the whole basis by itself, where the whole array
    would have fallen back at once; so when any value reaches 2^(bits+1) (the only case where a
    piece can have fallen back) the lift runs again on the whole array: the floats are
    `centered_floats`'s own in every case.  `compiled` (words of a compiled device): the prefix
    digits and the check run compiled first (`lift_compiled`: the same words, no GIL)."""
    n = words.shape[1]
    if compiled and n >= 2 * LIFT_PIECE:
        x = lift_compiled(words, ring, shift, bits)
        if x is not None:
            return x
    if n < 2 * LIFT_PIECE or n % LIFT_PIECE:
        return centered_floats(words, ring, shift, bits=bits, montgomery=True)
    starts = range(0, n, LIFT_PIECE)

    def piece(c: int) -> np.ndarray:
        return centered_floats(words[:, c:c + LIFT_PIECE], ring, shift, bits=bits,
                               montgomery=True)

    workers = min(settings.get("REN_CPU_THREADS"), len(starts))
    parts = side_by_side(piece, starts, workers)
    x = np.concatenate(parts)
    if float(np.max(np.abs(x), initial=0.0)) >= math.ldexp(1.0, bits + 1 - shift):
        return centered_floats(words, ring, shift, bits=bits, montgomery=True)
    return x


#: the compiled prefix lift (`lift_compiled`): per column, the Montgomery words of the k prefix
#: rows to standard form, Garner's digits and sign (exactly `rns._garner_digits`'s), and the
#: check of every other row (exactly `rns._matches_float`'s: float64 sums of integers below
#: 2^53, in any order); in blocks over the OpenMP threads (one thread: no parallel region, for
#: a piece on a host-pool thread).  It lifts `parts` ranges of `width` columns of w (row length
#: n), `stride` apart from column 0 of `w` (the caller offsets the pointer), to consecutive
#: columns of dig (row length dn) and above; with `fdig` set, `rns._to_floats`'s float digits
#: (Q − x's digits where x > Q/2: exact integers) go there instead of dig.  Returns the count
#: of columns whose check fails.
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
                          u64* dig, double* fdig, unsigned char* above, int threads,
                          long long width, long long parts, long long stride, long long dn) {
  long long bad = 0;
  const i64 mk = 2 * k + 1;
  const i64 nb = (width + REN_LIFT_BLOCK - 1) / REN_LIFT_BLOCK;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) reduction(+:bad) \
    if(threads > 1)
#endif
  for (i64 b = 0; b < parts * nb; ++b) {
    const i64 o0 = (b / nb) * width + (b % nb) * REN_LIFT_BLOCK;  /* column in dig, above */
    const i64 c0 = (b / nb) * stride + (b % nb) * REN_LIFT_BLOCK;  /* column in w */
    const i64 nc = (b % nb) * REN_LIFT_BLOCK + REN_LIFT_BLOCK <= width ? REN_LIFT_BLOCK
                   : width - (b % nb) * REN_LIFT_BLOCK;
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
      above[o0 + c] = ab[c];
      rows[2 * k][c] = (double)ab[c];
    }
    for (i64 i = 0; i < k; ++i)
      for (i64 c = 0; c < nc; ++c) {
        if (fdig != 0)  /* rns._to_floats's float digits: Q - x's where x > Q/2 */
          fdig[i * dn + o0 + c] = (double)(ab[c] ? q[i] - 1 - t[i][c] + (i == 0) : t[i][c]);
        else
          dig[i * dn + o0 + c] = t[i][c];
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
                               ctypes.c_longlong, *[ctypes.c_void_p] * 12, ctypes.c_int,
                               *[ctypes.c_longlong] * 4]
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


def lift_compiled(words: np.ndarray, ring: RingSpec, shift: int, bits: int
                   ) -> np.ndarray | None:
    """`lift` with the prefix digits and the check compiled (`_LIFT_C`, on the "cpu" device's
    thread count `ren.backend.cpu.threads()`, without the GIL): the same digits and the same
    decision, exact integer work; the floats are made from the digits by `rns._to_floats` in
    LIFT_PIECE pieces as `lift`'s pieces make them.  None where it does not apply (no
    compiler; a prefix of more than 32 moduli or of the whole basis; a ring `lift` does not
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
             dig.ctypes.data, None, above.ctypes.data, threads(), n, 1, 0, n)
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
    side_by_side(floats, starts, workers)
    if float(np.max(np.abs(x), initial=0.0)) >= math.ldexp(1.0, bits + 1 - shift):
        return None  # where `lift` lifts the whole array again: let it
    return x


def lift_bound(bits: int, shift: int) -> float:
    """`lift`'s bound on the scaled floats: a value at or past it means the prefix of the
    moduli may not have held it, and the whole basis lifts again (the `centered_floats` rule)."""
    return math.ldexp(1.0, bits + 1 - shift)


class PrefixLift:
    """`lift_compiled`'s work on one polynomial's words, some columns at a time, on the calling
    thread (the compiled prefix without an OpenMP region, writing `rns._to_floats`'s float
    digits itself, then their BLAS sum `rns._digit_sum`; both release the GIL): for a caller
    that runs its own pieces on the host pool and goes on with each piece's floats in cache
    (the decoder's fused lift and embedding).  Every column's float is `lift_compiled`'s: each
    column's float digits are (exact integers), and the sum gives a column the same float in
    any block of columns (`tests/test_decrypt_threads.py` checks it against `lift`)."""

    def __init__(self, fn: Any, words: np.ndarray, ring: RingSpec, shift: int, k: int) -> None:
        self._fn, self._ring, self._shift, self._k = fn, ring, shift, k
        self._w = np.ascontiguousarray(words, dtype=np.uint32)
        self._consts = [c.ctypes.data for c in _compiled_lift_constants(ring, k)]
        self._sub = ring.sub(0, k)

    def floats(self, c0: int, width: int, parts: int = 1, stride: int = 0
               ) -> np.ndarray | None:
        """The floats of the `parts` column ranges [c0 + p·stride, c0 + p·stride + width), one
        after the other (one C call and one `_digit_sum` for all of them), or None where a
        column fails the check."""
        k, n = self._k, self._w.shape[1]
        digits = np.empty((k, parts * width))
        above = np.empty(parts * width, dtype=np.uint8)
        bad = self._fn(self._w.ctypes.data + 4 * c0, self._ring.limbs, n, k, *self._consts,
                       None, digits.ctypes.data, above.ctypes.data, 1, width, parts, stride,
                       parts * width)
        if bad:
            return None
        return rns._digit_sum(digits, above.view(bool), self._sub, self._shift)


def prefix_lift(words: np.ndarray, ring: RingSpec, shift: int, bits: int) -> PrefixLift | None:
    """A `PrefixLift` of `words` where `lift_compiled` applies (the same conditions), else None."""
    n = words.shape[1]
    k = rns._prefix_for(ring, bits)
    if not (k < ring.limbs and k <= rns._FLOAT_CHECK_MAX_K) or n % LIFT_PIECE \
            or n < 2 * LIFT_PIECE:
        return None
    fn = _lift_library()
    return None if fn is None else PrefixLift(fn, words, ring, shift, k)
