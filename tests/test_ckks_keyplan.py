"""The rotation-key planner (`ren.ckks.keyplan`): the steps a function uses, found by tracing
it; their keys' bytes equal the serialized keys; the generated keys are exactly enough."""

from __future__ import annotations

import numpy as np
import pytest
from ckks_helpers import check_precision, make_params

import ren
from ren.ckks import (
    Decryptor,
    Encoder,
    Encryptor,
    Evaluator,
    KeyGenerator,
    KeyPlanError,
    dumps,
    plan_rotation_keys,
)
from ren.ckks.keyplan import placeholder
from ren.errors import ParameterError

P = make_params(N=64, depth=3, scale_bits=40, first_bits=55, insecure=True)


@pytest.fixture(scope="module")
def keygen():
    with ren.random.seeded(11):
        return KeyGenerator(P)


@pytest.mark.parametrize("k", range(1, 6))
def test_rotate_sum_needs_exactly_the_powers_of_two_below_its_width(k):
    plan = plan_rotation_keys(lambda ev, ct: ev.rotate_sum(ct, 1 << k), P)
    assert set(plan.steps) == {1 << i for i in range(k)} and len(plan.steps) == k
    assert not plan.conjugate and plan.count == k
    assert plan.uses == {1 << i: 1 for i in range(k)}


def test_the_byte_count_is_the_serialized_size_of_the_keys(keygen):
    def fn(ev, ct):
        return ev.conjugate(ev.add(ev.rotate(ct, 3), ev.rotate(ct, -1)))

    plan = plan_rotation_keys(fn, P)
    assert plan.steps == (3, P.slots - 1) and plan.conjugate and plan.count == 3
    keys = plan.generate(keygen)
    assert sorted(keys.keys) == sorted(plan.galois_elements)
    assert plan.nbytes == sum(len(dumps(key)) for key in keys.keys.values())


def test_the_generated_keys_are_enough_to_run_the_function(keygen):
    def fn(ev, ct):
        return ev.add(ev.rotate_sum(ct, 8), ev.rotate(ct, 5))

    plan = plan_rotation_keys(fn, P)
    ev = Evaluator(P, rotation_keys=plan.generate(keygen))
    x = np.random.default_rng(3).uniform(-1, 1, P.slots).astype(complex)
    with ren.random.seeded(12):
        ct = Encryptor(P, keygen.secret_key()).encrypt(Encoder(P).encode(x))
    got = Encoder(P).decode(Decryptor(P, keygen.secret_key()).decrypt(fn(ev, ct)))
    want = sum(np.roll(x, -i) for i in range(8)) + np.roll(x, -5)
    check_precision(got, want, 20, "planned keys")


def test_power_of_two_suggestion_states_the_extra_key_switches():
    def fn(ev, ct):
        for k in (3, 5, 6, 7):
            ct = ev.rotate(ct, k)
        return ev.rotate(ct, 3)  # step 3 used twice

    plan = plan_rotation_keys(fn, P)
    alt = plan.power_of_two()
    assert alt.steps == (1, 2, 4)
    # 3 = 1+2 twice, 5 = 1+4, 6 = 2+4, 7 = 1+2+4: one extra switch per extra bit per use
    assert alt.extra_key_switches == 2 * 1 + 1 + 1 + 2
    assert alt.nbytes < plan.nbytes
    text = plan.summary()
    assert "4 Galois key(s)" in text and "suggestion: the powers of two [1, 2, 4]" in text
    assert "6 extra key switch(es)" in text


def test_no_suggestion_when_powers_of_two_do_not_help():
    plan = plan_rotation_keys(lambda ev, ct: ev.rotate(ct, 1), P)
    assert "suggestion" not in plan.summary()


def test_planning_runs_no_kernels():
    def reads(ev, ct):
        return ev.rotate(ct, 1).c0.coefficients()

    with pytest.raises(KeyPlanError, match="planner traces without running kernels"):
        plan_rotation_keys(reads, P)


def test_inputs_are_ciphertexts_or_levels():
    seen = []

    def fn(ev, a, b):
        seen.extend((a.level, b.level))
        return ev.add(ev.rotate(a, 2), ev.rotate(b, 2))

    plan = plan_rotation_keys(fn, P, 1, placeholder(P, 1))
    assert seen == [1, 1] and plan.uses == {2: 2}
    with pytest.raises(KeyPlanError, match="params must be CKKSParams"):
        plan_rotation_keys(fn, "N13")


def test_level_checks_still_apply():
    def too_deep(ev, ct):
        for _ in range(P.depth + 1):
            ct = ev.rescale(ev.multiply(ct, ct))
        return ct

    with pytest.raises(ren.LevelError):  # a product at level 0 does not fit its modulus
        plan_rotation_keys(too_deep, P)


def test_generate_refuses_another_key_generator():
    other = make_params(N=64, depth=2, scale_bits=40, first_bits=55, insecure=True)
    plan = plan_rotation_keys(lambda ev, ct: ev.rotate(ct, 1), P)
    with ren.random.seeded(1), pytest.raises(ren.ParameterError, match="other parameters"):
        plan.generate(KeyGenerator(other))


def test_the_explicit_view_records_into_the_same_plan():
    """Algorithms built on the evaluator run its explicit view; their rotations and
    conjugations count."""
    plan = plan_rotation_keys(lambda ev, ct: ev.explicit().conjugate(ev.explicit().rotate(ct, 3)),
                              P)
    assert plan.steps == (3,) and plan.conjugate


# -- issue 38: the planner's arguments are checked (found by tests/api_fuzz.py) -----------------
@pytest.mark.parametrize("fn", [None, "rotate", 3, [lambda ev, x: x]])
def test_the_function_must_be_callable(fn):
    """Before: a bare TypeError ("'str' object is not callable") from inside the trace."""
    with pytest.raises(KeyPlanError, match="plan_rotation_keys: fn must be callable"):
        plan_rotation_keys(fn, P)


def test_generate_checks_the_key_generator_and_progress(keygen):
    """Before: AttributeError ("'str' object has no attribute 'params'"), and NumPy's
    ambiguous-truth ValueError for progress=array."""
    plan = plan_rotation_keys(lambda ev, x: ev.rotate(x, 1), P)
    with pytest.raises(ParameterError, match=r"KeyPlan\.generate: keygen must be a KeyGenerator"):
        plan.generate("keygen")
    with pytest.raises(ParameterError, match="rotation_keys: progress must be True or False"):
        plan.generate(keygen, progress=np.zeros(2))


@pytest.mark.parametrize("args, match", [
    (("params", (1,), False), r"KeyPlan: params must be a CKKSParams"),
    ((P, ("x",), False), r"KeyPlan: steps\[0\] must be an int in \[1, 31\]"),
    ((P, (0,), False), r"KeyPlan: steps\[0\] must be an int in \[1, 31\]"),
    ((P, 5, False), r"KeyPlan: steps must be a list or tuple"),
    ((P, (1,), "no"), r"KeyPlan: conjugate must be True or False"),
    ((P, (1,), False, {1: -1}), r"KeyPlan: uses\[1\] must be an int >= 0"),
])
def test_a_hand_written_plan_is_checked(args, match):
    """Before: KeyPlan took anything, so KeyPlan(P, (1,), "no").generate(keygen) made the
    conjugation key as well (a truthy string) and KeyPlan(P, (0,), False) counted a key for
    step 0."""
    from ren.ckks import KeyPlan

    with pytest.raises(ParameterError, match=match):
        KeyPlan(*args)
