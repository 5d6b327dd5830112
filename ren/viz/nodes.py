"""How one IR node is shown: its op family (and colour), a short label and its details.

Families group the ops of `ren.ops` by what they do, so a graph reads at a glance: storage and
leaves, polynomial arithmetic, NTT/INTT, ring changes, scheduling, the index language, the
lowered residue arithmetic and kernels.  Which family an op is in is its op-table row's ``viz``;
the colours are here.
"""

from __future__ import annotations

from typing import Any

from ren.dump import _Names, format_arg
from ren.node import Node
from ren.ops import Op, ops_where
from ren.spec import spec_of

#: family -> fill colour, in legend order
COLOURS = {
    "storage": "#dbe9f6",
    "arithmetic": "#d3f0d3",
    "transform": "#ffdcae",
    "ring": "#e6d6f7",
    "schedule": "#e8e8e8",
    "index": "#fff3b0",
    "lowered": "#c4efe6",
    "kernel": "#ffd0dc",
}


def _family_ops(fam: str) -> frozenset[Op]:
    return ops_where(lambda info: info.viz == fam)


#: family -> (fill colour, ops)
FAMILIES: dict[str, tuple[str, frozenset[Op]]] = {
    fam: (colour, _family_ops(fam)) for fam, colour in COLOURS.items()}


def family(op: Op) -> str:
    return op.info.viz

#: diff status -> (border colour, pen width, style)
STATUS_STYLE = {
    "kept": ("#6e7781", "1", ""),
    "rewritten": ("#bf8700", "3", ""),
    "rebuilt": ("#d4a72c", "1.5", ""),
    "added": ("#1a7f37", "3", ""),
    "removed": ("#cf222e", "2", "dashed"),
}

LABEL_ARG_CHARS = 36
DETAIL_CHARS = 600


def colour(op: Op) -> str:
    return COLOURS[op.info.viz]


def short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def label(n: Node, number: int, names: _Names) -> str:
    """``%k OP`` and, on a second line, the start of its arg."""
    arg = format_arg(n.arg, names)
    head = f"%{number} {n.op.name}"
    return f"{head}\n{short(arg, LABEL_ARG_CHARS)}" if arg else head


def details(n: Node, number: int, numbers: dict[Node, int], names: _Names,
            status: str = "kept", rule: str = "", replaces: str = "") -> dict[str, Any]:
    """What a click on the node shows: op, dtype, arg, ring, domain, device, sources, status,
    and the rule that produced it and the node it replaced (``—`` when none)."""
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
        "rule": rule or "—",
        "replaces": replaces or "—",
    }
    if spec is not None:
        ring = spec.ring
        out["ring"] = f"{names.ring(ring)}: N={ring.N}, {ring.limbs} limbs"
        out["domain"] = spec.domain.name
        out["device"] = spec.device or "—"
    return out


__all__ = ["COLOURS", "FAMILIES", "STATUS_STYLE", "colour", "details", "family", "label", "short"]
