"""The ring kernels — the one list of them — and their constant tables as plain arrays.

`RingKernel` names every non-elementwise kernel a schedule can call (the value is the kernel
kind string of `ren.kernel`).  `kernel_tables(kind, N, src, dst, ...)` returns the constants a
backend needs to implement one call, as a dict of named NumPy arrays computed from the explicit
parameters only (ring degree, source and destination moduli, …), so a CUDA or C renderer can
upload them without knowing `RingTables` or the layout tricks of the NumPy NTT.

All tables are u32 unless noted; "Montgomery-ready" constants c·R mod q (R = 2^32) turn a
Montgomery product by them into a product by c.  Every kind gets, for its destination moduli:
``q`` (moduli), ``qneg`` (-q^-1 mod 2^32) and ``r2`` (R^2 mod q: a Montgomery product by it
converts standard form to Montgomery form).  Per kind:

* NTT — ``psi`` (the canonical primitive 2N-th root per limb), ``twiddles`` (L, N):
  psi^brv(k) (Cooley–Tukey order: the butterfly of stage m, block i uses twiddles[m + i]),
  ``twiddles_shoup`` floor(w·2^32 / q);
* INTT — ``inv_twiddles`` psi^-brv(k), ``inv_twiddles_shoup``, ``n_inv`` N^-1 mod q and
  ``n_inv_shoup``;
  `twiddle_rows(kind, N, moduli)` gives the same rows unstacked: one shared read-only row per
  modulus (the "cpu" device passes a pointer per limb to it instead of a stacked copy);
* TO_RNS — ``word_weights`` (L, W): 2^(32k) mod q for word k, ``wrap`` 2^(32W) mod q (subtract
  it from negative, two's-complement inputs);
* BASIS_CONVERT — ``src_q``, ``src_qneg``, ``qhat_inv`` [(Q/q_i)^-1]_{q_i}, ``bconv``
  (L_dst, L_src) Montgomery-ready (Q/q_i) mod p_j, ``copy_from`` (int64) the source limb each
  destination limb copies, or -1 where it is converted;
* RESCALE — ``src_q``, ``src_qneg``, ``src_r2``, ``half`` Montgomery form of floor(P/2) mod q_i
  (over the source limbs), ``p_inv`` (k, L_src) Montgomery-ready p_s^-1 mod q_i for the s-th
  dropped modulus (last first; entries at or past that modulus' own limb are 0), ``lift``
  (k, L_src) (p_0···p_(s-1))·R² mod q_i over the kept limbs (the weight of the s-th mixed-radix
  digit, the dropped moduli counted last first; a Montgomery product by it gives the digit's
  term in Montgomery form) and ``p_all_inv`` (L_src) Montgomery-ready P^-1 mod q_i (0 on the
  dropped limbs);
* RANDOM — the common tables only (the sampler is `ren.sampling`).
"""

from __future__ import annotations

import enum
from functools import lru_cache

import numpy as np

from ren.ring.modarith import R
from ren.ring.tables import _powers, bit_reverse_indices, neg_inv32, primitive_root_2n, shoup

U32 = np.uint32
U64 = np.uint64


class RingKernel(enum.Enum):
    """The ring kernels: each runs as one library call on whole polynomials."""

    NTT = "ntt"
    INTT = "intt"
    TO_RNS = "to_rns"
    BASIS_CONVERT = "basis_convert"
    RESCALE = "rescale"
    RANDOM = "random"

    def __repr__(self) -> str:
        return f"RingKernel.{self.name}"


def _u32(values) -> np.ndarray:
    return np.array(values, dtype=U64).astype(U32)


def _montgomery(moduli: tuple[int, ...]) -> dict[str, np.ndarray]:
    return {"q": _u32(moduli),
            "qneg": neg_inv32(moduli).astype(U32),
            "r2": _u32([R * R % q for q in moduli])}


@lru_cache(maxsize=1024)
def _power_row(w: int, q: int, N: int) -> tuple[np.ndarray, np.ndarray]:
    """w^0 .. w^(N-1) mod q in bit-reversed order, and its Shoup row: one modulus' row, cached
    on its own (the rings of a program share moduli, so a prime's row is made once, not once
    per ring it is in), by `ren.ring.tables`' vectorized doubling."""
    qcol = np.array([[q]], dtype=U64)
    row = _powers(np.array([w], dtype=U64), qcol, N)[0, bit_reverse_indices(N.bit_length() - 1)]
    tw, companion = row.astype(U32), shoup(row, qcol[0]).astype(U32)
    tw.flags.writeable = companion.flags.writeable = False
    return tw, companion


