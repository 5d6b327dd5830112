"""Pass 12 — kernelize: every top-level STORE becomes a KERNEL.

  AFTER(B, STORE(target, value)) -> AFTER(B, KERNEL(B, in_1, …, in_k))
The KERNEL's sources are the concrete storage it touches (B first, then every buffer it reads, in
order of first use); its arg is a `Kernel` (`ren.kernel`) whose AST uses SLOT(0) … SLOT(k) for
them, each typed with the shape, dtype and strides of its buffer, and whose ``space`` is the
output's shape.  By kind:
  elementwise (an indexified STORE)   the STORE with its storage replaced by SLOTs
  ring kernel (NTT, INTT, TO_RNS, basis conversion, RESCALE, RANDOM; `ren.ring.RingKernel`)
                                      STORE(SLOT0, RING_CALL(SLOT1)) — RING_CALL() for random —
                                      with every parameter explicit in a `RingCall`; a
                                      RESCALE of CONCAT(0, y) (pass 5) reads y's storage, its
                                      call's `zero_rows` the CONCAT's rows of 0
  copy (a device transfer)            STORE(SLOT0, COPY(AS_RING(SLOT1)))
BUFFER_VIEW nodes read by a kernel stay in the graph; the schedule lists them as light ``view``
items (no kernel: validation only), and copies are light ``copy`` items.
After (checked by `check`): the graph has only SINK, AS_RING, AFTER, BUFFER, BUFFER_VIEW,
KERNEL and CONST nodes; every AFTER is AFTER(BUFFER, KERNEL); every KERNEL's sources are
storage nodes matching its SLOTs 0..k (index and type); CONST appears only as AS_RING(CONST)
under the SINK; kernel ASTs reference no storage (only SLOTs); elementwise ASTs store to
INDEX(SLOT0, GIDX0, GIDX1) and give every residue op a MODULUS operand; ring-kernel ASTs are a
single call whose slots have the shapes its parameters imply.
Leaves: KERNEL nodes (the schedule, in dependency order) and BUFFER_VIEW items.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from ren import contracts
from ren.contracts import Contract, Forbid, Require
from ren.errors import ScheduleError
from ren.ir import gidx, is_leaf, ring_kernel_of, storage_buffer
from ren.kernel import COPY, ELEMENTWISE, RING_KINDS, Kernel, RingCall, Slot
from ren.node import Node, substitute, toposort
from ren.ops import DType, GroupOp, Op
from ren.rewrite import P, RuleSet, rewrite
from ren.ring import RingKernel, RingSpec
from ren.spec import need_spec

NAME = "kernelize"
#: why the pipeline needs this pass (`ren.passes.Pipeline.without` says it)
REQUIRED_BECAUSE = ("the backends run only the KERNEL items kernelize makes (its contract is the "
                    "one every realization checks): without it a schedule has no kernels")

#: ops allowed inside kernel ASTs, by kind (ring kernels: the rest; the op table's ``body``)
BODY_OPS = {ELEMENTWISE: GroupOp.ELEMENTWISE_BODY, COPY: GroupOp.COPY_BODY}


def kind_of(store: Node) -> str:
    target, value = store.src
    if target.op is Op.INDEX:
        return ELEMENTWISE
    if value.op is Op.COPY:
        return COPY
    kind = ring_kernel_of(value)
    if kind is None:
        raise ScheduleError(f"kernelize: STORE of {value.op.name} is neither indexified nor a "
                            "ring kernel")
    return kind.value


def zero_ring(n: Node) -> RingSpec | None:
    """The ring of `n` when n is 0 in every coefficient of every limb (the constant 0, as pass 5
    leaves it or as pass 9 lowers it: VCONST 0, or WHERE between two of them), else None."""
    if n.op is Op.AS_RING and n.src[0].op is Op.CONST:
        return n.arg[0] if n.src[0].arg[0] == 0 else None
    if n.op is Op.VCONST:
        return n.arg[0] if not any(n.arg[1]) else None
    if n.op is Op.WHERE:
        ring = zero_ring(n.src[1])
        return ring if ring is not None and zero_ring(n.src[2]) == ring else None
    return None


def build_ring_call(value: Node) -> tuple[RingCall, list[Node]]:
    """The explicit parameters of the ring kernel computing `value`, and its input storage.
    A RESCALE of CONCAT(0, y) (pass 5) reads y's storage; its call's `zero_rows` are the
    CONCAT's rows of 0."""
    kind = ring_kernel_of(value)
    if kind is None:
        raise ScheduleError(f"kernelize: {value.op.name} is not a ring kernel")
    inp = value.src[0]
    if kind is RingKernel.RESCALE and inp.op is Op.CONCAT:
        return _zero_rows_call(value, inp)
    dst = need_spec(value).ring
    if kind is RingKernel.RANDOM:
        return RingCall(kind, dst.N, (), dst.moduli, random=value.src[0].arg), []
    storage = inp.src[0] if inp.op is Op.AS_RING else inp
    if storage.op not in GroupOp.STORAGE:
        raise ScheduleError(f"kernelize: the input of {kind.value} is {storage.op.name}, not "
                            "storage (pass 5 materializes ring-kernel inputs)")
    if kind is RingKernel.TO_RNS:
        return RingCall(kind, dst.N, (), dst.moduli, words=value.arg[1]), [storage]
    src = need_spec(inp).ring
    dropped = tuple(value.arg) if kind is RingKernel.RESCALE else ()
    return RingCall(kind, src.N, src.moduli, dst.moduli, dropped=dropped), [storage]


