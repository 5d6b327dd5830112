"""Linear transforms (`ren.ckks.circuits.lintrans`): the diagonal method with baby-step giant-step
and
hoisted rotations, against NumPy's M @ x; one level used, the output level's default scale
exactly; key-switching decompositions counted in the lazy graph (giant steps + 1).  Double
hoisting (the default) against single hoisting: tests/test_ckks_double_hoisting.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ckks_helpers import context, make_params, precision_bits

import ren
from ren.ckks import (
    Decryptor,
    Encoder,
    Encryptor,
    Evaluator,
    KeyGenerator,
    LinearTransform,
    MissingKeyError,
    OutOfLevelsError,
    ScaleMismatchError,
    plan_rotation_keys,
)
from ren.ckks.circuits.lintrans import (
    baby_steps_for,
    diagonals_of,
    giant_chains,
    horner_steps,
)
from ren.ckks.keyplan import placeholder
from ren.errors import ParameterError
from ren.ops import Op

N = 256  # 128 slots
STEPS = (*range(1, 9), *range(16, 64, 8), 127)


@pytest.fixture(scope="module")
def c():
    return context(N=N, depth=3, scale_bits=40, first_bits=55, steps=STEPS)


def mod_ups(ct) -> int:
    """Mod-ups (a TO_RING of an INTT onto Q·P) in the lazy graph of a ciphertext, less the lifts
    of double hoisting's P·c0 (`ren.rlwe.keyswitch.times_p`: the mod-up times the constant P)."""
    seen, stack, count, lifts = set(), [p.node for p in ct.parts], 0, set()
    qp = len(ct.params.special_moduli)
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.op is Op.TO_RING and n.src[0].op is Op.INTT:
            count += set(ct.params.special_moduli) <= set(n.arg.moduli) and qp > 0
        if n.op is Op.MUL and n.src[1].op is Op.AS_RING and n.src[1].src[0].op is Op.CONST \
                and n.src[0].op is Op.NTT and n.src[0].src[0].op is Op.TO_RING:
            lifts.add(id(n.src[0].src[0]))
        stack.extend(n.src)
    return count - len(lifts)


def decompositions(ct, level: int) -> int:
    digits = len(ct.params.digits_at(level))
    ups = mod_ups(ct)
    assert ups % digits == 0
    return ups // digits


def fresh(c, values):
    ct = c.encrypt(np.asarray(values, dtype=complex))
    ren.realize(list(ct.parts))  # the encryption's own conversions stay out of the counts
    return ct, c.decrypt(ct).real


def within_noise(c, got, want, plain, noisy, values, bits=1.5):
    """got is within `bits` of the plaintext result on the noisy input plus one fresh noise."""
    best = np.max(np.abs(plain - want)) + np.max(np.abs(noisy - values))
    lost = -math.log2(best) - precision_bits(got, want)
    assert lost <= bits, lost


def test_diagonals_of_a_matrix():
    m = np.arange(16).reshape(4, 4)
    d = diagonals_of(m, 8)
    assert sorted(d) == [0, 1, 2, 3]
    assert list(d[1].real) == [1, 6, 11, 12] * 2  # M[j][(j+1) mod 4], repeated
    assert 2 not in diagonals_of(np.eye(4) + np.eye(4, k=1), 4)
    assert [baby_steps_for(list(range(n)), 8192) for n in (1, 2, 16, 64, 128, 8192)] == [
        8192, 8192, 4, 8, 16, 128]
    assert baby_steps_for([0, 1, 8191], 8192) == 8192  # scattered: every rotation hoisted


