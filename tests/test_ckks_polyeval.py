"""Polynomial evaluation (`ren.ckks.circuits.polyeval`): levels consumed are the optimal depth for
every
degree 1..127, the result carries its level's default scale exactly, and the values match
NumPy's evaluation of the same polynomial (power and Chebyshev bases, with an interval)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ckks_helpers import context

import ren
from ren.ckks import OutOfLevelsError
from ren.ckks.circuits.polyeval import chebyshev_coefficients, depth_of
from ren.ckks.keyplan import placeholder
from ren.errors import ParameterError

DEPTH = 8


@pytest.fixture(scope="module")
def c():
    return context(N=64, depth=DEPTH, scale_bits=40, first_bits=55)


@pytest.fixture(scope="module")
def x(c):
    return np.random.default_rng(1).uniform(-1, 1, c.params.slots)


def _bits(got: np.ndarray, want: np.ndarray) -> float:
    return -math.log2(float(np.max(np.abs(got - want))))


def test_depth_of_is_the_ceiling_of_log2():
    assert [depth_of(d) for d in range(10)] == [0, 1, 2, 2, 3, 3, 3, 3, 4, 4]
    assert depth_of(127) == 7 and depth_of(128) == 8


@pytest.mark.parametrize("basis", ["power", "chebyshev"])
def test_levels_consumed_are_the_optimal_depth_for_degrees_1_to_127(c, basis):
    """Traced lazily (no kernel runs): level and scale of the result for every degree."""
    ct = placeholder(c.params)
    rng = np.random.default_rng(7)
    degrees = range(1, 128) if basis == "power" else range(1, 128, 3)
    for d in degrees:
        coeffs = rng.uniform(-1, 1, d + 1)
        out = c.ev.evaluate_polynomial(ct, list(coeffs), basis=basis)
        assert ct.level - out.level == math.ceil(math.log2(d + 1)), d
        assert out.scale == c.params.scale(out.level), d  # exactly the default scale


def test_an_interval_costs_one_more_level(c):
    ct = placeholder(c.params)
    out = c.ev.evaluate_polynomial(ct, [0.1] * 8, basis="chebyshev", interval=(-4, 4))
    assert ct.level - out.level == 3 + 1
    same = c.ev.evaluate_polynomial(ct, [0.1] * 8, basis="chebyshev", interval=(-1, 1))
    assert ct.level - same.level == 3


def _lost_bits(c, values, coeffs, basis="power", interval=None) -> float:
    """Bits of precision the encrypted evaluation loses against the plaintext evaluation of the
    same polynomial on the freshly encrypted (noisy) input, plus one fresh-encryption noise: the
    best an evaluation can do, since the noise of the input is amplified by p itself."""
    evaluate = (np.polynomial.polynomial.polyval if basis == "power"
                else np.polynomial.chebyshev.chebval)
    a, b = interval or (-1, 1)
    with ren.random.seeded(len(coeffs)):  # the noise of the run is reproducible
        ct = c.encrypt(values.astype(complex))
    noisy = c.decrypt(ct).real
    out = c.ev.evaluate_polynomial(ct, list(coeffs), basis=basis, interval=interval)
    got = c.decrypt(out)
    exact = evaluate((2 * values - a - b) / (b - a), coeffs)
    plain = evaluate((2 * noisy - a - b) / (b - a), coeffs)
    best = np.max(np.abs(plain - exact)) + np.max(np.abs(noisy - values))
    return _bits(plain, exact) if best == 0 else -math.log2(best) - _bits(got, exact)


@pytest.mark.parametrize("d", [1, 2, 3, 5, 8, 16, 31])
def test_power_basis_matches_numpy(c, x, d):
    """About 1 bit from the best possible up to degree 3; each further level's rescale adds a
    rounding noise as large as the fresh one (public-key encryption divides by P', so the fresh
    noise is itself a rounding noise), so up to 2–2.5 bits by degree 31 (measured over six
    encryption seeds: 0.2–1.6 bits lost for d ≤ 3, 0.8–2.6 for d = 5…31)."""
    coeffs = np.random.default_rng(d).uniform(-1, 1, d + 1) / np.arange(1, d + 2) ** 2
    assert _lost_bits(c, x, coeffs) <= (1.6 if d <= 3 else 2.6), d


@pytest.mark.parametrize("name,fn,interval,lost", [
    ("sigmoid", lambda t: 1 / (1 + np.exp(-t)), (-8, 8), 3.5),
    ("exp", np.exp, (-2, 2), 3.5),
])
def test_degree_63_approximations(c, x, name, fn, interval, lost):
    """Degree-63 Chebyshev fits at depth 6 + 1 (the interval change).  The interval change
    multiplies x by 2/(b − a) and its rescale adds a rounding noise at the new scale: against
    the fresh noise shrunk by 2/(b − a), that is up to log2((b − a)/2) bits on top."""
    a, b = interval
    coeffs = chebyshev_coefficients(fn, 63, interval)
    xs = (b - a) / 2 * x + (a + b) / 2
    assert _lost_bits(c, xs, coeffs, "chebyshev", interval) <= lost, name


def test_chebyshev_sigmoid_on_an_interval(c, x):
    coeffs = chebyshev_coefficients(lambda t: 1 / (1 + np.exp(-t)), 15, (-8, 8))
    xs = 8 * x
    out = c.ev.evaluate_polynomial(c.encrypt(xs.astype(complex)), list(coeffs),
                                   basis="chebyshev", interval=(-8, 8))
    got = c.decrypt(out)
    assert _bits(got, np.polynomial.chebyshev.chebval(x, coeffs)) >= 28
    # the encrypted result is as close to the sigmoid as the fit itself
    fit_err = np.max(np.abs(np.polynomial.chebyshev.chebval(x, coeffs) - 1 / (1 + np.exp(-xs))))
    assert np.max(np.abs(got - 1 / (1 + np.exp(-xs)))) <= fit_err + 2.0 ** -28


def test_complex_coefficients_and_a_constant(c, x):
    ct = c.encrypt(x.astype(complex))
    out = c.ev.evaluate_polynomial(ct, [0.25j, 0, 0.5])
    assert _bits(c.decrypt(out), 0.25j + 0.5 * x * x) >= 28
    const = c.ev.evaluate_polynomial(ct, [0.75, 0, 0])  # trailing zeros: degree 0
    assert const.level == ct.level and _bits(c.decrypt(const), np.full(len(x), 0.75)) >= 28


def test_chebyshev_coefficients_fit(c):
    coeffs = chebyshev_coefficients(np.exp, 16, (-2, 3))
    t = np.linspace(-2, 3, 50)
    approx = np.polynomial.chebyshev.chebval((2 * t - 1) / 5, coeffs)
    assert np.max(np.abs(approx - np.exp(t))) < 1e-8
    with pytest.raises(ParameterError, match="degree"):
        chebyshev_coefficients(np.exp, -1)
    with pytest.raises(ParameterError, match="a < b"):
        chebyshev_coefficients(np.exp, 3, (1, 1))


def test_bad_inputs_say_what_is_wrong(c):
    ct = placeholder(c.params)
    ev = c.ev
    with pytest.raises(ParameterError, match="basis must be one of"):
        ev.evaluate_polynomial(ct, [1, 2], basis="legendre")
    with pytest.raises(ParameterError, match="interval= goes with basis='chebyshev'"):
        ev.evaluate_polynomial(ct, [1, 2], interval=(0, 1))
    with pytest.raises(ParameterError, match="finite"):
        ev.evaluate_polynomial(ct, [1, float("nan")])
    with pytest.raises(ParameterError, match="finite"):
        ev.evaluate_polynomial(ct, [])
    with pytest.raises(ParameterError, match="sequence of numbers"):
        ev.evaluate_polynomial(ct, 3)
    with pytest.raises(ParameterError, match="a < b"):
        ev.evaluate_polynomial(ct, [1, 2], basis="chebyshev", interval=(2, 1))


def test_a_degree_too_deep_raises_before_any_kernel(c):
    low = placeholder(c.params, 3)
    with pytest.raises(OutOfLevelsError, match="degree 8 needs 4 level"):
        c.ev.evaluate_polynomial(low, [1.0] * 9)
    with pytest.raises(OutOfLevelsError, match="after the interval change"):
        c.ev.evaluate_polynomial(low, [1.0] * 8, basis="chebyshev", interval=(0, 2))
