"""What scheduling produces: `Kernel` (the arg of a KERNEL node) and `ScheduledKernel` (one item
of the schedule list).

Kernels are self-describing: a renderer needs the AST and the kernel's `space` only, never a
ring object.  Every parameter is a SLOT whose arg (`Slot`) gives its index, shape, dtype and
strides; slot 0 is the output.  Kernel kinds:

* ``elementwise`` — a fused chain of modular arithmetic, index maps and views, one element per
  point of the iteration space ``space = (limbs, N)`` (GIDX(0) the limb, GIDX(1) the
  coefficient)::

      STORE(INDEX(SLOT0, GIDX0, GIDX1), value)

  where value uses LOAD(INDEX(SLOTk, limb expr, coefficient expr)), index ops, VCONST(limb)
  (per-limb Montgomery words in its arg), WHERE, and MODADD/MODSUB/MODNEG/MONTMUL whose last
  operand is MODULUS(GIDX0) (arg: the modulus of each output limb; the Montgomery constant
  -q^-1 mod 2^32 is derived from it, see `ren.alu`).  All residues are Montgomery-form words.
* ring kernels (`ren.ring.RingKernel`: ``ntt``, ``intt``, ``to_rns``, ``basis_convert`` — a
  TO_RING onto new moduli —, ``rescale`` — the divide-and-round correction —, ``random``), one
  library call each, with every parameter explicit in a `RingCall`::

      STORE(SLOT0, RING_CALL(SLOT1))      ntt, intt, to_rns, basis_convert, rescale
      STORE(SLOT0, RING_CALL())           random

  Slot 1 holds the input limbs (residues mod ``src``; for to_rns the packed (N × words) integer
  words); slot 0 receives residues mod ``dst``.  A limb range of a larger buffer is passed by
  binding a view of it as the slot.  The constant tables of a call (twiddles, Shoup constants,
  conversion matrices, …) are `RingCall.tables()`.
* light items: ``copy`` (device transfer; AST ``STORE(SLOT0, COPY(AS_RING(SLOT1)))``) and
  ``view`` (a BUFFER_VIEW bound to its base; no kernel, validation only).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from ren.device import Buffer
from ren.errors import RealizeError
from ren.node import Node
from ren.ops import DType, Op
from ren.random import RandomSpec
from ren.ring import RingKernel, RingSpec, kernel_tables, twiddle_rows

#: the kinds of a scheduled item (`Kernel.kind`, `ScheduledKernel.kind`): spell them by these
#: names, never as string literals
ELEMENTWISE = "elementwise"
RING_KINDS = tuple(k.value for k in RingKernel)
COPY = "copy"
VIEW = "view"
LIGHT_KINDS = (COPY, VIEW)
KINDS = (ELEMENTWISE, *RING_KINDS, *LIGHT_KINDS)
#: the ExecUnit kind (`ren.runtime`) of an item a backend runs: an elementwise or ring kernel
COMPUTE = "compute"


@dataclass(frozen=True)
class Slot:
    """The arg of a SLOT node: kernel parameter `index`, bound to a (rows × cols) array of
    `dtype` whose element (r, c) sits at r·strides[0] + c·strides[1]."""

    index: int
    shape: tuple[int, int]
    dtype: DType
    strides: tuple[int, int]

    @staticmethod
    def contiguous(index: int, shape: tuple[int, int], dtype: DType = DType.U32) -> Slot:
        """A row-major (C-contiguous) slot, as every Ren buffer and view is."""
        return _contiguous_slot(index, int(shape[0]), int(shape[1]), dtype)


@lru_cache(maxsize=4096)
def _contiguous_slot(index: int, rows: int, cols: int, dtype: DType) -> Slot:
    return Slot(index, (rows, cols), dtype, (cols, 1))


@dataclass(frozen=True)
class RingCall:
    """The arg of a RING_CALL node: which ring kernel, with all of its parameters.

    ``n`` is the ring degree N; ``src`` the moduli of the input limbs (empty for to_rns and
    random); ``dst`` the moduli of the output limbs; ``words`` the u32 words per packed input
    coefficient (to_rns); ``dropped`` the trailing source moduli divided out (rescale: dst is
    src without them); ``random`` what to sample (random); ``zero_rows`` (rescale) how many of
    the first source limbs are 0 and not passed: slot 1 holds the other len(src) - zero_rows
    limbs (a key switch's mod-down by P reads RESCALE(CONCAT(0 over Q, y)): y's K rows only,
    not L + K).  A backend that cannot take the rows of 0 as 0 runs `full()` on the input
    `full_input` makes."""

    kind: RingKernel
    n: int
    src: tuple[int, ...]
    dst: tuple[int, ...]
    words: int = 0
    dropped: tuple[int, ...] = ()
    random: RandomSpec | None = None
    zero_rows: int = 0

    def input_shape(self) -> tuple[int, int] | None:
        """The shape slot 1 must have (None: the call has no input)."""
        if self.kind is RingKernel.RANDOM:
            return None
        if self.kind is RingKernel.TO_RNS:
            return (self.n, self.words)
        return (len(self.src) - self.zero_rows, self.n)

    def full(self) -> RingCall:
        """The same call on the whole input (the rows of 0 passed as rows: `full_input`)."""
        return replace(self, zero_rows=0) if self.zero_rows else self

    def full_input(self, rows: np.ndarray) -> np.ndarray:
        """The whole input of `full()` from the input of this call: `zero_rows` rows of 0 above
        `rows` (NumPy arrays; `rows` itself when there are none)."""
        if not self.zero_rows:
            return rows
        out = np.zeros((len(self.src), self.n), rows.dtype)
        out[self.zero_rows:] = rows
        return out

    def tables(self, twiddles: bool = True) -> dict[str, np.ndarray]:
        """The call's constants as named NumPy arrays (`ren.ring.kernel_tables`; without the
        stacked twiddle tables when `twiddles` is False: see `twiddle_rows`)."""
        return kernel_tables(self.kind, self.n, self.src, self.dst, self.words, self.dropped,
                             twiddles)

    def twiddle_rows(self) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
        """An NTT's or INTT's twiddle rows and their Shoup rows, one per destination modulus
        (`ren.ring.twiddle_rows`)."""
        return twiddle_rows(self.kind, self.n, self.dst)

    def src_ring(self) -> RingSpec:
        """The ring of the input limbs (not for to_rns and random, whose `src` is empty)."""
        return call_ring(self.n, self.src)

    def dst_ring(self) -> RingSpec:
        """The ring of the output limbs."""
        return call_ring(self.n, self.dst)

    def need_random(self) -> RandomSpec:
        """What a random call samples: `random`, which every random call has."""
        if self.random is None:
            raise ValueError(f"a {self.kind.value} call samples nothing (RingCall.random is None)")
        return self.random

    def check_rescale(self, who: str, takes_zero_rows: bool = False) -> None:
        """RealizeError unless this rescale call divides out `dropped`, one or more trailing
        moduli of `src`, leaving `dst` (the rule every backend relies on), and its rows of 0
        (`zero_rows`) are kept limbs.  A backend that does not pass `takes_zero_rows` (it reads
        every source limb from slot 1) gets RealizeError for a call with rows of 0: it must run
        `full()` on `full_input(rows)`, never the call on a short input.  `who` names the
        backend in the message."""
        LS, K = len(self.src), len(self.dropped)
        if K < 1 or self.src[LS - K :] != self.dropped or self.dst != self.src[: LS - K]:
            raise RealizeError(f"{who}: rescale drops {self.dropped}, which are not the "
                               f"trailing moduli of {self.src} leaving {self.dst}")
        if not 0 <= self.zero_rows <= LS - K:
            raise RealizeError(f"{who}: a rescale of {LS} limbs dropping {K} takes "
                               f"{self.zero_rows} rows of 0; only 0 to {LS - K} (kept) limbs "
                               "may be 0")
        if self.zero_rows and not takes_zero_rows:
            raise RealizeError(f"{who}: this rescale takes {self.zero_rows} rows of 0 that its "
                               "input does not hold; run call.full() on call.full_input(rows)")


@lru_cache(maxsize=256)
def call_ring(n: int, moduli: tuple[int, ...]) -> RingSpec:
    """The RingSpec of a call's explicit parameters (`RingCall.src_ring`, `dst_ring`), built
    and validated once."""
    return RingSpec(n, moduli)


@dataclass(frozen=True)
class Kernel:
    """The body of a KERNEL node: an AST over SLOT parameters (slot 0 is the output) and the
    iteration space it runs over (the output's (rows, cols)).  `ring` is the output ring, kept
    for dumps and diagnostics only."""

    name: str
    kind: str
    ast: Node
    ring: RingSpec | None
    nslots: int
    space: tuple[int, int]

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown kernel kind {self.kind!r}; kinds are {KINDS}")

    def summary(self, fmt: Callable) -> str:
        ring = f" {fmt(self.ring)}" if self.ring is not None else ""
        return (f"{self.name} kind={self.kind}{ring} slots={self.nslots} "
                f"space={self.space[0]}x{self.space[1]}")


@dataclass
class ScheduledKernel:
    """One item of a schedule: what to run (`kind`, `ast`, over `space`) on which buffers
    (`bufs[0]` is the output; for a view, bufs = (view, base))."""

    kind: str
    name: str
    ast: Node | None
    bufs: tuple[Buffer, ...]
    ring: RingSpec | None = None
    node: Node | None = None
    space: tuple[int, int] | None = None

    @property
    def outputs(self) -> tuple[Buffer, ...]:
        return self.bufs[:1]

    @property
    def inputs(self) -> tuple[Buffer, ...]:
        return self.bufs[1:]

    @property
    def ring_call(self) -> RingCall | None:
        """The RingCall of a ring-kernel item (STORE(slot, RING_CALL)), else None."""
        ast = self.ast
        if self.kind == ELEMENTWISE or ast is None or ast.op is not Op.STORE:
            return None
        call = ast.src[1]
        return call.arg if call.op is Op.RING_CALL else None

    def body(self) -> tuple[Node, tuple[int, int]]:
        """The AST and the iteration space of a kernel a backend compiles (every item but a
        copy or a view has both); ValueError for an item without them."""
        if self.ast is None or self.space is None:
            raise ValueError(f"{self.kind} item {self.name} has no kernel body")
        return self.ast, self.space

    @property
    def key(self) -> tuple:
        """What a compiled kernel depends on: the kind, the hash-consed AST (slot shapes, moduli
        and call parameters live in it) and the iteration space — not the buffers."""
        return (self.kind, self.ast, self.space)

    def __repr__(self) -> str:
        bufs = ", ".join(f"#{b.uid}" for b in self.bufs)
        return f"<ScheduledKernel {self.name} {self.kind} [{bufs}]>"
