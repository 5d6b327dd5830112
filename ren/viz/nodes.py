"""How one IR node is shown: its op family (and colour), a short label and its details.

Families group the ops of `ren.ops` by what they do, so a graph reads at a glance: storage and
leaves, polynomial arithmetic, NTT/INTT, ring changes, scheduling, the index language, the
lowered residue arithmetic and kernels.
"""

from __future__ import annotations

from typing import Any

from ren.dump import _Names, format_arg
from ren.node import Node
from ren.ops import INDEX_OPS, Op
from ren.spec import spec_of

#: family -> (fill colour, ops)
FAMILIES: dict[str, tuple[str, frozenset[Op]]] = {
    "storage": ("#dbe9f6", frozenset({Op.BUFFER, Op.CONST, Op.RANDOM, Op.TO_RNS, Op.AS_RING,
                                      Op.BUFFER_VIEW})),
    "arithmetic": ("#d3f0d3", frozenset({Op.ADD, Op.SUB, Op.MUL, Op.NEG})),
    "transform": ("#ffdcae", frozenset({Op.NTT, Op.INTT})),
    "ring": ("#e6d6f7", frozenset({Op.TO_RING, Op.RESCALE, Op.ROTATE, Op.CONJUGATE,
                                   Op.AUTOMORPH, Op.REINDEX, Op.CONCAT})),
    "schedule": ("#e8e8e8", frozenset({Op.COPY, Op.CONTIGUOUS, Op.SINK, Op.BUFFERIZE, Op.STORE,
                                       Op.AFTER})),
    "index": ("#fff3b0", INDEX_OPS | {Op.WHERE, Op.INDEX, Op.LOAD}),
    "lowered": ("#c4efe6", frozenset({Op.MODADD, Op.MODSUB, Op.MODNEG, Op.MONTMUL, Op.MODULUS,
                                      Op.VCONST})),
    "kernel": ("#ffd0dc", frozenset({Op.KERNEL, Op.SLOT, Op.RING_CALL})),
}
_FAMILY_OF = {op: fam for fam, (_, ops) in FAMILIES.items() for op in ops}

#: diff status -> (border colour, pen width, style)
STATUS_STYLE = {
    "kept": ("#6e7781", "1", ""),
    "changed": ("#bf8700", "2.5", ""),
    "added": ("#1a7f37", "3", ""),
    "removed": ("#cf222e", "2", "dashed"),
}

LABEL_ARG_CHARS = 36
DETAIL_CHARS = 600


def family(op: Op) -> str:
    return _FAMILY_OF[op]


def colour(op: Op) -> str:
    return FAMILIES[_FAMILY_OF[op]][0]


def short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def label(n: Node, number: int, names: _Names) -> str:
    """``%k OP`` and, on a second line, the start of its arg."""
    arg = format_arg(n.arg, names)
    head = f"%{number} {n.op.name}"
    return f"{head}\n{short(arg, LABEL_ARG_CHARS)}" if arg else head


def details(n: Node, number: int, numbers: dict[Node, int], names: _Names,
            status: str = "kept") -> dict[str, Any]:
    """What a click on the node shows: op, dtype, arg, ring, domain, device, sources."""
    try:
        spec = spec_of(n)
    except Exception:  # a malformed node (e.g. edited through networkx): show it without one
        spec = None
    out: dict[str, Any] = {
        "node": f"%{number}",
        "op": n.op.name,
        "family": family(n.op),
        "dtype": n.dtype.value,
        "arg": short(format_arg(n.arg, names), DETAIL_CHARS) or "—",
        "ring": "—",
        "domain": "—",
        "device": "—",
        "sources": ", ".join(f"%{numbers[s]}" if s in numbers else "?" for s in n.src) or "—",
        "status": status,
    }
    if spec is not None:
        ring = spec.ring
        out["ring"] = f"{names.ring(ring)}: N={ring.N}, {ring.limbs} limbs"
        out["domain"] = spec.domain.name
        out["device"] = spec.device or "—"
    return out


__all__ = ["FAMILIES", "STATUS_STYLE", "colour", "details", "family", "label", "short"]
