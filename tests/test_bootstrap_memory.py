"""Memory of a lean bootstrapping's schedule: a value computed from leaf buffers alone through a
short chain (a coefficient-form diagonal's TO_RNS and NTT, a lean key's row) is computed again
where it is read long after (`ren.schedule.regenerate_leaf_chains`), so a Meta-BTS plan (two
bootstrappings sharing their diagonals) keeps no more than one bootstrapping's.  Before, the
first bootstrapping's expanded diagonals lived until the second read them: at N = 2^16 a
4.47 GiB arena against 1.46 GiB for one, and the ``levels`` shape (1150 diagonals) ran out of
23 GiB."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import ren
from ren import realization, replay
from ren.ir import storage_buffer
from ren.kernel import VIEW
from ren.random import RandomSpec

# `ren.schedule` the attribute is the function; the module is imported by name
sched = importlib.import_module("ren.schedule")

RQ = ren.RingSpec.generate(16, 3)


def fresh(seed: int) -> ren.Poly:
    rng = np.random.default_rng(seed)
    res = np.stack([rng.integers(0, q, RQ.N) for q in RQ.moduli])
    return ren.Poly.from_residues(res, RQ, "NTT", "python").realize()


def expanded(seed: int) -> ren.Poly:
    """A coefficient-form constant expanded lazily, as a coefficient-form diagonal is
    (`Poly.from_coefficients(c, ring).ntt()`: TO_RNS of a leaf of words, then NTT)."""
    coeffs = np.random.default_rng(seed).integers(-2**40, 2**40, RQ.N)
    return ren.Poly.from_coefficients(coeffs, RQ, device="python").ntt()


def long_chain(x: ren.Poly, d: ren.Poly) -> ren.Poly:
    """d read at both ends of REGENERATE_AFTER (intt, ntt) rounds on x."""
    y = x * d
    for _ in range(sched.REGENERATE_AFTER):
        y = (y * y + x).intt()
        y = (y + 1).ntt()
    return y + d


def _root(b):
    while b.base is not None:
        b = b.base
    return b


def kinds(items, kind: str) -> list:
    return [i for i in items if i.kind == kind]


def test_an_expanded_constant_read_long_after_is_expanded_again(monkeypatch):
    x = fresh(1)
    items, plan, _ = realization.schedule_and_plan([long_chain(x, expanded(2)).node])
    rns = kinds(items, "to_rns")
    assert len(rns) == 2 and rns[0].bufs[0] is not rns[1].bufs[0]
    # the second expansion reads the same leaf of words, its NTT the second TO_RNS's output
    assert rns[0].bufs[1:] == rns[1].bufs[1:]
    first_ntt, late_ntt = (items[items.index(r) + 1] for r in rns)
    assert late_ntt.kind == "ntt" and late_ntt.bufs[1] is rns[1].bufs[0]
    assert plan is not None
    first, last = plan.live_range(first_ntt.bufs[0])
    assert last - first <= 2  # the first expansion dies at its first read
    monkeypatch.setattr(sched, "REGENERATE_DEPTH", 0)  # public samples only: the old schedule
    kept, plan_kept, _ = realization.schedule_and_plan([long_chain(x, expanded(2)).node])
    assert len(kinds(kept, "to_rns")) == 1 and len(kept) == len(items) - 2
    assert plan_kept is not None
    (held,) = (items_kept.bufs[0] for i, items_kept in enumerate(kept)
               if i and kept[i - 1].kind == "to_rns")
    first, last = plan_kept.live_range(held)
    assert last - first > 4 * sched.REGENERATE_AFTER  # kept across the whole chain
    monkeypatch.undo()
    d = expanded(2).realize()  # a leaf: nothing to compute again
    np.testing.assert_array_equal(long_chain(x, expanded(2)).realize().numpy(),
                                  long_chain(x, d).realize().numpy())


def test_leaf_chains_are_short_deterministic_and_read_only_leaves():
    x = fresh(3)
    public = ren.Poly.from_random(RandomSpec("uniform", (), bytes(32), "python", public=True),
                                  RQ, "NTT")
    private = ren.Poly.from_random(RandomSpec("uniform", (), bytes(32), "python"), RQ, "NTT")
    one = (x * 5).intt()             # depth 1: an elementwise kernel reading the leaf x
    two = one.ntt()                  # depth 2
    three = (two * two + 1).intt()   # depth 3: beyond REGENERATE_DEPTH
    noisy = (x * private).intt()     # reads a private sample: never computed again
    outs = [three, noisy, (x * public).intt()]
    items = sched._linearize(sched.run_passes(*[o.node for o in outs]).sink)
    chains = sched.leaf_chains(items)
    writers = {_root(it.bufs[0]) for it in items if it.kind != VIEW}
    by_out = {it.bufs[0]: it for it in items if it.kind != VIEW}
    assert max(chains.values()) == sched.REGENERATE_DEPTH
    for b, depth in chains.items():  # each reads leaves, or chain values of a smaller depth
        for src in map(_root, by_out[b].bufs[1:]):
            assert src not in writers or chains.get(src, depth) < depth
    randoms = [it for it in items if it.kind != VIEW and it.ring_call is not None
               and it.ring_call.random is not None]
    assert {it.ring_call.random.public: it.bufs[0] in chains for it in randoms} == {
        True: True, False: False}
    private_out = next(it.bufs[0] for it in randoms if not it.ring_call.random.public)
    assert not any(private_out in map(_root, by_out[b].bufs[1:]) for b in chains)
    assert len(sched.leaf_chains(items, depth=0)) == 1  # the public sample alone
    assert len(sched.leaf_chains(items, depth=3)) > len(chains)


@pytest.fixture(scope="module")
def lean_bootstrapping():
    from ren.ckks import Encoder, Encryptor, Evaluator, KeyGenerator
    from ren.ckks.circuits import Bootstrapper, bootstrap_params_small

    params = bootstrap_params_small("cpu")
    bt = Bootstrapper(params, diagonals="coeff")
    with ren.random.seeded(1):
        kg = KeyGenerator(params, lean=True)
        ev = Evaluator(params, kg.relin_key(), bt.keys(kg))
        x = np.random.default_rng(4).uniform(-1, 1, params.slots)
        ct = Encryptor(params, kg.public_key()).encrypt(Encoder(params).encode(x, level=1))
    ren.realize(list(ct.parts))
    return bt, ev, ct


@pytest.fixture
def toposort_order():
    """The test's schedules in toposort's order (REN_MEMORY_ORDER=0).  The override holds for
    this thread, which runs the fixture and the test and schedules (`schedule_and_plan`)."""
    with ren.settings.override(REN_MEMORY_ORDER=0):
        yield


def _plan(out) -> tuple[list, object]:
    items, plan, _ = realization.schedule_and_plan([p.node for p in out.parts])
    assert plan is not None
    return items, plan


def test_a_meta_bts_plan_keeps_about_one_bootstrappings_memory(lean_bootstrapping, monkeypatch):
    """Meta-BTS's two bootstrappings share their expanded diagonals; each computes them again,
    so its plan's peak-live bytes and arena stay within 10 % of one bootstrapping's (measured
    at N = 256: 1.00x; 1.43x when they were kept from the first to the second)."""
    from ren.ckks.circuits import MetaBootstrapper

    bt, ev, ct = lean_bootstrapping
    meta = MetaBootstrapper(bt, keep_level=True)
    _, one = _plan(bt.bootstrap(ev, ct))
    _, two = _plan(meta.bootstrap(ev, ct))
    assert two.peak_live_bytes <= 1.1 * one.peak_live_bytes
    assert two.arena_bytes <= 1.1 * one.arena_bytes
    monkeypatch.setattr(sched, "REGENERATE_DEPTH", 0)  # the diagonals kept between the two
    _, kept = _plan(meta.bootstrap(ev, ct))
    assert kept.peak_live_bytes > 1.25 * one.peak_live_bytes


def test_rotated_digits_are_rotated_again_rather_than_kept(lean_bootstrapping, monkeypatch,
                                                           toposort_order):
    """A hoisted rotation's digits σ_b(d) (copies: one-input elementwise kernels) are read by
    its c0 and c1 inner products, which the schedule may place far apart; they are made again
    from d (kept instead of its n1 rotations) before the late read (N = 256: 2.19 MB peak
    live instead of 2.88)."""
    # measured in toposort's order: ren.memory_order's (the default) already places c1 beside
    # c0 and each leaf chain beside its reader, which leaves this mechanism less to do
    assert ren.settings.get("REN_MEMORY_ORDER") == 0  # (the toposort_order fixture)
    bt, ev, ct = lean_bootstrapping
    items, plan = _plan(bt.bootstrap(ev, ct))
    monkeypatch.setattr(sched, "REGENERATE_COPIES", False)
    kept_items, kept = _plan(bt.bootstrap(ev, ct))
    assert plan.peak_live_bytes < 0.9 * kept.peak_live_bytes

    def copies(schedule):
        return sum(1 for it in schedule if it.kind == "elementwise" and len(it.bufs) == 2)

    assert copies(items) > copies(kept_items)


def test_copies_are_made_again_only_in_plans_that_read_a_lean_key(lean_bootstrapping,
                                                                  monkeypatch):
    """``REGENERATE_COPIES = "lean"`` (the default): a plan over stored keys (the fast mode)
    keeps its rotated digits, which the time of making them again would cost (~2-3 % of the
    replay at N = 2^13); a plan over lean keys makes them again (the test above)."""
    from ren.ckks import Evaluator, KeyGenerator

    bt, lean_ev, ct = lean_bootstrapping
    with ren.random.seeded(1):
        kg = KeyGenerator(bt.params)
        ev = Evaluator(bt.params, kg.relin_key(), bt.keys(kg))

    def schedule(copies, evaluator=ev):
        monkeypatch.setattr(sched, "REGENERATE_COPIES", copies)
        return [(it.kind, it.bufs[0].again_of is not None)
                for it in _plan(bt.bootstrap(evaluator, ct))[0]]

    default, never, always = schedule("lean"), schedule(False), schedule(True)
    assert default == never and len(always) > len(never)
    assert sum(again for _, again in always) > sum(again for _, again in never)
    assert schedule("lean", lean_ev) == schedule(True, lean_ev)  # the lean mode: unchanged


def test_the_copies_rule_reads_public_samples_and_refuses_other_values():
    x = fresh(5)
    public = ren.Poly.from_random(RandomSpec("uniform", (), bytes(32), "python", public=True),
                                  RQ, "NTT")
    private = ren.Poly.from_random(RandomSpec("uniform", (), bytes(32), "python"), RQ, "NTT")

    def items(p):
        return sched._linearize(sched.run_passes(p.node).sink)

    lean, noisy = items((x * public).intt()), items((x * private).intt())
    assert sched.wants_copies(lean, "lean") and not sched.wants_copies(noisy, "lean")
    assert sched.wants_copies(noisy, True) and not sched.wants_copies(lean, False)
    for bad in ("yes", 1, None.__class__):
        with pytest.raises(ren.errors.ParameterError, match="REGENERATE_COPIES"):
            sched.wants_copies(lean, bad)
        with pytest.raises(ren.errors.ParameterError, match="'lean'"):
            sched.regenerate_leaf_chains(lean, copies=bad)


def test_a_value_computed_again_before_its_first_read_is_computed_once(lean_bootstrapping,
                                                                      monkeypatch,
                                                                      toposort_order):
    """An expansion toposort placed long before its first read is computed again there; the
    first computation, read by nothing, is dropped (N = 256: 100 or more NTTs and TO_RNS
    that ran for nothing)."""
    # measured in toposort's order: ren.memory_order's (the default) already places c1 beside
    # c0 and each leaf chain beside its reader, which leaves this mechanism less to do
    assert ren.settings.get("REN_MEMORY_ORDER") == 0  # (the toposort_order fixture)
    bt, ev, ct = lean_bootstrapping

    def unread(schedule, outs):
        reads = {_root(b) for it in schedule if it.kind != VIEW for b in it.bufs[1:]}
        return [it for it in schedule if it.kind != VIEW and _root(it.bufs[0]) not in reads
                and _root(it.bufs[0]) not in outs]

    items, _, outputs = realization.schedule_and_plan([p.node for p in
                                                       bt.bootstrap(ev, ct).parts])
    assert unread(items, {_root(storage_buffer(o)) for o in outputs}) == []
    original = sched.regenerate_leaf_chains
    monkeypatch.setattr(sched, "regenerate_leaf_chains",
                        lambda *a: original(*a[:4]))  # without the outputs: nothing dropped
    again = bt.bootstrap(ev, ct)
    kept_items, _ = _plan(again)
    assert len([it for it in unread(kept_items, set()) if it.kind == "ntt"]) >= 10
    assert len(kept_items) > len(items)


@pytest.mark.slow  # two Meta-BTS realizations: ~10 s on a quiet core
def test_a_meta_bts_computing_its_diagonals_again_gives_the_same_words(lean_bootstrapping,
                                                                      monkeypatch):
    from ren.ckks.circuits import MetaBootstrapper

    bt, ev, ct = lean_bootstrapping
    meta = MetaBootstrapper(bt, keep_level=True)
    again = meta.bootstrap(ev, ct)
    items, _ = _plan(again)
    got = [p.realize().numpy() for p in again.parts]
    monkeypatch.setattr(sched, "REGENERATE_DEPTH", 0)
    monkeypatch.setattr(sched, "REGENERATE_COPIES", False)
    replay.templates.clear()  # (the realization's template is keyed by the graph alone)
    kept = meta.bootstrap(ev, ct)
    kept_items, _ = _plan(kept)
    assert len(kinds(items, "to_rns")) > len(kinds(kept_items, "to_rns"))
    for a, b in zip(got, (p.realize().numpy() for p in kept.parts), strict=True):
        np.testing.assert_array_equal(a, b)


def _bench():
    import sys
    from pathlib import Path

    bench = Path(__file__).resolve().parent.parent / "benchmarks"
    if str(bench) not in sys.path:
        sys.path.insert(0, str(bench))
    return importlib.import_module("bench_bootstrap")


@pytest.mark.parametrize("shape", ["balanced", "levels", "precision"])
def test_the_dry_runs_levels_are_the_bootstrappers(shape):
    """`bench_bootstrap.estimate_memory`'s levels (what ``--dry-run`` prints as levels left)
    against a `Bootstrapper` of the same shape, with the dense secret that encapsulates as
    n16's does."""
    from ren.ckks.circuits import Bootstrapper, bootstrap_params_small
    from ren.ckks.circuits.presets import bootstrap_shape

    params = bootstrap_params_small("python", N=1024, secret="ternary")
    kwargs = bootstrap_shape(params, shape)
    levels = _bench().estimate_memory(params, **kwargs)["levels"]
    bt = Bootstrapper(params, **kwargs)
    assert (levels["CoeffToSlot"], levels["EvalMod"], levels["SlotToCoeff"]) == (
        bt.cts_levels, bt.evalmod_levels, bt.stc_levels)
    assert levels["depth"] - bt.levels_used == bt.output_level


