"""Pass 6 — lower BUFFERIZE markers to explicit storage.

Rewrites:
  BUFFERIZE(x) -> AS_RING(AFTER(B, STORE(B, x)), ring, domain)
  with B = BUFFER(a new Buffer of shape (limbs, N) on x's device).  STORE writes x into B;
  AFTER is B's value once the store has run, so it orders readers after the writer without
  changing the value that flows; AS_RING re-attaches x's ring and domain.
After: no BUFFERIZE remains; every materialized value is a STORE into its own new BUFFER.
Leaves: STORE(B, value) where value is still a high-level expression (passes 8-11 lower it).
"""

from __future__ import annotations

from ren.contracts import Contract, Forbid, Require
from ren.device import Buffer
from ren.ir import as_ring
from ren.node import Node, toposort
from ren.ops import DType, Op
from ren.rewrite import P, RuleSet, X, rewrite
from ren.spec import need_spec

NAME = "lower_bufferize"


def lower(x: Node, orig: Node) -> Node:
    # the marker's spec as pass 5 made it: in a walk fused with passes 8-12, x may already be
    # lowered into ops without one (a VCONST, say)
    spec = need_spec(orig)
    buf = Node(Op.BUFFER, DType.U32, (), Buffer(spec.device, (spec.ring.limbs, spec.ring.N)))
    store = Node(Op.STORE, DType.VOID, (buf, x), (spec.ring, spec.domain))
    return as_ring(Node(Op.AFTER, DType.U32, (buf, store)), spec.ring, spec.domain)


rules = RuleSet([(P(Op.BUFFERIZE, X("x")), lower, "bufferize")])


def _stored_twice(sink: Node, ctx) -> Node | None:
    seen: set[Node] = set()
    for n in toposort(sink):
        if n.op is Op.STORE:
            if n.src[0] in seen:
                return n
            seen.add(n.src[0])
    return None


#: after: no BUFFERIZE (the op table); every STORE writes a BUFFER of its own, read through AFTER
CONTRACT = Contract(6, forbid=(
    Forbid("a STORE whose target is not a BUFFER",
           P(Op.STORE, where=lambda n: n.src[0].op is not Op.BUFFER)),
    Forbid("an AFTER that is not AFTER(BUFFER, STORE into it)",
           P(Op.AFTER, where=lambda n: n.src[1].op is not Op.STORE
             or n.src[1].src[0] is not n.src[0])),
), checks=(Require("every BUFFER is stored at most once", _stored_twice),))


#: `run` is one walk of `rules`: the scheduler may fuse it with its neighbours (`ren.passes`)
FUSABLE = True


def run(sink: Node, ctx=None) -> Node:
    return rewrite(sink, rules, ctx, name=NAME)
