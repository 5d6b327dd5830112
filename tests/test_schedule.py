"""The scheduler: every pass preserves values, kernel counts, invariants, standalone passes."""

from __future__ import annotations

import numpy as np
import pytest

import ren
from ren import contracts
from ren.corpus import PROGRAMS, RING, build
from ren.errors import ScheduleError
from ren.interpret import check_pass, evaluate_sink
from ren.node import Node, toposort
from ren.nxgraph import from_networkx, to_networkx
from ren.ops import DType, Op
from ren.passes import PASSES, get_pass, p12_kernelize
from ren.reference import evaluate
from ren.schedule import ScheduleContext, as_sink, linearize, run_passes, schedule

CORPUS = sorted(PROGRAMS)


def realized(seed: int, domain: str = "COEFF", ring=RING) -> ren.Poly:
    """A buffer-backed Poly (as if realized) with deterministic residues."""
    rng = np.random.default_rng(seed)
    res = np.stack([rng.integers(0, q, ring.N) for q in ring.moduli])
    return ren.Poly.from_residues(res, ring, domain)


def compute_kernels(outputs) -> list:
    return [k for k in schedule(*outputs) if k.kind not in ("view", "copy")]


@pytest.mark.parametrize("name", CORPUS)
def test_every_pass_preserves_values(name):
    outputs = build(name)
    expected = evaluate(*outputs)
    trace = run_passes(*outputs, trace=True)
    assert [g for g, _ in trace.graphs][-1] == "12_kernelize"
    assert len(trace.graphs) == 13
    for stage, graph in trace.graphs:
        got = evaluate_sink(graph)
        assert len(got) == len(expected), stage
        for i, (g, e) in enumerate(zip(got, expected)):
            assert np.array_equal(g, e), f"{name}: output {i} differs after {stage}"


@pytest.mark.parametrize("name", CORPUS)
def test_no_round_trip_conversions_after_pass_4(name):
    sink = run_passes(*build(name), upto=4).sink
    for n in toposort(sink):
        if n.op in (Op.NTT, Op.INTT):
            other = Op.INTT if n.op is Op.NTT else Op.NTT
            assert n.src[0].op is not other, f"{name}: {n.op.name}({other.name}(x)) survived"


@pytest.mark.parametrize("name", CORPUS)
def test_post_kernelize_invariant(name):
    sink = run_passes(*build(name)).sink
    p12_kernelize.check(sink)  # raises on violation
    for n in toposort(sink):
        assert n.op in p12_kernelize.CONTRACT.ops


def test_invariant_check_rejects_unlowered_graph():
    a = realized(1)
    sink = run_passes(a + a, upto=11).sink  # STOREs not yet kernels
    with pytest.raises(ScheduleError, match="STORE may not appear after pass 12"):
        p12_kernelize.check(sink)


def test_fused_chain_is_one_kernel():
    a, b, c, d = (realized(i, "NTT") for i in range(4))
    kernels = compute_kernels([(a + b) * c + d])
    assert [k.kind for k in kernels] == ["elementwise"]


def test_elementwise_with_constants_views_and_automorphisms_fuses():
    from ren.corpus import RING_QP

    x = realized(5, "COEFF", RING_QP)
    y = x.to_ring(RING_QP.sub(1, 4))  # view -> fused into loads
    z = (y.conjugate() * 3 - y + 1).automorph(5)  # automorphisms in COEFF, constants
    kernels = compute_kernels([z])
    assert [k.kind for k in kernels] == ["elementwise"]


def test_coeff_product_schedules_two_ntts_and_one_multiply():
    a, b = realized(1), realized(2)
    kinds = sorted(k.kind for k in compute_kernels([a * b]))
    assert kinds == ["elementwise", "ntt", "ntt"]
    kinds = sorted(k.kind for k in compute_kernels([(a * b).intt()]))
    assert kinds == ["elementwise", "intt", "ntt", "ntt"]


def test_shared_subexpression_is_computed_once():
    a, b, c = realized(1, "NTT"), realized(2, "NTT"), realized(3, "NTT")
    s = (a + b) * c
    kernels = compute_kernels([s + 1, s * 2])
    # one kernel computes s, two consume it; s's MONTMUL appears exactly once overall
    montmuls = sum(1 for k in kernels for n in toposort(k.ast) if n.op is Op.MONTMUL
                   and all(src.op is Op.LOAD or src.op is Op.MODADD for src in n.src[:2]))
    assert len(kernels) == 3
    assert montmuls == 1


