"""Constant folding and the algebra that creates or removes constants: one rule set, shared by
every pass after which constants can appear (pass 1, and pass 4, whose domain rules turn a
conversion of a constant into a constant).  Not a pass of its own.

Rules:
  fold         an op whose operands are all constants -> one constant (mod Q): ADD SUB MUL NEG,
               TO_RING, RESCALE, COPY, CONTIGUOUS and automorphisms (which fix constants)
  conversions  NTT / INTT of a constant -> the same constant tagged with the other domain (the
               constant polynomial c is [c, 0, …, 0] in COEFF and [c, …, c] in NTT: no work)
  algebra      x + 0 -> x, x - 0 -> x, 0 - x -> -x, x·1 -> x, x·0 -> 0, x - x -> 0, -(-x) -> x

A rewrite never changes a node's ring, domain or device: the driver (`ren.rewrite`) restores the
declared domain when folding turns an operand into a constant and so changes the domain a node
would infer (a product of two polynomials is NTT, a product with a constant keeps the other
operand's domain).
"""

from __future__ import annotations

from ren.ir import as_ring, const_value, is_const, make_const, pnode
from ren.node import Node
from ren.ops import GroupOp, Op
from ren.rewrite import P, X
from ren.ring import Domain, RingSpec
from ren.spec import need_spec

#: ops that keep a constant as it is: automorphisms fix constant polynomials, placements move
#: or copy them
_FIXED = GroupOp.AUTOMORPHISM | GroupOp.PLACEMENT


def _const_is(v: int):
    return lambda n: is_const(n) and const_value(n) % need_spec(n).ring.Q == v % need_spec(n).ring.Q


ZERO = P(Op.AS_RING, P(Op.CONST), name="zero", where=_const_is(0))
ONE = P(Op.AS_RING, P(Op.CONST), name="one", where=_const_is(1))
CONST = P(Op.AS_RING, P(Op.CONST, name="value"), name="c")


def convert_const(c: int, src: RingSpec, dst: RingSpec) -> int:
    """TO_RING of the constant polynomial c: shared moduli keep c mod q, new moduli get the fast
    basis conversion integer sum_i [c·qhat_i^-1]_{q_i}·qhat_i (the TO_RING semantics)."""
    Q = src.Q
    fast = sum((c % q) * pow(Q // q, -1, q) % q * (Q // q) for q in src.moduli)
    residues = [c % p if p in src.moduli else fast % p for p in dst.moduli]
    Qd = dst.Q
    return sum(r * pow(Qd // p, -1, p) * (Qd // p) for r, p in zip(residues, dst.moduli)) % Qd


def _rescale_const(c: int, src: RingSpec, dst: RingSpec) -> int:
    """round(c / P), P = the dropped moduli.  Any representative of c mod Q gives the same
    result mod Q/P (P divides Q, so c + kQ rounds to the same plus k·Q/P): no centring needed."""
    P_ = src.Q // dst.Q
    return (c + P_ // 2) // P_


#: how each foldable op combines its operands' integer values (n is the node, for its args)
_FOLD = {
    Op.ADD: lambda n, v: v[0] + v[1],
    Op.SUB: lambda n, v: v[0] - v[1],
    Op.MUL: lambda n, v: v[0] * v[1],
    Op.NEG: lambda n, v: -v[0],
    Op.TO_RING: lambda n, v: convert_const(v[0], need_spec(n.src[0]).ring, n.arg),
    Op.RESCALE: lambda n, v: _rescale_const(v[0], need_spec(n.src[0]).ring, need_spec(n).ring),
    **{op: (lambda n, v: v[0]) for op in _FIXED},
}

#: ops folded when every operand is a constant: those with a folding rule above
FOLDABLE = frozenset(_FOLD)


def fold(n: Node) -> Node | None:
    """All operands constant: compute the constant result."""
    return make_const(_FOLD[n.op](n, [const_value(s) for s in n.src]), need_spec(n))


def _retag(c: Node, value: Node, domain: Domain) -> Node:
    return as_ring(value, c.arg[0], domain)


def _zero_like(n: Node) -> Node:
    return make_const(0, need_spec(n))


CONSTANT_RULES = [
    (P(FOLDABLE, name="n", where=lambda n: bool(n.src) and all(map(is_const, n.src))), fold,
     "fold_constants"),
    (P(Op.NTT, CONST), lambda c, value: _retag(c, value, Domain.NTT), "ntt_of_const"),
    (P(Op.INTT, CONST), lambda c, value: _retag(c, value, Domain.COEFF), "intt_of_const"),
    (P(Op.ADD, X("x"), ZERO, commutative=True), lambda x, zero: x, "add_zero"),
    (P(Op.SUB, X("x"), ZERO), lambda x, zero: x, "sub_zero"),
    (P(Op.SUB, ZERO, X("x")), lambda zero, x: pnode(Op.NEG, x), "zero_sub"),
    (P(Op.MUL, X("x"), ONE, commutative=True), lambda x, one: x, "mul_one"),
    (P(Op.MUL, X("x"), ZERO, name="n", commutative=True), lambda x, zero, n: _zero_like(n),
     "mul_zero"),
    (P(Op.SUB, X("x"), X("x"), name="n"), lambda x, n: _zero_like(n), "sub_self"),
    (P(Op.NEG, P(Op.NEG, X("x"))), lambda x: x, "neg_neg"),
]
