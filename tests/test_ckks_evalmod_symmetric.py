"""The symmetric EvalMod (`ren.ckks.circuits.evalmod.SymmetricEvalModParams`): an even
polynomial after a free quarter-period shift, the default above N = 2^12 (issue 41 §3, time).

Checked against NumPy on plaintexts (the sine it must equal), the polynomial planner's product
counts, the traced graph's key switches, and a bootstrapping's bits at N = 256."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ren
from ren.ckks import (
    CKKSParams,
    Decryptor,
    Encoder,
    Encryptor,
    Evaluator,
    InsecureParametersWarning,
    KeyGenerator,
)
from ren.ckks.circuits import Bootstrapper, bootstrap_params_small
from ren.ckks.circuits.bootstrap import SYMMETRIC_FROM_N, default_eval_mod
from ren.ckks.circuits.evalmod import (
    EvalModParams,
    SymmetricEvalMod,
    SymmetricEvalModParams,
    symmetric_fit,
    symmetric_span,
)
from ren.ckks.circuits.polyeval import polynomial_plan
from ren.errors import ParameterError
from ren.rlwe.cost import key_switch_counts


def test_the_fit_is_even_and_costs_fewer_products_at_the_same_depth():
    """Degree 30 even against the plain cosine's degree 31 at K = 13: 5 levels both, 9
    ciphertext products instead of 13 (the planner's own dry run)."""
    coeffs, err = symmetric_fit(13, 4, 30)
    assert np.all(coeffs[1::2] == 0) and err < 2.0 ** -40
    even = polynomial_plan(list(coeffs), "chebyshev")
    plain = polynomial_plan(list(EvalModParams().fit(13, 64.0, 4, 20)), "chebyshev")
    assert (even.parity, even.depth, plain.depth) == ("even", 5, 5)
    assert (even.products, plain.products) == (9, 13)


@pytest.mark.parametrize("K, degree, angles", [(13, 30, 4), (13, 54, 2), (29, 54, 3),
                                               (10, 30, 3)])
def test_the_double_angles_are_the_fewest_whose_fit_holds(K, degree, angles):
    em = SymmetricEvalModParams(degree)
    assert em.angles(K) == angles
    assert symmetric_fit(K, angles - 1, degree)[1] > 2.0 ** -40 >= symmetric_fit(
        K, angles, degree)[1]
    assert em.levels(K) == math.ceil(math.log2(degree + 1)) + angles


def test_shift_polynomial_and_doublings_are_the_sine_on_plaintexts():
    """What `SymmetricEvalMod.evaluate` computes, in NumPy: u = y/(span·K_0) shifted by
    1/(4·span), the even polynomial, r doublings: sin(2π·y/K_0) for |y| <= (K + 1)·K_0."""
    K, K0, r = 13, 64.0, 4
    coeffs, _ = symmetric_fit(K, r, 30)
    span = symmetric_span(K)
    y = np.concatenate([np.linspace(-(K + 1) * K0, (K + 1) * K0, 4001),
                        K0 * np.arange(-K, K + 1) + 0.3])
    v = np.polynomial.chebyshev.chebval(y / (span * K0) - 1 / (4 * span), coeffs)
    for _ in range(r):
        v = 2 * v * v - 1
    assert np.max(np.abs(v - np.sin(2 * np.pi * y / K0))) < 2.0 ** -30
    # without the shift it is the cosine, not the sine
    w = np.polynomial.chebyshev.chebval(y / (span * K0), coeffs)
    for _ in range(r):
        w = 2 * w * w - 1
    assert np.max(np.abs(w - np.sin(2 * np.pi * y / K0))) > 0.5


def test_the_default_is_symmetric_above_n_4096_only():
    with pytest.warns(InsecureParametersWarning):
        big = CKKSParams(N=SYMMETRIC_FROM_N, depth=3, scale_bits=40, first_bits=50,
                         insecure=True)
    small = bootstrap_params_small()
    assert default_eval_mod(big) == SymmetricEvalModParams(30)
    assert type(default_eval_mod(small)) is EvalModParams and default_eval_mod(small).degree == 31
    # a degree given is the plain cosine of that degree, anywhere
    assert default_eval_mod(big, 63) == EvalModParams(63)
    assert default_eval_mod(big, None, 5) == SymmetricEvalModParams(30, 5)


def test_an_odd_degree_is_refused():
    with pytest.raises(ParameterError, match=r"degree must be even.*use 32 or 34"):
        Bootstrapper(bootstrap_params_small(), eval_mod=SymmetricEvalModParams(32 + 1))


@pytest.fixture(scope="module")
def runs():
    """The small dense-secret preset (K = 13, encapsulation) bootstrapped with the plain
    cosine (degree 31, r = 4) and the symmetric form (degree 30, r = 4): bits, levels and the
    traced graph's mod-downs by P (one per key switch's part)."""
    params = bootstrap_params_small("cpu", secret="ternary")
    x = np.random.default_rng(3).uniform(-1, 1, params.slots)
    out = {}
    for name, em in (("plain", EvalModParams(31, 4)), ("symmetric", SymmetricEvalModParams(30))):
        bt = Bootstrapper(params, eval_mod=em)
        with ren.random.seeded(5):
            kg = KeyGenerator(params)
            ev = Evaluator(params, kg.relin_key(), bt.keys(kg))
            ek = bt.encapsulation_keys(kg)
            enc = Encoder(params)
            ct = Encryptor(params, kg.public_key()).encrypt(enc.encode(x, level=1))
            ren.realize(list(ct.parts))
            res = bt.bootstrap(ev, ct, ek)
            downs = key_switch_counts([p.node for p in res.parts],
                                      tuple(params.special_moduli))[0]
            got = enc.decode(Decryptor(params, kg.secret_key()).decrypt(res))
        out[name] = (bt, res.level, downs, -math.log2(float(np.max(np.abs(got - x)))))
    return out


def test_a_bootstrapping_keeps_its_bits_and_levels_with_fewer_key_switches(runs):
    (plain, lp, dp, bp), (sym, ls, ds, bs) = runs["plain"], runs["symmetric"]
    assert isinstance(sym.evalmod, SymmetricEvalMod) and sym.degree == 30
    assert (lp, ls) == (2, 2) and plain.levels_used == sym.levels_used == 13
    # two EvalMods, 4 relinearizations fewer each, two mod-downs by P per relinearization
    assert dp - ds == 2 * 4 * 2
    # (measured 28.24 and 27.57 bits: at N = 256 K_0 = 2^12 magnifies the fit's error, which
    # the wider range grows a little; at the n16 shape, K_0 = 2^8..2^6, the bits are the same)
    assert bs > 26.5 and abs(bs - bp) < 1.0, (bp, bs)
