"""Pass 7 — build the becomes_map: each requested lazy output -> its buffer-backed node.

For output i of the SINK (the node the user asked for before pass 1, ``ctx.outputs[i]``):
  AS_RING(AFTER(B, STORE(B, x)), ring, domain) -> AS_RING(B, ring, domain)
  an output that already was storage or a constant maps to that node.
After realization, every live Poly whose graph contains a key is rewritten to the value, so
nothing is recomputed.
After: ctx.becomes_map has one entry per requested output.
Leaves: the graph unchanged (this pass only records).
"""

from __future__ import annotations

from ren.contracts import Contract, Require
from ren.errors import ScheduleError
from ren.ir import as_ring, is_const, is_storage
from ren.node import Node
from ren.ops import Op

NAME = "becomes_map"
#: why the pipeline needs this pass (`ren.passes.Pipeline.without` says it)
REQUIRED_BECAUSE = (
    "realization maps each requested output through ctx.becomes_map, which only becomes_map "
    "fills")


def buffer_backed(o: Node) -> Node:
    """The node that stands for output `o` once the schedule has run."""
    if o.op is Op.AS_RING and o.src[0].op is Op.AFTER:
        ring, domain = o.arg
        return as_ring(o.src[0].src[0], ring, domain)
    if is_storage(o) or is_const(o):
        return o
    raise ScheduleError(f"becomes_map: output {o.op.name} is neither storage nor a constant; "
                        "pass 5/6 should have materialized it")


def _unmapped(sink: Node, ctx) -> Node | None:
    if ctx is None:  # a run without a context records nothing
        return None
    mapped = ctx.becomes_map
    return next((o for o in (ctx.outputs or sink.src) if o not in mapped), None)


#: after: the graph as it was, and a becomes_map entry for every requested output
CONTRACT = Contract(7, checks=(
    Require("every requested output has a becomes_map entry", _unmapped),))


#: `run` leaves the graph as it is and only records; what it records (each output's buffer) is
#: the same on the graph passes 8-12 make, so a fused row runs it after its walk (`ren.passes`)
RECORDS_ONLY = True


def run(sink: Node, ctx=None) -> Node:
    if ctx is None:
        return sink
    outputs = ctx.outputs or sink.src
    ctx.becomes_map = {orig: buffer_backed(o) for orig, o in zip(outputs, sink.src)}
    return sink
