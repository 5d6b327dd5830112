"""Issue 16, CKKS part: no silent wrong answer, no crash.

Every scale must fit its level (`CKKSParams.check_scale`: at least 1, and a message of magnitude
1 times the operation's constant below Q_level/2), constructors check their fields, bad
arguments raise specific `RenError`s that say what to do, and every evaluator method works on
the compiled "cpu" device.  Small insecure rings keep this fast.
"""

from __future__ import annotations

import hashlib
import inspect
import time
from fractions import Fraction

import numpy as np
import pytest
from ckks_helpers import check_precision, context, make_params

import ren
from ren.ckks import (
    Ciphertext,
    CKKSParams,
    DecodeOverflowError,
    Decryptor,
    Encoder,
    Encryptor,
    Evaluator,
    KeyGenerator,
    OutOfLevelsError,
    Plaintext,
    ScaleMismatchError,
    ScaleOutOfBoundsError,
    dumps,
    loads,
)
from ren.ckks.serialize import CHECKSUM_SIZE
from ren.errors import (
    DeviceError,
    DomainError,
    LevelError,
    ParameterError,
    RenError,
    RingMismatchError,
    SerializationError,
)
from ren.poly import Poly

BOUND = 25  # bits, as in test_ckks_ops


@pytest.fixture(scope="module")
def c():
    """N=64, depth 3, 40-bit scale, log2 Q_0 = 50: the chain shape of the N13 preset."""
    return context(N=64, depth=3, scale_bits=40, first_bits=50)


@pytest.fixture
def x():
    return np.random.default_rng(1).uniform(-1, 1, 32).astype(complex)


def _to_level0(c, ct):
    while ct.level:
        ct = c.ev.rescale(c.ev.multiply_scalar(ct, 1.0, target_scale=c.params.scale(ct.level - 1)))
    return ct


