"""Node's two constructors: the compiled one (`ren._node`, ren/_node.c, built by the install) and
the Python reference (`ren.node._py_new`) share one table, so each must find what the other
made, and both must refuse the same bad input.  The hash-consing tests of test_ir.py and the
table tests of test_threads.py run again with the Python one in a process of its own."""

from __future__ import annotations

import importlib.abc
import os
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ren
import ren.node as node_mod
import ren.random
import ren.rewrite as rewrite_mod
from ren.ckks import CKKSParams, Encoder, Encryptor, Evaluator, KeyGenerator
from ren.errors import ScheduleError
from ren.node import Node, _py_new, toposort
from ren.ops import DType, Op
from ren.passes import get_pass
from ren.rewrite import P, Provenance, RuleSet, X
from ren.ring import Domain, RingSpec
from ren.schedule import ScheduleContext, as_sink
from ren.spec import spec_of

ROOT = Path(__file__).resolve().parents[1]
compiled = pytest.mark.skipif(not node_mod.C_CORE,
                              reason="ren._node is not built (no C compiler at install)")

args = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2, allow_nan=False)
    | st.text(max_size=3),
    lambda inner: st.tuples(inner, inner) | st.tuples(inner),
    max_leaves=4)


@compiled
@given(op=st.sampled_from([Op.CONST, Op.ICONST, Op.TABLE]),
       dtype=st.sampled_from([DType.U32, DType.INDEX]), arg=args,
       python_first=st.booleans())
def test_each_constructor_finds_what_the_other_made(op, dtype, arg, python_first):
    if python_first:
        leaf = _py_new(Node, op, dtype, (), arg)
        assert Node(op, dtype, (), arg) is leaf
    else:
        leaf = Node(op, dtype, (), arg)
        assert _py_new(Node, op, dtype, (), arg) is leaf
    assert (leaf.op, leaf.dtype, leaf.src, leaf.arg, leaf._spec) == (op, dtype, (), arg, None)
    assert type(leaf.arg) is type(arg)
    user = Node(Op.NEG, dtype, [leaf], arg)  # a list of sources becomes the tuple
    assert user.src == (leaf,) and type(user.src) is tuple
    assert _py_new(Node, Op.NEG, dtype, (leaf,), arg) is user


@compiled
def test_the_compiled_constructor_takes_keywords_and_defaults():
    a = Node(Op.ICONST, DType.INDEX, (), 7)
    n = Node(Op.NEG, DType.INDEX, (a,))
    assert Node(op=Op.NEG, dtype=DType.INDEX, src=(a,), arg=None) is n
    assert Node(Op.NEG, DType.INDEX, src=iter([a])) is n
    bare = Node(Op.SINK)
    assert (bare.dtype, bare.src, bare.arg) == (DType.U32, (), None)
    assert bare is _py_new(Node, Op.SINK)


@compiled
@pytest.mark.parametrize("bad", [
    lambda make: make(Node),  # no op
    lambda make: make(Node, Op.NEG, DType.U32, 5),  # sources not iterable
    lambda make: make(Node, Op.CONST, DType.U32, (), [1, 2]),  # an unhashable arg
])
def test_both_constructors_refuse_the_same_input(bad):
    for make in (lambda cls, *a, **k: cls(*a, **k), _py_new):
        with pytest.raises(TypeError):
            bad(make)


@compiled
def test_the_compiled_constructor_is_what_node_runs_and_its_entries_leave():
    import gc

    assert Node.__new__ is node_mod._node.NodeBase.__new__  # (not a Python __new__)
    gc.collect()
    before = len(node_mod._refs)
    keep = [Node(Op.CONST, DType.U32, (), ("compiled-leaf", i)) for i in range(100)]
    assert len(node_mod._refs) == before + 100
    del keep
    assert len(node_mod._refs) == before  # the compiled weak-reference callback dropped them