def test_dense_matrix_against_numpy(c):
    """A dense 64×64 matrix on a vector repeated twice in the 128 slots."""
    rng = np.random.default_rng(1)
    n, slots = 64, c.params.slots
    m, x = rng.uniform(-1, 1, (n, n)), rng.uniform(-1, 1, n)
    values = np.tile(x, slots // n)
    ct, noisy = fresh(c, values)
    lt = LinearTransform(c.params, m)
    assert lt.baby_steps == 8 and lt.decompositions == 8
    # the 7 giant steps (8, 16, ..., 56) in Horner order: 7 rotations by the one key 8
    assert lt.rotation_steps == [*range(1, 8), 8]
    out = c.ev.linear_transform(ct, lt)
    assert out.level == ct.level - 1 and out.scale == c.params.scale(out.level)
    assert decompositions(out, ct.level) == 8  # 7 giant steps + 1 for the hoisted babies
    got = c.decrypt(out)
    want, plain = np.tile(m @ x, 2), np.tile(m @ noisy[:n], 2)
    within_noise(c, got, want, plain, noisy, values)
    np.testing.assert_allclose(lt.matrix(n), m)
    unhoisted = c.ev.linear_transform(ct, lt, hoisted=False)
    assert decompositions(unhoisted, ct.level) == 7 + 7
    assert precision_bits(c.decrypt(unhoisted), got) > 28
    # the result adds to a default-scale ciphertext at its level with no adjustment
    other = c.ev.drop_level(c.encrypt(values.astype(complex), scale=out.scale), out.level)
    assert precision_bits(c.decrypt(c.ev.add(out, other)), want + values) > 25


def test_horner_chains_sum_the_giant_steps():
    """Σ_g rot_(g·n1)(v_g) on plain NumPy vectors: the Horner chains of `giant_chains`, rotated
    by `horner_steps`, give the sum of the giant steps each rotated by its own step."""
    rng = np.random.default_rng(3)
    slots, n1 = 64, 4
    giants = [0, 1, 2, 5, 13, 14, 15]  # 13..15 are -3..-1 (beyond slots/2)
    up, down = giant_chains(giants, n1, slots)
    assert up == [0, 1, 2, 5] and down == [-1, -2, -3]
    assert horner_steps(up, n1) == [12, 4, 4] and horner_steps(down, n1) == [-4, -4, -4]
    v = {g: rng.uniform(-1, 1, slots) for g in giants}
    want = sum(np.roll(v[g], -g * n1) for g in giants)  # rot_k: slot j gets slot j + k
    got = np.zeros(slots)
    for chain in (up, down):
        run = None
        for g, step in zip(chain[::-1], [0, *horner_steps(chain, n1)], strict=False):
            run = v[g % (slots // n1)] if run is None else np.roll(run, -step) + v[g % 16]
        if chain[0]:
            run = np.roll(run, -chain[0] * n1)
        got += run
    np.testing.assert_allclose(got, want)
    assert giant_chains([0, 1, 2], 3, 64) == ([0, 1, 2], [])  # n1 ∤ slots: one chain


def test_giant_steps_by_few_keys(c):
    """A banded matrix (diagonals −20..20) on all 128 slots, n1 = 8: the giant steps ±8, ±16,
    ... are Horner rotations by the two keys 8 and −8 (not one key each), with as many
    decompositions as before; the result matches NumPy within the noise."""
    rng = np.random.default_rng(4)
    slots = c.params.slots
    m = np.zeros((slots, slots))
    for k in range(-20, 21):
        m += np.diag(rng.uniform(-0.2, 0.2, slots - abs(k)), k)
    x = rng.uniform(-1, 1, slots)
    ct, noisy = fresh(c, x)
    lt = LinearTransform(c.params, m, baby_steps=8)
    assert sorted(lt.plaintexts) == [0, 1, 2, 13, 14, 15]
    assert lt.rotation_steps == [*range(1, 8), 8, slots - 8]  # not 16, 104, 112
    assert lt.decompositions == 1 + 5  # the babies, then one per giant step g ≥ 1
    with ren.random.seeded(9):  # only the transform's keys: a missing one would raise
        ev = Evaluator(c.params, c.ev.relin_key, c.keygen.rotation_keys(lt.rotation_steps))
    out = ev.linear_transform(ct, lt)
    assert decompositions(out, ct.level) == 6
    within_noise(c, c.decrypt(out), m @ x, m @ noisy, noisy, x)
    double = ev.linear_transform(ct, lt, hoisted="double")  # its Q·P diagonals made now
    within_noise(c, c.decrypt(double), m @ x, m @ noisy, noisy, x)


def test_single_hoisting_keeps_the_q_rows_only(c):
    """A single-hoisted transform stores its diagonals on Q (K/L fewer words than on Q·P);
    applied double-hoisted it encodes them on Q·P then, and gives the very words of a transform
    prepared for double hoisting."""
    rng = np.random.default_rng(5)
    m = rng.uniform(-1, 1, (32, 32))
    single = LinearTransform(c.params, m, baby_steps=4)
    double = LinearTransform(c.params, m, baby_steps=4, hoisting="double")
    L, K = c.params.limbs(single.level), len(c.params.special_moduli)
    assert single.nbytes * (L + K) == double.nbytes * L
    assert not single.extended and len(double.extended) == 8
    ct, _ = fresh(c, np.tile(rng.uniform(-1, 1, 32), c.params.slots // 32))
    a = c.ev.linear_transform(ct, single, hoisted="double")
    b = c.ev.linear_transform(ct, double)
    assert all(np.array_equal(x.numpy(), y.numpy()) for x, y in zip(a.parts, b.parts,
                                                                      strict=True))
    assert single.nbytes * (L + K) == double.nbytes * L  # (the Q·P copies are not counted)


def test_hoisting_saves_decompositions(c):
    """Unhoisted, the same rotations make one decomposition each."""
    ct, _ = fresh(c, np.linspace(-1, 1, c.params.slots))
    steps = [1, 2, 3, 5, 7]
    hoisted = c.ev.rotate_hoisted(ct, [0, *steps])
    assert hoisted[0] is ct
    for k in steps:
        assert decompositions(hoisted[k], ct.level) == 1
    together = ren.ckks.Ciphertext(
        (sum((hoisted[k].c0 for k in steps[1:]), hoisted[1].c0),
         sum((hoisted[k].c1 for k in steps[1:]), hoisted[1].c1)), ct.scale, ct.level, c.params)
    assert decompositions(together, ct.level) == 1
    single = [c.ev.rotate(ct, k) for k in steps]
    assert sum(decompositions(s, ct.level) for s in single) == len(steps)
    # and the two give the same slots
    for k, s in zip(steps, single, strict=True):
        a, b = c.decrypt(hoisted[k]), c.decrypt(s)
        assert precision_bits(a, b) > 28
        assert precision_bits(a, np.roll(np.linspace(-1, 1, c.params.slots), -k)) > 28


def test_diagonals_dict(c):
    """A tridiagonal (cyclic) operator given by its diagonals, -1 meaning slots − 1, and a short
    diagonal repeated."""
    rng = np.random.default_rng(2)
    slots = c.params.slots
    values = rng.uniform(-1, 1, slots)
    ct, noisy = fresh(c, values)
    a, b = rng.uniform(-1, 1, slots), rng.uniform(-1, 1, slots)
    diags = {0: a, 1: b, -1: [0.5, -0.25]}
    lt = LinearTransform(c.params, diags)
    assert lt.baby_steps == slots and lt.rotation_steps == [1, slots - 1]  # two hoisted
    assert lt.decompositions == 1
    out = c.ev.linear_transform(ct, diags)
    def apply(v):
        return a * v + b * np.roll(v, -1) + np.tile([0.5, -0.25], slots // 2) * np.roll(v, 1)
    within_noise(c, c.decrypt(out), apply(values), apply(noisy), noisy, values)


def test_key_planner_sees_the_transform(c):
    lt = LinearTransform(c.params, np.random.default_rng(3).uniform(-1, 1, (64, 64)))
    plan = plan_rotation_keys(lambda ev, ct: ev.linear_transform(ct, lt), c.params)
    assert sorted(plan.steps) == lt.rotation_steps
    assert sum(plan.uses.values()) == 7 + 7  # 7 hoisted babies, 7 giant steps
    # a transform prepared inside the traced function is traced too (no realization)
    inner = plan_rotation_keys(lambda ev, ct: ev.linear_transform(ct, np.eye(4)), c.params)
    assert inner.steps == ()


@pytest.mark.parametrize("hoisting", ["single", "double"])
def test_a_transform_under_the_jit(c, hoisting):
    """Captured once, replayed with the same words; the prepared diagonals are realized at
    preparation (double hoisting: on Q·P, a plaintext's poly reads their limbs of Q; single
    hoisting: on Q alone, as it never reads the special primes' rows), so the plan only reads
    them."""
    lt = LinearTransform(c.params, np.random.default_rng(6).uniform(-1, 1, (16, 16)),
                         baby_steps=8, hoisting=hoisting)
    stored = lt.diagonal_polys
    assert len(stored) == len(lt.diagonals) == 16
    assert all(ren.realization.is_realized(p.node) for p in stored)
    rows = c.params.limbs(lt.level) + (len(c.params.special_moduli) if hoisting == "double"
                                       else 0)
    assert all(p.ring.limbs == rows for p in stored)
    assert lt.nbytes == 16 * rows * c.params.N * 4
    for g, group in lt.plaintexts.items():
        for b, pt in group.items():
            view = pt.poly.node
            if hoisting == "double":
                assert view.op is Op.TO_RING and view.src[0] is lt.extended[g][b].node
            else:
                assert not lt.extended and pt.poly.ring == c.params.ring(lt.level)
    fn = ren.jit(lambda ct: c.ev.linear_transform(ct, lt))
    x = np.random.default_rng(7).uniform(-1, 1, c.params.slots)
    ct1, ct2 = c.encrypt(x.astype(complex)), c.encrypt((x / 2).astype(complex))
    eager = c.ev.linear_transform(ct2, lt)
    fn(ct1)
    replayed = fn(ct2)
    assert all(np.array_equal(a.numpy(), b.numpy())
               for a, b in zip(replayed.parts, eager.parts, strict=True))


def test_a_transform_at_a_lower_level_and_scale(c):
    """Prepared for another level and input scale (a product, not rescaled)."""
    rng = np.random.default_rng(4)
    slots = c.params.slots
    x = rng.uniform(-1, 1, slots)
    sq = c.ev.square(c.encrypt(x.astype(complex)))  # level 3, scale Δ²
    lt = LinearTransform(c.params, {0: np.full(slots, 2.0), 3: np.ones(slots)}, level=3,
                         input_scale=sq.scale)
    out = c.ev.linear_transform(sq, lt)
    assert out.level == 2 and out.scale == c.params.scale(2)
    assert precision_bits(c.decrypt(out), 2 * x * x + np.roll(x * x, -3)) > 25
    low = c.ev.drop_level(c.encrypt(x.astype(complex)), 1)
    with pytest.raises(OutOfLevelsError, match="prepared for level 3"):
        c.ev.linear_transform(low, lt)
    with pytest.raises(ScaleMismatchError, match=r"input_scale=ct\.scale"):
        c.ev.linear_transform(c.encrypt(x.astype(complex)), lt)


def test_bad_inputs_say_what_is_wrong(c):
    p = c.params
    with pytest.raises(ParameterError, match="square"):
        LinearTransform(p, np.ones((4, 8)))
    with pytest.raises(ParameterError, match="must divide the slot count"):
        LinearTransform(p, np.ones((3, 3)))
    with pytest.raises(ParameterError, match="the matrix is zero"):
        LinearTransform(p, np.zeros((4, 4)))
    with pytest.raises(ParameterError, match="every diagonal is zero"):
        LinearTransform(p, {0: np.zeros(4)})
    with pytest.raises(ParameterError, match="entries"):
        LinearTransform(p, {0: np.ones(3)})
    with pytest.raises(ParameterError, match="ints"):
        LinearTransform(p, {0.5: np.ones(4)})
    with pytest.raises(ParameterError, match="same diagonal"):
        LinearTransform(p, {-1: np.ones(4), p.slots - 1: np.ones(4)})
    with pytest.raises(ParameterError, match="non-finite"):
        LinearTransform(p, {0: [np.nan] * 4})
    with pytest.raises(ParameterError, match="numbers"):
        LinearTransform(p, np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises(ParameterError, match="baby_steps"):
        LinearTransform(p, np.eye(4), baby_steps=0)
    with pytest.raises(OutOfLevelsError, match="level 0"):
        LinearTransform(p, np.eye(4), level=0)
    with pytest.raises(ParameterError, match="CKKSParams"):
        LinearTransform(None, np.eye(4))
    with pytest.raises(ParameterError, match="steps must be ints"):
        c.ev.rotate_hoisted(placeholder(p), [1.5])


def test_missing_rotation_key_is_named():
    params = make_params(N=64, depth=2, scale_bits=40, first_bits=55, insecure=True)
    with ren.random.seeded(3):
        kg = KeyGenerator(params)
        ev = Evaluator(params, kg.relin_key(), kg.rotation_keys([1]))
        ct = Encryptor(params, kg.public_key()).encrypt(Encoder(params).encode([1.0]))
    with pytest.raises(MissingKeyError, match="rotation step 2"):
        ev.rotate_hoisted(ct, [1, 2])
    with pytest.raises(MissingKeyError, match="rotation step"):
        ev.linear_transform(ct, np.ones((4, 4)))
    assert Decryptor(params, kg.secret_key())  # the key set itself is fine


def test_dense_transform_at_n_2_14():
    """The issue's size: N = 2^14 (8192 slots), a dense 128×128 matrix repeated 64 times."""
    n = 128
    params = make_params(N=1 << 14, depth=3, scale_bits=40, first_bits=55, insecure=True)
    lt_steps = LinearTransform(params, np.ones((n, n))).rotation_steps
    with ren.random.seeded(4):
        kg = KeyGenerator(params)
        ev = Evaluator(params, kg.relin_key(), kg.rotation_keys(lt_steps))
        enc, encryptor = Encoder(params), Encryptor(params, kg.public_key())
    dec = Decryptor(params, kg.secret_key())
    rng = np.random.default_rng(5)
    m, x = rng.uniform(-1, 1, (n, n)), rng.uniform(-1, 1, n)
    values = np.tile(x, params.slots // n)
    with ren.random.seeded(6):  # (the loss varies with the noise: 0.9-1.5 bits over runs)
        ct = encryptor.encrypt(enc.encode(values.astype(complex)))
    noisy = enc.decode(dec.decrypt(ct)).real
    out = ev.linear_transform(ct, LinearTransform(params, m))
    got = enc.decode(dec.decrypt(out))
    want = np.tile(m @ x, params.slots // n)
    plain = np.tile(m @ noisy[:n], params.slots // n)
    best = np.max(np.abs(plain - want)) + np.max(np.abs(noisy - values))
    lost = -math.log2(best) - precision_bits(got, want)
    print(f"[ckks precision] dense {n}x{n} at N=2^14: {precision_bits(got, want):.2f} bits, "
          f"{lost:.2f} below the plaintext product on the noisy input plus fresh noise")
    assert lost <= 1.5
