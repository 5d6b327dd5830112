"""Every Evaluator operation against NumPy on random inputs in [-1, 1] (precision in bits), and
the errors the evaluator raises.  Small insecure rings (N = 64) keep this fast."""

from __future__ import annotations

import numpy as np
import pytest
from ckks_helpers import check_precision, context, random_slots

from ren.ckks import (
    Ciphertext,
    Encryptor,
    Evaluator,
    KeyGenerator,
    MissingKeyError,
    OutOfLevelsError,
    ParamsMismatchError,
    ScaleMismatchError,
)
from ren.errors import LevelError, ParameterError, RenError

BOUND = 25  # bits; fresh encryptions at N=64 with a 40-bit scale reach about 30


@pytest.fixture(scope="module")
def c():
    return context(N=64, depth=3)


@pytest.fixture
def xy():
    rng = np.random.default_rng()
    return random_slots(32, rng), random_slots(32, rng)


class TestEncryption:
    def test_public_and_secret_key_modes(self, c, xy):
        x, _ = xy
        for mode, e in (("public", c.encryptor), ("secret", c.sk_encryptor)):
            ct = e.encrypt(c.enc.encode(x))
            assert isinstance(ct, Ciphertext) and ct.size == 2 and ct.level == 3
            assert not ct.c0.is_realized  # lazy until decrypted
            check_precision(c.decrypt(ct), x, BOUND, f"fresh ({mode} key)")

    def test_fresh_randomness_per_encryption(self, c, xy):
        pt = c.enc.encode(xy[0])
        a, b = c.encryptor.encrypt(pt), c.encryptor.encrypt(pt)
        assert not np.array_equal(a.c1.numpy(), b.c1.numpy())

    def test_lower_level(self, c, xy):
        ct = c.encrypt(xy[0], level=1)
        assert ct.level == 1 and ct.c0.ring == c.params.ring(1)
        check_precision(c.decrypt(ct), xy[0], BOUND, "fresh at level 1")


class TestAddition:
    def test_ct_ct(self, c, xy):
        x, y = xy
        cx, cy = c.encrypt(x), c.encrypt(y)
        check_precision(c.decrypt(c.ev.add(cx, cy)), x + y, BOUND, "add ct+ct")
        check_precision(c.decrypt(c.ev.sub(cx, cy)), x - y, BOUND, "sub ct-ct")
        check_precision(c.decrypt(c.ev.negate(cx)), -x, BOUND, "negate")

    def test_ct_plain_scalar_vector(self, c, xy):
        x, y = xy
        cx, ev = c.encrypt(x), c.ev
        pt = c.enc.encode(y, scale=cx.scale)
        check_precision(c.decrypt(ev.add_plain(cx, pt)), x + y, BOUND, "add_plain")
        check_precision(c.decrypt(ev.sub_plain(cx, pt)), x - y, BOUND, "sub_plain")
        check_precision(c.decrypt(ev.add(cx, y)), x + y, BOUND, "add vector")
        check_precision(c.decrypt(ev.add_scalar(cx, 0.375)), x + 0.375, BOUND, "add_scalar real")
        check_precision(c.decrypt(ev.sub_scalar(cx, 0.5 - 0.25j)), x - (0.5 - 0.25j), BOUND,
                        "sub_scalar complex")
        check_precision(c.decrypt(ev.add(cx, -3)), x - 3, BOUND, "add int")
        assert ev.add_scalar(cx, 1e-30) is cx  # rounds to zero: nothing to add

    def test_level_alignment_by_view(self, c, xy):
        x, y = xy
        cx = c.encrypt(x)                       # level 3
        cy = c.encrypt(y, level=1, scale=cx.scale)  # same scale, lower level
        s = c.ev.add(cx, cy)
        assert s.level == 1
        check_precision(c.decrypt(s), x + y, BOUND, "add across levels")
        dropped = c.ev.drop_level(cx, 0)
        assert dropped.level == 0 and dropped.scale == cx.scale
        check_precision(c.decrypt(dropped), x, BOUND, "drop_level")

    def test_three_part_plus_two_part(self, c, xy):
        x, y = xy
        cx, cy = c.encrypt(x), c.encrypt(y)
        prod3 = c.ev.multiply(cx, cy, relinearize=False)
        other = c.encrypt(x * 0.5, scale=prod3.scale)
        s = c.ev.add(prod3, other)
        assert s.size == 3
        check_precision(c.decrypt(s), x * y + x * 0.5, BOUND, "size-3 + size-2")
        # the larger operand second: its extra part is added, or subtracted
        s = c.ev.add(other, prod3)
        assert s.size == 3
        check_precision(c.decrypt(s), x * 0.5 + x * y, BOUND, "size-2 + size-3")
        d = c.ev.sub(other, prod3)
        assert d.size == 3
        check_precision(c.decrypt(d), x * 0.5 - x * y, BOUND, "size-2 - size-3")

    def test_numbers_take_the_scalar_paths(self, c, xy):
        """A real number is a scalar (no plaintext is encoded): `add`/`multiply` build exactly
        the graph of `add_scalar`/`multiply_scalar`/`multiply_int` (nodes are hash-consed)."""
        cx, ev = c.encrypt(xy[0]), c.ev
        for general, specific in ((ev.add(cx, 0.375), ev.add_scalar(cx, 0.375)),
                                  (ev.sub(cx, 0.375), ev.sub_scalar(cx, 0.375)),
                                  (ev.multiply(cx, 2.5), ev.multiply_scalar(cx, 2.5)),
                                  (ev.multiply(cx, -3), ev.multiply_int(cx, -3))):
            assert general.scale == specific.scale
            assert all(g.node is s.node for g, s in zip(general.parts, specific.parts))

    def test_an_int_keeps_the_scale_a_float_multiplies_it(self, c, xy):
        """As `Evaluator.multiply` documents: 2 is exact, 2.0 is encoded at the level's scale."""
        cx, ev = c.encrypt(xy[0]), c.ev
        by_int, by_float = ev.multiply(cx, 2), ev.multiply(cx, 2.0)
        assert by_int.scale == cx.scale and by_int.level == cx.level
        assert by_float.scale == cx.scale * c.params.scale(cx.level)
        check_precision(c.decrypt(by_int), 2 * xy[0], BOUND, "multiply by int 2")
        check_precision(c.decrypt(ev.rescale(by_float)), 2 * xy[0], BOUND, "multiply by 2.0")


