"""The special FFT of CKKS as a product of sparse matrices on the slots, for bootstrapping's
CoeffToSlot and SlotToCoeff.

    fwd = special_fft_stages(n)                    # the log2(n) butterfly stages, in order
    groups = merge_stages(fwd, 3)                  # three sparse matrices (each {diagonal: values})
    apply_diagonals(groups[0], x)                  # plaintext counterpart of one LinearTransform

**The map.**  Slot j of a real polynomial m is m(ζ_j), ζ_j = ζ^(5^j), ζ = exp(iπ/N), n = N/2
slots (`ren.ckks.embedding`).  Since ζ_j^n = i for every j (5^j ≡ 1 mod 4), the slots are
z = U·w with w = m_lo + i·m_hi (the two halves of the coefficients) and U[j][k] = ζ_j^k, n×n.

**The factors.**  P(X) = Σ_k w_k X^k evaluated at the n points ζ_j splits as P_e(X²) + X·P_o(X²),
and ζ_(j+n/2) = −ζ_j (5^(n/2) ≡ N+1 mod 2N), so z_j and z_(j+n/2) are P_e(ζ_j²) ± ζ_j·P_o(ζ_j²):
one radix-2 butterfly per pair, and the halves are the same problem for the points ζ_j².  Unrolled,
U = S_n ··· S_4·S_2·BR: BR the bit-reversal permutation of the input, S_len the butterflies of
blocks of `len` slots, (u, v) -> (u + t_j·v, u − t_j·v) with t_j = ζ^(5^j·n/len), j < len/2.
Each S_len has three diagonals: 0 and ±len/2.

**Bootstrapping uses them without BR**: CoeffToSlot applies S_2⁻¹···S_n⁻¹ (giving BR·w: the
coefficients in bit-reversed order, which EvalMod, slot-wise, does not mind) and SlotToCoeff
applies S_n···S_2 to them.  Merging r consecutive stages gives one matrix with up to 2^(r+1) − 1
diagonals, evaluated as one linear transform (one level) with baby-step giant-step: the number
of groups trades levels for rotations.
"""

from __future__ import annotations

import numpy as np

from ren.ckks.embedding import slot_powers
from ren.errors import ParameterError
from ren.ring.tables import bit_reverse_indices

#: a sparse square matrix on the slots: diagonal index k (mod n) -> d_k, with d_k[j] = M[j][j+k]
Diagonals = dict[int, np.ndarray]


def _twiddles(n: int, length: int) -> np.ndarray:
    """t_j = ζ^(5^j·n/len) for j < len/2 (ζ = exp(iπ/N), N = 2n): the butterfly factors of
    S_len, on the encoder's slot order."""
    e = slot_powers(2 * n)[: length // 2] * (n // length) % (4 * n)  # 4n: the order of ζ
    return np.exp(1j * np.pi * e / (2 * n))


def _stage(n: int, length: int, inverse: bool) -> Diagonals:
    """S_len (or its inverse) as three diagonals."""
    half = length // 2
    t = np.tile(_twiddles(n, length), n // length)  # t_j at each block's top position
    top = np.tile(np.r_[np.ones(half, bool), np.zeros(half, bool)], n // length)
    tt = np.zeros(n, complex)
    tt[top] = t  # top rows: their butterfly factor
    tb = np.zeros(n, complex)
    tb[~top] = t  # bottom rows: their pair's factor
    one_top, one_bot = top.astype(complex), (~top).astype(complex)
    if not inverse:  # out_top = u + t·v, out_bot = u − t·v
        parts = ((0, one_top - tb), (half, tt), (-half, one_bot))
    else:  # u = (top + bot)/2, v = (top − bot)/(2t)
        inv_tb = np.divide(1, tb, out=np.zeros(n, complex), where=~top)
        parts = ((0, one_top / 2 - inv_tb / 2), (half, one_top / 2), (-half, inv_tb / 2))
    d: Diagonals = {}
    for k, v in parts:  # for n = 2, +half and −half are one diagonal
        d[k % n] = d[k % n] + v if k % n in d else v
    return d


def special_fft_stages(n: int, inverse: bool = False) -> list[Diagonals]:
    """The factors of U·BR (see the module docstring) in the order they are applied: S_2, S_4,
    …, S_n; with ``inverse``, S_n⁻¹, …, S_2⁻¹ (so U⁻¹ = BR·(the product))."""
    if n < 2 or n & (n - 1):
        raise ParameterError(f"special_fft_stages: n must be a power of two >= 2, got {n}")
    stages = [_stage(n, 1 << s, inverse) for s in range(1, n.bit_length())]
    return stages[::-1] if inverse else stages


def multiply_diagonals(a: Diagonals, b: Diagonals, n: int) -> Diagonals:
    """The diagonals of A·B: (A·B)[j][j+α+β] collects A[j][j+α]·B[j+α][j+α+β]."""
    out: Diagonals = {}
    for i, da in a.items():
        for k, db in b.items():
            key = (i + k) % n
            term = da * np.roll(db, -i)
            out[key] = out[key] + term if key in out else term
    return {k: v for k, v in out.items() if np.any(np.abs(v) > 1e-300)}


def merge_stages(stages: list[Diagonals], groups: int) -> list[Diagonals]:
    """`stages` (in the order applied) merged into `groups` matrices, also in the order applied;
    the stages are split as evenly as possible, later groups taking the larger share."""
    if not 1 <= groups <= len(stages):
        raise ParameterError(f"merge_stages: groups must be in [1, {len(stages)}] (one per "
                             f"butterfly stage at most), got {groups}")
    n = len(next(iter(stages[0].values())))
    base, extra = divmod(len(stages), groups)
    sizes = [base + (g >= groups - extra) for g in range(groups)]
    out, at = [], 0
    for size in sizes:
        m = stages[at]
        for s in stages[at + 1:at + size]:
            m = multiply_diagonals(s, m, n)  # s applied after m
        out.append(m)
        at += size
    return out


def apply_diagonals(d: Diagonals, x: np.ndarray) -> np.ndarray:
    """M·x for M given by its diagonals (the plaintext counterpart of a linear transform)."""
    out = np.zeros(len(x), complex)
    for k, v in d.items():
        out += v * np.roll(x, -k)
    return out


def bit_reverse(x: np.ndarray) -> np.ndarray:
    """x permuted by bit reversal of the index (len(x) a power of two)."""
    return np.asarray(x)[bit_reverse_indices(len(x).bit_length() - 1)]


__all__ = ["Diagonals", "apply_diagonals", "bit_reverse", "merge_stages", "multiply_diagonals",
           "special_fft_stages"]
