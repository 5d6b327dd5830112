"""Issue 38, the Evaluator: auto mode aligns plaintexts as it aligns ciphertexts (every result
against NumPy, precision in bits), `align` brings a ciphertext to a level and scale, and every
public method's non-ciphertext arguments are checked (a RenError subclass naming the method)."""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pytest
from ckks_helpers import check_precision, context

import ren
from ren.ckks import (
    Ciphertext,
    Evaluator,
    OutOfLevelsError,
    ParamsMismatchError,
    Plaintext,
    ScaleMismatchError,
    ScaleOutOfBoundsError,
)
from ren.errors import ParameterError, RenError

BOUND = 25


@pytest.fixture(scope="module")
def c():
    return context(N=64, depth=4, scale_bits=40, first_bits=55)


@pytest.fixture(scope="module")
def other():
    return context(N=64, depth=3, scale_bits=40, first_bits=55)


@pytest.fixture(scope="module")
def xyz():
    rng = np.random.default_rng(38)
    return [rng.uniform(-1, 1, 32) for _ in range(3)]


def words(pt: Plaintext) -> Plaintext:
    """The same plaintext known only by its words (as after decryption or deserialization)."""
    out = Plaintext(pt.poly, pt.scale, pt.level, pt.params)
    assert out.values is None
    return out


# -- a Plaintext remembers what it encodes --------------------------------------------------------
def test_a_plaintext_remembers_its_values_until_its_words_change(c, xyz):
    x = xyz[0]
    pt = c.enc.encode(x[:5])
    assert np.array_equal(pt.values, np.concatenate([x[:5], np.zeros(27)]))
    assert not pt.values.flags.writeable
    assert np.array_equal(c.enc.encode(0.25).values, np.full(32, 0.25))
    low = c.ev.drop_level(pt, 1)  # the same message at a lower level
    assert low.level == 1 and np.array_equal(low.values, pt.values)
    changed = c.enc.encode(x)
    changed.scale = changed.scale * 2
    assert changed.values is None  # the words no longer encode those values at that scale


# -- auto mode: ciphertext ± plaintext ------------------------------------------------------------
@pytest.mark.parametrize("known", [True, False], ids=["values", "words"])
def test_product_plus_plaintext_at_a_lower_level(c, xyz, known):
    """`_add_plain` compared levels before rescaling the product: OutOfLevelsError."""
    x, y, z = xyz
    prod = c.ev.multiply(c.encrypt(x), c.encrypt(y))  # level 4, unrescaled
    pt = c.enc.encode(z, level=3)
    pt = pt if known else words(pt)
    out = c.ev.add(prod, pt)
    assert out.level == 3 and out.scale == pt.scale
    check_precision(c.decrypt(out), x * y + z, BOUND, "product + plaintext one level lower")
    out = c.ev.sub(prod, pt)
    check_precision(c.decrypt(out), x * y - z, BOUND, "product - plaintext one level lower")


@pytest.mark.parametrize("known", [True, False], ids=["values", "words"])
def test_ciphertext_plus_plaintext_from_a_higher_level(c, xyz, known):
    """A level-2 ciphertext plus a top-level plaintext was a ScaleMismatchError; two ciphertexts
    at those levels just work, and so does this now, at the ciphertext's level and scale."""
    x, y, z = xyz
    ct = c.ev.rescale(c.ev.multiply(c.ev.multiply(c.encrypt(x), c.encrypt(y)), c.encrypt(z)))
    assert ct.level == 2
    pt = c.enc.encode(z)  # top level, Δ_4
    pt = pt if known else words(pt)
    for op, want in ((c.ev.add, x * y * z + z), (c.ev.sub, x * y * z - z),
                     (c.ev.add_plain, x * y * z + z), (c.ev.sub_plain, x * y * z - z)):
        out = op(ct, pt)
        assert (out.level, out.scale) == (ct.level, ct.scale)
        check_precision(c.decrypt(out), want, BOUND, f"{op.__name__}: level 2 + top plaintext")


@pytest.mark.parametrize("known", [True, False], ids=["values", "words"])
def test_product_plus_plaintext_at_its_level(c, xyz, known):
    x, y, z = xyz
    prod = c.ev.multiply(c.encrypt(x), c.encrypt(y))
    pt = c.enc.encode(z)  # the product's level, the level's default scale
    out = c.ev.add(prod, pt if known else words(pt))
    assert out.level == 3 and out.scale == c.params.scale(3)  # rescaled, as for ciphertexts
    check_precision(c.decrypt(out), x * y + z, BOUND, "product + plaintext at its level")
    exact = c.ev.add(prod, c.enc.encode(z, scale=prod.scale))  # equal: added as they are
    assert (exact.level, exact.scale) == (prod.level, prod.scale)


