"""IR builders and predicates shared by every layer above the IR (passes, backends, realization,
frontend): small functions that make or recognise common node shapes.

They live here, in the IR layer, so that no lower layer has to import an upper one to build a
node: the frontend (`ren.poly`) and the passes both build constants with `const_node`, and the
backends and realization both find a node's storage with `storage_buffer`.
"""

from __future__ import annotations

from ren.device import Buffer
from ren.node import Node
from ren.ops import RING_KERNEL_OF, DType, Family, GroupOp, Op
from ren.ring import Domain, RingKernel, RingSpec
from ren.spec import PolySpec, is_poly_product, need_spec

__all__ = [
    "as_ring",
    "broadcast_const",
    "const_node",
    "const_value",
    "gidx",
    "iconst",
    "idx",
    "is_broadcast_const",
    "is_const",
    "is_extension",
    "is_leaf",
    "is_random",
    "is_realized",
    "is_ring_kernel",
    "is_storage",
    "is_subset",
    "is_view_candidate",
    "make_const",
    "pnode",
    "required_domain",
    "ring_kernel_of",
    "storage_buffer",
]


# -- builders ---------------------------------------------------------------------------------
def pnode(op: Op, *src: Node, arg=None) -> Node:
    """A polynomial-valued (u32) node."""
    return Node(op, DType.U32, src, arg)


def idx(op: Op, *src: Node, arg=None) -> Node:
    """An index-language node."""
    return Node(op, DType.INDEX, src, arg)


def iconst(v: int) -> Node:
    return Node(Op.ICONST, DType.INDEX, (), int(v))


def gidx(axis: int) -> Node:
    """The position along `axis` of the element being computed (0 = limb, 1 = coefficient)."""
    return Node(Op.GIDX, DType.INDEX, (), axis)


def as_ring(x: Node, ring: RingSpec, domain: Domain) -> Node:
    return Node(Op.AS_RING, DType.U32, (x,), (ring, domain))


def const_node(value: int, ring: RingSpec, domain: Domain, device: str) -> Node:
    """AS_RING(CONST): the constant polynomial `value`, reduced into [0, Q)."""
    return as_ring(Node(Op.CONST, DType.U32, (), (value % ring.Q, device)), ring, domain)


def make_const(value: int, spec: PolySpec) -> Node:
    """The constant polynomial `value` with the ring, domain and device of `spec`."""
    return const_node(value, spec.ring, spec.domain, spec.device)


def broadcast_const(value: int, ring: RingSpec, device: str) -> Node:
    """The coefficient-domain polynomial with `value` in *every* coefficient (a constant
    polynomial has it at X^0 only): the COEFF constant read at coefficient 0 for every position,
    REINDEX(const, ICONST(0)).  Pass 9 lowers it to a VCONST broadcast over coefficients."""
    return pnode(Op.REINDEX, const_node(value, ring, Domain.COEFF, device), iconst(0))


# -- predicates -------------------------------------------------------------------------------
def is_storage(n: Node) -> bool:
    """AS_RING over storage: a value that already sits in a buffer (or will, after a STORE)."""
    return n.op is Op.AS_RING and n.src[0].op in GroupOp.STORAGE


def is_const(n: Node) -> bool:
    return n.op is Op.AS_RING and n.src[0].op is Op.CONST


def is_broadcast_const(n: Node) -> bool:
    """A `broadcast_const`: REINDEX(constant, ICONST)."""
    return n.op is Op.REINDEX and is_const(n.src[0]) and n.src[1].op is Op.ICONST


def is_random(n: Node) -> bool:
    return n.op is Op.AS_RING and n.src[0].op is Op.RANDOM


def is_leaf(n: Node) -> bool:
    """Storage, constants: values that never need a kernel of their own."""
    return is_storage(n) or is_const(n)


def is_realized(n: Node) -> bool:
    """A value already there: a buffer or a view of one (not a buffer *after* a pending
    STORE), or a constant.  Reading it needs no kernel."""
    return n.op is Op.AS_RING and n.src[0].op is not Op.AFTER and (is_storage(n) or is_const(n))


def const_value(n: Node) -> int:
    """The integer of an AS_RING(CONST) node (in [0, Q))."""
    return n.src[0].arg[0]


def storage_buffer(n: Node) -> Buffer:
    """The Buffer behind a storage node (BUFFER, AFTER(BUFFER, ...), BUFFER_VIEW)."""
    while n.op is not Op.BUFFER:
        if n.op is Op.BUFFER_VIEW:
            return n.arg
        n = n.src[0]
    return n.arg


def is_extension(n: Node) -> bool:
    """A TO_RING that introduces new moduli (a real basis conversion)."""
    return n.op is Op.TO_RING and not n.arg.is_subring_of(need_spec(n.src[0]).ring)


def is_subset(n: Node) -> bool:
    """A TO_RING onto a subset of the source moduli (exact limb selection)."""
    return n.op is Op.TO_RING and n.arg.is_subring_of(need_spec(n.src[0]).ring)


def is_view_candidate(n: Node) -> bool:
    """TO_RING onto a contiguous run of the source moduli (can be a BUFFER_VIEW)."""
    return is_subset(n) and n.arg.offset_in(need_spec(n.src[0]).ring) is not None


def ring_kernel_of(n: Node) -> RingKernel | None:
    """The ring kernel (`ren.ring.RingKernel`) that computes n, or None for elementwise values:
    NTT, INTT, TO_RNS, RESCALE, an extending TO_RING (basis conversion) or a RANDOM leaf (the
    op table's ``ring_kernel``)."""
    op = n.op
    if op is Op.AS_RING:  # a leaf is typed, and so sampled, under its AS_RING
        op = n.src[0].op
        if op.info.family is not Family.LEAF:
            return None
    elif op.info.family is Family.LEAF:
        return None
    kind = RING_KERNEL_OF.get(op)
    if kind is RingKernel.BASIS_CONVERT and not is_extension(n):
        return None  # a selection of moduli is elementwise
    return kind


def is_ring_kernel(n: Node) -> bool:
    """A value computed by its own non-elementwise kernel: a ring kernel, or a COPY (a device
    transfer)."""
    return n.op is Op.COPY or ring_kernel_of(n) is not None


def required_domain(n: Node) -> Domain | None:
    """The domain n's polynomial sources must be in (pass 3 converts them), or None: the op
    table's ``needs_domain``, except that a product by a constant works in either domain and a
    TO_RING that only selects moduli needs none."""
    want = n.op.info.needs_domain
    if want is None:
        return None
    if n.op is Op.MUL and not is_poly_product(n):
        return None
    if n.op is Op.TO_RING and not is_extension(n):
        return None
    return want
