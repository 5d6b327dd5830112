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
from ren.ckks.errors import OutOfLevelsError, ScaleMismatchError
from ren.ckks.params import log2_exact, scale_difference
from ren.errors import (
    ParameterError,
    check_callable,
    check_choice,
    check_instance,
    check_int_range,
    check_interval,
    check_number,
    check_sequence,
)

if TYPE_CHECKING:  # the evaluator imports this module
    from ren.ckks.evaluator import Evaluator

BASES = ("power", "chebyshev")
#: The largest degree `evaluate_polynomial` and `chebyshev_coefficients` take: 2^12 − 1 (depth
#: 12, about 4096 ciphertext products; the fit's interpolation matrix is then 128 MiB).
MAX_DEGREE = (1 << 12) - 1
_MAX_DEGREE_WHY = ("a degree-4095 polynomial already needs 12 levels and about 4096 ciphertext "
                   "products (and its fit a 128 MiB matrix)")
#: log2 of how much `evaluate_polynomial` lets an input scale off its level's default (after the
#: free integer correction) multiply the powers' rounding noise before it refuses the input.
SCALE_SLACK_BITS = 1.0


def depth_of(degree: int) -> int:
    """Levels a polynomial of `degree` consumes (without an interval change)."""
    degree = check_int_range(degree, "depth_of: degree", 0)
    return math.ceil(math.log2(degree + 1)) if degree > 0 else 0


def _trim(coeffs: Sequence[complex]) -> list[complex]:
    c = list(coeffs)
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


def _coefficients(coeffs: Any) -> list[complex]:
    """`coeffs` checked (a sequence of at most MAX_DEGREE + 1 finite numbers, one rule for all:
    `ren.errors.check_number`) and trimmed of trailing zeros."""
    hint = "give a sequence of numbers, lowest degree first, with at least one finite coefficient"
    items = check_sequence(coeffs, "evaluate_polynomial: coeffs", 1, MAX_DEGREE + 1, hint=hint)
    c = [check_number(v, f"evaluate_polynomial: coeffs[{i}]") for i, v in enumerate(items)]
    return _trim(c)


def _at_default_scale(ev: Evaluator, x: Ciphertext, degree: int) -> Ciphertext:
    """`x` brought to its level's default scale Δ_l, or a ScaleMismatchError.

    Every squaring of the powers squares the ratio Δ_l/x.scale (and with it the relative
    rounding noise of the powers): an input at 2^33 under a 40-bit chain kept 8.6 of 33 bits of
    a degree-7 result, one at 2^39.5 kept 2.7 bits of a degree-127 one, one at 2^40.3 none.  A
    scale below the default is raised for free: an integer product by k = round(Δ_l/x.scale)
    multiplies the encrypted value and the scale alike, so the value is unchanged and the scale
    is within a factor 1 ± 1/(2k) of Δ_l.  What is left of the ratio ρ is amplified to about
    ρ^(2^m) by the m squarings of the highest power (m = ⌊log2 degree⌋): when that multiplies
    the rounding noise by more than 2^SCALE_SLACK_BITS the evaluation is refused, with the fix
    (one `adjust_scale` to the default; it costs a level).  (An upper bound: where the input's
    own noise times p' dominates, less is lost; a scale above the default loses more, since
    the pieces are then computed into scales below their level's.)"""
    p = ev.params
    default = p.scale(x.level)
    if x.scale == default or degree < 2:  # no squarings: no amplification
        return x
    k = round(default / x.scale)
    if k >= 2:
        raised = ev.multiply_int(x, k)
        x = Ciphertext(raised.parts, x.scale * k, x.level, p)
    squarings = degree.bit_length() - 1
    lost = ((1 << squarings) - 1) * abs(log2_exact(default / x.scale))
    if lost > SCALE_SLACK_BITS:
        raise ScaleMismatchError(
            f"evaluate_polynomial: the input's scale differs from level {x.level}'s default "
            f"params.scale({x.level}): {scale_difference(x.scale, default)}; the {squarings} "
            f"squarings of a degree-{degree} polynomial raise that ratio to its "
            f"{1 << squarings}th power, which would multiply the powers' rounding noise by up to "
            f"2^{lost:.1f} (an integer product only corrects a scale at least 1.5× below the "
            "default, free of levels); bring it "
            f"to the default first with ev.adjust_scale(ct, params.scale({x.level - 1})) (one "
            "level), or encode at the default scale")
    return x