def test_same_level_other_scale(c, xyz):
    """Values re-encode for free; words reach an integer multiple for free; anything else costs
    a level, as for two ciphertexts; at level 0, the explicit error."""
    x, y, _ = xyz
    ct = c.encrypt(x)
    odd = c.enc.encode(y, scale=c.params.scale(4) * Fraction(3, 2))
    out = c.ev.add(ct, odd)  # from the values
    assert (out.level, out.scale) == (4, ct.scale)
    check_precision(c.decrypt(out), x + y, BOUND, "re-encoded plaintext")
    out = c.ev.sub(ct, words(odd))  # words, ratio 2/3: a level
    assert (out.level, out.scale) == (3, c.params.scale(3))
    check_precision(c.decrypt(out), x - y, BOUND, "plaintext words, other scale")
    quarter = words(c.enc.encode(y, scale=ct.scale / 4))  # ratio 4: an integer product
    out = c.ev.add(ct, quarter)
    assert (out.level, out.scale) == (4, ct.scale)
    check_precision(c.decrypt(out), x + y, BOUND - 4, "plaintext words ×4")
    low = c.ev.drop_level(ct, 0)
    with pytest.raises(ScaleMismatchError, match=r"add_plain: the operands' scales differ"):
        c.ev.add(low, words(c.enc.encode(y, level=0, scale=low.scale * Fraction(3, 2))))
    out = c.ev.add(low, c.enc.encode(y, level=0, scale=low.scale * Fraction(3, 2)))
    check_precision(c.decrypt(out), x + y, BOUND - 4, "level 0, re-encoded")


def test_explicit_mode_keeps_the_strict_errors(c, xyz):
    x, y, _ = xyz
    ct = c.ev.rescale(c.ev.multiply(c.encrypt(x), c.encrypt(y)))
    with pytest.raises(ScaleMismatchError, match="add_plain"):
        c.ev.explicit().add(ct, c.enc.encode(y))
    with pytest.raises(ScaleMismatchError, match="sub_plain"):
        c.ev.explicit().sub_plain(ct, c.enc.encode(y))


# -- auto mode: ciphertext × plaintext ------------------------------------------------------------
@pytest.mark.parametrize("known", [True, False], ids=["values", "words"])
def test_multiply_plain_meets_levels_like_a_ciphertext(c, xyz, known):
    """Operands at different levels meet at the lower level with its scale, so a rescaled
    product has the next level's default scale (it drifted before: Δ_3·Δ_4/P_3)."""
    x, y, z = xyz
    ct = c.ev.rescale(c.ev.multiply(c.encrypt(x), c.encrypt(y)))  # (3, Δ_3)
    pt = c.enc.encode(z)  # (4, Δ_4)
    pt = pt if known else words(pt)
    out = c.ev.rescale(c.ev.multiply(ct, pt))
    assert (out.level, out.scale) == (2, c.params.scale(2))
    check_precision(c.decrypt(out), x * y * z, BOUND, "ct(3) × pt(4)")
    low = c.enc.encode(z, level=2)  # the plaintext lower: the ciphertext meets it, for free
    out = c.ev.rescale(c.ev.multiply_plain(c.encrypt(x), low if known else words(low)))
    assert (out.level, out.scale) == (1, c.params.scale(1))
    check_precision(c.decrypt(out), x * z, BOUND, "ct(4) × pt(2)")


def test_multiply_by_a_vector_after_a_product(c, xyz):
    x, y, z = xyz
    prod = c.ev.multiply(c.encrypt(x), c.encrypt(y))
    out = c.ev.rescale(c.ev.multiply(prod, z))  # encoded at level 4, met at level 3
    assert (out.level, out.scale) == (2, c.params.scale(2))
    check_precision(c.decrypt(out), x * y * z, BOUND, "product × vector")
    explicit = c.ev.explicit().multiply_plain(c.ev.rescale(prod), c.enc.encode(z))
    assert explicit.scale == c.params.scale(3) * c.params.scale(4)  # explicit: a view, no more


def test_plaintext_words_under_the_jit(c, xyz):
    """Inside the JIT a plaintext argument is its words (no values are baked into the plan):
    replaying with another plaintext gives that plaintext's sum."""
    x, y, z = xyz
    fn = ren.jit(lambda a, p: c.ev.add(a, p))
    ct = c.ev.rescale(c.ev.multiply(c.encrypt(x), c.encrypt(y)))
    fn(ct, c.enc.encode(x))
    out = fn(ct, c.enc.encode(z))
    check_precision(c.decrypt(out), x * y + z, BOUND, "jit: ct + plaintext words")


