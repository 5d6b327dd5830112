"""The CKKS encoder: N/2 complex slots <-> a real polynomial through the canonical embedding.

Slot j is the evaluation m(ζ^(5^j)) with ζ = exp(iπ/N).  Then X -> X^(5^k) (`Poly.rotate(k)`)
moves slot j + k to slot j (a left rotation by k) and X -> X^-1 conjugates every slot, because m
has real coefficients.  All evaluations at the odd powers ζ^(2t+1) are one length-N FFT of the
twisted coefficients m_i·ζ^i, so both directions cost O(N log N) with NumPy's FFT.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from numbers import Number

import numpy as np

from ren.ckks.ciphertext import Plaintext
from ren.ckks.errors import ParamsMismatchError
from ren.ckks.params import CKKSParams, normalize_scale
from ren.errors import ParameterError, ShapeError
from ren.poly import Poly

#: Coefficients stay below 2^62 in magnitude on the fast (int64) path.
_INT64_SAFE = float(1 << 62)


@lru_cache(maxsize=16)
def _tables(N: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t_j, t'_j, ζ^i): slot j sits at odd power 2t_j+1 = 5^j mod 2N, its conjugate at 2t'_j+1
    = -5^j mod 2N; ζ^i are the twist factors."""
    slots = N // 2
    e = np.empty(slots, dtype=np.int64)
    g = 1
    for j in range(slots):
        e[j] = g
        g = g * 5 % (2 * N)
    t = (e - 1) // 2
    tc = (2 * N - e - 1) // 2
    twist = np.exp(1j * np.pi * np.arange(N) / N)
    for a in (t, tc, twist):
        a.flags.writeable = False
    return t, tc, twist


def embed_inverse(z: np.ndarray, N: int) -> np.ndarray:
    """The real coefficients m (float) whose slots are z (N/2 complex values)."""
    t, tc, twist = _tables(N)
    v = np.zeros(N, dtype=np.complex128)
    v[t] = z
    v[tc] = np.conj(z)
    return (np.fft.fft(v) / N * np.conj(twist)).real


def embed(m: np.ndarray, N: int) -> np.ndarray:
    """The N/2 slots of the real coefficient vector m."""
    t, _, twist = _tables(N)
    return (np.fft.ifft(m * twist) * N)[t]


def _as_slots(values, slots: int) -> np.ndarray:
    if isinstance(values, Number) and not isinstance(values, bool):
        z = np.full(slots, complex(values))
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
        z = _as_slots(values, self.params.slots)
        scaled = embed_inverse(z, self.params.N) * float(scale)
        if np.max(np.abs(scaled), initial=0.0) < _INT64_SAFE:
            return np.rint(scaled).astype(np.int64).tolist()
        return [int(x) for x in np.rint(scaled)]

    def encode(self, values, level: int | None = None,
               scale: Fraction | int | float | None = None) -> Plaintext:
        """A Plaintext of `values` (a vector of up to N/2 numbers, zero-padded, or one number
        for every slot) at `level` (default: the top) and `scale` (default: the level's scale).
        The polynomial is built lazily with `Poly.from_coefficients` and kept in the NTT domain."""
        p = self.params
        level = p.depth if level is None else p.check_level(level)
        scale = p.scale(level) if scale is None else _scale(scale)
        coeffs = self.coefficients(values, scale)
        ring = p.ring(level)
        bound = max(abs(c) for c in coeffs)
        if 2 * bound >= ring.Q:
            raise ParameterError(
                f"encode: the scaled values reach 2^{bound.bit_length()}, beyond Q/2 at level "
                f"{level} (2^{ring.Q.bit_length() - 1}); use a smaller scale or a higher level")
        return Plaintext(Poly.from_coefficients(coeffs, ring, device=p.device).ntt(), scale,
                         level, p)

    def decode(self, pt: Plaintext) -> np.ndarray:
        """The N/2 complex slots of a Plaintext (realizes it)."""
        if not isinstance(pt, Plaintext):
            raise ParameterError(f"decode expects a Plaintext, got {type(pt).__name__}; decrypt "
                                 "a Ciphertext first")
        if pt.params != self.params:
            raise ParamsMismatchError("decode: the plaintext was made under other CKKSParams")
        coeffs = pt.poly.coefficients()
        big = max(abs(c) for c in coeffs) >= 1 << 62
        m = (np.array([float(c) for c in coeffs]) if big
             else np.array(coeffs, dtype=np.int64).astype(np.float64))
        return embed(m / float(pt.scale), self.params.N)


def _scale(scale) -> Fraction:
    if isinstance(scale, bool) or not isinstance(scale, int | float | Fraction):
        raise ParameterError(f"scale must be a positive number, got {scale!r}")
    if isinstance(scale, float) and not np.isfinite(scale):
        raise ParameterError(f"scale must be finite, got {scale!r}")
    return normalize_scale(Fraction(scale))