def twiddle_rows(kind: RingKernel, N: int, moduli: tuple[int, ...]
                 ) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """The twiddle rows of an NTT (or INTT) over `moduli`, one read-only row per modulus, and
    their Shoup rows: the rows of ``twiddles``/``twiddles_shoup`` (``inv_twiddles``/...)
    without stacking them.  A row is one modulus' own, shared by every call whose moduli hold
    that prime, so a backend that takes a row per limb (the "cpu" device) keeps one copy."""
    kind = RingKernel(kind)
    psi = [primitive_root_2n(q, N) for q in moduli]
    if kind is RingKernel.INTT:
        psi = [pow(p, -1, q) for p, q in zip(psi, moduli)]
    elif kind is not RingKernel.NTT:
        raise ValueError(f"twiddle_rows: {kind} has no twiddles")
    rows = [_power_row(w, q, N) for w, q in zip(psi, moduli)]
    return tuple(r[0] for r in rows), tuple(r[1] for r in rows)


def _stacked(rows: tuple[np.ndarray, ...], N: int) -> np.ndarray:
    return np.array(rows, dtype=U32).reshape(len(rows), N)


@lru_cache(maxsize=256)
def kernel_tables(kind: RingKernel, N: int, src: tuple[int, ...], dst: tuple[int, ...],
                  words: int = 0, dropped: tuple[int, ...] = (), twiddles: bool = True
                  ) -> dict[str, np.ndarray]:
    """The constant tables of one ring-kernel call (see the module docstring).  The arrays are
    read-only and shared between calls with the same parameters.  ``twiddles=False`` leaves the
    (L, N) twiddle tables of an NTT or INTT out, for a backend that takes `twiddle_rows`."""
    kind = RingKernel(kind)
    out = _montgomery(dst)
    if kind in (RingKernel.NTT, RingKernel.INTT):
        psi = [primitive_root_2n(q, N) for q in dst]
        out["psi"] = _u32(psi)
        name = "twiddles" if kind is RingKernel.NTT else "inv_twiddles"
        if twiddles:
            tw, companions = twiddle_rows(kind, N, dst)
            out[name], out[f"{name}_shoup"] = _stacked(tw, N), _stacked(companions, N)
        if kind is RingKernel.INTT:
            n_inv = [pow(N, -1, q) for q in dst]
            out["n_inv"] = _u32(n_inv)
            out["n_inv_shoup"] = _u32([(v << 32) // q for v, q in zip(n_inv, dst)])
    elif kind is RingKernel.TO_RNS:
        out["word_weights"] = _u32([[pow(2, 32 * k, q) for k in range(words)] for q in dst])
        out["wrap"] = _u32([pow(2, 32 * words, q) for q in dst])
    elif kind is RingKernel.BASIS_CONVERT:
        Q = 1
        for q in src:
            Q *= q
        out["src_q"] = _u32(src)
        out["src_qneg"] = _montgomery(src)["qneg"]
        out["qhat_inv"] = _u32([pow(Q // q % q, -1, q) for q in src])
        out["bconv"] = _u32([[(Q // q) % p * (R * R % p) % p for q in src] for p in dst])
        out["copy_from"] = np.array([src.index(p) if p in src else -1 for p in dst], np.int64)
    elif kind is RingKernel.RESCALE:
        P = 1
        for p in dropped:
            P *= p
        m = _montgomery(src)
        out.update(src_q=m["q"], src_qneg=m["qneg"], src_r2=m["r2"])
        out["half"] = _u32([(P // 2) % q * R % q for q in src])
        rows = []
        for j in range(len(src) - 1, len(src) - 1 - len(dropped), -1):
            p = src[j]
            rows.append([pow(p, -1, q) * R % q if i < j else 0 for i, q in enumerate(src)])
        out["p_inv"] = _u32(rows).reshape(len(dropped), len(src))
        kept = len(src) - len(dropped)
        lift, w = [], 1  # w: the product of the moduli dropped before the s-th
        for j in range(len(src) - 1, kept - 1, -1):
            lift.append([w % q * R * R % q if i < kept else 0 for i, q in enumerate(src)])
            w *= src[j]
        out["lift"] = _u32(lift).reshape(len(dropped), len(src))
        out["p_all_inv"] = _u32([pow(P, -1, q) * R % q if i < kept else 0
                                 for i, q in enumerate(src)])
    for arr in out.values():
        arr.flags.writeable = False
    return out


__all__ = ["RingKernel", "kernel_tables", "twiddle_rows"]
