"""User passes for tests/test_pipeline.py, importable as ``pipeline_user_passes:NAME`` (tests/ is
on sys.path under pytest) — what a researcher's own module would hold."""

from __future__ import annotations

from ren.node import Node
from ren.ops import Op
from ren.passes import P, Pass, X
from ren.passes.pipeline import default_pipeline


def _ordered(a: Node, b: Node) -> bool:
    """Whether a MUL's operands are out of a fixed order (by their structural key)."""
    return repr((a.op.value, a.arg)) > repr((b.op.value, b.arg))


def _swap(x: Node, y: Node, n: Node) -> Node | None:
    return n.replace(src=(y, x)) if _ordered(x, y) else None


#: canonical operand order for MUL (commutative, so values are unchanged).  Not fusable: its
#: decision reads the sources' op and arg, which the later passes of a fused row change
canonical_mul = Pass(
    "canonical_mul",
    rules=[(P(Op.MUL, X("x"), X("y"), name="n"), _swap, "mul_operand_order")],
    doc="Put MUL's operands in a canonical order.\n\nAfter: every MUL's operands are ordered.",
)

#: the same rules under another name
canonical_mul_alone = Pass(
    "canonical_mul_alone",
    rules=[(P(Op.MUL, X("x"), X("y"), name="n"), _swap, "mul_operand_order_alone")],
    doc="canonical_mul, by another name.",
)

#: -(-x) -> x.  Fusable: it matches two NEG nodes, and no later pass of a row rewrites a NEG
#: before indexify lowers the whole kernel, so it decides the same fused or alone
drop_double_neg = Pass(
    "drop_double_neg",
    rules=[(P(Op.NEG, P(Op.NEG, X("x"))), lambda x: x, "double_neg")],
    doc="Drop double negations.\n\nAfter: no NEG has a NEG source.",
    fusable=True,
)


def _count_nodes(sink: Node, ctx) -> Node:
    ctx.stats.setdefault("count_nodes", {})
    return sink


#: a pass written as run(sink, ctx): it only looks
count_nodes = Pass("count_nodes", run=_count_nodes, doc="Look at the graph; change nothing.")

#: a built-in pass under another name (a required one may replace a required one)
kernelize_again = Pass("kernelize_again", run=default_pipeline()["kernelize"].run,
                       optional=False, doc="kernelize, by another name")
