"""ren.jit: capture on a miss, replay on a hit — bit-identical to eager realization of the same
function, with no scheduling or lowering on a replay, outputs that alias nothing, and a plan per
input spec."""

from __future__ import annotations

import os
import pickle
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from ckks_helpers import context
from hypothesis import given, settings
from hypothesis import strategies as st

import ren
from ren import realization, replay, runtime
from ren import settings as ren_settings
from ren.backend import Device, get_device
from ren.corpus import PROGRAMS, build
from ren.ir import storage_buffer
from ren.jit import InputSlot, JitPlan
from ren.node import substitute_many, toposort
from ren.ops import Op
from ren.reference import evaluate
from ren.runtime import record_units
from ren.spec import spec_of

ROOT = Path(__file__).resolve().parent.parent


def _runner() -> str:
    """The graph-runner kind of the device the tests run on (``--ren-backend``)."""
    return get_device("python").graph([], []).kind
RQP = ren.RingSpec.generate(16, 5)
RQ = RQP.sub(0, 3)


def fresh(ring=RQ, seed=0, domain="COEFF", device="python") -> ren.Poly:
    rng = np.random.default_rng(seed)
    res = np.stack([rng.integers(0, q, ring.N) for q in ring.moduli])
    return ren.Poly.from_residues(res, ring, domain, device)


def values(tree) -> list[np.ndarray]:
    """The residues of every Poly in a tree of tuples/lists/Ciphertexts, in order."""
    if isinstance(tree, ren.Poly):
        return [tree.numpy()]
    if hasattr(tree, "parts"):
        return [p.numpy() for p in tree.parts]
    return [v for t in tree for v in values(t)]


def eager(fn, *args, **kwargs):
    """The same function run eagerly (REN_JIT=0), outputs realized."""
    with ren_settings.override(REN_JIT=0):
        return fn(*args, **kwargs)


def assert_same(got, want) -> None:
    g, w = values(got), values(want)
    assert len(g) == len(w)
    for a, b in zip(g, w):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def storage(p: ren.Poly) -> np.ndarray:
    return storage_buffer(p.node).array()


# -- the scheduler corpus, with its leaves lifted into arguments ----------------------------------
def lifted(name: str):
    """Corpus program `name` as a function of its input polynomials (coefficient buffers and
    random leaves become arguments), and the specs of those inputs."""
    outs = build(name)
    roots = [o.node for o in outs]
    leaves = [n for n in toposort(*roots)
              if (n.op is Op.TO_RNS and n.src[0].op is Op.BUFFER)
              or (n.op is Op.AS_RING and n.src[0].op in (Op.BUFFER, Op.RANDOM))]

    def program(*xs: ren.Poly) -> tuple[ren.Poly, ...]:
        new = substitute_many(roots, {leaf: x.node for leaf, x in zip(leaves, xs)})
        return tuple(ren.Poly(n) for n in new)

    program.__qualname__ = f"corpus.{name}"
    return program, [spec_of(n) for n in leaves]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_corpus_program_replays_bit_identically(name):
    program, specs = lifted(name)
    fn = ren.jit(program)
    for call in range(3):
        xs = [fresh(s.ring, 100 * call + i, s.domain.name, s.device).realize()
              for i, s in enumerate(specs)]
        got = fn(*xs)
        want = eager(program, *xs)
        expected = evaluate(*want)  # the independent IR interpreter, on the lazy graph
        ren.realize(list(want))
        assert_same(got, want)
        assert all(np.array_equal(g, e) for g, e in zip(values(got), expected))
    assert (fn.misses, fn.hits, len(fn.plans)) == (1, 2, 1)


# -- CKKS ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ckks():
    return context(N=64, depth=3)


def encrypt(ckks, seed: int, level: int = 3):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, ckks.params.slots)
    return x, ckks.encrypt(x, level=level).realize()


