"""RNS conversions: packing big integers, TO_RNS reduction, CRT lift, fast basis conversion and
exact divide-and-round.

Residue arrays are (limbs, N) u32.  The ``*_mont`` variants take and return Montgomery form (the
storage form of the backends); the plain variants take and return standard form.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
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
        return pack_int64(np.array(values, dtype=np.int64) if n else np.zeros(0, np.int64))
    bits = max(c.bit_length() for c in values) + 1  # + sign bit
    W = -(-bits // 32)
    nbytes = 4 * W
    raw = b"".join(c.to_bytes(nbytes, "little", signed=True) for c in values)
    return np.frombuffer(raw, dtype="<u4").reshape(n, W).astype(U32)


def pack_int64(values: np.ndarray) -> np.ndarray:
    """`pack_words` of an int64 array: (N, 2) u32 words, two's complement, vectorized."""
    arr = np.ascontiguousarray(values, dtype=np.int64).view(U64)
    words = np.empty((len(arr), 2), dtype=U32)
    words[:, 0] = (arr & U64(0xFFFFFFFF)).astype(U32)
    words[:, 1] = (arr >> U64(32)).astype(U32)
    return words


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
    if W == 2:  # one signed 64-bit value per coefficient (what encoders make): one % per residue
        v = np.ascontiguousarray(words, dtype="<u4").view("<i8").reshape(n)
        return (v[None, :] % q.astype(np.int64)).astype(U32)
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


