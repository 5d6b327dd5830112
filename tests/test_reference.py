"""The reference evaluator against direct big-integer math: random ADD/SUB/MUL/NEG/constant DAGs,
automorphisms, rescale, ring conversion and the samplers."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from conftest import BITS, big_int, centred, crt, negacyclic_mul, ring, rings, substitute
from hypothesis import given
from hypothesis import strategies as st

import ren
import ren.sampling
from ren.poly import Poly
from ren.reference import divide_round as reference_divide_round
from ren.reference import evaluate, root_of_unity
from ren.ring import Domain, RingSpec, get_tables, ntt, primitive_root_2n, ring_convert
from ren.ring import divide_round as ring_divide_round

COEFF, NTT = Domain.COEFF, Domain.NTT


def value(p: Poly) -> list[int]:
    """The reference value of p as integers in [0, Q), in the coefficient domain (our CRT)."""
    q = p if p.domain is COEFF else p.intt()
    (res,) = evaluate(q)
    assert res.dtype == np.uint32 and res.shape == (p.ring.limbs, p.ring.N)
    return crt(res, p.ring.moduli)


def signed_value(p: Poly) -> list[int]:
    return [centred(v, p.ring.Q) for v in value(p)]


def residues(xs: list[int], r: RingSpec) -> np.ndarray:
    return np.array([[x % q for x in xs] for q in r.moduli], dtype=np.uint32)


# ================================================================================================
# random arithmetic DAGs
# ================================================================================================
STEP_KINDS = ("add", "sub", "mul", "neg", "add_c", "c_add", "sub_c", "c_sub", "mul_c", "c_mul",
              "add_k", "k_add", "k_sub", "k_mul")


@st.composite
def programs(draw):
    r = draw(rings(ns=(2, 4, 8, 16), limbs=(1, 2, 3), bits=BITS))
    n_inputs = draw(st.integers(2, 4))
    inputs = [draw(st.lists(big_int(200), min_size=r.N, max_size=r.N)) for _ in range(n_inputs)]
    steps = draw(st.lists(
        st.tuples(st.sampled_from(STEP_KINDS), st.integers(0, 63), st.integers(0, 63),
                  big_int(90), st.booleans()),
        min_size=1, max_size=10))
    return r, inputs, steps


def run_program(r: RingSpec, inputs, steps):
    """Build the Poly graph and, alongside, its expected value with Python ints mod Q."""
    Q = r.Q
    vals: list[tuple[Poly, list[int]]] = [
        (Poly.from_coefficients(xs, r), [x % Q for x in xs]) for xs in inputs]
    for kind, i, j, c, flip in steps:
        pa, ea = vals[i % len(vals)]  # indices into all earlier values: shared subexpressions
        pb, eb = vals[j % len(vals)]
        if flip and kind in ("neg", "add_c", "mul_c", "c_sub"):
            pa = pa.ntt() if pa.domain is COEFF else pa.intt()  # domain-independent semantics
        if pa.domain is not pb.domain and kind in ("add", "sub"):
            if flip:
                pb = pb.ntt() if pb.domain is COEFF else pb.intt()
            else:
                pa = pa.ntt() if pa.domain is COEFF else pa.intt()
        const_coeffs = [c % Q] + [0] * (r.N - 1)  # an int is the constant polynomial c
        # Poly.const in the *other* domain: it adapts to the Poly's domain
        k = Poly.const(c, r, domain=pa.domain.other())
        if kind == "add":
            out = (pa + pb, [(x + y) % Q for x, y in zip(ea, eb, strict=True)])
        elif kind == "sub":
            out = (pa - pb, [(x - y) % Q for x, y in zip(ea, eb, strict=True)])
        elif kind == "mul":
            out = (pa * pb, negacyclic_mul(ea, eb, Q))
            assert out[0].domain is NTT
        elif kind == "neg":
            out = (-pa, [(-x) % Q for x in ea])
        elif kind == "add_c":
            out = (pa + c, [(x + y) % Q for x, y in zip(ea, const_coeffs, strict=True)])
        elif kind == "c_add":
            out = (c + pa, [(x + y) % Q for x, y in zip(ea, const_coeffs, strict=True)])
        elif kind == "sub_c":
            out = (pa - c, [(x - y) % Q for x, y in zip(ea, const_coeffs, strict=True)])
        elif kind == "c_sub":
            out = (c - pa, [(y - x) % Q for x, y in zip(ea, const_coeffs, strict=True)])
        elif kind == "mul_c":
            out = (pa * c, [x * c % Q for x in ea])
            assert out[0].domain is pa.domain
        elif kind == "c_mul":
            out = (c * pa, [x * c % Q for x in ea])
            assert out[0].domain is pa.domain
        elif kind == "add_k":
            out = (pa + k, [(x + y) % Q for x, y in zip(ea, const_coeffs, strict=True)])
        elif kind == "k_add":
            out = (k + pa, [(x + y) % Q for x, y in zip(ea, const_coeffs, strict=True)])
        elif kind == "k_sub":
            out = (k - pa, [(y - x) % Q for x, y in zip(ea, const_coeffs, strict=True)])
        else:
            out = (k * pa, [x * c % Q for x in ea])
        assert out[0].domain is (NTT if kind == "mul" else pa.domain)
        vals.append(out)
    return vals


class TestRandomGraphs:
    @given(programs())
    def test_agrees_with_big_integers(self, prog):
        r, inputs, steps = prog
        vals = run_program(r, inputs, steps)
        polys = [p if p.domain is COEFF else p.intt() for p, _ in vals]
        got = evaluate(*polys)  # one evaluation of the whole DAG, shared nodes evaluated once
        for res, (_, expect) in zip(got, vals, strict=True):
            assert crt(res, r.moduli) == expect

    @given(programs())
    def test_ntt_domain_values(self, prog):
        """NTT-domain values are the fast NTT (ren.ring.ntt) of the expected coefficients."""
        r, inputs, steps = prog
        vals = run_program(r, inputs, steps)
        last, expect = vals[-1]
        p = last if last.domain is NTT else last.ntt()
        (res,) = evaluate(p)
        assert np.array_equal(res, ntt(residues(expect, r), r))

    def test_shared_subexpression_single_node(self):
        r = ring(8, 2)
        a = Poly.from_coefficients(list(range(8)), r)
        s = a * a
        t = (s + s) - s
        assert t.node.src[0].src == (s.node, s.node) and t.node.src[1] is s.node
        assert value(t) == value(s)

    def test_small_example(self):
        r = ring(4, 2)
        a = Poly.from_coefficients([1, 2, 3, 4], r)
        b = Poly.from_coefficients([0, 1, 0, 0], r)  # X
        # X·(1 + 2X + 3X^2 + 4X^3) = -4 + X + 2X^2 + 3X^3
        assert signed_value(a * b) == [-4, 1, 2, 3]
        assert signed_value(a * b + 10) == [6, 1, 2, 3]
        assert signed_value(10 - a) == [9, -2, -3, -4]
        assert signed_value(a.ntt() * 3 - 1) == [2, 6, 9, 12]

    @given(rings(ns=(2, 4, 8), limbs=(1, 2, 3)), st.data())
    def test_from_coefficients_and_const(self, r, data):
        xs = data.draw(st.lists(big_int(300), min_size=r.N, max_size=r.N))
        c = data.draw(big_int(300))
        p = Poly.from_coefficients(xs, r)
        assert signed_value(p) == [centred(x, r.Q) for x in xs]
        for dom in (COEFF, NTT):
            k = Poly.const(c, r, domain=dom)
            assert value(k) == [c % r.Q] + [0] * (r.N - 1)
        assert value(p.to("python:1").contiguous()) == value(p)

    def test_evaluate_accepts_nodes_and_several_roots(self):
        r = ring(4, 1)
        a = Poly.from_coefficients([1, 2, 3, 4], r)
        b = a + 1
        ra, rb = evaluate(a.node, b)
        assert ra.tolist() == [[1, 2, 3, 4]] and rb.tolist() == [[2, 2, 3, 4]]


# ================================================================================================
# representation and ring changes
# ================================================================================================
def inputs_for(r: RingSpec):
    return st.lists(big_int(200), min_size=r.N, max_size=r.N)


class TestReferenceOps:
    def test_root_of_unity_matches_tables(self):
        for N in (2, 4, 8, 16, 64):
            for bits in BITS:
                r = ring(N, 3, bits)
                assert tuple(root_of_unity(q, N) for q in r.moduli) == get_tables(r).psi
                assert all(root_of_unity(q, N) == primitive_root_2n(q, N) for q in r.moduli)

    @given(rings(ns=(2, 4, 8, 16), limbs=(1, 2, 3)), st.data())
    def test_ntt_matches_fast_ntt(self, r, data):
        xs = data.draw(inputs_for(r))
        p = Poly.from_coefficients(xs, r)
        (res,) = evaluate(p.ntt())
        assert np.array_equal(res, ntt(residues(xs, r), r))
        assert value(p.ntt()) == [x % r.Q for x in xs]

    @given(rings(ns=(2, 4, 8, 16), limbs=(1, 2)), st.data())
    def test_automorphisms(self, r, data):
        N, Q = r.N, r.Q
        xs = data.draw(inputs_for(r))
        k = data.draw(st.integers(-2 * N, 2 * N), label="k")
        g = data.draw(st.integers(-4 * N, 4 * N).filter(lambda x: x % 2), label="g")
        in_ntt = data.draw(st.booleans(), label="in_ntt")
        p = Poly.from_coefficients(xs, r)
        if in_ntt:
            p = p.ntt()
        expect_rot = substitute([x % Q for x in xs], pow(5, k, 2 * N), Q)
        expect_conj = substitute([x % Q for x in xs], 2 * N - 1, Q)
        expect_aut = substitute([x % Q for x in xs], g % (2 * N), Q)
        for out, expect in ((p.rotate(k), expect_rot), (p.conjugate(), expect_conj),
                            (p.automorph(g), expect_aut)):
            assert out.domain is p.domain
            assert value(out) == expect

    def test_conjugate_small(self):
        r = ring(4, 1)
        p = Poly.from_coefficients([1, 2, 3, 4], r)
        # X -> X^7 = X^-1: X^i -> -X^(N-i) for i > 0
        assert signed_value(p.conjugate()) == [1, -4, -3, -2]
        assert signed_value(p.rotate(0)) == [1, 2, 3, 4]

    @given(st.sampled_from((2, 4, 8, 16)), st.sampled_from(BITS), st.integers(1, 3), st.data())
    def test_rescale(self, N, bits, k, data):
        L = data.draw(st.integers(k + 1, 4), label="L")
        r = ring(N, L, bits)
        xs = data.draw(st.lists(st.one_of(big_int(130), st.integers(-r.Q, r.Q)),
                                min_size=N, max_size=N))
        in_ntt = data.draw(st.booleans(), label="in_ntt")
        p = Poly.from_coefficients(xs, r)
        if in_ntt:
            p = p.ntt()
        out = p.rescale(r.moduli[L - k:])
        kept = r.drop_last(k)
        assert out.ring == kept and out.domain is p.domain
        P = math.prod(r.moduli[L - k:])
        expect = [((centred(x, r.Q) + P // 2) // P) % kept.Q for x in xs]
        assert value(out) == expect

    @given(st.sampled_from((2, 4, 8)), st.integers(1, 3), st.data())
    def test_divide_round_agrees_with_the_ring_library(self, N, k, data):
        """`ren.reference.divide_round` (big integers) and `ren.ring.divide_round` (exact u32
        divisions) take the same arguments and give the same residues."""
        r = ring(N, data.draw(st.integers(k + 1, 4), label="L"))
        xs = data.draw(st.lists(st.integers(0, r.Q - 1), min_size=N, max_size=N))
        x = residues(xs, r)
        ours = reference_divide_round(x.astype(np.int64), r, k)
        assert ours.dtype == np.int64
        assert np.array_equal(ours, ring_divide_round(x, r, k))

    def test_rescale_rounding_small(self):
        r = ring(4, 2)
        P = r.moduli[1]
        h = P // 2
        xs = [5 * P + h, 5 * P + h + 1, -5 * P - h, -5 * P - h - 1]
        out = Poly.from_coefficients(xs, r).rescale(P)
        assert signed_value(out) == [5, 6, -5, -6]

    @given(rings(ns=(2, 4, 8, 16), limbs=(2, 3, 4)), st.data())
    def test_to_ring_subset(self, r, data):
        xs = data.draw(inputs_for(r))
        idx = data.draw(st.lists(st.sampled_from(range(r.limbs)), min_size=1,
                                 max_size=r.limbs, unique=True))
        in_ntt = data.draw(st.booleans())
        dst = r.select([r.moduli[i] for i in idx])
        p = Poly.from_coefficients(xs, r)
        if in_ntt:
            p = p.ntt()
        out = p.to_ring(dst)
        assert out.ring == dst and out.domain is p.domain
        assert value(out) == [x % dst.Q for x in xs]

    @given(rings(ns=(2, 4, 8, 16), limbs=(1, 2, 3), bits=(30,)), st.integers(1, 3), st.data())
    def test_to_ring_extension(self, r, extra, data):
        xs = data.draw(inputs_for(r))
        in_ntt = data.draw(st.booleans())
        dst = r.extend(ring(r.N, extra, 31).moduli)
        p = Poly.from_coefficients(xs, r)
        if in_ntt:
            p = p.ntt()
        out = p.to_ring(dst)
        assert out.ring == dst and out.domain is p.domain
        # exactly the fast basis conversion of ren.ring (same u per coefficient)
        expect = ring_convert(residues(xs, r), r, dst)
        assert np.array_equal(evaluate(out if out.domain is COEFF else out.intt())[0], expect)
        for x, y in zip(xs, value(out), strict=True):
            lift = x % r.Q  # the lift in [0, Q)
            u, rem = divmod(y - lift, r.Q)
            assert rem == 0 and 0 <= u < r.limbs, (x, y)

    @given(st.sampled_from((2, 4, 8)), st.data())
    def test_to_ring_mixed(self, N, data):
        pool = ring(N, 6, 30)
        src = pool.sub(0, 3)
        dst = RingSpec(N, data.draw(st.permutations([pool.moduli[1], pool.moduli[4],
                                                     pool.moduli[0], pool.moduli[5]])))
        xs = data.draw(inputs_for(src))
        (res,) = evaluate(Poly.from_coefficients(xs, src).to_ring(dst))
        assert np.array_equal(res, ring_convert(residues(xs, src), src, dst))
        rows = res.tolist()
        new = [j for j, p in enumerate(dst.moduli) if p not in src.moduli]
        for j, p in enumerate(dst.moduli):
            if p in src.moduli:
                assert rows[j] == [x % p for x in xs]
        for c, x in enumerate(xs):
            us = [u for u in range(3)
                  if all(rows[j][c] == (x % src.Q + u * src.Q) % dst.moduli[j] for j in new)]
            assert len(us) == 1


# ================================================================================================
# samplers
# ================================================================================================
class TestSamplers:
    @given(rings(ns=(8, 16, 64), limbs=(1, 2, 3)), st.integers(0, 1 << 20))
    def test_ternary(self, r, s):
        with ren.random.seeded(s):
            p = Poly.ternary(r)
        vals = signed_value(p)
        assert set(vals) <= {-1, 0, 1}

    def test_ternary_hits_all_values(self):
        with ren.random.seeded(1):
            vals = signed_value(Poly.ternary(ring(64, 2)))
        assert set(vals) == {-1, 0, 1}

    @given(rings(ns=(2, 4, 8, 16, 64), limbs=(1, 2, 3)), st.data())
    def test_sparse_ternary(self, r, data):
        h = data.draw(st.integers(0, r.N), label="h")
        with ren.random.seeded(data.draw(st.integers(0, 1 << 20))):
            p = Poly.sparse_ternary(r, h)
        vals = signed_value(p)
        assert set(vals) <= {-1, 0, 1}
        assert sum(v != 0 for v in vals) == h

    def test_sparse_ternary_signs_and_positions(self):
        r = ring(64, 2)
        supports = set()
        for s in range(4):
            with ren.random.seeded(s):
                vals = signed_value(Poly.sparse_ternary(r, 40))
            assert vals.count(1) + vals.count(-1) == 40
            assert vals.count(1) > 5 and vals.count(-1) > 5  # both signs, roughly balanced
            supports.add(tuple(i for i, v in enumerate(vals) if v))
        assert len(supports) == 4  # positions depend on the seed

    @given(rings(ns=(8, 16, 64), limbs=(1, 2, 3)), st.data())
    def test_uniform_on_interval(self, r, data):
        m = min(1 << 40, r.Q // 2 - 1)  # keep [lo, hi] inside (-Q/2, Q/2] so the lift is exact
        lo = data.draw(st.integers(-m, m), label="lo")
        hi = data.draw(st.integers(lo, min(m, lo + (1 << 32) - 1)), label="hi")
        with ren.random.seeded(data.draw(st.integers(0, 1 << 20))):
            p = Poly.uniform_on_interval(r, lo, hi)
        vals = signed_value(p)
        assert all(lo <= v <= hi for v in vals), (lo, hi, vals)

    @pytest.mark.parametrize("lo,hi", [(5, 5), (-3, 2), (0, 1), (-(1 << 61), -(1 << 61) + 2)])
    def test_uniform_on_interval_endpoints(self, lo, hi):
        with ren.random.seeded(3):
            vals = signed_value(Poly.uniform_on_interval(ring(64, 3), lo, hi))
        assert min(vals) == lo and max(vals) == hi
        assert set(vals) == set(range(lo, hi + 1))

    @given(rings(ns=(8, 16, 64), limbs=(1, 2, 3)),
           st.floats(min_value=0.05, max_value=1000.0), st.integers(0, 1 << 20))
    def test_gaussian_clipped(self, r, sigma, s):
        with ren.random.seeded(s):
            p = Poly.gaussian(r, sigma)
        vals = signed_value(p)
        bound = math.ceil(6 * sigma)
        assert all(abs(v) <= bound for v in vals)

    @pytest.mark.parametrize("sigma", [0.5, 1.0, 3.2, 10.0])
    def test_gaussian_clip_is_reached(self, sigma, monkeypatch):
        # all-zero random words give u1 = 2^-53, u2 = 0: a normal sample of sqrt(2·53·ln 2)
        # ≈ 8.57 standard deviations, which must be clipped to ceil(6·sigma)
        real = ren.sampling._u64

        def zeros(seed, purpose, count):
            out = real(seed, purpose, count)
            return out * np.uint64(0) if purpose == "gauss" else out
        monkeypatch.setattr(ren.sampling, "_u64", zeros)
        vals = signed_value(Poly.gaussian(ring(8, 2), sigma))
        assert vals == [math.ceil(6 * sigma)] * 8

    def test_gaussian_spread(self):
        with ren.random.seeded(4):
            vals = signed_value(Poly.gaussian(ring(1024, 1), 3.2))
        sd = math.sqrt(sum(v * v for v in vals) / len(vals))
        assert 2.5 < sd < 4.0
        assert abs(sum(vals) / len(vals)) < 0.6
        assert max(abs(v) for v in vals) <= 20

    @given(rings(ns=(8, 16), limbs=(1, 2, 3)), st.sampled_from(["coeff", "ntt"]),
           st.integers(0, 1 << 20))
    def test_uniform(self, r, domain, s):
        with ren.random.seeded(s):
            p = Poly.uniform(r, domain=domain)
        (res,) = evaluate(p)
        for row, q in zip(res.tolist(), r.moduli, strict=True):
            assert all(0 <= v < q for v in row)
            assert len(set(row)) > 1
        # uniform mod Q: the lifts are not small
        assert max(abs(v) for v in signed_value(p)) > r.Q >> 8

    def test_uniform_rows_are_exactly_uniform_by_rejection(self, monkeypatch):
        """Words at or above k·q are rejected (not reduced: that would favour small residues);
        a stream too short for n kept words is read further."""
        q = (1 << 32) // 3 + 5  # k = 2: a third of the words are rejected
        bound = 2 * q
        rows = ren.sampling._uniform_row(b"s" * 32, 0, q, 30000)
        assert rows.dtype == np.uint32 and len(rows) == 30000 and int(rows.max()) < q
        hist = np.bincount((rows.astype(np.uint64) * 8 // q).astype(np.int64), minlength=8)
        assert hist.min() > 0.9 * 30000 / 8 and hist.max() < 1.1 * 30000 / 8

        class Stream:  # every word of the first `first` words is rejected
            def __init__(self, first: int):
                self.first = first

            def digest(self, nbytes: int) -> bytes:
                words = np.arange(nbytes // 4, dtype=np.uint64) + np.uint64(bound - 100)
                words[: self.first] = 0xFFFFFFFF
                return (words % np.uint64(1 << 32)).astype("<u4").tobytes()

        first = int(10 / (bound / 2**32) * 1.02) + 64  # the first request's word count
        monkeypatch.setattr(ren.sampling.hashlib, "shake_128", lambda data: Stream(first))
        got = ren.sampling._uniform_row(b"s" * 32, 0, q, 10)
        # the first 10 kept words, read lazily: the list of all of them was ~1.4e9 steps (39 s)
        kept = list(itertools.islice(
            (w for w in range(bound - 100 + first, 2**32 + first) if w % 2**32 < bound), 10))
        assert got.tolist() == [w % 2**32 % q for w in kept]

    @pytest.mark.parametrize("make", [
        lambda r: Poly.uniform(r), lambda r: Poly.ternary(r),
        lambda r: Poly.sparse_ternary(r, 5), lambda r: Poly.gaussian(r),
        lambda r: Poly.uniform_on_interval(r, -9, 9)])
    def test_reproducible_and_fixed(self, make):
        r = ring(16, 2)
        with ren.random.seeded(21):
            a = make(r)
        with ren.random.seeded(21):
            b = make(r)
        with ren.random.seeded(22):
            c = make(r)
        (va, vb, vc) = evaluate(a, b, c)
        assert np.array_equal(va, vb)
        assert not np.array_equal(va, vc)
        # realizing the same node twice gives the same value
        assert np.array_equal(evaluate(a)[0], va)

    def test_same_coefficients_in_every_limb(self):
        # a small-coefficient sample is one integer polynomial: its residues agree across limbs
        with ren.random.seeded(8):
            p = Poly.uniform_on_interval(ring(16, 3), -50, 50)
        vals = signed_value(p)
        assert all(-50 <= v <= 50 for v in vals)
        for i in range(3):
            assert signed_value(p.to_ring(ring(16, 3).sub(i, i + 1))) == vals
