"""BFV (`ren.bfv`): parameters and their errors, batch and coefficient encoding (the slot
structure: X -> X^(3^k) rotates columns, X -> X^(2N-1) swaps rows), encryption, every
homomorphic operation against exact integer arithmetic mod t, rotations, a multiplication chain
to the parameters' depth, and the noise budget.

The rings are small (N = 2^10) and the parameters explicitly insecure (``insecure=True``, the
warning silenced where they are built), as in the CKKS tests."""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ren.random
from ren.bfv import (
    PRESETS,
    BatchingError,
    BFVParams,
    ChainSecurityError,
    Ciphertext,
    Decryptor,
    Encoder,
    Encryptor,
    Evaluator,
    InsecureParametersWarning,
    MissingKeyError,
    ParamsMismatchError,
    Plaintext,
    PlaintextModulusError,
    batches,
    column_element,
    galois_keys,
)
from ren.errors import ParameterError, ShapeError
from ren.rlwe import KeyGenerator

N = 1024
T_BATCH = 40961  # prime, ≡ 1 mod 2048


def insecure_params(t: int = T_BATCH, chain: int = 4, n: int = N, **kw) -> BFVParams:
    """Test parameters, INSECURE on purpose (N = 2^10 with a 120-bit chain)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        return BFVParams.generate(n, t, chain, 1, insecure=True, **kw)


@dataclass
class Ctx:
    params: BFVParams
    kg: KeyGenerator
    enc: Encoder
    pk_enc: Encryptor
    sk_enc: Encryptor
    dec: Decryptor
    ev: Evaluator

    def encrypt(self, values, secret: bool = False, coeffs: bool = False) -> Ciphertext:
        pt = self.enc.encode_coeffs(values) if coeffs else self.enc.encode(values)
        return (self.sk_enc if secret else self.pk_enc).encrypt(pt)

    def decrypt(self, ct: Ciphertext, coeffs: bool = False, signed: bool = False) -> np.ndarray:
        pt = self.dec.decrypt(ct)
        return self.enc.decode_coeffs(pt, signed) if coeffs else self.enc.decode(pt, signed)


@cache
def context(t: int = T_BATCH, chain: int = 4) -> Ctx:
    p = insecure_params(t, chain)
    with ren.random.seeded(11):
        kg = KeyGenerator(p)
        pk, rk = kg.public_key(), kg.relin_key()
        gk = galois_keys(kg, [1, 2, 4, 8, -3]) if p.batching else None
    return Ctx(p, kg, Encoder(p), Encryptor(p, pk), Encryptor(p, kg.secret_key()),
               Decryptor(p, kg.secret_key()), Evaluator(p, rk, gk))


def rand(t: int, seed: int, n: int = N) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, t, n)


def negacyclic(a: np.ndarray, b: np.ndarray, t: int) -> np.ndarray:
    """a·b mod (X^N + 1, t), schoolbook on Python ints."""
    n = len(a)
    full = np.convolve(np.array(a, dtype=object), np.array(b, dtype=object))
    out = full[:n].copy()
    out[: n - 1] -= full[n:]
    return np.array([int(v) % t for v in out], np.int64)


def automorph_coeffs(m: np.ndarray, g: int, t: int) -> np.ndarray:
    """m(X^g) mod (X^N + 1, t) on the host."""
    n = len(m)
    out = np.zeros(n, np.int64)
    for i, c in enumerate(m.tolist()):
        j = i * g % (2 * n)
        if j >= n:
            out[j - n] = (out[j - n] - c) % t
        else:
            out[j] = (out[j] + c) % t
    return out


# -- parameters ------------------------------------------------------------------------------------
def test_presets_are_secure_batching_and_state_their_depth():
    for name, spec in PRESETS.items():
        p = BFVParams.preset(name)
        assert spec["N"] == p.N and p.t == 65537 and p.batching
        assert p.log2_QP <= {1 << 13: 218, 1 << 14: 438, 1 << 15: 881}[p.N]
        assert p.security_bits >= 128
        assert p.mult_depth == spec["mult_depth"] >= 1
        # the stated depth (measured) is at least the conservative estimate
        assert p.estimated_depth <= p.mult_depth <= p.estimated_depth + 2
        # the auxiliary basis is disjoint from Q and P and large enough (B > 4·t·N·L²·Q)
        assert not set(p.aux_moduli) & set(p.chain + p.special_moduli)
        assert p.sk_modulus not in p.aux_moduli
        B = 1
        for q in p.aux_moduli:
            B *= q
        assert 4 * p.t * p.N * len(p.chain) ** 2 * p.Q < B


def test_parameter_errors():
    with pytest.raises(PlaintextModulusError, match="t"):
        insecure_params(t=1)
    with pytest.raises(PlaintextModulusError, match="t"):
        insecure_params(t=2.5)
    with pytest.raises(PlaintextModulusError, match="too large for the chain"):
        insecure_params(t=(1 << 59) + 1, chain=2)
    with pytest.raises(ChainSecurityError, match="128-bit"):
        BFVParams.generate(1 << 13, 65537, 8, 1)  # 270 bits > 218
    assert issubclass(ChainSecurityError, ParameterError)
    with pytest.raises(ParameterError, match="unknown preset"):
        BFVParams.preset("N12")
    with pytest.warns(InsecureParametersWarning):
        BFVParams.generate(N, T_BATCH, 2, 1, insecure=True)
    with pytest.raises(ParameterError, match=r"unknown keyword\(s\) \['levels'\]"):
        BFVParams.generate(N, T_BATCH, 2, 1, insecure=True, levels=(1, 2))
    with pytest.raises(ParameterError, match=r"unknown keyword\(s\) \['depth'\]"):
        BFVParams.preset("N13", depth=3)
    assert len(BFVParams.preset("N13", chain_primes=5).chain) == 5  # known overrides pass
    for bad in (lambda: batches(float("nan"), T_BATCH), lambda: batches(N, float("nan")),
                lambda: batches(0, T_BATCH), lambda: column_element(1000, 1),
                lambda: column_element(N, 1.5), lambda: galois_keys("kg"),
                lambda: galois_keys(context().kg, 5)):
        with pytest.raises(ParameterError):
            bad()


def test_batching_t():
    assert batches(N, T_BATCH) and batches(1 << 15, 65537)
    assert not batches(N, 65539)            # prime but not 1 mod 2N
    assert not batches(N, 2048 * 3 + 1)     # 1 mod 2N but 6145 = 5·1229
    assert not batches(N, 256)
    ctx = context(t=256)
    assert not ctx.params.batching
    with pytest.raises(BatchingError, match="65537"):
        ctx.enc.encode([1, 2])
    assert issubclass(BatchingError, PlaintextModulusError)


def test_params_identity():
    a, b = insecure_params(), insecure_params()
    assert a == b and hash(a) == hash(b)
    assert a != insecure_params(t=65537)
    assert "batching" in repr(a) and "INSECURE" in repr(a)


# -- encoding --------------------------------------------------------------------------------------
def test_batch_round_trip_and_slot_structure():
    ctx = context()
    t = ctx.params.t
    x = rand(t, 1)
    pt = ctx.enc.encode(x)
    assert (ctx.enc.decode(pt) == x).all()
    assert (ctx.enc.encode(x.reshape(2, -1)).coeffs == pt.coeffs).all()
    rows = x.reshape(2, -1)
    assert column_element(N, 5) == 3**5 and column_element(N, -1) == pow(3, N // 2 - 1, 2 * N)
    for k in (1, 5):  # X -> X^(3^k) (SEAL's generator): both rows left by k
        moved = Plaintext(automorph_coeffs(pt.coeffs, 3**k, t), ctx.params)
        assert (ctx.enc.decode(moved).reshape(2, -1) == np.roll(rows, -k, axis=1)).all()
    swapped = Plaintext(automorph_coeffs(pt.coeffs, 2 * N - 1, t), ctx.params)
    assert (ctx.enc.decode(swapped).reshape(2, -1) == rows[::-1]).all()
    # slot-wise products: the encoding is a ring isomorphism
    y = rand(t, 2)
    prod = Plaintext(negacyclic(pt.coeffs, ctx.enc.encode(y).coeffs, t), ctx.params)
    assert (ctx.enc.decode(prod) == x * y % t).all()


def test_encode_reduces_pads_and_decodes_signed():
    ctx = context()
    t = ctx.params.t
    vals = [-1, t, t + 3, -(t // 2), 2**70 + 5]
    got = ctx.enc.decode(ctx.enc.encode(vals))
    assert got[:5].tolist() == [t - 1, 0, 3, t - t // 2, (2**70 + 5) % t]
    assert not got[5:].any()
    assert ctx.enc.decode(ctx.enc.encode(vals), signed=True)[:4].tolist() == \
        [-1, 0, 3, -(t // 2)]
    c = ctx.enc.encode_coeffs([7, -7])
    assert c.coeffs[:2].tolist() == [7, t - 7]
    assert ctx.enc.decode_coeffs(c, signed=True)[:3].tolist() == [7, -7, 0]


def test_encode_errors():
    ctx = context()
    with pytest.raises(ShapeError):
        ctx.enc.encode(list(range(N + 1)))
    with pytest.raises(ShapeError):
        ctx.enc.encode([1.5])
    with pytest.raises(ShapeError):
        ctx.enc.encode(3)
    with pytest.raises(ParamsMismatchError):
        context(t=256).enc.decode_coeffs(ctx.enc.encode([1]))


# -- encryption and operations against exact arithmetic --------------------------------------------
@pytest.mark.parametrize("secret", [False, True])
def test_encrypt_decrypt(secret):
    ctx = context()
    x = rand(ctx.params.t, 3)
    ct = ctx.encrypt(x, secret=secret)
    assert (ctx.decrypt(ct) == x).all()
    assert ctx.dec.noise_budget(ct) > 80


def test_linear_ops_and_plain_ops():
    ctx = context()
    t, ev = ctx.params.t, ctx.ev
    x, y = rand(t, 4), rand(t, 5)
    cx, cy = ctx.encrypt(x), ctx.encrypt(y)
    assert (ctx.decrypt(ev.add(cx, cy)) == (x + y) % t).all()
    assert (ctx.decrypt(ev.sub(cx, cy)) == (x - y) % t).all()
    assert (ctx.decrypt(ev.negate(cx)) == (-x) % t).all()
    py = ctx.enc.encode(y)
    assert (ctx.decrypt(ev.add_plain(cx, py)) == (x + y) % t).all()
    assert (ctx.decrypt(ev.sub_plain(cx, py)) == (x - y) % t).all()
    assert (ctx.decrypt(ev.multiply_plain(cx, py)) == x * y % t).all()
    assert (ctx.decrypt(ev.multiply_scalar(cx, -3)) == (-3 * x) % t).all()


@settings(max_examples=6, deadline=None)
@given(st.lists(st.integers(-(2**40), 2**40), min_size=1, max_size=N),
       st.lists(st.integers(-(2**40), 2**40), min_size=1, max_size=N))
def test_property_add_and_multiply_slotwise(xs, ys):
    ctx = context()
    t = ctx.params.t
    x = np.zeros(N, object)
    y = np.zeros(N, object)
    x[: len(xs)], y[: len(ys)] = xs, ys
    cx, cy = ctx.encrypt(xs), ctx.encrypt(ys, secret=True)
    assert ctx.decrypt(ctx.ev.add(cx, cy)).tolist() == [int(v) % t for v in x + y]
    assert ctx.decrypt(ctx.ev.multiply(cx, cy)).tolist() == [int(v) % t for v in x * y]


def test_wraparound_and_negatives():
    ctx = context()
    t, ev = ctx.params.t, ctx.ev
    half = t // 2
    x = np.array([t - 1, half, -half, -1, 2, 0] * (N // 6) + [1] * (N % 6))
    y = np.array([t - 1, 2, 2, -1, half + 1, 5] * (N // 6) + [1] * (N % 6))
    cx, cy = ctx.encrypt(x), ctx.encrypt(y)
    assert (ctx.decrypt(ev.add(cx, cy), signed=False) == (x + y) % t).all()
    prod = ctx.decrypt(ev.multiply(cx, cy), signed=True)
    assert (prod % t == (x * y) % t).all()
    assert prod[3] == 1 and prod[0] == 1  # (-1)·(-1) and (t-1)^2 ≡ 1


@pytest.mark.parametrize("t", [256, (1 << 40) + 15])
def test_coefficient_encoding_any_t(t):
    """Coefficient encoding with a t that does not batch (a power of two, a 41-bit odd t):
    multiplication is the negacyclic product mod t."""
    ctx = context(t=t)
    x, y = rand(t, 6), rand(t, 7)
    cx, cy = ctx.encrypt(x, coeffs=True), ctx.encrypt(y, coeffs=True)
    assert (ctx.decrypt(ctx.ev.add(cx, cy), coeffs=True) == (x + y) % t).all()
    assert (ctx.decrypt(ctx.ev.multiply(cx, cy), coeffs=True) == negacyclic(x, y, t)).all()
    assert (ctx.decrypt(ctx.ev.multiply_plain(cx, ctx.enc.encode_coeffs(y)), coeffs=True)
            == negacyclic(x, y, t)).all()


def test_multiply_without_relinearization_and_square():
    ctx = context()
    t, ev = ctx.params.t, ctx.ev
    x, y = rand(t, 8), rand(t, 9)
    cx, cy = ctx.encrypt(x), ctx.encrypt(y)
    three = ev.multiply(cx, cy, relin=False)
    assert three.size == 3
    assert (ctx.decrypt(three) == x * y % t).all()  # decrypts under (1, s, s²)
    assert (ctx.decrypt(ev.add(three, cx)) == (x * y + x) % t).all()
    assert (ctx.decrypt(ev.relinearize(three)) == x * y % t).all()
    assert (ctx.decrypt(ev.square(cx)) == x * x % t).all()
    with pytest.raises(ParameterError, match="relinearize it first"):
        ev.multiply(three, cx)


def _centred(poly, q: int) -> list[int]:
    return [(v + q // 2) % q - q // 2 for v in poly.intt().coefficients()]


def _negacyclic_int(a: list[int], b: list[int]) -> list[int]:
    n = len(a)
    full = np.convolve(np.array(a, dtype=object), np.array(b, dtype=object))
    out = full[:n].copy()
    out[: n - 1] -= full[n:]
    return [int(v) for v in out]


@cache
def small_context(device: str = "python") -> Ctx:
    """N = 64, t = 257: small enough for schoolbook products of the ciphertexts on the host."""
    p = insecure_params(257, 4, n=64, device=device)
    with ren.random.seeded(5):
        kg = KeyGenerator(p)
        pk, rk, gk = kg.public_key(), kg.relin_key(), galois_keys(kg, [1])
    return Ctx(p, kg, Encoder(p), Encryptor(p, pk), Encryptor(p, kg.secret_key()),
               Decryptor(p, kg.secret_key()), Evaluator(p, rk, gk))


def test_product_is_textbook_bfv_exactly():
    """The scale-invariant product in RNS (exact extension by a Montgomery reduction by m̃, the
    tensor on B | m_sk | Q, the rescale by Q, Shenoy–Kumaresan back) is textbook BFV word for
    word: round(t/Q · (a ⊗ b)) mod Q on the centred big-integer parts, for fresh and for
    already multiplied operands (an extension off by u·Q, or by Q on half the coefficients,
    changes the words and costs noise bits)."""
    ctx = small_context()
    p = ctx.params
    Q, t = p.Q, p.t
    a = ctx.encrypt(rand(t, 31, 64))
    b = ctx.encrypt(rand(t, 32, 64), secret=True)
    for x, y in ((a, b), (ctx.ev.multiply(a, b), b)):
        xs, ys = ([_centred(c, Q) for c in ct.parts] for ct in (x, y))
        tensor = [_negacyclic_int(xs[0], ys[0]),
                  [u + v for u, v in zip(_negacyclic_int(xs[0], ys[1]),
                                         _negacyclic_int(xs[1], ys[0]), strict=True)],
                  _negacyclic_int(xs[1], ys[1])]
        want = [[(2 * t * v + Q) // (2 * Q) % Q for v in part] for part in tensor]
        got = ctx.ev.multiply_no_relin(x, y)
        assert [[v % Q for v in c.intt().coefficients()] for c in got.parts] == want


def test_python_and_cpu_give_the_same_words():
    """The compiled "cpu" device computes the multiplication (exact extension, tensor, scaling,
    relinearization) and rotations to the same words as the "python" device."""
    words = []
    for device in ("python", "cpu"):
        ctx = small_context(device)
        with ren.random.seeded(3):
            a, b = ctx.encrypt(rand(257, 41, 64)), ctx.encrypt(rand(257, 42, 64))
        c = ctx.ev.multiply(ctx.ev.multiply(a, b), b)
        r = ctx.ev.rotate_rows(ctx.ev.rotate_columns(c, 1))
        words.append([q.tolist() for q in (*c.parts, *r.parts)])
    assert words[0] == words[1]


# -- rotations -------------------------------------------------------------------------------------
def test_rotations():
    ctx = context()
    t, ev = ctx.params.t, ctx.ev
    x = rand(t, 10)
    rows = x.reshape(2, -1)
    cx = ctx.encrypt(x)
    for k in (1, 2, 8, -3, N // 2):
        got = ctx.decrypt(ev.rotate_columns(cx, k)).reshape(2, -1)
        assert (got == np.roll(rows, -k, axis=1)).all(), k
    assert (ctx.decrypt(ev.rotate_rows(cx)).reshape(2, -1) == rows[::-1]).all()
    with pytest.raises(MissingKeyError, match="column rotation by 3"):
        ev.rotate_columns(cx, 3)
    with pytest.raises(MissingKeyError, match="relinearization"):
        Evaluator(ctx.params).multiply(cx, cx)
    with pytest.raises(MissingKeyError, match="row swap"):
        Evaluator(ctx.params).rotate_rows(cx)


# -- depth and noise budget ------------------------------------------------------------------------
def test_multiplication_chain_to_depth_and_budget():
    """A chain of mult_depth multiplications decrypts exactly with budget left; the budget falls
    with every multiplication, and decryption fails once it is spent."""
    ctx = context()
    t, ev, p = ctx.params.t, ctx.ev, ctx.params
    assert p.mult_depth >= 2
    x, y = rand(t, 11), rand(t, 12)
    c, cy = ctx.encrypt(x), ctx.encrypt(y)
    ref = x.copy()
    budgets = [ctx.dec.noise_budget(c)]
    for _ in range(p.mult_depth):
        c = ev.multiply(c, cy)
        ref = ref * y % t
        budgets.append(ctx.dec.noise_budget(c))
        assert (ctx.decrypt(c) == ref).all()
    assert all(a - b > 15 for a, b in itertools.pairwise(budgets)), budgets
    assert budgets[-1] > 0
    wrong = False
    for _ in range(3):  # the measured depth is one more than the estimate at this ring
        c = ev.multiply(c, cy)
        ref = ref * y % t
        budgets.append(ctx.dec.noise_budget(c))
        wrong = not (ctx.decrypt(c) == ref).all()
        if wrong:
            break
        assert budgets[-1] >= 0
    # a budget of 0 (‖v‖ >= 1/4) may still decrypt; a wrong decryption always has budget 0
    assert wrong and budgets[-1] == 0, budgets


def test_noise_budget_definition():
    """The budget is log2 Q - log2 ‖[t·(c0 + c1·s)]_Q‖ - 1: a ciphertext of Δm + e with a
    known e has budget exactly log2(Q/(t·|e|)) - 1 (up to the rounding of Δm)."""
    ctx = context()
    p = ctx.params
    zero = ctx.sk_enc.encrypt(ctx.enc.encode_coeffs([0]))
    bumped = Ciphertext((zero.parts[0] + p.Q // (4 * p.t), zero.parts[1]), p)  # v ≈ 1/4
    assert ctx.dec.noise_budget(bumped) == 1
    far = Ciphertext((zero.parts[0] + p.Q // (2 * p.t) + 100, zero.parts[1]), p)  # v > 1/2
    assert ctx.dec.noise_budget(far) == 0
    assert ctx.enc.decode_coeffs(ctx.dec.decrypt(far))[0] == 1


def test_mismatched_objects():
    a, b = context(), context(t=256)
    ct = a.encrypt([1])
    with pytest.raises(ParamsMismatchError):
        b.dec.decrypt(ct)
    with pytest.raises(ParamsMismatchError):
        b.ev.add(ct, ct)
    with pytest.raises(ParamsMismatchError):
        a.ev.add_plain(ct, b.enc.encode_coeffs([1]))
    with pytest.raises(ParameterError):
        a.ev.add(ct, "ct")
