"""Issue 38, the circuits' part: `CKKSParams`, polynomial evaluation, linear transforms and
bootstrapping refuse bad arguments with a specific `RenError` that says what to do (never a bare
TypeError/ValueError/AttributeError, never a long search or a silently wrong result), and an
input whose scale is off its level's default no longer loses its precision in a polynomial.

Small insecure rings (N = 64, the N = 256 bootstrapping preset) keep every test fast; nothing
here bootstraps."""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np
import pytest
from ckks_helpers import context, make_params, precision_bits

import ren
from ren.ckks import (
    Ciphertext,
    CKKSParams,
    Encoder,
    Encryptor,
    Evaluator,
    KeyGenerator,
    LinearTransform,
    OutOfLevelsError,
    ScaleMismatchError,
    ScaleOutOfBoundsError,
)
from ren.ckks.circuits.bootstrap import (
    Bootstrapper,
    bootstrap_params_small,
    bound_K,
    centred_lift,
    default_message_ratio_bits,
)
from ren.ckks.circuits.lintrans import baby_steps_for, diagonals_of
from ren.ckks.circuits.polyeval import MAX_DEGREE, chebyshev_coefficients, evaluate_polynomial
from ren.ckks.errors import ParamsMismatchError
from ren.ckks.keyplan import placeholder
from ren.ckks.params import log2_exact, normalize_scale, rescaled, scale_difference
from ren.errors import ParameterError, RenError
from ren.poly import Poly
from ren.ring.ringspec import MAX_GENERATED_MODULI, RingSpec


# -- CKKSParams ----------------------------------------------------------------------------------
@pytest.mark.parametrize("count", [MAX_GENERATED_MODULI + 1, 10**6, 10**7])
def test_special_primes_are_bounded_before_the_prime_search(count):
    """10^6 special primes were searched for about 80 s and accepted (a 3-million-bit QP);
    10^7 ran on.  Now a bound refuses them at once."""
    start = time.perf_counter()
    with pytest.raises(ParameterError, match=rf"special_primes must be an int in \[1, "
                                             rf"{MAX_GENERATED_MODULI}\].*one digit"):
        make_params(N=1024, depth=1, scale_bits=30, special_primes=count, insecure=True)
    assert time.perf_counter() - start < 0.5


def test_first_bits_must_leave_room_for_a_message_at_level_0():
    """first_bits = scale_bits + 1 was accepted although level 0 then holds no message of
    magnitude 1 (encode(level=0) failed later, naming first_bits >= scale_bits + 2)."""
    with pytest.raises(ParameterError, match=r"first_bits must be an int in \[42, 248\].*"
                                             r"level 0 holds a message"):
        make_params(N=64, depth=2, scale_bits=40, first_bits=41, insecure=True)
    p = make_params(N=64, depth=2, scale_bits=40, first_bits=42, insecure=True)
    enc = Encoder(p)
    assert np.allclose(enc.decode(enc.encode([0.5], level=0))[0], 0.5)  # level 0 works


def test_a_base_modulus_smaller_than_asked_is_refused_when_level_0_cannot_hold_a_message():
    """first_bits=33 at N=4096 asks for two 16.5-bit primes ≡ 1 mod 8192: only 65537 and 40961
    are left, Q_0 = 2^31.3 under a 2^31 default scale, and level 0 was silently unusable."""
    with pytest.raises(ParameterError, match=r"Q_0 came out at 2\^31\.32.*scarce at N=4096.*"
                                             r"use first_bits >= 34"):
        make_params(N=4096, depth=1, scale_bits=31, first_bits=33, insecure=True)
    p = make_params(N=4096, depth=1, scale_bits=31, first_bits=34, insecure=True)
    assert 2 * p.scale(0) < p.ring(0).Q


def test_no_preset_or_default_first_bits_is_refused():
    for name in ("N12", "N13", "N14"):
        CKKSParams.preset(name)
    assert make_params(N=64, depth=1, scale_bits=40, insecure=True).first_bits == 60


@pytest.mark.parametrize("kw,what", [
    (dict(dnum="2"), "dnum"), (dict(dnum=0), "dnum"), (dict(dnum=10**6), "dnum"),
    (dict(N=64.0), "N"), (dict(depth=float("nan")), "depth"), (dict(special_primes=1.5),
                                                                 "special_primes"),
    (dict(first_bits="50"), "first_bits")])
