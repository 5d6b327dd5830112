"""`Poly`: the lazy user-facing API — its names, the nodes it builds, the errors it raises when a
node is built, the domain rules and RANDOM nodes with their seeds."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from conftest import ring, rings
from hypothesis import given
from hypothesis import strategies as st

import ren
import ren.reference
import ren.sampling
from ren import random as ren_random
from ren.errors import (
    DeviceError,
    DomainError,
    LevelError,
    ParameterError,
    RenError,
    RingMismatchError,
    ShapeError,
)
from ren.ops import Op
from ren.poly import Poly
from ren.ring import Domain, RingSpec
from ren.spec import spec_of

COEFF, NTT = Domain.COEFF, Domain.NTT


def poly(r: RingSpec, device: str = "python", start: int = 0) -> Poly:
    return Poly.from_coefficients([start + i - r.N // 2 for i in range(r.N)], r, device=device)


# ================================================================================================
# API surface
# ================================================================================================
CLASS_API = ["from_coefficients", "const", "uniform", "uniform_on_interval", "ternary",
             "sparse_ternary", "gaussian"]
METHOD_API = ["__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__neg__",
              "ntt", "intt", "to_ring", "rescale", "rotate", "conjugate", "automorph", "to",
              "contiguous"]
PROPERTY_API = ["ring", "domain", "device", "node"]


class TestApi:
    @pytest.mark.parametrize("name", CLASS_API + METHOD_API)
    def test_callable(self, name):
        assert callable(getattr(Poly, name))

    @pytest.mark.parametrize("name", PROPERTY_API)
    def test_property(self, name):
        assert isinstance(getattr(Poly, name), property)

    def test_exported(self):
        assert ren.Poly is Poly and ren.RingSpec is RingSpec and ren.Domain is Domain
        for err in ("RenError", "ParameterError", "ShapeError", "RingMismatchError",
                    "DomainError", "DeviceError", "LevelError"):
            assert issubclass(getattr(ren, err), RenError)

    def test_properties(self, small_ring):
        a = poly(small_ring)
        assert a.ring == small_ring
        assert a.domain is COEFF
        assert a.device == "python"
        assert isinstance(a.node, ren.Node)
        assert a.node.op is Op.TO_RNS
        assert a.spec == ren.PolySpec(small_ring, COEFF, "python")
        assert "Poly" in repr(a)

    def test_no_truth_value(self):
        with pytest.raises(TypeError):
            bool(poly(ring(4, 1)))


# ================================================================================================
# ops build nodes (and run nothing)
# ================================================================================================
class TestLazy:
    @pytest.fixture
    def no_compute(self, monkeypatch):
        def boom(*args, **kwargs):
            raise AssertionError("a Poly operation computed something")
        ntt_module = sys.modules["ren.ring.ntt"]
        for mod, name in [(ntt_module, "ntt"), (ntt_module, "intt"), (ren.ring, "ntt"),
                          (ren.ring, "intt"), (ren.sampling, "sample"),
                          (ren.sampling, "sample_signed"), (ren.reference, "sample"),
                          (ren.reference.ReferenceEvaluator, "evaluate")]:
            assert hasattr(mod, name)
            monkeypatch.setattr(mod, name, boom)

    def test_ops_only_build_nodes(self, no_compute):
        r = ring(16, 3)
        a, b = poly(r), poly(r, start=5)
        u = Poly.uniform(r)
        t = Poly.ternary(r)
        g = Poly.gaussian(r)
        c = a * b + 3
        assert c.node.op is Op.ADD
        mul, three = c.node.src
        assert mul.op is Op.MUL and mul.src == (a.node, b.node)
        assert three.op is Op.AS_RING and three.src[0].op is Op.CONST
        assert three.src[0].arg == (3, "python")
        d = (c.intt() - u) * t
        assert d.node.op is Op.MUL
        assert d.domain is NTT
        e = (-d).rotate(2).conjugate().automorph(7).intt().rescale(r.moduli[-1])
        assert [n.op for n in (e.node, e.node.src[0], e.node.src[0].src[0])] == \
            [Op.RESCALE, Op.INTT, Op.AUTOMORPH]
        f = e.to_ring(r.drop_last(2)).to("python:1").contiguous()
        assert f.node.op is Op.CONTIGUOUS and f.device == "python:1"
        assert (g * 2).node.src[0] is g.node

    @pytest.mark.parametrize("method,args,op,arg", [
        ("ntt", (), Op.NTT, None),
        ("rotate", (3,), Op.ROTATE, 3),
        ("rotate", (-2,), Op.ROTATE, -2),
        ("conjugate", (), Op.CONJUGATE, None),
        ("automorph", (3,), Op.AUTOMORPH, 3),
        ("automorph", (-1,), Op.AUTOMORPH, 15),  # normalised mod 2N
        ("contiguous", (), Op.CONTIGUOUS, None),
        ("to", ("python:2",), Op.COPY, "python:2"),
        ("to", ("PYTHON:0",), Op.COPY, "python"),
    ])
    def test_unary_nodes(self, method, args, op, arg):
        a = poly(ring(8, 2))
        out = getattr(a, method)(*args)
        assert out.node.op is op and out.node.src == (a.node,) and out.node.arg == arg

    def test_constant_operands(self):
        r = ring(8, 2)
        a = poly(r)
        for expr, op, const_pos in [(a + 5, Op.ADD, 1), (5 + a, Op.ADD, 0), (a - 5, Op.SUB, 1),
                                    (5 - a, Op.SUB, 0), (a * 5, Op.MUL, 1), (5 * a, Op.MUL, 0)]:
            assert expr.node.op is op
            c = expr.node.src[const_pos]
            assert c.op is Op.AS_RING and c.src[0].arg == (5, "python")
            assert expr.node.src[1 - const_pos] is a.node
        neg = a + (-1)
        assert neg.node.src[1].src[0].arg == (r.Q - 1, "python")  # reduced into [0, Q)
        big = a * (3 * r.Q + 2)
        assert big.node.src[1].src[0].arg == (2, "python")
        assert (a + np.int64(4)).node.src[1].src[0].arg == (4, "python")

    def test_unsupported_operands(self):
        a = poly(ring(8, 1))
        for other in (1.5, "x", None, True, [1, 2]):
            with pytest.raises(TypeError):
                a + other
            with pytest.raises(TypeError):
                other * a

    def test_from_coefficients_inputs(self):
        r = ring(8, 2)
        xs = [(-1) ** i * (1 << (40 * i)) for i in range(8)]
        a = Poly.from_coefficients(xs, r)
        buf = a.node.src[0].arg
        assert a.node.arg == (r, buf.shape[1])
        assert ren.ring.unpack_words(buf.array()) == xs
        b = Poly.from_coefficients(np.arange(8, dtype=np.int64), r)
        assert ren.ring.unpack_words(b.node.src[0].arg.array()) == list(range(8))
        c = Poly.from_coefficients(range(8), r)
        assert c.ring == r
        # a device in host memory holds the words itself and reduces them (no COPY)
        d = Poly.from_coefficients(list(range(8)), r, device="python:1")
        assert d.node.op is Op.TO_RNS and d.node.src[0].arg.device == d.device == "python:1"


# ================================================================================================
# errors at node-build time
# ================================================================================================
class TestErrors:
    def test_ring_mismatch_add(self):
        a = poly(ring(8, 2))
        for other in (poly(ring(8, 3)), poly(ring(8, 2, 31)), poly(ring(16, 2))):
            with pytest.raises(RingMismatchError):
                a + other
            with pytest.raises(RingMismatchError):
                a * other
            with pytest.raises(RingMismatchError):
                other - a

    @given(rings(ns=(4, 8)), rings(ns=(4, 8)))
    def test_ring_mismatch_iff_rings_differ(self, r1, r2):
        a, b = poly(r1), poly(r2)
        if r1 == r2:
            assert (a + b).ring == r1
        else:
            with pytest.raises(RingMismatchError):
                a + b

    @pytest.mark.parametrize("dev_a,dev_b", [("python", "python:1"), ("python:1", "python:2"),
                                             ("python", "cuda"), ("cuda", "cuda:1")])
    def test_device_mismatch(self, dev_a, dev_b):
        r = ring(8, 2)
        a, b = poly(r, dev_a), poly(r, dev_b)
        assert a.device == dev_a and b.device == dev_b
        with pytest.raises(DeviceError):
            a * b
        with pytest.raises(DeviceError):
            a + b
        with pytest.raises(DeviceError):
            b - a
        assert (a * b.to(dev_a)).device == dev_a
        assert (a + Poly.const(1, r, device=dev_a)).device == dev_a
        with pytest.raises(DeviceError):
            a + Poly.const(1, r, device=dev_b)
        assert (b + 1).device == dev_b  # an int adopts the Poly's device

    def test_device_names(self):
        r = ring(8, 1)
        assert poly(r, "PYTHON").device == "python"
        assert poly(r, "python:0").device == "python"
        assert poly(r, "cuda:0").device == "cuda"
        for bad in ("gpu", "tpu:1", "python:", "cuda:x", "", "python:-1", 3, None):
            with pytest.raises(DeviceError):
                poly(r, bad)
            with pytest.raises(DeviceError):
                poly(r).to(bad)
            with pytest.raises(DeviceError):
                Poly.uniform(r, device=bad)

    def test_domain_mismatch(self):
        r = ring(8, 2)
        a = poly(r)
        b = poly(r, start=3).ntt()
        for bad in (lambda: a + b, lambda: b + a, lambda: a - b, lambda: b - a):
            with pytest.raises(DomainError):
                bad()
        with pytest.raises(DomainError):
            b.ntt()
        with pytest.raises(DomainError):
            a.intt()
        with pytest.raises(DomainError):
            Poly.const(1, r, domain="frequency")
        with pytest.raises(DomainError):
            Poly._random(r, "ternary", (), "python", NTT)

    def test_wrong_length(self):
        r = ring(8, 2)
        for coeffs in ([1] * 7, [1] * 9, [], np.zeros(16, np.int64), np.zeros((2, 4), np.int64)):
            with pytest.raises(ShapeError):
                Poly.from_coefficients(coeffs, r)
        assert issubclass(ShapeError, ParameterError)

    def test_bad_coefficients(self):
        r = ring(4, 1)
        for coeffs in ([1, 2, 3, 4.0], [1, 2, 3, True], [1, 2, 3, "4"], "abcd", 1234,
                       np.zeros(4, np.float64)):
            with pytest.raises(ShapeError):
                Poly.from_coefficients(coeffs, r)
        with pytest.raises(ParameterError):
            Poly.from_coefficients([1, 2, 3, 4], "not a ring")

    def test_rescale_errors(self):
        r = ring(8, 4)
        a = poly(r)
        q = r.moduli
        assert a.rescale(q[3]).ring == r.drop_last(1)
        assert a.rescale([q[2], q[3]]).ring == r.drop_last(2)
        assert a.rescale(np.uint32(q[3])).ring == r.drop_last(1)
        for bad in (q[0], q[2], [q[3], q[2]], [q[1], q[3]], list(q), [*q[1:], q[0]], [],
                    ring(8, 1, 31).moduli[0]):
            with pytest.raises(LevelError):
                a.rescale(bad)
        one = poly(ring(8, 1))
        with pytest.raises(LevelError):
            one.rescale(one.ring.moduli[0])

    def test_to_ring_errors(self):
        r = ring(8, 2)
        a = poly(r)
        with pytest.raises(RingMismatchError):
            a.to_ring(ring(16, 2))
        with pytest.raises(RingMismatchError):
            a.to_ring(RingSpec(4, r.moduli))
        with pytest.raises(ParameterError):
            a.to_ring("ring")
        assert a.to_ring(ring(8, 3)).ring == ring(8, 3)
        assert a.to_ring(ring(8, 2, 31)).ring == ring(8, 2, 31)

    def test_sampler_parameter_errors(self):
        r = ring(8, 2)
        Poly.sparse_ternary(r, 8)
        Poly.sparse_ternary(r, 0)
        for bad in (lambda: Poly.sparse_ternary(r, 9), lambda: Poly.sparse_ternary(r, -1),
                    lambda: Poly.sparse_ternary(r, True),
                    lambda: Poly.uniform_on_interval(r, 3, 2),
                    lambda: Poly.uniform_on_interval(r, 0, 1 << 32),
                    lambda: Poly.gaussian(r, 0.0), lambda: Poly.gaussian(r, -1.0),
                    lambda: Poly.gaussian(r, float("nan")),
                    lambda: Poly.const(1.5, r), lambda: Poly.const(True, r),
                    lambda: Poly.uniform("ring")):
            with pytest.raises(ParameterError):
                bad()
        Poly.uniform_on_interval(r, 0, (1 << 32) - 1)
        Poly.uniform_on_interval(r, 5, 5)

    def test_automorph_and_rotate_errors(self):
        a = poly(ring(8, 1))
        for g in (0, 2, 16, -4):
            with pytest.raises(ParameterError):
                a.automorph(g)
        for k in (1.0, "1", True):
            with pytest.raises(ParameterError):
                a.rotate(k)

    def test_errors_are_ren_errors(self):
        r = ring(8, 2)
        a = poly(r)
        cases = [lambda: a + poly(ring(8, 3)), lambda: a + poly(r, "python:1"),
                 lambda: a + a.ntt(), lambda: a.rescale(r.moduli[0]),
                 lambda: Poly.from_coefficients([1], r)]
        for bad in cases:
            with pytest.raises(RenError):
                bad()


# ================================================================================================
# domain rules
# ================================================================================================
class TestDomains:
    def test_mul_of_two_polys_is_ntt(self):
        r = ring(8, 2)
        a, b = poly(r), poly(r, start=1)
        assert (a * b).domain is NTT
        assert (a * b.ntt()).domain is NTT
        assert (a.ntt() * b).domain is NTT
        assert (a.ntt() * b.ntt()).domain is NTT
        assert (a * a).domain is NTT

    @pytest.mark.parametrize("make", [lambda a: a, lambda a: a.ntt()])
    def test_scalar_ops_keep_domain(self, make):
        r = ring(8, 2)
        a = make(poly(r))
        dom = a.domain
        for expr in (a * 3, 3 * a, a + 3, 3 + a, a - 3, 3 - a, -a, a * 0, a + (-7)):
            assert expr.domain is dom
            assert expr.ring == r and expr.device == "python"
        for c in (a + 3, 3 - a):  # the constant is re-tagged to the Poly's domain
            const = next(s for s in c.node.src if s.op is Op.AS_RING)
            assert const.arg == (r, dom)

    def test_const_poly_adapts_domain(self):
        r = ring(8, 2)
        a = poly(r).ntt()
        c = Poly.const(4, r)  # COEFF constant
        assert c.domain is COEFF
        assert (a + c).domain is NTT and (c + a).domain is NTT
        assert (a * c).domain is NTT and (c * a).domain is NTT
        b = poly(r)
        cn = Poly.const(4, r, domain="ntt")
        assert (b + cn).domain is COEFF and (cn - b).domain is COEFF
        assert (b * cn).domain is COEFF

    def test_representation_ops_keep_domain(self):
        r = ring(8, 3)
        for a in (poly(r), poly(r).ntt()):
            d = a.domain
            for out in (a.rotate(1), a.conjugate(), a.automorph(3), a.to_ring(r.drop_last(1)),
                        a.rescale(r.moduli[-1]), a.to("python:1"), a.contiguous(), -a):
                assert out.domain is d
        assert poly(r).ntt().domain is NTT
        assert poly(r).ntt().intt().domain is COEFF

    def test_ring_changes(self):
        r = ring(8, 3)
        a = poly(r)
        assert a.rescale(r.moduli[-1]).ring == r.drop_last(1)
        assert a.to_ring(r.drop_last(2)).ring == r.drop_last(2)
        sup = r.extend(ring(8, 1, 31).moduli)
        assert a.to_ring(sup).ring == sup
        assert spec_of(a.to_ring(sup).node).ring == sup


# ================================================================================================
# RANDOM nodes and seeds
# ================================================================================================
def seed_of(p: Poly) -> bytes:
    node = p.node
    assert node.op is Op.AS_RING and node.src[0].op is Op.RANDOM
    return node.src[0].arg.seed


SAMPLERS = [
    lambda r: Poly.uniform(r),
    lambda r: Poly.uniform(r, domain="NTT"),
    lambda r: Poly.ternary(r),
    lambda r: Poly.sparse_ternary(r, 3),
    lambda r: Poly.gaussian(r, 3.2),
    lambda r: Poly.uniform_on_interval(r, -5, 5),
]


class TestRandom:
    @pytest.mark.parametrize("make", SAMPLERS)
    def test_fresh_nodes(self, make):
        r = ring(8, 2)
        assert not ren_random.is_insecure()
        a, b = make(r), make(r)
        assert a.node is not b.node
        assert seed_of(a) != seed_of(b)
        assert len(seed_of(a)) == ren_random.SEED_BYTES

    def test_spec_contents(self):
        r = ring(8, 2)
        spec = Poly.sparse_ternary(r, 3, device="python:1").node.src[0].arg
        assert (spec.kind, spec.params, spec.device) == ("sparse_ternary", (3,), "python:1")
        spec = Poly.uniform_on_interval(r, -2, 9).node.src[0].arg
        assert (spec.kind, spec.params) == ("uniform_on_interval", (-2, 9))
        assert Poly.uniform(r, domain=NTT).domain is NTT
        assert Poly.gaussian(r).node.src[0].arg.params == (3.2,)

    @given(st.one_of(st.integers(-(1 << 70), 1 << 70), st.binary(max_size=8), st.text(max_size=8)))
    def test_seed_reproducible(self, s):
        r = ring(4, 1)
        ren_random.seed(s)
        assert ren_random.is_insecure()
        first = [seed_of(Poly.uniform(r)), seed_of(Poly.ternary(r))]
        ren_random.seed(s)
        second = [seed_of(Poly.uniform(r)), seed_of(Poly.ternary(r))]
        assert first == second and first[0] != first[1]
        ren_random.seed(None)
        assert not ren_random.is_insecure()
        assert seed_of(Poly.uniform(r)) not in first

    def test_same_seed_same_node(self):
        r = ring(4, 1)
        with ren_random.seeded(11):
            a = Poly.uniform(r)
        with ren_random.seeded(11):
            b = Poly.uniform(r)
        with ren_random.seeded(12):
            c = Poly.uniform(r)
        assert a.node is b.node  # identical RandomSpec: hash-consed to one node
        assert a.node is not c.node

    def test_different_seeds_differ(self):
        r = ring(4, 1)
        seeds = set()
        for s in (0, 1, -1, 255, 256, b"0", "0", b"", ""):
            ren_random.seed(s)
            seeds.add(seed_of(Poly.uniform(r)))
        # the seed's type is part of its material: "0" != b"0", "" != b"", 0 != b"\x00"
        assert len(seeds) == 9

    def test_seeded_restores_previous_mode(self):
        r = ring(4, 1)
        assert not ren_random.is_insecure()
        with ren_random.seeded(5):
            assert ren_random.is_insecure()
            x = seed_of(Poly.uniform(r))
        assert not ren_random.is_insecure()
        ren_random.seed(9)
        y1 = seed_of(Poly.uniform(r))
        with ren_random.seeded(5):
            assert seed_of(Poly.uniform(r)) == x
            seed_of(Poly.uniform(r))
            seed_of(Poly.uniform(r))
        # back in the seed(9) stream, continuing where it was
        y2 = seed_of(Poly.uniform(r))
        ren_random.seed(9)
        assert [seed_of(Poly.uniform(r)), seed_of(Poly.uniform(r))] == [y1, y2]
        assert ren_random.is_insecure()

    def test_seeded_restores_after_exception(self):
        with pytest.raises(RuntimeError), ren_random.seeded(3):
            raise RuntimeError
        assert not ren_random.is_insecure()

    def test_bad_seed(self):
        for bad in (1.5, [1], object()):
            with pytest.raises(ParameterError):
                ren_random.seed(bad)