def test_ckks_multiply_relinearize_rescale(ckks):
    ev = ckks.ev

    @ren.jit
    def mrr(a, b):
        return ev.rescale(ev.multiply(a, b))

    for call in range(3):
        (x, a), (y, b) = encrypt(ckks, 2 * call), encrypt(ckks, 2 * call + 1)
        got, want = mrr(a, b), eager(mrr, a, b).realize()
        assert_same(got, want)
        assert (got.scale, got.level, got.params) == (want.scale, want.level, want.params)
        assert np.max(np.abs(ckks.decrypt(got) - x * y)) < 1e-4
    assert len(mrr.plans) == 1 and mrr.plans[0].runner == _runner()
    for level in (2, 2):  # another level: a second plan, side by side
        (x, a), (y, b) = encrypt(ckks, 10, level), encrypt(ckks, 11, level)
        got = mrr(a, b)
        assert_same(got, eager(mrr, a, b).realize())
        assert got.level == level - 1
    assert len(mrr.plans) == 2 and (mrr.misses, mrr.hits) == (2, 3)
    assert {p.inputs[0][1].ring.limbs for p in mrr.plans} == \
        {ckks.params.ring(3).limbs, ckks.params.ring(2).limbs}


def test_ckks_rotate(ckks):
    ev = ckks.ev
    rot = ren.jit(lambda ct, k: ev.rotate(ct, k))
    for call in range(3):
        x, a = encrypt(ckks, 20 + call)
        got = rot(a, 1)
        assert_same(got, eager(rot, a, 1).realize())
        assert np.max(np.abs(ckks.decrypt(got) - np.roll(x, -1))) < 1e-5
    assert len(rot.plans) == 1


def test_ckks_logistic_regression_core(ckks):
    """The example workload's server side: x·w, rotate_sum, + b, the degree-3 sigmoid."""
    example = runpy.run_path(str(ROOT / "examples" / "ckks_logreg.py"))
    ev, d = ckks.ev, 4
    w = np.random.default_rng(5).normal(0, 1, d) / 2
    batch = ckks.params.slots // d

    @ren.jit
    def infer(ct, bias):
        z = ev.rescale(ev.multiply(ct, np.tile(w, batch)))  # the weights are encoded (baked)
        t = ev.add_scalar(ev.rotate_sum(z, d), bias)
        return example["encrypted_sigmoid"](ev, t)

    for call in range(3):
        x, ct = encrypt(ckks, 30 + call)
        got = infer(ct, 0.1)
        assert_same(got, eager(infer, ct, 0.1).realize())
        want = example["sigmoid_poly"](x.reshape(batch, d) @ w + 0.1)
        assert np.max(np.abs(ckks.decrypt(got).real[::d] - want)) < 1e-3
    assert len(infer.plans) == 1


# -- replay does no scheduling or lowering ---------------------------------------------------------
def test_replay_does_not_schedule_or_lower(monkeypatch, ckks):
    ev = ckks.ev
    mrr = ren.jit(lambda a, b: ev.rescale(ev.multiply(a, b)))
    inputs = [(encrypt(ckks, 40 + i)[1], encrypt(ckks, 50 + i)[1]) for i in range(3)]
    calls = {"passes": 0, "lower": 0, "compile": 0}

    def counting(what, original):
        def wrapped(*a, **k):
            calls[what] += 1
            return original(*a, **k)
        return wrapped

    monkeypatch.setattr(realization, "run_passes", counting("passes", realization.run_passes))
    monkeypatch.setattr(realization, "make_exec_units",
                        counting("lower", realization.make_exec_units))
    monkeypatch.setattr(runtime, "make_exec_units", counting("lower", runtime.make_exec_units))
    # (a capture lowers through ren.replay.lower_and_run)
    monkeypatch.setattr(replay, "make_exec_units", counting("lower", replay.make_exec_units))
    monkeypatch.setattr(Device, "compile", counting("compile", Device.compile))
    mrr(*inputs[0])
    assert calls["passes"] == 1 and calls["lower"] == 1 and calls["compile"] > 0  # counted
    before = dict(calls)
    for a, b in inputs[1:]:
        with record_units() as ran:
            mrr(a, b)
        assert len(ran) == len(mrr.plans[0].units)  # the replay ran the plan ...
    assert calls == before  # ... without scheduling, lowering or compiling


