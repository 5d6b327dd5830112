"""The ``"python"`` backend: run scheduled kernels with NumPy.

Elementwise kernels: the AST is split once, at compile time, into a *static* part (everything
that depends only on the index space: GIDX, index arithmetic, index maps, TABLE lookups, VCONST
columns, WHERE conditions) which is evaluated immediately into small NumPy arrays, and a
*dynamic* part (LOADs and residue arithmetic) which becomes a short list of steps.  Running the
kernel executes the steps over the whole (limbs × N) index space at once — no Python loop over
elements or limbs.  LOADs whose indices are the identity, or a contiguous limb offset, read
slices of the buffer; other index maps become one gather.

Ring kernels call the helpers of `ren.ring` (NTT/INTT, TO_RNS, fast basis conversion, exact
divide-and-round) and the samplers of `ren.sampling`.  All storage is Montgomery form.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ren.alu import ALU_OPS, alu
from ren.backend import Allocator, Device, KernelFn
from ren.errors import DeviceError, RealizeError
from ren.kernel import ScheduledKernel
from ren.node import Node, toposort
from ren.ops import Op
from ren.ring import (
    RingSpec,
    divide_round_mont,
    get_tables,
    intt,
    mod_add,
    mod_neg,
    mod_sub,
    mont_mul_raw,
    ntt,
    reduce_words,
    ring_convert_mont,
    to_mont,
)
from ren.sampling import sample
from ren.spec import spec_of

I64 = np.int64
U32 = np.uint32


class _Compiler:
    """Compiles one elementwise kernel AST into a list of NumPy steps."""

    def __init__(self, ast: Node, ring: RingSpec):
        self.ring = ring
        t = get_tables(ring)
        self.q32, self.q64, self.qneg = t.q32, t.q64, t.qneg
        L, N = ring.limbs, ring.N
        self.grid = (np.arange(L, dtype=I64)[:, None], np.arange(N, dtype=I64)[None, :])
        self.static: dict[Node, np.ndarray] = {}
        self.slot_of: dict[Node, int] = {}
        self.steps: list[tuple[Node, Callable]] = []
        self.ast = ast
        self._compile()

    # -- static (index-only) values ------------------------------------------------------------
    def _static_value(self, n: Node) -> np.ndarray:
        v = self.static
        if n.op is Op.GIDX:
            return self.grid[n.arg]
        if n.op is Op.ICONST:
            return np.array(n.arg, dtype=I64)
        if n.op is Op.VCONST:  # per-limb Montgomery values, as a (limbs × 1) column
            return alu(Op.VCONST, n.arg[1])(v[n.src[0]])
        if n.op in ALU_OPS:
            return alu(n.op, n.arg)(*(v[s] for s in n.src))
        raise RealizeError(f"numpy backend: {n.op.name} is not an index expression")

    def _is_static(self, n: Node) -> bool:
        if n.op in (Op.SLOT, Op.LOAD, Op.INDEX, Op.STORE):
            return False
        if n.op is Op.WHERE:
            return all(s in self.static for s in n.src)
        if n.op in (Op.MODADD, Op.MODSUB, Op.MODNEG, Op.MONTMUL):
            return False
        return all(s in self.static for s in n.src)

    # -- dynamic steps ------------------------------------------------------------------------
    def _load(self, n: Node) -> Callable:
        storage, li, ni = n.src[0].src
        slot = storage.arg
        rows = np.broadcast_to(self.static[li], (self.ring.limbs, 1))[:, 0] if \
            self.static[li].shape[-1] == 1 else None
        cols = self.static[ni]
        identity_cols = cols.shape == (1, self.ring.N) and np.array_equal(cols[0],
                                                                          self.grid[1][0])
        if rows is not None and identity_cols:
            first = int(rows[0])
            if np.array_equal(rows, np.arange(first, first + len(rows))):
                stop = first + len(rows)
                return lambda bufs: bufs[slot][first:stop]  # identity or a limb offset: a slice
            return lambda bufs: bufs[slot][rows]  # a limb table: one row gather
        if rows is not None and cols.shape == (1, self.ring.N):
            col = cols[0]
            first = int(rows[0])
            if np.array_equal(rows, np.arange(first, first + len(rows))):
                stop = first + len(rows)
                return lambda bufs: bufs[slot][first:stop, col]  # an index map on coefficients
            return lambda bufs: bufs[slot][rows][:, col]
        li_full, ni_full = np.broadcast_arrays(self.static[li], cols)
        return lambda bufs: bufs[slot][li_full, ni_full]  # general gather

    def _compile(self) -> None:
        store = self.ast
        if store.op is not Op.STORE or store.src[0].op is not Op.INDEX:
            raise RealizeError("numpy backend: an elementwise kernel must be STORE(INDEX(...))")
        target, value = store.src
        if target.src[0].arg != 0 or target.src[1] is not self._gidx(0) or \
                target.src[2] is not self._gidx(1):
            raise RealizeError("numpy backend: elementwise kernels store to slot 0 at (GIDX0, "
                               "GIDX1)")
        q32, q64, qneg = self.q32, self.q64, self.qneg
        for n in toposort(value):
            if n.op is Op.SLOT or n.op is Op.INDEX:
                continue
            if self._is_static(n):
                self.static[n] = self._static_value(n)
                continue
            if n.op is Op.LOAD:
                self.steps.append((n, self._load(n)))
            elif n.op is Op.MODADD:
                self.steps.append((n, lambda a, b: mod_add(a, b, q32)))
            elif n.op is Op.MODSUB:
                self.steps.append((n, lambda a, b: mod_sub(a, b, q32)))
            elif n.op is Op.MODNEG:
                self.steps.append((n, lambda a: mod_neg(a, q32)))
            elif n.op is Op.MONTMUL:
                self.steps.append((n, lambda a, b: mont_mul_raw(a, b, q32, q64, qneg)))
            elif n.op is Op.WHERE:
                self.steps.append((n, lambda c, a, b: np.where(c, a, b)))
            else:
                raise RealizeError(f"numpy backend: unexpected {n.op.name} in a kernel body")
        self.value = value

    @staticmethod
    def _gidx(axis: int) -> Node:
        from ren.ir import gidx

        return gidx(axis)

    def build(self) -> KernelFn:
        """A function running the compiled steps on the slot arrays."""
        steps = []
        position: dict[Node, int] = {}
        for n, fn in self.steps:
            if n.op is Op.LOAD:
                steps.append((fn, None))
            else:
                refs = tuple(("s", self.static[s]) if s in self.static else ("r", position[s])
                             for s in n.src)
                steps.append((fn, refs))
            position[n] = len(steps) - 1
        if self.value in self.static:  # a constant store (e.g. a materialized constant)
            const = self.static[self.value]

            def run_const(bufs: Sequence[np.ndarray]) -> None:
                bufs[0][...] = const

            return run_const
        result = position[self.value]

        def run(bufs: Sequence[np.ndarray]) -> None:
            vals: list[np.ndarray] = []
            for fn, refs in steps:
                if refs is None:
                    vals.append(fn(bufs))
                else:
                    vals.append(fn(*(r if k == "s" else vals[r] for k, r in refs)))
            bufs[0][...] = vals[result]

        return run


# -- ring kernels ----------------------------------------------------------------------------
def _compile_ring(item: ScheduledKernel) -> KernelFn:
    op, _ = item.ast.src[1], None
    kind = item.kind
    if kind in ("ntt", "intt"):
        ring = spec_of(op.src[0]).ring
        fn = ntt if kind == "ntt" else intt

        def run_transform(bufs: Sequence[np.ndarray]) -> None:
            fn(np.ascontiguousarray(bufs[1]), ring, out=bufs[0])

        return run_transform
    if kind == "to_rns":
        ring = op.arg[0]
        tables = get_tables(ring)

        def run_to_rns(bufs: Sequence[np.ndarray]) -> None:
            bufs[0][...] = to_mont(reduce_words(bufs[1], ring), tables)

        return run_to_rns
    if kind == "basis_convert":
        src, dst = spec_of(op.src[0]).ring, op.arg

        def run_convert(bufs: Sequence[np.ndarray]) -> None:
            bufs[0][...] = ring_convert_mont(bufs[1], src, dst)

        return run_convert
    if kind == "rescale":
        ring, k = spec_of(op.src[0]).ring, len(op.arg)

        def run_rescale(bufs: Sequence[np.ndarray]) -> None:
            bufs[0][...] = divide_round_mont(bufs[1], ring, k)

        return run_rescale
    if kind == "random":
        ring = op.arg[0]
        spec = op.src[0].arg
        tables = get_tables(ring)

        def run_random(bufs: Sequence[np.ndarray]) -> None:
            bufs[0][...] = to_mont(sample(spec, ring), tables)

        return run_random
    raise RealizeError(f"numpy backend: unknown kernel kind {kind!r}")


def compile_kernel(item: ScheduledKernel) -> KernelFn:
    """Compile one scheduled kernel for the NumPy backend."""
    if item.kind == "elementwise":
        return _Compiler(item.ast, item.ring).build()
    return _compile_ring(item)


# -- device ------------------------------------------------------------------------------------
class HostAllocator(Allocator):
    """Host memory: backend arrays are C-contiguous (rows × cols) uint32 NumPy arrays."""

    def alloc(self, shape: tuple[int, int]) -> np.ndarray:
        return np.empty(shape, dtype=U32)

    def arena(self, nwords: int) -> np.ndarray:
        return np.empty(max(int(nwords), 1), dtype=U32)

    def view(self, base: np.ndarray, offset: int, shape: tuple[int, int]) -> np.ndarray:
        size = shape[0] * shape[1]
        flat = base.reshape(-1)
        if offset < 0 or offset + size > flat.size:
            raise DeviceError(f"a {shape[0]}x{shape[1]} view at offset {offset} does not fit "
                              f"in storage of {flat.size} words")
        return flat[offset : offset + size].reshape(shape)

    def adopt(self, data: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
        if not isinstance(data, np.ndarray) or data.dtype != U32 or \
                data.size != shape[0] * shape[1]:
            what = f"{data.dtype}[{data.size}]" if isinstance(data, np.ndarray) else \
                type(data).__name__
            raise DeviceError(f"storage {what} does not fit a {shape[0]}x{shape[1]} u32 buffer; "
                              "give a uint32 NumPy array of that many elements")
        return data.reshape(shape)

    def copyin(self, dst: np.ndarray, host: np.ndarray) -> None:
        np.copyto(dst, host)

    def copyout(self, src: np.ndarray) -> np.ndarray:
        return np.array(src, dtype=U32, copy=True)

    def transfer(self, dst: np.ndarray, src: np.ndarray) -> None:
        np.copyto(dst, src)


#: every host device ("python", "python:1", …) shares this allocator: copies between them are
#: plain array copies
HOST = HostAllocator()


class NumpyDevice(Device):
    """The ``"python"`` device: host memory, kernels run by NumPy."""

    def build(self, item: ScheduledKernel) -> KernelFn:
        return compile_kernel(item)


def open_device(name: str) -> NumpyDevice:
    return NumpyDevice(name, HOST)
