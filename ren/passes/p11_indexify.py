"""Pass 11 — indexify elementwise computation with GIDX, INDEX, LOAD and STORE.

Every STORE(B, value) whose value is elementwise becomes
    STORE(INDEX(B, GIDX(0), GIDX(1)), value')
where value' computes one element (limb GIDX(0), coefficient GIDX(1)) of the stored ring:
  AS_RING(storage)          -> LOAD(INDEX(storage, l, j))
  AS_RING(BUFFER_VIEW)      -> LOAD(INDEX(base, l + first limb, j))   (the view fused into loads)
  TO_RING(x) onto a subset  -> x evaluated at limb l + offset (contiguous) or TABLE[l]
  REINDEX(x, e)             -> x evaluated at coefficient e(j)        (automorphism index maps)
  CONCAT(a, b)              -> WHERE(TABLE[l], a at limb TABLE_a[l], b at limb TABLE_b[l]): the
                               row of whichever source has limb l's modulus; the other source is
                               read at a clamped limb (0) and its value discarded
  ADD SUB NEG MUL           -> MODADD MODSUB MODNEG MONTMUL, each with the modulus as its last
                               operand: MODULUS(GIDX(0)) over the stored ring's moduli
  VCONST(ring, words)       -> VCONST(limb) with arg the per-limb Montgomery words only
  WHERE, index arithmetic   -> the same ops with GIDX replaced by the current (l, j)
Every residue op of a kernel works modulo the *output* limb's modulus: a limb map (TABLE[l],
l + offset) only ever selects a source limb with that same modulus.  Index arithmetic is then
folded (x + 0, x · 1, constant operands; values through `ren.alu`).
After: every elementwise STORE writes INDEX(B, GIDX(0), GIDX(1)); its value contains only
LOAD/INDEX of storage, lowered residue ops with explicit MODULUS operands, VCONST, WHERE and
index ops — no ring objects.
Leaves: STOREs of ring kernels (NTT, INTT, TO_RNS, RESCALE, basis conversion, RANDOM, COPY)
unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from ren.alu import fold_index
from ren.contracts import Contract, Forbid
from ren.errors import ScheduleError
from ren.ir import gidx, iconst, idx, is_ring_kernel, is_storage, is_subset
from ren.node import Node, substitute
from ren.ops import LOWERED_ALU, DType, GroupOp, Op
from ren.rewrite import P, RuleSet, X, rewrite
from ren.ring import RingSpec
from ren.spec import need_ring, need_spec

NAME = "indexify"
def _at(e: Node, l: Node, j: Node) -> Node:
    """Index expression e with GIDX(0) -> l and GIDX(1) -> j."""
    return substitute(e, {gidx(0): l, gidx(1): j})


@lru_cache(maxsize=4096)
def _subring_rows(src: RingSpec, target: RingSpec) -> int | tuple[int, ...]:
    """Where `target`'s limbs sit in `src`: the first row of a contiguous run, else each row.
    A pure function of two rings, and a kernel of a bootstrapping asks it for the same few
    pairs thousands of times: cached."""
    first = target.offset_in(src)
    return first if first is not None else tuple(src.index(q) for q in target.moduli)


def _limb_map(x: Node, target, l: Node) -> Node:
    rows = _subring_rows(need_spec(x).ring, target)
    if isinstance(rows, int):
        return idx(Op.IADD, l, iconst(rows))
    return idx(Op.TABLE, l, arg=rows)


@lru_cache(maxsize=4096)
def _concat_tables(target: tuple[int, ...], rings: tuple[tuple[int, ...], ...]
                   ) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
    # (tuples all the way down: the cache hands the same value to every caller)
    first = tuple(int(q in rings[0]) for q in target)
    return first, tuple(tuple(r.index(q) if q in r else 0 for q in target) for r in rings)


def _concat_maps(n: Node, l: Node) -> tuple[Node, list[Node]]:
    """For CONCAT: (which source holds limb l: 1 for the first, 0 for the second, as TABLE[l]),
    and per source its limb index TABLE (rows it lacks clamped to 0, read and discarded)."""
    # (a broadcast 0 is a VCONST by now)
    first, maps = _concat_tables(n.arg.moduli, tuple(need_ring(s).moduli for s in n.src))
    return idx(Op.TABLE, l, arg=first), [idx(Op.TABLE, l, arg=m) for m in maps]


def _children(n: Node, l: Node, j: Node) -> list[tuple[Node, Node, Node]]:
    """The (node, limb index, coefficient index) contexts n's lowering needs first."""
    if is_storage(n) or n.op is Op.VCONST or n.op in GroupOp.INDEX:
        return []
    if n.op is Op.TO_RING and is_subset(n):
        return [(n.src[0], _limb_map(n.src[0], n.arg, l), j)]
    if n.op is Op.REINDEX:
        return [(n.src[0], l, _at(n.src[1], l, j))]
    if n.op is Op.CONCAT:
        return [(s, m, j) for s, m in zip(n.src, _concat_maps(n, l)[1])]
    if n.op in LOWERED_ALU or n.op is Op.WHERE:
        return [(s, l, j) for s in n.src]
    raise ScheduleError(f"indexify: {n.op.name} cannot be part of an elementwise kernel")