def test_capture_and_replay_run_the_realization_pipeline(monkeypatch):
    """A capture schedules and plans the outputs as realize() does (`schedule_and_plan`), and
    its first call is the template's first run (a schedule this small lowers, then runs; a large
    one runs while it is lowered: tests/test_first_run.py); a replay is one more run of the same
    template."""
    from ren import plan_cache
    from ren.replay import Template

    compiled, runs = [], []
    schedule_and_plan, run = realization.schedule_and_plan, Template.run
    for module in (plan_cache, realization):  # (the plan cache's miss, or the cache off)
        monkeypatch.setattr(module, "schedule_and_plan",
                            lambda *a, **k: compiled.append(1) or schedule_and_plan(*a, **k))
    monkeypatch.setattr(Template, "run", lambda t, params: runs.append(t) or run(t, params))
    f = ren.jit(lambda x, y: x * y + 1)
    for seed in range(3):
        f(fresh(seed=seed).realize(), fresh(seed=10 + seed).realize())
    assert len(compiled) == 1 and runs == [f.plans[0].template] * 3


# -- pickled plans --------------------------------------------------------------------------------
SUBPROCESS = """
import contextlib, pickle, sys
from ren.ckks import dumps, loads
override = contextlib.nullcontext()
if sys.argv[1:] == ["cpu"]:  # the parent runs the "python" device on the cpu backend
    from ren.backend import backend_override
    from ren.backend.cpu import open_device
    override = backend_override("python", open_device)
with override:
    plan, params, a, b = pickle.load(sys.stdin.buffer)
    sys.stdout.buffer.write(dumps(plan(loads(a, params), loads(b, params))))
"""


def test_pickled_plan_replays_in_a_fresh_process(ckks, request):
    """Capture once, ship the plan (its relinearization key baked in) to another process, which
    opens its devices on the parent's backends (``--ren-backend cpu`` runs "python" on the cpu
    backend, whose plans' RESCALEs take rows of 0 that NumPy's refuse: `rescale_zero_rows`)."""
    from ren.ckks import dumps

    ev = ckks.ev
    mrr = ren.jit(lambda a, b: ev.rescale(ev.multiply(a, b)))
    mrr(encrypt(ckks, 60)[1], encrypt(ckks, 61)[1])
    (plan,) = mrr.plans
    a, b = encrypt(ckks, 62)[1], encrypt(ckks, 63)[1]
    want = dumps(mrr(a, b))
    blob = pickle.dumps((plan, ckks.params, dumps(a), dumps(b)))
    assert dumps(pickle.loads(blob)[0](a, b)) == want  # and in this process
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    backend = request.config.getoption("--ren-backend")
    res = subprocess.run([sys.executable, "-c", SUBPROCESS, backend], input=blob,
                         capture_output=True, cwd=ROOT, env=env, timeout=300)
    assert res.returncode == 0, res.stderr.decode()
    assert res.stdout == want


# -- outputs alias nothing -------------------------------------------------------------------------
def test_outputs_never_alias_inputs_or_earlier_outputs():
    key = fresh(seed=99).realize()  # a closure constant, baked into the plan

    @ren.jit
    def f(x, y):
        return x, x.to_ring(RQ.sub(0, 2)), x + y * 3 + key, key, y

    outs, ins = [], []
    for call in range(3):
        x, y = fresh(seed=call).realize(), fresh(seed=10 + call).realize()
        got = f(x, y)
        assert_same(got, eager(f, x, y))
        outs.append(got)
        ins.append((x, y))
    arrays = [storage(p) for got in outs for p in got]
    arrays += [storage(p) for pair in ins for p in pair] + [storage(key)]
    for i in range(len(arrays)):
        for j in range(i):
            assert not np.shares_memory(arrays[i], arrays[j])


# -- failure modes: JitError before any captured unit runs -----------------------------------------
def expect_error(fn, *args, match: str, **kwargs) -> None:
    plans = len(fn.plans)
    with record_units() as ran, pytest.raises(ren.JitError, match=match):
        fn(*args, **kwargs)
    assert ran == [], "a unit ran before the error"
    assert len(fn.plans) == plans


def test_changed_frozen_scalar_positional_or_keyword():
    f = ren.jit(lambda x, k: x * k)
    x = fresh(seed=1).realize()
    f(x, 3)
    f(fresh(seed=2).realize(), k=3)  # the same value by keyword: a hit
    assert f.hits == 1
    expect_error(f, fresh(seed=3).realize(), 4, match=r"argument `k` is a frozen scalar.*3.*4")
    expect_error(f, fresh(seed=3).realize(), k=4, match=r"argument `k`")
    expect_error(f, fresh(seed=3).realize(), 3.0, match=r"argument `k`")  # another type


