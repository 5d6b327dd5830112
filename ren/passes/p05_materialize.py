"""Pass 5 — decide materialization boundaries: mark BUFFERIZE(x) where a value must sit in a
buffer of its own.

Marks:
  outputs        every SINK source that is not already storage, or a constant that was requested
                 as a constant (a computed output that folded to a constant is stored)
  conversions    the result of NTT, INTT, TO_RNS, RESCALE, an extending TO_RING (basis
                 conversion) and RANDOM, and the sources they read (they run as their own
                 kernels, which read buffers)
  copies         the result of a COPY and the value it copies
  contiguous     CONTIGUOUS(x) becomes BUFFERIZE(x) (or just x when x is already a plain buffer)
  rereads        a computed elementwise value that its kernel would evaluate at two or more
                 index maps (y in y + rot(y)): fusing it would compute it once per map, and a
                 ladder y = y + rot(y) would double the work and the code with every step
  sharing        an elementwise value needed by two or more different kernels (so a shared
                 subexpression is computed once)
A RESCALE of CONCAT(0, y) (a key switch's mod-down by P: L rows of the constant 0, then y's K
rows) on a device whose backend takes rows of 0 (`ren.backend.Device.rescale_zero_rows`, asked
of the backend in force) marks y, not the CONCAT: its kernel reads y's K rows and takes the
other L as 0 (pass 12: `RingCall.zero_rows`), where the CONCAT's kernel wrote L + K rows and the
RESCALE read them all.
A source that is a TO_RING onto a contiguous run of moduli is not copied: its own source is
materialized instead, and pass 10 turns the TO_RING into a BUFFER_VIEW.  Likewise a CONCAT of
buffers and views of them (pass 4's mod-up), and a TO_RING selecting scattered rows of a buffer
(a switching key's Q_l·P rows below the top level), are not copied when several elementwise
kernels read them: each reads its rows in place (pass 11 indexes a scattered selection through
a limb table).  A copy of key rows per level lived in the arena until that level's last key
switch, which made up most of a bootstrapping's arena between its two EvalMods.
After: every ring-kernel op and COPY reads storage, a BUFFERIZE, or a view-able TO_RING of one
(a RESCALE may read CONCAT(0, one of them));
everything between two BUFFERIZE marks is elementwise, belongs to exactly one kernel and is
evaluated there at one index map (only reads of storage may be read at several).  A constant
that is an output is stored for the SINK but stays a scalar operand of elementwise ops.
Leaves: BUFFERIZE markers for pass 6; CONTIGUOUS is gone.
"""

from __future__ import annotations

from collections import Counter

from ren.backend import takes_zero_rows
from ren.contracts import Contract, Require
from ren.ir import (
    const_value,
    is_broadcast_const,
    is_const,
    is_leaf,
    is_ring_kernel,
    is_storage,
    is_subset,
    is_view_candidate,
)
from ren.node import Node, consumers, toposort
from ren.ops import DType, GroupOp, Op
from ren.spec import need_spec, spec_of

NAME = "materialize"
#: a RESCALE of CONCAT(0, y) reads only y's buffer (`zero_rows_input`); False stores the CONCAT
#: (L rows of 0 and y's K rows) for the RESCALE to read (the form before; kept for comparisons)
ZERO_ROWS_INPUT = True
#: why the pipeline needs this pass (`ren.passes.Pipeline.without` says it)
REQUIRED_BECAUSE = (
    "lower_bufferize and the later passes need the BUFFERIZE boundaries it marks (outputs, "
    "conversions, copies): without them no value is stored")


def _scalar(n: Node) -> bool:
    """A leaf (storage, a constant), or a broadcast constant (`ren.ir.broadcast_const`:
    REINDEX(constant, ICONST), which pass 9 lowers to a VCONST): a scalar operand of every
    elementwise kernel that reads it, never a buffer of its own (a buffer of h = floor(P/2)
    over L rows that every rounding at that level read)."""
    return is_leaf(n) or is_broadcast_const(n)


def _plain(n: Node) -> bool:
    return is_storage(n) or n.op is Op.BUFFERIZE


def _bufferize(x: Node) -> Node:
    return x if x.op is Op.BUFFERIZE else Node(Op.BUFFERIZE, DType.U32, (x,))


def zero_concat(n: Node) -> bool:
    """CONCAT(0, y): rows of the constant 0 (0 in every coefficient, in any domain) over the
    first moduli, then y's rows."""
    return (n.op is Op.CONCAT and len(n.src) == 2 and is_const(n.src[0])
            and const_value(n.src[0]) == 0)