class TestMultiplication:
    def test_ct_ct_relin_rescale(self, c, xy):
        x, y = xy
        cx, cy = c.encrypt(x), c.encrypt(y)
        m = c.ev.multiply(cx, cy)
        assert m.size == 2 and m.scale == cx.scale * cy.scale
        r = c.ev.rescale(m)
        assert r.level == 2 and r.scale == m.scale / np.prod(c.params.rescale_moduli(3),
                                                             dtype=object)
        assert r.scale == c.params.scale(2)  # default-scale operands land on the next default
        check_precision(c.decrypt(r), x * y, BOUND, "multiply+relin+rescale")

    def test_without_relinearization_then_relinearize(self, c, xy):
        x, y = xy
        m3 = c.ev.multiply(c.encrypt(x), c.encrypt(y), relinearize=False)
        assert m3.size == 3
        check_precision(c.decrypt(c.ev.rescale(m3)), x * y, BOUND, "size-3 decrypt")
        m2 = c.ev.relinearize(m3)
        assert m2.size == 2
        check_precision(c.decrypt(c.ev.rescale(m2)), x * y, BOUND, "relinearize")

    def test_square(self, c, xy):
        x, _ = xy
        check_precision(c.decrypt(c.ev.rescale(c.ev.square(c.encrypt(x)))), x * x, BOUND,
                        "square")

    def test_ct_plain_scalar_int(self, c, xy):
        x, y = xy
        cx, ev = c.encrypt(x), c.ev
        check_precision(c.decrypt(ev.rescale(ev.multiply_plain(cx, c.enc.encode(y)))), x * y,
                        BOUND, "multiply_plain")
        check_precision(c.decrypt(ev.rescale(ev.multiply(cx, y))), x * y, BOUND, "ct·vector")
        check_precision(c.decrypt(ev.rescale(ev.multiply_scalar(cx, -0.7))), -0.7 * x, BOUND,
                        "multiply_scalar real")
        check_precision(c.decrypt(ev.rescale(ev.multiply(cx, 0.5 + 0.5j))), (0.5 + 0.5j) * x,
                        BOUND, "multiply_scalar complex")
        m = ev.multiply(cx, 3)
        assert m.scale == cx.scale and m.level == cx.level
        check_precision(c.decrypt(m), 3 * x, BOUND - 2, "multiply_int")
        assert ev.multiply_int(cx, 1) is cx
        zero = ev.multiply_int(cx, 0)
        assert np.max(np.abs(c.decrypt(zero))) == 0

    def test_target_scale_and_adjust_scale(self, c, xy):
        x, y = xy
        cx, cy = c.encrypt(x), c.encrypt(y)
        p2 = c.ev.rescale(c.ev.multiply(cx, cy))          # level 2, scale Δ_2
        with pytest.raises(ScaleMismatchError, match="adjust_scale"):
            c.ev.explicit().add(p2, cx)                   # Δ_3 at level 2 is not Δ_2
        t = c.ev.rescale(c.ev.multiply_scalar(cx, 0.25, target_scale=p2.scale))
        assert t.scale == p2.scale and t.level == 2
        check_precision(c.decrypt(c.ev.add(p2, t)), x * y + 0.25 * x, BOUND, "target_scale")
        a = c.ev.adjust_scale(cx, p2.scale)
        assert a.scale == p2.scale and a.level == 2
        check_precision(c.decrypt(c.ev.add(p2, a)), x * y + x, BOUND, "adjust_scale")

    def test_depth_circuit_and_out_of_levels(self, c, xy):
        """Repeated squaring down to level 0; a fresh encoding there has the same scale."""
        x = xy[0].real.astype(complex)
        ct, want = c.encrypt(x), x
        for _ in range(c.params.depth):
            ct, want = c.ev.rescale(c.ev.square(ct)), want * want
        assert ct.level == 0 and ct.scale == c.params.scale(0)
        check_precision(c.decrypt(ct), want, BOUND - 4, "depth-3 squaring chain")
        check_precision(c.decrypt(c.ev.add(ct, c.encrypt(x, level=0))), want + x, BOUND - 4,
                        "add fresh at level 0")
        with pytest.raises(OutOfLevelsError, match="level 0"):
            c.ev.rescale(ct)
        assert issubclass(OutOfLevelsError, LevelError)