def _zero_rows_call(value: Node, cat: Node) -> tuple[RingCall, list[Node]]:
    """RESCALE(CONCAT(0 over Q, y)) over R = Q·P: the call on R with zero_rows = |Q|, reading
    y's storage (pass 5 stored y, not the CONCAT)."""
    zero = zero_ring(cat.src[0]) if len(cat.src) == 2 else None
    rows = cat.src[-1]
    storage = rows.src[0] if rows.op is Op.AS_RING else rows
    if zero is None or storage.op not in GroupOp.STORAGE:
        raise ScheduleError("kernelize: a RESCALE reads a CONCAT that is not (0, storage): pass "
                            "5 stores a RESCALE's input unless it is CONCAT(0, y)")
    src: RingSpec = cat.arg
    K = len(value.arg)
    if zero.limbs > src.limbs - K or src.moduli[: zero.limbs] != zero.moduli:
        raise ScheduleError(f"kernelize: a RESCALE dropping {K} of {src.limbs} limbs reads "
                            f"{zero.limbs} rows of 0: only kept limbs may be 0")
    dst = src.drop_last(K)
    return RingCall(RingKernel.RESCALE, src.N, src.moduli, dst.moduli, dropped=tuple(value.arg),
                    zero_rows=zero.limbs), [storage]


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
        if n.op in GroupOp.STORAGE:
            if n is not own:
                reads.setdefault(n)
            continue
        stack.extend(reversed(n.src))
    return list(reads)


def slot_node(index: int, storage: Node) -> Node:
    """SLOT(index) typed like the buffer (or view) behind `storage`."""
    slot = Slot.contiguous(index, storage_buffer(storage).shape)
    return Node(Op.SLOT, slot.dtype, (), slot)


def kernel_body(store: Node) -> tuple[str, Node, tuple[Node, ...]]:
    """A STORE's kernel kind, its AST (SLOTs for storage) and the storage the SLOTs stand for
    (the output first)."""
    target = store.src[0]
    out = target.src[0] if target.op is Op.INDEX else target
    kind = kind_of(store)
    if kind in RING_KINDS:
        call, reads = build_ring_call(store.src[1])
        slots = [slot_node(i, s) for i, s in enumerate((out, *reads))]
        body = Node(Op.RING_CALL, DType.U32, tuple(slots[1:]), call)
        ast = store.replace(src=(slots[0], body))
    else:
        reads = _reads(store)
        ast = substitute(store, {s: slot_node(i, s) for i, s in enumerate((out, *reads))})
    return kind, ast, (out, *reads)


def kernel_node(store: Node, kind: str, ast: Node, storage: tuple[Node, ...], ctx=None) -> Node:
    """The KERNEL node of `store` (see `kernel_body`), named by the context's kernel count."""
    counter = getattr(ctx, "kernel_count", 0) if ctx is not None else 0
    if ctx is not None:
        ctx.kernel_count = counter + 1
    ring = store.arg[0] if store.arg else None
    kernel = Kernel(f"k{counter}_{kind}", kind, ast, ring, len(storage),
                    storage_buffer(storage[0]).shape)
    return Node(Op.KERNEL, DType.VOID, storage, kernel)


def kernelize(store: Node, ctx=None) -> Node:
    return kernel_node(store, *kernel_body(store), ctx)


rules = RuleSet([(P(Op.STORE, name="store"), kernelize, "kernelize")])


#: `run` is one walk of `rules`: the scheduler may fuse it with its neighbours (`ren.passes`)
FUSABLE = True


def run(sink: Node, ctx=None) -> Node:
    return rewrite(sink, rules, ctx, name=NAME)


@dataclass(frozen=True)
class _BodyFacts:
    """What a kernel's check finds in its AST alone: kernels of one shape (a bootstrapping has
    ~4,500 kernels of ~600 shapes) share one hash-consed AST, so `_bad_kernel` walks each AST
    once.  The problems are message tails (the kernel's name goes in front)."""

    bad_ops: str | None  # ops the kind does not allow
    slots: dict[int, Slot]  # the SLOTs the body uses, by index
    late: str | None  # the kind's own form (a ring call's shapes, an elementwise store)

    @cached_property
    def numbered(self) -> bool:
        """The slots are numbered 0, 1, ... without a gap."""
        return sorted(self.slots) == list(range(len(self.slots)))

    @cached_property
    def shapes(self) -> tuple[tuple[int, int] | None, ...]:
        """Slot i's shape if it is the contiguous slot of that shape (what a buffer binds),
        else None (no buffer's slot): slot i fits a buffer exactly when the shapes are equal."""
        return tuple(s.shape if s == Slot.contiguous(i, s.shape) else None
                     for i, s in sorted(self.slots.items()))