def zero_rows_input(n: Node) -> bool:
    """A RESCALE that reads CONCAT(0, y) (a key switch's mod-down by P, `ren.passes.elision`):
    only y is stored and read (the kernel takes the rows of 0 as 0: `RingCall.zero_rows`), not
    the CONCAT's L + K rows of which L are 0 (`ZERO_ROWS_INPUT`) — where the backend in force
    for the RESCALE's device runs rows of 0 without their buffer (`Device.rescale_zero_rows`:
    the cpu library kernel; the renderer of `ren.backend.ring_c`, which the host shim and CUDA
    run, and NumPy read every row, so their RESCALEs keep the stored CONCAT)."""
    return (ZERO_ROWS_INPUT and n.op is Op.RESCALE and zero_concat(n.src[0])
            and takes_zero_rows(need_spec(n).device))


def _reads_buffer(user: Node, s: Node) -> bool:
    """Whether `user` reads the marked value `s` from its buffer (see step 5 of `run`)."""
    return not is_const(s) or user.op is Op.SINK or is_ring_kernel(user)


#: How an op reads its polynomial source inside a fused kernel: the edge it adds to the index
#: context (limb maps, coefficient maps) at which pass 11 evaluates the source.  Pass 11 builds
#: the index expressions edge by edge without composing them (an automorphism of an
#: automorphism is two nested maps), so a context is the sequence of edges from the kernel's
#: root: two sequences make the same expressions exactly when they are equal.
_CONTEXT_EDGES = {
    Op.AUTOMORPH: lambda u, s, limbs, coeffs: (limbs, (*coeffs, ("automorph", u.arg))),
    Op.REINDEX: lambda u, s, limbs, coeffs: (limbs, (*coeffs, ("reindex", u.src[1]))),
    # a row selection (TO_RING onto a subset) and CONCAT read their source at a limb map
    Op.TO_RING: lambda u, s, limbs, coeffs: ((*limbs, ("rows", u.arg, need_spec(s).ring)), coeffs),
    Op.CONCAT: lambda u, s, limbs, coeffs: ((*limbs, ("concat", u.arg, need_spec(s).ring)), coeffs),
}
_ROOT_CONTEXT = ((), ())


def _reread_values(order: list[Node], users: dict[Node, list[Node]],
                   roots: set[Node]) -> list[Node]:
    """Computed values that their kernel would evaluate in two or more index contexts.

    A fused kernel inlines a value once per index map it is read at: y + rot(y) reads y at the
    identity and at an automorphism, so y's whole expression is computed twice, and
    ``y = y + rot(y)`` repeated k times computes 2^k copies (and renders 2^k index tables).
    Such a value gets a buffer, so every computed value is evaluated once per element and
    kernel size stays linear in the graph.  Values that are only reads of storage (a buffer, a
    view, an automorphism or row selection of one) stay inlined: rereading them costs loads.
    `roots` (values already marked) start kernels: they are computed in one context.
    """
    cheap: set[Node] = set()
    for n in order:  # sources first
        if (n.dtype is not DType.U32 or _scalar(n) or n.op is Op.BUFFERIZE
                or ((n.op in GroupOp.INDEX_MAP or is_subset(n))
                    and all(s in cheap for s in n.src if s.dtype is DType.U32))):
            cheap.add(n)
    contexts: dict[Node, set] = {}
    marked: list[Node] = []
    for n in reversed(order):  # users first
        if n in cheap or spec_of(n) is None:
            continue
        if n not in roots:
            found = set()
            for u in users[n]:
                if u.op is Op.BUFFERIZE:  # n starts the kernel that fills u's buffer
                    found.add(_ROOT_CONTEXT)
                if u.op is Op.SINK or is_ring_kernel(u) or u not in contexts:
                    continue  # reads a buffer of n (a TO_RING that extends is a ring kernel)
                edge = _CONTEXT_EDGES.get(u.op)
                found.update(edge(u, n, *c) if edge else c for c in contexts[u])
            if len(found) <= 1:
                contexts[n] = found
                continue
            marked.append(n)
        contexts[n] = {_ROOT_CONTEXT}
    return marked


def _contiguous(n: Node, src: tuple[Node, ...]) -> Node:
    (x,) = src
    return x if _plain(x) else _bufferize(x)


def _readable(s: Node) -> bool:
    """What a ring kernel or COPY may read after this pass: storage, a BUFFERIZE, a view-able
    TO_RING of one, or what is not a polynomial (words under TO_RNS, a RANDOM leaf)."""
    if _plain(s) or s.dtype is not DType.U32 or spec_of(s) is None:
        return True
    return is_view_candidate(s) and _readable(s.src[0])


def _unbuffered_input(sink: Node, ctx) -> Node | None:
    return next((n for n in toposort(sink) if is_ring_kernel(n) and n.op is not Op.TO_RNS
                 and not all(map(_readable, n.src[0].src[1:] if zero_rows_input(n) else n.src))),
                None)


