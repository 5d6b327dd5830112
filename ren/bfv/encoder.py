"""BFV plaintexts and their encodings.

A `Plaintext` is a polynomial with N coefficients in [0, t).  Two encodings:

- **batch** (t a prime ≡ 1 mod 2N below 2^31): N integers mod t in slots arranged as 2 rows
  × N/2 columns.  Slot (r, c) is the plaintext polynomial's value at ψ^(±3^c) (+ for row 0,
  − for row 1; ψ a primitive 2N-th root of unity mod t), so the Galois automorphism
  X -> X^(3^k) rotates every row left by k columns and X -> X^(2N−1) swaps the rows (as SEAL's
  ``BatchEncoder``).  The evaluations are Ren's negacyclic NTT in the one-prime ring
  ``RingSpec(N, (t,))`` (bit-reversed order: NTT slot j holds the value at ψ^(2·brv(j)+1),
  `ren.ring.automorph`), so encoding is a permutation and an inverse NTT.
- **coefficient** (any t >= 2): the integers are the coefficients themselves.

Decoding returns int64 values in [0, t), or centred in (−t/2, t/2] with ``signed=True``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ren.bfv.errors import BatchingError, ParamsMismatchError
from ren.bfv.params import BFVParams
from ren.errors import ParameterError, ShapeError, check_bool, check_instance, is_int
from ren.ring import RingSpec, intt, ntt

#: The generator of the column rotations: X -> X^(3^k) rotates the rows left by k.
COLUMN_GENERATOR = 3


@dataclass(eq=False)
class Plaintext:
    """A BFV plaintext: N coefficients in [0, t) (int64), under `params`."""

    coeffs: np.ndarray
    params: BFVParams

    def __post_init__(self) -> None:
        check_instance(self.params, BFVParams, "Plaintext: params")
        c = self.coeffs
        if not isinstance(c, np.ndarray) or c.shape != (self.params.N,) or c.dtype != np.int64:
            raise ShapeError(f"Plaintext: coeffs must be an int64 array of N={self.params.N} "
                             f"values, got {type(c).__name__} {getattr(c, 'shape', '')}")
        if c.size and (int(c.min()) < 0 or int(c.max()) >= self.params.t):
            raise ParameterError(f"Plaintext: coefficients must lie in [0, t={self.params.t})")

    def centred(self) -> list[int]:
        """The coefficients lifted to (−t/2, t/2] as Python ints."""
        t = self.params.t
        return [v - t if v > t // 2 else v for v in self.coeffs.tolist()]

    def __repr__(self) -> str:
        return f"<BFV Plaintext N={self.params.N} t={self.params.t}>"


def reduce_mod_t(values: Any, t: int, n: int, who: str) -> np.ndarray:
    """`values` (ints of any size and sign, at most `n` of them) reduced into [0, t), padded
    with zeros to `n` (int64)."""
    if isinstance(values, str | bytes):
        raise ShapeError(f"{who}: expected a sequence of ints, got {type(values).__name__}")
    arr = np.asarray(values) if not isinstance(values, np.ndarray) else values
    if arr.ndim == 0:
        raise ShapeError(f"{who}: expected a sequence of ints, got a scalar {values!r}")
    arr = arr.reshape(-1)
    if arr.size > n:
        raise ShapeError(f"{who}: {arr.size} values for {n} places")
    out = np.zeros(n, np.int64)
    if arr.dtype == object or arr.dtype == np.uint64:
        items = arr.tolist()
        for v in items:
            if not is_int(v):
                raise ShapeError(f"{who}: values must be ints, found {type(v).__name__} {v!r}")
        out[: len(items)] = [int(v) % t for v in items]
    elif np.issubdtype(arr.dtype, np.integer) and arr.dtype != np.bool_:
        out[: arr.size] = np.mod(arr.astype(np.int64), t)
    elif arr.size:
        raise ShapeError(f"{who}: values must be ints, got an array of {arr.dtype}")
    return out


class Encoder:
    """Batch and coefficient encoding for one parameter set."""

    def __init__(self, params: BFVParams) -> None:
        self.params = check_instance(params, BFVParams, "Encoder: params")

    # -- the slot structure -----------------------------------------------------------------------
    def _require_batching(self) -> None:
        p = self.params
        if not p.batching:
            raise BatchingError(
                f"batch encoding needs t a prime ≡ 1 (mod 2N = {2 * p.N}) below 2^31; t = {p.t} "
                "is not. Use encode_coeffs, or a batching t such as 65537 (N <= 2^15)")

    @cached_property
    def _t_ring(self) -> RingSpec:
        self._require_batching()
        return RingSpec(self.params.N, (self.params.t,))

    @cached_property
    def slot_index(self) -> np.ndarray:
        """NTT position of each slot, in slot order (row 0's columns, then row 1's)."""
        N = self.params.N
        logn = N.bit_length() - 1
        two_n = 2 * N
        exps = [pow(COLUMN_GENERATOR, c, two_n) for c in range(N // 2)]
        exps += [two_n - e for e in exps]

        def brv(k: int) -> int:
            return int(format(k, f"0{logn}b")[::-1], 2) if logn else 0

        return np.array([brv((e - 1) // 2) for e in exps], np.int64)

    # -- encoding ---------------------------------------------------------------------------------
    def encode(self, values: Any) -> Plaintext:
        """Batch-encode up to N integers (any sign and size, reduced mod t): a flat sequence
        (row 0's N/2 columns, then row 1's) or a (2, N/2) array; missing slots are 0."""
        self._require_batching()
        p = self.params
        slots = reduce_mod_t(values, p.t, p.N, "encode")
        evals = np.zeros((1, p.N), np.uint32)
        evals[0, self.slot_index] = slots
        coeffs = intt(evals, self._t_ring)[0].astype(np.int64)
        return Plaintext(coeffs, p)

    def encode_coeffs(self, values: Any) -> Plaintext:
        """The plaintext whose coefficients are `values` (up to N ints, reduced mod t)."""
        p = self.params
        return Plaintext(reduce_mod_t(values, p.t, p.N, "encode_coeffs"), p)

    # -- decoding ---------------------------------------------------------------------------------
    def _check_pt(self, pt: Any, who: str) -> Plaintext:
        check_instance(pt, Plaintext, f"{who}: pt", hint="decrypt a ciphertext first")
        if pt.params != self.params:
            raise ParamsMismatchError(f"{who}: the plaintext was made under other BFVParams")
        return pt

    def _finish(self, values: np.ndarray, signed: bool) -> np.ndarray:
        signed = check_bool(signed, "decode: signed")
        t = self.params.t
        out = values.astype(np.int64)
        if signed:
            out = np.where(out > t // 2, out - t, out)
        return out

    def decode(self, pt: Plaintext, signed: bool = False) -> np.ndarray:
        """The N slot values (row 0, then row 1) in [0, t), or centred with ``signed=True``;
        ``.reshape(2, -1)`` gives the rows."""
        self._require_batching()
        pt = self._check_pt(pt, "decode")
        evals = ntt(pt.coeffs.astype(np.uint32).reshape(1, -1), self._t_ring)[0]
        return self._finish(evals[self.slot_index], signed)

    def decode_coeffs(self, pt: Plaintext, signed: bool = False) -> np.ndarray:
        """The coefficients in [0, t), or centred with ``signed=True``."""
        return self._finish(self._check_pt(pt, "decode_coeffs").coeffs, signed)


__all__ = ["COLUMN_GENERATOR", "Encoder", "Plaintext", "reduce_mod_t"]