class TestAutomorphisms:
    @pytest.mark.parametrize("k", [1, 2, 3, -1, 33, 0])
    def test_rotate(self, c, xy, k):
        x, _ = xy
        check_precision(c.decrypt(c.ev.rotate(c.encrypt(x), k)), np.roll(x, -k), BOUND,
                        f"rotate({k})")

    def test_rotate_at_lower_level(self, c, xy):
        x, _ = xy
        check_precision(c.decrypt(c.ev.rotate(c.encrypt(x, level=1), -1)), np.roll(x, 1), BOUND,
                        "rotate(-1) at level 1")

    def test_conjugate(self, c, xy):
        x, _ = xy
        check_precision(c.decrypt(c.ev.conjugate(c.encrypt(x))), np.conj(x), BOUND, "conjugate")

    def test_rotate_sum(self, c, xy):
        x, _ = xy
        total = c.decrypt(c.ev.rotate_sum(c.encrypt(x)))
        check_precision(total, np.full(32, x.sum()), BOUND - 5, "rotate_sum (slot total)")
        win = c.decrypt(c.ev.rotate_sum(c.encrypt(x), 4))
        want = sum(np.roll(x, -i) for i in range(4))
        check_precision(win, want, BOUND - 2, "rotate_sum n=4")
        with pytest.raises(ParameterError):
            c.ev.rotate_sum(c.encrypt(x), 3)


class TestErrors:
    def test_missing_rotation_key_names_the_step(self, c, xy):
        with pytest.raises(MissingKeyError, match="rotation step 5") as e:
            c.ev.rotate(c.encrypt(xy[0]), 5)
        assert "rotation_keys" in str(e.value) and isinstance(e.value, RenError)

    def test_missing_relin_and_galois_keys(self, c, xy):
        bare = Evaluator(c.params)
        cx = c.encrypt(xy[0])
        with pytest.raises(MissingKeyError, match="relin"):
            bare.multiply(cx, cx)
        assert bare.multiply(cx, cx, relinearize=False).size == 3
        with pytest.raises(MissingKeyError):
            bare.rotate(cx, 1)
        with pytest.raises(MissingKeyError):
            bare.conjugate(cx)

    def test_mismatched_parameters(self, c, xy):
        other = context(N=64, depth=2)
        a, b = c.encrypt(xy[0]), other.encrypt(xy[0])
        for f in (lambda: c.ev.add(a, b), lambda: c.ev.multiply(a, b), lambda: c.ev.rotate(b, 1),
                  lambda: c.dec.decrypt(b), lambda: c.encryptor.encrypt(other.enc.encode([1.0])),
                  lambda: Evaluator(c.params, relin_key=other.ev.relin_key),
                  lambda: Encryptor(c.params, other.keygen.secret_key()),
                  lambda: KeyGenerator(c.params, other.keygen.secret_key())):
            with pytest.raises(ParamsMismatchError):
                f()

    def test_keys_of_the_wrong_kind(self, c):
        rlk, gk = c.ev.relin_key, c.ev.rotation_keys
        for bad in (lambda: Evaluator(c.params, relin_key=gk),
                    lambda: Evaluator(c.params, rotation_keys=rlk),
                    lambda: Evaluator(c.params, relin_key="rlk")):
            with pytest.raises(ParameterError, match="must be a"):
                bad()

    def test_three_parts_need_relinearization(self, c, xy):
        cx = c.encrypt(xy[0])
        m3 = c.ev.multiply(cx, cx, relinearize=False)
        explicit = c.ev.explicit()
        with pytest.raises(ParameterError, match="relinearize"):
            explicit.rotate(m3, 1)
        with pytest.raises(ParameterError, match="relinearize"):
            explicit.multiply(m3, cx)
        # the automatic mode relinearizes (and rescales) first
        assert c.ev.rotate(m3, 1).size == 2 and c.ev.multiply(m3, cx).size == 2

    @pytest.mark.parametrize("bad", ["x", None, True, float("nan")])
    def test_bad_operands(self, c, xy, bad):
        cx = c.encrypt(xy[0])
        with pytest.raises(RenError):
            c.ev.multiply_scalar(cx, bad)
        with pytest.raises(RenError):
            c.ev.add("not a ciphertext", cx)

    def test_bad_levels(self, c, xy):
        cx = c.encrypt(xy[0], level=1)
        with pytest.raises(OutOfLevelsError):
            c.ev.drop_level(cx, 2)
        with pytest.raises(OutOfLevelsError):
            c.ev.multiply_scalar(c.ev.drop_level(cx, 0), 0.5, target_scale=2**40)
