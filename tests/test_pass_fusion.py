"""Fused passes (`ren.passes`, `ren.schedule`): a row of FUSABLE passes run as one walk gives
the same final graph, node for node (hash-consing makes that an identity but for the view
buffers pass 10 makes afresh), and the same rule
counts per pass as running them one by one; tracing, REN_CHECK and a replaced pass turn fusion
off.  (A bootstrapping's graph is compared in `tests/test_ckks_bootstrap.py`.)"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ren
from ren import random_programs as rp
from ren.corpus import PROGRAMS, build, poly
from ren.device import Buffer
from ren.dump import dump
from ren.errors import ScheduleError
from ren.ir import pnode, storage_buffer
from ren.node import Node, substitute, toposort
from ren.ops import DType, GroupOp, Op
from ren.passes import PASSES, default_pipeline, get_pass, kernel_shapes
from ren.rewrite import P, RuleSet, rewrite
from ren.schedule import (
    ScheduleContext,
    _fused_rules,
    _rows,
    _run_fused,
    as_sink,
    run_passes,
)

FUSED = [num for num, _, mod in PASSES if getattr(mod, "FUSABLE", False)]


def _entries(*nums: int) -> tuple:
    """(number, Pass) of the default pipeline's passes `nums`, as the scheduler's rows hold."""
    return tuple((i, p) for i, p in enumerate(default_pipeline(), 1) if i in nums)
RANGES = [(6, 12), (8, 12), (6, 7), (6, 9), (7, 12), (9, 12), (10, 11)]


def assert_fusion_changes_nothing(outputs, ranges=RANGES) -> None:
    """From the graph before `start` (made once), each range of passes fused and one by one:
    the same graph, the same becomes_map, the same counts, the same kernels."""
    for start, upto in ranges:
        ctx0 = ScheduleContext(fuse=False)
        base = run_passes(*outputs, upto=start - 1, ctx=ctx0).sink
        alone = ScheduleContext(fuse=False, outputs=ctx0.outputs, kernel_count=5)
        fused = ScheduleContext(outputs=ctx0.outputs, kernel_count=5)
        a = run_passes(base, start=start, upto=upto, ctx=alone).sink
        b = run_passes(base, start=start, upto=upto, ctx=fused).sink
        buffers = assert_same_graph(a, b, (start, upto))
        assert alone.kernel_count == fused.kernel_count
        assert fused.stats == alone.stats, (start, upto)
        assert alone.becomes_map.keys() == fused.becomes_map.keys()
        for k, u in alone.becomes_map.items():
            v = fused.becomes_map[k]
            assert (u.op, u.arg) == (v.op, v.arg), (start, upto)
            assert [buffers.get(storage_buffer(x), storage_buffer(x)) if x.op is Op.BUFFER else x
                    for x in u.src] == \
                [storage_buffer(y) if y.op is Op.BUFFER else y for y in v.src], (start, upto)


def assert_same_graph(a: Node, b: Node, where) -> dict[Buffer, Buffer]:
    """Node for node the same graph.  Passes 6 and 10 make new Buffers each time they run (a
    buffer is an object, not a value), so buffers are matched one to one by what they describe
    (device, shape, base, offset); every other node must match exactly.  Returns the matching."""
    order_a, order_b = toposort(a), toposort(b)
    assert len(order_a) == len(order_b), where
    buffers: dict[Buffer, Buffer] = {}

    def same_buffer(u: Buffer, v: Buffer) -> bool:
        if u is v or buffers.get(u) is v:
            return True
        if u in buffers or (u.device, u.shape, u.offset, u.no_opt) != \
                (v.device, v.shape, v.offset, v.no_opt):
            return False
        if (u.base is None) != (v.base is None) or \
                (u.base is not None and not same_buffer(u.base, v.base)):
            return False
        buffers[u] = v
        return True

    pos_a = {n: i for i, n in enumerate(order_a)}
    pos_b = {n: i for i, n in enumerate(order_b)}
    for x, y in zip(order_a, order_b, strict=True):
        if x is y:
            continue
        assert (x.op, x.dtype) == (y.op, y.dtype), (where, x, y)
        assert [pos_a[s] for s in x.src] == [pos_b[s] for s in y.src], (where, x, y)
        if x.op in (Op.BUFFER, Op.BUFFER_VIEW):
            assert same_buffer(x.arg, y.arg), (where, x, y)
        else:  # a node above a new buffer: the same but for its sources
            assert x.arg == y.arg, (where, x, y)
    assert len(set(buffers.values())) == len(buffers), where
    assert dump(a) == dump(b), where
    return buffers


def test_passes_6_and_8_to_12_are_the_fusable_row():
    assert FUSED == [6, 8, 9, 10, 11, 12]
    pipe = default_pipeline()
    assert [[n for n, _ in g] for g in _rows(pipe, 1, 12, fuse=True)] == \
        [[1], [2], [3], [4], [5], [6, 7, 8, 9, 10, 11, 12]]
    assert [[n for n, _ in g] for g in _rows(pipe, 9, 11, fuse=True)] == [[9, 10, 11]]
    assert [[n for n, _ in g] for g in _rows(pipe, 7, 9, fuse=True)] == [[7], [8, 9]]
    assert [[n for n, _ in g] for g in _rows(pipe, 6, 7, fuse=True)] == [[6, 7]]
    assert all(len(g) == 1 for g in _rows(pipe, 1, 12, fuse=False))


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_the_corpus_fused_and_one_by_one(program: str):
    assert_fusion_changes_nothing(build(program))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_programs_fused_and_one_by_one(data):
    prog = rp.build(rp.DrawChooser(data.draw))
    assert_fusion_changes_nothing(prog.outputs, [(6, 12)])


def test_a_schedule_runs_the_row_as_one_walk(monkeypatch):
    """Without a watcher, passes 8-12 never run on their own; each rule is counted under its
    pass."""
    calls: list[str] = []
    for num in FUSED:
        mod = get_pass(num)
        monkeypatch.setattr(mod.rules, "apply", _counting(mod.rules.apply, calls, mod.NAME))
    ctx = ScheduleContext()
    run_passes(*build("rotations"), ctx=ctx)
    assert ctx.stats["lower_automorphisms"]["automorph_to_index_map"] >= 1
    assert ctx.stats["kernelize"]["kernelize"] == ctx.kernel_count >= 1
    assert calls == []  # the fused RuleSet was asked, not the passes' own


def _counting(fn, calls, name):
    def apply(*args, **kwargs):
        calls.append(name)
        return fn(*args, **kwargs)
    return apply


@pytest.mark.parametrize("watch", ["trace", "check", "debug", "replaced"])
def test_watching_or_replacing_a_pass_runs_each_on_its_own(monkeypatch, watch):
    """Whoever looks at the graph between passes (a trace, REN_CHECK, REN_DEBUG=3 dumps) or
    replaces a pass's run gets each pass on its own."""
    ran: list[int] = []
    for num in FUSED:
        mod = get_pass(num)
        own = mod.run
        if watch == "replaced" and num == 10:
            def own(sink, ctx=None, _run=mod.run):  # a user's variant of pass 10
                return _run(sink, ctx)
        monkeypatch.setattr(mod, "run", _recording(own, ran, num))
        if not (watch == "replaced" and num == 10):  # the recorder passes for the module's own
            monkeypatch.setattr(mod.run, "__module__", mod.__name__)
    outputs = build("rotations")
    if watch == "trace":
        run_passes(*outputs, trace=True)
    elif watch == "check":
        run_passes(*outputs, ctx=ScheduleContext(check=True))
    elif watch == "debug":
        with ren.settings.override(REN_DEBUG=3):
            run_passes(*outputs)
    else:
        run_passes(*outputs)
    assert ran == ([10] if watch == "replaced" else FUSED)