def test_frozen_scalar_inside_a_dataclass(ckks):
    ev = ckks.ev
    neg = ren.jit(lambda ct: ev.negate(ct))
    neg(encrypt(ckks, 1)[1])
    ct = encrypt(ckks, 2)[1]
    ct.scale *= 2
    expect_error(neg, ct, match=r"argument `ct.scale` is a frozen scalar")


def test_static_argnames_capture_one_plan_per_value():
    f = ren.jit(lambda x, k: x * k, static_argnames=("k",))
    for k in (2, 3, 2):
        x = fresh(seed=k).realize()
        assert_same(f(x, k), eager(f.fn, x, k))
    assert len(f.plans) == 2 and f.hits == 1


def test_realize_inside_the_body():
    expect_error(ren.jit(lambda x: (x + 1).realize()), fresh(seed=1).realize(),
                 match=r"<lambda>: realize\(\) inside a jitted function")
    expect_error(ren.jit(lambda x: x.numpy()), fresh(seed=1).realize(), match=r"realize\(\)")
    expect_error(ren.jit(lambda x: x.realize()), fresh(seed=1).realize(), match=r"realize\(\)")


def test_random_generation_inside_the_body(ckks):
    expect_error(ren.jit(lambda x: x + ren.Poly.uniform(RQ)), fresh(seed=1).realize(),
                 match=r"random polynomial generation \(uniform\)")
    enc = ren.jit(lambda pt: ckks.encryptor.encrypt(pt))
    pt = ckks.enc.encode(np.ones(4)).realize()
    expect_error(enc, pt, match=r"encrypt outside the jitted function")
    lazy = ren.Poly.ternary(RQ)  # made outside, never realized: re-sampled by every replay
    expect_error(ren.jit(lambda x: x + lazy), fresh(seed=1).realize(),
                 match=r"random polynomial \(ternary\) that is not realized")


def test_spec_matching_no_plan_when_capture_is_disabled():
    f = ren.jit(lambda a, b: a * b)
    f(fresh(seed=1).realize(), fresh(seed=2).realize())
    f.capture = False
    expect_error(f, fresh(seed=3).realize(), fresh(RQP, seed=4).realize(),
                 match=r"capture is disabled.*argument `b` is N=16 L=5")
    expect_error(f, fresh(seed=3).realize(), fresh(seed=4, domain="NTT").realize(),
                 match=r"argument `b` is .* NTT")
    g = ren.jit(lambda a, b: a * b, capture=False)
    expect_error(g, fresh(seed=3).realize(), fresh(seed=4).realize(), match="capture is disabled")
    g.add_plan(f.plans[0])  # a plan from elsewhere (e.g. unpickled): now it replays
    x, y = fresh(seed=5).realize(), fresh(seed=6).realize()
    assert_same(g(x, y), eager(f.fn, x, y))


def test_plan_for_finds_the_plan_a_call_would_replay():
    """`plan_for` looks a call up without running anything: None before a capture, the plan
    after it, and the frozen-scalar check of a call (ren.distributed ships what it returns)."""
    f = ren.jit(lambda a, k: a * k)
    x = fresh(seed=1).realize()
    assert f.plan_for(x, 3) is None and not f.plans  # nothing captured by the look-up
    f(x, 3)
    assert f.plan_for(fresh(seed=2).realize(), 3) is f.plans[0]
    assert f.plan_for(fresh(RQP, seed=2).realize(), 3) is None  # another spec: would capture
    with pytest.raises(ren.errors.JitError, match="frozen scalar"):
        f.plan_for(x, 4)


def test_same_buffer_passed_twice(ckks):
    f = ren.jit(lambda a, b: a * b)
    x = fresh(seed=1).realize()
    expect_error(f, x, x, match=r"arguments `a` and `b` are the same buffer")
    f(x, fresh(seed=2).realize())  # after a capture, the hit path refuses it too
    expect_error(f, x, x, match=r"`a` and `b` are the same buffer")
    ev = ckks.ev
    g = ren.jit(lambda cts: ev.add(cts[0], cts[1]))
    ct = encrypt(ckks, 1)[1]
    expect_error(g, [ct, ct], match=r"`cts\[0\].parts\[0\]` and `cts\[1\].parts\[0\]`")


