"""The IR: hash-consed immutable `Node`s, toposort, the text dump and the networkx round trip."""

from __future__ import annotations

import pickle

import networkx as nx
import pytest
from conftest import ring
from hypothesis import given
from hypothesis import strategies as st

import ren
from ren.dump import dump
from ren.errors import ScheduleError
from ren.node import Node, consumers, substitute, toposort
from ren.nxgraph import from_networkx, roundtrip, to_networkx
from ren.ops import DType, Op
from ren.poly import Poly


def iconst(v) -> Node:
    return Node(Op.ICONST, DType.INDEX, (), v)


def binop(op: Op, a: Node, b: Node) -> Node:
    return Node(op, DType.INDEX, (a, b))


# -- random DAGs of index arithmetic -------------------------------------------------------------
@st.composite
def index_dags(draw) -> Node:
    """A random DAG of ICONST / IADD / IMUL / IAND nodes (with shared and repeated sources),
    closed by a SINK over a few of its nodes."""
    nodes = [iconst(draw(st.integers(-3, 3))) for _ in range(draw(st.integers(1, 3)))]
    for _ in range(draw(st.integers(0, 12))):
        op = draw(st.sampled_from((Op.IADD, Op.IMUL, Op.IAND)))
        a = draw(st.sampled_from(nodes))
        b = draw(st.sampled_from(nodes))
        nodes.append(binop(op, a, b))
    roots = draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=3))
    return Node(Op.SINK, DType.VOID, tuple(roots))


def recipe_graph(recipe: list[tuple[str, int, int]], seed: int = 7) -> Node:
    """A Poly graph built from a recipe; every call makes fresh Buffers and fresh Python objects,
    so two calls give structurally identical but distinct graphs."""
    r = ring(8, 2)
    with ren.random.seeded(seed):
        vals = [Poly.from_coefficients([i - 4 for i in range(8)], r),
                Poly.from_coefficients([3 * i for i in range(8)], r),
                Poly.ternary(r)]
        for kind, i, j in recipe:
            a, b = vals[i % len(vals)], vals[j % len(vals)]
            if a.domain is not b.domain:
                b = b.ntt() if b.domain is ren.Domain.COEFF else b.intt()
            vals.append({"add": a + b, "sub": a - b, "mul": a * b, "neg": -a,
                         "const": a * (i + 2)}[kind])
    return Node(Op.SINK, DType.VOID, tuple(v.node for v in vals))


recipes = st.lists(st.tuples(st.sampled_from(["add", "sub", "mul", "neg", "const"]),
                             st.integers(0, 20), st.integers(0, 20)), max_size=8)


# ================================================================================================
# Node
# ================================================================================================
class TestHashConsing:
    def test_structurally_equal_is_same_object(self):
        a, b = iconst(3), iconst(4)
        assert iconst(3) is a
        assert binop(Op.IADD, a, b) is binop(Op.IADD, iconst(3), iconst(4))
        assert Node(Op.SINK, DType.VOID, [a, b]) is Node(Op.SINK, DType.VOID, (a, b))

    def test_different_fields_differ(self):
        a, b = iconst(3), iconst(4)
        assert a is not b
        assert binop(Op.IADD, a, b) is not binop(Op.IADD, b, a)
        assert binop(Op.IADD, a, b) is not binop(Op.IMUL, a, b)
        assert Node(Op.ICONST, DType.INDEX, (), 3) is not Node(Op.ICONST, DType.U32, (), 3)
        assert binop(Op.IADD, a, a) is not binop(Op.IADD, a, b)
        assert Node(Op.SINK, DType.VOID, (a,)) is not Node(Op.SINK, DType.VOID, (a, a))

    def test_int_and_bool_args_differ(self):
        one, true = iconst(1), iconst(True)
        assert one is not true
        assert type(one.arg) is int and type(true.arg) is bool
        zero, false = iconst(0), iconst(False)
        assert zero is not false and type(false.arg) is bool
        assert iconst(1.0) is not one and type(iconst(1.0).arg) is float
        # order of creation does not matter
        assert iconst(True) is true and iconst(1) is one

    def test_nested_int_and_bool_args_differ(self):
        # Same rule one level down: a tuple arg holding True must not merge with one holding 1.
        one = Node(Op.TABLE, DType.INDEX, (), (1, 0))
        true = Node(Op.TABLE, DType.INDEX, (), (True, False))
        assert one is not true
        assert type(true.arg[0]) is bool

    @given(st.lists(st.integers(-5, 5), min_size=1, max_size=6))
    def test_same_structure_same_node(self, values):
        def build():
            nodes = [iconst(v) for v in values]
            acc = nodes[0]
            for n in nodes[1:]:
                acc = binop(Op.IADD, acc, n)
            return acc
        x, y = build(), build()
        assert x is y
        other = [*values[:-1], values[-1] + 1]
        nodes = [iconst(v) for v in other]
        acc = nodes[0]
        for n in nodes[1:]:
            acc = binop(Op.IADD, acc, n)
        assert acc is not x

    def test_replace(self):
        a, b = iconst(3), iconst(4)
        n = binop(Op.IADD, a, b)
        assert n.replace() is n
        assert n.replace(op=Op.IMUL) is binop(Op.IMUL, a, b)
        assert n.replace(src=(b, a)) is binop(Op.IADD, b, a)
        assert a.replace(arg=4) is b

    def test_pickle_round_trip_is_identity(self):
        n = binop(Op.IADD, iconst(3), binop(Op.IMUL, iconst(4), iconst(5)))
        assert pickle.loads(pickle.dumps(n)) is n

    def test_poly_ops_share_subexpressions(self):
        r = ring(8, 2)
        a = Poly.from_coefficients(list(range(8)), r)
        b = Poly.from_coefficients(list(range(8)), r)  # a fresh Buffer: a different leaf
        assert a.node is not b.node
        assert (a + 3).node is (a + 3).node
        assert (a * a).node is (a * a).node
        assert (a + b).node is not (b + a).node


