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

from ren.device import Buffer
from ren.ir import as_ring
from ren.node import Node
from ren.ops import DType, Op
from ren.rewrite import P, RuleSet, X, rewrite
from ren.spec import spec_of

NAME = "lower_bufferize"


def lower(x: Node) -> Node:
    spec = spec_of(x)
    buf = Node(Op.BUFFER, DType.U32, (), Buffer(spec.device, (spec.ring.limbs, spec.ring.N)))
    store = Node(Op.STORE, DType.VOID, (buf, x), (spec.ring, spec.domain))
    return as_ring(Node(Op.AFTER, DType.U32, (buf, store)), spec.ring, spec.domain)


rules = RuleSet([(P(Op.BUFFERIZE, X("x")), lower, "bufferize")])


def run(sink: Node, ctx=None) -> Node:
    return rewrite(sink, rules, ctx, name=NAME)