def test_non_poly_non_scalar_output_leaf():
    expect_error(ren.jit(lambda x: (x + 1, np.zeros(3))), fresh(seed=1).realize(),
                 match=r"output `output\[1\]` is a ndarray")
    expect_error(ren.jit(lambda x: {"f": lambda: x}), fresh(seed=1).realize(),
                 match=r"output `output\['f'\]` is a function")
    f = ren.jit(lambda x: (x + 1, 7, "label", ren.Domain.NTT, RQ))  # scalars are fine
    out = f(fresh(seed=1).realize())
    assert out[1:] == (7, "label", ren.Domain.NTT, RQ)


def test_python_decision_on_a_poly_value():
    def branchy(x):
        return x + 1 if x else x - 1

    expect_error(ren.jit(branchy), fresh(seed=1).realize(),
                 match=r"branchy: a Python decision on a Poly's value")


# -- switches, nesting, pytrees, plan objects ------------------------------------------------------
def test_ren_jit_0_runs_eagerly():
    f = ren.jit(lambda x: x * 2)
    with ren_settings.override(REN_JIT=0):
        out = f(fresh(seed=1))
    assert not out.is_realized and f.plans == []


def test_nested_jitted_functions_run_inline():
    inner = ren.jit(lambda x: x * 3)
    outer = ren.jit(lambda x, y: inner(x) + y)
    x, y = fresh(seed=1).realize(), fresh(seed=2).realize()
    assert_same(outer(x, y), eager(outer.fn, x, y))
    assert inner.plans == [] and len(outer.plans) == 1


def test_pytrees_and_lazy_inputs():
    @ren.jit
    def f(d, pair, *rest, scale=2):
        return {"sum": d["a"] + pair[0], "items": [pair[1] * scale, *rest]}

    for call in range(3):
        a, b, c, e = (fresh(seed=10 * call + i) for i in range(4))
        lazy = a + b  # a lazy input: realized before capture/replay
        got = f({"a": lazy}, (c, e), e.ntt())
        want = eager(f.fn, {"a": lazy}, (c, e), e.ntt())
        assert_same([got["sum"], *got["items"]], [want["sum"], *want["items"]])
    assert (f.misses, f.hits) == (1, 2)


def test_plan_objects():
    f = ren.jit(lambda x, y: (x.to_ring(RQ.sub(1, 3)) * y.to_ring(RQ.sub(1, 3)), x + 1))
    x, y = fresh(seed=1).realize(), fresh(seed=2).realize()
    f(x, y)
    (plan,) = f.plans
    assert isinstance(plan, JitPlan)
    assert [path for path, _ in plan.inputs] == ["x", "y"]
    assert plan.capture_seconds > 0 and plan.runner == _runner()
    assert plan.memory is not None and all(u.kind in ("compute", "view", "copy")
                                           for u in plan.units)
    table = plan.input_table
    assert all(isinstance(r, InputSlot) for r in table)
    assert {r.input for r in table} == {0, 1}
    assert {r.offset for r in table if plan.units[r.unit].kind == "compute"} >= {None}
    views = [r for r in table if r.offset is not None]
    assert views and all(r.offset == RQ.N for r in views)  # limbs 1..2 start at row 1
    assert "input x" in plan.summary()


def test_recorder_hook_is_generic():
    """The JIT's guard is a plain `Recorder`: one sees each realization of its block first."""
    seen = []

    class Log(realization.Recorder):
        def on_realize(self, nodes):
            seen.append(len(nodes))

    x = fresh(seed=1).realize()
    with realization.recording(Log()):
        (x * x + 1).realize()
    assert seen == [1]
    assert realization.current_recorder() is None


def test_buffers_of_captured_inputs_are_not_kept():
    import gc
    import weakref

    f = ren.jit(lambda x: x * 2)
    x = fresh(seed=1).realize()
    f(x)
    ref = weakref.ref(storage_buffer(x.node))
    del x
    gc.collect()
    assert ref() is None