# -- the scale rule ------------------------------------------------------------------------------
class TestScaleBounds:
    def test_error_classes(self):
        assert issubclass(ScaleOutOfBoundsError, LevelError)
        assert issubclass(ScaleOutOfBoundsError, ParameterError)  # a scale is an argument too
        assert issubclass(DecodeOverflowError, RenError)
        assert issubclass(DecodeOverflowError, OverflowError)

    def test_square_at_level_0_of_the_n13_preset(self):
        """Scale 2^80 against log2 Q_0 = 50 decrypted with error ~1 before; SEAL refuses it."""
        p = CKKSParams.preset("N13")
        with ren.random.seeded(3):
            sk = KeyGenerator(p).secret_key()
            ct = Encryptor(p, sk).encrypt(Encoder(p).encode([0.5, -0.25], level=0))
        ev = Evaluator(p)  # no relinearization key: the check comes first
        with pytest.raises(ScaleOutOfBoundsError) as e:
            ev.square(ct, relinearize=False)
        msg = str(e.value)
        assert "square" in msg and "2^80" in msg and "log2 Q_0 = 50" in msg and "rescale" in msg

    def test_products_at_level_0(self, c, x):
        ct = _to_level0(c, c.encrypt(x))
        assert ct.level == 0
        ev = c.ev
        for op, f in (("multiply", lambda: ev.multiply(ct, ct)),
                      ("multiply", lambda: ev.multiply(ct, ct, relinearize=False)),
                      ("square", lambda: ev.square(ct)),
                      ("multiply_plain", lambda: ev.multiply_plain(ct, c.enc.encode(x, level=0))),
                      ("multiply_plain", lambda: ev.multiply(ct, x)),
                      ("multiply_scalar", lambda: ev.multiply_scalar(ct, 0.5))):
            with pytest.raises(ScaleOutOfBoundsError, match=rf"^{op}: .*log2 Q_0 = 50\.0"):
                f()
        # what still works at level 0: additions, small integer multiples, rotations
        check_precision(c.decrypt(ev.add(ct, ct)), 2 * x, BOUND - 4, "add at level 0")
        check_precision(c.decrypt(ev.multiply_int(ct, 3)), 3 * x, BOUND - 4, "3·ct at level 0")
        check_precision(c.decrypt(ev.rotate(ct, 1)), np.roll(x, -1), BOUND - 4, "rotate at 0")

    def test_huge_constant(self, c, x):
        """rescale(multiply_scalar(ct, 1e30)) decoded to [1e17, -3.9e18] instead of ~[5e29, …]."""
        ct = c.encrypt(x)
        with pytest.raises(ScaleOutOfBoundsError, match=r"multiply_scalar: .*magnitude 1e\+30"):
            c.ev.multiply_scalar(ct, 1e30)
        with pytest.raises(ScaleOutOfBoundsError, match="multiply_int"):
            c.ev.multiply_int(ct, 10**40)
        with pytest.raises(ScaleOutOfBoundsError, match="add_scalar"):
            c.ev.add_scalar(ct, 1e45)  # 2^40 · 1e45 > Q_3/2 = 2^169

    def test_the_bound_is_tight(self, c, x):
        """Just inside the rule, a product by c decodes right for |x| <= 1; just outside, it
        raises: the rule rejects no result that could decode."""
        ct = c.encrypt(x)
        out_scale = ct.scale * c.params.scale(ct.level)
        limit = Fraction(c.params.ring(ct.level).Q, 2) / out_scale  # the largest |c| allowed
        ok = float(limit) * 0.9
        got = c.decrypt(c.ev.multiply_scalar(ct, ok)) / ok
        check_precision(got, x, BOUND - 4, "multiply_scalar at 0.9 of the bound")
        with pytest.raises(ScaleOutOfBoundsError):
            c.ev.multiply_scalar(ct, float(limit) * 1.01)

    def test_adjust_scale(self, c, x):
        ct = c.encrypt(x)
        with pytest.raises(ScaleOutOfBoundsError, match=r"adjust_scale: scale 2\^200"):
            c.ev.adjust_scale(ct, 2.0**200)  # decoded to zeros before
        with pytest.raises(ScaleOutOfBoundsError, match=r"adjust_scale: scale 2\^-10"):
            c.ev.adjust_scale(ct, 2.0**-10)
        with pytest.raises(OutOfLevelsError, match="adjust_scale"):
            c.ev.adjust_scale(_to_level0(c, ct), 2.0**40)
        # a target far below the ciphertext's scale needs an encoding scale below 1
        sq = c.ev.multiply(ct, ct)  # scale ~2^80, level 3
        with pytest.raises(ScaleOutOfBoundsError, match="rescale first"):
            c.ev.explicit().adjust_scale(sq, 2.0**20)
        # the automatic mode rescales the product first, then adjusts
        assert c.ev.adjust_scale(sq, 2.0**20).level == 1

    def test_rescale_below_scale_one(self, c, x):
        """A rescale without a multiplication divides a 2^40 scale by 2^40 or more."""
        ct = c.encrypt(x, scale=2**30)
        with pytest.raises(ScaleOutOfBoundsError, match=r"rescale: .*only after a multiplication"):
            c.ev.rescale(ct)

    def test_drop_level_checks_the_lower_modulus(self, c, x):
        sq = c.ev.multiply(c.encrypt(x), c.encrypt(x))  # scale ~2^80 fits level 3 (170 bits)
        with pytest.raises(ScaleOutOfBoundsError, match="drop_level"):
            c.ev.drop_level(sq, 0)                       # not level 0 (50 bits)
        with pytest.raises(ScaleOutOfBoundsError, match="drop_level"):
            c.ev.explicit().add(sq, c.encrypt(x, level=0))  # alignment drops too
        # the automatic mode rescales the product on the way down instead
        assert c.ev.add(sq, c.encrypt(x, level=0)).level == 0

    def test_encode_scales(self, c):
        with pytest.raises(ScaleOutOfBoundsError, match=r"encode: scale 2\^-996.* below 1"):
            c.enc.encode([0.5], scale=1e-300)
        with pytest.raises(ScaleOutOfBoundsError, match=r"encode: scale 2\^60"):
            c.enc.encode([0.5], level=0, scale=2**60)
        with pytest.raises(ScaleOutOfBoundsError, match="beyond Q/2"):
            c.enc.encode([1e6], level=0, scale=2**40)

    def test_default_chains_pass(self):
        """The rule leaves room for every preset's default chain: a product of two default
        scales at each level l >= 1, and a fresh encoding at level 0."""
        for name in ("N12", "N13", "N14", "N15", "N16"):
            p = CKKSParams.preset(name)
            for lv in range(1, p.depth + 1):
                p.check_scale(p.scale(lv) * p.scale(lv), lv, "multiply")
            p.check_scale(p.scale(0), 0, "encode")