def _recording(fn, ran, num):
    def run(sink, ctx=None):
        ran.append(num)
        return fn(sink, ctx)
    return run


def test_the_module_own_run_is_fused(monkeypatch):
    ran: list[int] = []
    mod = get_pass(9)
    monkeypatch.setattr(mod, "run", _recording(mod.run, ran, 9))
    monkeypatch.setattr(mod.run, "__module__", mod.__name__)
    run_passes(*build("constants"))
    assert ran == []


def test_fused_passes_need_rule_names_of_their_own(monkeypatch):
    """The counts per pass come from the rule names: two passes with one name cannot fuse."""
    clash = RuleSet([(P(Op.STORE, name="store"), lambda store: None, "kernelize")])
    monkeypatch.setattr(get_pass(11), "rules", clash)
    with pytest.raises(ScheduleError, match="passes indexify and kernelize both have a rule "
                                            "named 'kernelize'"):
        _run_fused(as_sink(*build("elementwise_chain")), ScheduleContext(), _entries(11, 12))


# -- kernel shapes: passes 11 and 12 lower each shape once (`ren.passes.kernel_shapes`) ---------
def _kernels(graph: Node) -> list[Node]:
    return [n for n in toposort(graph) if n.op is Op.KERNEL]


def test_kernels_of_one_shape_are_lowered_once(monkeypatch):
    """Two kernels computing the same expression of different buffers share one AST (lowered
    once), and each reads its own buffers; renaming back gives every kernel its real storage."""
    monkeypatch.setattr(kernel_shapes, "_shapes", {})
    lowered: list[Node] = []
    real = kernel_shapes.indexify_store
    monkeypatch.setattr(kernel_shapes, "indexify_store",
                        lambda store: lowered.append(store) or real(store))
    (own,) = get_pass(11).rules.rules  # pass 11's own rule: left the ring kernels only

    def ring_kernels_only(store):
        assert not kernel_shapes._is_elementwise(store), "the shortcut did not take it"
        return own_fn(store)

    own_fn = own.fn
    monkeypatch.setattr(own, "fn", ring_kernels_only)
    a, b, c, d = (poly(i) for i in range(4))
    outs = ((a + b) * 3, (c + d) * 3, (a - d) * 3)
    graph = run_passes(*outs).sink
    ew = [k for k in _kernels(graph) if k.arg.kind == "elementwise"]
    assert len(ew) == 3 and len(lowered) == 2  # (a+b)*3 and (c+d)*3: one shape
    by_ast: dict[Node, list[Node]] = {}
    for k in ew:
        by_ast.setdefault(k.arg.ast, []).append(k)
    (one, two), (other,) = sorted(by_ast.values(), key=len, reverse=True)
    assert len({one.arg.name, two.arg.name, other.arg.name}) == 3
    reads = [{storage_buffer(s) for s in k.src[1:]} for k in (one, two)]
    assert reads[0].isdisjoint(reads[1]) and len(reads[0]) == len(reads[1]) == 2
    monkeypatch.undo()  # (pass 11 on its own again, for the comparison)
    assert_fusion_changes_nothing(outs, [(8, 12)])


