"""Pass 9 — lower ring constants to explicit per-limb expressions in Montgomery form.

A constant polynomial c is a vector of per-limb residues c mod q_l, stored as VCONST(ring,
(c·R mod q_0, …)) — Montgomery form, like every stored residue.  Every operand of every op
(except the SINK) is lowered, by where it is used:
  MUL(x, c)           -> MUL(x, VCONST): a scalar product is elementwise in both domains
  anything else, NTT  -> VCONST: the NTT of a constant is c in every slot
  anything else, COEFF-> WHERE(CMPEQ(GIDX(1), 0), VCONST, VCONST(0)): c at X^0, zero elsewhere
  REINDEX(c, ICONST(i)) -> VCONST of what c holds at coefficient i (a broadcast constant,
                         `ren.ir.broadcast_const`): c, or 0 for i > 0 in COEFF
Constants that are outputs themselves (SINK sources) stay symbolic: they need no storage.
After: AS_RING(CONST) appears only as a SINK source.
Leaves: VCONST, WHERE, CMPEQ, GIDX, ICONST.
"""

from __future__ import annotations

from ren.contracts import CONST_UNDER_AS_RING, Contract, Forbid
from ren.ir import gidx, iconst, idx, is_const, pnode
from ren.node import Node
from ren.ops import Op
from ren.rewrite import P, RuleSet, rewrite
from ren.ring import Domain, RingSpec, mont_words

NAME = "lower_constants"
#: why the pipeline needs this pass (`ren.passes.Pipeline.without` says it)
REQUIRED_BECAUSE = (
    "indexify lowers only explicit per-limb constants (VCONST); a symbolic CONST inside a "
    "kernel has no words until lower_constants gives them")


def vconst(value: int, ring: RingSpec) -> Node:
    return pnode(Op.VCONST, arg=(ring, mont_words(value, ring.moduli)))


def lowered(c: Node, scalar: bool) -> Node:
    ring, domain = c.arg
    v = vconst(c.src[0].arg[0], ring)
    if scalar or domain is Domain.NTT:
        return v
    at_zero = idx(Op.CMPEQ, gidx(1), iconst(0))
    return pnode(Op.WHERE, at_zero, v, vconst(0, ring))


def lower_operands(n: Node) -> Node:
    """Lower the constant operands of n.  Under MUL a constant is a scalar factor when the other
    operand is not a constant too (c1·c2 of two constants cannot reach this pass — passes 1 and 4
    fold it — but if it did, c1 is lowered as a polynomial and c2 as the scalar)."""
    src = list(n.src)
    for i, s in enumerate(src):
        if is_const(s):
            scalar = n.op is Op.MUL and not (i == 0 and is_const(src[1]))
            src[i] = lowered(s, scalar)
    return n.replace(src=tuple(src))


def _reindexed(c: Node, i: Node) -> Node:
    """A constant read at one fixed coefficient index (`ren.ir.broadcast_const`): the same word
    at every position, i.e. a VCONST."""
    ring, domain = c.arg
    value = c.src[0].arg[0] if domain is Domain.NTT or i.arg == 0 else 0
    return vconst(value, ring)


rules = RuleSet([
    (P(Op.REINDEX, P(Op.AS_RING, P(Op.CONST), name="c"), P(Op.ICONST, name="i")), _reindexed,
     "broadcast_const"),
    (P(None, name="n", where=lambda n: n.op is not Op.SINK and any(map(is_const, n.src))),
     lower_operands, "lower_const_operands"),
])

#: after: AS_RING(CONST) only as a SINK source (no rule above applies)
CONTRACT = Contract(9, forbid=(
    Forbid("a constant read by anything but the SINK (constants appear only as outputs)",
           P(None, where=lambda n: n.op is not Op.SINK and any(map(is_const, n.src)))),
), checks=(CONST_UNDER_AS_RING,))


#: `run` is one walk of `rules`: the scheduler may fuse it with its neighbours (`ren.passes`)
FUSABLE = True


def run(sink: Node, ctx=None) -> Node:
    return rewrite(sink, rules, ctx, name=NAME)
