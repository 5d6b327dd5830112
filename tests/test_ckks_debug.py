"""`ren.ckks.debug`: the precision meter (per operation against a plaintext shadow, checked
against decrypting each intermediate directly) and the level/scale budget (traced, no kernel)."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
from ckks_helpers import context, precision_bits

import ren
from ren.ckks import OutOfLevelsError
from ren.ckks.debug import SHADOWS, LevelBudgetError, budget, precision
from ren.ckks.evaluator import Evaluator
from ren.errors import ParameterError


@pytest.fixture(scope="module")
def c():
    return context(N=64, depth=4, scale_bits=40, first_bits=55)


def _line(fn, text: str) -> int:
    """The line number of `text` inside function `fn`'s source."""
    src, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(src) if text in line)


def program(ev, a, b):
    p = ev.multiply(a, b)
    q = ev.rescale(p)
    r = ev.multiply_int(q, 1000)  # the big loss: 1000 times the error
    s = ev.add(r, a)
    return ev.rotate(s, 1)


def test_precision_meter_rows_agree_with_direct_decryption(c):
    rng = np.random.default_rng(1)
    x, y = rng.uniform(-1, 1, 32), rng.uniform(-1, 1, 32)
    with ren.random.seeded(3):
        report = precision(program, x, y, evaluator=c.ev, secret_key=c.keygen.secret_key())
    ops = [s.op for s in report.steps]
    assert ops == ["input", "input", "multiply", "rescale", "multiply_int", "add", "rotate"]
    want = [x, y, x * y, x * y, 1000 * x * y, 1000 * x * y + x, np.roll(1000 * x * y + x, -1)]
    for s, w in zip(report.steps, want, strict=True):
        direct = precision_bits(c.decrypt(s.ciphertext), w)  # independent of the shadow
        assert abs(s.bits - direct) <= 0.5, (s.op, s.bits, direct)
    # levels and scales as the evaluator left them
    assert [s.level for s in report.steps] == [4, 4, 4, 3, 3, 3, 3]
    assert report.steps[3].rescaled and not report.steps[4].rescaled
    assert report.steps[2].log2_scale == pytest.approx(2 * report.steps[0].log2_scale)
    # the largest loss is the ×1000, about log2(1000) bits, at the user's line
    worst = report.worst
    assert worst.op == "multiply_int" and abs(worst.lost - math.log2(1000)) < 1
    assert worst.where.endswith(f"test_ckks_debug.py:{_line(program, 'multiply_int')}")
    assert "ev.multiply_int(q, 1000)" in worst.code
    text = str(report)
    assert "largest loss: step 4 (multiply_int)" in text and "(rescaled)" in text


def test_every_evaluator_operation_has_a_shadow():
    public = {n for n, f in inspect.getmembers(Evaluator, inspect.isfunction)
              if not n.startswith("_")}
    # (explicit and the circuits' checks are no operations: nothing to shadow)
    assert public - {"explicit", "check_ciphertext", "is_unrescaled_product"} == set(SHADOWS)


def test_shadows_of_the_programs(c):
    """Polynomials, transforms, hoisted rotations, plaintext operands: the meter's shadows."""
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, 32)

    def fn(ev, a):
        pt = c.enc.encode(x, scale=a.scale)
        b = ev.add(a, pt)
        h = ev.rotate_hoisted(b, [1, 2])
        p = ev.evaluate_polynomial(h[2], [0.1, 0.5, 0.25])
        return ev.linear_transform(p, {0: [1.0], 3: [0.5]})

    with ren.random.seeded(4):
        report = precision(fn, x, evaluator=c.ev, secret_key=c.keygen.secret_key())
    assert [s.op for s in report.steps] == ["input", "add", "rotate_hoisted[1]",
                                           "rotate_hoisted[2]", "evaluate_polynomial",
                                           "linear_transform"]
    h2 = np.roll(2 * x, -2)
    p = 0.1 + 0.5 * h2 + 0.25 * h2 * h2
    want = p + 0.5 * np.roll(p, -3)
    assert abs(report.steps[-1].bits - precision_bits(c.decrypt(report.steps[-1].ciphertext),
                                                      want)) <= 0.5
    assert report.steps[-1].bits > 20


def test_precision_checks_its_arguments(c):
    with pytest.raises(ParameterError, match="secret_key must be a SecretKey"):
        precision(program, [0.5], [0.5], evaluator=c.ev, secret_key=None)
    with pytest.raises(ParameterError, match="evaluator must be an Evaluator"):
        precision(program, [0.5], [0.5], evaluator=None, secret_key=c.keygen.secret_key())


def test_budget_traces_levels_without_kernels(c):
    def fn(ev, a):
        b = ev.rescale(ev.multiply(a, a))
        return ev.rescale(ev.multiply(b, b))

    report = budget(fn, c.params)
    assert [(s.op, s.level) for s in report.steps] == [
        ("input", 4), ("multiply", 4), ("rescale", 3), ("multiply", 3), ("rescale", 2)]
    assert report.levels_used == 2 and not report.measured
    assert [s.rescaled for s in report.steps] == [False, False, True, False, True]
    assert "2 of 4 level(s) used" in str(report)


def deep(ev, a):
    for _ in range(4):
        a = ev.rescale(ev.multiply(a, a))
    return ev.rescale(ev.multiply(a, a))  # the fifth product: level 0 has nothing to rescale


