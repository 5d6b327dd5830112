"""ren.ring: RingSpec, Montgomery arithmetic, NTT, TO_RNS/CRT, automorphisms, basis conversion
and divide-and-round, each checked against plain Python-int arithmetic."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from conftest import (
    BITS,
    big_int,
    brv,
    centred,
    crt,
    negacyclic_mul,
    residue_rows,
    ring,
    rings,
    substitute,
)
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ren.errors import ParameterError, RenError, RingMismatchError, ShapeError
from ren.ring import (
    RingSpec,
    automorph_coeff_map,
    automorph_ntt_map,
    conjugation_element,
    crt_lift,
    divide_round,
    fast_basis_convert,
    from_mont,
    galois_element,
    get_tables,
    intt,
    is_prime,
    mod_add,
    mod_neg,
    mod_sub,
    mont_mul,
    ntt,
    pack_words,
    primitive_root_2n,
    reduce_words,
    ring_convert,
    to_mont,
    unpack_words,
)
from ren.ring.rns import centered_floats

U32 = np.uint32


def arr(rows) -> np.ndarray:
    return np.array(rows, dtype=U32)


def rows_of(a: np.ndarray) -> list[list[int]]:
    return [[int(v) for v in row] for row in a]


def next_prime_1_mod(m: int, start: int) -> int:
    """The smallest prime q >= start with q ≡ 1 (mod m) (plain trial search)."""
    q = start + (1 - start) % m
    while not is_prime(q):
        q += m
    return q


# ================================================================================================
# RingSpec
# ================================================================================================
class TestRingSpecValidation:
    def test_error_hierarchy(self):
        assert issubclass(ParameterError, RenError)
        assert issubclass(ParameterError, ValueError)
        assert issubclass(ShapeError, ParameterError)

    @pytest.mark.parametrize("N", [3, 6, 12, 24, 100, 1000, 3 * 1024])
    def test_N_not_power_of_two(self, N):
        with pytest.raises(ParameterError):
            RingSpec(N, (ring(16, 1).moduli[0],))

    @pytest.mark.parametrize("N", [1, 0, -2, -16, 1 << 18, 1 << 20])
    def test_N_out_of_range(self, N):
        with pytest.raises(ParameterError):
            RingSpec(N, (ring(16, 1).moduli[0],))

    @pytest.mark.parametrize("N", [True, 16.0, "16", None])
    def test_N_not_an_int(self, N):
        with pytest.raises(ParameterError):
            RingSpec(N, (ring(16, 1).moduli[0],))

    def test_largest_N_accepted(self):
        N = 1 << 17
        q = next_prime_1_mod(2 * N, 1 << 29)
        r = RingSpec(N, (q,))
        assert r.N == N and r.logN == 17

    @given(st.sampled_from([2, 4, 8, 16, 64]), st.integers(9, 1 << 31))
    def test_composite_modulus(self, N, start):
        q = start + (1 - start) % (2 * N)
        while is_prime(q):
            q += 2 * N
        assume(q < 1 << 31)
        with pytest.raises(ParameterError):
            RingSpec(N, (q,))

    @pytest.mark.parametrize("q", [25, 49, 65, 1 << 30 | 1, (1 << 15 | 1) * (1 << 14 | 1)])
    def test_known_composites(self, q):
        assert q % 8 == 1
        with pytest.raises(ParameterError):
            RingSpec(4, (q,))

    @given(st.sampled_from([4, 8, 16, 64, 256]), st.integers(3, (1 << 30)))
    def test_prime_not_ntt_friendly(self, N, start):
        q = start
        while not is_prime(q) or (q - 1) % (2 * N) == 0:
            q += 1
        assume(q < 1 << 31)
        with pytest.raises(ParameterError):
            RingSpec(N, (q,))

    def test_prime_1_mod_N_but_not_2N(self):
        N = 16
        q = 17  # 17 ≡ 1 mod 16 but 17 ≡ 17 mod 32
        assert is_prime(q) and (q - 1) % N == 0 and (q - 1) % (2 * N)
        with pytest.raises(ParameterError):
            RingSpec(N, (q,))

    @pytest.mark.parametrize("N", [2, 16, 1024])
    def test_modulus_too_large(self, N):
        q = next_prime_1_mod(2 * N, 1 << 31)
        assert q >= 1 << 31 and is_prime(q)
        with pytest.raises(ParameterError):
            RingSpec(N, (q,))
        with pytest.raises(ParameterError):
            RingSpec(N, (*ring(N, 2).moduli, q))

    @pytest.mark.parametrize("q", [0, 1, 2, -5, -(1 << 30)])
    def test_modulus_too_small(self, q):
        with pytest.raises(ParameterError):
            RingSpec(2, (q,))

    def test_duplicate_moduli(self):
        q0, q1 = ring(16, 2).moduli
        with pytest.raises(ParameterError):
            RingSpec(16, (q0, q0))
        with pytest.raises(ParameterError):
            RingSpec(16, (q0, q1, q0))

    def test_empty_moduli(self):
        with pytest.raises(ParameterError):
            RingSpec(16, ())
        with pytest.raises(ParameterError):
            RingSpec(16, [])

    def test_moduli_not_a_sequence(self):
        with pytest.raises(ParameterError):
            RingSpec(16, 12289)

    @pytest.mark.parametrize("kwargs", [dict(N=16, count=0), dict(N=16, count=-1),
                                        dict(N=16, count=True), dict(N=12, count=1),
                                        dict(N=16, count=1, bits=32), dict(N=16, count=1, bits=2),
                                        dict(N=1, count=1)])
    def test_generate_bad_arguments(self, kwargs):
        with pytest.raises(ParameterError):
            RingSpec.generate(**kwargs)

    def test_generate_too_many_primes(self):
        # primes ≡ 1 mod 32 below 2^8: 97, 193 (and nothing else)
        assert RingSpec.generate(16, 2, bits=8).moduli == (193, 97)
        with pytest.raises(ParameterError):
            RingSpec.generate(16, 3, bits=8)


class TestRingSpecGenerate:
    @given(st.sampled_from([2, 4, 8, 16, 32, 64, 128, 1024, 1 << 17]), st.integers(1, 6),
           st.sampled_from([8, 12, 20, 24, 30, 31]))
    def test_primes(self, N, count, bits):
        # the `count` largest primes q ≡ 1 mod 2N below 2^bits, found by a plain downward scan
        expect, q = [], (1 << bits) - 1
        while q % (2 * N) != 1:
            q -= 1
        while len(expect) < count and q > 1:
            if is_prime(q):
                expect.append(q)
            q -= 2 * N
        if len(expect) < count:
            with pytest.raises(ParameterError):
                RingSpec.generate(N, count, bits=bits)
            return
        r = RingSpec.generate(N, count, bits=bits)
        assert r.N == N
        assert r.limbs == len(r.moduli) == count
        assert r.moduli == tuple(expect)
        assert len(set(r.moduli)) == count
        assert list(r.moduli) == sorted(r.moduli, reverse=True)
        for q in r.moduli:
            assert is_prime(q)
            assert q % (2 * N) == 1
            assert q < 1 << bits

    @given(st.sampled_from([2, 8, 64, 4096]), st.integers(1, 4), st.sampled_from(BITS))
    def test_deterministic(self, N, count, bits):
        a = RingSpec.generate(N, count, bits=bits)
        b = RingSpec.generate(N, count, bits=bits)
        assert a == b and a.moduli == b.moduli
        # a prefix of a longer generation
        c = RingSpec.generate(N, count + 2, bits=bits)
        assert c.moduli[:count] == a.moduli

    def test_bits31_in_top_range(self):
        for N in (2, 16, 64, 256):
            for q in RingSpec.generate(N, 4, bits=31).moduli:
                assert (1 << 30) <= q < (1 << 31)

    def test_Q_and_limbs(self):
        r = ring(16, 3)
        assert math.prod(r.moduli) == r.Q
        assert r.limbs == 3 and r.logN == 4


class TestRingSpecBases:
    def test_drop_last(self):
        r = ring(16, 4)
        assert r.drop_last(0) is r
        assert r.drop_last() == RingSpec(16, r.moduli[:3])
        assert r.drop_last(1).moduli == r.moduli[:3]
        assert r.drop_last(3).moduli == r.moduli[:1]
        for k in (4, 5, -1):
            with pytest.raises(RingMismatchError):
                r.drop_last(k)

    def test_derived_rings_are_built_once_and_still_validated(self):
        r = ring(16, 4)
        # the same object each time (scheduling derives these rings thousands of times)
        assert r.drop_last(2) is r.drop_last(2) is r.sub(0, 2) is r.select(r.moduli[:2])
        assert r.sub(0, 2).extend(r.moduli[2:]) is r.extend(()) is r.drop_last(1).extend(
            r.moduli[3:])
        # a bad extension is refused every time (an error is never cached)
        for _ in range(2):
            with pytest.raises(ParameterError, match="distinct"):
                r.extend(r.moduli[:1])
            with pytest.raises(ParameterError, match="not prime"):
                r.extend((15,))
        assert r.is_subring_of(r) and r.drop_last(1).is_subring_of(r)
        twin = r.extend(())  # equal moduli, another object: the set comparison decides
        assert twin is not r and twin.is_subring_of(r) and r.is_subring_of(twin)
        assert not r.is_subring_of(r.drop_last(1))
        assert not r.is_subring_of(ring(32, 4))  # same count, another N

    def test_extend(self):
        r = ring(16, 2)
        extra = ring(16, 2, 31).moduli
        e = r.extend(extra)
        assert e.moduli == r.moduli + extra and e.N == 16
        assert e.extend(()) == e
        with pytest.raises(ParameterError):
            r.extend([r.moduli[0]])
        with pytest.raises(ParameterError):
            r.extend([7])

    def test_sub(self):
        r = ring(8, 4)
        assert r.sub(1).moduli == r.moduli[1:]
        assert r.sub(1, 3).moduli == r.moduli[1:3]
        assert r.sub(0, 1).moduli == r.moduli[:1]
        assert r.sub(-2).moduli == r.moduli[-2:]
        with pytest.raises(RingMismatchError):
            r.sub(2, 2)
        with pytest.raises(RingMismatchError):
            r.sub(4)

    def test_select(self):
        r = ring(8, 4)
        q = r.moduli
        assert r.select([q[2], q[0]]).moduli == (q[2], q[0])
        assert r.select(q) == r
        with pytest.raises(RingMismatchError):
            r.select([q[0], ring(8, 1, 31).moduli[0]])
        with pytest.raises(ParameterError):
            r.select([q[1], q[1]])

    def test_offset_in(self):
        r = ring(8, 4)
        q = r.moduli
        assert r.offset_in(r) == 0
        assert r.sub(1, 3).offset_in(r) == 1
        assert r.sub(3).offset_in(r) == 3
        assert r.drop_last(2).offset_in(r) == 0
        assert r.select([q[0], q[2]]).offset_in(r) is None  # not contiguous
        assert r.select([q[1], q[0]]).offset_in(r) is None  # wrong order
        assert r.offset_in(r.drop_last(1)) is None  # longer than the other
        assert RingSpec(8, (ring(8, 1, 31).moduli[0],)).offset_in(r) is None
        other_n = RingSpec(4, q[:2])  # q ≡ 1 mod 16 implies ≡ 1 mod 8
        assert other_n.offset_in(r) is None

    def test_is_subring_of_and_index(self):
        r = ring(8, 3)
        assert r.drop_last(1).is_subring_of(r)
        assert r.select([r.moduli[2], r.moduli[0]]).is_subring_of(r)
        assert not r.is_subring_of(r.drop_last(1))
        assert not RingSpec(4, r.moduli[:1]).is_subring_of(r)
        assert [r.index(q) for q in r.moduli] == [0, 1, 2]

    def test_hashable_equal_by_value(self):
        q = ring(16, 3).moduli
        a = RingSpec(16, q)
        b = RingSpec(16, list(q))
        c = RingSpec(16, tuple(np.array(q, dtype=np.int64)))
        assert a == b == c and a is not b
        assert hash(a) == hash(b) == hash(c)
        assert len({a, b, c}) == 1
        assert {a: 1}[b] == 1
        assert type(b.moduli) is tuple and all(type(x) is int for x in c.moduli)
        assert a != RingSpec(16, q[:2])
        assert a != RingSpec(16, (q[1], q[0], q[2]))
        assert a != RingSpec(8, q)
        assert a != "not a ring"

    def test_immutable(self):
        r = ring(16, 2)
        with pytest.raises(dataclasses.FrozenInstanceError):
            r.N = 32
        with pytest.raises(dataclasses.FrozenInstanceError):
            r.moduli = (12289,)


# ================================================================================================
# Montgomery arithmetic
# ================================================================================================
class TestModArith:
    @given(rings(ns=(2, 4, 8, 16)), st.data())
    def test_add_sub_neg(self, r, data):
        a, b = residue_rows(data, r), residue_rows(data, r)
        t = get_tables(r)
        A, B = arr(a), arr(b)
        got_add, got_sub, got_neg = mod_add(A, B, t.q32), mod_sub(A, B, t.q32), mod_neg(A, t.q32)
        for got in (got_add, got_sub, got_neg):
            assert got.dtype == U32 and got.shape == A.shape
        for i, q in enumerate(r.moduli):
            assert rows_of(got_add)[i] == [(x + y) % q for x, y in zip(a[i], b[i], strict=True)]
            assert rows_of(got_sub)[i] == [(x - y) % q for x, y in zip(a[i], b[i], strict=True)]
            assert rows_of(got_neg)[i] == [(-x) % q for x in a[i]]

    @given(rings(ns=(2, 4, 8, 16)), st.data())
    def test_mont_mul(self, r, data):
        a, b = residue_rows(data, r), residue_rows(data, r)
        t = get_tables(r)
        A, B = arr(a), arr(b)
        Am, Bm = to_mont(A, t), to_mont(B, t)
        prod_m = mont_mul(Am, Bm, t)
        prod = from_mont(prod_m, t)
        raw = mont_mul(A, B, t)
        for x in (Am, Bm, prod_m, prod, raw):
            assert x.dtype == U32 and x.shape == A.shape
        for i, q in enumerate(r.moduli):
            R = 1 << 32
            Rinv = pow(R, -1, q)
            assert rows_of(Am)[i] == [x * R % q for x in a[i]]
            assert rows_of(prod_m)[i] == [x * y * R % q for x, y in zip(a[i], b[i], strict=True)]
            assert rows_of(prod)[i] == [x * y % q for x, y in zip(a[i], b[i], strict=True)]
            assert rows_of(raw)[i] == [x * y * Rinv % q for x, y in zip(a[i], b[i], strict=True)]
        assert rows_of(from_mont(Am, t)) == a

    @pytest.mark.parametrize("bits", BITS)
    def test_edge_values_exhaustive(self, bits):
        r = ring(4, 4, bits)
        t = get_tables(r)
        for i, q in enumerate(r.moduli):
            vals = (0, 1, q - 2, q - 1)
            for x in vals:
                for y in vals:
                    X, Y = arr([[x]]), arr([[y]])
                    qc = t.q32[i : i + 1]
                    assert int(mod_add(X, Y, qc)[0, 0]) == (x + y) % q
                    assert int(mod_sub(X, Y, qc)[0, 0]) == (x - y) % q
                    assert int(mod_neg(X, qc)[0, 0]) == (-x) % q
        # Montgomery product of the extreme values, every limb at once
        A = arr([[q - 1] * 4 for q in r.moduli])
        B = arr([[q - 1, 0, 1, q - 2] for q in r.moduli])
        got = from_mont(mont_mul(to_mont(A, t), to_mont(B, t), t), t)
        for i, q in enumerate(r.moduli):
            assert rows_of(got)[i] == [(q - 1) * y % q for y in (q - 1, 0, 1, q - 2)]


# ================================================================================================
# NTT
# ================================================================================================
NTT_NS = (2, 4, 8, 16, 32, 64, 128, 256)


def ntt_rings():
    return rings(ns=NTT_NS, limbs=(1, 2, 3), bits=BITS)


class TestNTT:
    @given(ntt_rings(), st.data())
    def test_roundtrip(self, r, data):
        a = residue_rows(data, r)
        A = arr(a)
        F = ntt(A, r)
        assert F.dtype == U32 and F.shape == A.shape
        assert rows_of(A) == a  # input untouched
        for i, q in enumerate(r.moduli):
            assert all(v < q for v in rows_of(F)[i])
        assert rows_of(intt(F, r)) == a

    @given(ntt_rings(), st.data())
    def test_product_is_negacyclic(self, r, data):
        a, b = residue_rows(data, r), residue_rows(data, r)
        t = get_tables(r)
        FA, FB = ntt(arr(a), r), ntt(arr(b), r)
        # pointwise product two ways: plain (Python ints) and Montgomery
        plain = arr([[x * y % q for x, y in zip(fa, fb, strict=True)]
                     for fa, fb, q in zip(rows_of(FA), rows_of(FB), r.moduli, strict=True)])
        mont = from_mont(mont_mul(to_mont(FA, t), to_mont(FB, t), t), t)
        assert rows_of(mont) == rows_of(plain)
        got = rows_of(intt(plain, r))
        for i, q in enumerate(r.moduli):
            assert got[i] == negacyclic_mul(a[i], b[i], q)

    @given(rings(ns=(2, 4, 8, 16, 32), limbs=(1, 2)), st.data())
    def test_slot_is_evaluation(self, r, data):
        a = residue_rows(data, r)
        F = rows_of(ntt(arr(a), r))
        N, bits = r.N, r.logN
        for i, q in enumerate(r.moduli):
            psi = primitive_root_2n(q, N)
            for j in range(N):
                x = pow(psi, 2 * brv(j, bits) + 1, q)
                acc = 0
                for c in reversed(a[i]):  # Horner
                    acc = (acc * x + c) % q
                assert F[i][j] == acc

    @pytest.mark.parametrize("N", [2, 4, 16, 64, 256])
    @pytest.mark.parametrize("bits", BITS)
    def test_primitive_root(self, N, bits):
        for q in ring(N, 3, bits).moduli:
            psi = primitive_root_2n(q, N)
            assert 1 < psi < q
            assert pow(psi, N, q) == q - 1  # order exactly 2N (2N is a power of two)
            assert pow(psi, 2 * N, q) == 1
            # the smallest primitive 2N-th root: the primitive roots are the odd powers of psi
            odd_powers = {pow(psi, k, q) for k in range(1, 2 * N, 2)}
            assert len(odd_powers) == N
            assert min(odd_powers) == psi
            assert all(pow(w, N, q) == q - 1 for w in odd_powers)

    def test_primitive_root_of_a_prime_beyond_u32(self):
        """(Not a RingSpec modulus, but the function is public: big integers past 2^32.)"""
        q, N = 3 * (1 << 41) + 1, 1 << 10  # a prime ≡ 1 mod 2N, past 2^42
        assert is_prime(q)
        psi = primitive_root_2n(q, N)
        assert pow(psi, N, q) == q - 1
        assert psi == min(pow(psi, k, q) for k in range(1, 2 * N, 2))

    def test_primitive_root_brute_force_small_q(self):
        for N, q in [(2, 5), (4, 17), (8, 17), (8, 97), (16, 97), (16, 193), (32, 193)]:
            expect = min(w for w in range(2, q) if pow(w, N, q) == q - 1)
            assert primitive_root_2n(q, N) == expect

    @given(ntt_rings(), st.data())
    def test_linear_and_montgomery_form(self, r, data):
        a, b = residue_rows(data, r), residue_rows(data, r)
        t = get_tables(r)
        A, B = arr(a), arr(b)
        FA, FB = ntt(A, r), ntt(B, r)
        assert np.array_equal(ntt(mod_add(A, B, t.q32), r), mod_add(FA, FB, t.q32))
        assert np.array_equal(ntt(mod_sub(A, B, t.q32), r), mod_sub(FA, FB, t.q32))
        assert np.array_equal(ntt(to_mont(A, t), r), to_mont(FA, t))
        assert np.array_equal(intt(to_mont(FA, t), r), to_mont(A, t))

    @pytest.mark.parametrize("bits", BITS)
    def test_large_N_roundtrip_and_product(self, bits):
        r = ring(1024, 2, bits)
        rng = np.random.default_rng(1)
        A = np.stack([rng.integers(0, q, r.N, dtype=np.int64) for q in r.moduli]).astype(U32)
        B = np.stack([rng.integers(0, q, r.N, dtype=np.int64) for q in r.moduli]).astype(U32)
        assert np.array_equal(intt(ntt(A, r), r), A)
        # X * B: multiplying by the monomial X shifts negacyclically
        X = np.zeros_like(A)
        X[:, 1] = 1
        t = get_tables(r)
        prod = intt(from_mont(mont_mul(to_mont(ntt(X, r), t), to_mont(ntt(B, r), t), t), t), r)
        qcol = np.array(r.moduli, dtype=np.int64)[:, None]
        expect = np.concatenate([(qcol - B[:, -1:].astype(np.int64)) % qcol,
                                 B[:, :-1].astype(np.int64)], axis=1)
        assert np.array_equal(prod.astype(np.int64), expect)

    def test_constant_and_monomial(self):
        for bits in BITS:
            r = ring(8, 2, bits)
            one = np.zeros((2, 8), U32)
            one[:, 0] = 1
            assert np.array_equal(ntt(one, r), np.ones((2, 8), U32))

    def test_wrong_shape(self):
        r = ring(8, 2)
        with pytest.raises(ValueError):
            ntt(np.zeros((1, 8), U32), r)
        with pytest.raises(ValueError):
            intt(np.zeros((2, 4), U32), r)


# ================================================================================================
# TO_RNS and CRT
# ================================================================================================
class TestToRnsCrt:
    @given(st.lists(big_int(300), min_size=0, max_size=20))
    def test_pack_unpack_roundtrip(self, xs):
        words = pack_words(xs)
        assert words.dtype == U32 and words.ndim == 2 and words.shape[0] == len(xs)
        assert unpack_words(words) == xs
        # two's complement in W words: each value fits
        W = words.shape[1]
        assert all(-(1 << (32 * W - 1)) <= x < 1 << (32 * W - 1) for x in xs)

    def test_pack_word_layout(self):
        words = pack_words([1, -1, 1 << 32, -(1 << 32)])
        assert words.shape == (4, 2)
        assert words.tolist() == [[1, 0], [0xFFFFFFFF, 0xFFFFFFFF], [0, 1],
                                  [0, 0xFFFFFFFF]]
        big = pack_words([1 << 100, 0])
        assert big.shape == (2, 4)
        assert big.tolist()[0] == [0, 0, 0, 1 << 4]

    def test_pack_rejects_non_ints(self):
        with pytest.raises(ShapeError):
            pack_words(["x", 1])
        with pytest.raises(ShapeError):
            pack_words([None])

    @given(rings(ns=(2, 4, 8, 16)), st.data())
    def test_reduce_words(self, r, data):
        xs = data.draw(st.lists(big_int(300), min_size=r.N, max_size=r.N))
        got = reduce_words(pack_words(xs), r)
        assert got.dtype == U32 and got.shape == (r.limbs, r.N)
        for i, q in enumerate(r.moduli):
            assert rows_of(got)[i] == [x % q for x in xs]

    @given(rings(ns=(2, 4, 8, 16)), st.data())
    def test_reduce_then_crt_lift(self, r, data):
        xs = data.draw(st.lists(big_int(300), min_size=r.N, max_size=r.N))
        res = reduce_words(pack_words(xs), r)
        Q = r.Q
        got = crt_lift(res, r)
        assert got == [centred(x, Q) for x in xs]
        assert all(-Q / 2 < v <= Q / 2 for v in got)
        assert crt_lift(res, r, centered=False) == [x % Q for x in xs]
        assert crt(rows_of(res), r.moduli) == [x % Q for x in xs]

    def test_crt_lift_boundaries(self):
        r = ring(4, 3)
        Q = r.Q
        xs = [Q // 2, Q // 2 + 1, -(Q // 2), Q - 1]
        res = reduce_words(pack_words(xs), r)
        assert crt_lift(res, r) == [Q // 2, -(Q // 2), -(Q // 2), -1]

    @given(rings(ns=(2, 4, 8, 16), limbs=(1, 2, 5, 9, 12)), st.data())
    def test_centered_floats(self, r, data):
        """The float lift (Garner's mixed radix, no Python ints) against the exact centred
        lift: within 2^-50 relative; with `bits`, small values take the prefix path and large
        ones (beyond the expected bits) fall back to the whole basis, still right."""
        bits = data.draw(st.sampled_from([20, 60, 300]))
        xs = data.draw(st.lists(big_int(bits), min_size=r.N, max_size=r.N))
        xs[0] = data.draw(st.sampled_from([0, r.Q // 2, -(r.Q // 2), xs[0]]))
        res = reduce_words(pack_words(xs), r)
        exact = [centred(x, r.Q) for x in xs]
        for kw in ({}, {"bits": 24}, {"bits": 64}, {"bits": 200}):
            got = centered_floats(res, r, **kw)
            assert all(abs(g - e) <= abs(e) * 2.0**-50 for g, e in zip(got, exact, strict=True))
        # values within the expected bits take the short path: its check must accept them
        from ren.ring import rns

        for b in (64, 200, 250):
            k = rns._prefix_for(r, b)
            if max(abs(e) for e in exact) < 1 << b and k < r.limbs:
                digits, above = rns._garner_digits(res[:k], r.sub(0, k))
                assert rns._matches(res, r, k, digits, above)
        shifted = centered_floats(res, r, shift=10)
        assert all(abs(g * 1024 - e) <= abs(e) * 2.0**-50
                   for g, e in zip(shifted, exact, strict=True))

    def test_reduce_words_wrong_length(self):
        r = ring(8, 2)
        with pytest.raises(ShapeError):
            reduce_words(pack_words([1] * 4), r)


# ================================================================================================
# Automorphisms
# ================================================================================================
AUT_NS = (2, 4, 8, 16, 32, 64)


class TestAutomorph:
    @given(rings(ns=AUT_NS, limbs=(1, 2)), st.data())
    def test_coeff_map_is_substitution(self, r, data):
        N = r.N
        g = data.draw(st.integers(-4 * N, 4 * N).filter(lambda x: x % 2 == 1), label="g")
        a = residue_rows(data, r)
        src, neg = automorph_coeff_map(N, g)
        assert sorted(src.tolist()) == list(range(N))
        for i, q in enumerate(r.moduli):
            got = [(-a[i][s]) % q if n else a[i][s] for s, n in zip(src, neg, strict=True)]
            assert got == substitute(a[i], g % (2 * N), q)

    @given(rings(ns=AUT_NS, limbs=(1, 2)), st.data())
    def test_ntt_map_is_substitution(self, r, data):
        N = r.N
        g = data.draw(st.integers(-4 * N, 4 * N).filter(lambda x: x % 2 == 1), label="g")
        a = residue_rows(data, r)
        src = automorph_ntt_map(N, g)
        assert sorted(src.tolist()) == list(range(N))
        F = ntt(arr(a), r)
        expect = ntt(arr([substitute(a[i], g % (2 * N), q) for i, q in enumerate(r.moduli)]), r)
        assert np.array_equal(F[:, src], expect)

    @given(st.sampled_from((*AUT_NS, 1024)), st.integers(-1000, 1000))
    def test_galois_element(self, N, k):
        g = galois_element(N, k)
        assert 0 < g < 2 * N and g % 2 == 1
        if k >= 0:
            assert g == 5**k % (2 * N)
        else:
            assert g * (5 ** (-k)) % (2 * N) == 1
        assert g == pow(5, k, 2 * N)
        assert galois_element(N, k) * galois_element(N, -k) % (2 * N) == 1

    def test_galois_element_values(self):
        assert galois_element(8, 0) == 1
        assert galois_element(8, 1) == 5
        assert galois_element(8, 2) == 9
        assert galois_element(8, -1) == 13  # 5 * 13 = 65 ≡ 1 mod 16
        assert conjugation_element(8) == 15

    @pytest.mark.parametrize("g", [0, 2, 4, 16, -2, 30])
    def test_even_g_raises(self, g):
        with pytest.raises(ParameterError):
            automorph_coeff_map(8, g)
        with pytest.raises(ParameterError):
            automorph_ntt_map(8, g)

    def test_non_int_g_raises(self):
        # also when an equal int g was used before (the maps are cached)
        automorph_coeff_map(8, 3)
        automorph_ntt_map(8, 1)
        with pytest.raises(ParameterError):
            automorph_coeff_map(8, 3.0)
        with pytest.raises(ParameterError):
            automorph_ntt_map(8, True)

    def test_non_int_g_raises_uncached(self):
        automorph_coeff_map.cache_clear()
        automorph_ntt_map.cache_clear()
        with pytest.raises(ParameterError):
            automorph_coeff_map(8, 5.0)
        with pytest.raises(ParameterError):
            automorph_ntt_map(4, 7.0)
        with pytest.raises(ParameterError):
            automorph_ntt_map(4, np.float64(3))


# ================================================================================================
# Basis conversion and divide-and-round
# ================================================================================================
def disjoint_rings(N: int, ls: int, ld: int, src_bits: int) -> tuple[RingSpec, RingSpec]:
    """A source ring of `ls` moduli and a target of `ld` moduli, disjoint; the target uses the
    other bit size when the source is 30-bit (so target moduli can be larger than the source's)."""
    if src_bits == 30:
        return ring(N, ls, 30), ring(N, ld, 31)
    both = ring(N, ls + ld, 31)
    return both.sub(0, ls), both.sub(ls)


class TestBasisConversion:
    @given(st.sampled_from((2, 4, 8, 16)), st.integers(1, 4), st.integers(1, 3),
           st.sampled_from(BITS), st.data())
    def test_fast_basis_convert(self, N, ls, ld, bits, data):
        src, dst = disjoint_rings(N, ls, ld, bits)
        x = residue_rows(data, src)
        got = rows_of(fast_basis_convert(arr(x), src, dst))
        assert len(got) == dst.limbs
        Q = src.Q
        for c, v in enumerate(crt(x, src.moduli)):
            us = [u for u in range(ls)
                  if all(got[j][c] == (v + u * Q) % p for j, p in enumerate(dst.moduli))]
            assert len(us) == 1, (c, v, [row[c] for row in got])

    def test_fast_basis_convert_small_values_exact(self):
        # values far below Q: the sum formula gives x + u·Q; for x = 0 every y_i is 0, so u = 0
        src, dst = disjoint_rings(8, 3, 2, 30)
        zero = np.zeros((3, 8), U32)
        assert not fast_basis_convert(zero, src, dst).any()

    @given(st.sampled_from((2, 4, 8, 16)), st.sampled_from(BITS), st.data())
    def test_ring_convert(self, N, bits, data):
        pool = ring(N, 6, bits)
        order = data.draw(st.permutations(range(6)))
        ls = data.draw(st.integers(1, 4))
        src = RingSpec(N, tuple(pool.moduli[i] for i in order[:ls]))
        dst_idx = data.draw(st.lists(st.sampled_from(range(6)), min_size=1, max_size=5,
                                     unique=True))
        dst = RingSpec(N, tuple(pool.moduli[i] for i in dst_idx))
        x = residue_rows(data, src)
        got = rows_of(ring_convert(arr(x), src, dst))
        assert len(got) == dst.limbs
        lift = crt(x, src.moduli)
        new = [j for j, p in enumerate(dst.moduli) if p not in src.moduli]
        for j, p in enumerate(dst.moduli):
            if p in src.moduli:  # shared moduli keep their residues exactly
                assert got[j] == x[src.index(p)]
        for c, v in enumerate(lift):
            us = [u for u in range(src.limbs)
                  if all(got[j][c] == (v + u * src.Q) % dst.moduli[j] for j in new)]
            assert us, (c, v)

    def test_ring_convert_subset_is_exact(self):
        src = ring(8, 4)
        dst = src.select([src.moduli[3], src.moduli[1]])
        x = arr([[(7 * i + j) % 1000 for j in range(8)] for i in range(4)])
        assert np.array_equal(ring_convert(x, src, dst), x[[3, 1]])

    @given(st.sampled_from((2, 4, 8, 16)), st.sampled_from(BITS), st.integers(1, 3), st.data())
    def test_divide_round(self, N, bits, k, data):
        L = data.draw(st.integers(k + 1, 4), label="L")
        r = ring(N, L, bits)
        xs = data.draw(st.lists(st.one_of(big_int(130), st.integers(-r.Q, r.Q)),
                                min_size=N, max_size=N))
        res = reduce_words(pack_words(xs), r)
        kept = r.drop_last(k)
        P = r.Q // kept.Q
        assert math.prod(r.moduli[L - k:]) == P
        got = rows_of(divide_round(res, r, k))
        assert len(got) == L - k
        for c, x in enumerate(xs):
            xc = centred(x, r.Q)
            y = (xc + P // 2) // P
            # round-to-nearest: |xc - y·P| <= P/2
            assert abs(xc - y * P) <= P // 2
            for j, q in enumerate(kept.moduli):
                assert got[j][c] == y % q, (c, x, j)

    def test_divide_round_exact_multiples(self):
        r = ring(4, 3)
        P = r.moduli[-1]
        xs = [0, P, -P, 5 * P]
        got = crt_lift(divide_round(reduce_words(pack_words(xs), r), r, 1), r.drop_last(1))
        assert got == [0, 1, -1, 5]
        xs = [P // 2, -(P // 2), P // 2 + 1, -(P // 2) - 1]
        got = crt_lift(divide_round(reduce_words(pack_words(xs), r), r, 1), r.drop_last(1))
        assert got == [0, 0, 1, -1]

    @pytest.mark.parametrize("k", [0, 3, 4])
    def test_divide_round_bad_k(self, k):
        r = ring(4, 3)
        with pytest.raises(ValueError):
            divide_round(np.zeros((3, 4), U32), r, k)


@given(st.sampled_from([2, 4, 8, 64, 256, 1024]), st.sampled_from([20, 30, 31]),
       st.integers(0, 2**16))
@settings(max_examples=30, deadline=None)
def test_twiddle_rows_are_the_powers_in_bit_reversed_order(N, bits, salt):
    """The NTT's twiddle table (made by doubling, vectorized, one cached row per modulus): row
    i entry j is psi_i^brv(j) mod q_i, its Shoup entry floor(that · 2^32 / q_i), against pow."""
    from ren.ring.ring_kernels import RingKernel, kernel_tables
    from ren.ring.tables import bit_reverse_indices

    ring = RingSpec.generate(N, 2, bits=bits)
    kind = RingKernel.NTT if salt % 2 else RingKernel.INTT
    t = kernel_tables(kind, N, ring.moduli, ring.moduli)
    tw, shoup = (t["twiddles"], t["twiddles_shoup"]) if salt % 2 else \
        (t["inv_twiddles"], t["inv_twiddles_shoup"])
    brv = bit_reverse_indices(N.bit_length() - 1)
    for i, q in enumerate(ring.moduli):
        w = int(t["psi"][i]) if salt % 2 else pow(int(t["psi"][i]), -1, q)
        j = salt % N
        want = pow(w, int(brv[j]), q)
        assert int(tw[i, j]) == want and int(shoup[i, j]) == (want << 32) // q
        assert int(tw[i, 0]) == 1 and not tw.flags.writeable