def test_params_arguments_are_checked_before_the_search(kw, what):
    args = dict(N=64, depth=2, scale_bits=40, insecure=True) | kw
    with pytest.raises(ParameterError, match=f"CKKSParams: {what} must be"):
        make_params(**args)


def test_scale_helpers_check_their_arguments():
    p = make_params(N=64, depth=2, scale_bits=40, first_bits=55, insecure=True)
    with pytest.raises(ParameterError, match="message bound must be a finite real"):
        p.check_scale(p.scale(1), 1, "op", message=float("nan"))  # was a bare ValueError
    for bad in ("3", True, float("inf"), 0, -2):
        with pytest.raises(ParameterError, match="scale"):
            normalize_scale(bad)  # "3" was read as the scale 3
    with pytest.raises(ParameterError, match="positive"):
        log2_exact(Fraction(0))  # was a bare ValueError (math domain error)
    with pytest.raises(ParameterError, match="log2_exact"):
        log2_exact("8")  # was an AttributeError
    with pytest.raises(ParameterError, match="a modulus must be an int >= 2"):
        rescaled(Fraction(2**40), (0,))  # was a ZeroDivisionError
    assert log2_exact(8) == 3 and rescaled(Fraction(2**40), (2**10,)) == 2**30
    # NumPy integers are integers: exact Python ints inside (were an AttributeError, and an
    # OverflowError as a message bound)
    assert normalize_scale(np.int64(3)) == 3 and type(normalize_scale(np.int64(3))) is Fraction
    assert log2_exact(np.int64(8)) == 3
    assert p.check_scale(p.scale(1), 1, "op", message=np.int64(3)) == p.scale(1)


def test_scale_difference_shows_the_difference():
    a, b = Fraction(2**30 + 1), Fraction(2**30)
    text = scale_difference(a, b)
    assert str(2**30 + 1) in text and str(2**30) in text and "1 + 9.313e-10" in text
    big = Fraction(3**200, 2**7)
    text = scale_difference(big, big + 1)
    first, _, second = text.split(" (")[0].partition(" vs ")
    assert first != second and "1 −" in text  # as many digits as it takes to differ


# -- evaluate_polynomial / chebyshev_coefficients -------------------------------------------------
@pytest.fixture(scope="module")
def c():
    return context(N=64, depth=8, scale_bits=40, first_bits=55)


@pytest.mark.parametrize("interval", [("a", "b"), (1, 2, 3), 5, "ab", (0, math.inf),
                                      (math.nan, 1), (1, 1), [1, "x"]])
def test_polynomial_intervals_are_checked(c, interval):
    with pytest.raises(ParameterError, match="evaluate_polynomial: interval"):
        c.ev.evaluate_polynomial(placeholder(c.params), [1, 2], basis="chebyshev",
                                 interval=interval)


@pytest.mark.parametrize("coeffs,match", [
    ([1, "a"], r"coeffs\[1\] must be a finite int, float or complex"),
    ([True, 1], r"coeffs\[0\] must be a finite"),  # a flag, not a number (as in encode)
    (["1", 2], r"coeffs\[0\] must be a finite"),  # numeric text was read as 1
    ([1, None], r"coeffs\[1\] must be a finite"),
    ([1, complex(0, math.inf)], r"coeffs\[1\] must be a finite"),
    ({"a": 1}, "coeffs must be a list or tuple"),
    (np.ones((2, 2)), r"coeffs\[0\] must be a finite"),
    ([0.5] * (MAX_DEGREE + 2), "between 1 and 4096 items"),
    ([1.0] + [0.0] * 10**5, "between 1 and 4096 items"),
])
def test_polynomial_coefficients_follow_one_rule(c, coeffs, match):
    with pytest.raises(ParameterError, match=match):
        c.ev.evaluate_polynomial(placeholder(c.params), coeffs)


