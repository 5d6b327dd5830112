"""Replaying a captured realization with other input buffers (ren.replay): the second
realization of a graph shape skips scheduling, and gives exactly what a fresh schedule gives."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ren
from ren import realization
from ren import settings as ren_settings
from ren.corpus import PROGRAMS, build
from ren.reference import evaluate
from ren.replay import structure_key, templates
from ren.runtime import record_units

RQP = ren.RingSpec.generate(16, 5)
RQ = RQP.sub(0, 3)


def fresh(ring=RQ, seed=0, domain="COEFF") -> ren.Poly:
    rng = np.random.default_rng(seed)
    res = np.stack([rng.integers(0, q, ring.N) for q in ring.moduli])
    return ren.Poly.from_residues(res, ring, domain)


@pytest.fixture
def count_schedules(monkeypatch):
    calls = []
    original = realization.run_passes

    def counting(*a, **k):
        calls.append(1)
        return original(*a, **k)

    monkeypatch.setattr(realization, "run_passes", counting)
    return calls


def test_second_realization_of_a_shape_replays(count_schedules):
    templates.clear()
    outs = []
    for seed in range(3):
        a, b, c = fresh(seed=seed), fresh(seed=10 + seed), fresh(seed=20 + seed)
        out = a * b + c.ntt()
        expected = evaluate(out)[0]
        out.realize()
        assert np.array_equal(out.numpy(), expected)
        outs.append(out)
    assert len(count_schedules) == 1  # the two later realizations did not schedule
    assert realization.last_timings.extra.get("replayed")
    bufs = [o.node.src[0].arg for o in outs]
    assert len({id(b) for b in bufs}) == 3  # outputs never alias one another
    assert not any(np.shares_memory(bufs[i].array(), bufs[j].array())
                   for i in range(3) for j in range(i))


def test_replay_runs_the_same_units():
    templates.clear()
    a, b = fresh(seed=1), fresh(seed=2)
    with record_units() as first:
        (a * b).realize()
    with record_units() as second:
        (fresh(seed=3) * fresh(seed=4)).realize()
    assert [(u.kind, u.name) for u in first] == [(u.kind, u.name) for u in second]


def test_aliasing_pattern_is_part_of_the_key():
    a, b = fresh(seed=1), fresh(seed=2)
    a.realize(), b.realize()
    assert structure_key([(a * b).node])[0] != structure_key([(a * a).node])[0]
    sq = a * a
    expected = evaluate(sq)[0]
    (a * b).realize()
    sq.realize()
    assert np.array_equal(sq.numpy(), expected)


def test_templates_keep_no_user_buffers():
    templates.clear()
    a, b = fresh(seed=1), fresh(seed=2)
    out = (a * b + a.ntt()).realize()
    refs = [weakref.ref(p.node.src[0].arg) for p in (a, b, out)]
    del a, b, out
    gc.collect()
    assert len(templates) == 1
    assert all(r() is None for r in refs)


def test_random_graphs_replay_with_new_samples(count_schedules):
    """A RANDOM leaf has a new seed every time: it is sampled on the host into an input buffer
    first, so the second graph of the same shape replays the first one's template, with its own
    values (the oracle's)."""
    templates.clear()
    raw = [ren.Poly.uniform(RQ), ren.Poly.uniform(RQ)]
    specs = [p.random_origin() for p in raw]
    outs = [p + 1 for p in raw]
    for o in outs:
        o.realize()
    assert len(templates) == 1 and len(count_schedules) == 1
    assert not np.array_equal(outs[0].numpy(), outs[1].numpy())
    for spec, out in zip(specs, outs, strict=True):
        again = ren.Poly.from_random(spec, RQ) + 1
        (want,) = evaluate(again)
        assert np.array_equal(out.numpy(), want)


def test_check_mode_always_schedules(count_schedules):
    a, b = fresh(seed=1), fresh(seed=2)
    (a * b).realize()
    before = len(count_schedules)
    with ren_settings.override(REN_CHECK=1):
        (fresh(seed=3) * fresh(seed=4)).realize()
    assert len(count_schedules) == before + 1
    assert not realization.last_timings.extra.get("replayed")


@pytest.mark.parametrize("memplan", [True, False], ids=["arena", "no_memplan"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_corpus_programs_replay_to_the_reference(name, memplan):
    with ren_settings.override(REN_NO_MEMPLAN=int(not memplan)):
        for _ in range(3):
            outputs = build(name)
            expected = evaluate(*outputs)
            outputs[0].realize(*outputs[1:])
            for p, e in zip(outputs, expected, strict=True):
                assert np.array_equal(p.numpy(), e), name


# -- the same random recipe on different inputs -----------------------------------------------
OPS = ["add", "sub", "mul", "neg", "scalar", "domain", "rotate", "conj", "prefix", "subset",
       "extend", "rescale", "copy", "zero", "self_sub"]


def apply(recipe, inputs):
    pool = list(inputs)
    for op, i, j, k in recipe:
        a = pool[i % len(pool)]
        same = [p for p in pool if p.ring == a.ring and p.domain is a.domain]
        b = same[j % len(same)]
        if op == "add":
            x = a + b
        elif op == "sub":
            x = a - b
        elif op == "mul":
            x = a * pool[j % len(pool)] if pool[j % len(pool)].ring == a.ring else a * b
        elif op == "neg":
            x = -a
        elif op == "scalar":
            x = a * (k - 50)
        elif op == "domain":
            x = a.intt() if a.domain is ren.Domain.NTT else a.ntt()
        elif op == "rotate":
            x = a.rotate(k % 7 - 3)
        elif op == "conj":
            x = a.conjugate()
        elif op == "prefix" and a.ring.limbs > 1:
            x = a.to_ring(a.ring.sub(0, a.ring.limbs - 1))
        elif op == "subset" and a.ring.limbs > 1:
            x = a.to_ring(a.ring.select([a.ring.moduli[0], a.ring.moduli[-1]]))
        elif op == "extend" and a.ring == RQ:
            x = a.to_ring(RQP)
        elif op == "rescale" and a.ring.limbs > 1:
            x = a.rescale(a.ring.moduli[-1])
        elif op == "copy":
            x = a.to("python:1").to("python")
        elif op == "zero":
            x = a * 0
        else:
            x = a - a
        pool.append(x)
    return pool[-2:]


recipes = st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 20), st.integers(0, 20),
                             st.integers(0, 100)), min_size=1, max_size=8)