def test_rotation_lowers_to_galois_elements():
    a = realized(1, "NTT")
    sink = run_passes(a.rotate(-1), a.conjugate(), upto=2).sink
    gs = sorted(n.arg for n in toposort(sink) if n.op is Op.AUTOMORPH)
    two_n = 2 * RING.N
    assert gs == sorted([pow(5, -1, two_n), two_n - 1])
    assert not any(n.op in (Op.ROTATE, Op.CONJUGATE) for n in toposort(sink))


def test_coefficient_automorphism_uses_signed_map():
    a = realized(1, "COEFF")
    sink = run_passes(a.rotate(1), upto=8).sink
    ops = {n.op for n in toposort(sink)}
    assert Op.WHERE in ops and Op.REINDEX in ops and Op.NTT not in ops


def test_domain_injection_rules():
    a = realized(1, "COEFF")
    b = realized(2, "NTT")
    sink = run_passes(a * b, b.rescale(RING.moduli[-1]), a.rotate(2), upto=3).sink
    for n in toposort(sink):
        if n.op is Op.MUL:
            assert all(ren.spec_of(s).domain is ren.Domain.NTT for s in n.src)
        if n.op in (Op.AUTOMORPH,):
            assert ren.spec_of(n.src[0]).domain is ren.Domain.NTT
        if n.op is Op.RESCALE:
            assert ren.spec_of(n.src[0]).domain is ren.Domain.COEFF


def test_view_for_contiguous_subset_and_gather_for_other():
    from ren.corpus import RING_QP

    x = realized(4, "NTT", RING_QP)
    items = schedule(x.to_ring(RING_QP.sub(2, 5)).intt())
    view = [k for k in items if k.kind == "view"]
    assert len(view) == 1
    v, base = view[0].bufs
    assert v.base is base and v.offset == 2 * RING_QP.N and v.shape == (3, RING_QP.N)


def test_simplify_rules_fire():
    a = realized(1)
    ctx = ScheduleContext()
    neg = -a
    sink = run_passes(a + 0, a * 1, a - a, -neg, a.to("python"), a.to_ring(RING), upto=1,
                      ctx=ctx).sink
    assert sink.src[0] is a.node and sink.src[1] is a.node and sink.src[3] is a.node
    assert sink.src[4] is a.node and sink.src[5] is a.node
    assert sink.src[2].src[0].op is Op.CONST and sink.src[2].src[0].arg[0] == 0
    fired = ctx.stats["simplify"]
    for rule in ("add_zero", "mul_one", "sub_self", "neg_neg", "copy_same_device",
                 "to_ring_same"):
        assert fired[rule] >= 1, rule


def test_each_pass_runs_standalone_and_on_networkx_graphs():
    outputs = build("keyswitch")
    expected = evaluate(*outputs)
    ctx = ScheduleContext(outputs=as_sink(*outputs).src)
    sink = as_sink(*outputs)
    for num, name, mod in PASSES:
        rebuilt = from_networkx(to_networkx(sink))
        assert rebuilt is sink  # networkx round trip is exact
        sink = mod.run(rebuilt, ctx)
        for g, e in zip(evaluate_sink(sink), expected):
            assert np.array_equal(g, e), f"after {num:02d}_{name}"
    assert get_pass(12) is p12_kernelize and get_pass("12_kernelize") is p12_kernelize
    assert len(linearize(sink)) > 0


def test_pass_modules_document_themselves():
    for num, name, mod in PASSES:
        doc = mod.__doc__ or ""
        assert doc.startswith(f"Pass {num} "), name
        assert "After" in doc and "Leaves" in doc, name


def test_check_pass_detects_a_broken_pass():
    a, b = realized(1), realized(2)
    before = as_sink(a + b)
    broken = as_sink(a - b)
    with pytest.raises(ScheduleError, match="changed value"):
        check_pass(before, broken)


def test_ren_check_mode_verifies_while_scheduling():
    outputs = build("rotations")
    ctx = ScheduleContext(check=True)
    run_passes(*outputs, ctx=ctx)  # raises if any pass changed a value


def test_becomes_map_points_outputs_at_buffers():
    a, b = realized(1), realized(2)
    c = a * b
    ctx = ScheduleContext()
    run_passes(c, a, ctx=ctx)
    mapped = ctx.becomes_map[c.node]
    assert mapped.op is Op.AS_RING and mapped.src[0].op is Op.BUFFER
    assert ctx.becomes_map[a.node] is a.node  # already realized: maps to itself