# -- align: a ciphertext at a level and scale ------------------------------------------------------
def test_align(c, xyz):
    x, y, _ = xyz
    ct = c.encrypt(x)
    low = c.ev.align(ct, 2)  # a view, same scale
    assert (low.level, low.scale) == (2, ct.scale)
    out = c.ev.align(ct, 2, c.params.scale(2))  # free: integer product and rescale from level 3
    assert (out.level, out.scale) == (2, c.params.scale(2))
    check_precision(c.decrypt(out), x, BOUND, "align to (2, Δ_2)")
    prod = c.ev.multiply(ct, c.encrypt(y))  # auto: rescaled first
    out = c.ev.align(prod, 2, c.params.scale(2))
    assert (out.level, out.scale) == (2, c.params.scale(2))
    check_precision(c.decrypt(out), x * y, BOUND, "align a product")
    triple = c.ev.align(ct, 4, ct.scale * 3)  # its own level: an integer multiple is exact
    assert triple.scale == ct.scale * 3
    check_precision(c.decrypt(triple), x, BOUND, "align ×3")
    assert c.ev.align(ct) is ct
    with pytest.raises(ScaleMismatchError, match=r"align: .*integer multiple.*adjust_scale"):
        c.ev.align(ct, 4, ct.scale * Fraction(3, 2))
    with pytest.raises(OutOfLevelsError, match=r"align: .*level 2 .*level 3"):
        c.ev.align(low, 3)
    with pytest.raises(ParameterError, match="align: level must be an int"):
        c.ev.align(ct, 1.0)
    with pytest.raises(ParameterError, match="align: scale must be"):
        c.ev.align(ct, 1, float("nan"))


# -- messages -------------------------------------------------------------------------------------
def test_scale_mismatch_messages_show_scales_that_differ(c, xyz):
    """Long scales printed as 2^40.000000 twice before."""
    ct = c.encrypt(xyz[0])
    tiny = Fraction(1, 3 ** 150)  # a long Fraction (over 60 digits), a relative 1e-84
    a = Ciphertext(ct.parts, ct.scale + tiny, ct.level, ct.params)
    with pytest.raises(ScaleMismatchError) as e:
        c.ev.explicit().add(a, ct)
    shown = re.search(r"differ: (\S+) vs (\S+)", str(e.value))
    assert shown and shown.group(1) != shown.group(2), str(e.value)
    assert "1 + " in str(e.value)


# -- arguments ------------------------------------------------------------------------------------
def test_rotate_hoisted_checks_steps(c, xyz):
    ct = c.encrypt(xyz[0])
    for bad, what in ((None, "a list or tuple"), (5, "a list or tuple"), ("12", "a list"),
                      ([1.5], r"steps\[0\] must be an int"), ([1, None], r"steps\[1\]"),
                      ([True], "must be an int")):
        with pytest.raises(ParameterError, match=rf"rotate_hoisted: .*{what}"):
            c.ev.rotate_hoisted(ct, bad)
    out = c.ev.rotate_hoisted(ct, (np.int64(1), 2))
    check_precision(c.decrypt(out[1]), np.roll(xyz[0], -1), BOUND, "hoisted numpy step")