class TestImmutability:
    @pytest.mark.parametrize("attr", ["op", "dtype", "src", "arg", "_spec", "other"])
    def test_setattr_raises(self, attr):
        n = binop(Op.IADD, iconst(1), iconst(2))
        before = (n.op, n.dtype, n.src, n.arg)
        with pytest.raises(AttributeError):
            setattr(n, attr, None)
        assert (n.op, n.dtype, n.src, n.arg) == before

    def test_delattr_raises(self):
        n = binop(Op.IADD, iconst(11), iconst(12))
        with pytest.raises(AttributeError):
            del n.arg
        assert n.arg is None and n.op is Op.IADD

    def test_src_is_a_tuple(self):
        n = Node(Op.SINK, DType.VOID, [iconst(1), iconst(2)])
        assert isinstance(n.src, tuple)


# ================================================================================================
# toposort and helpers
# ================================================================================================
class TestToposort:
    def test_order_small(self):
        a, b, c = iconst(1), iconst(2), iconst(3)
        ab = binop(Op.IADD, a, b)
        abc = binop(Op.IMUL, ab, c)
        root = binop(Op.IADD, abc, ab)
        # depth-first post-order, sources left to right
        assert toposort(root) == [a, b, ab, c, abc, root]
        assert root.toposort() == toposort(root)
        assert toposort(root, ab) == toposort(root)
        assert toposort(c, root) == [c, a, b, ab, abc, root]

    @given(index_dags())
    def test_sources_before_users(self, sink):
        order = toposort(sink)
        pos = {id(n): i for i, n in enumerate(order)}
        assert len(pos) == len(order)  # each node once
        assert order[-1] is sink
        for n in order:
            for s in n.src:
                assert pos[id(s)] < pos[id(n)]
        # every reachable node is listed
        seen, stack = set(), [sink]
        while stack:
            n = stack.pop()
            if id(n) not in seen:
                seen.add(id(n))
                stack.extend(n.src)
        assert seen == set(pos)
        assert toposort(sink) == order  # deterministic

    @given(index_dags())
    def test_consumers_and_substitute(self, sink):
        order = toposort(sink)
        users = consumers(order)
        for n in order:
            assert users[n] == [u for u in order if n in u.src]
        leaf = order[0]
        assert leaf.op is Op.ICONST
        repl = iconst(leaf.arg + 100)
        new = substitute(sink, {leaf: repl})
        new_order = toposort(new)
        assert leaf not in new_order and repl in new_order
        assert substitute(new, {repl: leaf}) is sink
        assert substitute(sink, {}) is sink