def test_a_stale_build_is_not_used(monkeypatch):
    """A build whose recorded source digest is not ren/_node.c's is refused, with a warning."""
    if node_mod._node is None:
        pytest.skip("ren._node is not built")
    # setup.py and ren.node hash the same files the same way: the build's digest is the tree's
    assert node_mod._source_digest() == node_mod._node.SOURCE
    assert {p.name for p in Path(node_mod.__file__).parent.glob("_*.[ch]")} == {
        "_core.h", "_node.c", "_rewrite.c"}
    monkeypatch.setattr(node_mod._node, "SOURCE", "0" * 64)
    with pytest.warns(RuntimeWarning, match="changed since ren._node was built"):
        assert node_mod._compiled() is None
    monkeypatch.undo()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert node_mod._compiled() is node_mod._node


def test_the_node_tests_pass_with_the_python_constructor():
    env = {**os.environ, "REN_PY_CORE": "1"}
    check = subprocess.run([sys.executable, "-c", "import ren.node as n; "
                            "print(n.C_CORE, n.Node.__new__ is n._py_new)"],
                           env=env, capture_output=True, text=True, cwd=ROOT)
    assert check.stdout.split() == ["False", "True"], check.stderr
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "tests/test_ir.py", "tests/test_threads.py", "-k",
                          "HashConsing or Immutability or node or dead"],
                         env=env, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]


# -- the rewrite walk: ren._node.rewrite_walk against ren.rewrite._walk ------------------------
def _index_rules() -> RuleSet:
    """Small INDEX algebra: folds, identities, and a rule whose result is rewritten again."""
    def fold(a, b, n):
        f = {Op.IADD: int.__add__, Op.IMUL: int.__mul__}[n.op]
        return Node(Op.ICONST, DType.INDEX, (), f(a.arg, b.arg))

    const = P(Op.ICONST, name="c")
    return RuleSet([
        (P({Op.IADD, Op.IMUL}, P(Op.ICONST, name="a"), P(Op.ICONST, name="b"), name="n"), fold,
         "fold"),
        (P(Op.IADD, X("x"), P(Op.ICONST, arg=0), commutative=True), lambda x: x, "add_zero"),
        (P(Op.IMUL, X("x"), P(Op.ICONST, arg=1), commutative=True), lambda x: x, "mul_one"),
        # x*c -> c*x for a constant c on the right (then mul_one/fold may fire on the result)
        (P(Op.IMUL, X("x", where=lambda n: n.op is not Op.ICONST), const),
         lambda x, c: Node(Op.IMUL, DType.INDEX, (c, x)), "const_left"),
        # x + x -> 2*x: one name bound twice must be one node
        (P(Op.IADD, X("x"), X("x")),
         lambda x: Node(Op.IMUL, DType.INDEX, (Node(Op.ICONST, DType.INDEX, (), 2), x)), "twice"),
        # (g + c) with g an index: asks for ctx and orig (the node as the walk met it)
        (P(Op.IADD, P(Op.GIDX, name="g"), P(Op.ICONST, name="c"), commutative=True),
         _add_to_index, "index_plus"),
        (P(Op.GIDX, name="n"), lambda n: n, "keeps"),  # gives its own node: not a firing
    ])


def _add_to_index(g, c, ctx, orig):
    """Declines (None) unless the node was met with those very operands; then folds g + 3 only."""
    assert ctx is None and isinstance(orig, Node)
    return Node(Op.GIDX, DType.INDEX, (), g.arg + 10) if c.arg == 3 else None


leaves = st.sampled_from([("c", 0), ("c", 1), ("c", 2), ("c", 3), ("g", 0), ("g", 1)])
exprs = st.recursive(leaves, lambda inner: st.tuples(st.sampled_from(["+", "*"]), inner, inner),
                     max_leaves=24)