def _bad_calls(c, other, x):
    ct, pt, ev = c.encrypt(x), c.enc.encode(x), c.ev
    nan, inf = float("nan"), float("inf")
    P, L, M, S = ParameterError, OutOfLevelsError, ParamsMismatchError, ScaleOutOfBoundsError
    return [
        (lambda: Evaluator(c.params, mode=None), P, "Evaluator: mode must be one of"),
        (lambda: Evaluator(None), P, "Evaluator: params must be a CKKSParams"),
        (lambda: Evaluator(c.params, relin_key=ct), P, "relin_key must be a RelinKey"),
        (lambda: ev.add(pt, ct), P, "add: the first operand must be a Ciphertext.*put the "),
        (lambda: ev.add(ct, None), P, "add: the second operand must be"),
        (lambda: ev.add(ct, "1"), P, "add: the second operand must be"),
        (lambda: ev.add(ct, True), P, "add: the constant must be a finite"),
        (lambda: ev.sub(ct, nan), P, "sub: the constant must be a finite"),
        (lambda: ev.add(ct, other.encrypt(x)), M, "add: the second operand"),
        (lambda: ev.add(ct, other.enc.encode(x)), M, "add_plain: the plaintext"),
        (lambda: ev.add_plain(ct, x), P, "add_plain: the plaintext must be a Plaintext"),
        (lambda: ev.add_scalar(ct, ct), P, "add_scalar: the constant must be a finite"),
        (lambda: ev.sub_scalar(ct, inf), P, "sub_scalar: the constant must be a finite"),
        (lambda: ev.negate(None), P, "negate: the ciphertext must be a Ciphertext"),
        (lambda: ev.multiply(ct, inf), P, "multiply_scalar: the constant must be a finite"),
        (lambda: ev.multiply(ct, None), P, "multiply: the second operand must be"),
        (lambda: ev.multiply(ct, ct, relinearize=None), P, "multiply: relinearize must be "
                                                           "True or False"),
        (lambda: ev.multiply(ct, ct, relinearize="no"), P, "relinearize must be True or False"),
        (lambda: ev.square(ct, relinearize=1), P, "square: relinearize must be True or False"),
        (lambda: ev.square(pt), P, "square: the ciphertext must be a Ciphertext"),
        (lambda: ev.multiply_plain(ct, other.enc.encode(x)), M, "multiply_plain: the plaintext"),
        (lambda: ev.multiply_plain(ct, ct), P, "multiply_plain: the plaintext must be a Plain"),
        (lambda: ev.multiply_int(ct, 2.0), P, "multiply_int: k must be an int"),
        (lambda: ev.multiply_int(ct, 10 ** 100), S, "multiply_int"),
        (lambda: ev.multiply_scalar(ct, None), P, "multiply_scalar: the constant must be"),
        (lambda: ev.multiply_scalar(ct, 0.5, scale=-1), P, "multiply_scalar: scale must be"),
        (lambda: ev.multiply_scalar(ct, 0.5, target_scale=inf), P, "target_scale must be"),
        (lambda: ev.relinearize(x), P, "relinearize: the ciphertext must be a Ciphertext"),
        (lambda: ev.rescale("ct"), P, "rescale: the ciphertext must be a Ciphertext"),
        (lambda: ev.drop_level(None, 1), P, "drop_level: x must be a Ciphertext or Plaintext"),
        (lambda: ev.drop_level(other.encrypt(x), 1), M, "drop_level"),
        (lambda: ev.drop_level(ct, "3"), P, "drop_level: level must be an int"),
        (lambda: ev.drop_level(ct, 2.0), P, "drop_level: level must be an int"),
        (lambda: ev.drop_level(ct, -1), L, "drop_level: cannot move from level 4 to -1"),
        (lambda: ev.drop_level(ct, 10 ** 30), L, "pick a level in \\[0, 4\\]"),
        (lambda: ev.adjust_scale(ct, 0), P, "adjust_scale: target_scale must be positive"),
        (lambda: ev.adjust_scale(ct, nan), P, "adjust_scale: target_scale must be finite"),
        (lambda: ev.rotate(ct, 1.0), P, "rotate: k must be an int"),
        (lambda: ev.rotate(ct, None), P, "rotate: k must be an int"),
        (lambda: ev.rotate(None, 1), P, "rotate: the ciphertext must be a Ciphertext"),
        (lambda: ev.conjugate(pt), P, "conjugate: the ciphertext must be a Ciphertext"),
        (lambda: ev.rotate_sum(ct, 3), P, "rotate_sum: n must be a power of two"),
        (lambda: ev.rotate_sum(ct, 0), P, "rotate_sum: n must be"),
        (lambda: ev.rotate_sum(ct, 64), P, "rotate_sum: n must be"),
        (lambda: ev.rotate_sum(x, 2), P, "rotate_sum: the ciphertext must be a Ciphertext"),
        (lambda: ev.linear_transform(ct, {0: [1.0]}, hoisted=None), P,
         "linear_transform: hoisted must be True or False"),
        (lambda: ev.evaluate_polynomial(None, [1.0]), P, "evaluate_polynomial: the ciphertext"),
    ]


def test_every_bad_argument_is_a_ren_error_naming_the_method(c, other, xyz):
    failures = []
    for i, (call, error, message) in enumerate(_bad_calls(c, other, xyz[0])):
        try:
            call()
        except RenError as e:
            if not isinstance(e, error) or not re.search(message, str(e)):
                failures.append(f"#{i}: {type(e).__name__}: {e} (wanted {error.__name__}, "
                                f"{message!r})")
        except Exception as e:  # the point of the test: no bare exception
            failures.append(f"#{i}: bare {type(e).__name__}: {e}")
        else:
            failures.append(f"#{i}: no error (wanted {message!r})")
    assert not failures, "\n".join(failures)


def test_numpy_integers_are_ints(c, xyz):
    x = xyz[0]
    ct = c.encrypt(x)
    assert c.ev.drop_level(ct, np.int64(2)).level == 2
    out = c.ev.adjust_scale(ct, np.int64(2 ** 40))
    assert out.scale == 2 ** 40
    check_precision(c.decrypt(out), x, BOUND, "adjust_scale to a numpy int")
    assert c.ev.multiply_scalar(ct, 0.5, scale=np.int64(2 ** 30)).scale == ct.scale * 2 ** 30
    check_precision(c.decrypt(c.ev.rotate_sum(ct, np.int64(2))), x + np.roll(x, -1), BOUND,
                    "rotate_sum, numpy n")
