"""Pass 12 — kernelize: every top-level STORE becomes a KERNEL.

  AFTER(B, STORE(target, value)) -> AFTER(B, KERNEL(B, in_1, …, in_k))
The KERNEL's sources are the concrete storage it touches (B first, then every buffer it reads, in
order of first use); its arg is a `Kernel` whose AST is the STORE with those nodes replaced by
SLOT(0) … SLOT(k).  The kind is ``elementwise`` for an indexified STORE, otherwise the ring op
it runs (``ntt``, ``intt``, ``to_rns``, ``basis_convert``, ``rescale``, ``random``) or ``copy``.
BUFFER_VIEW nodes read by a kernel stay in the graph; the schedule lists them as light ``view``
items (no kernel: validation only), and copies are light ``copy`` items.
After (checked by `check`): the graph has only SINK, AS_RING, AFTER, BUFFER, BUFFER_VIEW,
KERNEL and CONST nodes; every AFTER is AFTER(BUFFER, KERNEL); every KERNEL's sources are
storage nodes matching its SLOTs 0..k; CONST appears only as AS_RING(CONST) under the SINK;
kernel ASTs reference no storage (only SLOTs).
Leaves: KERNEL nodes (the schedule, in dependency order) and BUFFER_VIEW items.
"""

from __future__ import annotations

from ren.errors import ScheduleError
from ren.ir import STORAGE, gidx, is_extension, is_random, storage_buffer
from ren.kernel import Kernel, Slot
from ren.node import Node, substitute, toposort
from ren.ops import INDEX_OPS, LOWERED_ALU, DType, Op
from ren.rewrite import P, rewrite

NAME = "kernelize"

_KIND = {Op.NTT: "ntt", Op.INTT: "intt", Op.TO_RNS: "to_rns", Op.RESCALE: "rescale",
         Op.COPY: "copy"}

#: ops allowed inside kernel ASTs
MOD_OPS = frozenset(LOWERED_ALU.values())
ELEMENTWISE_AST = INDEX_OPS | MOD_OPS | {Op.STORE, Op.INDEX, Op.LOAD, Op.SLOT, Op.VCONST,
                                         Op.WHERE, Op.MODULUS}
RING_AST = {Op.STORE, Op.SLOT, Op.AS_RING, Op.RANDOM, Op.NTT, Op.INTT, Op.TO_RNS, Op.RESCALE,
            Op.TO_RING, Op.COPY}
TOP_LEVEL = {Op.SINK, Op.AS_RING, Op.AFTER, Op.BUFFER, Op.BUFFER_VIEW, Op.KERNEL, Op.CONST}


def kind_of(store: Node) -> str:
    target, value = store.src
    if target.op is Op.INDEX:
        return "elementwise"
    if is_random(value):
        return "random"
    if is_extension(value):
        return "basis_convert"
    if value.op in _KIND:
        return _KIND[value.op]
    raise ScheduleError(f"kernelize: STORE of {value.op.name} is neither indexified nor a ring "
                        "kernel")


def _reads(store: Node) -> list[Node]:
    """Storage nodes the store reads, in order of first use (its own target excluded).  The
    walk stops at storage: what produced a buffer belongs to another kernel."""
    target = store.src[0]
    own = target.src[0] if target.op is Op.INDEX else target
    reads: dict[Node, None] = {}
    visited: set[Node] = set()
    stack = [store.src[1]]
    while stack:
        n = stack.pop()
        if n in visited:
            continue
        visited.add(n)
        if n.op in STORAGE:
            if n is not own:
                reads.setdefault(n)
            continue
        stack.extend(reversed(n.src))
    return list(reads)


def slot_node(index: int, storage: Node) -> Node:
    """SLOT(index) typed like the buffer (or view) behind `storage`."""
    slot = Slot.contiguous(index, storage_buffer(storage).shape)
    return Node(Op.SLOT, slot.dtype, (), slot)


def kernelize(store: Node, ctx=None) -> Node:
    target = store.src[0]
    out = target.src[0] if target.op is Op.INDEX else target
    reads = _reads(store)
    slots = {s: slot_node(i, s) for i, s in enumerate((out, *reads))}
    ast = substitute(store, slots)
    kind = kind_of(store)
    counter = getattr(ctx, "kernel_count", 0) if ctx is not None else 0
    if ctx is not None:
        ctx.kernel_count = counter + 1
    ring = store.arg[0] if store.arg else None
    kernel = Kernel(f"k{counter}_{kind}", kind, ast, ring, len(slots),
                    storage_buffer(out).shape)
    return Node(Op.KERNEL, DType.VOID, (out, *reads), kernel)


rules = [(P(Op.STORE, name="store"), kernelize, "kernelize")]


def run(sink: Node, ctx=None) -> Node:
    return rewrite(sink, rules, ctx, name=NAME)


def _check_kernel(n: Node) -> None:
    k = n.arg
    allowed = ELEMENTWISE_AST if k.kind == "elementwise" else RING_AST
    body = toposort(k.ast)
    bad = {b.op.name for b in body if b.op not in allowed}
    if bad:
        raise ScheduleError(f"kernelize: {k.name} ({k.kind}) contains {sorted(bad)}")
    slots = {b.arg.index: b.arg for b in body if b.op is Op.SLOT}
    if sorted(slots) != list(range(len(n.src))) or k.nslots != len(n.src):
        raise ScheduleError(f"kernelize: {k.name} slots {sorted(slots)} != sources {len(n.src)}")
    if any(s.op not in STORAGE for s in n.src):
        raise ScheduleError(f"kernelize: {k.name} has a non-storage source")
    for i, s in enumerate(n.src):
        if slots[i] != Slot.contiguous(i, storage_buffer(s).shape):
            raise ScheduleError(f"kernelize: {k.name} slot {i} is {slots[i]} but its buffer is "
                                f"{storage_buffer(s)}")
    if k.space != slots[0].shape:
        raise ScheduleError(f"kernelize: {k.name} iterates over {k.space}, its output is "
                            f"{slots[0].shape}")
    if k.kind != "elementwise":
        return
    target = k.ast.src[0]
    if k.ast.op is not Op.STORE or target.op is not Op.INDEX or \
            target.src[1:] != (gidx(0), gidx(1)) or target.src[0].op is not Op.SLOT or \
            target.src[0].arg.index != 0:
        raise ScheduleError(f"kernelize: {k.name} must store to INDEX(SLOT0, GIDX0, GIDX1)")
    for b in body:
        if b.op in MOD_OPS and (b.src[-1].op is not Op.MODULUS or
                                len(b.src[-1].arg) != k.space[0]):
            raise ScheduleError(f"kernelize: {k.name}: {b.op.name} lacks its MODULUS operand")


def check(sink: Node) -> None:
    """Raise ScheduleError unless the post-kernelize invariant (module docstring) holds."""
    for n in toposort(sink):
        if n.op not in TOP_LEVEL:
            raise ScheduleError(f"kernelize: {n.op.name} left at top level")
        if n.op is Op.AFTER and (n.src[0].op is not Op.BUFFER or n.src[1].op is not Op.KERNEL):
            raise ScheduleError("kernelize: AFTER must be AFTER(BUFFER, KERNEL)")
        if n.op is Op.KERNEL:
            _check_kernel(n)
    for o in sink.src:
        if o.op is Op.AS_RING and o.src[0].op not in (Op.AFTER, Op.BUFFER, Op.BUFFER_VIEW,
                                                      Op.CONST):
            raise ScheduleError(f"kernelize: output over {o.src[0].op.name}")