# -- constructors --------------------------------------------------------------------------------
class TestConstructors:
    @pytest.mark.parametrize("scale", [0, -1, float("nan"), float("inf"), "2", True, None])
    def test_ciphertext_bad_scale(self, c, x, scale):
        ct = c.encrypt(x)
        with pytest.raises(ParameterError, match="Ciphertext: scale"):
            Ciphertext(ct.parts, scale, ct.level, c.params)

    def test_ciphertext_scale_out_of_bounds(self, c, x):
        ct = c.encrypt(x)
        with pytest.raises(ScaleOutOfBoundsError, match="Ciphertext"):
            Ciphertext(ct.parts, Fraction(1, 2), ct.level, c.params)
        low = c.ev.drop_level(ct, 0)
        with pytest.raises(ScaleOutOfBoundsError, match=r"Ciphertext: scale 2\^60"):
            Ciphertext(low.parts, 2**60, 0, c.params)

    @pytest.mark.parametrize("n", [0, 1, 4])
    def test_ciphertext_part_count(self, c, x, n):
        ct = c.encrypt(x)
        with pytest.raises(ParameterError, match=f"got {n} parts?$"):
            Ciphertext((ct.c0,) * n, ct.scale, ct.level, c.params)

    def test_ciphertext_bad_parts(self, c, x):
        ct = c.encrypt(x)
        with pytest.raises(ParameterError, match="part 1 must be a Poly, got NoneType"):
            Ciphertext((ct.c0, None), ct.scale, ct.level, c.params)
        with pytest.raises(RingMismatchError, match="ring of level 2"):
            Ciphertext(ct.parts, ct.scale, 2, c.params)
        with pytest.raises(DomainError, match="NTT"):
            Ciphertext((ct.c0.intt(), ct.c1), ct.scale, ct.level, c.params)
        other = Poly.const(0, c.params.ring(ct.level), "NTT", device="cpu")  # lazy: no compile
        with pytest.raises(DeviceError, match="'cpu'"):
            Ciphertext((ct.c0, other), ct.scale, ct.level, c.params)
        with pytest.raises(ParameterError, match="level"):
            Ciphertext(ct.parts, ct.scale, True, c.params)
        with pytest.raises(ParameterError, match="CKKSParams"):
            Ciphertext(ct.parts, ct.scale, ct.level, "params")
        ok = Ciphertext(list(ct.parts), int(ct.scale), ct.level, c.params)  # coerced, exact
        assert isinstance(ok.parts, tuple) and ok.scale == ct.scale

    def test_plaintext(self, c):
        pt = c.enc.encode([0.5])
        for bad in (0, float("nan"), "x"):
            with pytest.raises(ParameterError, match="Plaintext: scale"):
                Plaintext(pt.poly, bad, pt.level, c.params)
        with pytest.raises(ParameterError, match="Plaintext: poly must be a Poly"):
            Plaintext(None, pt.scale, pt.level, c.params)
        with pytest.raises(RingMismatchError):
            Plaintext(pt.poly, pt.scale, 0, c.params)

    def test_keys(self, c):
        sk, pk = c.keygen.secret_key(), c.encryptor.key
        with pytest.raises(ParameterError, match="secret_key must be a SecretKey"):
            KeyGenerator(c.params, secret_key=pk)  # failed later with an AttributeError
        with pytest.raises(ParameterError, match="must be a Poly"):
            type(sk)(None, c.params)
        with pytest.raises(RingMismatchError, match="key ring"):
            type(sk)(sk.poly.to_ring(c.params.ring(0)), c.params)
        rlk = c.ev.relin_key
        with pytest.raises(ParameterError, match="one per key-switching digit"):
            type(rlk)(rlk.b[:1] if len(rlk.b) > 1 else rlk.b * 2, rlk.a, c.params)