def test_const_inputs_are_part_of_the_key():
    f = ren.jit(lambda x, c: x + c)
    x = fresh(seed=1).realize()
    for v in (3, 4):
        c = ren.Poly.const(v, RQ)
        assert_same(f(x, c), eager(f.fn, x, c))
    assert len(f.plans) == 2
    assert [p.key[1][1][-1] for p in f.plans] == [3, 4]


@pytest.mark.parametrize("mode", ["no_memplan", "no_graph_runner"])
def test_replay_without_arena_or_graph_runner(mode, monkeypatch):
    """The generic paths: no memory plan (every intermediate its own buffer), and a backend
    without a graph runner (ExecUnits run one by one)."""
    if mode == "no_graph_runner":
        monkeypatch.setattr(type(get_device("python")), "graph", Device.graph)
    program, specs = lifted("keyswitch")
    fn = ren.jit(program)
    with ren_settings.override(REN_NO_MEMPLAN=int(mode == "no_memplan")):
        for call in range(3):
            xs = [fresh(s.ring, 7 * call + i, s.domain.name).realize()
                  for i, s in enumerate(specs)]
            with record_units() as ran:
                got = fn(*xs)
            assert_same(got, eager(program, *xs))
            if call:
                assert len(ran) == len(fn.plans[0].units)
    (plan,) = fn.plans
    assert (plan.memory is None) == (mode == "no_memplan")
    assert plan.runner == ("exec-units" if mode == "no_graph_runner" else _runner())


def test_replays_from_several_threads():
    from concurrent.futures import ThreadPoolExecutor

    program, specs = lifted("shared_subexpression")
    fn = ren.jit(program)
    inputs = [[fresh(s.ring, 10 * k + i, s.domain.name).realize() for i, s in enumerate(specs)]
              for k in range(8)]
    fn(*inputs[0])
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda xs: fn(*xs), inputs))
    for xs, got in zip(inputs, outs):
        assert_same(got, eager(program, *xs))
    assert len(fn.plans) == 1 and fn.hits == 8


# -- property: random programs replay like eager realization -------------------------------------
STEPS = st.lists(st.tuples(st.sampled_from(["add", "sub", "mul", "neg", "rot", "scal", "ntt",
                                            "sub_ring"]),
                           st.integers(0, 30), st.integers(0, 30), st.integers(-5, 5)),
                 min_size=1, max_size=8)


def step(kind: str, a: ren.Poly, b: ren.Poly, c: int) -> ren.Poly:
    if kind in ("add", "sub"):
        if a.domain is not b.domain:
            b = b.ntt() if b.domain is ren.Domain.COEFF else b.intt()
        return a + b if kind == "add" else a - b
    if kind == "mul":
        return a * b
    if kind == "neg":
        return -a
    if kind == "rot":
        return a.rotate(c)
    if kind == "scal":
        return a * c + c
    if kind == "ntt":
        return a.ntt() if a.domain is ren.Domain.COEFF else a.intt()
    return a.to_ring(a.ring.sub(0, a.ring.limbs - 1)) if a.ring.limbs > 1 else a


def random_program(steps, xs):
    vals = list(xs)
    for kind, i, j, c in steps:
        a, b = vals[i % len(vals)], vals[j % len(vals)]
        if a.ring != b.ring:  # after a sub_ring: pair it with itself
            b = a
        vals.append(step(kind, a, b, c))
    return vals[len(xs):][-2:] + [vals[steps[0][1] % len(vals)]]  # may return an input too


@given(STEPS, st.sampled_from(["COEFF", "NTT"]))
@settings(max_examples=25)
def test_random_programs_replay_like_eager(steps, domain):
    fn = ren.jit(lambda x, y: random_program(steps, (x, y)))
    for call in range(2):
        x, y = fresh(seed=2 * call).realize(), fresh(seed=2 * call + 1, domain=domain).realize()
        got = fn(x, y)
        want = eager(fn, x, y)
        expected = evaluate(*want)
        assert_same(got, want)
        assert all(np.array_equal(g, e) for g, e in zip(values(got), expected))
    assert len(fn.plans) == 1
