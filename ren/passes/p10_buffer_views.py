"""Pass 10 — turn eligible quotient views into BUFFER_VIEW.

Rewrites:
  TO_RING(AS_RING(storage), r) where r's moduli are a contiguous run of the source's moduli
      -> AS_RING(BUFFER_VIEW(base), r, domain)
  The view is a Buffer at element offset (first limb)·N of the base buffer, (limbs of r)·N
  elements long.  Layout allows it in both domains: limbs are rows of a row-major array and the
  NTT of each limb depends only on its own modulus.  A view of a view points at the base.
After: no TO_RING onto a contiguous run of moduli has a storage source.
Leaves: TO_RING of a computed (elementwise) value and TO_RING onto a non-contiguous subset
(pass 11 fuses both into indexed loads), extending TO_RING (a basis-conversion kernel).
"""

from __future__ import annotations

from ren.contracts import Contract, Forbid
from ren.device import Buffer
from ren.ir import as_ring, is_storage, is_view_candidate, storage_buffer
from ren.node import Node
from ren.ops import DType, Op
from ren.rewrite import P, RuleSet, X, rewrite
from ren.spec import need_spec

NAME = "buffer_views"
#: why the pipeline needs this pass (`ren.passes.Pipeline.without` says it): it is no mere
#: optimisation, because pass 5 relies on it
REQUIRED_BECAUSE = (
    "materialize leaves a ring kernel's input that is a TO_RING onto a contiguous run of stored "
    "moduli uncopied, for buffer_views to turn into a BUFFER_VIEW, and ring kernels read only "
    "storage (kernelize refuses anything else)")


def to_view(x: Node, n: Node) -> Node:
    src, dst = need_spec(x), n.arg
    first = dst.offset_in(src.ring)
    storage = x.src[0]
    base_node, offset = storage, first * src.ring.N
    if storage.op is Op.BUFFER_VIEW:  # compose with the existing view
        base_node, offset = storage.src[0], storage.arg.offset + offset
    base = storage_buffer(base_node)
    view = Buffer(base.device, (dst.limbs, dst.N), base=base, offset=offset)
    return as_ring(Node(Op.BUFFER_VIEW, DType.U32, (base_node,), view), dst, src.domain)


rules = RuleSet([
    (P(Op.TO_RING, X("x", where=is_storage), name="n", where=is_view_candidate), to_view,
     "to_ring_to_view"),
])

#: after: no TO_RING onto a contiguous run of moduli reads storage (it is a BUFFER_VIEW)
CONTRACT = Contract(10, forbid=(
    Forbid("a TO_RING onto a contiguous run of a stored value's moduli",
           P(Op.TO_RING, X("x", where=is_storage), where=is_view_candidate)),))


#: `run` is one walk of `rules`: the scheduler may fuse it with its neighbours (`ren.passes`)
FUSABLE = True


def run(sink: Node, ctx=None) -> Node:
    return rewrite(sink, rules, ctx, name=NAME)