# -- specific errors instead of bare ones -------------------------------------------------------
class TestSpecificErrors:
    def test_wrong_key_with_a_modulus_over_1024_bits(self):
        """Decrypting with another key at log2 Q > 1024 (as the N16 preset) raised a bare
        OverflowError in the decoder; a huge but fitting scale overflowed a float too."""
        p = make_params(N=64, depth=21, scale_bits=50, first_bits=60, insecure=True)
        assert p.log2_Q > 1024
        enc = Encoder(p)
        with ren.random.seeded(11):
            sk1, sk2 = KeyGenerator(p).secret_key(), KeyGenerator(p).secret_key()
        x = np.linspace(-1, 1, 32)
        ct = Encryptor(p, sk1).encrypt(enc.encode(x))
        assert np.allclose(enc.decode(Decryptor(p, sk1).decrypt(ct)), x, atol=1e-6)
        with pytest.raises(DecodeOverflowError, match="secret key"):
            enc.decode(Decryptor(p, sk2).decrypt(ct))
        big = enc.encode(x, scale=2**1050)  # fits Q (about 2^1110): exact big-int encoding
        assert np.allclose(enc.decode(big), x, atol=1e-12)

    def test_bad_scale_arguments(self, c, x):
        ct = c.encrypt(x)
        for bad in (float("nan"), float("inf"), -1.0, 0, "2", None, True):
            with pytest.raises(ParameterError, match="adjust_scale: target_scale"):
                c.ev.adjust_scale(ct, bad)
        with pytest.raises(ParameterError, match="target_scale"):
            c.ev.multiply_scalar(ct, 0.5, target_scale=float("nan"))
        with pytest.raises(ParameterError, match="multiply_scalar: scale"):
            c.ev.multiply_scalar(ct, 0.5, scale=float("nan"))
        with pytest.raises(ScaleOutOfBoundsError, match="encoding scale"):
            c.ev.multiply_scalar(ct, 0.5, scale=0.5)

    def test_rotation_keys_needs_a_list(self, c):
        with pytest.raises(ParameterError, match=r"e\.g\. \[5\]"):
            c.keygen.rotation_keys(5)
        with pytest.raises(ParameterError, match="conjugate"):
            c.keygen.rotation_keys([1], conjugate="yes")

    def test_preset_with_unknown_field(self):
        with pytest.raises(ParameterError, match=r"unknown field.*foo"):
            CKKSParams.preset("N12", foo=1)
        with pytest.raises(ParameterError, match="unknown preset"):
            CKKSParams.preset(["N12"])

    @pytest.mark.parametrize("values", [[True, False], np.array([True]), True, ["1.5"]])
    def test_encode_refuses_bools_and_strings(self, c, values):
        with pytest.raises(ParameterError, match="values must be numbers"):
            c.enc.encode(values)

    def test_scale_mismatch_shows_the_difference(self, c, x):
        """Two scales one apart printed as "2^40.000000 vs 2^40.000000" before."""
        a = c.encrypt(x)
        b = c.encrypt(x, scale=a.scale + 1)
        with pytest.raises(ScaleMismatchError) as e:
            c.ev.explicit().add(a, b)
        msg = str(e.value)
        assert f"{a.scale} vs {b.scale}" in msg  # exact, not 2^40.000000 twice
        assert f"× (1 − {float(1 / b.scale):.3e})" in msg

    def test_loads_of_an_out_of_bounds_scale(self, c, x):
        ct = c.encrypt(x)
        assert ct.scale.denominator == 1
        num = str(ct.scale.numerator).encode()
        data = dumps(ct)[:-CHECKSUM_SIZE]
        meta = f'"scale":["{ct.scale.numerator}","1"]'.encode()
        assert data.count(meta) == 1
        body = data.replace(meta, b'"scale":["' + b"0" * (len(num) - 1) + b'1","3"]')  # 1/3
        with pytest.raises(SerializationError, match="below 1"):
            loads(body + hashlib.sha256(body).digest()[:CHECKSUM_SIZE], c.params)


