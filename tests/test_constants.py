"""Constants that appear during scheduling (folding x*0, x-x, conversions of constants) never
change a value, a domain or a ring.  Each case here gave a wrong answer or an error before the
fix; expected values are computed by hand or with Python ints."""

from __future__ import annotations

import numpy as np
import pytest

import ren
from ren import Domain, Poly, RingSpec
from ren import settings as ren_settings
from ren.reference import evaluate

RING = RingSpec.generate(8, 1)
RING3 = RingSpec.generate(8, 3)
COEFF, NTT = Domain.COEFF, Domain.NTT


def a() -> Poly:
    return Poly.from_coefficients(range(8), RING)


def b() -> Poly:
    return Poly.from_coefficients([1] * 8, RING)


def a3() -> Poly:
    return Poly.from_coefficients(range(8), RING3)


PERM = RingSpec(8, tuple(reversed(RING3.moduli)))
SUB = RING3.sub(0, 2)
BIG = -(3**50) + 12345  # a constant wider than any modulus, negative


def centred_const(residues: list[int], ring: RingSpec) -> list[int]:
    """The coefficients of a constant polynomial given its residues (Python ints, CRT)."""
    Q = ring.Q
    x = sum(r * pow(Q // q, -1, q) * (Q // q) for r, q in zip(residues, ring.moduli)) % Q
    return [x - Q if x > Q // 2 else x] + [0] * (ring.N - 1)


def extended_const(c: int, src: RingSpec, dst: RingSpec) -> list[int]:
    """TO_RING of the constant c onto more moduli, by the definition of the fast basis
    conversion: shared moduli keep c mod q, a new modulus p gets [sum_i [c·qhat_i^-1]_q_i ·
    qhat_i]_p (which is c + u·Q_src for some 0 <= u < limbs, not c itself)."""
    fast = 0
    for q in src.moduli:
        qhat = src.Q // q
        fast += (c * pow(qhat, -1, q)) % q * qhat
    return centred_const([c % p if p in src.moduli else fast % p for p in dst.moduli], dst)

# (name, builder, expected coefficients)
CASES = [
    ("product_with_folded_one_plus_ntt", lambda: (a() * 0 + 1) * b() + b().ntt(), [2] * 8),
    ("const_round_trip_times_scalar", lambda: (a() * 0 + 3).ntt().intt() * 3, [9] + [0] * 7),
    ("ntt_const_intt_times_itself",
     lambda: Poly.const(-9, RING, "NTT").intt() * Poly.const(-9, RING, "NTT"), [81] + [0] * 7),
    ("rotate_of_zero", lambda: (a() - a()).ntt().rotate(1), [0] * 8),
    ("negate_of_zero", lambda: -(a() - a()).ntt(), [0] * 8),
    ("negate_of_const_ntt", lambda: -(Poly.const(3, RING).ntt()), [-3] + [0] * 7),
    ("conjugate_of_zero", lambda: (a() * 0).ntt().conjugate(), [0] * 8),
    ("subring_of_zero", lambda: (a3() - a3()).ntt().to_ring(RING3.sub(0, 2)), [0] * 8),
    ("permuted_ring_of_zero", lambda: ((a3() - a3()).ntt() * 2).to_ring(PERM), [0] * 8),
    ("const_plus_rotated_const", lambda: Poly.const(4, RING).rotate(3) + a() * 0,
     [4] + [0] * 7),
    ("product_with_a_zero_that_is_itself_a_product",  # the rebuilt node already had a result
     lambda: a() * (a() * 0), [0] * 8),
    ("rescaled_const", lambda: (Poly.const(5, RING3).ntt() * 1).rescale(RING3.moduli[-1]),
     [0] * 8),
    # TO_RING of a constant folds to a constant (selection, reordering, basis extension)
    ("const_to_subring", lambda: Poly.const(BIG, RING3).to_ring(SUB),
     centred_const([BIG % q for q in SUB.moduli], SUB)),
    ("const_to_permuted_ring", lambda: Poly.const(BIG, RING3, "NTT").to_ring(PERM),
     centred_const([BIG % q for q in PERM.moduli], PERM)),
    ("const_extended", lambda: Poly.const(-5, SUB).to_ring(RING3),
     extended_const(-5, SUB, RING3)),
    ("ntt_const_extended", lambda: Poly.const(BIG, SUB, "NTT").to_ring(RING3),
     extended_const(BIG, SUB, RING3)),
    ("folded_const_extended",
     lambda: (Poly.from_coefficients(range(8), SUB) * 0 + BIG).to_ring(RING3) * 1,
     extended_const(BIG, SUB, RING3)),
]


@pytest.mark.parametrize("check", [False, True], ids=["plain", "REN_CHECK"])
@pytest.mark.parametrize("name,build,expected", CASES, ids=[c[0] for c in CASES])
def test_folded_constants_keep_values(name, build, expected, check):
    p = build()
    ring, domain = p.ring, p.domain
    reference = evaluate(p)[0]
    with ren_settings.override(REN_CHECK=int(check)):
        p.realize()
    assert (p.ring, p.domain) == (ring, domain)
    assert np.array_equal(p.numpy(), reference)
    assert p.coefficients() == expected


def test_realizing_keeps_the_declared_domain():
    z = (a() - a()) * b()
    assert z.domain is NTT
    z.realize()
    assert z.domain is NTT
    assert z.tolist() == [[0] * 8]  # NTT residues of zero
    w = (a() * 0 + 1) * b()
    assert w.domain is NTT
    assert np.array_equal(w.numpy(), ren.ring.ntt(np.array([[1] * 8], np.uint32), RING))


def test_a_folded_zero_behaves_the_same_before_and_after_realize():
    d = a() - a()
    with pytest.raises(ren.DomainError):
        d + b().ntt()
    d.realize()
    with pytest.raises(ren.DomainError):
        d + b().ntt()
    assert d.domain is COEFF and d.coefficients() == [0] * 8


def test_serialization_reads_the_domain_of_the_realized_value():
    p = (a() * 0 + 1) * b()
    q = Poly.frombytes(p.tobytes())
    assert q.domain is NTT
    assert q.coefficients() == [1] * 8


def test_requested_constants_stay_symbolic():
    """A Poly that *is* a constant needs no storage; one that folded to a constant is stored."""
    c = Poly.const(7, RING)
    c.realize()
    assert c.node.src[0].op is ren.Op.CONST
    z = a() * 0
    z.realize()
    assert z.node.src[0].op is ren.Op.BUFFER
    assert z.coefficients() == [0] * 8


def test_a_rule_that_changes_a_ring_is_a_schedule_error():
    from ren.rewrite import P, X, rewrite

    x = a()
    bad = [(P(ren.Op.NEG, X("x")), lambda x: Poly.const(0, RING3).node, "bad_rule")]
    with pytest.raises(ren.ScheduleError, match=r"bad_rule.*ring"):
        rewrite((-x).node, bad, name="test", keep_specs=True)


# A constant realized beside an expression that uses it (issue 16): pass 5 stored the constant
# as an output buffer and the product then read that stored polynomial as its operand (a
# coefficient-domain [c, 0, ..., 0] times x, pointwise) and flipped to the NTT domain.  Each
# builder returns (the program's outputs); the first is always a product by the constant.
def _x() -> Poly:
    return Poly.from_coefficients([0, 1, 0, -1, 0, 0, 1, 0], RING3)


def _c(domain: str = "COEFF") -> Poly:
    return Poly.const(5, RING3, domain)


SHARED_CONST = [
    ("plus_zero", lambda: [_x() * 5, _c() + 0]),
    ("intt", lambda: [_c("NTT") * _x(), _c("NTT").intt()]),
    ("ntt", lambda: [_x().ntt() * 5, _c().ntt()]),
    ("rotate", lambda: [_x() * 5, _c().rotate(3)]),
    ("conjugate", lambda: [_x() * 5, _c().conjugate()]),
    ("automorph", lambda: [_x() * 5, _c().automorph(3)]),
    ("same_ring", lambda: [_x() * 5, _c().to_ring(RING3)]),
    ("squared", lambda: [_x() * 25, _c() * _c()]),
    ("self_sub", lambda: [_x() * 0 + _x(), _c() - _c()]),
    ("sum_and_product", lambda: [_x() + 5, _x() * 5, _c() + 0, _c().rotate(1).conjugate()]),
    ("output_first", lambda: [_c() + 0, _x() * 5, _x().ntt() * 5]),
]


@pytest.mark.parametrize("check", [False, True], ids=["plain", "REN_CHECK"])
@pytest.mark.parametrize("name,build", SHARED_CONST, ids=[c[0] for c in SHARED_CONST])
def test_a_constant_realized_beside_its_users_keeps_its_meaning(name, build, check):
    outputs = build()
    specs = [(p.ring, p.domain) for p in outputs]
    expected = evaluate(*outputs)
    with ren_settings.override(REN_CHECK=int(check)):
        ren.realize(outputs)
    for i, (p, spec, e) in enumerate(zip(outputs, specs, expected, strict=True)):
        assert (p.ring, p.domain) == spec, f"output {i} changed its domain"
        assert np.array_equal(p.numpy(), e), f"output {i}"


def test_the_product_by_a_realized_constant_is_the_scaled_polynomial():
    x = _x()
    y = x * 5
    ren.realize([y, _c() + 0])
    assert y.domain is COEFF
    assert y.coefficients() == [0, 5, 0, -5, 0, 0, 5, 0]