def _build(e) -> Node:
    if e[0] == "c":
        return Node(Op.ICONST, DType.INDEX, (), e[1])
    if e[0] == "g":
        return Node(Op.GIDX, DType.INDEX, (), e[1])
    op = Op.IADD if e[0] == "+" else Op.IMUL
    return Node(op, DType.INDEX, (_build(e[1]), _build(e[2])))


def _both(root: Node, rs: RuleSet, enter=None, most: int = rewrite_mod.MAX_REWRITES,
          walks=("c", "py"), keeps=None):
    """(result, stats) from the compiled walk and from the Python one, same arguments;
    `keeps()` gives each walk its (keep_rebuilt, keep_fired) callbacks."""
    def on_cycle(n, trail):
        raise ScheduleError(f"cycling: {', '.join(dict.fromkeys(trail[-8:]))}")

    got = []
    for walk in walks:
        stats: dict = {}
        rebuilt, fired = keeps() if keeps is not None else (None, None)
        if walk == "c":
            out = node_mod._node.rewrite_walk(root, rs._compiled, None, enter, rebuilt, fired,
                                              on_cycle, stats, most)
        else:
            out = rewrite_mod._walk(root, rs, None, enter, rebuilt, fired, on_cycle, stats, {},
                                    None, "t")
        got.append((out, stats))
    return got


@compiled
@given(e=exprs)
def test_the_compiled_walk_takes_the_python_walks_steps(e):
    root = Node(Op.SINK, DType.INDEX, (_build(e),))
    (c_out, c_stats), (py_out, py_stats) = _both(root, _index_rules())
    assert c_out is py_out  # hash-consed: the same graph is the same node
    assert c_stats == py_stats
    # and the rules did reach their fixed point: nothing left to fold
    assert all(not (n.op in (Op.IADD, Op.IMUL) and all(s.op is Op.ICONST for s in n.src))
               for n in toposort(c_out))


