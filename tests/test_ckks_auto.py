"""The Evaluator's automatic mode (the default): operands at different levels and scales meet
exactly, products are rescaled and relinearized when next needed, and no level is lost where a
free correction exists; the explicit mode keeps every choice with the caller."""

from __future__ import annotations

import numpy as np
import pytest
from ckks_helpers import check_precision, context

import ren
from ren.ckks import Evaluator, ScaleMismatchError
from ren.errors import ParameterError

BOUND = 25


@pytest.fixture(scope="module")
def c():
    return context(N=64, depth=4, scale_bits=40, first_bits=55)


@pytest.fixture(scope="module")
def xyz():
    rng = np.random.default_rng(3)
    return [rng.uniform(-1, 1, 32) for _ in range(3)]


def test_the_default_is_auto_and_the_modes_are_checked(c):
    assert c.ev.mode == "auto" and c.ev.explicit().mode == "explicit"
    assert c.ev.explicit().explicit() is not c.ev
    with pytest.raises(ParameterError, match="mode must be one of"):
        Evaluator(c.params, mode="fast")


def test_default_scales_drift_between_levels(c):
    """The premise: each level has its own default scale, so level-(l-1) and level-l
    ciphertexts cannot simply be added."""
    scales = [c.params.scale(lv) for lv in range(c.params.depth + 1)]
    assert len(set(scales)) == len(scales)


def test_adding_across_levels_costs_no_level(c, xyz):
    x, y, _ = xyz
    cx, cy = c.encrypt(x), c.encrypt(y)
    prod = c.ev.rescale(c.ev.multiply(cx, cy))  # level 3, scale Δ_3
    with pytest.raises(ScaleMismatchError):
        c.ev.explicit().add(prod, cx)  # Δ_4 at level 3 is not Δ_3
    out = c.ev.add(prod, cx)
    assert out.level == prod.level and out.scale == prod.scale
    check_precision(c.decrypt(out), x * y + x, BOUND, "auto add across levels")
    out = c.ev.sub(cx, prod)  # either order
    assert out.level == prod.level
    check_precision(c.decrypt(out), x - x * y, BOUND, "auto sub across levels")


def test_products_are_rescaled_when_next_needed(c, xyz):
    """No rescale call anywhere: (x·y)·z + x, and x·y + z."""
    x, y, z = xyz
    cx, cy, cz = (c.encrypt(v) for v in xyz)
    xy = c.ev.multiply(cx, cy)  # unrescaled: level 4, scale ~Δ²
    assert xy.level == cx.level
    xyz_ = c.ev.multiply(xy, cz)  # xy rescaled first; cz meets it at level 3 for free
    assert xyz_.level == cx.level - 1
    out = c.ev.add(xyz_, cx)
    assert out.level == cx.level - 2  # two products: two levels, nothing more
    check_precision(c.decrypt(out), x * y * z + x, BOUND, "auto (x*y)*z + x")
    out = c.ev.add(xy, cz)
    assert out.level == cx.level - 1 and out.scale == c.params.scale(out.level)
    check_precision(c.decrypt(out), x * y + z, BOUND, "auto x*y + z")
    # a sum of unrescaled products at one level and scale stays unrescaled (one rescale later)
    s = c.ev.add(xy, c.ev.multiply(cx, cz))
    assert s.level == cx.level and s.scale == xy.scale


def test_a_product_of_operands_at_different_levels_keeps_default_scales(c, xyz):
    x, y, _ = xyz
    cx, cy = c.encrypt(x), c.encrypt(y)
    low = c.ev.rescale(c.ev.multiply(cx, cx))  # level 3, Δ_3
    prod = c.ev.rescale(c.ev.multiply(low, cy))  # cy meets low at (3, Δ_3) for free
    assert prod.level == 2 and prod.scale == c.params.scale(2)
    check_precision(c.decrypt(prod), x * x * y, BOUND, "auto product across levels")
    explicit = c.ev.explicit().rescale(c.ev.explicit().multiply(low, cy))
    assert explicit.scale != c.params.scale(2)  # the explicit mode drifts


def test_same_level_different_scales_cost_one_level(c, xyz):
    x, y, _ = xyz
    a = c.encrypt(x)
    b = c.encrypt(y, scale=c.params.scale(4) * 3)
    out = c.ev.add(a, b)
    assert out.level == 3 and out.scale == c.params.scale(3)
    check_precision(c.decrypt(out), x + y, BOUND, "auto add, same level, other scale")
    with pytest.raises(ScaleMismatchError):  # level 0: nothing to adjust with
        lo = c.ev.drop_level(a, 0)
        c.ev.add(lo, c.ev.drop_level(c.encrypt(y, scale=a.scale * 2), 0))


def test_plaintexts_and_size3_ciphertexts(c, xyz):
    x, y, _ = xyz
    cx = c.encrypt(x)
    pt = c.enc.encode(y, level=2)  # a lower level's default scale
    out = c.ev.add(cx, pt)  # cx reaches (2, Δ_2) for free
    assert out.level == 2
    check_precision(c.decrypt(out), x + y, BOUND, "auto add_plain across levels")
    m3 = c.ev.multiply(cx, cx, relinearize=False)
    rot = c.ev.rotate(m3, 1)  # relinearized (and rescaled) first
    check_precision(c.decrypt(rot), np.roll(x * x, -1), BOUND, "auto rotate of a size-3")
    hoisted = c.ev.rotate_hoisted(m3, [1, 2])
    check_precision(c.decrypt(hoisted[2]), np.roll(x * x, -2), BOUND, "auto hoisted size-3")


def test_algorithms_accept_unrescaled_inputs(c, xyz):
    """evaluate_polynomial and linear_transform rescale a product input first."""
    x, y, _ = xyz
    xy = c.ev.multiply(c.encrypt(x), c.encrypt(y))
    sq = c.ev.evaluate_polynomial(xy, [0.5, 0, 1])
    check_precision(c.decrypt(sq), 0.5 + (x * y) ** 2, BOUND - 2, "auto polynomial of x*y")
    lt = c.ev.linear_transform(xy, {0: [2.0], 1: [1.0]})
    check_precision(c.decrypt(lt), 2 * x * y + np.roll(x * y, -1), BOUND, "auto transform")


def test_the_same_words_under_the_jit(c, xyz):
    x, y, z = xyz
    fn = ren.jit(lambda a, b, d: c.ev.add(c.ev.multiply(c.ev.multiply(a, b), d), a))
    cts = [c.encrypt(v) for v in xyz]
    eager = c.ev.add(c.ev.multiply(c.ev.multiply(cts[0], cts[1]), cts[2]), cts[0])
    fn(*[c.encrypt(v / 2) for v in xyz])
    replay = fn(*cts)
    assert all(np.array_equal(a.numpy(), b.numpy())
               for a, b in zip(replay.parts, eager.parts, strict=True))
    check_precision(c.decrypt(replay), x * y * z + x, BOUND, "auto under the jit")
