"""Pass 1 — simplify algebra, constants, ring changes and copies.

Rewrites:
  algebra      x + 0 -> x, x - 0 -> x, 0 - x -> -x, x·1 -> x, x·0 -> 0, x - x -> 0, -(-x) -> x
  constants    an op whose operands are all constants folds to one constant (mod Q), including
               TO_RING, RESCALE, COPY and automorphisms of a constant
  ring rules   TO_RING to the ring x already has -> x; TO_RING(TO_RING(x, r1), r2) ->
               TO_RING(x, r2) when every modulus of r2 is in both r1 and x's ring (exact
               selections compose; a basis extension in between does not)
  automorph    ROTATE by 0 and AUTOMORPH by g = 1 -> x
  copies       COPY to the device x is already on -> x; COPY(COPY(x, d1), d2) -> COPY(x, d2)
  contiguous   CONTIGUOUS(CONTIGUOUS(x)) -> CONTIGUOUS(x)
After: no rule above matches anywhere.
Leaves: every op it received; constants only as AS_RING(CONST) leaves.
Statistics: firings per rule.
"""

from __future__ import annotations

from ren.ir import const_value, is_const, make_const, pnode
from ren.node import Node
from ren.ops import Op
from ren.rewrite import P, X, rewrite
from ren.ring import RingSpec
from ren.spec import spec_of

NAME = "simplify"


def _const_is(v: int):
    return lambda n: is_const(n) and const_value(n) % spec_of(n).ring.Q == v % spec_of(n).ring.Q


C = P(Op.AS_RING, P(Op.CONST), name="c")
ZERO = P(Op.AS_RING, P(Op.CONST), name="zero", where=_const_is(0))
ONE = P(Op.AS_RING, P(Op.CONST), name="one", where=_const_is(1))


def fold(n: Node) -> Node | None:
    """All operands constant: compute the constant result."""
    if not n.src or not all(is_const(s) for s in n.src):
        return None
    vals = [const_value(s) for s in n.src]
    spec = spec_of(n)
    if n.op is Op.ADD:
        v = vals[0] + vals[1]
    elif n.op is Op.SUB:
        v = vals[0] - vals[1]
    elif n.op is Op.MUL:
        v = vals[0] * vals[1]
    elif n.op is Op.NEG:
        v = -vals[0]
    elif n.op in (Op.ROTATE, Op.CONJUGATE, Op.AUTOMORPH, Op.COPY, Op.CONTIGUOUS):
        v = vals[0]  # automorphisms fix constants; copies move them
    elif n.op is Op.TO_RING:
        v = convert_const(vals[0], spec_of(n.src[0]).ring, n.arg)
    elif n.op is Op.RESCALE:
        src = spec_of(n.src[0]).ring
        P_ = src.Q // spec.ring.Q
        c = vals[0] % src.Q
        c = c - src.Q if c > src.Q // 2 else c
        v = (c + P_ // 2) // P_
    else:
        return None
    return make_const(v, spec)


def convert_const(c: int, src: RingSpec, dst: RingSpec) -> int:
    """TO_RING of the constant polynomial c: shared moduli keep c mod q, new moduli get the fast
    basis conversion integer sum_i [c·qhat_i^-1]_{q_i}·qhat_i (the TO_RING semantics)."""
    Q = src.Q
    fast = sum((c % q) * pow(Q // q, -1, q) % q * (Q // q) for q in src.moduli)
    residues = [c % p if p in src.moduli else fast % p for p in dst.moduli]
    Qd = dst.Q
    return sum(r * pow(Qd // p, -1, p) * (Qd // p) for r, p in zip(residues, dst.moduli)) % Qd


def _zero_like(n: Node) -> Node:
    return make_const(0, spec_of(n))


def _compose_to_ring(x: Node, inner: Node, outer: Node) -> Node | None:
    r1, r2, r0 = inner.arg, outer.arg, spec_of(x).ring
    if set(r2.moduli) <= set(r1.moduli) and set(r2.moduli) <= set(r0.moduli):
        return pnode(Op.TO_RING, x, arg=r2)
    return None


rules = [
    (P({Op.ADD, Op.SUB, Op.MUL, Op.NEG, Op.TO_RING, Op.RESCALE, Op.ROTATE, Op.CONJUGATE,
        Op.AUTOMORPH, Op.COPY, Op.CONTIGUOUS}, name="n", where=lambda n: all(map(is_const, n.src))),
     fold, "fold_constants"),
    (P(Op.ADD, X("x"), ZERO, commutative=True), lambda x, zero: x, "add_zero"),
    (P(Op.SUB, X("x"), ZERO), lambda x, zero: x, "sub_zero"),
    (P(Op.SUB, ZERO, X("x")), lambda zero, x: pnode(Op.NEG, x), "zero_sub"),
    (P(Op.MUL, X("x"), ONE, commutative=True), lambda x, one: x, "mul_one"),
    (P(Op.MUL, X("x"), ZERO, name="n", commutative=True), lambda x, zero, n: _zero_like(n),
     "mul_zero"),
    (P(Op.SUB, X("x"), X("x"), name="n"), lambda x, n: _zero_like(n), "sub_self"),
    (P(Op.NEG, P(Op.NEG, X("x"))), lambda x: x, "neg_neg"),
    (P(Op.TO_RING, X("x"), name="n", where=lambda n: n.arg == spec_of(n.src[0]).ring),
     lambda x, n: x, "to_ring_same"),
    (P(Op.TO_RING, P(Op.TO_RING, X("x"), name="inner"), name="outer"), _compose_to_ring,
     "to_ring_compose"),
    (P(Op.ROTATE, X("x"), arg=0), lambda x: x, "rotate_zero"),
    (P(Op.AUTOMORPH, X("x"), arg=1), lambda x: x, "automorph_identity"),
    (P(Op.COPY, X("x"), name="n", where=lambda n: n.arg == spec_of(n.src[0]).device),
     lambda x, n: x, "copy_same_device"),
    (P(Op.COPY, P(Op.COPY, X("x")), name="n"), lambda x, n: pnode(Op.COPY, x, arg=n.arg),
     "copy_copy"),
    (P(Op.CONTIGUOUS, P(Op.CONTIGUOUS, name="inner")), lambda inner: inner, "contiguous_twice"),
]


def run(sink: Node, ctx=None) -> Node:
    return rewrite(sink, rules, ctx, name=NAME)