# ================================================================================================
# dump
# ================================================================================================
class TestDump:
    @given(recipes)
    def test_deterministic_across_separate_builds(self, recipe):
        g1, g2 = recipe_graph(recipe), recipe_graph(recipe)
        assert g1 is not g2  # fresh buffers: different graphs ...
        t1, t2 = dump(g1), dump(g2)
        assert t1 == t2  # ... the same text
        assert dump(g1) == t1
        assert "buf0" in t1 and "buf1" in t1 and "buf2" not in t1
        lines = t1.splitlines()
        assert lines[0] == "rings:"
        assert sum(line.startswith("%") for line in lines) == len(toposort(g1))

    def test_buffer_numbering_by_appearance(self):
        g = recipe_graph([])
        text = dump(g)
        assert text.index("buf0") < text.index("buf1")
        assert "r0 = RingSpec(N=8" in text

    def test_dump_changes_with_graph(self):
        assert dump(recipe_graph([("add", 0, 1)])) != dump(recipe_graph([("sub", 0, 1)]))
        assert dump(recipe_graph([("add", 0, 1)])) != dump(recipe_graph([("add", 1, 0)]))
        # a different random seed is visible in the dump too
        assert dump(recipe_graph([], seed=1)) != dump(recipe_graph([], seed=2))

    def test_format(self):
        a, b = iconst(5), iconst(6)
        text = dump(binop(Op.IADD, a, b))
        assert text == ("%0 = ICONST index 5\n"
                        "%1 = ICONST index 6\n"
                        "%2 = IADD index (%0, %1)\n")

    def test_becomes_map_lines(self):
        a, b = iconst(5), iconst(6)
        root = binop(Op.IADD, a, b)
        text = dump(root, {root: binop(Op.IMUL, a, b)})
        assert text.endswith("becomes_map:\n  output 0 -> IMUL(ICONST 5, ICONST 6)\n")
        assert dump(root, None) == dump(root) == dump(root, {})


# ================================================================================================
# networkx
# ================================================================================================
class TestNetworkx:
    @given(index_dags())
    def test_round_trip_index_dags(self, sink):
        g = to_networkx(sink)
        assert isinstance(g, nx.DiGraph)
        assert g.number_of_nodes() == len(toposort(sink))
        assert from_networkx(g) is sink
        assert roundtrip(sink) is sink

    @given(recipes)
    def test_round_trip_poly_graphs(self, recipe):
        sink = recipe_graph(recipe)
        g = to_networkx(sink)
        assert from_networkx(g) is sink
        for v, data in g.nodes(data=True):
            if data["op"] in (Op.ADD, Op.MUL, Op.TO_RNS):
                assert "ring" in data and "domain" in data and "device" in data
            assert isinstance(v, int)

    def test_same_source_twice(self):
        r = ring(8, 1)
        x = Poly.from_coefficients(list(range(8)), r)
        y = x + x
        assert y.node.src == (x.node, x.node)
        g = to_networkx(y.node)
        root = g.graph["root"]
        preds = list(g.predecessors(root))
        assert len(preds) == 1
        assert g.edges[preds[0], root]["slots"] == (0, 1)
        assert from_networkx(g) is y.node
        sink = Node(Op.SINK, DType.VOID, (y.node, x.node, y.node))
        assert from_networkx(to_networkx(sink)) is sink

    def test_edit_op_attribute(self):
        r = ring(8, 2)
        x = Poly.from_coefficients(list(range(8)), r)
        z = Poly.from_coefficients([1] * 8, r)
        y = (x + z).rotate(1)
        g = to_networkx(y.node)
        add = next(v for v, d in g.nodes(data=True) if d["op"] is Op.ADD)
        g.nodes[add]["op"] = Op.SUB
        rebuilt = from_networkx(g)
        assert rebuilt is not y.node
        assert rebuilt is (x - z).rotate(1).node
        # editing an arg changes the graph too
        g.nodes[g.graph["root"]]["arg"] = 3
        assert from_networkx(g) is (x - z).rotate(3).node

    def test_edit_edges(self):
        a, b = iconst(1), iconst(2)
        n = binop(Op.IADD, a, b)
        g = to_networkx(n)
        va, vb, vn = 0, 1, 2
        g.edges[va, vn]["slots"] = (1,)
        g.edges[vb, vn]["slots"] = (0,)
        assert from_networkx(g) is binop(Op.IADD, b, a)

    def test_errors(self):
        n = binop(Op.IADD, iconst(1), iconst(2))
        g = to_networkx(n)
        g.add_edge(2, 0, slots=(0,))
        with pytest.raises(ScheduleError):
            from_networkx(g)
        g = to_networkx(n)
        g.edges[0, 2]["slots"] = (1,)
        with pytest.raises(ScheduleError):
            from_networkx(g)
        g = to_networkx(n)
        g.edges[0, 2]["slots"] = (0, 5)
        with pytest.raises(ScheduleError):
            from_networkx(g)
        g = to_networkx(n)
        del g.nodes[1]["op"]
        with pytest.raises(ScheduleError):
            from_networkx(g)