# -- parameters -----------------------------------------------------------------------------------
class TestParams:
    def test_ring_degree_beyond_2_17(self):
        for N in (1 << 18, 1 << 20):
            with pytest.raises(ParameterError, match=r"2\^17"):
                make_params(N=N, depth=1, scale_bits=30, first_bits=31, insecure=True)

    def test_level_0_without_room_for_a_message(self):
        """first_bits = scale_bits + 1 would give a level 0 whose default scale cannot hold 1:
        CKKSParams refuses it (issue 38), naming the bound; scale_bits + 2 encodes at level 0."""
        with pytest.raises(ParameterError, match=r"first_bits must be an int in \[42, 248\]"):
            make_params(N=64, depth=2, scale_bits=40, first_bits=41, insecure=True)
        p = make_params(N=64, depth=2, scale_bits=40, first_bits=42, insecure=True)
        enc = Encoder(p)
        assert np.allclose(enc.decode(enc.encode([0.5], level=0))[0], 0.5)

    def test_insecure_must_be_a_bool(self):
        with pytest.raises(ParameterError, match="insecure"):
            CKKSParams(N=1 << 12, depth=1, scale_bits=30, first_bits=40, insecure="no")

    def test_infeasible_depth_is_rejected_from_a_bound(self):
        """depth=100 at N=2^14 took 8–19 s to fail, depth=1000 over 5 minutes: now a size bound
        (security) or a prime count rejects them before any search."""
        t = time.perf_counter()
        with pytest.raises(ParameterError, match=r"at least 3850.0 .*exceeds 438"):
            CKKSParams(N=1 << 14, depth=100)
        with pytest.raises(ParameterError, match=r"only 7 primes up to 2\^20.75.*depth <= 7"):
            make_params(N=1 << 14, depth=100, insecure=True)
        with pytest.raises(ParameterError, match="only 7 primes"):
            make_params(N=1 << 14, depth=1000, insecure=True)
        with pytest.raises(ParameterError, match="too deep"):
            make_params(N=1 << 14, depth=10**6, insecure=True)
        assert time.perf_counter() - t < 5  # very generous: it takes milliseconds

    def test_check_scale_states_the_rule(self):
        doc = inspect.getdoc(CKKSParams.check_scale)
        assert "1 <= scale" in doc and "Q_level / 2" in doc


# -- every evaluator method on the compiled "cpu" device -------------------------------------------
@pytest.fixture(scope="module")
def cpu():
    params = make_params(N=64, depth=2, scale_bits=40, first_bits=55, insecure=True,
                         device="cpu")
    with ren.random.seeded(5):
        kg = KeyGenerator(params)
        ev = Evaluator(params, kg.relin_key(), kg.rotation_keys(None, conjugate=True))
        pk = kg.public_key()
    enc = Encoder(params)
    return params, kg, ev, enc, Encryptor(params, pk), Decryptor(params, kg.secret_key())


def _rescaled_if_product(ev, ct):
    assert ev.is_unrescaled_product(ct)
    out = ev.rescale(ct)
    assert not ev.is_unrescaled_product(out)
    return out