def evaluate_polynomial(ev: Evaluator, ct: Ciphertext, coeffs: Sequence[Any],
                        basis: str = "power",
                        interval: tuple[float, float] | None = None) -> Ciphertext:
    """p(ct) for p = Σ coeffs[i]·B_i (B_i = x^i, or T_i for ``basis="chebyshev"``, with x first
    mapped from `interval` onto [-1, 1]); see the module docstring.  The result is at level
    ct.level − depth and at that level's default scale.  An input whose scale is below its
    level's default is first raised to it by an integer product (free); one that cannot be
    brought close enough raises ScaleMismatchError (see `_at_default_scale`)."""
    from ren.ckks.evaluator import Evaluator  # (the evaluator imports this module)

    ev = check_instance(ev, Evaluator, "evaluate_polynomial: ev").explicit()  # places its own
    check_choice(basis, "evaluate_polynomial: basis", BASES)
    c = _coefficients(coeffs)
    if interval is not None:
        if basis != "chebyshev":
            raise ParameterError("evaluate_polynomial: interval= goes with basis='chebyshev'")
        a, b = check_interval(interval, "evaluate_polynomial: interval")
    ct = ev._ct(ct)
    x = ct
    d = len(c) - 1
    if interval is not None and (a, b) != (-1.0, 1.0):
        if ct.level == 0:
            raise OutOfLevelsError("evaluate_polynomial: the interval change needs a level")
        # lands on the next level's default scale exactly, whatever ct's scale
        x = ev.add_scalar(ev.rescale(ev.multiply_scalar(
            ct, 2 / (b - a), target_scale=ev.params.scale(ct.level - 1))), -(a + b) / (b - a))
    need = depth_of(d)
    if need > x.level:
        raise OutOfLevelsError(
            f"evaluate_polynomial: degree {d} needs {need} level(s), the input has {x.level}"
            + (" after the interval change" if x is not ct else "")
            + "; encrypt at a higher level, use parameters with more depth, or a lower degree")
    level = x.level - need
    if d == 0:  # a constant: 0·x + c0 at the input's level
        return ev.add_scalar(ev.multiply_int(x, 0), c[0])
    x = _at_default_scale(ev, x, d)
    return _PolyEval(ev, x, basis).evaluate(c, level, ev.params.scale(level))


def chebyshev_coefficients(fn: Callable[[np.ndarray], np.ndarray], degree: int,
                           interval: tuple[float, float] = (-1.0, 1.0)) -> np.ndarray:
    """Chebyshev coefficients (lowest first) of the degree-`degree` interpolant of `fn` on
    `interval` at the Chebyshev points (NumPy's `chebinterpolate`); evaluate with
    ``basis="chebyshev", interval=interval``.  `fn` takes a NumPy array of points and returns
    one finite number per point; degree is at most MAX_DEGREE."""
    check_callable(fn, "chebyshev_coefficients: fn", hint="e.g. np.tanh or lambda x: 1 / (1 + "
                   "np.exp(-x))")
    degree = check_int_range(degree, "chebyshev_coefficients: degree", 0, MAX_DEGREE,
                             hint=_MAX_DEGREE_WHY)
    a, b = check_interval(interval, "chebyshev_coefficients: interval")

    def values(t: np.ndarray) -> np.ndarray:
        pts = (b - a) / 2 * t + (a + b) / 2
        try:
            y = np.asarray(fn(pts))
        except Exception as e:  # the user's function: say what it was called with
            raise ParameterError(
                f"chebyshev_coefficients: fn raised {type(e).__name__} ({e}) when called with a "
                f"NumPy array of {len(pts)} points; fn must take an array and return one value "
                "per point (np.sin, not math.sin; or np.vectorize(fn))") from e
        if y.shape != pts.shape:
            raise ParameterError(
                f"chebyshev_coefficients: fn returned shape {y.shape} for {len(pts)} points; "
                "it must return one value per point (for a constant c: np.full_like(x, c))")
        if y.dtype == np.bool_ or not np.issubdtype(y.dtype, np.number):
            raise ParameterError(f"chebyshev_coefficients: fn must return numbers, got dtype "
                                 f"{y.dtype}")
        bad = ~np.isfinite(y)
        if np.any(bad):
            raise ParameterError(
                f"chebyshev_coefficients: fn is not finite at x = {pts[bad][0]!r} (in "
                f"{interval!r}): {y[bad][0]!r}; fit it on an interval where it is finite")
        return y

    return np.polynomial.chebyshev.chebinterpolate(values, degree)


__all__ = ["BASES", "MAX_DEGREE", "chebyshev_coefficients", "depth_of", "evaluate_polynomial"]