def test_a_program_one_level_too_deep_raises_naming_the_line(c):
    with pytest.raises(LevelBudgetError) as e:
        budget(deep, c.params)
    msg = str(e.value)
    assert f"test_ckks_debug.py:{_line(deep, 'the fifth product')}" in msg
    assert "depth 4" in msg and "larger depth" in msg
    assert isinstance(e.value, OutOfLevelsError)  # a handler of the general class still works
    # four products fit exactly
    four = budget(lambda ev, a: [a := ev.rescale(ev.square(a)) for _ in range(4)], c.params)
    assert four.levels_used == 4 and four.steps[-1].level == 0
    with pytest.raises(LevelBudgetError):
        budget(deep, c.params, 3)  # starting lower runs out sooner


def test_budget_refuses_to_run_kernels(c):
    def reads(ev, a):
        return c.decrypt(ev.multiply(a, a))

    with pytest.raises(ren.ckks.KeyPlanError, match="without running kernels"):
        budget(reads, c.params)


def test_every_shadow_matches_the_operation(c):
    """Each operation's shadow is its plaintext meaning: the meter measures > 20 bits for it
    (a wrong shadow measures about 0)."""
    rng = np.random.default_rng(9)
    x, y = rng.uniform(-1, 1, 32), rng.uniform(-1, 1, 32)
    ops = {
        "add": lambda ev, a, b: ev.add(a, b),
        "sub": lambda ev, a, b: ev.sub(a, b),
        "add_plain": lambda ev, a, b: ev.add_plain(a, c.enc.encode(y, scale=a.scale)),
        "sub_plain": lambda ev, a, b: ev.sub_plain(a, c.enc.encode(y, scale=a.scale)),
        "add_scalar": lambda ev, a, b: ev.add_scalar(a, 0.25),
        "sub_scalar": lambda ev, a, b: ev.sub_scalar(a, 0.25),
        "negate": lambda ev, a, b: ev.negate(a),
        "multiply": lambda ev, a, b: ev.multiply(a, b),
        "square": lambda ev, a, b: ev.square(a),
        "multiply_plain": lambda ev, a, b: ev.multiply_plain(a, c.enc.encode(y)),
        "multiply_scalar": lambda ev, a, b: ev.multiply_scalar(a, 0.75),
        "multiply_int": lambda ev, a, b: ev.multiply_int(a, 3),
        "relinearize": lambda ev, a, b: ev.relinearize(ev.multiply(a, b, relinearize=False)),
        "rescale": lambda ev, a, b: ev.rescale(ev.multiply(a, b)),
        "drop_level": lambda ev, a, b: ev.drop_level(a, 1),
        "align": lambda ev, a, b: ev.align(a, 1, c.params.scale(1)),
        "adjust_scale": lambda ev, a, b: ev.adjust_scale(a, c.params.scale(3)),
        "rotate": lambda ev, a, b: ev.rotate(a, 1),
        "conjugate": lambda ev, a, b: ev.conjugate(ev.add_scalar(a, 0.5j)),
        "rotate_sum": lambda ev, a, b: ev.rotate_sum(a, 4),
        "rotate_hoisted": lambda ev, a, b: ev.rotate_hoisted(a, [2])[2],
        "evaluate_polynomial": lambda ev, a, b: ev.evaluate_polynomial(
            a, [0.1, 0.5, 0.25], basis="chebyshev", interval=(-2, 2)),
        "linear_transform": lambda ev, a, b: ev.linear_transform(a, {0: [1.0], 1: [0.5]}),
    }
    assert set(ops) == set(SHADOWS)
    for name, op in ops.items():
        with ren.random.seeded(10):
            report = precision(op, x, y, evaluator=c.ev, secret_key=c.keygen.secret_key())
        assert report.steps[-1].bits > 20, (name, report.steps[-1].bits)
    power = precision(lambda ev, a: ev.evaluate_polynomial(a, [0.1, 0.5, 0.25]), x,
                      evaluator=c.ev, secret_key=c.keygen.secret_key())
    assert power.steps[-1].bits > 20
    from ren.ckks import LinearTransform

    lt = LinearTransform(c.params, np.eye(4) + np.eye(4, k=1))  # a prepared transform object
    prepared = precision(lambda ev, a: ev.linear_transform(a, lt), x, evaluator=c.ev,
                         secret_key=c.keygen.secret_key())
    assert prepared.steps[-1].bits > 20


# -- issue 38: the meter's and the budget's arguments are checked (found by tests/api_fuzz.py) ---
@pytest.mark.parametrize("fn", [None, "program", 1.5])
def test_the_program_must_be_callable(c, fn):
    """Before: a bare TypeError from calling it."""
    with pytest.raises(ParameterError, match="precision: fn must be callable"):
        precision(fn, [0.5], evaluator=c.ev, secret_key=c.keygen.secret_key())
    with pytest.raises(ParameterError, match="budget: fn must be callable"):
        budget(fn, c.params)


@pytest.mark.parametrize("bad", ["x", {}, [0.5, "x"], object(), np.zeros((2, 2)), [[0.5]],
                                 [0.1] * 100])
def test_inputs_are_ciphertexts_or_slot_values(c, bad):
    """Before: ValueError/TypeError from NumPy ("could not convert string to complex", "must be
    real number, not dict"); a string or a nested list was not refused as such."""
    with pytest.raises(ParameterError, match="precision: input 1 must be a Ciphertext or slot "
                                             "values"):
        precision(program, [0.5], bad, evaluator=c.ev, secret_key=c.keygen.secret_key())


def test_a_plaintext_input_is_its_values(c):
    x = [0.5, -0.25]
    report = precision(lambda ev, a: ev.negate(a), c.enc.encode(x), evaluator=c.ev,
                       secret_key=c.keygen.secret_key())
    assert report.steps[-1].bits > 20
