"""Pass 1 — simplify algebra, constants, ring changes and copies.

Rewrites:
  constants    the shared constant rule set (`ren.passes.folding`, run again by pass 4): an op
               whose operands are all constants folds to one constant (mod Q), including TO_RING,
               RESCALE, COPY and automorphisms of a constant; NTT/INTT of a constant is the
               constant in the other domain; x + 0, x - 0, 0 - x, x·1, x·0, x - x, -(-x)
  ring rules   TO_RING to the ring x already has -> x; TO_RING(TO_RING(x, r1), r2) ->
               TO_RING(x, r2) when every modulus of r2 is in both r1 and x's ring (exact
               selections compose; a basis extension in between does not)
  automorph    ROTATE by 0 and AUTOMORPH by g = 1 -> x
  copies       COPY to the device x is already on -> x; COPY(COPY(x, d1), d2) -> COPY(x, d2)
  contiguous   CONTIGUOUS(CONTIGUOUS(x)) -> CONTIGUOUS(x)
After: no rule above matches anywhere.
Leaves: every op it received; constants only as AS_RING(CONST) leaves.  Every node keeps its
ring, domain and device (the driver restores a domain that folding would change).
Statistics: firings per rule.
"""

from __future__ import annotations

from ren.contracts import ALL_CONSTANT_OPERANDS, CONST_UNDER_AS_RING, Contract, fixed_point
from ren.ir import pnode
from ren.node import Node
from ren.ops import Op
from ren.passes.folding import CONSTANT_RULES
from ren.rewrite import P, RuleSet, X, rewrite
from ren.spec import need_spec

NAME = "simplify"
#: the pipeline computes the same values without this pass (`ren.passes.Pipeline.without`)
OPTIONAL = True


def _compose_to_ring(x: Node, inner: Node, outer: Node) -> Node | None:
    r1, r2, r0 = inner.arg, outer.arg, need_spec(x).ring
    if set(r2.moduli) <= set(r1.moduli) and set(r2.moduli) <= set(r0.moduli):
        return pnode(Op.TO_RING, x, arg=r2)
    return None


rules = RuleSet([
    *CONSTANT_RULES,
    (P(Op.TO_RING, X("x"), name="n", where=lambda n: n.arg == need_spec(n.src[0]).ring),
     lambda x, n: x, "to_ring_same"),
    (P(Op.TO_RING, P(Op.TO_RING, X("x"), name="inner"), name="outer"), _compose_to_ring,
     "to_ring_compose"),
    (P(Op.ROTATE, X("x"), arg=0), lambda x: x, "rotate_zero"),
    (P(Op.AUTOMORPH, X("x"), arg=1), lambda x: x, "automorph_identity"),
    (P(Op.COPY, X("x"), name="n", where=lambda n: n.arg == need_spec(n.src[0]).device),
     lambda x, n: x, "copy_same_device"),
    (P(Op.COPY, P(Op.COPY, X("x")), name="n"), lambda x, n: pnode(Op.COPY, x, arg=n.arg),
     "copy_copy"),
    (P(Op.CONTIGUOUS, P(Op.CONTIGUOUS, name="inner")), lambda inner: inner, "contiguous_twice"),
])

#: after: no rule above applies; constants only as AS_RING(CONST)
CONTRACT = Contract(1, forbid=(ALL_CONSTANT_OPERANDS,),
                    checks=(fixed_point(rules), CONST_UNDER_AS_RING))


def run(sink: Node, ctx=None) -> Node:
    return rewrite(sink, rules, ctx, name=NAME, keep_specs=True)
