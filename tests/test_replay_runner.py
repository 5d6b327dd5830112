"""Eager templates from their third run on, when they run through a graph runner (the path every
eager op of bench_ckks takes once warm): each run binds parameters, new outputs and views of
them (`Template._bind` over `_dynamic`) and the runner patches their arrays into its calls.  The
words equal the reference on the "python" device's runner and the compiled "cpu" one, for
outputs that are new buffers, limb prefixes of results, parameters as they are, and kernels that
read views of parameters (a rescale in NTT form) or one array in several slots.
(test_replay.py's random recipes run each template twice: never with a runner.)"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from conftest import cpu_or_skip
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ren
from ren.device import Buffer
from ren.reference import evaluate
from ren.replay import OUTPUT, PARAM, TEMP, VIEW, templates

RQP = ren.RingSpec.generate(16, 5)
RQ = RQP.sub(0, 3)


def fresh(ring: ren.RingSpec, seed: int, domain: str, device: str) -> ren.Poly:
    rng = np.random.default_rng(seed)
    res = np.stack([rng.integers(0, q, ring.N) for q in ring.moduli])
    return ren.Poly.from_residues(res, ring, domain, device=device)


def program(a: ren.Poly, b: ren.Poly, c: ren.Poly, shape: int) -> list[ren.Poly]:
    """Outputs that are new buffers, views of new buffers (a limb prefix of a result), a
    parameter as it is; kernels that read views of parameters (limb prefixes) and the same
    parameter twice (a*a); a rescale of a parameter in NTT form (which binds a view of it)."""
    x = a * a + b
    low = RQ.sub(0, 2)
    outs = [x, x.to_ring(low), (c.rescale(c.ring.moduli[-1]) * 3),
            a.to_ring(low) * b.to_ring(low), b.rescale(b.ring.moduli[-1])]
    if shape & 1:
        outs.append(a)  # a parameter as an output
    if shape & 2:
        outs.append((x - b).intt().to_ring(RQ.sub(0, 1)))
    return outs


def _run_many(device: str, shape: int, seed: int, runs: int = 4) -> None:
    for run in range(runs):
        a = fresh(RQ, seed + run, "NTT", device)
        b = fresh(RQ, seed + 7 + run, "NTT", device)
        c = fresh(RQP, seed + 13 + run, "COEFF", device)
        outs = program(a, b, c, shape)
        expected = evaluate(*outs)
        outs[0].realize(*outs[1:])
        for p, e in zip(outs, expected, strict=True):
            assert np.array_equal(p.numpy(), e), (device, shape, run)


def _runner_templates() -> list:
    return [t for t in templates._items.values() if t.runner is not None]


def _dynamic_views(found: list) -> int:
    return sum(t.roles[b] is VIEW for t in found for b in t._dynamic)


def _check_bind(template) -> None:
    """A run's bindings: its parameters as they are, a new base buffer per output, each view
    over the binding of its base at the template view's offset."""
    params = [Buffer(p.device, p.shape).allocate() for p in template.params]
    bound = template._bind(params, template._dynamic)
    arrays = {b: bound[b].allocate().array() for b in template._dynamic}
    for b in template._dynamic:
        role, got = template.roles[b], bound[b]
        assert got.shape == b.shape and got.device == b.device
        if role is PARAM:
            assert any(got is p for p in params)
        elif role in (OUTPUT, TEMP):
            assert got.base is None and got is not b and all(got is not p for p in params)
        elif role is VIEW:
            assert got.base is bound[b.base] and got.offset == b.offset
            assert np.shares_memory(arrays[b], arrays[b.base])


@pytest.mark.parametrize("shape", [0, 1, 2, 3])
def test_runner_runs_give_the_reference_words_python(shape):
    templates.clear()
    _run_many("python", shape, seed=shape)
    found = _runner_templates()
    assert found, "the third run of a template takes a graph runner"
    assert _dynamic_views(found), "a run binds views of its parameters"
    for t in found:
        _check_bind(t)


@pytest.mark.parametrize("shape", [0, 1, 2, 3])
def test_runner_runs_give_the_reference_words_cpu(shape):
    cpu_or_skip()
    templates.clear()
    _run_many("cpu", shape, seed=40 + shape)
    found = [t for t in _runner_templates() if t.runner_kind == "cpu-compiled"]
    assert found, "the third run of a template takes the compiled plan runner"
    assert _dynamic_views(found), "a run binds views of its parameters"
    # an array patched into two or more slots (a result read by later kernels): each of them
    # must take this run's array, not an earlier run's
    assert any(n >= 2 for t in found
               for n in Counter(i for _, _, i, _ in t.runner.patches).values())
    for t in found:
        _check_bind(t)



@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=st.integers(0, 3), seed=st.integers(0, 1000))
def test_runner_runs_hypothesis(shape, seed):
    templates.clear()
    _run_many("python", shape, seed)
    for t in _runner_templates():
        _check_bind(t)
