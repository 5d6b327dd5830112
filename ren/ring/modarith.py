"""Vectorised modular arithmetic on u32 residues, with Montgomery multiplication (R = 2^32).

Every function works on NumPy ``uint32`` arrays shaped (limbs, N) (or anything that broadcasts
against the moduli column ``q`` of shape (limbs, 1)).  Inputs are residues in [0, q); outputs
are fully reduced residues in [0, q).  Montgomery form of a is a·R mod q.

The tricks that keep this exact and branch-free:

* a + b < 2q < 2^32, so sums fit a u32; ``min(s, s - q)`` (with u32 wrap-around) reduces them.
* a - b wraps below zero; ``min(d, d + q)`` picks the representative in [0, q).
* Montgomery: t = a·b < 2^62, m = (t · (-q^-1)) mod 2^32, (t + m·q) / 2^32 < 2q; t + m·q < 2^64.
"""

from __future__ import annotations

import numpy as np

from ren.ring.tables import RingTables

U32 = np.uint32
U64 = np.uint64
_MASK32 = U64(0xFFFFFFFF)
_SHIFT32 = U64(32)
_ONE = np.ones((1, 1), U32)
R = 1 << 32


def mont_words(value: int, moduli) -> tuple[int, ...]:
    """The Montgomery form value·R mod q of an integer for each modulus q (exact Python ints:
    a constant's stored words)."""
    return tuple((value % q) * R % q for q in moduli)


def mod_add(a: np.ndarray, b: np.ndarray, q: np.ndarray) -> np.ndarray:
    """(a + b) mod q; q is a u32 column broadcasting against a and b."""
    s = np.add(a, b, dtype=U32)
    return np.minimum(s, s - q)


def mod_sub(a: np.ndarray, b: np.ndarray, q: np.ndarray) -> np.ndarray:
    """(a - b) mod q."""
    d = np.subtract(a, b, dtype=U32)
    return np.minimum(d, d + q)


def mod_neg(a: np.ndarray, q: np.ndarray) -> np.ndarray:
    """(-a) mod q."""
    r = np.subtract(q, a, dtype=U32)
    return np.minimum(r, r - q)


def mont_mul_raw(
    a: np.ndarray, b: np.ndarray, q32: np.ndarray, q64: np.ndarray, qneg: np.ndarray
) -> np.ndarray:
    """Montgomery product a·b·R^-1 mod q, for any a, b with a·b < q·2^32 (u32 result in [0,q)).

    q32 is the u32 moduli column; q64 and qneg (= -q^-1 mod 2^32) are u64 columns.
    """
    t = np.multiply(a, b, dtype=U64)
    m = np.multiply(t, qneg)  # wraps mod 2^64; only the low 32 bits matter
    m &= _MASK32
    m *= q64
    t += m
    t >>= _SHIFT32
    t = t.astype(U32)
    return np.minimum(t, t - q32)


def mont_mul(a: np.ndarray, b: np.ndarray, tables: RingTables) -> np.ndarray:
    """Montgomery product of two residue arrays of the ring described by `tables`."""
    return mont_mul_raw(a, b, tables.q32, tables.q64, tables.qneg)


def to_mont(a: np.ndarray, tables: RingTables) -> np.ndarray:
    """Standard form → Montgomery form: a·R mod q (computed as mont_mul(a, R^2))."""
    return mont_mul_raw(a, tables.r2, tables.q32, tables.q64, tables.qneg)


def from_mont(a: np.ndarray, tables: RingTables) -> np.ndarray:
    """Montgomery form → standard form: a·R^-1 mod q (computed as mont_mul(a, 1))."""
    return mont_mul_raw(a, _ONE, tables.q32, tables.q64, tables.qneg)
