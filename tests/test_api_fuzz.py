"""Issue 38, "one checker, not many": every public callable of ren.ckks, ren.rlwe,
ren.distributed, the bootstrapping, the CKKS debug tools and ren.bfv (BFV, BGV, their
serialization and noise-budget meter), called with bad arguments, raises a RenError (or accepts
the value) within a time bound.  The fuzzer and its registry of valid
baseline calls live in tests/api_fuzz.py (see its docstring).

    python -m pytest tests/test_api_fuzz.py -q -p no:cacheprovider          # CI subset
    python -m pytest tests/test_api_fuzz.py -q -p no:cacheprovider -m slow  # the whole table,
                                                                            # then hypothesis

On one core: the CI subset ~2,700 calls in about 5 s (plus a few seconds for the fixtures and
a one-worker Dask cluster); the slow run ~12,800 calls in about 20 s, then 50 hypothesis
examples per callable (HYPOTHESIS_PROFILE=thorough: 1000) in about 20 s.  A call that runs
into the 5 s bound adds its 5 s (and a worker restart for ren.distributed).
"""

from __future__ import annotations

import math
from fractions import Fraction

import api_fuzz as af
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

TARGETS, SKIPPED = af.public_targets()
NAMES = [t.name for t in TARGETS]


@pytest.fixture(scope="module")
def fx():
    fixtures = af.Fixtures()
    yield fixtures
    fixtures.close()


def test_every_public_callable_has_a_baseline():
    """A new public function (or method, or class) needs a valid call in tests/api_fuzz.py
    before the fuzzer can check it: this is how the next one gets caught."""
    missing = [n for n in NAMES if n not in af.BASELINES]
    assert not missing, "\n".join(
        f"add a baseline for {n} to tests/api_fuzz.py (BASELINES), or exclude it with a reason "
        "(EXCLUDED)" for n in missing)


def test_no_baseline_names_a_callable_that_is_gone():
    stale = sorted(set(af.BASELINES) - set(NAMES) - set(SKIPPED))
    assert not stale, f"tests/api_fuzz.py has baselines for names that are not public: {stale}"


def test_the_walk_sees_the_api():
    """A sanity check of the walker itself: functions, constructors, methods and classmethods
    of every package are targets; exceptions, constants and modules are skipped by rule."""
    kinds = {t.kind for t in TARGETS}
    assert {"function", "constructor", "method", "classmethod"} <= kinds
    for pkg in af.PACKAGES:
        assert any(n.startswith(pkg + ".") for n in NAMES), pkg
    assert "ren.ckks.Evaluator.add" in NAMES and "ren.ckks.CKKSParams.preset" in NAMES
    assert SKIPPED["ren.ckks.ScaleMismatchError"].startswith("an exception")
    assert SKIPPED["ren.ckks.PRESETS"] == "a constant"


def test_the_walk_sees_bfv_and_bgv():
    for name in ("ren.bfv.Evaluator.multiply", "ren.bfv.BGVEvaluator.mod_switch",
                 "ren.bfv.loads", "ren.bfv.debug.budget_meter", "ren.bfv.BFVParams.generate"):
        assert name in NAMES and name in af.BASELINES, name


def test_pending_failures_still_fail(fx):
    """`af.PENDING` lists known failures whose fix belongs to another file's owner; once fixed,
    a pair no longer fails and its entry must go (this test says which)."""
    targets = tuple(sorted({t for t, _ in af.PENDING}))
    if not targets:
        return  # nothing pending (an empty `only` would fuzz everything)
    res = af.fuzz(fx, full=True, only=targets)
    failing = {(f.target, f.param) for f in res.pending}
    stale = sorted(set(af.PENDING) - failing)
    assert not stale, f"fixed: delete these entries of PENDING in tests/api_fuzz.py: {stale}"
    assert not [f for f in res.failures if f.target in targets], res.report()


def test_bad_arguments_ci_subset(fx):
    """Every (callable, parameter) with the CI subset of bad values (`af.ci_values`)."""
    res = af.fuzz(fx)
    assert not res.failures, res.report()


@pytest.mark.slow
def test_bad_arguments_whole_table(fx):
    """Every (callable, parameter) with the whole table (`af.values_for`), the slow baselines
    too, and what is accepted realized (a bad value taken lazily must not break later)."""
    res = af.fuzz(fx, full=True, slow=True, realize=True)
    assert not res.failures, res.report()


# -- hypothesis: mixtures of ints, floats, strings, containers, None and Ren objects -----------
SCALARS = st.one_of(
    st.none(), st.booleans(),
    st.integers(), st.integers(-(2**80), 2**80), st.sampled_from([0, -1, 1, 10**12, 2**64]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -0.0]),
    st.complex_numbers(allow_nan=True, allow_infinity=True),
    st.text(max_size=8), st.binary(max_size=8), st.fractions(),
    st.just(Fraction(-1, 3)), st.builds(object),
    st.floats(allow_nan=True).map(np.float64), st.integers(-(2**63), 2**63 - 1).map(np.int64),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=4).map(np.array),
    st.tuples(st.integers(0, 3), st.integers(1, 3)).map(np.zeros),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.tuples(inner, inner),
                            st.dictionaries(st.integers(-4, 4) | st.text(max_size=3), inner,
                                            max_size=3)),
    max_leaves=8)
_calls: dict[str, af.Call] = {}


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
          deadline=None)
@given(data=st.data())
def test_bad_arguments_hypothesis(fx, name, data):
    """One parameter at a time replaced by a generated value (or another Ren object)."""
    if name in af.SLOW:
        pytest.skip("a slow baseline: the whole-table run covers it")
    if name not in _calls:
        _calls[name] = af.BASELINES[name](fx)
    call = _calls[name]
    params = af._fuzzable_params(call.fn)
    param = data.draw(st.sampled_from(params), label="parameter")
    valid = call.args.get(param.name, None if param.default is param.empty else param.default)
    bad = data.draw(st.one_of(VALUES, st.sampled_from(af.ZOO + af._shaped(valid)).map(
        lambda b: b.make(fx, valid))), label="value")
    failure = af.call_case(fx, name, call, param.name, bad)
    if failure is not None:
        failure.value = af.short_repr(bad)
    assert failure is None or failure.kind == "accepted", str(failure)