def test_rewrite_driver_reports_cycles():
    from ren.rewrite import P, X, rewrite

    x = Node(Op.GIDX, DType.INDEX, (), 1)
    flip = [(P(Op.IADD, X("a"), X("b")), lambda a, b: Node(Op.IADD, DType.INDEX, (b, a)),
             "flip")]
    with pytest.raises(ScheduleError, match="flip"):
        rewrite(Node(Op.IADD, DType.INDEX, (x, Node(Op.ICONST, DType.INDEX, (), 3))), flip)


def test_deep_chains_do_not_recurse():
    a = realized(1, "NTT")
    acc = a
    for i in range(3000):
        acc = acc + a if i % 2 else acc * a
    kernels = compute_kernels([acc])
    assert [k.kind for k in kernels] == ["elementwise"]


# -- checks that can fail: found by a mutation run (tools/mutate.py) -------------------------------
def test_as_sink_rejects_what_is_not_a_node():
    a = realized(1)
    for bad in ((), (a, 3), (3,), ([a, "x"],)):
        with pytest.raises(ScheduleError, match="give a SINK node"):
            schedule(*bad)
    assert as_sink(a, [a, a.node]).src == (a.node,) * 3


def test_a_full_run_checks_the_kernels_it_made(monkeypatch):
    """`run_passes` ends with the kernelize contract check, on the final graph, whenever pass
    12 ran (and not before: earlier graphs hold no kernels yet); REN_CHECK checks every pass."""
    seen = []
    real = contracts.check
    monkeypatch.setattr(contracts, "check",
                        lambda sink, c, name, ctx=None: seen.append((c.stage, sink))
                        or real(sink, c, name, ctx))
    a, b = realized(1, "NTT"), realized(2, "NTT")
    run_passes(a * b, upto=11)
    assert seen == []
    final = run_passes(a * b + 1).sink
    assert seen == [(12, final)]
    seen.clear()
    run_passes(a * b + 1, ctx=ScheduleContext(check=True))
    assert [stage for stage, _ in seen] == list(range(1, 13))


def test_an_extension_undone_by_a_selection_costs_nothing():
    """TO_RING(TO_RING(x, bigger), x's ring) composes to TO_RING(x, x's ring), which is x: the
    basis extension is never computed (and the value is x's)."""
    from ren.corpus import RING_QP

    x = realized(3)
    y = x.to_ring(RING_QP).to_ring(RING)
    assert compute_kernels([y]) == []
    z = x.to_ring(RING_QP).to_ring(RING.sub(1, 3))  # a view of x, copied out as the output
    assert [k.kind for k in compute_kernels([z])] == ["elementwise"]
    assert np.array_equal(evaluate(z)[0], x.numpy()[1:3])


def test_gc_paused_nests_and_restores_the_collector():
    import gc

    from ren.schedule import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()  # restored on the way out of an exception too
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # a collector that was off stays off
    finally:
        gc.enable()


def test_gc_paused_ages_what_the_block_kept_without_a_collection():
    """What a pause kept goes to the oldest generation when it ends (no young collection
    scans it); a program's own frozen objects stay frozen."""
    import gc

    from ren.schedule import gc_paused

    def oldest(o) -> bool:
        return any(x is o for x in gc.get_objects(generation=2))

    class Kept:
        pass

    collections: list[int] = []

    def count(phase, info):
        if phase == "start":
            collections.append(info["generation"])

    gc.collect()
    gc.callbacks.append(count)
    try:
        with gc_paused():
            kept = [Kept() for _ in range(3000)]  # past the young generation's threshold
        assert oldest(kept) and oldest(kept[-1])
        young = [Kept()]  # the next allocations find the young generation empty
        assert collections == []
        assert not oldest(young)
    finally:
        gc.callbacks.remove(count)
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with gc_paused():
            later = [Kept()]
        assert gc.get_freeze_count() == frozen  # not unfrozen by the pause
        assert not oldest(later)  # (and nothing aged: that would have unfrozen them)
    finally:
        gc.unfreeze()


def test_captures_and_eager_compiles_run_with_the_collector_paused(monkeypatch):
    """The whole jit capture (trace, passes, memory plan, lowering, first run) and an eager
    realization's compile run without full collections; the collector is back on after."""
    import gc

    import ren.realization as realization

    seen: dict[str, bool] = {}

    @ren.jit
    def f(a, b):
        seen["trace"] = gc.isenabled()
        return a * b

    a, b = realized(1), realized(2)
    f(a, b).realize()
    assert seen["trace"] is False and gc.isenabled()

    compile_template = realization.compile_template

    def spy(*args, **kw):
        seen["eager"] = gc.isenabled()
        return compile_template(*args, **kw)

    monkeypatch.setattr(realization, "compile_template", spy)
    ((a - b) * b).realize()
    assert seen["eager"] is False and gc.isenabled()