def test_every_evaluator_method_on_cpu(cpu):
    """multiply_int(ct, 0) built its zero on "python" and decryption failed with "MUL: operands
    are on different devices"; every method's result must live on "cpu" and decrypt right."""
    params, kg, ev, enc, encryptor, dec = cpu
    rng = np.random.default_rng(2)
    x, y = rng.uniform(-1, 1, 32).astype(complex), rng.uniform(-1, 1, 32).astype(complex)
    cx, cy = encryptor.encrypt(enc.encode(x)), encryptor.encrypt(enc.encode(y))
    px = enc.encode(y, scale=cx.scale)
    for key in (kg.secret_key(), encryptor.key, ev.relin_key, *ev.rotation_keys.keys.values()):
        polys = (key.poly,) if hasattr(key, "poly") else (
            (key.b, key.a) if not isinstance(key.b, tuple) else key.b + key.a)
        assert all(p.device == "cpu" for p in polys), key
    d2 = params.scale(1)
    m = ev.rescale(ev.multiply(cx, cy))
    cases = {
        "add": (lambda: ev.add(cx, cy), x + y),
        "sub": (lambda: ev.sub(cx, cy), x - y),
        "negate": (lambda: ev.negate(cx), -x),
        "add_plain": (lambda: ev.add_plain(cx, px), x + y),
        "sub_plain": (lambda: ev.sub_plain(cx, px), x - y),
        "add_scalar": (lambda: ev.add_scalar(cx, 0.5 - 0.25j), x + 0.5 - 0.25j),
        "sub_scalar": (lambda: ev.sub_scalar(cx, 0.5), x - 0.5),
        "multiply": (lambda: ev.rescale(ev.multiply(cx, cy)), x * y),
        "square": (lambda: ev.rescale(ev.square(cx)), x * x),
        "multiply_plain": (lambda: ev.rescale(ev.multiply_plain(cx, enc.encode(y))), x * y),
        "multiply_scalar": (lambda: ev.rescale(ev.multiply_scalar(cx, 0.5 + 0.5j)),
                            (0.5 + 0.5j) * x),
        "multiply_int": (lambda: ev.multiply_int(cx, 0), 0 * x),
        "relinearize": (lambda: ev.rescale(ev.relinearize(ev.multiply(cx, cy, False))), x * y),
        "rescale": (lambda: m, x * y),
        "drop_level": (lambda: ev.drop_level(cx, 0), x),
        "align": (lambda: ev.align(cx, 1, d2), x),
        "adjust_scale": (lambda: ev.adjust_scale(cx, d2), x),
        "rotate": (lambda: ev.rotate(cx, 2), np.roll(x, -2)),
        "conjugate": (lambda: ev.conjugate(cx), np.conj(x)),
        "rotate_sum": (lambda: ev.rotate_sum(cx, 4), sum(np.roll(x, -i) for i in range(4))),
        "evaluate_polynomial": (lambda: ev.evaluate_polynomial(cx, [0.5, -1, 0.25, 0.5]),
                                0.5 - x + 0.25 * x * x + 0.5 * x ** 3),
        "rotate_hoisted": (lambda: ev.rotate_hoisted(cx, [1, 2])[2], np.roll(x, -2)),
        "linear_transform": (lambda: ev.linear_transform(cx, {0: [0.5], 1: [0.25]}),
                             0.5 * x + 0.25 * np.roll(x, -1)),
        "explicit": (lambda: ev.explicit().add(cx, cy), x + y),
        "check_ciphertext": (lambda: ev.check_ciphertext(cx), x),
        "is_unrescaled_product": (lambda: _rescaled_if_product(ev, ev.multiply(cx, cy)), x * y),
    }
    extra = {  # more paths of the same methods
        "multiply_int 3": (lambda: ev.multiply_int(cx, 3), 3 * x),
        "multiply ct·int 0": (lambda: ev.multiply(cx, 0), 0 * x),
        "multiply ct·vector": (lambda: ev.rescale(ev.multiply(cx, y)), x * y),
        "multiply_scalar target": (lambda: ev.rescale(ev.multiply_scalar(
            cx, -0.75, target_scale=d2)), -0.75 * x),
        "evaluate_polynomial chebyshev": (lambda: ev.evaluate_polynomial(
            cx, [0.1, 0.5], basis="chebyshev", interval=(-2, 2)), 0.1 + 0.25 * x),
        "add across levels": (lambda: ev.add(m, ev.adjust_scale(cx, m.scale)), x * y + x),
    }
    public = {n for n, f in inspect.getmembers(Evaluator, inspect.isfunction)
              if not n.startswith("_")}
    assert public == set(cases), "a new Evaluator method needs a case here"
    for label, (make, want) in {**cases, **extra}.items():
        out = make()
        assert all(p.device == "cpu" for p in out.parts), label
        check_precision(enc.decode(dec.decrypt(out)), want, BOUND - 6, f"{label} on cpu")
