"""Pass 2 — lower high-level ring ops to Galois automorphisms.

Rewrites:
  ROTATE(x, k)                  -> AUTOMORPH(x, g = 5^k mod 2N)   (negative k allowed)
  CONJUGATE(x)                  -> AUTOMORPH(x, 2N - 1)
  AUTOMORPH(AUTOMORPH(x, g1), g2) -> AUTOMORPH(x, g1·g2 mod 2N)   (x(X^g1)(X^g2) = x(X^(g1 g2)))
  AUTOMORPH(x, 1)               -> x
After: no ROTATE or CONJUGATE remains; no AUTOMORPH feeds another AUTOMORPH directly.
Leaves: AUTOMORPH in whatever domain its source is (pass 3 decides the domain).
"""

from __future__ import annotations

from ren.contracts import Contract, Forbid, fixed_point
from ren.ir import pnode
from ren.node import Node
from ren.ops import Op
from ren.rewrite import P, RuleSet, X, rewrite
from ren.ring import conjugation_element, galois_element
from ren.spec import need_spec

NAME = "lower_ring_ops"


def _two_n(n: Node) -> int:
    return 2 * _n(n)


def _n(n: Node) -> int:
    return need_spec(n).ring.N


def _compose(x: Node, inner: Node, outer: Node) -> Node:
    g = inner.arg * outer.arg % _two_n(outer)
    return x if g == 1 else pnode(Op.AUTOMORPH, x, arg=g)


rules = RuleSet([
    (P(Op.ROTATE, X("x"), name="n"),
     lambda x, n: pnode(Op.AUTOMORPH, x, arg=galois_element(_n(n), n.arg)), "rotate"),
    (P(Op.CONJUGATE, X("x"), name="n"),
     lambda x, n: pnode(Op.AUTOMORPH, x, arg=conjugation_element(_n(n))), "conjugate"),
    (P(Op.AUTOMORPH, P(Op.AUTOMORPH, X("x"), name="inner"), name="outer"), _compose,
     "compose_automorphisms"),
    (P(Op.AUTOMORPH, X("x"), arg=1), lambda x: x, "automorph_identity"),
])

#: after: no ROTATE or CONJUGATE (the op table), no rule above applies (no AUTOMORPH of an
#: AUTOMORPH, none by g = 1)
CONTRACT = Contract(2, forbid=(
    Forbid("an AUTOMORPH of an AUTOMORPH", P(Op.AUTOMORPH, P(Op.AUTOMORPH))),
    Forbid("an AUTOMORPH by g = 1", P(Op.AUTOMORPH, arg=1)),
), checks=(fixed_point(rules),))


def run(sink: Node, ctx=None) -> Node:
    return rewrite(sink, rules, ctx, name=NAME, keep_specs=True)
