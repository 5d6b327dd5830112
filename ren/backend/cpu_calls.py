"""The "cpu" device's kernel calls: compiled entry points with their argument vectors.

A `CpuCall` is one entry point of a loaded library (an elementwise kernel's uniform
``ren_cpu_<name>(void**)`` or a ring-library function) with its slot arrays, given per call,
followed by constant arrays (sizes and tables) it keeps alive; `library_call` builds the call of
a ring kernel (NTT/INTT, basis conversion, rescale, TO_RNS) from its `RingCall`'s tables.
`ren.backend.cpu` (the device) owns the libraries; this module only addresses into them.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import numpy as np

from ren.backend.cpu_cache import cache_dir
from ren.errors import DeviceError, KernelCompileError
from ren.kernel import RingCall
from ren.ring import RingKernel

#: a compiled entry point: void f(void** args)
ENTRY = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p))
VOIDP = ctypes.c_void_p


def address(lib: ctypes.CDLL, name: str) -> int:
    try:
        fn = lib[name]  # not getattr: that caches fn in lib, a cycle that delays its closing
    except AttributeError:
        raise KernelCompileError(f"the compiled library {lib._name} has no entry point {name}; "
                                 f"remove it (or the folder {cache_dir()}) and run again") from None
    address = ctypes.cast(fn, VOIDP).value
    assert address is not None  # a symbol the library has is at a non-NULL address
    return address



def pointer(arr: np.ndarray) -> int:
    if not arr.flags.c_contiguous:
        raise DeviceError("cpu: a kernel argument is not a contiguous array")
    return arr.ctypes.data


class CpuCall:
    """A KernelFn: one compiled entry point, its `nslots` slot arrays (given per call) followed
    by constant arrays (`extra`: sizes and tables, kept alive here).  `owner`: the library the
    entry point lives in, kept loaded while this call lives; `keep`: what the tables point into
    (the twiddle rows behind an array of row pointers), kept alive while this call lives."""

    __slots__ = ("_extra_ptrs", "address", "extra", "fn", "keep", "name", "nslots", "owner")

    def __init__(self, name: str, address: int, nslots: int, extra: Sequence[np.ndarray] = (),
                 owner: ctypes.CDLL | None = None, keep: Any = None):
        self.name = name
        self.owner = owner
        self.keep = keep
        self.address = address
        self.fn = ENTRY(address)
        self.nslots = nslots
        self.extra = [np.ascontiguousarray(a) for a in extra]
        self._extra_ptrs = [a.ctypes.data for a in self.extra]

    def argv(self, bufs: Sequence[Any]) -> ctypes.Array:
        """The argument vector of a call on `bufs` (None slots stay null: patched later)."""
        ptrs = [None if b is None else pointer(b) for b in bufs[: self.nslots]]
        return (VOIDP * (self.nslots + len(self.extra)))(*ptrs, *self._extra_ptrs)

    def __call__(self, bufs: Sequence[Any]) -> None:
        self.fn(self.argv(bufs))

    def __repr__(self) -> str:
        return f"<CpuCall {self.name}>"


class RingInput:
    """Wraps a ring-kernel CpuCall whose input may be a strided view: copies it first."""

    def __init__(self, call: CpuCall):
        self.call = call

    def __call__(self, bufs: Sequence[Any]) -> None:
        src = bufs[1]
        if not src.flags.c_contiguous:
            bufs = [bufs[0], np.ascontiguousarray(src), *bufs[2:]]
        self.call(bufs)


def sizes(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def row_pointers(rows: Sequence[np.ndarray]) -> np.ndarray:
    """The addresses of `rows` (C-contiguous arrays the caller keeps alive), as a C array of
    pointers."""
    return np.array([pointer(r) for r in rows], dtype=np.uintp)


def library_call(call: RingCall, lib: ctypes.CDLL, takes_zero_rows: bool = True
                 ) -> CpuCall | None:
    """The CpuCall of a ring call in the ring library `lib` (`cpu.ring_library`), or None for
    the kinds run as rendered programs (RANDOM).  `takes_zero_rows`: whether the device asking
    runs a RESCALE's rows of 0 without their buffer (`cpu.library_call` passes the one fact,
    `CpuDevice.rescale_zero_rows`); a call with rows of 0 is refused where it does not.  The
    kernel itself always can (``ren_cpu_rescale`` reads rows zero_rows.. of its source and takes
    the first ones as 0), so a direct call (the kernel's own tests) may leave it out."""
    N = call.n
    kind = call.kind
    if kind in (RingKernel.NTT, RingKernel.INTT):
        # a pointer per limb to its modulus' own twiddle row (shared by every call over that
        # prime) rather than a stacked (L, N) copy per limb set: a bootstrapping's ~120
        # distinct limb sets stacked ~90 MB of copies of 66 rows
        t = call.tables(twiddles=False)
        rows, companions = call.twiddle_rows()
        extra = [sizes(N, len(call.dst)), t["q"], row_pointers(rows), row_pointers(companions)]
        keep = (rows, companions)
        if kind is RingKernel.NTT:
            return CpuCall("ntt", address(lib, "ren_cpu_ntt"), 2, extra, lib, keep)
        return CpuCall("intt", address(lib, "ren_cpu_intt"), 2,
                       [*extra, t["n_inv"], t["n_inv_shoup"]], lib, keep)
    t = call.tables()
    if kind is RingKernel.BASIS_CONVERT:
        extra = [sizes(N, len(call.src), len(call.dst)), t["src_q"], t["src_qneg"],
                 t["qhat_inv"], t["q"], t["qneg"], t["bconv"], t["copy_from"]]
        return CpuCall("basis_convert", address(lib, "ren_cpu_bconv"), 2, extra, lib)
    if kind is RingKernel.RESCALE:
        call.check_rescale("cpu backend", takes_zero_rows=takes_zero_rows)
        LS, K = len(call.src), len(call.dropped)
        # the kernel reads rows zero_rows.. of the source from slot 1 and takes the others as 0
        extra = [sizes(N, LS, K, call.zero_rows), t["src_q"], t["src_qneg"], t["src_r2"], t["half"],
                 t["p_inv"], t["lift"], t["p_all_inv"]]
        return CpuCall("rescale", address(lib, "ren_cpu_rescale"), 2, extra, lib)
    if kind is RingKernel.TO_RNS:  # cpu_ring_to_rns.c
        extra = [sizes(N, len(call.dst), call.words), t["q"]]
        return CpuCall("to_rns", address(lib, "ren_cpu_to_rns"), 2, extra, lib)
    return None


__all__ = ["ENTRY", "VOIDP", "CpuCall", "RingInput", "address",
           "library_call", "pointer", "row_pointers", "sizes"]