def test_polynomial_evaluator_and_basis_are_checked(c):
    ct = placeholder(c.params)
    with pytest.raises(ParameterError, match="evaluate_polynomial: ev must be a"):
        evaluate_polynomial(None, ct, [1, 2])  # was an AttributeError
    with pytest.raises(ParameterError, match="basis must be one of"):
        c.ev.evaluate_polynomial(ct, [1, 2], basis=["power"])
    # numpy coefficients and numbers of every kind are fine
    out = c.ev.evaluate_polynomial(ct, np.array([1, 2, 3], dtype=np.int64))
    assert out.level == ct.level - 2
    out = evaluate_polynomial(c.ev, ct, [np.float32(0.5), Fraction(1, 3), 2j])
    assert out.level == ct.level - 2


@pytest.mark.parametrize("fn,degree,interval,match", [
    (np.sin, 3, None, "interval must be a pair"),
    (5, 3, (-1, 1), "fn must be callable"),
    (np.sin, 10**7, (-1, 1), r"degree must be an int in \[0, 4095\]"),  # was a MemoryError
    (np.sin, 3.0, (-1, 1), "degree must be an int"),
    (np.log, 7, (0, math.inf), "interval"),  # NaN coefficients, silently
    (lambda t: np.where(t < 0.5, t, np.nan), 7, (-1, 1), "fn is not finite at x"),
    (lambda t: 1.0, 7, (-1, 1), r"returned shape \(\) for 8 points"),
    (lambda t: np.ones((len(t), 2)), 7, (-1, 1), "returned shape"),
    (lambda t: t > 0, 7, (-1, 1), "must return numbers"),
    (lambda t: np.array(["a"] * len(t)), 7, (-1, 1), "must return numbers"),
    (math.sin, 7, (-1, 1), r"np\.sin, not math\.sin"),
])
def test_chebyshev_fits_check_their_arguments(fn, degree, interval, match):
    with pytest.raises(ParameterError, match=match):
        chebyshev_coefficients(fn, degree, interval)


def test_a_fit_of_a_complex_function_is_fine():
    coeffs = chebyshev_coefficients(lambda t: np.exp(1j * t), 15)
    t = np.linspace(-1, 1, 9)
    assert np.max(np.abs(np.polynomial.chebyshev.chebval(t, coeffs) - np.exp(1j * t))) < 1e-12


def test_an_input_below_the_default_scale_keeps_its_precision(c):
    """Encoded at 2^33 under a 40-bit chain, the input went through the squarings with its
    shortfall doubling each time: 8.6 bits of a degree-7 result were left.  Now it is raised to
    the default scale for free (an integer product) and keeps what the input itself holds."""
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, c.params.slots)
    coeffs = list(rng.uniform(-1, 1, 8) / 8)
    want = np.polynomial.chebyshev.chebval(x, coeffs)
    normal = c.ev.evaluate_polynomial(c.encrypt(x), coeffs, basis="chebyshev")
    low_ct = c.encrypt(x, scale=2**33)
    low = c.ev.evaluate_polynomial(low_ct, coeffs, basis="chebyshev")
    assert low.level == normal.level and low.scale == c.params.scale(low.level)
    bits_normal = precision_bits(c.decrypt(normal), want)
    bits_input = precision_bits(c.decrypt(low_ct), x)  # what the 2^33 input holds
    bits_low = precision_bits(c.decrypt(low), want)
    print(f"normal {bits_normal:.1f}, input at 2^33 {bits_input:.1f}, result {bits_low:.1f}")
    assert bits_low > bits_input - 4  # the derivative of p, as for a default-scale input
    assert bits_low > bits_normal - 10  # the 7 bits the input lacks, and noise


@pytest.mark.parametrize("log2_scale", [39.5, 40.3])
def test_a_scale_off_the_default_that_cannot_be_fixed_for_free_is_refused(c, log2_scale):
    """At 2^39.5 (k = round(ratio) = 1) a degree-127 polynomial kept 2.7 bits; at 2^40.3
    (above the default) none: both went through silently."""
    top = placeholder(c.params)
    ct = Ciphertext(top.parts, Fraction(2**log2_scale), top.level, c.params)
    with pytest.raises(ScaleMismatchError, match=r"params\.scale\(8\).*adjust_scale\(ct, "
                                                 r"params\.scale\(7\)\)"):
        c.ev.evaluate_polynomial(ct, [0.1] * 128)
    # the fix the message names
    fixed = c.ev.adjust_scale(ct, c.params.scale(7))
    assert c.ev.evaluate_polynomial(fixed, [0.1] * 128).level == 0
    # a low degree has too few squarings for the difference to matter: accepted
    assert c.ev.evaluate_polynomial(ct, [0.1, 0.2, 0.3]).level == 6