@given(recipes, st.integers(0, 1000))
def test_random_recipes_replay_on_new_inputs(recipe, seed):
    results = []
    for run in range(2):
        inputs = [fresh(RQ, seed + run, "COEFF"), fresh(RQ, seed + 7 + run, "NTT"),
                  fresh(RQP, seed + 13 + run, "COEFF")]
        outs = apply(recipe, inputs)
        specs = [(p.ring, p.domain) for p in outs]
        expected = evaluate(*outs)
        with record_units() as units:
            outs[0].realize(*outs[1:])
        if run == 1 and units:  # the same recipe on the same specs: replayed, not rescheduled
            assert realization.last_timings.extra.get("replayed")
        for p, e, s in zip(outs, expected, specs, strict=True):
            assert (p.ring, p.domain) == s
            assert np.array_equal(p.numpy(), e)
        results.append([p.numpy() for p in outs])


@given(recipes, st.integers(0, 1000))
def test_recursive_and_iterative_structure_keys_agree(recipe, seed):
    from ren.replay import _structure_key

    inputs = [fresh(RQ, seed, "COEFF"), fresh(RQ, seed + 7, "NTT"), fresh(RQP, seed + 13)]
    nodes = [p.node for p in apply(recipe, inputs)]
    assert _structure_key(nodes, recursive=True) == _structure_key(nodes, recursive=False)


def test_deep_chains_get_a_key_too():
    x = fresh(seed=1)
    for _ in range(3000):  # deeper than Python's recursion limit
        x = x + 1
    found = structure_key([x.node])
    assert found is not None and len(found[0]) > 3000


@pytest.mark.parametrize("budget", ["default", "none"])
def test_eager_graph_runner_budget(budget, monkeypatch):
    """From the second replay an eager template keeps a graph runner (and its arena) when its
    retained bytes fit the budget; the budget is given back when the template is dropped.  The
    words are the same either way."""
    from ren import replay

    if budget == "none":
        monkeypatch.setattr(replay, "GRAPH_BYTES_TOTAL", 0)
    templates.clear()
    gc.collect()
    before = replay.retained_graph_bytes()
    ring = ren.RingSpec.generate(1024, 6)
    a = ren.Poly.from_coefficients(list(range(1024)), ring).ntt().realize()
    b = ren.Poly.from_coefficients([7] * 1024, ring).ntt().realize()
    want = ((a * b + a).intt().rescale(ring.moduli[-2:]) * 3).numpy()
    for _ in range(4):
        got = ((a * b + a).intt().rescale(ring.moduli[-2:]) * 3).numpy()
        assert np.array_equal(got, want)
    (template,) = [t for t in templates._items.values() if t.runs >= 4]
    if budget == "none":
        assert template.runner is None and replay.retained_graph_bytes() == before
    else:
        assert template.runner is not None
        assert replay.retained_graph_bytes() == before + template.retained_bytes() > before
    del template
    templates.clear()
    gc.collect()
    assert replay.retained_graph_bytes() == before


def test_a_backend_override_drops_the_templates_on_entry_and_exit():
    """Their units hold the other backend's kernels (`ren.backend.on_backend_change`)."""
    from ren.backend import backend_override, get_device
    from ren.device import device_factory

    templates.clear()
    (fresh(seed=1) * fresh(seed=2)).realize()
    assert len(templates) == 1
    with backend_override("python", device_factory("python")):
        assert len(templates) == 0
        (fresh(seed=1) * fresh(seed=2)).realize()
        assert len(templates) == 1
    assert len(templates) == 0 and get_device("python") is not None
