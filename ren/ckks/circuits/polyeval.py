"""Polynomial evaluation on CKKS ciphertexts at the optimal depth, with O(√d) ciphertext
products (baby-step giant-step, Paterson–Stockmeyer style) and exact scales.

    ev.evaluate_polynomial(ct, coeffs)                         # Σ c_i x^i
    ev.evaluate_polynomial(ct, coeffs, basis="chebyshev")      # Σ c_i T_i(x), x in [-1, 1]
    ev.evaluate_polynomial(ct, coeffs, basis="chebyshev", interval=(a, b))
    coeffs = chebyshev_coefficients(np.tanh, 63, (-8, 8))      # a fit to use with that interval
    plan = polynomial_plan(coeffs, "chebyshev")                # products, depth, steps: no kernel

**Depth.**  A polynomial of degree d consumes exactly ⌈log2(d+1)⌉ levels (one more for a
Chebyshev interval other than [-1, 1], which maps x to (2x − a − b)/(b − a) first).

**Products.**  The basis B (x^i, or T_i with T_(a+b) = 2·T_a·T_b − T_(a−b)) is computed on
demand, each B_i (i ≥ 2) by one ciphertext product from B_(2^(k−1)) and B_(i−2^(k−1))
(k = ⌈log2 i⌉), so B_i sits at depth ⌈log2 i⌉, the optimum.  p is split at the largest power of
two 2^m ≤ deg p, p = q·B_(2^m) + r (for Chebyshev T_(2^m+j) = 2·T_(2^m)·T_j − T_(2^m−j)),
recursively, until a piece is a *leaf*: degree below the baby-step bound b = 2^l, evaluated as
Σ c_i·B_i with scalar products only (one rescale for the whole leaf: every term is aimed at the
same scale).  A scalar product costs its level, so a leaf of degree e needs ⌈log2 e⌉ + 1 levels,
one more than the optimum when e is not a power of two: a piece that has no level to spare
(its degree's optimal depth is all it gets) is split further instead, below b too.  Every
quotient with a level to spare stays so, so the pieces without one form a single chain along
the top bits of the degree, about log2 b extra products.  Baby steps B_1 … B_(b−1) (only those
the leaves use, and what computing them takes), giant steps B_(2^j) (squarings), and one product
per split: 2^l + (d+1)/2^l + log2 d, about 2√d + log2 d; b is the power of two that gives the
fewest products (`polynomial_plan` tries each: a dry run on the coefficients, no ciphertext).
Degree 127: 27 products instead of 69 (one per split down to degree 1 before).

**Odd and even polynomials.**  A split at an even power keeps the parity of q and r, and
B_i is made from B_(2^(k−1)), B_j and B_(2^(k−1)−j) with j ≡ i (mod 2), so an odd (even) p only
ever computes odd (even) baby steps and the powers of two.  An even p of degree 2e costs exactly
what its half P (p(x) = P(B_2(x))) of degree e costs, plus B_2: degree 126, 19 products.  An
odd one saves less (the powers of two come on top of the odd steps): degree 127, 23 instead of
27.  `parity` detects either (exact zeros; in the Chebyshev basis also coefficients below
max|c|·2^-PARITY_TOLERANCE_BITS, the float64 round-off of a fit of an odd or even function,
which change p by at most their sum on [-1, 1]; they are dropped).

**Scales.**  Every piece is computed *into* a target (level, scale): the result has exactly the
scale of the output level (`CKKSParams.scale`), so it can be added to any default-scale
ciphertext at that level.  A leaf's terms land on ``target·P`` (P the primes of the next
rescale) with ``multiply_scalar(B_i, c_i, target_scale=target)`` each, add, and one rescale
lands the leaf on the target; a product q·B lands on it because q is computed into the scale
target·P/scale(B).  Scales are exact Fractions, so pieces add without a mismatch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ren.ckks.ciphertext import Ciphertext, settle_scale
from ren.ckks.circuits.inputs import ready
from ren.ckks.errors import OutOfLevelsError, ScaleMismatchError
from ren.ckks.evaluator import Evaluator
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

BASES = ("power", "chebyshev")
#: The largest degree `evaluate_polynomial` and `chebyshev_coefficients` take: 2^12 − 1 (depth
#: 12, about 140 ciphertext products; the fit's interpolation matrix is then 128 MiB).
MAX_DEGREE = (1 << 12) - 1
_MAX_DEGREE_WHY = ("a degree-4095 polynomial already needs 12 levels (and its fit a 128 MiB "
                   "matrix)")
#: log2 of how much `evaluate_polynomial` lets an input scale off its level's default (after the
#: free integer correction) multiply the powers' rounding noise before it refuses the input.
SCALE_SLACK_BITS = 1.0
#: In the Chebyshev basis, coefficients below max|c|·2^-PARITY_TOLERANCE_BITS count as zero
#: when `parity` decides whether p is odd or even (float64 round-off of a fit is about 2^-53).
PARITY_TOLERANCE_BITS = 48


def depth_of(degree: int) -> int:
    """Levels a polynomial of `degree` consumes (without an interval change)."""
    degree = check_int_range(degree, "depth_of: degree", 0)
    return math.ceil(math.log2(degree + 1)) if degree > 0 else 0


def _depth(i: int) -> int:
    """The depth of B_i as `_PolyEval` computes it: ⌈log2 i⌉ (B_0 = 1 and B_1 = x: 0)."""
    return (i - 1).bit_length() if i > 1 else 0


def _factors(i: int) -> tuple[int, int]:
    """(a, b) with B_i from B_a·B_b: a = 2^(⌈log2 i⌉ − 1), b = i − a, so 0 < b ≤ a and both
    sit at depth ⌈log2 i⌉ − 1 or less (for i > 2, a is even and b ≡ a − b ≡ i mod 2: the
    parity of i is kept)."""
    a = 1 << (_depth(i) - 1)
    return a, i - a


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


def parity(coeffs: Sequence[Any], basis: str = "power") -> str | None:
    """"even" when p has only even terms, "odd" when only odd ones (no constant), else None.
    Exact zeros in the power basis; in the Chebyshev basis also coefficients below
    max|c|·2^-PARITY_TOLERANCE_BITS (see the module docstring).  A constant is "even".
    `coeffs` is checked as `evaluate_polynomial` checks it."""
    check_choice(basis, "parity: basis", BASES)
    return _parity(_coefficients(coeffs, "parity"), basis)


def _parity(c: list[complex], basis: str) -> str | None:
    tol = 0.0
    if basis == "chebyshev":
        tol = max(abs(v) for v in c) * 2.0 ** -PARITY_TOLERANCE_BITS
    small = [abs(v) <= tol for v in c]
    if all(small[1::2]):
        return "even"
    if all(small[0::2]):
        return "odd"
    return None


def _with_parity(c: list[complex], basis: str) -> tuple[list[complex], str | None]:
    """`c` with the terms of the other parity set to exactly zero when p is odd or even."""
    kind = _parity(c, basis)
    if kind is None:
        return c, None
    keep = 0 if kind == "even" else 1
    return _trim([v if i % 2 == keep else 0 for i, v in enumerate(c)]), kind


# -- the plan: a dry run on the coefficients --------------------------------------------------
@dataclass(frozen=True)
class _Leaf:
    coeffs: tuple[complex, ...]  # Σ coeffs[i]·B_i, degree ≥ 1


@dataclass(frozen=True)
class _Split:
    m: int  # p = q·B_(2^m) + r
    q: _Node | complex
    r: _Node | complex


_Node = _Leaf | _Split


def _plan_node(c: list[complex], avail: int, bound: int, basis: str,
               used: set[int]) -> tuple[_Node, int]:
    """The evaluation tree of Σ c_i B_i (deg ≥ 1) in `avail` levels with leaves of degree below
    `bound`; adds the B_i it multiplies to `used`; returns the tree and its split products."""
    d = len(c) - 1
    terms = [i for i in range(1, d + 1) if c[i] != 0]
    if d < bound and all(_depth(i) < avail for i in terms):
        used.update(terms)
        return _Leaf(tuple(c)), 0
    m = d.bit_length() - 1
    q, r = _split(c, m, basis)
    products = 0
    if len(q) == 1:  # a constant times B_(2^m): a scalar product
        qn: _Node | complex = q[0]
        used.add(1 << m)
    else:
        qn, products = _plan_node(q, avail - 1, bound, basis, used)
        used.add(1 << m)
        products += 1
    rn: _Node | complex = r[0]
    if len(r) > 1:
        rn, more = _plan_node(r, avail, bound, basis, used)
        products += more
    return _Split(m, qn, rn), products


def _closure(used: set[int], basis: str) -> set[int]:
    """Every B_i (i ≥ 2) computed to have `used`: B_i needs B_a, B_b (and B_(a−b))."""
    out: set[int] = set()
    todo = [i for i in used if i >= 2]
    while todo:
        i = todo.pop()
        if i in out:
            continue
        out.add(i)
        a, b = _factors(i)
        more = [a, b] + ([a - b] if basis == "chebyshev" and a != b else [])
        todo.extend(j for j in more if j >= 2 and j not in out)
    return out


@dataclass(frozen=True)
class PolynomialPlan:
    """How `evaluate_polynomial` evaluates a polynomial, found without a ciphertext.

    degree (of the polynomial evaluated: without round-off terms `parity` drops), depth (levels,
    without an interval change: those of the degree given), products (ciphertext-ciphertext
    products, each one relinearization: the powers computed plus one per split with a
    non-constant quotient), baby_bound (b: leaves have degree below it), powers (the B_i
    computed, i ≥ 2), parity ("odd", "even" or None), basis."""

    degree: int
    depth: int
    products: int
    baby_bound: int
    powers: tuple[int, ...]
    parity: str | None
    basis: str
    tree: _Node | complex = field(repr=False, compare=False)

    @property
    def split_products(self) -> int:
        """The products that combine pieces (the rest compute powers)."""
        return self.products - len(self.powers)


def _plan(c: list[complex], kind: str | None, basis: str, depth: int,
          baby_bound: int | None = None) -> PolynomialPlan:
    """The plan in `depth` levels with leaves below `baby_bound`, or the cheapest over the
    bounds 2, 4, …, 2^depth (fewest products; on a tie the larger bound, which measured up to
    0.3–0.4 bits more precise: more of the work in scalar products, fewer rescaled products)."""
    d = len(c) - 1
    if d == 0:
        return PolynomialPlan(0, depth, 0, 1, (), "even", basis, c[0])
    best: PolynomialPlan | None = None
    bounds = [baby_bound] if baby_bound else [1 << k for k in range(1, depth + 1)]
    for bound in bounds:
        used: set[int] = set()
        tree, splits = _plan_node(c, depth, bound, basis, used)
        powers = _closure(used, basis)
        products = splits + len(powers)
        if best is None or products <= best.products:
            best = PolynomialPlan(d, depth, products, bound, tuple(sorted(powers)), kind,
                                  basis, tree)
    assert best is not None
    return best


def _baby_bound(value: Any, op: str) -> int | None:
    if value is None:
        return None
    hint = "a power of two: leaves have degree below it (2: degree-1 leaves, no baby steps)"
    b = check_int_range(value, f"{op}: baby_bound", 2, MAX_DEGREE + 1, hint=hint)
    if b & (b - 1):
        raise ParameterError(f"{op}: baby_bound must be {hint}, got {b}")
    return b


def polynomial_plan(coeffs: Sequence[Any], basis: str = "power",
                    baby_bound: int | None = None) -> PolynomialPlan:
    """The plan `evaluate_polynomial` follows for `coeffs` (checked as it checks them): its
    ciphertext products, depth, baby-step bound, the powers it computes and the parity found;
    no ciphertext, no kernel.  `baby_bound` forces the bound (see `evaluate_polynomial`)."""
    check_choice(basis, "polynomial_plan: basis", BASES)
    c = _coefficients(coeffs, "polynomial_plan")
    bound = _baby_bound(baby_bound, "polynomial_plan")
    return _plan(*_with_parity(c, basis), basis, depth_of(len(c) - 1), bound)


# -- the evaluation ---------------------------------------------------------------------------
class _PolyEval:
    def __init__(self, ev: Evaluator, x: Ciphertext, basis: str):
        self.ev, self.p, self.basis = ev, ev.params, basis
        self.powers: dict[int, Ciphertext] = {1: x}  # i -> B_i

    def power(self, i: int) -> Ciphertext:
        """B_i at level x.level − ⌈log2 i⌉ (computed once): one product of B_a and B_b (see
        `_factors`), for Chebyshev 2·T_a·T_b − T_(a−b) (the 2 exact, an int; T_(a−b) brought to
        the product's level and scale for free, `Evaluator.align`)."""
        if i not in self.powers:
            ev = self.ev
            a, b = _factors(i)
            x, y = self.power(a), self.power(b)
            prod = ev.square(x) if a == b else ev.multiply(x, y)
            if self.basis == "chebyshev":
                prod = ev.multiply_int(prod, 2)
                if a == b:  # T_2a = 2·T_a² − 1
                    prod = ev.add_scalar(prod, -1)
            out = ev.rescale(prod)
            if self.basis == "chebyshev" and a != b:
                out = ev.sub(out, ev.align(self.power(a - b), out.level, out.scale))
            self.powers[i] = out
        return self.powers[i]

    def evaluate(self, node: _Node, level: int, scale: Fraction) -> Ciphertext:
        """The piece `node` at exactly (level, scale)."""
        if isinstance(node, _Leaf):
            c = node.coeffs
            return self.leaf([(i, v) for i, v in enumerate(c) if i and v], c[0], level, scale)
        if not isinstance(node.q, (_Leaf, _Split)):  # a constant times B_(2^m)
            out = self.leaf([(1 << node.m, node.q)], 0, level, scale)
        else:
            big = self.ev.drop_level(self.power(1 << node.m), level + 1)
            P = math.prod(self.p.rescale_moduli(level + 1))
            q_ct = self.evaluate(node.q, level + 1, scale * P / big.scale)
            out = settle_scale(self.ev.rescale(self.ev.multiply(q_ct, big)), scale)
        if isinstance(node.r, (_Leaf, _Split)):
            return self.ev.add(out, self.evaluate(node.r, level, scale))
        return self.ev.add_scalar(out, node.r) if node.r else out

    def leaf(self, terms: list[tuple[int, complex]], c0: complex, level: int,
             scale: Fraction) -> Ciphertext:
        """c0 + Σ c_i B_i over `terms` (at least one) at exactly (level, scale): every term
        aimed at scale·P at level + 1 (``multiply_scalar(target_scale=)``), summed, one
        rescale; c0 added after."""
        ev = self.ev
        P = math.prod(self.p.rescale_moduli(level + 1))
        acc: Ciphertext | None = None
        for i, ci in terms:
            term = ev.multiply_scalar(ev.drop_level(self.power(i), level + 1), ci,
                                      target_scale=scale)
            term = settle_scale(term, scale * P)
            acc = term if acc is None else ev.add(acc, term)
        assert acc is not None  # a leaf has a term of degree ≥ 1
        out = settle_scale(ev.rescale(acc), scale)
        return ev.add_scalar(out, c0) if c0 else out


def _coefficients(coeffs: Any, op: str = "evaluate_polynomial") -> list[complex]:
    """`coeffs` checked (a sequence of at most MAX_DEGREE + 1 finite numbers, one rule for all:
    `ren.errors.check_number`) and trimmed of trailing zeros."""
    hint = "give a sequence of numbers, lowest degree first, with at least one finite coefficient"
    items = check_sequence(coeffs, f"{op}: coeffs", 1, MAX_DEGREE + 1, hint=hint)
    c = [check_number(v, f"{op}: coeffs[{i}]") for i, v in enumerate(items)]
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
                        interval: tuple[float, float] | None = None,
                        baby_bound: int | None = None) -> Ciphertext:
    """p(ct) for p = Σ coeffs[i]·B_i (B_i = x^i, or T_i for ``basis="chebyshev"``, with x first
    mapped from `interval` onto [-1, 1]); see the module docstring; `Evaluator.evaluate_polynomial`
    is this function.  An auto-mode evaluator first rescales an unrescaled product (and
    relinearizes a three-part ciphertext).  The result is at level
    ct.level − depth and at that level's default scale.  An input whose scale is below its
    level's default is first raised to it by an integer product (free); one that cannot be
    brought close enough raises ScaleMismatchError (see `_at_default_scale`).

    `baby_bound` (for study; default: the cheapest) forces the baby-step bound, a power of
    two: 2 gives degree-1 leaves and no baby steps, the evaluation before baby-step giant-step
    (about d/2 products)."""
    ev = check_instance(ev, Evaluator, "evaluate_polynomial: ev")
    ct = ev.check_ciphertext(ct, op="evaluate_polynomial")
    check_choice(basis, "evaluate_polynomial: basis", BASES)
    c = _coefficients(coeffs)
    bound = _baby_bound(baby_bound, "evaluate_polynomial")
    if interval is not None:
        if basis != "chebyshev":
            raise ParameterError("evaluate_polynomial: interval= goes with basis='chebyshev'")
        a, b = check_interval(interval, "evaluate_polynomial: interval")
    ct = ready(ev, ct)
    ev = ev.explicit()  # (it places its own rescales)
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
    plan = _plan(*_with_parity(c, basis), basis, need, bound)
    scale = ev.params.scale(level)
    if not isinstance(plan.tree, (_Leaf, _Split)):  # only round-off beside a constant
        zero = ev.multiply_int(ev.drop_level(x, level), 0)
        return ev.add_scalar(Ciphertext(zero.parts, scale, level, ev.params), plan.tree)
    return _PolyEval(ev, x, basis).evaluate(plan.tree, level, scale)


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


__all__ = ["BASES", "MAX_DEGREE", "PolynomialPlan", "chebyshev_coefficients", "depth_of",
           "evaluate_polynomial", "parity", "polynomial_plan"]
