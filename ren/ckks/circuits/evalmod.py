"""EvalMod, bootstrapping's modular reduction, as a swappable parameter object.

    EvalModParams()                                  # the default: degree-31 cosine, r doublings
    EvalModParams(degree=63, double_angles=2)        # another point of the same family
    Bootstrapper(params, eval_mod=MyEvalMod(...))    # your own approximation (below)

After ModRaise and CoeffToSlot a slot holds u = y/((K + 1)·K_0), y = t/Δ_in the raised
coefficient t = m + Q_0·I in units of the input scale, |I| ≤ K.  EvalMod must return
sin(2π·y/K_0) ≈ (2π/K_0)·(y mod K_0) there; SlotToCoeff multiplies by K_0/2π
(`EvalMod.output_factor`).

**The default** (`EvalModParams`): a Chebyshev fit on [−1, 1] of
cos(2π(u·(K + 1) − 1/4)/2^r) of degree `degree`, then r double-angle steps cos 2θ = 2cos²θ − 1
(r = `double_angles`, default the fewest that keep the cosine's argument within ±9 radians,
where a degree-31 fit is exact to about 2^-45).  **Levels**: ⌈log2(degree + 1)⌉ + r (5 + 3 at
the small preset, K = 10; 5 + 4 at n16, K = 13).  **Precision**: the fit's error times 4^r (the
doublings' derivative) times K_0/2π, checked when fitted (`FIT_BITS`); the sine itself is
within (2π·y/K_0)²/6 of the identity relative to y, which `message_ratio_bits` (K_0) controls.

**Your own.**  Subclass `EvalModParams` and override `fit` (the Chebyshev coefficients on
[−1, 1] of what the polynomial evaluates before the r doublings) and, if it needs other
levels, `levels`; or override `build` to return a subclass of `EvalMod` whose `evaluate` does
something else entirely (an arcsine correction, a multi-interval fit).  A plain sine of higher
degree and no doublings, for example (``tests/test_ckks_circuits_api.py`` bootstraps with it)::

    @dataclass(frozen=True)
    class PlainSine(EvalModParams):
        def fit(self, K, K0, double_angles, levels_left):
            return chebyshev_coefficients(lambda u: np.sin(2 * np.pi * (K + 1) * u), self.degree)

    bt = Bootstrapper(params, eval_mod=PlainSine(degree=127, double_angles=0))

**The symmetric form** (`SymmetricEvalModParams`; `Bootstrapper`'s default from N = 2^13 on,
at degree 30: `ren.ckks.circuits.bootstrap.default_eval_mod`).  The cosine above is shifted by
a quarter period (sin = cos(· − 1/4)), so its polynomial is neither odd nor even.  Shift the
*input* instead, v = u − 1/(4·(K + 5/4)) (a free `add_scalar`, no level), over a range widened
by a quarter period, y ∈ ±(K + 5/4)·K_0: then cos(2π·v·(K + 5/4)/2^r) is even in v, and an
even polynomial of degree 2e costs what one of degree e costs plus T_2
(`ren.ckks.circuits.polyeval`: degree 30, 9 products instead of 13 for degree 31; degree 54,
12).  The fit is as good as the plain cosine's of one degree more on a range 1/(4(K + 1))
wider.  At K = 13 (n16's encapsulated secret) degree 30 takes r = 4: 5 + 4 levels as the plain
default, 9 + 4 relinearizations instead of 13 + 4, the fit within 2^-45.9 before the doublings
(the plain one's 2^-47.1).  The class's own default, degree 54, takes r = 2: 6 + 2 levels, one
fewer, and 12 + 2 relinearizations, the fit within 2^-45.6 before the doublings and 2^-38.2
after them and K_0/2π (the plain default: 2^-35.8; K_0 = 2^6, slot units).  (The plain degree
31 with r = 3, the naive way to save that level, is off by 2^-39.3 before the doublings: 6 bits
lost at the n16 shape, N = 2^13.)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ren.ckks.ciphertext import Ciphertext
from ren.ckks.circuits.polyeval import MAX_DEGREE, chebyshev_coefficients, depth_of
from ren.ckks.evaluator import Evaluator
from ren.ckks.params import CKKSParams
from ren.errors import ParameterError, check_int_range

#: EvalMod's fit has at least this degree: a constant or a line cannot follow a cosine.
MIN_EVALMOD_DEGREE = 2
#: Bits the EvalMod fit must leave: its error on [-1, 1], times 4 per double-angle step (the
#: derivative of 2c² − 1) and SlotToCoeff's K_0/2π, must stay below 2^-FIT_BITS in slot units.
#: (The default degree-31 fit leaves about 30; below 10 the bootstrapping returns noise.)
FIT_BITS = 10


#: `SymmetricEvalModParams` takes the fewest double angles whose even fit of degree `degree`
#: is within 2^-SYMMETRIC_FIT_BITS of its cosine on [−1, 1], before the doublings (float64's
#: floor is about 2^-46): at K = 13, degree 30 takes r = 4 (2^-45.9), degree 54 r = 2
#: (2^-45.6; r = 1: 2^-9.7); at K = 29 (a sparse h = 192 secret) degree 54 takes r = 3.
SYMMETRIC_FIT_BITS = 40


class EvalMod:
    """A fitted EvalMod: the polynomial (Chebyshev coefficients on [−1, 1]) and the r
    double-angle steps after it, for one range K and one K_0 = Q_0/Δ_in.

    Attributes: K, message_ratio_bits, Q0, input_scale (Δ_in, exact), K0 (float), interval
    (±(K + 1)·K_0: the range of y in slot units), coeffs, double_angles, degree, levels
    (⌈log2(degree + 1)⌉ + r)."""

    def __init__(self, params: CKKSParams, K: int, message_ratio_bits: int,
                 coeffs: np.ndarray, double_angles: int = 0) -> None:
        self.K, self.message_ratio_bits = K, message_ratio_bits
        self.Q0 = params.ring(0).Q
        #: the scale a level-0 input must have (`Bootstrapper.bootstrap` brings others to it)
        self.input_scale, self.K0 = message_ratio(params, message_ratio_bits)
        half = (K + 1) * self.K0
        self.interval = (-half, half)
        self.coeffs = np.asarray(coeffs)
        self.double_angles = double_angles
        self.degree = len(self.coeffs) - 1
        self.levels = depth_of(self.degree) + double_angles

    @property
    def output_factor(self) -> float:
        """K_0/2π: what SlotToCoeff multiplies by to turn sin(2π·y/K_0) back into y mod K_0."""
        return self.K0 / (2 * np.pi)

    def evaluate(self, ev: Evaluator, ct: Ciphertext) -> Ciphertext:
        """The polynomial (Chebyshev basis, on [−1, 1]), then r steps cos 2θ = 2cos²θ − 1;
        `ev` explicit (it places the rescales)."""
        v = ev.evaluate_polynomial(ct, list(self.coeffs), basis="chebyshev")
        for _ in range(self.double_angles):
            v = ev.add_scalar(ev.multiply_int(ev.rescale(ev.square(v)), 2), -1)
        return v

    def plaintext(self) -> Callable[[np.ndarray], np.ndarray]:
        """The exact centred reduction EvalMod approximates, in slot units
        (y ↦ y − K_0·round(y/K_0)), for tests."""
        K0 = self.K0
        return lambda y: y - K0 * np.round(y / K0)


@dataclass(frozen=True)
class EvalModParams:
    """The default EvalMod approximation (module docstring): a degree-`degree` Chebyshev fit of
    a cosine and `double_angles` double-angle steps (None: the fewest that keep the argument
    within ±9 radians).  Levels ⌈log2(degree + 1)⌉ + r; the fit is checked to leave
    `FIT_BITS` bits.  K (the range |I| ≤ K) and message_ratio_bits (K_0) are the
    Bootstrapper's (its secret's `bound_K`, `default_message_ratio_bits`)."""

    degree: int = 31
    double_angles: int | None = None

    def checked(self, params: CKKSParams) -> EvalModParams:
        """These parameters with their fields checked against `params` (a ParameterError
        naming the field otherwise)."""
        check_int_range(
            self.degree, "Bootstrapper: degree", MIN_EVALMOD_DEGREE, MAX_DEGREE,
            hint="EvalMod fits a cosine: a constant or a line cannot follow it, and above "
                 f"{MAX_DEGREE} the fit and the evaluation (about degree ciphertext products) "
                 "are out of proportion; 31 is the default")
        if self.double_angles is not None:
            check_int_range(
                self.double_angles, "Bootstrapper: double_angles", 0, params.depth,
                hint="each double-angle step takes one level; None picks the fewest that keep "
                     "the cosine's argument within ±9 radians")
        return self

    def angles(self, K: int) -> int:
        """r for the range K: `double_angles`, or the fewest steps that bring the cosine's
        argument 2π(K + 1)/2^r within ±9 radians."""
        if self.double_angles is not None:
            return int(self.double_angles)
        return max(0, math.ceil(math.log2(2 * math.pi * (K + 1) / 9)))

    def levels(self, K: int) -> int:
        """The levels EvalMod uses for the range K (known before anything is fitted)."""
        return depth_of(int(self.degree)) + self.angles(K)

    def fit(self, K: int, K0: float, double_angles: int, levels_left: int) -> np.ndarray:
        """The Chebyshev coefficients on [−1, 1] the polynomial evaluates: here the cosine
        cos(2π(u·(K + 1) − 1/4)/2^r), checked (`FIT_BITS`; the message names a degree that
        fits within `levels_left` levels)."""
        return fit_cosine(K, K0, double_angles, int(self.degree), levels_left)

    def build(self, params: CKKSParams, K: int, message_ratio_bits: int,
              levels_left: int) -> EvalMod:
        """The fitted `EvalMod` for the range K and K_0 = 2^message_ratio_bits."""
        r = self.angles(K)
        K0 = message_ratio(params, message_ratio_bits)[1]
        return EvalMod(params, K, message_ratio_bits, self.fit(K, K0, r, levels_left - r), r)


class SymmetricEvalMod(EvalMod):
    """A fitted symmetric EvalMod (`SymmetricEvalModParams`): the input is shifted by a
    quarter period (in u units 1/(4·span), span = K + 5/4) before an even polynomial of
    cos(2π·v·span/2^r) and the r double angles; the range is ±span·K_0."""

    def __init__(self, params: CKKSParams, K: int, message_ratio_bits: int,
                 coeffs: np.ndarray, double_angles: int) -> None:
        super().__init__(params, K, message_ratio_bits, coeffs, double_angles)
        span = symmetric_span(K)
        self.interval = (-span * self.K0, span * self.K0)
        #: what `evaluate` subtracts from u first: a quarter period, 1/(4·span)
        self.shift = 1 / (4 * span)

    def evaluate(self, ev: Evaluator, ct: Ciphertext) -> Ciphertext:
        """u − 1/(4·span) (free: a scalar added), then the even polynomial and the doublings."""
        return super().evaluate(ev, ev.add_scalar(ct, -self.shift))


@dataclass(frozen=True)
class SymmetricEvalModParams(EvalModParams):
    """EvalMod as an even polynomial after a free quarter-period shift (module docstring, "The
    symmetric form"): `degree` (even; default 54: 6 levels, 12 products) and `double_angles`
    (None: the fewest whose fit is within 2^-`SYMMETRIC_FIT_BITS` before the doublings: 2 for
    K = 13, 3 for K = 29 at degree 54; 4 for K = 13 at degree 30).  Levels
    ⌈log2(degree + 1)⌉ + r: 6 + 2 at n16's K = 13."""

    degree: int = 54

    def checked(self, params: CKKSParams) -> SymmetricEvalModParams:
        super().checked(params)
        if self.degree % 2:
            raise ParameterError(
                f"Bootstrapper: a symmetric EvalMod's polynomial is even, its degree must be "
                f"even; got degree={self.degree} (use {self.degree - 1} or {self.degree + 1})")
        return self

    def angles(self, K: int) -> int:
        if self.double_angles is not None:
            return int(self.double_angles)
        for r in range(MAX_DOUBLE_ANGLES + 1):
            if symmetric_fit(K, r, int(self.degree))[1] <= 2.0 ** -SYMMETRIC_FIT_BITS:
                return r
        return MAX_DOUBLE_ANGLES

    def fit(self, K: int, K0: float, double_angles: int, levels_left: int) -> np.ndarray:
        """The even Chebyshev coefficients of cos(2π·v·(K + 5/4)/2^r) on [−1, 1] (the odd
        ones exactly zero), checked as `fit_cosine` checks (`FIT_BITS`)."""
        return fit_cosine(K, K0, double_angles, int(self.degree), levels_left, symmetric=True)

    def build(self, params: CKKSParams, K: int, message_ratio_bits: int,
              levels_left: int) -> EvalMod:
        r = self.angles(K)
        K0 = message_ratio(params, message_ratio_bits)[1]
        return SymmetricEvalMod(params, K, message_ratio_bits,
                                self.fit(K, K0, r, levels_left - r), r)


#: the most double angles `SymmetricEvalModParams.angles` tries (2^10 halves ±2π·1000)
MAX_DOUBLE_ANGLES = 10


def symmetric_fit(K: int, r: int, degree: int) -> tuple[np.ndarray, float]:
    """(The even Chebyshev coefficients of cos(2π·v·(K + 5/4)/2^r) on [−1, 1] at `degree`, the
    odd ones exactly zero; their largest error there, before the doublings)."""
    span = symmetric_span(K)

    def fn(v: np.ndarray) -> np.ndarray:
        return np.cos(2 * np.pi * v * span / 2 ** r)

    c = chebyshev_coefficients(fn, degree)
    c[1::2] = 0.0  # exactly even (the fit's round-off would hide the parity)
    v = np.linspace(-1.0, 1.0, max(2001, 4 * (degree + 1) + 1))
    return c, float(np.max(np.abs(np.polynomial.chebyshev.chebval(v, c) - fn(v))))


def symmetric_span(K: int) -> float:
    """K + 5/4: the symmetric EvalMod's range in periods K_0 (|y| ≤ (K + 1)·K_0 shifted by a
    quarter period, on both sides)."""
    return K + 1.25


def message_ratio(params: CKKSParams, message_ratio_bits: int) -> tuple[Fraction, float]:
    """(Δ_in, K_0): the input scale round(Q_0/2^message_ratio_bits), exact, and the ratio
    K_0 = Q_0/Δ_in it gives (close to 2^message_ratio_bits)."""
    Q0 = params.ring(0).Q
    scale = Fraction(round(Fraction(Q0, 1 << message_ratio_bits)))
    return scale, float(Fraction(Q0) / scale)


def fit_cosine(K: int, K0: float, r: int, degree: int, levels_left: int,
               symmetric: bool = False) -> np.ndarray:
    """The Chebyshev coefficients of EvalMod's cosine, cos(2π(u·(K + 1) − 1/4)/2^r) on [-1, 1]
    (``symmetric``: the even cos(2π·v·(K + 5/4)/2^r), its odd coefficients set to zero),
    at `degree`; a ParameterError when the fit is too coarse for a meaningful bootstrapping
    (`FIT_BITS`): a degree or double-angle count too small for the range K gives garbage
    silently otherwise.  The message names the smallest degree of the form 2^k − 1 that fits
    (within `levels_left` levels), or asks for more double angles."""
    span = symmetric_span(K) if symmetric else K + 1

    def fn(u: np.ndarray) -> np.ndarray:
        return np.cos(2 * np.pi * (u * span - 0.25) / 2 ** r)

    def lost(d: int) -> tuple[np.ndarray, float]:
        if symmetric:
            c, err = symmetric_fit(K, r, d)
            return c, err * 4.0 ** r * K0 / (2 * np.pi)
        c = chebyshev_coefficients(fn, d)
        u = np.linspace(-1.0, 1.0, max(2001, 4 * (d + 1) + 1))
        err = float(np.max(np.abs(np.polynomial.chebyshev.chebval(u, c) - fn(u))))
        return c, err * 4.0 ** r * K0 / (2 * np.pi)

    coeffs, err = lost(degree)
    if err <= 2.0 ** -FIT_BITS:
        return coeffs
    better = None
    for k in range(2, min(levels_left, 10) + 1):  # 3, 7, …, 1023: each fit cheap
        d = (1 << k) - 1 - symmetric  # (even degrees: 2, 6, …, 1022)
        if d > degree and lost(d)[1] <= 2.0 ** -FIT_BITS:
            better = d
            break
    width = 2 * math.pi * span / 2 ** r
    fix = (f"use degree={better}" if better is not None else
           "no degree up to 1023 fits in the levels left")
    raise ParameterError(
        f"Bootstrapper: a degree-{degree} fit of EvalMod's cosine (its argument spans ±"
        f"{width:.3g} radians with K={K} and double_angles={r}) is off by 2^"
        f"{math.log2(err) if err > 0 else -math.inf:.1f} in slot units after the {r} double "
        f"angle(s) and SlotToCoeff's K_0/2π, more than 2^-{FIT_BITS}: the bootstrapping would "
        f"return noise; {fix}, or more double_angles (each halves the argument and costs a "
        "level)")


__all__ = ["FIT_BITS", "MAX_DOUBLE_ANGLES", "MIN_EVALMOD_DEGREE", "SYMMETRIC_FIT_BITS", "EvalMod",
           "EvalModParams", "SymmetricEvalMod", "SymmetricEvalModParams", "fit_cosine",
           "message_ratio", "symmetric_fit", "symmetric_span"]
