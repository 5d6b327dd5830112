"""A deterministic, readable text dump of a graph: one node per line, stable numbering.

This is the golden-snapshot format.  Nodes are numbered in `toposort` order (sources first,
left to right), rings and buffers by first appearance, so the same graph always prints the same
text, whatever the object ids.  Kernel ASTs (the `arg` of a KERNEL node) print indented under
their KERNEL line.

    rings:
      r0 = RingSpec(N=16, moduli=(...))
    %0 = BUFFER u32 buf0 python 16x2
    %1 = TO_RNS u32 (%0) r0 limb_count=2
    %2 = MUL u32 (%1, %1)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ren.device import Buffer
from ren.kernel import Kernel, RingCall, Slot
from ren.node import Node, toposort
from ren.random import RandomSpec
from ren.ring import Domain, RingSpec


@dataclass
class _Names:
    rings: dict[RingSpec, str] = field(default_factory=dict)
    buffers: dict[int, str] = field(default_factory=dict)

    def ring(self, r: RingSpec) -> str:
        return self.rings.setdefault(r, f"r{len(self.rings)}")

    def moduli(self, n: int, moduli: tuple[int, ...]) -> str:
        """The name of the ring with degree n over `moduli` (explicit kernel parameters)."""
        return self.ring(RingSpec(n, moduli))

    def buffer(self, b: Buffer) -> str:
        name = self.buffers.get(id(b))
        if name is None:
            name = self.buffers[id(b)] = f"buf{len(self.buffers)}"
        return name


def format_arg(arg: Any, names: _Names) -> str:
    """The text of one node argument."""
    if arg is None:
        return ""
    if isinstance(arg, RingSpec):
        return names.ring(arg)
    if isinstance(arg, Domain):
        return arg.name
    if isinstance(arg, Buffer):
        text = f"{names.buffer(arg)} {arg.device} {arg.shape[0]}x{arg.shape[1]}"
        if arg.base is not None:
            text += f" view of {names.buffer(arg.base)}+{arg.offset}"
        return text
    if isinstance(arg, RandomSpec):
        params = ",".join(repr(p) for p in arg.params)
        public = " public" if arg.public else ""
        return f"{arg.kind}({params}) seed={arg.seed.hex()[:12]} {arg.device}{public}"
    if isinstance(arg, bytes):
        return arg.hex()[:16]
    if isinstance(arg, Kernel):
        return arg.summary(lambda a: format_arg(a, names))
    if isinstance(arg, RingCall):
        text = f"{arg.kind.value} N={arg.n}"
        if arg.src:
            text += f" src={names.moduli(arg.n, arg.src)}"
        if arg.zero_rows:  # the first zero_rows source limbs are 0 and not read
            text += f" zero_rows={arg.zero_rows}"
        text += f" dst={names.moduli(arg.n, arg.dst)}"
        if arg.words:
            text += f" words={arg.words}"
        if arg.dropped:
            text += f" dropped={format_arg(arg.dropped, names)}"
        if arg.random is not None:
            text += f" {format_arg(arg.random, names)}"
        return text
    if isinstance(arg, Slot):
        (rows, cols), (s0, s1) = arg.shape, arg.strides
        return f"{arg.index} {rows}x{cols} strides=({s0}, {s1})"
    if isinstance(arg, tuple):
        return "(" + ", ".join(format_arg(a, names) for a in arg) + ")"
    if isinstance(arg, str):
        return arg
    return repr(arg)


def _lines(root: Node, names: _Names, indent: str) -> list[str]:
    order = toposort(root)
    number = {n: i for i, n in enumerate(order)}
    out = []
    for n in order:
        srcs = "(" + ", ".join(f"%{number[s]}" for s in n.src) + ")" if n.src else ""
        arg = format_arg(n.arg, names)
        parts = [f"{indent}%{number[n]} = {n.op.name} {n.dtype.value}", srcs, arg]
        out.append(" ".join(p for p in parts if p))
        if isinstance(n.arg, Kernel):  # its body, indented
            out.extend(_lines(n.arg.ast, names, indent + "    | "))
    return out


def _inline(n: Node, names: _Names) -> str:
    """A one-line rendering of a small subgraph, e.g. ``AS_RING(BUFFER(buf3 …)) (r0, NTT)``."""
    inner = ", ".join(_inline(s, names) for s in n.src)
    arg = format_arg(n.arg, names)
    text = f"{n.op.name}({inner})" if n.src else n.op.name
    return f"{text} {arg}".rstrip()


def dump(root: Node, becomes_map: dict[Node, Node] | None = None) -> str:
    """The canonical text of the graph under `root`.  With `becomes_map` (keyed by the requested
    outputs, in SINK order), one trailing line per output says what it becomes."""
    names = _Names()
    body = _lines(root, names, "")
    if becomes_map:
        body.append("becomes_map:")
        body.extend(f"  output {i} -> {_inline(v, names)}"
                    for i, v in enumerate(becomes_map.values()))
    header = ["rings:"] + [f"  {name} = {ring!r}" for ring, name in names.rings.items()]
    return "\n".join((header if names.rings else []) + body) + "\n"
