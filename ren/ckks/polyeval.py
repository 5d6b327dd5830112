"""Polynomial evaluation on CKKS ciphertexts at the optimal depth, with exact scales.

    ev.evaluate_polynomial(ct, coeffs)                         # Σ c_i x^i
    ev.evaluate_polynomial(ct, coeffs, basis="chebyshev")      # Σ c_i T_i(x), x in [-1, 1]
    ev.evaluate_polynomial(ct, coeffs, basis="chebyshev", interval=(a, b))
    coeffs = chebyshev_coefficients(np.tanh, 63, (-8, 8))      # a fit to use with that interval

**Depth.**  A polynomial of degree d consumes exactly ⌈log2(d+1)⌉ levels (one more for a
Chebyshev interval other than [-1, 1], which maps x to (2x − a − b)/(b − a) first).  The
evaluation splits p at the largest power of two 2^m ≤ d, p = q·B_{2^m} + r (B the basis:
x^(2^m), or T_(2^m) with T_(2^m+j) = 2·T_(2^m)·T_j − T_(2^m−j)), recursively, down to pieces
c0 + c1·x.  B_(2^m) is computed by m squarings (T_(2k) = 2·T_k² − 1) and sits at depth m; q has
degree < 2^m, so depth ≤ m; their product is at depth m + 1 = ⌈log2(d+1)⌉, and r (degree < 2^m)
fits under it.  A constant q multiplies B_(2^m) as a scalar, which also costs its level.
The giant steps are the powers B_(2^j); the baby steps are degree-1 pieces.  This needs about
d ciphertext products (Paterson–Stockmeyer needs O(√d) with the same depth; not done yet).

**Scales.**  Every piece is computed *into* a target (level, scale): the result has exactly the
scale of the output level (`CKKSParams.scale`), so it can be added to any default-scale
ciphertext at that level.  A degree-1 piece lands on its target with
``multiply_scalar(x, c1, target_scale=…)`` and a rescale; a product q·B lands on it because q is
computed into the scale target·P/scale(B) (P the primes the rescale divides by).  Scales are
exact Fractions, so pieces add without a mismatch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from ren.ckks.ciphertext import Ciphertext, settle_scale
from ren.ckks.errors import OutOfLevelsError
from ren.errors import ParameterError

if TYPE_CHECKING:  # the evaluator imports this module
    from ren.ckks.evaluator import Evaluator

BASES = ("power", "chebyshev")


def depth_of(degree: int) -> int:
    """Levels a polynomial of `degree` consumes (without an interval change)."""
    return math.ceil(math.log2(degree + 1)) if degree > 0 else 0


def _trim(coeffs: Sequence[complex]) -> list[complex]:
    c = [complex(x) for x in coeffs]
    while len(c) > 1 and c[-1] == 0:
        c.pop()
    return c


def _split(c: list[complex], m: int, basis: str) -> tuple[list[complex], list[complex]]:
    """q, r with p = q·B_(2^m) + r, deg r < 2^m (B: x^(2^m) or T_(2^m))."""
    k = 1 << m
    q = c[k:]
    r = c[:k]
    if basis == "chebyshev":  # T_(k+j) = 2·T_k·T_j − T_(k−j) for j ≥ 1
        q = [c[k]] + [2 * x for x in c[k + 1:]]
        r = list(r)
        for j in range(1, len(c) - k):
            r[k - j] -= c[k + j]
    return _trim(q), _trim(r)


class _PolyEval:
    def __init__(self, ev: Evaluator, x: Ciphertext, basis: str):
        self.ev, self.p, self.basis = ev, ev.params, basis
        self.powers: dict[int, Ciphertext] = {0: x}  # m -> B_(2^m)

    def power(self, m: int) -> Ciphertext:
        """B_(2^m), at level x.level − m (computed once)."""
        if m not in self.powers:
            ev, b = self.ev, self.power(m - 1)
            sq = ev.multiply(b, b)
            if self.basis == "chebyshev":  # T_2k = 2·T_k² − 1, the 2 exact (an int)
                sq = ev.add_scalar(ev.multiply_int(sq, 2), -1)
            self.powers[m] = ev.rescale(sq)
        return self.powers[m]

    def scaled(self, x: Ciphertext, c: complex, level: int, scale: Fraction) -> Ciphertext:
        """c·x landing exactly on (level, scale): x dropped to level + 1, then one rescale."""
        x = self.ev.drop_level(x, level + 1)
        return self.ev.rescale(self.ev.multiply_scalar(x, c, target_scale=scale))

    def evaluate(self, c: list[complex], level: int, scale: Fraction) -> Ciphertext:
        """Σ c_i B_i at exactly (level, scale); deg ≥ 1."""
        return settle_scale(self._evaluate(c, level, scale), scale)

    def _evaluate(self, c: list[complex], level: int, scale: Fraction) -> Ciphertext:
        d = len(c) - 1
        if d == 1:
            out = settle_scale(self.scaled(self.powers[0], c[1], level, scale), scale)
            return self.ev.add_scalar(out, c[0]) if c[0] else out
        m = d.bit_length() - 1  # 2^m ≤ d < 2^(m+1)
        q, r = _split(c, m, self.basis)
        big = self.ev.drop_level(self.power(m), level + 1)
        if len(q) == 1:  # a constant times B_(2^m)
            out = self.scaled(big, q[0], level, scale)
        else:
            P = math.prod(self.p.rescale_moduli(level + 1))
            q_ct = self.evaluate(q, level + 1, scale * P / big.scale)
            out = self.ev.rescale(self.ev.multiply(q_ct, big))
        out = settle_scale(out, scale)
        if len(r) > 1:
            return self.ev.add(out, self.evaluate(r, level, scale))
        return self.ev.add_scalar(out, r[0]) if r[0] else out


def evaluate_polynomial(ev: Evaluator, ct: Ciphertext, coeffs: Sequence[Any],
                        basis: str = "power",
                        interval: tuple[float, float] | None = None) -> Ciphertext:
    """p(ct) for p = Σ coeffs[i]·B_i (B_i = x^i, or T_i for ``basis="chebyshev"``, with x first
    mapped from `interval` onto [-1, 1]); see the module docstring.  The result is at level
    ct.level − depth and at that level's default scale."""
    if basis not in BASES:
        raise ParameterError(f"evaluate_polynomial: basis must be one of {BASES}, got {basis!r}")
    if isinstance(coeffs, str | bytes) or not isinstance(coeffs, Sequence | np.ndarray):
        raise ParameterError("evaluate_polynomial: coeffs must be a sequence of numbers, lowest "
                             f"degree first, got {type(coeffs).__name__}")
    try:
        c = _trim(coeffs)
    except TypeError as e:
        raise ParameterError(f"evaluate_polynomial: coeffs must be numbers ({e})") from e
    if not c or not all(math.isfinite(z.real) and math.isfinite(z.imag) for z in c):
        raise ParameterError("evaluate_polynomial: give at least one finite coefficient")
    if interval is not None and basis != "chebyshev":
        raise ParameterError("evaluate_polynomial: interval= goes with basis='chebyshev'")
    ct = ev._ct(ct)
    x = ct
    if interval is not None and tuple(interval) != (-1, 1):
        a, b = (float(v) for v in interval)
        if not (math.isfinite(a) and math.isfinite(b) and a < b):
            raise ParameterError(f"evaluate_polynomial: interval must be (a, b) with a < b, got "
                                 f"{interval!r}")
        if ct.level == 0:
            raise OutOfLevelsError("evaluate_polynomial: the interval change needs a level")
        x = ev.add_scalar(ev.rescale(ev.multiply_scalar(
            ct, 2 / (b - a), target_scale=ev.params.scale(ct.level - 1))), -(a + b) / (b - a))
    d = len(c) - 1
    need = depth_of(d)
    if need > x.level:
        raise OutOfLevelsError(
            f"evaluate_polynomial: degree {d} needs {need} level(s), the input has {x.level}"
            + (" after the interval change" if x is not ct else "")
            + "; encrypt at a higher level, use parameters with more depth, or a lower degree")
    level = x.level - need
    if d == 0:  # a constant: 0·x + c0 at the input's level
        return ev.add_scalar(ev.multiply_int(x, 0), c[0])
    return _PolyEval(ev, x, basis).evaluate(c, level, ev.params.scale(level))


def chebyshev_coefficients(fn: Callable[[np.ndarray], np.ndarray], degree: int,
                           interval: tuple[float, float] = (-1.0, 1.0)) -> np.ndarray:
    """Chebyshev coefficients (lowest first) of the degree-`degree` interpolant of `fn` on
    `interval` at the Chebyshev points (NumPy's `chebinterpolate`); evaluate with
    ``basis="chebyshev", interval=interval``."""
    if isinstance(degree, bool) or not isinstance(degree, int) or degree < 0:
        raise ParameterError(f"chebyshev_coefficients: degree must be an int >= 0, got "
                             f"{degree!r}")
    a, b = (float(v) for v in interval)
    if not a < b:
        raise ParameterError(f"chebyshev_coefficients: interval must be (a, b) with a < b, got "
                             f"{interval!r}")
    return np.polynomial.chebyshev.chebinterpolate(
        lambda t: fn((b - a) / 2 * t + (a + b) / 2), degree)


__all__ = ["BASES", "chebyshev_coefficients", "depth_of", "evaluate_polynomial"]
