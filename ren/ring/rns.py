"""RNS conversions: packing big integers, TO_RNS reduction, CRT lift, fast basis conversion and
exact divide-and-round.

Residue arrays are (limbs, N) u32.  The ``*_mont`` variants take and return Montgomery form (the
storage form of the backends); the plain variants take and return standard form.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from ren.errors import ShapeError
from ren.ring.modarith import R, from_mont, mod_add, mod_sub, mont_mul_raw, to_mont
from ren.ring.ringspec import RingSpec
from ren.ring.tables import get_tables

U32 = np.uint32
U64 = np.uint64
_INT64_SAFE = 1 << 62
_ONE = np.ones((1, 1), U32)


# -- packed big integers (the TO_RNS input format) -------------------------------------------
def pack_words(coeffs: Sequence[int]) -> np.ndarray:
    """Signed Python ints → (N, W) u32 array: each row is the two's complement of one coefficient
    in W little-endian 32-bit words, W the smallest count that holds every coefficient."""
    n = len(coeffs)
    try:
        values = [int(c) for c in coeffs]
    except (TypeError, ValueError):
        raise ShapeError("coefficients must be Python ints (or integer-valued)") from None
    if all(-_INT64_SAFE <= c < _INT64_SAFE for c in values):
        arr = np.array(values, dtype=np.int64).view(U64) if n else np.zeros(0, U64)
        words = np.empty((n, 2), dtype=U32)
        words[:, 0] = (arr & U64(0xFFFFFFFF)).astype(U32)
        words[:, 1] = (arr >> U64(32)).astype(U32)
        return words
    bits = max(c.bit_length() for c in values) + 1  # + sign bit
    W = -(-bits // 32)
    nbytes = 4 * W
    raw = b"".join(c.to_bytes(nbytes, "little", signed=True) for c in values)
    return np.frombuffer(raw, dtype="<u4").reshape(n, W).astype(U32)


def unpack_words(words: np.ndarray) -> list[int]:
    """Inverse of `pack_words`: (N, W) two's-complement u32 words → signed Python ints."""
    words = np.ascontiguousarray(words, dtype="<u4")
    n, W = words.shape
    raw = words.tobytes()
    step = 4 * W
    return [int.from_bytes(raw[i * step : (i + 1) * step], "little", signed=True) for i in range(n)]


def reduce_words(words: np.ndarray, ring: RingSpec) -> np.ndarray:
    """TO_RNS semantics: (N, W) two's-complement words → (L, N) standard residues mod each q.

    Horner over the words, most significant first: acc = (acc·2^32 + word) mod q, all limbs and
    coefficients at once (acc < 2^31, so acc·2^32 + word < 2^64).
    """
    n, W = words.shape
    if n != ring.N:
        raise ShapeError(f"TO_RNS: expected {ring.N} coefficients, got {n}")
    q = get_tables(ring).q64
    acc = np.zeros((ring.limbs, n), dtype=U64)
    for k in range(W - 1, -1, -1):
        acc <<= U64(32)
        acc += words[:, k].astype(U64)[None, :]
        acc %= q
    negative = (words[:, W - 1] >> U32(31)).astype(bool)
    if negative.any():
        # two's complement: the unsigned value is c + 2^(32W); subtract 2^(32W) mod q
        offset = np.array([pow(2, 32 * W, int(qq)) for qq in ring.moduli], U64).reshape(-1, 1)
        fix = (acc + q - offset) % q
        acc = np.where(negative[None, :], fix, acc)
    return acc.astype(U32)


