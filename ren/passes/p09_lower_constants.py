"""Pass 9 — lower ring constants to explicit per-limb expressions in Montgomery form.

A constant polynomial c is a vector of per-limb residues c mod q_l, stored as VCONST(ring,
(c·R mod q_0, …)) — Montgomery form, like every stored residue.  By where it is used:
  MUL(x, c)           -> MUL(x, VCONST): a scalar product is elementwise in both domains
  ADD/SUB/STORE, NTT  -> VCONST: the NTT of a constant is c in every slot
  ADD/SUB/STORE, COEFF-> WHERE(CMPEQ(GIDX(1), 0), VCONST, VCONST(0)): c at X^0, zero elsewhere
Constants that are outputs themselves (SINK sources) stay symbolic: they need no storage.
After: AS_RING(CONST) appears only as a SINK source.
Leaves: VCONST, WHERE, CMPEQ, GIDX, ICONST.
"""

from __future__ import annotations

from ren.ir import gidx, iconst, idx, is_const, pnode
from ren.node import Node
from ren.ops import Op
from ren.rewrite import P, rewrite
from ren.ring import Domain, RingSpec

NAME = "lower_constants"


def vconst(value: int, ring: RingSpec) -> Node:
    return pnode(Op.VCONST, arg=(ring, tuple((value % q) * (1 << 32) % q for q in ring.moduli)))


def lowered(c: Node, scalar: bool) -> Node:
    ring, domain = c.arg
    v = vconst(c.src[0].arg[0], ring)
    if scalar or domain is Domain.NTT:
        return v
    at_zero = idx(Op.CMPEQ, gidx(1), iconst(0))
    return pnode(Op.WHERE, at_zero, v, vconst(0, ring))


def lower_operands(n: Node) -> Node:
    src = tuple(lowered(s, n.op is Op.MUL) if is_const(s) else s for s in n.src)
    return n.replace(src=src)


rules = [
    (P({Op.ADD, Op.SUB, Op.MUL, Op.STORE}, name="n", where=lambda n: any(map(is_const, n.src))),
     lower_operands, "lower_const_operands"),
]


def run(sink: Node, ctx=None) -> Node:
    return rewrite(sink, rules, ctx, name=NAME)
