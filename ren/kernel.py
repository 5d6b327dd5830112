"""What scheduling produces: `Kernel` (the arg of a KERNEL node) and `ScheduledKernel` (one item
of the schedule list).

Kernel kinds:

* ``elementwise`` — a fused chain of modular arithmetic, index maps and views:
  ``STORE(INDEX(SLOT0, GIDX0, GIDX1), value)``.
* ring kernels, one op with its own backend helper: ``ntt``, ``intt``, ``to_rns``,
  ``basis_convert`` (TO_RING onto new moduli), ``rescale`` (the divide-and-round correction),
  ``random`` — ``STORE(SLOT0, OP(AS_RING(SLOT1, ring, domain)))``.
* light items: ``copy`` (device transfer) and ``view`` (a BUFFER_VIEW bound to its base; no
  kernel, validation only).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ren.device import Buffer
from ren.node import Node
from ren.ring import RingSpec

ELEMENTWISE = "elementwise"
RING_KINDS = ("ntt", "intt", "to_rns", "basis_convert", "rescale", "random")
LIGHT_KINDS = ("copy", "view")
KINDS = (ELEMENTWISE, *RING_KINDS, *LIGHT_KINDS)


@dataclass(frozen=True)
class Kernel:
    """The body of a KERNEL node: an AST over SLOT parameters (slot 0 is the output)."""

    name: str
    kind: str
    ast: Node
    ring: RingSpec | None
    nslots: int

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown kernel kind {self.kind!r}; kinds are {KINDS}")

    def summary(self, fmt: Callable) -> str:
        ring = f" {fmt(self.ring)}" if self.ring is not None else ""
        return f"{self.name} kind={self.kind}{ring} slots={self.nslots}"


@dataclass
class ScheduledKernel:
    """One item of a schedule: what to run (`kind`, `ast`) on which buffers (`bufs[0]` is the
    output; for a view, bufs = (view, base))."""

    kind: str
    name: str
    ast: Node | None
    bufs: tuple[Buffer, ...]
    ring: RingSpec | None = None
    node: Node | None = None

    @property
    def outputs(self) -> tuple[Buffer, ...]:
        return self.bufs[:1]

    @property
    def inputs(self) -> tuple[Buffer, ...]:
        return self.bufs[1:]

    def __repr__(self) -> str:
        bufs = ", ".join(f"#{b.uid}" for b in self.bufs)
        return f"<ScheduledKernel {self.name} {self.kind} [{bufs}]>"