def _unbuffered_output(sink: Node, ctx) -> Node | None:
    return next((o for o in sink.src if not (_plain(o) or is_const(o))), None)


#: after: no CONTIGUOUS (the op table); ring kernels and copies read buffers; outputs are marked
CONTRACT = Contract(5, checks=(
    Require("every ring-kernel op and COPY reads storage, a BUFFERIZE or a view of one",
            _unbuffered_input),
    Require("every output is storage, a BUFFERIZE or a constant", _unbuffered_output),
))


def run(sink: Node, ctx=None) -> Node:
    stats: Counter = Counter()
    # 1. contiguous requests become BUFFERIZE markers
    order = toposort(sink)
    done: dict[Node, Node] = {}
    if any(n.op is Op.CONTIGUOUS for n in order):  # (most graphs have none: no rebuild)
        for n in order:
            src = tuple(done[s] for s in n.src)
            if n.op is Op.CONTIGUOUS:
                done[n] = _contiguous(n, src)
                stats["contiguous"] += 1
            else:
                done[n] = n if src == n.src else n.replace(src=src)
        sink = done[sink]
        order = toposort(sink)

    # 2. which values must be materialized
    users = consumers(order)
    must: set[Node] = set()

    def needs_buffer(s: Node, why: str, view_ok: bool = True) -> None:
        if _plain(s) or s.dtype is not DType.U32 or spec_of(s) is None:
            return  # already a buffer, or a raw leaf (RANDOM under its AS_RING, words)
        if view_ok and is_view_candidate(s):  # read through a view of its source's buffer
            needs_buffer(s.src[0], why)
            return
        if s not in must:
            must.add(s)
            stats[why] += 1

    requested = ctx.outputs if ctx is not None and ctx.outputs else sink.src
    for o, orig in zip(sink.src, requested):
        # An output gets a buffer of its own, even when folding made it a constant: only a
        # Poly that *was* a constant (or storage) stays symbolic, so realizing a Poly never
        # turns a computed value into a scalar that adapts its domain (see ren.poly).
        if not is_leaf(o) or (is_const(o) and not is_leaf(orig)):
            needs_buffer(o, "output", view_ok=False)
    for n in order:
        if is_ring_kernel(n):
            if n not in must:
                must.add(n)
                stats["conversion"] += 1
            if zero_rows_input(n):  # its kernel reads y's rows only
                needs_buffer(n.src[0].src[1], "conversion_input")
            elif n.op is not Op.TO_RNS:
                for s in n.src:
                    needs_buffer(s, "conversion_input")

    def in_place(n: Node) -> bool:
        """n can be read where it sits: a buffer, a view of one, or a CONCAT of such rows."""
        if _plain(n) or n in must:
            return True
        if is_subset(n):  # a view, or rows selected by an index map (pass 11: TABLE[l])
            return _plain(n.src[0]) or n.src[0] in must
        return n.op is Op.CONCAT and all(map(in_place, n.src))

    # 3. an elementwise value that one kernel would compute at two different index maps
    for n in _reread_values(order, users, must):
        must.add(n)
        stats["reread"] += 1

    # 4. an elementwise value read by two different kernels gets its own buffer
    owner: dict[Node, Node] = {}
    for n in reversed(order):
        if n.dtype is not DType.U32 or spec_of(n) is None or _scalar(n):
            continue  # raw leaves (CONST, RANDOM, BUFFER), index math, storage, constants
        if n in must or n.op is Op.BUFFERIZE:
            owner[n] = n
            continue
        if (is_subset(n) or n.op is Op.CONCAT) and in_place(n):
            continue  # a view or row selection of a buffer, or rows of buffers: free to read
        if zero_concat(n) and all(zero_rows_input(u) for u in users[n]):
            continue  # the rows of a RESCALE that reads only y (a buffer of its own)
        owners = {owner.get(u, u) for u in users[n]}
        if len(owners) > 1:
            must.add(n)
            owner[n] = n
            stats["shared"] += 1
        elif owners:
            owner[n] = owners.pop()

    # 5. wrap every use of a marked value (hash-consing makes the wrapper shared), except where
    # the buffer would mean something else than the value: an elementwise op reads a constant
    # as a scalar (broadcast, in its consumer's domain; a product by it stays in the other
    # operand's domain), while its buffer is the constant *polynomial* in one domain.  So a
    # constant that is also an output is stored for the SINK (and for kernels that read
    # storage) and stays symbolic for every elementwise consumer.
    done = {}
    for n in order:
        src = tuple(_bufferize(done[s]) if s in must and _reads_buffer(n, s) else done[s]
                    for s in n.src)
        done[n] = n if src == n.src else n.replace(src=src)
    if ctx is not None and hasattr(ctx, "stats"):
        ctx.stats.setdefault(NAME, Counter()).update(stats)
    return done[sink]