def _body_facts(k: Kernel) -> _BodyFacts:
    allowed = BODY_OPS.get(k.kind, GroupOp.RING_BODY)
    body = toposort(k.ast)
    bad = {b.op.name for b in body if b.op not in allowed}
    slots = {b.arg.index: b.arg for b in body if b.op is Op.SLOT}
    if bad:
        return _BodyFacts(f" ({k.kind}) contains {sorted(bad)}", slots, None)
    late = None
    if k.kind in RING_KINDS:
        late = _ring_call_problem(k, slots) if 0 in slots else None
    elif k.kind == ELEMENTWISE:
        late = _elementwise_problem(k, body)
    return _BodyFacts(None, slots, late)


def _kernel_problem(n: Node, facts: dict[tuple, _BodyFacts] | None = None) -> str | None:
    """What is wrong with a KERNEL node (see the module docstring), or None.  `facts` memoizes
    `_body_facts` by (AST, kind, space) across the kernels of one check."""
    k = n.arg
    key = (k.ast, k.kind, k.space)
    f = facts.get(key) if facts is not None else None
    if f is None:
        f = _body_facts(k)
        if facts is not None:
            facts[key] = f
    if f.bad_ops is not None:
        return k.name + f.bad_ops
    slots = f.slots
    if not f.numbered or len(slots) != len(n.src) or k.nslots != len(n.src):
        return f"{k.name} slots {sorted(slots)} != sources {len(n.src)}"
    storage = GroupOp.STORAGE
    for s in n.src:
        if s.op not in storage:
            return f"{k.name} has a non-storage source"
    for i, (s, shape) in enumerate(zip(n.src, f.shapes)):
        if shape is None or storage_buffer(s).shape != shape:
            return f"{k.name} slot {i} is {slots[i]} but its buffer is {storage_buffer(s)}"
    if k.space != slots[0].shape:
        return f"{k.name} iterates over {k.space}, its output is {slots[0].shape}"
    return None if f.late is None else k.name + f.late


def _elementwise_problem(k: Kernel, body: list[Node]) -> str | None:
    target = k.ast.src[0]
    if k.ast.op is not Op.STORE or target.op is not Op.INDEX or \
            target.src[1:] != (gidx(0), gidx(1)) or target.src[0].op is not Op.SLOT or \
            target.src[0].arg.index != 0:
        return " must store to INDEX(SLOT0, GIDX0, GIDX1)"
    for b in body:
        if b.op in GroupOp.MOD_ARITH and (b.src[-1].op is not Op.MODULUS or
                                          len(b.src[-1].arg) != k.space[0]):
            return f": {b.op.name} lacks its MODULUS operand"
    return None


def _ring_call_problem(k: Kernel, slots: dict[int, Slot]) -> str | None:
    call_node = k.ast.src[1] if k.ast.op is Op.STORE else None
    if call_node is None or call_node.op is not Op.RING_CALL or k.ast.src[0].op is not Op.SLOT \
            or call_node.arg.kind.value != k.kind:
        return f" must be STORE(SLOT0, RING_CALL) of {k.kind}"
    call = call_node.arg
    if slots[0].shape != (len(call.dst), call.n):
        return f" writes {slots[0].shape}, its call produces {(len(call.dst), call.n)}"
    want = call.input_shape()
    got = tuple(s.arg.shape for s in call_node.src)
    if got != ((want,) if want else ()):
        return f" reads {got}, its call needs {want}"
    return None


def _bad_kernel(sink: Node, ctx) -> tuple[str, Node] | None:
    facts: dict[tuple, _BodyFacts] = {}
    for n in contracts.graph_order(sink):
        if n.op is Op.KERNEL:
            problem = _kernel_problem(n, facts)
            if problem is not None:
                return problem, n
    return None


#: after: only storage, constants (as outputs), the SINK and KERNELs (the op table); each
#: KERNEL's body is well formed for its kind and its slots match its sources
CONTRACT = Contract(12, forbid=(
    Forbid("an AFTER that is not AFTER(BUFFER, KERNEL)",
           P(Op.AFTER, where=lambda n: n.src[0].op is not Op.BUFFER
             or n.src[1].op is not Op.KERNEL)),
    Forbid("an output over computed storage (an AS_RING output must be a leaf)",
           P(Op.SINK, where=lambda n: any(o.op is Op.AS_RING and not is_leaf(o)
                                          for o in n.src))),
), checks=(Require("every KERNEL describes itself", _bad_kernel),))


def check(sink: Node) -> None:
    """Raise ContractError unless the post-kernelize invariant (module docstring) holds."""
    contracts.check(sink, CONTRACT, f"12_{NAME}")