# -- CRT lift -----------------------------------------------------------------------------------
@lru_cache(maxsize=64)
def _crt_constants(ring: RingSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    Q = ring.Q
    qhat = [Q // q for q in ring.moduli]
    qhat_inv = np.array([pow(h % q, -1, q) for h, q in zip(qhat, ring.moduli)], U64).reshape(-1, 1)
    qhat_obj = np.array(qhat, dtype=object)
    return qhat_inv, qhat_obj, qhat_inv.astype(U32)


def crt_lift(residues: np.ndarray, ring: RingSpec, centered: bool = True) -> list[int]:
    """(L, N) standard residues → N Python ints x with x ≡ residue_i (mod q_i); in (-Q/2, Q/2]
    when `centered`, else in [0, Q)."""
    qhat_inv, qhat_obj, _ = _crt_constants(ring)
    y = (residues.astype(U64) * qhat_inv) % get_tables(ring).q64  # y_i = x_i·qhat_i^-1 mod q_i
    Q = ring.Q
    total = qhat_obj.dot(y.astype(object)) if ring.limbs > 1 else y[0].astype(object) * qhat_obj[0]
    half = Q // 2
    out = []
    for v in total:
        v = int(v) % Q
        if centered and v > half:
            v -= Q
        out.append(v)
    return out


# -- fast basis conversion (Q -> P) ---------------------------------------------------------------
@lru_cache(maxsize=256)
def _bconv_table(src: RingSpec, dst_moduli: tuple[int, ...]) -> np.ndarray:
    """(L_dst, L_src) table of qhat_i·R^2 mod p_j (a Montgomery product by it gives Montgomery
    form)."""
    Q = src.Q
    rows = [[(Q // q) % p * pow(2, 64, p) % p for q in src.moduli] for p in dst_moduli]
    return np.array(rows, dtype=U32)


def fast_basis_convert_mont(x: np.ndarray, src: RingSpec, dst: RingSpec) -> np.ndarray:
    """Fast (approximate) basis conversion, Montgomery form in and out.

    For x in [0, Q) given by its residues mod the moduli q_i of `src`, computes for every modulus
    p_j of `dst`:  sum_i [x_i · qhat_i^-1]_{q_i} · qhat_i  mod p_j,  where qhat_i = Q / q_i.
    The integer inside the sum equals x + u·Q for some 0 <= u < len(src.moduli): this is the
    conversion CKKS key switching uses, exact up to that small multiple of Q.
    """
    ts, td = get_tables(src), get_tables(dst)
    _, _, qhat_inv = _crt_constants(src)
    # Montgomery x times a standard-form constant is standard form: y_i = [x_i·qhat_i^-1]_{q_i}
    y = mont_mul_raw(x, qhat_inv, ts.q32, ts.q64, ts.qneg)
    M = _bconv_table(src, dst.moduli)
    out = np.zeros((dst.limbs, x.shape[1]), U32)
    for i in range(src.limbs):  # a reduction over source limbs, vectorised over targets and N
        term = mont_mul_raw(y[i : i + 1], M[:, i : i + 1], td.q32, td.q64, td.qneg)
        out = mod_add(out, term, td.q32)
    return out


def fast_basis_convert(x: np.ndarray, src: RingSpec, dst: RingSpec) -> np.ndarray:
    """`fast_basis_convert_mont` on standard-form residues."""
    xm = to_mont(x, get_tables(src))
    return from_mont(fast_basis_convert_mont(xm, src, dst), get_tables(dst))


def ring_convert_mont(x: np.ndarray, src: RingSpec, dst: RingSpec) -> np.ndarray:
    """TO_RING semantics (Montgomery form): each modulus of `dst` that `src` also has keeps its
    residues; every new modulus gets the fast basis conversion from all of `src`."""
    out = np.empty((dst.limbs, src.N), U32)
    new = [j for j, p in enumerate(dst.moduli) if p not in src.moduli]
    for j, p in enumerate(dst.moduli):
        if p in src.moduli:
            out[j] = x[src.index(p)]
    if new:
        target = RingSpec(dst.N, tuple(dst.moduli[j] for j in new))
        out[new] = fast_basis_convert_mont(x, src, target)
    return out


def ring_convert(x: np.ndarray, src: RingSpec, dst: RingSpec) -> np.ndarray:
    """`ring_convert_mont` on standard-form residues."""
    xm = to_mont(x, get_tables(src))
    return from_mont(ring_convert_mont(xm, src, dst), get_tables(dst))


# -- exact divide-and-round (rescale / mod-down) ----------------------------------------------
@lru_cache(maxsize=256)
def _divide_round_constants(ring: RingSpec, k: int) -> tuple[np.ndarray, list]:
    kept = ring.drop_last(k)
    P = ring.Q // kept.Q
    t = get_tables(ring)
    half_mont = to_mont(np.array([(P // 2) % q for q in ring.moduli], U32).reshape(-1, 1), t)
    steps = []
    for j in range(ring.limbs - 1, ring.limbs - 1 - k, -1):
        p = ring.moduli[j]
        # p^-1·R mod q_i: a Montgomery product by it divides by p and stays in Montgomery form
        pinv_r = np.array([pow(p, -1, q) * R % q for q in ring.moduli[:j]], U32)
        steps.append((j, pinv_r.reshape(-1, 1)))
    return half_mont, steps


def divide_round_mont(x: np.ndarray, ring: RingSpec, k: int) -> np.ndarray:
    """Exact rounded division by P = product of the last `k` moduli (Montgomery form in and out).

    Returns the residues mod the remaining moduli of y = floor((x + floor(P/2)) / P), x the
    centred lift of the input mod Q.  P is odd, so this is round(x / P) with no ties.  Done as
    `k` exact floor divisions by one modulus each (floor(floor(z/a)/b) = floor(z/(ab))):
    floor(z/p) ≡ (z - [z]_p) · p^-1 (mod q_i).
    """
    if not 0 < k < ring.limbs:
        raise ValueError(f"divide_round: k must be in 1..{ring.limbs - 1}, got {k}")
    half_mont, steps = _divide_round_constants(ring, k)
    t = get_tables(ring)
    q32, q64, qneg, r2 = t.q32, t.q64, t.qneg, t.r2
    z = mod_add(x, half_mont, q32)
    for j, pinv_r in steps:
        row = slice(j, j + 1)
        # [z]_p in [0, p), standard form
        r = mont_mul_raw(z[row], _ONE, q32[row], q64[row], qneg[row])
        r_i = np.remainder(r, q32[:j])  # [z]_p mod q_i
        r_i_mont = mont_mul_raw(r_i, r2[:j], q32[:j], q64[:j], qneg[:j])
        d = mod_sub(z[:j], r_i_mont, q32[:j])
        z = mont_mul_raw(d, pinv_r, q32[:j], q64[:j], qneg[:j])
    return z


def divide_round(x: np.ndarray, ring: RingSpec, k: int) -> np.ndarray:
    """`divide_round_mont` on standard-form residues."""
    out = divide_round_mont(to_mont(x, get_tables(ring)), ring, k)
    return from_mont(out, get_tables(ring.drop_last(k)))
