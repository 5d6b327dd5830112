"""The ``"python"`` backend: run scheduled kernels with NumPy.

Elementwise kernels: the AST is split once, at compile time, into a *static* part (everything
that depends only on the index space: GIDX, index arithmetic, index maps, TABLE lookups, VCONST
and MODULUS columns, WHERE conditions) which is evaluated immediately into small NumPy arrays,
and a *dynamic* part (LOADs and residue arithmetic) which becomes a short list of steps; both
evaluate every op through the ALU table (`ren.alu`).  Nothing is read from a ring object: the
iteration space is the kernel's ``space`` and the moduli are the AST's MODULUS operands.
Running the kernel executes the steps over the whole (limbs × N) index space at once — no Python
loop over elements or limbs.  LOADs whose indices are the identity, or a contiguous limb offset,
read slices of the buffer; other index maps become one gather.

Ring kernels (one RING_CALL each) call the helpers of `ren.ring` (NTT/INTT, TO_RNS, fast basis
conversion, exact divide-and-round) and the samplers of `ren.sampling`, with the rings rebuilt
from the call's explicit parameters (`RING_KERNELS`, one entry per `ren.ring.RingKernel`).
All storage is Montgomery form.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ren.alu import ALU_OPS, alu
from ren.backend import Allocator, Device, GraphRunner, KernelFn
from ren.backend.malloc import tune_allocator
from ren.errors import DeviceError, RealizeError
from ren.ir import gidx
from ren.kernel import ELEMENTWISE, RingCall, ScheduledKernel
from ren.node import Node, toposort
from ren.ops import GroupOp, Op
from ren.ring import (
    RingKernel,
    divide_round_mont,
    get_tables,
    intt,
    ntt,
    reduce_words,
    ring_convert_mont,
    to_mont,
)
from ren.sampling import sample

I64 = np.int64
U32 = np.uint32


class _Compiler:
    """Compiles one elementwise kernel AST into a list of NumPy steps."""

    def __init__(self, ast: Node, space: tuple[int, int]):
        self.space = L, N = space
        self.grid = (np.arange(L, dtype=I64)[:, None], np.arange(N, dtype=I64)[None, :])
        self.static: dict[Node, np.ndarray] = {}
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
        if n.op in ALU_OPS:  # VCONST and MODULUS of the limb become (limbs × 1) columns
            return alu(n.op, n.arg)(*(v[s] for s in n.src))
        raise RealizeError(f"numpy backend: {n.op.name} is not an index expression")

    def _is_static(self, n: Node) -> bool:
        """Computable at compile time: no memory access below it."""
        if n.op in GroupOp.MEMORY or n.op in GroupOp.ACCESS or n.op is Op.STORE:
            return False
        return all(s in self.static for s in n.src)

    # -- dynamic steps ------------------------------------------------------------------------
    def _load(self, n: Node) -> Callable:
        storage, li, ni = n.src[0].src
        slot = storage.arg.index
        L, N = self.space
        rows = np.broadcast_to(self.static[li], (L, 1))[:, 0] if \
            self.static[li].shape[-1] == 1 else None
        cols = self.static[ni]
        identity_cols = cols.shape == (1, N) and np.array_equal(cols[0], self.grid[1][0])
        if rows is not None and identity_cols:
            first = int(rows[0])
            if np.array_equal(rows, np.arange(first, first + len(rows))):
                stop = first + len(rows)
                return lambda bufs: bufs[slot][first:stop]  # identity or a limb offset: a slice
            return lambda bufs: bufs[slot][rows]  # a limb table: one row gather
        if rows is not None and cols.shape == (1, N):
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
        if target.src[0].arg.index != 0 or target.src[1:] != (gidx(0), gidx(1)):
            raise RealizeError("numpy backend: elementwise kernels store to slot 0 at (GIDX0, "
                               "GIDX1)")
        for n in toposort(value):
            if n.op is Op.SLOT or n.op is Op.INDEX:
                continue
            if self._is_static(n):
                self.static[n] = self._static_value(n)
                continue
            if n.op is Op.LOAD:
                self.steps.append((n, self._load(n)))
            elif n.op in ALU_OPS:  # residue ops and WHERE over loaded values
                self.steps.append((n, alu(n.op, n.arg)))
            else:
                raise RealizeError(f"numpy backend: unexpected {n.op.name} in a kernel body")
        self.value = value

    def build(self) -> KernelFn:
        """A function running the compiled steps on the slot arrays."""
        # (fn, None): a load, called on the slot arrays; (fn, refs): an ALU op on static values
        # ("s", value) and earlier results ("r", position)
        steps: list[tuple[Callable, tuple[tuple[str, Any], ...] | None]] = []
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
def _ntt(call: RingCall) -> KernelFn:
    ring = call.src_ring()
    fn = ntt if call.kind is RingKernel.NTT else intt

    def run_transform(bufs: Sequence[np.ndarray]) -> None:
        fn(np.ascontiguousarray(bufs[1]), ring, out=bufs[0])

    return run_transform


def _to_rns(call: RingCall) -> KernelFn:
    ring = call.dst_ring()
    tables = get_tables(ring)

    def run_to_rns(bufs: Sequence[np.ndarray]) -> None:
        bufs[0][...] = to_mont(reduce_words(bufs[1], ring), tables)

    return run_to_rns


def _basis_convert(call: RingCall) -> KernelFn:
    src, dst = call.src_ring(), call.dst_ring()

    def run_convert(bufs: Sequence[np.ndarray]) -> None:
        bufs[0][...] = ring_convert_mont(bufs[1], src, dst)

    return run_convert


def _rescale(call: RingCall) -> KernelFn:
    call.check_rescale("numpy backend", takes_zero_rows=NumpyDevice.rescale_zero_rows)
    ring, k = call.src_ring(), len(call.dropped)

    def run_rescale(bufs: Sequence[np.ndarray]) -> None:
        # a call with rows of 0 (`RingCall.zero_rows`) gets them back above its input's rows:
        # only where a test turns the capability on (`NumpyDevice.rescale_zero_rows`)
        bufs[0][...] = divide_round_mont(call.full_input(np.asarray(bufs[1])), ring, k)

    return run_rescale


def _random(call: RingCall) -> KernelFn:
    ring, spec = call.dst_ring(), call.need_random()
    tables = get_tables(ring)

    def run_random(bufs: Sequence[np.ndarray]) -> None:
        bufs[0][...] = to_mont(sample(spec, ring), tables)

    return run_random


#: one implementation per ring kernel (tests check that every RingKernel has one)
RING_KERNELS: dict[RingKernel, Callable[[RingCall], KernelFn]] = {
    RingKernel.NTT: _ntt,
    RingKernel.INTT: _ntt,
    RingKernel.TO_RNS: _to_rns,
    RingKernel.BASIS_CONVERT: _basis_convert,
    RingKernel.RESCALE: _rescale,
    RingKernel.RANDOM: _random,
}


def compile_kernel(item: ScheduledKernel) -> KernelFn:
    """Compile one scheduled kernel for the NumPy backend."""
    if item.kind == ELEMENTWISE:
        return _Compiler(*item.body()).build()
    call = item.ring_call
    if call is None:
        raise RealizeError(f"numpy backend: cannot compile a {item.kind} kernel ({item.name})")
    return RING_KERNELS[call.kind](call)


# -- device ------------------------------------------------------------------------------------
#: where host arrays start: on a cache line, so a row's 512-bit loads and stores never straddle
#: two lines.  NumPy starts a large array 16 bytes past a line (its mmap'd block's header), which
#: made every AVX-512 access of the compiled NTT a split one: 20 % of its time at N = 2^16
#: (benchmarks/README.md, bench_ntt.py, stop 36).
HOST_ALIGN = 64


def host_empty(shape: int | tuple[int, ...]) -> np.ndarray:
    """An uninitialized uint32 array of `shape` whose data start on a HOST_ALIGN boundary (a
    view into a slightly larger block; `host_aligned` finds it again in that block)."""
    # (math.prod, not np.prod: np.prod makes an array of the shape first, ~30 us when its code
    # is cold, and an eager op makes a few outputs per run)
    n = math.prod(shape) if isinstance(shape, tuple | list) else int(shape)
    block = np.empty(n + HOST_ALIGN // 4, dtype=U32)  # room for any start within a line
    view = host_aligned(block, n)
    assert view is not None  # HOST_ALIGN // 4 spare words always leave n after the boundary
    return view.reshape(shape)


def host_aligned(block: np.ndarray, n: int) -> np.ndarray | None:
    """The first n words of 1-D uint32 `block` from its first HOST_ALIGN boundary, or None when
    fewer than n words follow that boundary."""
    start = (-block.ctypes.data % HOST_ALIGN) // 4
    return block[start:start + n] if block.size - start >= n else None


class HostAllocator(Allocator):
    """Host memory: backend arrays are C-contiguous (rows × cols) uint32 NumPy arrays, each
    starting on a cache line (`host_empty`).

    It keeps the largest arena handed back (`recycle`) for the next `arena` call that fits in it:
    a fresh arena is fresh pages, which the kernels fault in (and the kernel zeroes) on first
    touch — about 0.5 s of system time per run of a 435 MB arena (N = 2^14 bootstrapping)."""

    def __init__(self) -> None:
        self._spare: np.ndarray | None = None
        self._lock = threading.Lock()

    def alloc(self, shape: tuple[int, int]) -> np.ndarray:
        return host_empty(shape)

    def arena(self, nwords: int) -> np.ndarray:
        n = max(int(nwords), 1)
        with self._lock:
            spare = self._spare
            fit = None if spare is None else host_aligned(spare, n)
            if fit is not None:
                self._spare = None
                return fit
        return host_empty(n)

    def recycle(self, arena: np.ndarray) -> None:
        owner = arena if arena.base is None else arena.base
        if not isinstance(owner, np.ndarray) or owner.dtype != U32 or owner.ndim != 1:
            return  # not one of this allocator's arenas
        with self._lock:
            if self._spare is None or owner.size > self._spare.size:
                self._spare = owner

    def can_adopt(self, data: Any, shape: tuple[int, int]) -> bool:
        """An array of this allocator's own kind: C-contiguous uint32 of `shape` starting on a
        HOST_ALIGN boundary (what the cpu device's samplers return: `host_empty`)."""
        return (isinstance(data, np.ndarray) and data.dtype == U32 and data.shape == shape
                and data.flags.c_contiguous and data.flags.writeable
                and data.ctypes.data % HOST_ALIGN == 0)

    def spare_bytes(self) -> int:
        """Bytes of the arena kept for reuse (0: none)."""
        spare = self._spare
        return 0 if spare is None else spare.nbytes

    def drop_spare(self) -> None:
        """Free the arena kept for reuse."""
        with self._lock:
            self._spare = None

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


class PreboundCalls(GraphRunner):
    """The NumPy graph runner: every kernel call with its argument list built once; a run only
    patches the per-run arrays into their slots and calls the kernels in a tight loop (no
    allocation checks, buffer lookups or per-unit bookkeeping).  Not reentrant: callers hold a
    lock per runner."""

    kind = "numpy-prebound"

    def __init__(self, calls: Sequence[tuple[KernelFn, list[Any]]],
                 patches: Sequence[tuple[int, int, int]]):
        self.calls = [(fn, list(args)) for fn, args in calls]
        self.patches = [(self.calls[c][1], slot, i) for c, slot, i in patches]

    def _patch(self, arrays: Sequence[Any]) -> None:
        for args, slot, i in self.patches:
            args[slot] = arrays[i]

    def _unpatch(self) -> None:  # keep no reference to a run's inputs or outputs
        for args, slot, _ in self.patches:
            args[slot] = None

    def __call__(self, arrays: Sequence[Any]) -> None:
        self._patch(arrays)
        try:
            for fn, args in self.calls:
                fn(args)
        finally:
            self._unpatch()

    def profile(self, arrays: Sequence[Any]) -> list[float]:
        self._patch(arrays)
        times = []
        try:
            for fn, args in self.calls:
                t0 = time.perf_counter()
                fn(args)
                times.append(time.perf_counter() - t0)
        finally:
            self._unpatch()
        return times


class NumpyDevice(Device):
    """The ``"python"`` device: host memory, kernels run by NumPy."""

    #: Off: NumPy gains nothing from rows of 0 (`_rescale` rebuilds the whole input), and the
    #: python device's plans (and golden snapshots) keep the stored CONCAT.  Its kernel runs
    #: such calls where a test turns this on (the zero-rows form checked without a compiler).
    rescale_zero_rows = False

    def build(self, item: ScheduledKernel) -> KernelFn:
        return compile_kernel(item)

    def graph(self, calls: Sequence[tuple[KernelFn, list[Any]]],
              patches: Sequence[tuple[int, int, int]]) -> PreboundCalls:
        return PreboundCalls(calls, patches)


def open_device(name: str) -> NumpyDevice:
    tune_allocator()  # NumPy's temporaries: reused, not page-faulted each replay
    return NumpyDevice(name, HOST)
