"""Pass 5's materialization rules, one tiny hand-built graph each (the graph as pass 4 leaves
it), so a rule's behaviour is pinned without the whole pipeline: which values get BUFFERIZE and
which uses of them read the buffer."""

from __future__ import annotations

import numpy as np

from ren import Domain, Poly, RingSpec
from ren.ir import const_node, iconst, idx, pnode
from ren.node import Node, toposort
from ren.ops import DType, Op
from ren.passes import p05_materialize
from ren.schedule import ScheduleContext

RING = RingSpec.generate(16, 3)
LOW, HIGH = RING.sub(0, 2), RING.select([RING.moduli[2]])


def storage(ring: RingSpec = RING, seed: int = 0) -> Node:
    rng = np.random.default_rng(seed)
    res = np.stack([rng.integers(0, q, ring.N) for q in ring.moduli])
    return Poly.from_residues(res, ring, "NTT").node


def materialize(*outputs: Node, requested: tuple[Node, ...] | None = None) -> Node:
    sink = Node(Op.SINK, DType.VOID, outputs)
    return p05_materialize.run(sink, ScheduleContext(outputs=requested or outputs))


def bufferized(graph: Node) -> set[Node]:
    """The values pass 5 marked (sources of BUFFERIZE nodes)."""
    return {n.src[0] for n in toposort(graph) if n.op is Op.BUFFERIZE}


def test_a_value_read_directly_and_through_an_automorphism_is_stored():
    y = pnode(Op.ADD, storage(), storage(seed=1))
    out = pnode(Op.ADD, y, pnode(Op.AUTOMORPH, y, arg=5))
    assert y in bufferized(materialize(out))


def test_a_value_read_through_the_same_automorphism_twice_stays_fused():
    y = pnode(Op.ADD, storage(), storage(seed=1))
    rot = pnode(Op.AUTOMORPH, y, arg=5)
    out = pnode(Op.MUL, pnode(Op.NEG, rot), rot)
    assert bufferized(materialize(out)) == {out}


def test_nested_automorphisms_with_the_same_product_are_different_index_maps():
    """automorph(5) of something read at automorph(3) is not the expression of automorph(15)."""
    y = pnode(Op.ADD, storage(), storage(seed=1))
    twice = pnode(Op.AUTOMORPH, pnode(Op.NEG, pnode(Op.AUTOMORPH, y, arg=3)), arg=5)
    out = pnode(Op.ADD, twice, pnode(Op.AUTOMORPH, y, arg=15))
    assert y in bufferized(materialize(out))


def test_a_value_read_through_two_different_row_selections_is_stored():
    y = pnode(Op.ADD, storage(), storage(seed=1))
    q0, q1, q2 = RING.moduli
    perm, other = RingSpec(RING.N, (q2, q1, q0)), RingSpec(RING.N, (q1, q2, q0))
    out = pnode(Op.ADD, pnode(Op.TO_RING, y, arg=perm),
                pnode(Op.TO_RING, pnode(Op.TO_RING, y, arg=other), arg=perm))
    assert y in bufferized(materialize(out))


def test_a_value_read_through_one_row_selection_twice_stays_fused():
    y = pnode(Op.ADD, storage(), storage(seed=1))
    rows = RING.select([RING.moduli[0], RING.moduli[2]])
    out = pnode(Op.ADD, pnode(Op.TO_RING, y, arg=rows),
                pnode(Op.TO_RING, pnode(Op.NEG, y), arg=rows))
    assert bufferized(materialize(out)) == {out}


def test_a_value_read_directly_and_through_a_concat_is_stored():
    a = pnode(Op.ADD, storage(LOW), storage(LOW, seed=1))  # computed, on the low moduli
    cat = pnode(Op.CONCAT, a, storage(HIGH, seed=2), arg=RING)
    out = pnode(Op.ADD, pnode(Op.TO_RING, cat, arg=LOW), a)
    assert a in bufferized(materialize(out))


def test_a_value_read_through_one_and_through_two_concats_is_stored():
    q0, q1, q2 = RING.moduli
    first, middle, last = (RING.select([q]) for q in (q0, q1, q2))
    a = pnode(Op.ADD, storage(first), storage(first, seed=1))  # computed, on q0
    once = pnode(Op.CONCAT, a, storage(RING.select([q1, q2]), seed=2), arg=RING)
    twice = pnode(Op.CONCAT, pnode(Op.CONCAT, a, storage(middle, seed=3), arg=LOW),
                  storage(last, seed=4), arg=RING)
    assert a in bufferized(materialize(pnode(Op.ADD, once, twice)))


def test_a_value_read_directly_and_reindexed_is_stored():
    y = pnode(Op.ADD, storage(), storage(seed=1))
    moved = pnode(Op.REINDEX, y, idx(Op.IAND, idx(Op.IADD, Node(Op.GIDX, DType.INDEX, (), 1),
                                                   iconst(1)), iconst(RING.N - 1)))
    assert y in bufferized(materialize(pnode(Op.ADD, y, moved)))


def test_storage_read_at_many_index_maps_is_not_copied():
    x = storage()
    out = pnode(Op.ADD, pnode(Op.ADD, x, pnode(Op.AUTOMORPH, x, arg=3)),
                pnode(Op.AUTOMORPH, x, arg=5))
    assert bufferized(materialize(out)) == {out}


def test_a_constant_output_is_stored_for_the_sink_and_ring_kernels_only():
    """The constant c is an output (requested as c + 0, which folded to c), a scalar operand of
    a product, and the input of an NTT: the SINK and the NTT read its buffer, the product reads
    the scalar (the buffer holds the polynomial c·X^0, which is not what a scalar product
    means)."""
    c = const_node(5, RING, Domain.COEFF, "python")
    x = storage()
    product, transform = pnode(Op.MUL, x, c), pnode(Op.NTT, c)
    requested = (product, pnode(Op.ADD, c, const_node(0, RING, Domain.COEFF, "python")),
                 transform)
    graph = materialize(product, c, transform, requested=requested)
    sink_src = graph.src
    assert sink_src[1].op is Op.BUFFERIZE and sink_src[1].src[0] is c
    stored_product, stored_transform = sink_src[0].src[0], sink_src[2].src[0]
    assert stored_product.src[1] is c  # the scalar, not BUFFERIZE(c)
    assert stored_transform.src[0].op is Op.BUFFERIZE and stored_transform.src[0].src[0] is c


def test_a_contiguous_request_becomes_a_buffer():
    """CONTIGUOUS(x) of a computed x is BUFFERIZE(x); of a buffer, the buffer itself; a graph
    without CONTIGUOUS is not rebuilt for it."""
    buf = storage()
    y = pnode(Op.ADD, buf, storage(seed=1))
    out = pnode(Op.NEG, pnode(Op.CONTIGUOUS, y))
    ctx = ScheduleContext(outputs=(out,))
    graph = p05_materialize.run(Node(Op.SINK, DType.VOID, (out,)), ctx)
    ops = [n.op for n in toposort(graph)]
    assert Op.CONTIGUOUS not in ops and y in bufferized(graph)
    assert ctx.stats["materialize"]["contiguous"] == 1
    plain = pnode(Op.NEG, pnode(Op.CONTIGUOUS, buf))
    graph = materialize(plain)
    assert Op.CONTIGUOUS not in [n.op for n in toposort(graph)]
    assert bufferized(graph) == {pnode(Op.NEG, buf)}  # the output only: buf is read in place
    ctx = ScheduleContext(outputs=(y,))
    p05_materialize.run(Node(Op.SINK, DType.VOID, (y,)), ctx)
    assert "contiguous" not in ctx.stats["materialize"]