# -- LinearTransform ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def c30():
    """Single-prime 30-bit levels: neighbouring default scales differ in the 7th digit."""
    return context(N=64, depth=4, scale_bits=30, first_bits=45, steps=(1,))


@pytest.mark.parametrize("diagonals,match", [
    ({0: "abc"}, "diagonal 0 must hold numbers"),
    ({0: ["a"] * 4}, "diagonal 0 must hold numbers"),
    ({0: [True] * 4}, r"diagonal 0 must hold numbers.*flags"),
    ({0: [[1, 2], [3]]}, "diagonal 0 must be an array of numbers"),
    ({0: None}, "diagonal 0 must hold numbers"),
    ({i: [1.0] for i in range(40)}, "40 diagonals, but 32 slots"),
])
def test_diagonals_must_hold_numbers(c30, diagonals, match):
    with pytest.raises(ParameterError, match=match):
        LinearTransform(c30.params, diagonals)


def test_matrices_must_hold_finite_numbers(c30):
    with pytest.raises(ParameterError, match="the matrix must be an array of numbers"):
        LinearTransform(c30.params, [[1, 2], [3]])
    with pytest.raises(ParameterError, match="non-finite"):
        LinearTransform(c30.params, np.array([[1.0, np.inf], [0, 1]]))


def test_a_transform_applied_in_auto_mode_meets_the_ciphertexts_level(c30):
    """Prepared for level 3 and applied (auto mode) to a level-4 ciphertext: a
    ScaleMismatchError that printed "2^30.0000 ... 2^30.0000".  Now the ciphertext meets the
    transform's level and scale as `add` meets two operands, for free."""
    p = c30.params
    x = np.random.default_rng(2).uniform(-1, 1, p.slots)
    lt = LinearTransform(p, {0: np.full(p.slots, 2.0), 1: np.ones(p.slots)}, level=3)
    ct = c30.encrypt(x)
    assert ct.level == 4 and ct.scale != lt.input_scale
    out = lt.apply(c30.ev, ct)
    assert out.level == 2 and out.scale == p.scale(2)
    assert precision_bits(c30.decrypt(out), 2 * x + np.roll(x, -1)) > 18
    # explicitly, the mismatch is the caller's: the message tells the two scales apart
    with pytest.raises(ScaleMismatchError) as info:
        lt.apply(c30.ev.explicit(), ct)
    text = str(info.value)
    assert str(lt.input_scale) in text and str(ct.scale) in text and "auto-mode" in text
    assert "input_scale=ct.scale" in text
    with pytest.raises(OutOfLevelsError, match="prepared for level 3"):
        lt.apply(c30.ev, c30.ev.drop_level(ct, 2))


def test_transform_arguments_are_checked(c30):
    p = c30.params
    lt = LinearTransform(p, np.eye(2))
    ct = placeholder(p)
    with pytest.raises(ParameterError, match="ev must be a"):
        lt.apply(None, ct)  # was an AttributeError
    with pytest.raises(ParameterError, match="hoisted must be True or False"):
        lt.apply(c30.ev, ct, hoisted="no")  # was read as a flag
    with pytest.raises(ScaleOutOfBoundsError, match=r"input_scale.*below 1"):
        LinearTransform(p, np.eye(2), input_scale=0.5)  # was accepted
    with pytest.raises(ScaleOutOfBoundsError, match="input_scale"):
        LinearTransform(p, np.eye(2), input_scale=2**200)  # failed inside encode
    for n, match in ((-1, "must be an int in"), (1000, "must be an int in"),
                     ("4", "must be an int"), (3, "must divide the slot count")):
        with pytest.raises(ParameterError, match=f"LinearTransform.matrix: n {match}"):
            lt.matrix(n)  # bare ValueError/TypeError, or a folded 3x3 block
    assert np.allclose(lt.matrix(2), np.eye(2))
    for args, match in ((([1, 2], 0), "slots must be"), (("ab", 4), "indices must be"),
                        (([1.5], 4), "a diagonal index must be"), ((None, 4), "indices"),
                        (([1], 10**9), "slots must be")):
        with pytest.raises(ParameterError, match=f"baby_steps_for: {match}"):
            baby_steps_for(*args)
    for slots in (0, "4", -2, 2.0):
        with pytest.raises(ParameterError, match="diagonals_of: slots must be"):
            diagonals_of(np.eye(2), slots)


