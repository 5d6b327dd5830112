"""Bad input raises a specific RenError subclass (never a bare Python exception, never a silent
coercion), and the message says what was wrong.  One regression test per entry point of issue 7
("engine hardening"); each case failed (or passed bad input through) before the checks existed.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np
import pytest

import ren
from ren import Poly, RingSpec, run_passes, settings
from ren.errors import (
    LevelError,
    ParameterError,
    RenError,
    RingMismatchError,
    ShapeError,
    TruthValueError,
    check_int,
    check_real,
    is_int,
)
from ren.ring.ringspec import MAX_GENERATED_MODULI, ntt_primes
from ren.serialize import encode_poly

RING = RingSpec.generate(8, 1)
RING3 = RingSpec.generate(8, 3)
Q = RING.moduli[0]


def poly() -> Poly:
    return Poly.from_coefficients(range(8), RING)


def raises(call, error: type[RenError], phrase: str) -> RenError:
    """`call()` raises exactly `error` (or a subclass) with `phrase` in its message."""
    with pytest.raises(error) as info:
        call()
    assert phrase in str(info.value), str(info.value)
    return info.value


def row(*head) -> list:
    return [list(head) + [0] * (8 - len(head))]


# -- helpers in ren.errors ------------------------------------------------------------------------
@pytest.mark.parametrize("value", [0, -3, 1 << 80, np.int64(5), np.uint32(7), np.int8(-1)])
def test_is_int_accepts_python_and_numpy_integers(value):
    assert is_int(value) and check_int(value, "x") == int(value)
    assert type(check_int(value, "x")) is int


@pytest.mark.parametrize("value", [True, False, np.bool_(True), 1.0, np.float64(2), "3",
                                   Fraction(4), 1j, None, [1]])
def test_is_int_rejects_everything_else(value):
    assert not is_int(value)
    raises(lambda: check_int(value, "thing"), ParameterError, "thing must be an int")


@pytest.mark.parametrize("value", ["3.2", None, 1j, math.nan, math.inf, -math.inf, True])
def test_check_real_rejects(value):
    raises(lambda: check_real(value, "sigma"), ParameterError, "sigma must be a finite real")


# -- 1. silent coercion ---------------------------------------------------------------------------
@pytest.mark.parametrize("residues, phrase", [
    ([[0.5, 1.9, 2.99, 7.2, 0, 0, 0, 0]], "residue [0, 0] is float 0.5"),
    (row(0, Fraction(1, 2)), "residue [0, 1] is Fraction"),
    (row(0, 1, Fraction(2)), "residue [0, 2] is Fraction"),  # integral, but not an int
    (row(True), "residue [0, 0] is bool"),  # NumPy would turn [True, 0] into [1, 0]
    (row(0, np.float64(3)), "residue [0, 1] is float64"),
    (np.zeros((1, 8)), "integer array, got dtype float64"),
    (np.zeros((1, 8), dtype=bool), "integer array, got dtype bool"),
    (np.array(row(0, 2.0), dtype=object), "residue [0, 1] is float"),
], ids=["floats", "fraction", "integral-fraction", "bool", "np-float", "float-array",
        "bool-array", "object-array"])
def test_from_residues_rejects_non_integers(residues, phrase):
    err = raises(lambda: Poly.from_residues(residues, RING), ShapeError, phrase)
    assert str(err).startswith("from_residues:")


# (the "still ..." tests guard against over-rejection: they passed before the checks, too)
def test_from_residues_still_takes_exact_integers():
    want = [[0, 1, 2, Q - 1, 4, 5, 6, 7]]
    for residues in (want, np.array(want, dtype=np.uint32), np.array(want, dtype=np.int64),
                     [[np.uint32(v) for v in want[0]]], np.array(want, dtype=object)):
        assert Poly.from_residues(residues, RING).tolist() == want


def test_encode_poly_rejects_a_bool_in_a_list():
    raises(lambda: encode_poly(RING, ren.Domain.COEFF, row(1, True)), ShapeError,
           "residue [0, 1] is bool")


@pytest.mark.parametrize("moduli, phrase", [
    ((Q + 0.9,), "moduli must be ints, found float"),
    ((float(Q),), "moduli must be ints, found float"),
    ((str(Q),), "moduli must be ints, found str"),
    ((True,), "moduli must be ints, found bool"),
    ((Fraction(Q),), "moduli must be ints, found Fraction"),
    (str(Q), "must be a sequence of ints"),
    ({Q}, "must be a sequence of ints"),  # a set has no order, and the order is the basis
], ids=["float", "integral-float", "str", "bool", "fraction", "str-seq", "set"])
def test_ringspec_rejects_non_int_moduli(moduli, phrase):
    raises(lambda: RingSpec(8, moduli), ParameterError, phrase)


def test_ringspec_takes_numpy_integers_and_stores_python_ints():
    r = RingSpec(np.int64(8), np.array([Q], dtype=np.uint64))
    assert r == RING and hash(r) == hash(RING)
    assert type(r.N) is int and all(type(q) is int for q in r.moduli)
    assert RingSpec.generate(np.int32(8), np.int64(1), bits=np.uint8(30)) == RING


@pytest.mark.parametrize("lo, hi, bad", [(0.5, 1.5, "lo"), (0, 2.0, "hi"), (None, 3, "lo"),
                                         ("a", 3, "lo"), (math.nan, 3, "lo"),
                                         (math.inf, 3, "lo"), (0, -math.inf, "hi"),
                                         (True, 3, "lo"), (0, Fraction(3), "hi")])
def test_uniform_on_interval_rejects_non_int_bounds(lo, hi, bad):
    raises(lambda: Poly.uniform_on_interval(RING, lo, hi), ParameterError,
           f"uniform_on_interval: {bad} must be an int")


def test_uniform_on_interval_takes_numpy_ints():
    spec = Poly.uniform_on_interval(RING, np.int64(-2), np.int32(3)).node.src[0].arg
    assert spec.params == (-2, 3) and all(type(v) is int for v in spec.params)


@pytest.mark.parametrize("sigma", ["3.2", None, 1j, math.nan, math.inf, True, [3.2]])
def test_gaussian_sigma_must_be_a_real_number(sigma):
    raises(lambda: Poly.gaussian(RING, sigma), ParameterError,
           "gaussian: sigma must be a finite real number")


def test_gaussian_sigma_range_is_stated():
    raises(lambda: Poly.gaussian(RING, 1e7), ParameterError, "positive number below 10^6")


def test_gaussian_takes_ints_and_numpy_floats():
    assert Poly.gaussian(RING, 3).node.src[0].arg.params == (3.0,)
    assert Poly.gaussian(RING, np.float32(2.5)).node.src[0].arg.params == (2.5,)


@pytest.mark.parametrize("coeffs", [set(range(8)), dict.fromkeys(range(8)), frozenset(range(8)),
                                    bytearray(8)], ids=["set", "dict", "frozenset", "bytearray"])
def test_from_coefficients_requires_a_sequence(coeffs):
    raises(lambda: Poly.from_coefficients(coeffs, RING), ShapeError, "must be a sequence of ints")


def test_from_coefficients_sequences_still_work():
    for coeffs in (list(range(8)), tuple(range(8)), range(8), np.arange(8, dtype=np.int32)):
        assert Poly.from_coefficients(coeffs, RING).coefficients() == list(range(8))


# -- 2. bare Python exceptions -------------------------------------------------------------------
@pytest.mark.parametrize("moduli", [None, 1.5, "abc", "12", str(Q), [Q, 1.5], {Q}, b"1",
                                    np.zeros((1, 1), dtype=np.int64)])
def test_rescale_rejects_non_int_moduli(moduli):
    p = Poly.from_coefficients(range(8), RING3)
    raises(lambda: p.rescale(moduli), ParameterError, "rescale: moduli must be ints")


def test_rescale_still_accepts_ints_and_reports_level_problems():
    p = Poly.from_coefficients(range(8), RING3)
    last = RING3.moduli[-1]
    assert p.rescale(np.int64(last)).ring == RING3.drop_last()
    assert p.rescale(np.array(RING3.moduli[1:])).ring == RING3.drop_last(2)
    raises(lambda: p.rescale(RING3.moduli[0]), LevelError, "only trailing moduli")


@pytest.mark.parametrize("other", [3, None, "p", poly().node])
def test_poly_realize_rejects_non_polys(other):
    raises(lambda: poly().realize(other), ParameterError, "realize: expected Polys")


def test_bool_of_a_lazy_poly():
    for use in (bool, lambda p: p and 1, lambda p: not p):
        err = raises(lambda use=use: use(poly()), TruthValueError, "no truth value")
        assert isinstance(err, TypeError) and "realize" in str(err)


@pytest.mark.parametrize("arg, phrase", [([poly(), 3], "expected Polys, got int"),
                                         ((None,), "expected Polys, got NoneType"),
                                         (poly(), "list or tuple of Polys"),
                                         ("p", "list or tuple of Polys"),
                                         (3, "list or tuple of Polys")])
def test_ren_realize_rejects_non_polys(arg, phrase):
    raises(lambda: ren.realize(arg), ParameterError, phrase)


def test_ren_realize_still_realizes():
    p = poly() + 1
    ren.realize([p])
    assert p.is_realized and p.coefficients()[:2] == [1, 1]


@pytest.mark.parametrize("call, error, phrase", [
    (lambda: RING3.select(None), ParameterError, "select: moduli must be a sequence of ints"),
    (lambda: RING3.select(["x"]), ParameterError, "select: moduli must be ints"),
    (lambda: RING3.select([float(RING3.moduli[0])]), ParameterError, "must be ints"),
    (lambda: RING.extend(["x"]), ParameterError, "extend: moduli must be ints, found str"),
    (lambda: RING.extend(None), ParameterError, "extend: moduli must be a sequence"),
    (lambda: RING.extend([RING3.moduli[1] + 0.0]), ParameterError, "found float"),
    (lambda: RING3.sub("a"), ParameterError, "sub: start must be an int"),
    (lambda: RING3.sub(0, 1.5), ParameterError, "sub: stop must be an int"),
    (lambda: RING3.drop_last(None), ParameterError, "drop_last: k must be an int"),
    (lambda: RING3.drop_last(1.0), ParameterError, "drop_last: k must be an int"),
    (lambda: RING3.index("x"), ParameterError, "index: q must be an int"),
    (lambda: RING3.index(5), RingMismatchError, "modulus 5 is not in"),
    (lambda: RING3.is_subring_of(None), ParameterError, "expected a RingSpec"),
    (lambda: RING3.offset_in(RING3.moduli), ParameterError, "expected a RingSpec"),
    (lambda: RingSpec.generate(8, 1, bits=30.0), ParameterError, "bits must be an int"),
    (lambda: RingSpec.generate(8, 1, bits=True), ParameterError, "bits must be an int"),
    (lambda: RingSpec.generate(8.0, 1), ParameterError, "N must be an int"),
    (lambda: Poly.const(1.5, RING), ParameterError, "value must be an int, got float"),
    (lambda: Poly(3), ParameterError, "wraps a polynomial-valued IR node"),
    (lambda: Poly(RING), ParameterError, "wraps a polynomial-valued IR node"),
], ids=["select-None", "select-str", "select-float", "extend-str",
        "extend-None", "extend-float", "sub-start", "sub-stop", "drop_last-None",
        "drop_last-float", "index-str", "index-foreign", "is_subring_of", "offset_in",
        "generate-bits-float", "generate-bits-bool", "generate-N-float", "const", "Poly-int",
        "Poly-ring"])
def test_other_entry_points(call, error, phrase):
    raises(call, error, phrase)


def test_numpy_ints_accepted_where_ints_are_meant():
    assert Poly.sparse_ternary(RING, np.int64(2)).node.src[0].arg.params == (2,)
    assert type(Poly.sparse_ternary(RING, np.int64(2)).node.src[0].arg.params[0]) is int
    assert RING3.sub(np.int64(1)).moduli == RING3.moduli[1:]
    assert RING3.select(np.array(RING3.moduli[:2])).moduli == RING3.moduli[:2]
    assert RING3.index(np.uint32(RING3.moduli[2])) == 2


@pytest.mark.parametrize("value", ["yes", "1", 1.0, None, True])
def test_settings_override_rejects_non_int_values(value):
    before = settings.get("REN_CHECK"), settings.get("REN_DEBUG")
    raises(lambda: settings.override(REN_DEBUG=2, REN_CHECK=value), ParameterError,
           "REN_CHECK must be an int")  # at the call, not only on entering the block
    assert (settings.get("REN_CHECK"), settings.get("REN_DEBUG")) == before  # nothing changed


def test_settings_unknown_names():
    raises(lambda: settings.get(["REN_CHECK"]), ParameterError, "unknown switch")
    raises(lambda: settings.override(REN_NOPE=1), ParameterError, "unknown switch")
    with settings.override(REN_DEBUG=np.int64(0)):
        assert settings.get("REN_DEBUG") == 0


@pytest.mark.parametrize("kwargs, phrase", [
    ({"upto": 99}, "upto must be a pass number in 0..12"),
    ({"upto": -1}, "upto must be a pass number in 0..12"),
    ({"upto": 13}, "upto must be a pass number in 0..12"),
    ({"upto": 3.0}, "upto must be an int"),
    ({"upto": "3"}, "upto must be an int"),
    ({"start": 0}, "start must be a pass number in 1..12"),
    ({"start": 13}, "start must be a pass number in 1..12"),
    ({"start": None}, "start must be an int"),
    ({"start": True}, "start must be an int"),
])
def test_run_passes_checks_pass_numbers(kwargs, phrase):
    raises(lambda: run_passes(poly(), **kwargs), ParameterError, phrase)


def test_run_passes_boundaries_still_work():
    assert len(run_passes(poly(), upto=0, trace=True).graphs) == 1
    assert run_passes(poly(), upto=np.int64(12)).sink.op is ren.Op.SINK


# -- 3. hopeless RingSpec.generate requests fail fast ---------------------------------------------
@pytest.mark.parametrize("N, count, bits, phrase", [
    (2, 10**9, 30, "only about"),
    (2, MAX_GENERATED_MODULI + 1, 31, f"at most {MAX_GENERATED_MODULI} moduli"),
    (1 << 14, MAX_GENERATED_MODULI, 31, "only 6387 primes q ≡ 1 mod 32768 exist below 2^31"),
])
def test_generate_rejects_hopeless_counts_fast(N, count, bits, phrase):
    t0 = time.perf_counter()
    err = raises(lambda: RingSpec.generate(N, count, bits), ParameterError, phrase)
    assert time.perf_counter() - t0 < 1.0
    assert "fewer moduli" in str(err)


def _is_prime_by_trial_division(n: int) -> bool:
    if n < 2 or n % 2 == 0:
        return n == 2
    return all(n % d for d in range(3, math.isqrt(n) + 1, 2))


def _reference_ntt_primes(N: int, bits: int, count: int) -> list[int]:
    """Largest-first primes q ≡ 1 (mod 2N), 2N < q < 2^bits: a plain downward scan."""
    step, out = 2 * N, []
    q = 1 + ((1 << bits) - 2) // step * step
    while q > step and len(out) < count:
        if _is_prime_by_trial_division(q):
            out.append(q)
        q -= step
    return out


@pytest.mark.parametrize("logN", range(1, 9))
def test_ntt_primes_match_a_trial_division_scan(logN):
    N = 1 << logN
    for bits in range(3, 17):  # every prime of the progression, so the sieve's edges are hit
        assert ntt_primes(N, bits, 10**6) == _reference_ntt_primes(N, bits, 10**6), (N, bits)
    for bits in (30, 31):
        assert ntt_primes(N, bits, 4) == _reference_ntt_primes(N, bits, 4), (N, bits)


def test_ntt_primes_large_counts_are_fast_and_exact():
    t0 = time.perf_counter()
    primes = ntt_primes(2, 31, MAX_GENERATED_MODULI)
    assert time.perf_counter() - t0 < 1.0
    assert len(primes) == len(set(primes)) == MAX_GENERATED_MODULI
    assert primes == sorted(primes, reverse=True) and all(q % 4 == 1 for q in primes)
    for q in primes[:: len(primes) // 16]:
        assert _is_prime_by_trial_division(q)


# -- 4. seeds carry their type ---------------------------------------------------------------------
def _first_seed(s) -> bytes:
    ren.random.seed(s)
    return Poly.uniform(RING).node.src[0].arg.seed


@pytest.mark.parametrize("a, b", [(0, b"\x00"), (-1, b"\xff"), ("", b""), ("0", b"0"),
                                  (1, b"\x01"), ("a", b"a")])
def test_seeds_of_different_types_differ(a, b):
    assert _first_seed(a) != _first_seed(b)


def test_equal_seeds_still_agree():
    assert _first_seed(np.int64(5)) == _first_seed(5)
    assert _first_seed(bytearray(b"ab")) == _first_seed(b"ab")
    assert _first_seed("é") == _first_seed("é")
