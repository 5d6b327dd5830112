"""The RLWE layer on its own (`ren.rlwe`, no CKKS): parameters, encryption and decryption of a
small polynomial, key switching and automorphisms, each against schoolbook big-integer
arithmetic on the coefficients (negacyclic products, X -> X^g permutations)."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from ckks_helpers import context
from hypothesis import example, given, settings
from hypothesis import strategies as st

import ren
from ren.ckks import CKKSParams
from ren.errors import DomainError, ParameterError, RingMismatchError
from ren.poly import Poly
from ren.ring import RingSpec, conjugation_element, galois_element
from ren.rlwe import (
    Ciphertext,
    Decryptor,
    Encryptor,
    GaloisKeys,
    InsecureParametersWarning,
    KeyGenerator,
    MissingKeyError,
    ParamsMismatchError,
    RLWEParams,
    automorphism,
    balanced_digits,
    check_ntt_polys,
    decompose,
    hoisted_automorphisms,
    key_switch,
    relinearize,
    switch_decomposed,
)

N = 32
PRIMES = RingSpec.generate(N, 5).moduli  # five ~30-bit NTT-friendly primes


def make(**kw) -> RLWEParams:
    """Q = three primes (one per level), P = two, insecure on purpose (tiny ring)."""
    args = dict(moduli=PRIMES[:3], special_moduli=PRIMES[3:], insecure=True)
    args.update(kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        return RLWEParams(N, **args)


@pytest.fixture(scope="module")
def keys():
    p = make()
    with ren.random.seeded(5):
        kg = KeyGenerator(p)
        pk = kg.public_key()
    return p, kg, pk


# -- schoolbook references -------------------------------------------------------------------------
def centred(v: int, q: int) -> int:
    v %= q
    return v - q if v > q // 2 else v


def negacyclic(a: list[int], b: list[int]) -> list[int]:
    """a·b in Z[X]/(X^N + 1)."""
    n = len(a)
    out = [0] * n
    for i, x in enumerate(a):
        if x:
            for j, y in enumerate(b):
                k = i + j
                if k < n:
                    out[k] += x * y
                else:
                    out[k - n] -= x * y
    return out


def galois(a: list[int], g: int) -> list[int]:
    """a(X^g) in Z[X]/(X^N + 1)."""
    n = len(a)
    out = [0] * n
    for i, x in enumerate(a):
        k = i * g % (2 * n)
        if k < n:
            out[k] += x
        else:
            out[k - n] -= x
    return out


def noise(got: list[int], want: list[int], q: int) -> int:
    """The largest centred |got − want| mod q."""
    return max(abs(centred(x - y, q)) for x, y in zip(got, want))


def message(p: RLWEParams, level: int, rng: np.random.Generator, bound: int = 1 << 20) -> Poly:
    coeffs = [int(v) for v in rng.integers(-bound, bound, p.N)]
    return Poly.from_coefficients(coeffs, p.ring(level)).ntt()


# -- parameters ------------------------------------------------------------------------------------
def test_params_levels_rings_and_digits():
    p = make()
    assert p.depth == p.max_level == 2 and p.level_limbs == (1, 2, 3)
    for lv in range(3):
        assert p.ring(lv).moduli == PRIMES[: lv + 1] and p.limbs(lv) == lv + 1
        assert p.ring_qp(lv).moduli == PRIMES[: lv + 1] + PRIMES[3:]
        assert p.level_of(p.ring(lv)) == lv
    assert p.key_ring == p.ring_qp(2) and p.ring() == p.ring(2)
    # the fewest digits each at most P: Q's primes are the largest, so two of them exceed P
    assert p.dnum == 3 and p.digits == ((0, 1), (1, 2), (2, 3))
    assert max(sum(math.log2(q) for q in p.chain[a:b]) for a, b in p.digits) <= p.log2_P
    two_digits = make(dnum=2)
    assert two_digits.digits == ((0, 1), (1, 3)) and two_digits.digits_at(0) == ((0, 1),)
    assert two_digits.digits_at(1) == ((0, 1), (1, 2))  # the top digit clipped to Q_1
    with pytest.raises(RingMismatchError):
        p.level_of(RingSpec(N, PRIMES[1:3]))
    with pytest.raises(ParameterError, match="level must be an int in"):
        p.ring(3)
    two = make(levels=(1, 3), dnum=1)
    assert two.depth == 1 and two.ring(1).limbs == 3 and two.digits == ((0, 3),)
    assert make() == p and hash(make()) == hash(p) and two != p
    assert "RLWEParams(N=32" in repr(p)


def test_params_checks():
    with pytest.raises(ParameterError, match="levels must count"):
        make(levels=(2, 1, 3))
    with pytest.raises(ParameterError, match="levels must count"):
        make(levels=(1, 2))
    with pytest.raises(ParameterError, match=r"dnum must be an int in \[1, 3\]"):
        make(dnum=4)
    with pytest.raises(ParameterError, match="not NTT-friendly"):
        make(moduli=(PRIMES[0], 97))
    with pytest.raises(ParameterError, match="distinct"):
        make(special_moduli=(PRIMES[0],))
    with pytest.raises(ParameterError, match="RLWEParams: secret"):
        make(secret="binary")
    with pytest.raises(ParameterError, match=r"outside the HE-standard table.*fewer or smaller"):
        make(insecure=False)
    with pytest.warns(InsecureParametersWarning, match="insecure RLWE parameters"):
        RLWEParams(N, PRIMES[:3], PRIMES[3:], insecure=True)


def test_ckks_params_are_rlwe_params():
    c = context(N=32, depth=2, scale_bits=40, first_bits=50, dnum=2)
    p = c.params
    assert isinstance(p, RLWEParams) and isinstance(p, CKKSParams)
    assert p.level_limbs == tuple(p.limbs(lv) for lv in range(p.depth + 1))
    assert p.level_limbs[0] == len(p.base_moduli) and p.level_limbs[-1] == len(p.chain)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        plain = RLWEParams(p.N, p.chain, p.special_moduli, levels=p.level_limbs, dnum=p.dnum,
                           insecure=True)
    assert plain.digits == p.digits and plain.key_ring == p.key_ring
    assert plain != p  # a CKKS fingerprint also covers the scales


def test_balanced_digits():
    bits = [30, 30, 20, 20, 20, 20, 20, 20]
    d = balanced_digits(bits, 3)
    assert d[0][0] == 0 and d[-1][1] == len(bits)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(d))
    assert max(sum(bits[a:b]) for a, b in d) == 60


# -- encryption ------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["public", "secret"])
def test_encrypt_decrypt_small_polynomial(keys, mode):
    p, kg, pk = keys
    enc = Encryptor(p, pk if mode == "public" else kg.secret_key())
    dec = Decryptor(p, kg.secret_key())
    rng = np.random.default_rng(1)
    with ren.random.seeded(2):
        for level in (2, 0):
            m = message(p, level, rng)
            ct = enc.encrypt(m)
            assert isinstance(ct, Ciphertext) and ct.level == level and ct.size == 2
            q = math.prod(p.ring(level).moduli)
            e = noise(dec.decrypt(ct).coefficients(), m.coefficients(), q)
            # secret key: one Gaussian error; public key: the error divided by P' (rounding)
            assert e <= (6 * p.sigma + 1 if mode == "secret" else 2 * N)
        zero = enc.encrypt(level=1)  # an encryption of zero
        assert zero.level == 1
        assert noise(dec.decrypt(zero).coefficients(), [0] * N, q) <= 6 * p.sigma + 2 * N


def test_encryption_checks(keys):
    p, _, pk = keys
    enc = Encryptor(p, pk)
    m = Poly.from_coefficients([1] * N, p.ring(1))
    with pytest.raises(DomainError, match="RLWE keeps polynomials in the NTT domain"):
        enc.encrypt(m, 1)
    with pytest.raises(RingMismatchError, match="the ring of level 2"):
        enc.encrypt(m.ntt(), 2)
    with pytest.raises(ParameterError, match="expects a Poly"):
        enc.encrypt([1, 2, 3])
    with pytest.raises(ParameterError, match="part 1 must be a Poly"):
        Ciphertext((m.ntt(), None), 1, p)
    with pytest.raises(ParameterError, match=r"got 1 part$"):
        Ciphertext((m.ntt(),), 1, p)
    other = make(dnum=2)
    with pytest.raises(ParamsMismatchError, match="other RLWEParams"):
        Encryptor(other, pk)
    with pytest.raises(ParameterError, match="KeyGenerator needs RLWEParams"):
        KeyGenerator("params")


def test_tensor_product_and_relinearization(keys):
    """(d0, d1, d2) of two encryptions decrypts (under 1, s, s²) to m1·m2, and so does its
    relinearization under (1, s)."""
    p, kg, pk = keys
    delta = 1 << 20
    rng = np.random.default_rng(3)
    a, b = ([int(v) for v in rng.integers(-1, 2, N)] for _ in range(2))
    with ren.random.seeded(4):
        rlk = kg.relin_key()
        enc = Encryptor(p, pk)
        x = enc.encrypt(Poly.from_coefficients([delta * v for v in a], p.ring()).ntt())
        y = enc.encrypt(Poly.from_coefficients([delta * v for v in b], p.ring()).ntt())
    (x0, x1), (y0, y1) = x.parts, y.parts
    three = Ciphertext((x0 * y0, x0 * y1 + x1 * y0, x1 * y1), p.depth, p)
    two = Ciphertext(relinearize(three.parts, rlk, p.depth), p.depth, p)
    want = [delta * delta * v for v in negacyclic(a, b)]
    dec = Decryptor(p, kg.secret_key())
    q = math.prod(p.chain)
    for ct in (three, two):
        assert noise(dec.decrypt(ct).coefficients(), want, q) < 1 << 34  # |m·m| up to 2^45


# -- key switching ---------------------------------------------------------------------------------
@pytest.mark.parametrize("level", [2, 1, 0])
def test_key_switch_against_the_plain_product(keys, level):
    """u0 + u1·s ≈ d·t (mod Q_level) for a switching key from t to s, checked on integer
    coefficients with a schoolbook negacyclic product."""
    p, kg, _ = keys
    with ren.random.seeded(6):
        t = Poly.ternary(p.key_ring).ntt().realize()
        key = kg.switching_key(t)
        d = Poly.uniform(p.ring(level), domain="NTT").realize()
    u0, u1 = key_switch(d, key, level)
    s, tc, dc = kg.secret_key().poly.coefficients(), t.coefficients(), d.coefficients()
    got = [x + y for x, y in zip(u0.coefficients(), negacyclic(u1.coefficients(), s))]
    q = math.prod(p.ring(level).moduli)
    e = noise(got, negacyclic(dc, tc), q)
    assert e < 1 << 10  # Σ_j [d]_{D_j}·e_j / P plus rounding, against |d·t| up to Q/2
    assert e > 0  # a real error term


@pytest.mark.parametrize("g", [galois_element(N, 1), galois_element(N, -3),
                               conjugation_element(N), 3])
def test_automorphism_keys(keys, g):
    """automorphism(enc(m), key_g) decrypts to m(X^g); for a rotation, the ROTATE form of the
    map gives the same words as AUTOMORPH."""
    p, kg, pk = keys
    rng = np.random.default_rng(7)
    with ren.random.seeded(8):
        key = kg.galois_key(g)
        m = message(p, 1, rng)
        ct = Encryptor(p, pk).encrypt(m)
    assert key.galois == g
    out = Ciphertext(automorphism(ct.parts, key, ct.level), ct.level, p)
    got = Decryptor(p, kg.secret_key()).decrypt(out).coefficients()
    assert noise(got, galois(m.coefficients(), g), math.prod(p.ring(1).moduli)) < 1 << 10
    if g == galois_element(N, 1):
        rot = automorphism(ct.parts, key, ct.level, lambda c: c.rotate(1))
        assert all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(rot, out.parts))


def _mod_ups(polys) -> int:
    """How many mod-ups (a TO_RING of an INTT onto Q·P) the lazy graphs of `polys` hold."""
    from ren.ops import Op

    seen, stack, count = set(), [p.node for p in polys], 0
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        count += (n.op is Op.TO_RING and len(n.arg.moduli) > 3  # Q (3 primes) plus P
                  and n.src[0].op is Op.INTT)
        stack.extend(n.src)
    return count


@pytest.mark.parametrize("level", [2, 1])
def test_hoisted_automorphisms(keys, level):
    """One decomposition shared by three automorphisms: each decrypts to m(X^g) against the
    schoolbook permutation, its noise as small as an unhoisted one's, and the graph holds the
    mod-ups of one decomposition (one per digit), not three."""
    p, kg, pk = keys
    gs = [galois_element(N, 1), galois_element(N, 5), conjugation_element(N)]
    with ren.random.seeded(11):
        ks = [kg.galois_key(g) for g in gs]
        m = message(p, level, np.random.default_rng(3))
        ct = Encryptor(p, pk).encrypt(m)
    ren.realize(list(ct.parts))  # (its graph holds the encryption's own conversions)
    sigmas = [lambda c, g=g: c.automorph(g) for g in gs]
    outs = hoisted_automorphisms(ct.parts, ks, level, sigmas)
    digits = len(p.digits_at(level))
    assert _mod_ups([c for o in outs for c in o]) == digits
    q = math.prod(p.ring(level).moduli)
    dec = Decryptor(p, kg.secret_key())
    for g, out in zip(gs, outs, strict=True):
        got = dec.decrypt(Ciphertext(out, level, p)).coefficients()
        assert noise(got, galois(m.coefficients(), g), q) < 1 << 10, g
    with pytest.raises(ParameterError, match="2 keys for 3 maps"):
        hoisted_automorphisms(ct.parts, ks[:2], level, sigmas)
    assert hoisted_automorphisms(ct.parts, [], level, []) == []


def test_galois_keys_by_step(keys):
    _, kg, _ = keys
    with ren.random.seeded(9):
        gk = kg.rotation_keys([1, -1], conjugate=True)
    assert gk.steps == [1, N // 2 - 1] and gk.has_conjugate and len(gk) == 3
    assert galois_element(N, -1) in gk
    with pytest.raises(MissingKeyError, match="rotation steps"):
        gk.for_galois(galois_element(N, 2), "rotation step 2")
    with pytest.raises(ParameterError, match="key must be a Galois key"):
        automorphism((None, None), kg.relin_key(), 0)


# -- the CKKS layer on top -------------------------------------------------------------------------
def test_ckks_ciphertext_is_an_rlwe_ciphertext_with_a_scale():
    c = context(N=32, depth=2, scale_bits=40, first_bits=50, dnum=2)
    ct = c.encrypt([0.5, -0.25])
    r = ct.as_rlwe()
    assert isinstance(r, Ciphertext) and r.parts == ct.parts and r.level == ct.level
    assert type(ct).from_rlwe(r, ct.scale).scale == ct.scale
    m = Decryptor(c.params, c.keygen.secret_key()).decrypt(r)
    assert np.array_equal(m.numpy(), c.dec.decrypt(ct).poly.numpy())


# -- public-key encryption over Q·P' --------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(log_n=st.integers(5, 16), sigma=st.floats(0.5, 20), sparse=st.booleans(),
       bits=st.lists(st.integers(20, 45), min_size=1, max_size=6))
@example(log_n=16, sigma=3.2, sparse=True, bits=[41, 30])  # sparse: one prime; dense: two
@example(log_n=16, sigma=3.2, sparse=False, bits=[41, 30])
def test_encryption_special_moduli_are_the_fewest_that_hide_the_noise(log_n, sigma, sparse, bits):
    """P' is the shortest prefix of P whose product exceeds 2^20 × the largest |v·e + e0 + e1·s|
    ((N + ||s||_1 + 1) × the Gaussian's clip), or all of P when none does."""
    from ren.sampling import gaussian_bound

    n = 1 << log_n
    p = make()  # only the rule is under test: give it these N, P, sigma and secret
    p.N, p.sigma = n, sigma
    p.hamming_weight = 16 if sparse else None
    p.special_moduli = tuple((1 << b) - 1 for b in bits)  # sizes are all the rule looks at
    h = 16 if sparse else n
    need = ((n + h + 1) * gaussian_bound(sigma)) << 20
    chosen = RLWEParams.encryption_special_moduli.func(p)
    assert chosen == p.special_moduli[:len(chosen)] and chosen
    if math.prod(chosen) <= need:
        assert chosen == p.special_moduli  # not enough in all of P: all of it
    else:
        assert math.prod(chosen[:-1]) <= need  # one fewer would not do


def test_public_key_encryption_carries_rounding_noise_only():
    """At N = 1024 with four special primes, encryption uses two of them (a ring of Q and those
    two) and a fresh encryption of zero decrypts to rounding noise (r0 + r1·s, r uniform in
    ±1/2: a few times sqrt(N/18)); without the division the error v·e + e0 + e1·s shows."""
    n = 1024
    primes = RingSpec.generate(n, 6).moduli
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        p = RLWEParams(n, moduli=primes[:2], special_moduli=primes[2:], insecure=True)
    assert p.encryption_special_moduli == p.special_moduli[:2]
    assert p.ring_encryption(1).moduli == p.ring(1).moduli + p.special_moduli[:2]
    with ren.random.seeded(11):
        kg = KeyGenerator(p)
        enc, dec = Encryptor(p, kg.public_key()), Decryptor(p, kg.secret_key())
        q = math.prod(p.ring(1).moduli)
        rounding = 8 * math.sqrt(n / 18) + 2
        fresh = noise(dec.decrypt(enc.encrypt(level=1)).coefficients(), [0] * n, q)
        assert fresh <= rounding
        # the same encryption over Q alone, not divided: the RLWE error itself
        ring, pk = p.ring(1), kg.public_key()
        v = Poly.ternary(ring)
        e0, e1 = (Poly.gaussian(ring, p.sigma).ntt() for _ in range(2))
        raw = Ciphertext((v * pk.b.to_ring(ring) + e0, v * pk.a.to_ring(ring) + e1), 1, p)
        assert noise(dec.decrypt(raw).coefficients(), [0] * n, q) > 2 * rounding


# -- issue 38: every public function of the layer checks its arguments (found by tests/api_fuzz.py)
@pytest.fixture(scope="module")
def objects(keys):
    """(params, keygen, a level-2 ciphertext, its size-3 square, rlk, a Galois key)."""
    p, kg, pk = keys
    with ren.random.seeded(12):
        ct = Encryptor(p, pk).encrypt(message(p, 2, np.random.default_rng(3), 1 << 8))
        rlk = kg.relin_key()
        gk = kg.galois_key(galois_element(N, 1))
    c0, c1 = ct.parts
    return p, kg, ct, (c0 * c0, c0 * c1 * 2, c1 * c1), rlk, gk


BAD_ARGUMENTS = {
    # name: (call(p, kg, ct, parts3, rlk, gk), message)
    "max_log_qp N": (lambda *o: ren.rlwe.max_log_qp("1024"), r"max_log_qp: N must be an int"),
    "max_log_qp list": (lambda *o: ren.rlwe.max_log_qp([]), r"max_log_qp: N must be an int"),
    "estimated_security zero": (lambda *o: ren.rlwe.estimated_security(1024, 0),
                                r"log_qp must be a finite real number > 0"),
    "estimated_security str": (lambda *o: ren.rlwe.estimated_security(1024, "x"),
                               r"log_qp must be a finite real number"),
    "secret array": (lambda *o: make(secret=np.zeros(2)), r"secret must be 'ternary' or"),
    "secret sparse array": (lambda *o: make(secret=(np.zeros(2), 4)),
                            r"secret must be 'ternary' or"),
    "level_of str": (lambda p, *o: p.level_of("x"), r"level_of: ring must be a RingSpec"),
    "level_of array": (lambda p, *o: p.level_of(np.zeros(2)), r"level_of: ring must be a"),
    "balanced_digits bits": (lambda *o: balanced_digits(["x"], 1),
                             r"balanced_digits: bits\[0\] must be a finite real"),
    "balanced_digits str": (lambda *o: balanced_digits("30", 1),
                            r"balanced_digits: bits must be a list or tuple"),
    "balanced_digits huge dnum": (lambda *o: balanced_digits([30.0, 30.0], 10**12),
                                  r"dnum must be an int in \[1, 2\]"),
    "gadget_constants": (lambda *o: ren.rlwe.gadget_constants("x"),
                         r"gadget_constants: params must be a RLWEParams"),
    "normalize_steps slots": (lambda *o: ren.rlwe.normalize_steps([1], "16"),
                              r"normalize_steps: slots must be an int >= 1"),
    "normalize_steps zero": (lambda *o: ren.rlwe.normalize_steps([1], 0),
                             r"normalize_steps: slots must be an int >= 1"),
    "switching_key str": (lambda p, kg, *o: kg.switching_key("x"),
                          r"switching key: s_from must be a Poly"),
    "switching_rows None": (lambda p, kg, *o: kg.switching_rows(None),
                            r"switching key: s_from must be a Poly"),
    "rotation_keys progress": (lambda p, kg, *o: kg.rotation_keys([1], progress=np.zeros(2)),
                               r"rotation_keys: progress must be True or False"),
    "for_galois list": (lambda p, kg, ct, p3, rlk, gk: GaloisKeys({}, p).for_galois([], "x"),
                        r"for_galois: g must be a Galois element"),
    "check_ntt_polys polys": (lambda p, kg, ct, *o: check_ntt_polys(
        None, str, p.ring(2), "r", "f", p), r"check_ntt_polys: polys must be a tuple or list"),
    "check_ntt_polys where": (lambda p, kg, ct, *o: check_ntt_polys(
        ct.parts, "x", p.ring(2), "r", "f", p), r"check_ntt_polys: where must be callable"),
    "check_ntt_polys ring": (lambda p, kg, ct, *o: check_ntt_polys(
        ct.parts, str, None, "r", "f", p), r"check_ntt_polys: ring must be a RingSpec"),
    "check_ntt_polys params": (lambda p, kg, ct, *o: check_ntt_polys(
        ct.parts, str, p.ring(2), "r", "f", "x"), r"check_ntt_polys: params must be a RLWEParams"),
    "decompose d": (lambda p, kg, ct, *o: decompose("x", p, 2), r"decompose: d must be a Poly"),
    "decompose params": (lambda p, kg, ct, *o: decompose(ct.c1, None, 2),
                         r"decompose: params must be a RLWEParams"),
    "decompose level": (lambda p, kg, ct, *o: decompose(ct.c1, p, 2.0),
                        r"decompose: level must be an int in \[0, 2\]"),
    "switch_decomposed ups": (lambda p, kg, ct, p3, rlk, gk: switch_decomposed([], rlk, 2),
                              r"switch_decomposed: ups must be a sequence of between"),
    "switch_decomposed key": (lambda p, kg, ct, *o: switch_decomposed(
        decompose(ct.c1, p, 2), "x", 2), r"switch_decomposed: key must be a SwitchingKey"),
    "key_switch key": (lambda p, kg, ct, *o: key_switch(ct.c1, None, 2),
                       r"key_switch: key must be a SwitchingKey"),
    "relinearize parts": (lambda p, kg, ct, p3, rlk, gk: relinearize("x", rlk, 2),
                          r"relinearize: parts must be a list or tuple"),
    "relinearize two parts": (lambda p, kg, ct, p3, rlk, gk: relinearize(ct.parts, rlk, 2),
                              r"relinearize: parts must be a sequence of between 3 and 3"),
    "relinearize galois key": (lambda p, kg, ct, p3, rlk, gk: relinearize(p3, gk, 2),
                               r"relinearize: key must be the relinearization key"),
    "automorphism key": (lambda p, kg, ct, *o: automorphism(ct.parts, None, 2),
                         r"automorphism: key must be a SwitchingKey"),
    "automorphism sigma": (lambda p, kg, ct, p3, rlk, gk: automorphism(ct.parts, gk, 2, 1),
                           r"automorphism: sigma must be callable"),
    "automorphism sigma result": (lambda p, kg, ct, p3, rlk, gk: automorphism(
        ct.parts, gk, 2, lambda c: 1), r"automorphism: sigma must map a Poly to a Poly"),
    "hoisted sigma result": (lambda p, kg, ct, p3, rlk, gk: hoisted_automorphisms(
        ct.parts, [gk], 2, [lambda c: None]),
        r"hoisted_automorphisms: sigma must map a Poly to a Poly"),
    "automorphism parts": (lambda p, kg, ct, p3, rlk, gk: automorphism(-1, gk, 2),
                           r"automorphism: parts must be a list or tuple"),
    "hoisted keys": (lambda p, kg, ct, *o: hoisted_automorphisms(ct.parts, None, 2, []),
                     r"hoisted_automorphisms: keys must be a list or tuple"),
    "hoisted sigmas": (lambda p, kg, ct, p3, rlk, gk: hoisted_automorphisms(
        ct.parts, [gk], 2, ["x"]), r"hoisted_automorphisms: sigmas\[0\] must be callable"),
    "hoisted parts": (lambda p, kg, ct, p3, rlk, gk: hoisted_automorphisms(
        None, [gk], 2, [str]), r"hoisted_automorphisms: parts must be a list or tuple"),
    "decrypt_parts": (lambda p, kg, *o: Decryptor(p, kg.secret_key()).decrypt_parts(None, 2),
                      r"decrypt_parts: parts must be a list or tuple"),
    "Encryptor params": (lambda p, kg, *o: Encryptor("x", kg.secret_key()),
                         r"Encryptor: params must be a RLWEParams"),
    "Decryptor params": (lambda p, kg, *o: Decryptor(None, kg.secret_key()),
                         r"Decryptor: params must be a RLWEParams"),
}


@pytest.mark.parametrize("case", sorted(BAD_ARGUMENTS))
def test_bad_arguments_raise_parameter_errors(objects, case):
    """Issue 38: a wrong type, a NaN or an absurd size is a ParameterError naming the argument
    (before: AttributeError, TypeError, IndexError, a silently wrong relinearization with a
    Galois key, or balanced_digits(dnum=10**12) running for hours)."""
    call, match = BAD_ARGUMENTS[case]
    with pytest.raises(ParameterError, match=match):
        call(*objects)


def test_numpy_ints_are_ints(objects):
    """Levels, rotation steps and Galois elements may be NumPy integers (one rule: `is_int`)."""
    p, _, _, _, _, gk = objects
    assert p.check_level(np.int64(1)) == 1 and p.ring(np.int64(1)) == p.ring(1)
    assert ren.rlwe.normalize_steps([np.int64(3), -1], 16) == [3, 15]
    keys = GaloisKeys({gk.galois: gk}, p)
    assert keys.for_galois(np.int64(gk.galois), "rotation step 1") is gk


def test_params_pickle_to_the_same_bytes_however_much_they_were_used():
    """ren.distributed names shared objects by their bytes: a pickle holds the fields, not the
    rings and tables cached by use (they were pickled too, so used parameters differed)."""
    import pickle

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = CKKSParams(N=256, depth=2, insecure=True)
    fresh = pickle.dumps(p)
    p.ring(1), p.ring_encryption(0), p.scale(1), p.fingerprint, p.log2_QP  # fill the caches
    used = pickle.dumps(p)
    assert used == fresh
    back = pickle.loads(used)
    assert back == p and back.ring(1) == p.ring(1) and back.scale(1) == p.scale(1)