# -- Bootstrapper -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bp():
    return bootstrap_params_small()


@pytest.mark.parametrize("kw,match", [
    (dict(degree="31"), "degree must be an int in"),
    (dict(degree=31.0), "degree must be an int in"),  # None is the default (default_eval_mod)
    (dict(degree=0), r"degree must be an int in \[2, 4095\].*cannot follow"),  # was accepted
    (dict(degree=1), r"degree must be an int in \[2, 4095\]"),
    (dict(degree=10**9), r"degree must be an int in \[2, 4095\]"),
    (dict(K=-5), r"K must be an int in \[1, 256\].*\|I\|"),
    (dict(K=float("nan")), "K must be an int"),
    (dict(K="10"), "K must be an int"),
    (dict(K=0), r"K must be an int in \[1, 256\]"),  # was accepted: garbage out
    (dict(double_angles="3"), "double_angles must be an int"),
    (dict(double_angles=-1), r"double_angles must be an int in \[0, 14\]"),  # was a level error
    (dict(double_angles=10**9), r"double_angles must be an int in \[0, 14\]"),
    (dict(message_ratio_bits=True), "message_ratio_bits must be an int"),
    (dict(ephemeral_weight=-1), "ephemeral_weight must be an int in"),
])
def test_bootstrapper_arguments_are_checked(bp, kw, match):
    start = time.perf_counter()
    with pytest.raises(ParameterError, match=match):
        Bootstrapper(bp, **kw)
    assert time.perf_counter() - start < 0.5  # before any work


@pytest.mark.parametrize("kw,fix", [(dict(degree=15), "use degree=31"),
                                    (dict(double_angles=0), "use degree=127"),
                                    (dict(double_angles=1), "use degree=63")])
def test_a_fit_too_coarse_for_evalmod_is_refused(bp, kw, fix):
    """A cosine spanning ±69 radians (no double angle) fitted at degree 31, or ±8.6 at degree
    15, bootstrapped to noise without a word."""
    with pytest.raises(ParameterError, match=rf"would return noise; {fix}, or more "
                                             "double_angles"):
        Bootstrapper(bp, **kw)


def test_bootstrapper_methods_check_their_arguments(bp):
    bt = Bootstrapper(bp)
    with ren.random.seeded(2):
        kg = KeyGenerator(bp)
        other = KeyGenerator(make_params(N=256, depth=2, scale_bits=40, insecure=True))
    ev = Evaluator(bp)
    for bad in (None, 5, bp):
        with pytest.raises(ParameterError, match=r"Bootstrapper\.keys: keygen must be a "
                                                 "KeyGenerator"):
            bt.keys(bad)  # was an AttributeError
        with pytest.raises(ParameterError, match="encapsulation_keys: keygen must be a"):
            bt.encapsulation_keys(bad)
    with pytest.raises(ParamsMismatchError, match="other parameters"):
        bt.keys(other)
    with pytest.raises(ParameterError, match="progress must be True or False"):
        bt.keys(kg, progress="yes")
    with pytest.raises(ParameterError, match="mod_raise: ct must be a Ciphertext"):
        bt.mod_raise(None)  # was an AttributeError
    ct = Encryptor(bp, kg.secret_key()).encrypt(Encoder(bp).encode([0.5], level=0,
                                                                   scale=bt.input_scale))
    for call in (lambda: bt.coeff_to_slot(None, ct), lambda: bt.eval_mod("ev", ct),
                 lambda: bt.slot_to_coeff(ev.params, ct, ct)):
        with pytest.raises(ParameterError, match="needs an Evaluator of the bootstrapper's"):
            call()
    with pytest.raises(ParameterError, match="eval_mod: ct must be a Ciphertext"):
        bt.eval_mod(ev, None)
    with pytest.raises(ParameterError, match="slot_to_coeff: ct must be a Ciphertext"):
        bt.slot_to_coeff(ev, ct, [1])
    with pytest.raises(ParameterError, match="Ciphertext"):
        bt.bootstrap(ev, "ct")
    with pytest.raises(ParameterError, match="encapsulation_keys must be a EncapsulationKeys"):
        bt.bootstrap(ev, ct, encapsulation_keys="keys")


