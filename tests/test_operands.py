"""Poly operators (issue 16): an operand or operator Ren does not define raises OperandError (a
RenError and a TypeError) saying what is supported, never Python's bare TypeError; NumPy never
broadcasts over a Poly; `p == q` fails loudly instead of silently comparing identities."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from ren import Poly, RingSpec
from ren.errors import OperandError, RenError, TruthValueError

RING = RingSpec.generate(8, 2)
SUPPORTED = "exact modular arithmetic over ints and Polys"


def poly(start: int = 0) -> Poly:
    return Poly.from_coefficients(range(start, start + 8), RING)


def raises(call, error: type[RenError], *phrases: str) -> RenError:
    """`call()` raises `error` (a RenError and a TypeError) with every phrase in its message."""
    with pytest.raises(error) as info:
        call()
    assert isinstance(info.value, RenError) and isinstance(info.value, TypeError)
    for phrase in phrases:
        assert phrase in str(info.value), str(info.value)
    return info.value


def iadd(p, x):
    p += x
    return p


def imul(p, x):
    p *= x
    return p


# -- bad operands of + - * -----------------------------------------------------------------------
@pytest.mark.parametrize(("call", "shown", "hint"), [
    (lambda p: p + 1.5, "`Poly + float`", "would have to be rounded"),
    (lambda p: 1.5 + p, "`float + Poly`", "would have to be rounded"),
    (lambda p: p - 0.5, "`Poly - float`", "would have to be rounded"),
    (lambda p: iadd(p, 1.5), "`Poly + float`", "would have to be rounded"),
    (lambda p: imul(p, 2.0), "`Poly * float`", "would have to be rounded"),
    (lambda p: np.float64(2) * p, "`float64 * Poly`", "would have to be rounded"),
    (lambda p: p * np.float32(2), "`Poly * float32`", "would have to be rounded"),
    (lambda p: p * Fraction(4), "`Poly * Fraction`", "would have to be rounded"),
    (lambda p: p * 1j, "`Poly * complex`", "would have to be rounded"),
    (lambda p: p + None, "`Poly + NoneType`", ""),
    (lambda p: p + "x", "`Poly + str`", ""),
    (lambda p: "x" + p, "`str + Poly`", ""),
    (lambda p: p + True, "`Poly + bool`", "a bool is a flag"),
    (lambda p: False * p, "`bool * Poly`", "a bool is a flag"),
    (lambda p: p * np.bool_(True), "`Poly * bool", "a bool is a flag"),
    (lambda p: p * [1, 2], "`Poly * list`", "do not broadcast over a Poly"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_bad_operands_raise_operand_error(call, shown, hint):
    raises(lambda: call(poly()), OperandError, shown, SUPPORTED, hint)


@pytest.mark.parametrize("call", [
    lambda p: np.array([1, 2]) * p,
    lambda p: p * np.array([1, 2]),
    lambda p: np.array([1, 2]) + p,
    lambda p: p - np.arange(8),
    lambda p: np.arange(8) - p,
])
def test_numpy_arrays_do_not_broadcast_over_a_poly(call):
    """Before: NumPy object arrays of Polys, silently."""
    raises(lambda: call(poly()), OperandError, "ndarray", "do not broadcast over a Poly",
           "Poly.from_coefficients")


@pytest.mark.parametrize(("call", "phrase"), [
    (lambda p: p ** 2, "no power operator"),
    (lambda p: pow(p, 2, 5), "no power operator"),
    (lambda p: 2 ** p, "no power operator"),
    (lambda p: p / 2, "p.rescale(moduli)"),
    (lambda p: 2 / p, "has no division"),
    (lambda p: p // 2, "has no division"),
    (lambda p: p % 2, "has no division"),
    (lambda p: divmod(p, 2), "has no division"),
    (lambda p: p @ p, "already is the ring product"),
    (lambda p: p < poly(1), "have no order"),
    (lambda p: p <= 3, "have no order"),
    (lambda p: 3 > p, "have no order"),  # noqa: SIM300 (reflected)
    (lambda p: p >= poly(1), "have no order"),
    (lambda p: p & 1, "bitwise"),
    (lambda p: p << 1, "bitwise"),
    (lambda p: ~p, "bitwise"),
    (lambda p: abs(p), "negate with -p"),
    (lambda p: +p, "negate with -p"),
])
def test_unsupported_operators_say_what_to_write(call, phrase):
    raises(lambda: call(poly()), OperandError, "Poly does not support", phrase, SUPPORTED)


def test_division_hint_is_right():
    """The message's advice, multiplying by an inverse mod Q, divides exactly."""
    import math

    q_total = math.prod(RING.moduli)
    p = Poly.from_coefficients([3 * c for c in range(8)], RING)
    assert (p * pow(3, -1, q_total)).coefficients() == list(range(8))