@lru_cache(maxsize=64)
def _garner_constants(ring: RingSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per pair (j, i), i < j: w = q_i^-1 mod q_j and its Shoup companion floor(w·2^32/q_j);
    per j: floor(2^32/q_j) (to reduce a digit of another modulus); the mixed-radix digits of
    floor(Q/2)."""
    qs = ring.moduli
    L = len(qs)
    w = np.zeros((L, L), dtype=U64)
    ws = np.zeros((L, L), dtype=U64)
    for j, qj in enumerate(qs):
        for i, qi in enumerate(qs[:j]):
            w[j, i] = pow(qi, -1, qj)
            ws[j, i] = (int(w[j, i]) << 32) // qj
    red = np.array([(1 << 32) // q for q in qs], dtype=U64).reshape(L, 1)
    half, digits = ring.Q // 2, []
    for q in qs:
        digits.append(half % q)
        half //= q
    return w, ws, red, np.array(digits, dtype=U64)


@lru_cache(maxsize=64)
def _place_values(ring: RingSpec, shift: int) -> np.ndarray:
    """W_j·2^-shift = q_0⋯q_(j−1)·2^-shift as floats (a row)."""
    places, acc = [], 1
    for q in ring.moduli:
        places.append(float(Fraction(acc, 1 << shift)))
        acc *= q
    return np.array(places).reshape(1, -1)


def _shoup(t: np.ndarray, w: np.ndarray, ws: np.ndarray, q: np.ndarray) -> np.ndarray:
    """t·w mod q for t < 2^32, w < q < 2^31, ws = floor(w·2^32/q) (wrapping u64 arithmetic)."""
    r = t * w - ((t * ws) >> U64(32)) * q  # in [0, 2q)
    return np.where(r >= q, r - q, r)


def centered_floats(residues: np.ndarray, ring: RingSpec, shift: int = 0,
                    bits: int | None = None, montgomery: bool = False) -> np.ndarray:
    """(L, N) standard residues → the centred CRT lift x ∈ (-Q/2, Q/2] of each coefficient,
    times 2^-shift, as float64 (relative error below L·2^-52), without any Python int.

    Garner's mixed radix (`_garner_digits`): x = Σ_j v_j·W_j with W_j = q_0⋯q_(j−1).  Pick
    `shift` so that Q·2^-shift fits a float (e.g. shift = max(0, bits(Q) − 1000)).

    `bits`: the values are expected below 2^bits (a decoder knows its scale).  Then the lift runs
    on the shortest prefix of moduli whose product exceeds 2^(bits+2) and is checked against
    every other modulus (x' ≡ x mod each q_j and |x'| < Q_prefix/2 < Q/2 make x' the lift); if
    any coefficient fails the check, the whole basis is used: never a wrong value.

    `montgomery`: the residues are Montgomery words r·2^32 mod q (as devices store them); the
    floats are those of their standard form, but only the prefix leaves Montgomery form (the
    check compares the other rows as they are, with constants times 2^32)."""
    if bits is not None:
        k = _prefix_for(ring, bits)
        if montgomery and k < ring.limbs and k <= _FLOAT_CHECK_MAX_K:
            t = get_tables(ring)
            head = mont_mul_raw(residues[:k], _ONE, t.q32[:k], t.q64[:k], t.qneg[:k])
            digits, above = _garner_digits(head, ring.sub(0, k))
            if _matches_float(residues, ring, k, digits, above, montgomery=True):
                return _to_floats(digits, above, ring.sub(0, k), shift)
            return centered_floats(from_mont(residues, t), ring, shift)
        if montgomery:
            residues, montgomery = from_mont(residues, get_tables(ring)), False
        if k < ring.limbs:
            digits, above = _garner_digits(residues[:k], ring.sub(0, k))
            if _matches(residues, ring, k, digits, above):
                return _to_floats(digits, above, ring.sub(0, k), shift)
    if montgomery:
        residues = from_mont(residues, get_tables(ring))
    digits, above = _garner_digits(residues, ring)
    return _to_floats(digits, above, ring, shift)


def _garner_digits(residues: np.ndarray, ring: RingSpec) -> tuple[np.ndarray, np.ndarray]:
    """The mixed-radix digits v_j ∈ [0, q_j) of each coefficient's lift x ∈ [0, Q) (rows), and
    where x > Q/2.  Once v_i is known, every later row j becomes (t_j − v_i)·q_i^-1 mod q_j, all
    rows at once, with Shoup products; x > floor(Q/2) is a comparison of digits from the top."""
    w, ws, red, half = _garner_constants(ring)
    q = get_tables(ring).q64
    t = residues.astype(U64)  # row j becomes digit v_j once rows 0..j−1 are done
    L = ring.limbs
    for i in range(L - 1):
        v, rows, qr = t[i], t[i + 1:], q[i + 1:]
        vr = v - ((v * red[i + 1:]) >> U64(32)) * qr  # v mod q_j, in [0, 2q_j)
        vr = np.where(vr >= qr, vr - qr, vr)
        d = np.where(rows >= vr, rows - vr, rows + qr - vr)
        t[i + 1:] = _shoup(d, w[i + 1:, i:i + 1], ws[i + 1:, i:i + 1], qr)
    above = np.zeros(t.shape[1], dtype=bool)
    equal = np.ones(t.shape[1], dtype=bool)
    for j in reversed(range(L)):
        above |= equal & (t[j] > half[j])
        equal &= t[j] == half[j]
    return t, above


def _to_floats(t: np.ndarray, above: np.ndarray, ring: RingSpec, shift: int) -> np.ndarray:
    """Σ v_j·W_j·2^-shift, negated as −(Q − x) where x > Q/2: Q − x is (W_L − 1 − x) + 1,
    whose digits are q_j − 1 − v_j (+1 on the lowest)."""
    neg = get_tables(ring).q64 - U64(1) - t
    neg[0] += U64(1)
    return _digit_sum(np.where(above, neg, t).astype(np.float64), above, ring, shift)


def _digit_sum(digits: np.ndarray, above: np.ndarray, ring: RingSpec, shift: int
               ) -> np.ndarray:
    """`_to_floats` from its float digits (v_j, or Q − x's digits where `above`; exact
    integers below 2^32, so a caller may make them elsewhere, e.g. the decoder's compiled
    lift): the BLAS sum of their place values, negated where `above`."""
    places = _place_values(ring, shift)
    out = np.empty((1, digits.shape[1]))
    # column blocks (a multiple of 64 wide, the same at every thread count) that BLAS runs on
    # the calling thread (`_BLAS_GEMV_ONE_THREAD`); each column's sum is the same in any block
    step = max(64, _BLAS_GEMV_ONE_THREAD // digits.shape[0] // 64 * 64)
    for c in range(0, digits.shape[1], step):
        np.matmul(places, digits[:, c:c + step], out=out[:, c:c + step])
    out = out[0]
    return np.where(above, -out, out)


def _prefix_for(ring: RingSpec, bits: int) -> int:
    prod, k = 1, 0
    while k < ring.limbs and prod.bit_length() <= bits + 2:
        prod *= ring.moduli[k]
        k += 1
    return k


@lru_cache(maxsize=64)
def _check_constants(ring: RingSpec, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                      np.ndarray]:
    """For rows j ≥ k: W_i mod q_j (i < k) with Shoup companions, Q_k mod q_j, and
    floor(2^32/q_j) to reduce a digit of another modulus."""
    qs = ring.moduli
    c = np.zeros((len(qs) - k, k), dtype=U64)
    cs = np.zeros_like(c)
    qk = np.zeros((len(qs) - k, 1), dtype=U64)
    for r, qj in enumerate(qs[k:]):
        acc = 1
        for i in range(k):
            c[r, i] = acc % qj
            cs[r, i] = (int(c[r, i]) << 32) // qj
            acc *= qs[i]
        qk[r, 0] = acc % qj
    red = np.array([(1 << 32) // q for q in qs[k:]], dtype=U64).reshape(-1, 1)
    return c, cs, qk, red


#: the float check (`_matches_float`) splits each digit into 16-bit halves: a product of a half
#: and a constant below 2^31 is below 2^47, and a sum of 2k + 2 such terms stays below 2^53
#: (float64's exact integers) while k <= _FLOAT_CHECK_MAX_K
_FLOAT_CHECK_MAX_K = 32
#: OpenBLAS runs a matrix product of m·n·k <= 2^18 multiply-adds on the calling thread; a larger
#: one wakes its own threads, which fight the decoder's lift threads for the cores (the lift at
#: N = 2^16 on 2 threads: 24 ms with whole-piece products, 13 ms in blocks below this size)
_BLAS_ONE_THREAD = 1 << 18
#: ... and a matrix-vector product of m·n < 9216 (2304 times its threading threshold, 4)
_BLAS_GEMV_ONE_THREAD = 9216


@lru_cache(maxsize=64)
def _float_check_constants(ring: RingSpec, k: int, montgomery: bool = False
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For rows j ≥ k, as float64: the matrix [W_i mod q_j | W_i·2^16 mod q_j | −(Q_k mod q_j)]
    (i < k) the digits' low halves, high halves and the sign row are multiplied by (each times
    2^32 mod q_j when the rows compared are `montgomery` words); q_j and 1/q_j (columns)."""
    qs = ring.moduli
    m = np.zeros((len(qs) - k, 2 * k + 1))
    for r, qj in enumerate(qs[k:]):
        acc, f = 1, R if montgomery else 1
        for i in range(k):
            m[r, i] = acc * f % qj
            m[r, k + i] = (acc << 16) * f % qj
            acc *= qs[i]
        m[r, 2 * k] = -(acc * f % qj)
    q = np.array(qs[k:], dtype=np.float64).reshape(-1, 1)
    qinv = 1.0 / q
    for a in (m, q, qinv):
        a.flags.writeable = False
    return m, q, qinv


def _matches(residues: np.ndarray, ring: RingSpec, k: int, digits: np.ndarray,
             above: np.ndarray) -> bool:
    """Whether the lift over the first k moduli (its digits, and where it is negative) agrees
    with every other row of `residues`: Σ_i v_i·W_i (− Q_k where negative) mod q_j.

    In float64 (`_matches_float`: one matrix product, exact) when k <= _FLOAT_CHECK_MAX_K; else
    in u64: each product v_i·(W_i mod q_j) is below 2^62, so four of them sum in a u64 before a
    reduction.  Both say the same (exact integer arithmetic); the float one is ~6x faster."""
    if k <= _FLOAT_CHECK_MAX_K:
        return _matches_float(residues, ring, k, digits, above)
    c, _, qk, _ = _check_constants(ring, k)
    q = get_tables(ring).q64[k:]
    acc = np.zeros((ring.limbs - k, residues.shape[1]), dtype=U64)
    i = 0
    while i < k:  # 4 products, then acc (< q_j) and 3 more, and so on: never past 2^64
        part = acc
        for j in range(i, min(i + (3 if i else 4), k)):
            part = part + digits[j][None, :] * c[:, j:j + 1]
        i += 3 if i else 4
        acc = part % q
    acc = np.where(above[None, :], np.where(acc >= qk, acc - qk, acc + q - qk), acc)
    return bool(np.array_equal(acc, residues[k:]))


def _matches_float(residues: np.ndarray, ring: RingSpec, k: int, digits: np.ndarray,
                   above: np.ndarray, montgomery: bool = False) -> bool:
    """`_matches` by one float64 matrix product, exactly.  The digits v_i < 2^31 split into
    halves v_i = h_i·2^16 + l_i, so x_j = Σ_i l_i·(W_i mod q_j) + h_i·(W_i·2^16 mod q_j)
    − [negative]·(Q_k mod q_j) − r_j (r_j the residue) is a sum of 2k + 2 integers below 2^47
    in magnitude: below 2^53 for k <= _FLOAT_CHECK_MAX_K, so every partial sum is exact in any
    order (BLAS's blocking and threads change nothing).  The lift matches row j exactly when
    x_j ≡ 0 mod q_j, i.e. when x_j − rint(x_j·(1/q_j))·q_j is 0: for x_j = n·q_j the rounded
    quotient is n (x_j·(1/q_j) is within 2^-50·|n| of it), and for any other x_j no integer
    multiple of q_j gives 0.  With `montgomery` rows r_j·2^32 mod q_j, the constants are times
    2^32 too: x_j·2^32 ≡ r_j·2^32 exactly when x_j ≡ r_j."""
    m, q, qinv = _float_check_constants(ring, k, montgomery)
    cols = digits.shape[1]
    rows = np.empty((2 * k + 1, cols))
    np.bitwise_and(digits, U64(0xFFFF), out=rows[:k], casting="unsafe")
    np.right_shift(digits, U64(16), out=rows[k:2 * k], casting="unsafe")
    rows[2 * k] = above
    x = np.empty((m.shape[0], cols))
    step = max(1, _BLAS_ONE_THREAD // m.size)  # column blocks BLAS runs on the calling thread
    for c in range(0, cols, step):
        np.matmul(m, rows[:, c:c + step], out=x[:, c:c + step])
    x -= residues[k:]
    e = np.multiply(x, qinv)
    np.rint(e, out=e)
    e *= q
    return not np.any(np.not_equal(e, x))


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
        target = dst.select([dst.moduli[j] for j in new])
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
