"""An IR interpreter that evaluates the graph after *any* pass, for checking the scheduler.

It extends the reference evaluator (`ren.reference`) with the scheduling and lowered ops:

* Storage is modelled by a private memory: one flat int64 array per base Buffer, initialised from
  the buffer's real contents when it has them (random garbage otherwise, so reading a buffer
  before it is written shows up as a wrong value).  Memory holds Montgomery form, like real
  storage; AS_RING decodes it, a STORE of a polynomial value encodes.
* Polynomial values (above the kernel level) are standard-form residues, computed with the plain
  math of the reference evaluator (int64 with ``%``).
* Kernel bodies (an indexified STORE, before or inside a KERNEL) are evaluated the way a backend
  runs them: over the whole (L, N) grid of the stored ring (GIDX(0) the limb, GIDX(1) the
  coefficient), on Montgomery-form u32 words, every index and residue op through the ALU table
  (`ren.alu`); LOAD reads stored words, the STORE writes words.  Ring-kernel calls
  (RING_CALL) decode their input slot, apply the reference math and encode.  A KERNEL runs its
  AST with SLOTs bound to the buffers of its sources.

`check_pass` compares the outputs of the graph before and after a pass; `evaluate_sink` returns
the output values of any stage.
"""

from __future__ import annotations

import numpy as np

from ren.alu import ALU_OPS, alu
from ren.device import Buffer
from ren.errors import ScheduleError
from ren.ir import storage_buffer
from ren.node import Node
from ren.ops import GroupOp, Op
from ren.reference import (
    ReferenceEvaluator,
    basis_convert,
    divide_round,
    mont_decode,
    mont_encode,
    to_rns_values,
)
from ren.ring import Domain, RingKernel, RingSpec
from ren.sampling import sample
from ren.spec import need_ring, need_spec

I64 = np.int64

#: ops that only have a value inside an index context (an elementwise kernel body)
_CONTEXTUAL = GroupOp.INDEX | GroupOp.ACCESS | GroupOp.RESIDUE


class Memory:
    """The interpreter's model of device memory (Montgomery-form words, int64)."""

    def __init__(self, seed: int = 0):
        self.bases: dict[Buffer, np.ndarray] = {}
        self.rng = np.random.default_rng(seed)

    def _base(self, buf: Buffer) -> np.ndarray:
        arr = self.bases.get(buf)
        if arr is None:
            if buf.is_allocated:
                arr = buf.copyout().reshape(-1).astype(I64)
            else:
                arr = self.rng.integers(0, 2**32, buf.size, dtype=I64)  # unwritten: garbage
            self.bases[buf] = arr
        return arr

    def view(self, buf: Buffer) -> np.ndarray:
        """The (rows × cols) int64 view of a buffer's words (views slice their base)."""
        if buf.base is not None:
            base = self._base(buf.base)
            if buf.offset + buf.size > base.size:
                raise ScheduleError(f"view {buf} runs past the end of its base")
            return base[buf.offset : buf.offset + buf.size].reshape(buf.shape)
        return self._base(buf).reshape(buf.shape)


def _moduli(ring: RingSpec) -> np.ndarray:
    return np.array(ring.moduli, dtype=I64).reshape(-1, 1)


class Interpreter(ReferenceEvaluator):
    """Evaluates a graph at any stage of scheduling (see the module docstring)."""

    def __init__(self, memory: Memory | None = None, slots: dict[int, Buffer] | None = None):
        super().__init__()
        self.mem = memory or Memory()
        self.slots = slots or {}

    # -- storage ---------------------------------------------------------------------------
    def buffer_of(self, n: Node) -> Buffer:
        """The buffer behind storage, a SLOT, or an INDEX into either."""
        if n.op is Op.INDEX:
            n = n.src[0]
        if n.op not in GroupOp.MEMORY:
            raise ScheduleError(f"interpreter: {n.op.name} is not storage")
        if n.op is Op.SLOT:
            return self.slots[n.arg.index]
        return storage_buffer(n)

    def raw(self, n: Node) -> np.ndarray:
        return self.mem.view(self.buffer_of(n))

    def eval_node(self, n: Node):
        if n.op in _CONTEXTUAL or (n.op is Op.VCONST and n.src) or (
                n.op is Op.WHERE and any(self.values.get(s) is None for s in n.src[1:])):
            return None  # evaluated by the kernel body evaluator, in its index context
        return super().eval_node(n)

    def op_BUFFER(self, n: Node) -> np.ndarray:
        return self.raw(n)

    def op_SLOT(self, n: Node) -> np.ndarray:
        return self.raw(n)

    def op_AFTER(self, n: Node) -> np.ndarray:
        return self.raw(n.src[0])  # the effect (src[1]) was evaluated first

    def op_BUFFER_VIEW(self, n: Node) -> np.ndarray:
        return self.raw(n)

    def op_BUFFERIZE(self, n: Node) -> np.ndarray:
        return self.v(n.src[0])

    def op_STORE(self, n: Node) -> None:
        target, value = n.src
        ring = n.arg[0]
        q = _moduli(ring)
        if target.op is Op.INDEX:  # a kernel body: it computes Montgomery words itself
            body = KernelBody(self, self._grid(ring))
            vals = np.broadcast_to(body.value(value), (ring.limbs, ring.N))
            _, limb, coeff = target.src  # INDEX(storage, limb, coefficient)
            li, ni = np.broadcast_arrays(body.index(limb), body.index(coeff))
            self.raw(target)[li, ni] = vals
            return None
        vals = self.v(value)
        self.raw(target)[...] = mont_encode(np.asarray(vals), q).reshape(self.raw(target).shape)
        return None

    def op_RING_CALL(self, n: Node) -> np.ndarray:
        """A ring-kernel call, from its explicit parameters: decode the input slot, apply the
        reference math, return standard residues of the destination ring (STORE encodes)."""
        c = n.arg
        dst = c.dst_ring()
        if c.kind is RingKernel.RANDOM:
            return sample(c.need_random(), dst).astype(I64)
        raw = self.v(n.src[0])
        if c.kind is RingKernel.TO_RNS:
            return to_rns_values(raw, dst, c.words)
        src = c.src_ring()
        return _RING_MATH[c.kind](self, mont_decode(raw, _moduli(src)), src, dst)

    def op_KERNEL(self, n: Node) -> None:
        slots = {i: self.buffer_of(s) for i, s in enumerate(n.src)}
        Interpreter(self.mem, slots).evaluate([n.arg.ast])
        return None

    # -- scheduling-level value ops --------------------------------------------------------
    def scalar_value(self, n: Node) -> np.ndarray | None:
        if n.op is Op.VCONST and not n.src:
            ring, vals = n.arg
            return mont_decode(np.array(vals, dtype=I64).reshape(-1, 1), _moduli(ring))
        return super().scalar_value(n)

    def _grid(self, ring: RingSpec) -> tuple[np.ndarray, np.ndarray]:
        return np.arange(ring.limbs, dtype=I64)[:, None], np.arange(ring.N, dtype=I64)[None, :]

    def op_VCONST(self, n: Node) -> np.ndarray:
        ring, vals = n.arg
        q = _moduli(ring)
        col = mont_decode(np.array(vals, dtype=I64).reshape(-1, 1), q)
        return np.broadcast_to(col, (ring.limbs, ring.N)).copy()

    def op_REINDEX(self, n: Node) -> np.ndarray:
        x = self.v(n.src[0])
        ring = need_spec(n).ring
        idx = np.broadcast_to(KernelBody(self, self._grid(ring)).index(n.src[1]), x.shape)
        return np.take_along_axis(x, idx, axis=1)

    def op_WHERE(self, n: Node) -> np.ndarray:
        ring = need_ring(n)
        cond = KernelBody(self, self._grid(ring)).index(n.src[0])
        return np.where(cond != 0, self.v(n.src[1]), self.v(n.src[2]))