# -- what stays accepted ---------------------------------------------------------------------------
@pytest.mark.parametrize("k", [3, -2, 1 << 40, np.int64(3), np.uint32(5), np.int8(-1)])
def test_ints_and_numpy_ints_stay_accepted(k):
    base = list(range(8))
    assert (poly() * k).coefficients() == [c * int(k) for c in base]
    assert (k * poly()).coefficients() == [c * int(k) for c in base]
    assert (poly() + k).coefficients() == [base[0] + int(k), *base[1:]]
    assert (k - poly()).coefficients() == [int(k) - base[0], *(-c for c in base[1:])]
    p = poly()
    p += k
    p *= 2
    assert p.coefficients() == [2 * (base[0] + int(k)), *(2 * c for c in base[1:])]
    assert (sum([poly(), poly(1)]) - poly(1)).coefficients() == base  # sum starts at 0 + p


# -- equality --------------------------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda p, q: p == q,
    lambda p, q: p != q,
    lambda p, q: p == p,
    lambda p, q: p == 0,
    lambda p, q: 0 == p,  # noqa: SIM300 (reflected)
    lambda p, q: p != np.int64(1),
], ids=["p==q", "p!=q", "p==p", "p==0", "0==p", "p!=int64"])
def test_equality_with_a_poly_or_int_raises(call):
    """Before: `p == q` was an identity bool, so `if p == q:` silently compared identities."""
    err = raises(lambda: call(poly(), poly()), TruthValueError, "does not compare lazy Polys",
                 "p is q", "p.tolist() == q.tolist()")
    assert "any(x is p for x in polys)" in str(err)


def test_if_p_equals_q_fails_loudly():
    p, q = poly(), poly()
    with pytest.raises(TruthValueError):
        if p == q:  # the silent identity comparison of the issue
            pass


def test_equality_with_other_types_is_false():
    p = poly()
    assert (p == None) is False and (p != None) is True  # noqa: E711 (the operator is the test)
    assert (p == "x") is False and (p == 1.5) is False
    assert p not in (None, "", 0.0)


def test_polys_stay_dict_keys_and_set_members():
    p, q = poly(), poly()
    d = {p: 1, q: 2}
    assert d[p] == 1 and d[q] == 2 and len({p, q, p}) == 2
    assert p in {p, q} and q in d
    assert p in [p]  # identity comes before == in `in`
    assert any(x is q for x in [p, q])
    with pytest.raises(TruthValueError, match="any"):
        _ = q in [p, q]  # documented: search lists of Polys by identity


def test_realized_values_compare_explicitly():
    p, q = poly(), poly()
    assert p.tolist() == q.tolist() and p.coefficients() == q.coefficients()


def test_equality_inside_a_jitted_function_is_a_jit_error():
    """A branch on `a == b` cannot be captured: the TruthValueError becomes ren.jit's JitError."""
    import ren
    from ren.errors import JitError

    @ren.jit
    def pick(a, b):
        return a if a == b else b

    with pytest.raises(JitError, match="a Python decision on a Poly's value"):
        pick(poly(), poly(1))