@compiled
def test_the_compiled_walk_keeps_boundaries_counts_and_raises_as_python_does():
    g0, g1 = (Node(Op.GIDX, DType.INDEX, (), i) for i in range(2))
    zero, one = (Node(Op.ICONST, DType.INDEX, (), v) for v in (0, 1))
    inner = Node(Op.IADD, DType.INDEX, (g0, zero))
    root = Node(Op.SINK, DType.INDEX, (Node(Op.IMUL, DType.INDEX, (inner, one)), inner))
    rs = _index_rules()
    # `enter` False: a boundary is kept as it is, its sources not visited
    (c_out, c_stats), (py_out, py_stats) = _both(root, rs, enter=lambda n: n is not inner)
    assert c_out is py_out and c_out.src == (inner, inner) and c_stats == py_stats == {
        "mul_one": 1}
    # a rule that raises: the same exception out of both walks
    boom = RuleSet([(P(Op.IADD, name="n"), lambda n: 1 // 0, "boom")])
    for walk in ("c", "py"):
        with pytest.raises(ZeroDivisionError):
            _both(root, boom, walks=(walk,))
    # rules that cycle: both stop after `most` firings, naming them
    flip = RuleSet([(P(Op.IADD, X("a"), X("b")),
                     lambda a, b: Node(Op.IADD, DType.INDEX, (b, a)), "flip")])
    expr = Node(Op.IADD, DType.INDEX, (g0, g1))
    with pytest.raises(ScheduleError, match="cycling: flip"):
        node_mod._node.rewrite_walk(expr, flip._compiled, None, None, None, None,
                                    lambda n, t: _raise(ScheduleError(f"cycling: {t[-1]}")), {},
                                    5)
    with pytest.raises(ScheduleError, match="rewriting did not reach a fixed point after "
                                            r"\d+ steps at a IADD node; rules cycling: flip"):
        rewrite_mod.rewrite(expr, flip)  # (the public driver, compiled here)
    # a ctx without `stats` (any object the rules want) is passed through, not counted into
    folded = rewrite_mod.rewrite(Node(Op.IMUL, DType.INDEX, (g0, one)), rs, ctx=SimpleNamespace())
    assert folded is g0


def _raise(e: BaseException):
    raise e


@compiled
@pytest.mark.parametrize("num", [1, 2, 3, 4])
def test_the_passes_give_the_same_graph_and_counts_either_walk(num):
    """Passes 1-4 (`keep_specs`: domain restorations) on a CKKS multiply, compiled walk (no
    provenance) against the Python walk (a Provenance asks for it)."""
    params = CKKSParams(N=16, depth=2, scale_bits=24, device="python", insecure=True)
    with ren.random.seeded(3):
        kg = KeyGenerator(params)
        ev = Evaluator(params, kg.relin_key())
        enc = Encryptor(params, kg.public_key())
        ct = enc.encrypt(Encoder(params).encode(np.full(params.slots, 0.5)))
        prod = ev.rescale(ev.multiply(ct, ct))
    a, b = prod.parts
    # folds (x*1, a double negation), round trips, automorphisms, rescales: rules of each pass
    twice = -a
    out = (a * b).intt().ntt() - a * 1 + (-twice) + b.intt().rotate(3).conjugate().ntt()
    sink = as_sink(out.node, b.node)
    for earlier in range(1, num):
        sink = get_pass(earlier).run(sink, ScheduleContext(outputs=sink.src))
    runs = []
    for prov in (None, Provenance()):
        ctx = ScheduleContext(outputs=sink.src)
        ctx.provenance = prov
        runs.append((get_pass(num).run(sink, ctx), dict(ctx.stats)))
    assert runs[0][0] is runs[1][0] and runs[0][1] == runs[1][1]
    assert sum(sum(c.values()) for c in runs[0][1].values()) > 0  # (rules did fire)


def test_a_build_that_does_not_load_warns(monkeypatch):
    """A ren._node that fails to load (not one that is missing) is said, not silently skipped."""
    class Broken(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "ren._node":
                raise ImportError("undefined symbol: _PyLong_GetOne")
            return None

    monkeypatch.delattr(ren, "_node", raising=False)
    monkeypatch.delitem(sys.modules, "ren._node", raising=False)
    monkeypatch.setattr(sys, "meta_path", [Broken(), *sys.meta_path])
    with pytest.warns(RuntimeWarning, match="ren._node does not load.*undefined symbol"):
        assert node_mod._compiled() is None


@compiled
@given(e=exprs)
def test_the_compiled_rules_match_and_apply_as_the_python_ones(e):
    """`apply_rules` (compiled patterns) against RuleSet.apply (Pat.match) on every node of a
    random graph: the same (replacement, rule) or None."""
    rs = _index_rules()
    for n in toposort(_build(e)):
        rules = rs._compiled.get(n.op)
        want = rs.apply(n, None, n)
        got = None if rules is None else node_mod._node.apply_rules(rules, n, None, n)
        assert got == want


def _product_folding_to_a_constant() -> Node:
    """a·(b·0): a product of two polynomials (NTT) whose operand folds to a constant, so the
    rebuilt product would infer a's COEFF domain: the driver restores NTT (keep_domain)."""
    ring = RingSpec.generate(16, 2)
    a, b = (ren.Poly.from_coefficients(list(range(i, i + 16)), ring) for i in (1, 5))
    return as_sink((a * (b * 0) + a.ntt()).node)


def test_both_walks_restore_domains_and_the_python_one_records_provenance():
    sink = _product_folding_to_a_constant()
    runs = []
    for prov in (None, Provenance()):  # the compiled walk where built; the Python one
        ctx = ScheduleContext(outputs=sink.src)
        ctx.provenance = prov
        runs.append((get_pass(1).run(sink, ctx), dict(ctx.stats["simplify"])))
    (c_out, c_stats), (py_out, py_stats) = runs
    assert c_out is py_out and c_stats == py_stats and py_stats["keep_domain"] >= 1
    assert spec_of(c_out.src[0]).domain is Domain.NTT  # (the product's declared domain)
    firings = Counter(f.rule for f in prov.firings)
    assert firings == Counter(py_stats) and all(f.rules == "simplify" for f in prov.firings)
    assert all(prov.final(f.replaced) is not f.replaced for f in prov.firings)
    # specs are invariant: every firing's product has what it replaced's domain (restored)
    assert all(spec_of(f.product).domain is spec_of(f.replaced).domain for f in prov.firings)


@pytest.mark.parametrize("walk", ["c", "py"])
def test_a_chain_of_exactly_max_rewrites_firings_is_no_cycle(walk):
    """A rule that counts an ICONST down fires k times in a row at one node: k = MAX_REWRITES is
    allowed, one more is the cycle error."""
    if walk == "c" and not node_mod.C_CORE:
        pytest.skip("ren._node is not built")
    down = RuleSet([(P(Op.ICONST, name="c", where=lambda n: n.arg > 0),
                     lambda c: Node(Op.ICONST, DType.INDEX, (), c.arg - 1), "down")])
    most = rewrite_mod.MAX_REWRITES
    for k, ok in ((most, True), (most + 1, False)):
        root = Node(Op.SINK, DType.INDEX, (Node(Op.ICONST, DType.INDEX, (), k),))
        if ok:
            (out, stats), = _both(root, down, walks=(walk,))
            assert out.src[0].arg == 0 and stats == {"down": most}
        else:
            with pytest.raises(ScheduleError, match="cycling: down"):
                _both(root, down, walks=(walk,))


def test_rewrite_takes_the_compiled_walk_unless_provenance_is_recorded(monkeypatch):
    if not node_mod.C_CORE:
        pytest.skip("ren._node is not built")
    calls = []
    real = node_mod._node.rewrite_walk
    monkeypatch.setattr(rewrite_mod, "_core", SimpleNamespace(
        rewrite_walk=lambda *a: calls.append(a) or real(*a)))
    sink = _product_folding_to_a_constant()
    get_pass(1).run(sink, ScheduleContext(outputs=sink.src))
    assert len(calls) == 1
    traced = ScheduleContext(outputs=sink.src)
    traced.provenance = Provenance()
    get_pass(1).run(sink, traced)
    assert len(calls) == 1 and traced.provenance.firings


@compiled
@given(e=exprs)
def test_both_walks_call_the_keep_callbacks_alike_and_take_what_they_give(e):
    """keep_rebuilt (a rebuilt node's restoration: counted as keep_domain) and keep_fired (a
    rule's result's) are called with the same nodes in the same order by both walks, and what
    they return stands in for the node."""
    zero = Node(Op.ICONST, DType.INDEX, (), 0)
    logs: list[list] = []

    def keeps():
        log: list = []
        logs.append(log)

        def rebuilt(n, new):
            log.append(("rebuilt", n, new))
            return Node(Op.IADD, DType.INDEX, (new, zero)) if new.op is Op.IMUL else new

        def fired(new, out, rule):
            log.append(("fired", new, out, rule.name))
            if rule.name == "fold" and out.arg < 50:
                return Node(Op.GIDX, DType.INDEX, (), 100 + out.arg)
            return out
        return rebuilt, fired

    root = Node(Op.SINK, DType.INDEX, (_build(e),))
    (c_out, c_stats), (py_out, py_stats) = _both(root, _index_rules(), keeps=keeps)
    assert c_out is py_out and c_stats == py_stats and logs[0] == logs[1]
    if "fold" in c_stats:  # keep_fired's stand-ins for folded constants are in the graph
        assert any(n.op is Op.GIDX and n.arg >= 100 for n in toposort(c_out))
    if any(x[0] == "rebuilt" and x[2].op is Op.IMUL for x in logs[0]):
        assert c_stats["keep_domain"] >= 1