def _build(n: Node, l: Node, j: Node, kids: list[Node], modulus: Node) -> Node:
    if is_storage(n):
        storage = n.src[0]
        if storage.op is Op.BUFFER_VIEW:
            view = storage.arg
            l = idx(Op.IADD, l, iconst(view.offset // view.shape[1]))
            storage = storage.src[0]
        return Node(Op.LOAD, DType.U32, (Node(Op.INDEX, DType.U32, (storage, l, j)),))
    if n.op is Op.VCONST:
        return Node(Op.VCONST, DType.U32, (l,), n.arg[1])
    if n.op in GroupOp.INDEX:
        return _at(n, l, j)
    if n.op is Op.TO_RING or n.op is Op.REINDEX:  # a limb or coefficient map of its source
        return kids[0]
    if n.op in LOWERED_ALU:
        return Node(LOWERED_ALU[n.op], DType.U32, (*kids, modulus))
    if n.op is Op.WHERE:
        return n.replace(src=tuple(kids))
    if n.op is Op.CONCAT:
        return Node(Op.WHERE, DType.U32, (_concat_maps(n, l)[0], *kids))
    raise ScheduleError(f"indexify: cannot lower {n.op.name}")  # pragma: no cover


def modulus_node(ring: RingSpec) -> Node:
    """MODULUS(GIDX(0)): the modulus of the output limb of a kernel storing into `ring`."""
    return Node(Op.MODULUS, DType.U32, (gidx(0),), ring.moduli)


def lower_value(value: Node, ring: RingSpec, fold: Callable[[Node], Node] | None = None
                ) -> Node:
    """value evaluated at element (GIDX(0), GIDX(1)) of `ring`, iteratively (chains can be
    deep).  `fold` (default: none) simplifies each index expression as it is made."""
    fold = fold or (lambda e: e)
    l0, j0 = gidx(0), gidx(1)
    modulus = modulus_node(ring)
    memo: dict[tuple[Node, Node, Node], Node] = {}
    stack: list[tuple[Node, Node, Node, bool]] = [(value, l0, j0, False)]
    while stack:
        n, l, j, ready = stack.pop()
        key = (n, l, j)
        if key in memo:
            continue
        kids = [(c, fold(cl), fold(cj)) for c, cl, cj in _children(n, l, j)]
        if not ready:
            stack.append((n, l, j, True))
            stack.extend((*k, False) for k in reversed(kids) if k not in memo)
            continue
        built = _build(n, l, j, [memo[k] for k in kids], modulus)
        memo[key] = fold(built) if built.op in GroupOp.INDEX else _fold_sources(built, fold)
    return memo[(value, l0, j0)]


def _fold_sources(n: Node, fold: Callable[[Node], Node]) -> Node:
    """`n` with its index-valued sources folded (the index expressions `_build` makes: a LOAD's
    INDEX, a CONCAT's selector)."""
    if n.op is Op.LOAD:
        index = n.src[0]
        src = (index.src[0], *(fold(e) for e in index.src[1:]))
        return n if src == index.src else n.replace(src=(index.replace(src=src),))
    if n.op is Op.WHERE and n.src[0].op in GroupOp.INDEX:
        cond = fold(n.src[0])
        return n if cond is n.src[0] else n.replace(src=(cond, *n.src[1:]))
    return n


# index arithmetic folding (values through the ALU table)
index_rules = RuleSet([
    (P(Op.IADD, X("x"), P(Op.ICONST, arg=0), commutative=True), lambda x: x, "iadd_zero"),
    (P(Op.IMUL, X("x"), P(Op.ICONST, arg=1), commutative=True), lambda x: x, "imul_one"),
    (P(GroupOp.INDEX_ARITH, P(Op.ICONST, name="a"),
       P(Op.ICONST, name="b"), name="n"),
     lambda a, b, n: iconst(fold_index(n.op, None, a.arg, b.arg)), "fold_index"),
    (P(Op.IADD, P(Op.IADD, X("x"), P(Op.ICONST, name="a")), P(Op.ICONST, name="b")),
     lambda x, a, b: idx(Op.IADD, x, iconst(fold_index(Op.IADD, None, a.arg, b.arg))),
     "iadd_assoc"),
    (P(Op.TABLE, P(Op.ICONST, name="i"), name="t"),
     lambda i, t: iconst(fold_index(Op.TABLE, t.arg, i.arg)),
     "table_const"),
])


def indexify_store(store: Node) -> Node | None:
    buf, value = store.src
    if buf.op is not Op.BUFFER or is_ring_kernel(value):
        return None
    target = Node(Op.INDEX, DType.U32, (buf, gidx(0), gidx(1)))
    return store.replace(src=(target, lower_value(value, store.arg[0], fold_index_expr)))


#: index expression -> its folded form: a kernel's bodies share a handful of them (GIDX, limb
#: tables, automorphism maps), so each is folded once per process, not once per use.  Nodes are
#: hash-consed and immutable, so an entry never goes stale; the table is bounded below.
_folded: dict[Node, Node] = {}
FOLD_CACHE = 1 << 14


def fold_index_expr(e: Node) -> Node:
    """Index expression `e` with its arithmetic folded (`index_rules` to a fixed point)."""
    out = _folded.get(e)
    if out is None:
        out = rewrite(e, index_rules, name=NAME + ".fold")
        if len(_folded) >= FOLD_CACHE:
            _folded.clear()
        _folded[e] = out
    return out


rules = RuleSet([(P(Op.STORE, name="store"), indexify_store, "indexify_store")])

#: after: elementwise STOREs write INDEX(B, GIDX0, GIDX1); the rest store a ring kernel or COPY;
#: every residue op has its MODULUS operand
CONTRACT = Contract(11, forbid=(
    Forbid("a STORE to an INDEX other than INDEX(BUFFER, GIDX0, GIDX1)",
           P(Op.STORE, where=lambda n: n.src[0].op is Op.INDEX and (
               n.src[0].src[0].op is not Op.BUFFER or n.src[0].src[1:] != (gidx(0), gidx(1))))),
    Forbid("an elementwise value stored without indexing",
           P(Op.STORE, where=lambda n: n.src[0].op is not Op.INDEX
             and not is_ring_kernel(n.src[1]))),
    Forbid("a residue op without its MODULUS operand",
           P(GroupOp.MOD_ARITH, where=lambda n: n.src[-1].op is not Op.MODULUS)),
))


#: `run` is one walk of `rules`: the scheduler may fuse it with its neighbours (`ren.passes`)
FUSABLE = True


def run(sink: Node, ctx=None) -> Node:
    return rewrite(sink, rules, ctx, name=NAME)