#: the reference math of each ring kernel on decoded limbs (RANDOM and TO_RNS, which read no
#: limbs, are `Interpreter.op_RING_CALL`'s)
_RING_MATH = {
    RingKernel.NTT: lambda ev, x, src, dst: ev.to_domain(x, src, Domain.NTT),
    RingKernel.INTT: lambda ev, x, src, dst: ev.to_coeff(x, src, Domain.NTT),
    RingKernel.BASIS_CONVERT: lambda ev, x, src, dst: basis_convert(x, src, dst),
    RingKernel.RESCALE: lambda ev, x, src, dst: divide_round(x, src, src.limbs - dst.limbs),
}


class KernelBody:
    """Evaluates the body of an elementwise kernel over a (limb, coefficient) grid, as the
    kernel does: residues are Montgomery-form u32 words, every op goes through `ren.alu`."""

    def __init__(self, interp: Interpreter, grid: tuple[np.ndarray, np.ndarray]):
        self.interp, self.grid = interp, grid
        self.memo: dict[Node, np.ndarray] = {}

    def index(self, n: Node) -> np.ndarray:
        return self.value(n)

    def value(self, root: Node) -> np.ndarray:
        for n in self._order(root):
            if n not in self.memo:
                self.memo[n] = self._eval(n)
        return self.memo[root]

    def _order(self, root: Node) -> list[Node]:
        """Post-order of the body, not entering storage (its words come from memory)."""
        order, seen, stack = [], set(), [(root, False)]
        while stack:
            n, ready = stack.pop()
            if ready:
                order.append(n)
                continue
            if n in seen:
                continue
            seen.add(n)
            stack.append((n, True))
            if n.op not in GroupOp.MEMORY:
                stack.extend((s, False) for s in reversed(n.src))
        return order

    def _eval(self, n: Node):
        op, m = n.op, self.memo
        if op is Op.GIDX:
            return self.grid[n.arg]
        if op is Op.ICONST:
            return np.array(n.arg, dtype=I64)
        if op in ALU_OPS:
            return alu(op, n.arg)(*(m[s] for s in n.src))
        if op in GroupOp.MEMORY:
            return self.interp.raw(n)
        if op is Op.INDEX:
            return None  # LOAD reads through it
        if op is Op.LOAD:
            storage, li, ni = n.src[0].src
            return self.interp.raw(storage)[m[li], m[ni]].astype(np.uint32)  # stored words
        raise ScheduleError(f"interpreter: {op.name} cannot appear in an elementwise kernel")


def evaluate_sink(sink: Node, memory: Memory | None = None) -> list[np.ndarray]:
    """The values (standard residues, int64) of the SINK's sources at any stage."""
    interp = Interpreter(memory)
    interp.evaluate([sink])
    return [np.asarray(interp.values[o]) for o in sink.src]


def check_pass(before: Node, after: Node, ctx=None, name: str = "pass") -> None:
    """Raise ScheduleError if the graph after a pass computes different outputs than before."""
    v0 = evaluate_sink(before)
    v1 = evaluate_sink(after)
    for i, (x, y) in enumerate(zip(v0, v1)):
        if x.shape != y.shape or not np.array_equal(x, y):
            raise ScheduleError(f"{name}: output {i} changed value (pass semantics broken)")


__all__ = ["Interpreter", "KernelBody", "Memory", "check_pass", "evaluate_sink"]
