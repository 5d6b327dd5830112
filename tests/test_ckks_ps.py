"""Baby-step giant-step polynomial evaluation (`ren.ckks.circuits.polyeval`, issue 41): the
ciphertext
products counted in the traced program (one relinearization each, from the operation log; no
kernel runs) for every degree 1..127 in both bases, at the optimal depth and exact scale; the
plan's count is the traced one; odd and even polynomials; precision against NumPy and against
the evaluation before baby steps (``baby_bound=2``, degree-1 leaves)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ckks_helpers import context

import ren
from ren.ckks.circuits.polyeval import (
    chebyshev_coefficients,
    depth_of,
    evaluate_polynomial,
    parity,
    polynomial_plan,
)
from ren.ckks.keyplan import placeholder
from ren.ckks.operations import record_operations
from ren.errors import ParameterError

#: products at the degrees of the issue's table, both bases (dense random coefficients), and
#: before baby steps (degree-1 leaves: one product per split and per power of two)
PRODUCTS = {3: 2, 7: 5, 15: 8, 31: 13, 63: 18, 127: 27}
PRODUCTS_BEFORE = {3: 2, 7: 5, 15: 10, 31: 19, 63: 36, 127: 69}


@pytest.fixture(scope="module")
def c():
    return context(N=64, depth=8, scale_bits=40, first_bits=55)


def _traced(c, coeffs, basis, ct=None, **kw):
    """(result, ciphertext products) of a lazily traced evaluation: each product relinearizes
    once, so the products are the relinearizations in the operation log."""
    ct = placeholder(c.params) if ct is None else ct
    with record_operations() as log:
        out = evaluate_polynomial(c.ev, ct, list(coeffs), basis, **kw)
    relins = sum(op.name == "relinearize" for op in log.operations)
    assert relins == sum(op.name in ("multiply", "square") for op in log.operations)
    return out, relins


def _bound(d: int) -> float:
    """2√(d+1) + log2(d+1) − 2: baby steps, splits and the chain without a spare level."""
    return 2 * math.sqrt(d + 1) + math.log2(d + 1) - 2


@pytest.mark.parametrize("basis", ["power", "chebyshev"])
def test_products_and_levels_for_every_degree_1_to_127(c, basis):
    top = placeholder(c.params)
    counts = {}
    for d in range(1, 128):
        coeffs = np.random.default_rng(d).uniform(-1, 1, d + 1)
        out, products = _traced(c, coeffs, basis, top)
        assert top.level - out.level == depth_of(d), d  # the optimal depth
        assert out.scale == c.params.scale(out.level), d  # exactly the default scale
        assert products == polynomial_plan(coeffs, basis).products, d
        assert products <= _bound(d), (d, products)
        counts[d] = products
    assert {d: counts[d] for d in PRODUCTS} == PRODUCTS
    assert max(counts.values()) == counts[127] <= 30  # the bound


@pytest.mark.parametrize("basis", ["power", "chebyshev"])
def test_before_baby_steps_about_d_over_2_products(c, basis):
    """``baby_bound=2`` is the evaluation before this change (degree-1 leaves), the "old"
    column of the table; the same depth."""
    top = placeholder(c.params)
    for d, want in PRODUCTS_BEFORE.items():
        coeffs = np.random.default_rng(d).uniform(-1, 1, d + 1)
        out, products = _traced(c, coeffs, basis, top, baby_bound=2)
        assert products == want and top.level - out.level == depth_of(d)


def test_the_plan_is_cheapest_over_the_bounds_and_prefers_the_larger_on_a_tie():
    coeffs = np.random.default_rng(127).uniform(-1, 1, 128)
    plans = {b: polynomial_plan(coeffs, "power", baby_bound=b) for b in (2, 4, 8, 16, 32, 64)}
    assert [p.products for p in plans.values()] == [69, 39, 27, 27, 39, 69]
    best = polynomial_plan(coeffs, "power")
    assert best.products == 27 and best.baby_bound == 16 and best.depth == 7
    # baby steps 2..15, giant steps 16, 32, 64 (the rest are splits)
    assert best.powers == (*range(2, 16), 16, 32, 64)
    assert best.split_products == 27 - 17


def test_a_tight_piece_is_split_below_the_baby_bound(c):
    """Degree 7 in 3 levels: c·T_7 would need 3 levels for T_7 and one for c, so the top
    piece splits at T_4 (and its quotient, degree 3 in 2 levels, at T_2) even though the
    baby-step bound 8 would take it as one leaf; a degree-4 piece (T_4 at depth 2, c at 3)
    is one leaf."""
    seven = polynomial_plan([0.5] * 8, "power", baby_bound=8)
    assert seven.split_products == 2 and seven.depth == 3
    four = polynomial_plan([0.5] * 5, "power", baby_bound=8)
    assert four.split_products == 0 and four.powers == (2, 3, 4) and four.depth == 3
    out, products = _traced(c, [0.5] * 8, "power", baby_bound=8)
    assert products == seven.products and placeholder(c.params).level - out.level == 3


# -- odd and even polynomials ---------------------------------------------------------------------
def test_parity_is_detected():
    assert parity([0, 1, 0, -2]) == "odd"
    assert parity([3, 0, 1]) == "even" and parity([3]) == "even"
    assert parity([1, 1]) is None and parity([0, 1, 1]) is None
    sin = chebyshev_coefficients(np.sin, 31)  # float round-off where the even terms are
    assert 0 < np.max(np.abs(sin[0::2])) < 1e-15
    assert parity(sin, "chebyshev") == "odd"
    assert parity(sin, "power") is None  # the power basis takes exact zeros only
    assert parity(chebyshev_coefficients(np.cos, 30), "chebyshev") == "even"
    assert parity([1, 1e-9, 1], "chebyshev") is None  # a real term, not round-off
    assert polynomial_plan(sin, "chebyshev").parity == "odd"


@pytest.mark.parametrize("basis", ["power", "chebyshev"])
def test_an_even_polynomial_costs_one_product_more_than_half_its_degree(c, basis):
    """p(x) = P(B_2(x)): an even p of degree 2e is evaluated with the products of a degree-e
    polynomial plus B_2, and only even baby steps."""
    top = placeholder(c.params)
    for e in (3, 7, 15, 31, 63):
        half = np.random.default_rng(e).uniform(-1, 1, e + 1)
        even = np.zeros(2 * e + 1)
        even[0::2] = half
        out, products = _traced(c, even, basis, top)
        _, half_products = _traced(c, half, basis, top)
        assert products == half_products + 1, e
        assert top.level - out.level == depth_of(2 * e)
        assert all(i % 2 == 0 for i in polynomial_plan(even, basis).powers)


@pytest.mark.parametrize("basis", ["power", "chebyshev"])
def test_an_odd_polynomial_computes_only_odd_baby_steps(c, basis):
    top = placeholder(c.params)
    for d in (7, 31, 63, 127):
        dense = np.random.default_rng(d).uniform(-1, 1, d + 1)
        odd = np.where(np.arange(d + 1) % 2 == 1, dense, 0.0)
        plan = polynomial_plan(odd, basis)
        assert plan.parity == "odd"
        assert all(i % 2 == 1 or i & (i - 1) == 0 for i in plan.powers), d  # odd or 2^k
        out, products = _traced(c, odd, basis, top)
        assert products == plan.products <= polynomial_plan(dense, basis).products
        assert top.level - out.level == depth_of(d)
    assert polynomial_plan(odd, basis).products == 23  # degree 127: 27 dense


def test_a_fit_of_an_odd_function_gets_the_odd_plan(c):
    """sin's Chebyshev fit has round-off (1e-17) even coefficients: treated as zero, the
    evaluation computes no even baby step and stays as precise."""
    coeffs = chebyshev_coefficients(lambda t: np.sin(3 * t), 63)
    exact_odd = np.where(np.arange(64) % 2 == 1, coeffs, 0.0)
    fit, exact = polynomial_plan(coeffs, "chebyshev"), polynomial_plan(exact_odd, "chebyshev")
    assert fit.products == exact.products and fit.powers == exact.powers
    x = np.random.default_rng(3).uniform(-1, 1, c.params.slots)
    with ren.random.seeded(9):
        ct = c.encrypt(x.astype(complex))
    got = c.decrypt(c.ev.evaluate_polynomial(ct, list(coeffs), basis="chebyshev"))
    assert -math.log2(np.max(np.abs(got - np.sin(3 * x)))) > 28


def test_round_off_beside_a_constant_still_uses_the_levels(c):
    """[1, 1e-20] in the Chebyshev basis is the constant 1 (its odd part is round-off), still
    of degree 1: the result is at one level down, default scale, as for any degree 1."""
    x = np.random.default_rng(4).uniform(-1, 1, c.params.slots)
    ct = c.encrypt(x.astype(complex))
    out = c.ev.evaluate_polynomial(ct, [1.0, 1e-20], basis="chebyshev")
    assert out.level == ct.level - 1 and out.scale == c.params.scale(out.level)
    assert np.max(np.abs(c.decrypt(out) - 1)) < 2.0 ** -30


# -- precision -------------------------------------------------------------------------------------
def _coeffs(basis: str, d: int) -> np.ndarray:
    if basis == "power":
        return np.random.default_rng(d).uniform(-1, 1, d + 1) / np.arange(1, d + 2) ** 2
    return chebyshev_coefficients(lambda t: np.sin(3 * t) + np.tanh(4 * t - 1) / 2, d)


@pytest.mark.parametrize("basis", ["power", "chebyshev"])
@pytest.mark.parametrize("d", [15, 127])
def test_precision_against_numpy_and_before_baby_steps(c, basis, d):
    """Bits (−log2 of the largest slot error against NumPy's evaluation on the exact input),
    over three encryptions: at least 31.5 each, and on average no fewer than with degree-1
    leaves (measured over 8 seeds at N = 64: +0.1 to +0.55 bits on average, −0.5 at worst
    for one seed; at N = 1024, 4 seeds: never fewer)."""
    coeffs = _coeffs(basis, d)
    evaluate = (np.polynomial.polynomial.polyval if basis == "power"
                else np.polynomial.chebyshev.chebval)
    x = np.random.default_rng(1).uniform(-1, 1, c.params.slots)
    want = evaluate(x, coeffs)
    new, old = [], []
    for seed in range(3):
        with ren.random.seeded(300 + seed):
            ct = c.encrypt(x.astype(complex))
        for bits, bound in ((new, None), (old, 2)):
            out = evaluate_polynomial(c.ev, ct, list(coeffs), basis, baby_bound=bound)
            bits.append(-math.log2(float(np.max(np.abs(c.decrypt(out) - want)))))
    print(f"{basis} {d}: new {np.round(new, 2)} old {np.round(old, 2)}")
    assert min(new) >= 31.5
    assert np.mean(new) >= np.mean(old) - 0.25


def test_baby_bound_is_checked(c):
    ct = placeholder(c.params)
    for bad, match in ((3, "power of two"), (1, r"baby_bound must be an int in \[2"),
                       ("2", "baby_bound must be an int"), (2.0, "baby_bound must be an int")):
        with pytest.raises(ParameterError, match=match):
            evaluate_polynomial(c.ev, ct, [1, 2, 3], baby_bound=bad)
        with pytest.raises(ParameterError, match=match):
            polynomial_plan([1, 2, 3], baby_bound=bad)
    with pytest.raises(ParameterError, match=r"polynomial_plan: coeffs\[1\] must be a finite"):
        polynomial_plan([1, "a"])
    with pytest.raises(ParameterError, match="polynomial_plan: basis must be one of"):
        polynomial_plan([1, 2], "legendre")
    # a bound above the degree is one leaf where the levels allow it
    assert polynomial_plan([1, 2, 3], baby_bound=4096).split_products == 0


def test_the_benchmark_runs_at_a_tiny_size(capsys):
    """benchmarks/bench_polyeval.py at N = 64, one degree, one encryption (its figures at
    N = 2^10 are in the closing note of issue 41)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_polyeval.py"
    spec = importlib.util.spec_from_file_location("bench_polyeval", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    (row,) = bench.main(["--log-n", "6", "--degrees", "15", "--bases", "power", "--seeds", "1"])
    assert (row["products_before"], row["products_after"]) == (10, 8)
    assert row["levels_before"] == row["levels_after"] == 4
    assert row["bits_after"][0] > 31
    assert "| power | 15 | 10 / 8 | 4 / 4 |" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        bench.main(["--degrees", "0"])