def test_the_n16_levels_shape_leaves_twelve_levels(capsys):
    """Issue 41: at least 12 levels for the user's circuit at N = 2^16 (the dry run, from the
    parameters alone); the balanced shape leaves two fewer."""
    bench = _bench()
    left = {}
    for shape in ("balanced", "levels"):
        est = bench.dry_run("n16", 8, "preset", [1], shape, meta=True, keep_level=True)
        lv = est["levels"]
        left[shape] = lv["depth"] - lv["CoeffToSlot"] - lv["EvalMod"] - lv["SlotToCoeff"]
        assert f"{left[shape]} left for the user's circuit" in capsys.readouterr().out
    assert left["levels"] >= 12 and left["levels"] == left["balanced"] + 2


def test_coefficient_diagonals_are_held_one_giant_step_at_a_time(lean_bootstrapping,
                                                                 monkeypatch, toposort_order):
    """Single hoisting over coefficient-form diagonals gives each giant step's inner sum its
    own buffer: without it pass 5 fuses a transform's whole c0 path into one kernel that
    reads every expanded diagonal at once (n16's levels shape: 511 diagonals, ~6 GiB).  The
    plan's widest elementwise kernel reads half as many buffers, its peak-live bytes do not
    grow, and the words stay the same.  (Pass 4's fused roundings now keep every giant step's
    mod-down correction until the transform's rescale, which sets the peak: with
    `elision.MAX_TERMS = 0`, the form before, the buffers cut it to 0.78x at N = 256.)"""
    # measured in toposort's order: ren.memory_order's (the default) already places c1 beside
    # c0 and each leaf chain beside its reader, which leaves this mechanism less to do
    assert ren.settings.get("REN_MEMORY_ORDER") == 0  # (the toposort_order fixture)
    from ren.ckks.circuits import lintrans
    from ren.passes import elision

    def widest(items) -> int:
        return max(len(it.bufs) for it in items if it.kind == "elementwise")

    bt, ev, ct = lean_bootstrapping
    out = bt.bootstrap(ev, ct)
    items, plan = _plan(out)
    monkeypatch.setattr(lintrans, "GIANT_STEP_BUFFERS", False)
    fused_out = bt.bootstrap(ev, ct)
    fused_items, fused = _plan(fused_out)
    assert 2 * widest(items) <= widest(fused_items)  # measured 22 against 44 at N = 256
    assert plan.peak_live_bytes <= fused.peak_live_bytes
    monkeypatch.setattr(elision, "MAX_TERMS", 0)
    _, fused_old = _plan(bt.bootstrap(ev, ct))
    monkeypatch.setattr(lintrans, "GIANT_STEP_BUFFERS", True)
    _, plan_old = _plan(bt.bootstrap(ev, ct))
    assert plan_old.peak_live_bytes < 0.85 * fused_old.peak_live_bytes
    monkeypatch.setattr(elision, "MAX_TERMS", 1)  # one correction gathered per rounding
    _, one = _plan(bt.bootstrap(ev, ct))
    assert one.peak_live_bytes < 0.9 * plan.peak_live_bytes  # measured 1.75 against 2.15 MB
    ren.realize(list(out.parts) + list(fused_out.parts))
    assert all(np.array_equal(a.coefficients(), b.coefficients())
               for a, b in zip(out.parts, fused_out.parts, strict=True))
