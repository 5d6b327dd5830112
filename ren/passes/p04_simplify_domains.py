"""Pass 4 — simplify domain conversions.

Rewrites:
  NTT(INTT(x)) -> x,  INTT(NTT(x)) -> x
  NTT / INTT of a constant -> the same constant tagged with the other domain (a constant
  polynomial c is [c, 0, …, 0] in COEFF and [c, c, …, c] in NTT; no work either way)
  INTT(AUTOMORPH(NTT(x), g)) -> AUTOMORPH(x, g) with x in COEFF: the round trip around a slot
  permutation is replaced by the signed coefficient permutation (pass 8 lowers both kinds)
After: no NTT has an INTT source and no INTT an NTT source; no conversion of a constant.
Leaves: only conversions that are really needed.
Statistics: conversions removed (per rule).
"""

from __future__ import annotations

from ren.ir import as_ring, pnode
from ren.node import Node
from ren.ops import Op
from ren.rewrite import P, X, rewrite
from ren.ring import Domain

NAME = "simplify_domains"

CONST = P(Op.AS_RING, P(Op.CONST, name="value"), name="c")


def _retag(c: Node, value: Node, domain: Domain) -> Node:
    return as_ring(value, c.arg[0], domain)


rules = [
    (P(Op.NTT, P(Op.INTT, X("x"))), lambda x: x, "ntt_of_intt"),
    (P(Op.INTT, P(Op.NTT, X("x"))), lambda x: x, "intt_of_ntt"),
    (P(Op.NTT, CONST), lambda c, value: _retag(c, value, Domain.NTT), "ntt_of_const"),
    (P(Op.INTT, CONST), lambda c, value: _retag(c, value, Domain.COEFF), "intt_of_const"),
    (P(Op.INTT, P(Op.AUTOMORPH, P(Op.NTT, X("x")), name="a")),
     lambda x, a: pnode(Op.AUTOMORPH, x, arg=a.arg), "automorph_in_coeff"),
]


def run(sink: Node, ctx=None) -> Node:
    return rewrite(sink, rules, ctx, name=NAME)
