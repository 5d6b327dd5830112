"""Per-ring tables, computed once and cached: Montgomery constants and NTT twiddles.

`neg_inv32` is the one computation of the Montgomery constant -q^-1 mod 2^32 (the per-ring
tables, the ring-kernel tables and the ALU's MODULUS values all use it).

The canonical root of unity for (q, N) is the *smallest* primitive 2N-th root of unity mod q,
so the NTT domain is fully determined by the ring (the reference evaluator recomputes it
independently).

Thread safety: two threads that miss a cache at once may both compute the entry (`lru_cache`,
and `cached_property` from Python 3.12, hold no lock while computing); the tables are pure
functions of their arguments and read-only, so either copy is correct and the waste is one
extra computation.
"""

from __future__ import annotations

from functools import cached_property, lru_cache

import numpy as np

from ren.ring.ringspec import RingSpec

U32 = np.uint32
U64 = np.uint64


@lru_cache(maxsize=4096)
def primitive_root_2n(q: int, N: int) -> int:
    """The smallest primitive 2N-th root of unity modulo the prime q (q ≡ 1 mod 2N)."""
    exp = (q - 1) // (2 * N)
    for g in range(2, q):
        c = pow(g, exp, q)
        if pow(c, N, q) == q - 1:  # c^(2N) = 1 and c^N = -1: order exactly 2N
            break
    else:  # pragma: no cover - impossible for a valid NTT-friendly prime
        raise ValueError(f"no primitive {2 * N}-th root of unity mod {q}")
    # The primitive 2N-th roots are c^k for odd k: c·(c²)^i for i < N; take the smallest (all N
    # at once when products of two residues fit in u64, i.e. for every RingSpec modulus)
    if q < 1 << 32:
        qcol = np.array([[q]], dtype=U64)
        odd = _powers(np.array([c * c % q], dtype=U64), qcol, N)[0] * U64(c) % U64(q)
        return int(odd.min())
    best, c2, x = c, c * c % q, c
    for _ in range(N - 1):
        x = x * c2 % q
        best = min(best, x)
    return best


def neg_inv32(q) -> np.ndarray:
    """-q^-1 mod 2^32 for odd moduli q (u64, q's shape), by Newton's iteration
    x <- x·(2 - q·x): x = q is an inverse mod 2^3, each step doubles the correct bits, four
    steps give 48 >= 32."""
    q = np.asarray(q, dtype=U64)
    x = q.copy()
    for _ in range(4):
        x = x * (U64(2) - q * x)  # wraps mod 2^64, which only helps: we want mod 2^32
    return (U64(0) - x) & U64(0xFFFFFFFF)


@lru_cache(maxsize=32)
def bit_reverse_indices(logn: int) -> np.ndarray:
    """brv[i] = i with its `logn` low bits reversed (int64 array of length 2^logn)."""
    idx = np.arange(1 << logn, dtype=np.int64)
    rev = np.zeros_like(idx)
    for b in range(logn):
        rev |= ((idx >> b) & 1) << (logn - 1 - b)
    rev.flags.writeable = False
    return rev


def _powers(base: np.ndarray, q: np.ndarray, n: int) -> np.ndarray:
    """base^k mod q for k in [0, n), for every limb at once (u64, shape (L, n))."""
    L = base.shape[0]
    out = np.empty((L, n), dtype=U64)
    out[:, 0] = 1
    size, step = 1, base.astype(U64).reshape(L, 1)
    while size < n:
        k = min(size, n - size)
        out[:, size : size + k] = out[:, :k] * step % q
        step = step * step % q
        size *= 2
    return out


class RingTables:
    """Cached constants for one ring.  Columns have shape (L, 1) so they broadcast."""

    def __init__(self, ring: RingSpec):
        self.ring = ring
        qs = ring.moduli
        L = len(qs)
        self.q32 = np.array(qs, dtype=U32).reshape(L, 1)
        self.q64 = self.q32.astype(U64)
        self.qneg = neg_inv32(self.q64)
        self.r2 = np.array([pow(2, 64, q) for q in qs], dtype=U32).reshape(L, 1)
        self.r_mod = np.array([pow(2, 32, q) for q in qs], dtype=U32).reshape(L, 1)
        # Harvey's lazy butterflies keep values below 4q, which must fit a u32.
        self.lazy_ntt = max(qs) < (1 << 30)
        for arr in (self.q32, self.q64, self.qneg, self.r2, self.r_mod):
            arr.flags.writeable = False

    @cached_property
    def psi(self) -> tuple[int, ...]:
        return tuple(primitive_root_2n(q, self.ring.N) for q in self.ring.moduli)

    @cached_property
    def ntt_plan(self) -> NttPlan:
        return NttPlan(self)


def shoup(w: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Shoup's precomputed companion floor(w·2^32 / q) (u64)."""
    return (w.astype(U64) << U64(32)) // q


class NttPlan:
    """Twiddle tables for the negacyclic NTT of one ring.

    Forward twiddles W[k] = psi^brv(k) (Cooley–Tukey, natural order in, bit-reversed out);
    inverse twiddles IW[k] = psi^-brv(k) (Gentleman–Sande, bit-reversed in, natural out).
    Stages with half-size t <= T0 run on a transposed layout (see ren.ring.ntt); their twiddles
    are stored pre-permuted for that layout.
    """

    def __init__(self, tables: RingTables):
        ring = tables.ring
        N, L, logn = ring.N, ring.limbs, ring.logN
        q = tables.q64
        psi = np.array(tables.psi, dtype=U64).reshape(L, 1)
        psi_inv = np.array([pow(int(p), -1, int(m)) for p, m in zip(tables.psi, ring.moduli)],
                           dtype=U64).reshape(L, 1)
        brv = bit_reverse_indices(logn)
        W = _powers(psi, q, N)[:, brv]
        IW = _powers(psi_inv, q, N)[:, brv]
        self.T0 = 1 << (logn // 2)  # stages with t <= T0 use the transposed layout
        self.m0 = N // (2 * self.T0)
        self.early: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        self.late: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        t = N // 2
        while t >= 1:
            m = N // (2 * t)
            if t > self.T0:
                w, iw = W[:, m : 2 * m, None], IW[:, m : 2 * m, None]
                store = self.early
            else:
                # twiddle for (sub-block s, block b) of the transposed layout: m + b*(T0/t) + s
                s = np.arange(self.T0 // t)[:, None]
                b = np.arange(self.m0)[None, :]
                idx = m + b * (self.T0 // t) + s
                w, iw = W[:, idx][:, :, None, :], IW[:, idx][:, :, None, :]
                store = self.late
            qcol = q.reshape((L,) + (1,) * (w.ndim - 1))
            entry = (np.ascontiguousarray(w), shoup(w, qcol), np.ascontiguousarray(iw),
                     shoup(iw, qcol))
            for arr in entry:
                arr.flags.writeable = False
            store[t] = entry
            t //= 2
        ninv = np.array([pow(N, -1, qq) for qq in ring.moduli], dtype=U64).reshape(L, 1)
        self.ninv = ninv
        self.ninv_shoup = shoup(ninv, q)


@lru_cache(maxsize=64)
def get_tables(ring: RingSpec) -> RingTables:
    """The cached tables of `ring`."""
    return RingTables(ring)