def test_stand_ins_keep_views_and_repeated_reads(monkeypatch):
    """A view becomes a view of its base's stand-in at the same offset; a storage node read
    twice is one stand-in; distinct nodes get distinct stand-ins."""
    outputs = build("ring_views")
    base = run_passes(*outputs, upto=10, ctx=ScheduleContext(fuse=False)).sink
    stores = [n for n in toposort(base) if n.op is Op.STORE]
    views = 0
    for store in stores:
        renamed, back = kernel_shapes.rename(store)
        to = {real: stand for stand, real in back.items()}
        assert len(to) == len(back)  # a bijection
        assert renamed is substitute(store, to)  # the store over the stand-ins, nothing else
        assert all(n in back for n in toposort(renamed) if n.op in GroupOp.STORAGE)
        for real, stand in to.items():
            assert storage_buffer(stand).shape == storage_buffer(real).shape
            if real.op is Op.BUFFER_VIEW:
                views += 1
                assert stand.op is Op.BUFFER_VIEW and stand.src[0] is to[real.src[0]]
                assert stand.arg.offset == real.arg.offset
            else:
                assert stand.op is Op.BUFFER
    assert views >= 1
    assert_fusion_changes_nothing(outputs, [(8, 12), (11, 12)])


def test_the_shape_table_is_bounded(monkeypatch):
    monkeypatch.setattr(kernel_shapes, "_shapes", {})
    monkeypatch.setattr(kernel_shapes, "SHAPES_KEPT", 1)
    assert_fusion_changes_nothing(build("elementwise_chain") + build("rotations"), [(8, 12)])
    assert len(kernel_shapes._shapes) == 1


def test_the_shortcut_counts_as_both_rules():
    """Each elementwise kernel counts once for indexify and once for kernelize, as if the two
    passes had run one by one; ring kernels are kernelized by pass 12's own rule."""
    outs = build("ntt_product")
    fused, alone = ScheduleContext(), ScheduleContext(fuse=False)
    run_passes(*outs, ctx=fused)
    run_passes(*outs, ctx=alone)
    assert fused.stats["indexify"] == alone.stats["indexify"]
    assert fused.stats["kernelize"] == alone.stats["kernelize"]
    assert 0 < fused.stats["indexify"]["indexify_store"] < fused.stats["kernelize"]["kernelize"]


def test_the_shortcut_joins_rows_that_hold_both_its_passes():
    """It goes where pass 11's rules go, before them (they keep the ring kernels), and only into
    a row that has passes 11 and 12."""
    def names(*nums: int) -> list[str]:
        rules, _ = _fused_rules(_entries(*nums))
        return [r.name for r in rules.rules]

    assert names(11, 12) == [kernel_shapes.NAME, "indexify_store", "kernelize"]
    row = names(8, 9, 10, 11, 12)
    assert row.index(kernel_shapes.NAME) + 1 == row.index("indexify_store")
    assert kernel_shapes.NAME not in names(8, 9, 10, 11) + names(12)


def test_a_recorder_that_changes_the_graph_is_refused(monkeypatch):
    mod = get_pass(7)

    def changes(sink, ctx=None):
        return Node(Op.SINK, DType.VOID, sink.src[:1])

    monkeypatch.setattr(changes, "__module__", mod.__name__)
    monkeypatch.setattr(mod, "run", changes)
    with pytest.raises(ScheduleError, match="becomes_map is RECORDS_ONLY but changed the graph"):
        run_passes(*build("multi_output"))


def test_rules_may_ask_for_the_node_as_the_walk_met_it():
    """``orig``: the node before its sources were rewritten (a fused walk's later passes may
    have lowered them into ops without a spec); without a rewrite of the sources, the node."""
    seen: list[tuple[Node, Node]] = []

    def record(n, orig):
        seen.append((n, orig))

    x = poly(1)
    neg = pnode(Op.NEG, pnode(Op.NEG, x.node))
    rules = RuleSet([
        (P(Op.NEG, P(Op.NEG, name="inner"), name="n"), lambda n, inner: inner.src[0], "twice"),
        (P(Op.ADD, name="n"), record, "look"),
    ])
    top = pnode(Op.ADD, neg, x.node)
    out = rewrite(top, rules)
    assert out is pnode(Op.ADD, x.node, x.node)
    ((n, orig),) = seen
    assert n is out and orig is top
    rewrite(out, rules)
    assert seen[-1] == (out, out)