def test_the_bootstrap_scale_message_prints_exact_scales(bp):
    bt = Bootstrapper(bp)
    with ren.random.seeded(2):
        kg = KeyGenerator(bp)
    ct = Encryptor(bp, kg.secret_key()).encrypt(Encoder(bp).encode(
        [0.5], level=0, scale=bt.input_scale + 1))
    with pytest.raises(ScaleMismatchError) as info:
        bt.bootstrap(Evaluator(bp), ct)
    assert str(bt.input_scale) in str(info.value) and str(bt.input_scale + 1) in str(info.value)


def test_bootstrapping_helpers_check_their_arguments(bp):
    for N in (None, "256", 3, 2.0, 1 << 20, 96):
        with pytest.raises(ParameterError, match="default_message_ratio_bits: N must be"):
            default_message_ratio_bits(N)  # bare AttributeError, or a value for N=96
    assert default_message_ratio_bits(256) == 12
    with pytest.raises(ParameterError, match="bound_K: params must be a CKKSParams"):
        bound_K(None)
    with pytest.raises(ParameterError, match=r"bound_K: weight must be an int in \[0, 256\]"):
        bound_K(bp, -3)  # a bare ValueError (math domain error)
    assert bound_K(bp, 0) == bound_K(bp) == 10
    ring = RingSpec.generate(8, 3, bits=30)
    x = Poly.from_coefficients([1] * 8, RingSpec(8, ring.moduli[:1]))
    with pytest.raises(ParameterError, match="centred_lift: x must be a Poly"):
        centred_lift(None, ring)
    with pytest.raises(ParameterError, match="centred_lift: ring must be a RingSpec"):
        centred_lift(x, None)
    with pytest.raises(ParameterError, match="COEFF domain"):
        centred_lift(x.ntt(), ring)
    with pytest.raises(ParameterError, match="N=16"):
        centred_lift(x, RingSpec.generate(16, 2, bits=30))


def test_every_error_here_is_a_ren_error():
    """The classes the tests above expect are all RenErrors (and ParameterError a ValueError,
    so generic handlers keep working)."""
    for cls in (ParameterError, ScaleMismatchError, ScaleOutOfBoundsError, OutOfLevelsError,
                ParamsMismatchError):
        assert issubclass(cls, RenError)


# -- the last findings of tests/api_fuzz.py's whole-table run (issue 38 §2) ----------------------
@pytest.mark.parametrize("call", [
    lambda: CKKSParams.key_switching_options(1 << 12, 2, bogus_option=1),
    lambda: CKKSParams.fastest_key_switching(1 << 12, 2, bogus_option=1),
])
def test_key_switching_options_name_unknown_fields(call):
    """A bare TypeError from CKKSParams.__init__ before; preset() already said this."""
    with pytest.raises(ParameterError, match=r"unknown field\(s\) \['bogus_option'\]"):
        call()


@pytest.mark.parametrize("kw", [dict(N=np.array([])), dict(N=np.zeros((2, 2))),
                                dict(secret=np.array([])), dict(secret=np.zeros((2, 2)))])
def test_bootstrap_params_small_refuses_arrays(kw):
    """NumPy's 'truth value of an array is ambiguous' ValueError before."""
    from ren.ckks.circuits.bootstrap import bootstrap_params_small

    with pytest.raises(ParameterError):
        bootstrap_params_small(**kw)
    assert bootstrap_params_small(N=np.int64(256)).N == 256


def test_check_scale_refuses_an_array_message_bound():
    from ren.ckks.circuits.bootstrap import bootstrap_params_small

    p = bootstrap_params_small()
    with pytest.raises(ParameterError, match="message bound"):
        p.check_scale(p.scale(1), 1, "op", message=np.array([1.0, 2.0]))
    p.check_scale(p.scale(1), 1, "op", message=np.int64(1))


def test_a_poly_form_that_is_no_name_is_a_parameter_error():
    import ren

    p = ren.Poly.from_coefficients(range(16), ren.RingSpec.generate(16, 2))
    with pytest.raises(ParameterError, match="form must be"):
        p.tobytes(form=[])
