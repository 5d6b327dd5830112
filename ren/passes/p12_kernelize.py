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
from ren.ir import STORAGE, is_extension, is_random
from ren.kernel import Kernel
from ren.node import Node, substitute, toposort
from ren.ops import INDEX_OPS, DType, Op
from ren.rewrite import P, RuleSet, rewrite

NAME = "kernelize"

_KIND = {Op.NTT: "ntt", Op.INTT: "intt", Op.TO_RNS: "to_rns", Op.RESCALE: "rescale",
         Op.COPY: "copy"}

#: ops allowed inside kernel ASTs
ELEMENTWISE_AST = INDEX_OPS | {Op.STORE, Op.INDEX, Op.LOAD, Op.SLOT, Op.VCONST, Op.WHERE,
                               Op.MODADD, Op.MODSUB, Op.MODNEG, Op.MONTMUL}
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


def kernelize(store: Node, ctx=None) -> Node:
    target = store.src[0]
    out = target.src[0] if target.op is Op.INDEX else target
    reads = _reads(store)
    slots = {out: Node(Op.SLOT, DType.U32, (), 0)}
    slots.update({r: Node(Op.SLOT, DType.U32, (), i + 1) for i, r in enumerate(reads)})
    ast = substitute(store, slots)
    kind = kind_of(store)
    counter = getattr(ctx, "kernel_count", 0) if ctx is not None else 0
    if ctx is not None:
        ctx.kernel_count = counter + 1
    ring = store.arg[0] if store.arg else None
    kernel = Kernel(f"k{counter}_{kind}", kind, ast, ring, len(slots))
    return Node(Op.KERNEL, DType.VOID, (out, *reads), kernel)


rules = RuleSet([(P(Op.STORE, name="store"), kernelize, "kernelize")])


def run(sink: Node, ctx=None) -> Node:
    return rewrite(sink, rules, ctx, name=NAME)


def check(sink: Node) -> None:
    """Raise ScheduleError unless the post-kernelize invariant (module docstring) holds."""
    for n in toposort(sink):
        if n.op not in TOP_LEVEL:
            raise ScheduleError(f"kernelize: {n.op.name} left at top level")
        if n.op is Op.AFTER and (n.src[0].op is not Op.BUFFER or n.src[1].op is not Op.KERNEL):
            raise ScheduleError("kernelize: AFTER must be AFTER(BUFFER, KERNEL)")
        if n.op is Op.CONST:
            continue
        if n.op is Op.KERNEL:
            k = n.arg
            allowed = ELEMENTWISE_AST if k.kind == "elementwise" else RING_AST
            body = toposort(k.ast)
            bad = {b.op.name for b in body if b.op not in allowed}
            if bad:
                raise ScheduleError(f"kernelize: {k.name} ({k.kind}) contains {sorted(bad)}")
            slots = sorted({b.arg for b in body if b.op is Op.SLOT})
            if slots != list(range(len(n.src))) or k.nslots != len(n.src):
                raise ScheduleError(f"kernelize: {k.name} slots {slots} != sources {len(n.src)}")
            if any(s.op not in STORAGE for s in n.src):
                raise ScheduleError(f"kernelize: {k.name} has a non-storage source")
    for o in sink.src:
        if o.op is Op.AS_RING and o.src[0].op not in (Op.AFTER, Op.BUFFER, Op.BUFFER_VIEW,
                                                      Op.CONST):
            raise ScheduleError(f"kernelize: output over {o.src[0].op.name}")
