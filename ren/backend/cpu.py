"""The ``"cpu"`` backend: kernels compiled to native code by the system C compiler.

* Elementwise kernels are rendered by the C-family renderer in its plain `C` dialect
  (`ren.backend.render_c`: one loop nest, limbs outside, coefficients inside) and compiled with
  ``cc -O3 -march=native`` (plus ``-fopenmp`` when the compiler has it) into one shared library
  per batch: `CpuDevice.prepare` compiles every kernel of a schedule in one compiler run.
* Ring kernels are the compiled library `cpu_ring.c` (NTT/INTT with Harvey's lazy butterflies
  and Shoup twiddles — AVX2 when the machine has it —, fast basis conversion, exact rescale),
  fed the call's tables from `ren.ring.kernel_tables`.  TO_RNS and RANDOM, which run at encoding
  and key generation only, are `ren.backend.ring_c`'s programs in the same C dialect (RANDOM
  expands its seed on the host, so it is bit-identical to the NumPy device by construction).
* Libraries are cached on disk by a hash of their source, flags and compiler (`cache_dir()`:
  ``$REN_CACHE_DIR/cpu``, else ``~/.cache/ren/cpu``), so a second process compiles nothing.
* Every compiled entry point has one signature, ``void f(void** args)``; a `CpuCall` is the
  KernelFn binding one of them to its tables.  `CpuDevice.graph` (the JIT's hook) turns a captured
  call list into `CompiledPlan`: a C array of entry points and argument vectors run by one C loop
  (``ren_run_plan``), with only the per-run arrays patched in from Python.
* Threads: ``REN_CPU_THREADS`` (default 1) splits limbs over OpenMP threads when the compiler
  supports OpenMP.

Memory is the host allocator of the NumPy device, so copies between ``"python"`` and ``"cpu"``
are plain array copies.  Without a C compiler, opening ``"cpu"`` raises a `DeviceError` that
says so; ``"python"`` keeps working.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from ren import settings
from ren.backend import Device, GraphRunner, KernelFn
from ren.backend.c_host import (
    HostRunner,
    compile_host,
    compile_source,
    find_cc,
    host_function,
)
from ren.backend.numpy_backend import HOST
from ren.backend.render_c import C, CKernel, Program, render_program
from ren.errors import DeviceError, RealizeError
from ren.kernel import RingCall, ScheduledKernel
from ren.ring import RingKernel

#: flags of every compiled library (-fopenmp is added when the compiler supports it)
CPU_FLAGS = ("-O3", "-march=native", "-std=gnu11", "-shared", "-fPIC", "-Wall",
             "-Werror=implicit-function-declaration", "-Wno-unused-function",
             "-Wno-unused-variable", "-Wno-unused-but-set-variable")

#: a compiled entry point: void f(void** args)
_ENTRY = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p))
_VOIDP = ctypes.c_void_p

#: prepended to every kernel library: the thread count and the OpenMP loop over limbs
_HEADER = r"""/* Ren elementwise kernels for the "cpu" device */
static int ren_threads = 1;
void ren_set_threads(int n) { ren_threads = n < 1 ? 1 : n; }
#ifdef _OPENMP
#define REN_PARALLEL_LIMBS \
  _Pragma("omp parallel for schedule(static) num_threads(ren_threads) if(ren_threads > 1)")
#endif
"""


def cache_dir() -> str:
    """Where compiled libraries are kept between processes."""
    root = os.environ.get("REN_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ren")
    return os.path.join(root, "cpu")


def _builds(cc: str, flags: Sequence[str], source: str) -> bool:
    """Whether `cc` builds a shared library from `source` with `flags`."""
    with tempfile.TemporaryDirectory(prefix="ren-cc-") as d:
        src = os.path.join(d, "t.c")
        with open(src, "w") as f:
            f.write(source)
        res = subprocess.run([cc, *flags, "-o", src + ".so", src], capture_output=True)
        return res.returncode == 0


@cache
def cpu_flags() -> tuple[str, ...]:
    """CPU_FLAGS, less ``-march=native`` where the compiler rejects it, plus ``-fopenmp``
    where it builds OpenMP code (e.g. clang without libomp does not)."""
    cc = find_cc()
    if cc is None:
        raise DeviceError("device 'cpu' needs a C compiler (none found: set $CC or install one, "
                          "e.g. apt-get install gcc); use the 'python' device meanwhile")
    flags = CPU_FLAGS
    if not _builds(cc, flags, "int f(void) { return 1; }\n"):
        flags = tuple(f for f in flags if f != "-march=native")
    omp = "#include <omp.h>\nint f(void) { return omp_get_max_threads(); }\n"
    return flags + (("-fopenmp",) if _builds(cc, (*flags, "-fopenmp"), omp) else ())


@cache
def host_tag() -> str:
    """A comment naming the CPU, put at the top of every source: ``-march=native`` code must
    not be loaded on another kind of CPU from a shared cache folder."""
    try:
        with open("/proc/cpuinfo") as f:
            info = [ln for ln in f.read().splitlines() if ln.startswith(("model name", "flags"))]
    except OSError:
        info = []
    digest = hashlib.sha256("\n".join([platform.machine(), *info[:2]]).encode()).hexdigest()
    return f"/* host {platform.machine()} {digest[:16]} */\n"


def threads() -> int:
    return settings.get("REN_CPU_THREADS")


@cache
def ring_library() -> ctypes.CDLL:
    """The compiled ring kernels (`cpu_ring.c`)."""
    source = host_tag() + resources.files("ren.backend").joinpath("cpu_ring.c").read_text()
    return compile_source(source, cpu_flags(), cache_dir())


def _address(lib: ctypes.CDLL, name: str) -> int:
    return ctypes.cast(getattr(lib, name), _VOIDP).value


def _pointer(arr: np.ndarray) -> int:
    if not arr.flags.c_contiguous:
        raise DeviceError("cpu: a kernel argument is not a contiguous array")
    return arr.ctypes.data


class CpuCall:
    """A KernelFn: one compiled entry point, its `nslots` slot arrays (given per call) followed
    by constant arrays (`extra`: sizes and tables, kept alive here)."""

    __slots__ = ("_extra_ptrs", "address", "extra", "fn", "name", "nslots")

    def __init__(self, name: str, address: int, nslots: int, extra: Sequence[np.ndarray] = ()):
        self.name = name
        self.address = address
        self.fn = _ENTRY(address)
        self.nslots = nslots
        self.extra = [np.ascontiguousarray(a) for a in extra]
        self._extra_ptrs = [a.ctypes.data for a in self.extra]

    def argv(self, bufs: Sequence[Any]) -> ctypes.Array:
        """The argument vector of a call on `bufs` (None slots stay null: patched later)."""
        ptrs = [None if b is None else _pointer(b) for b in bufs[: self.nslots]]
        return (_VOIDP * (self.nslots + len(self.extra)))(*ptrs, *self._extra_ptrs)

    def __call__(self, bufs: Sequence[Any]) -> None:
        self.fn(self.argv(bufs))

    def __repr__(self) -> str:
        return f"<CpuCall {self.name}>"


class _RingInput:
    """Wraps a ring-kernel CpuCall whose input may be a strided view: copies it first."""

    def __init__(self, call: CpuCall):
        self.call = call

    def __call__(self, bufs: Sequence[Any]) -> None:
        src = bufs[1]
        if not src.flags.c_contiguous:
            bufs = [bufs[0], np.ascontiguousarray(src), *bufs[2:]]
        self.call(bufs)


def _sizes(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def ring_call(call: RingCall) -> CpuCall | None:
    """The library CpuCall of a ring call, or None for the kinds run as rendered programs."""
    lib = ring_library()
    t = call.tables()
    N = call.n
    kind = call.kind
    if kind is RingKernel.NTT:
        extra = [_sizes(N, len(call.dst)), t["q"], t["twiddles"], t["twiddles_shoup"]]
        return CpuCall("ntt", _address(lib, "ren_cpu_ntt"), 2, extra)
    if kind is RingKernel.INTT:
        extra = [_sizes(N, len(call.dst)), t["q"], t["inv_twiddles"], t["inv_twiddles_shoup"],
                 t["n_inv"], t["n_inv_shoup"]]
        return CpuCall("intt", _address(lib, "ren_cpu_intt"), 2, extra)
    if kind is RingKernel.BASIS_CONVERT:
        extra = [_sizes(N, len(call.src), len(call.dst)), t["src_q"], t["src_qneg"],
                 t["qhat_inv"], t["q"], t["qneg"], t["bconv"], t["copy_from"]]
        return CpuCall("basis_convert", _address(lib, "ren_cpu_bconv"), 2, extra)
    if kind is RingKernel.RESCALE:
        LS, K = len(call.src), len(call.dropped)
        if K < 1 or call.src[LS - K:] != call.dropped or call.dst != call.src[: LS - K]:
            raise RealizeError(f"cpu backend: rescale drops {call.dropped}, which are not the "
                               f"trailing moduli of {call.src} leaving {call.dst}")
        extra = [_sizes(N, LS, K), t["src_q"], t["src_qneg"], t["src_r2"], t["half"],
                 t["p_inv"]]
        return CpuCall("rescale", _address(lib, "ren_cpu_rescale"), 2, extra)
    return None


def _wrapper(k: CKernel) -> str:
    """``void ren_cpu_<name>(void** a)``: the uniform entry point of an elementwise kernel."""
    args = ", ".join(f"({p.ctype})a[{i}]" for i, p in enumerate(k.params))
    return f"void ren_cpu_{k.name}(void** a) {{ {k.name}({args}); }}\n"


class CompiledPlan(GraphRunner):
    """The ``"cpu"`` graph runner: consecutive compiled calls run as one C loop
    (``ren_run_plan`` over arrays of entry points and argument vectors built once); a call that
    is not a compiled entry point (a host copy, RANDOM's host expansion) runs from Python between
    two such loops.  A run patches the per-run arrays into the argument vectors and clears them
    afterwards.  Not reentrant: callers hold a lock per runner."""

    kind = "cpu-compiled"

    def __init__(self, calls: Sequence[tuple[KernelFn, list[Any]]],
                 patches: Sequence[tuple[int, int, int]]):
        run_plan = ring_library().ren_run_plan
        run_plan.argtypes = [ctypes.c_longlong, ctypes.c_void_p, ctypes.c_void_p]
        run_plan.restype = None
        self._run_plan = run_plan
        self._keep = [args for _, args in calls]  # the static arrays stay alive with the plan
        self.segments: list[tuple] = []  # ("c", count, fns, argvs, vectors) | ("py", fn, args)
        where: list[tuple[Any, int]] = []  # per call: (argument vector or list, segment)
        run: list[tuple[CpuCall, list[Any]]] = []

        def flush() -> None:
            if not run:
                return
            vectors = [fn.argv(args) for fn, args in run]
            fns = (_VOIDP * len(run))(*(fn.address for fn, _ in run))
            argvs = (_VOIDP * len(run))(*(ctypes.addressof(v) for v in vectors))
            for v in vectors:
                where.append((v, len(self.segments)))
            self.segments.append(("c", len(run), fns, argvs, vectors))
            run.clear()

        for fn, args in calls:
            if isinstance(fn, CpuCall):
                run.append((fn, list(args)))
            else:
                flush()
                args = list(args)
                where.append((args, len(self.segments)))
                self.segments.append(("py", fn, args))
        flush()
        self.patches = [(where[c][0], slot, i, isinstance(where[c][0], list))
                        for c, slot, i in patches]
        self.calls = len(calls)

    def _patch(self, arrays: Sequence[Any]) -> None:
        for target, slot, i, is_list in self.patches:
            target[slot] = arrays[i] if is_list else _pointer(arrays[i])

    def _unpatch(self) -> None:
        for target, slot, _, _ in self.patches:
            target[slot] = None

    def __call__(self, arrays: Sequence[Any]) -> None:
        self._patch(arrays)
        try:
            for seg in self.segments:
                if seg[0] == "c":
                    self._run_plan(seg[1], seg[2], seg[3])
                else:
                    seg[1](seg[2])
        finally:
            self._unpatch()

    def profile(self, arrays: Sequence[Any]) -> list[float]:
        self._patch(arrays)
        times: list[float] = []
        try:
            for seg in self.segments:
                if seg[0] == "c":
                    base_f, base_a = ctypes.addressof(seg[2]), ctypes.addressof(seg[3])
                    step = ctypes.sizeof(_VOIDP)
                    for k in range(seg[1]):
                        t0 = time.perf_counter()
                        self._run_plan(1, base_f + k * step, base_a + k * step)
                        times.append(time.perf_counter() - t0)
                else:
                    t0 = time.perf_counter()
                    seg[1](seg[2])
                    times.append(time.perf_counter() - t0)
        finally:
            self._unpatch()
        return times


class CpuDevice(Device):
    """The ``"cpu"`` device: host memory, kernels compiled to native code (module docstring)."""

    def __init__(self, name: str):
        super().__init__(name, HOST)
        self.flags = cpu_flags()
        self.entries: dict[str, int] = {}  # elementwise kernel name -> entry point address
        self.hosted: dict[str, Any] = {}  # ring_c kernel name -> host wrapper (TO_RNS, RANDOM)
        self.compiler_runs = 0
        self._libs: list[ctypes.CDLL] = []  # keep loaded libraries alive
        self._build_lock = threading.Lock()
        ring_library().ren_set_threads(threads())

    def set_threads(self, n: int) -> None:
        """Use `n` OpenMP threads in the library kernels from now on (1: none)."""
        ring_library().ren_set_threads(int(n))
        for lib in self._libs:
            lib.ren_set_threads(int(n))

    def _program(self, item: ScheduledKernel) -> Program | None:
        """The rendered program of an item this device compiles from source (elementwise,
        TO_RNS, RANDOM), or None for library ring kernels."""
        call = item.ring_call
        if call is not None and call.kind not in (RingKernel.TO_RNS, RingKernel.RANDOM):
            return None
        return render_program(item, C)

    def prepare(self, items: Sequence[ScheduledKernel]) -> int:
        """Compile every kernel of `items` not compiled yet in one compiler run; returns how
        many kernels were compiled."""
        programs = []
        for item in items:
            if item.kind in ("copy", "view") or self.is_cached(item):
                continue
            p = self._program(item)
            if p is not None:
                programs.append(p)
        return self._load(programs)

    def _load(self, programs: list[Program]) -> int:
        with self._build_lock:
            known = self.entries.keys() | self.hosted.keys()
            fresh: dict[str, CKernel] = {}
            for p in programs:
                for k in p.kernels:
                    if k.name not in known:
                        fresh[k.name] = k
            if not fresh:
                return 0
            todo = [p for p in programs if any(k.name in fresh for k in p.kernels)]
            elementwise = [k for k in fresh.values() if k.name.startswith("ren_ew_")]
            extra = "\n" + "".join(_wrapper(k) for k in elementwise)
            lib = compile_host(todo, C, self.flags, cache_dir(), extra=extra,
                               header=host_tag() + _HEADER)
            lib.ren_set_threads(threads())
            self._libs.append(lib)
            self.compiler_runs += 1
            for name in fresh:
                if name.startswith("ren_ew_"):
                    self.entries[name] = _address(lib, f"ren_cpu_{name}")
                else:
                    self.hosted[name] = host_function(lib, name)
            return len(fresh)

    def build(self, item: ScheduledKernel) -> KernelFn:
        call = item.ring_call
        if call is not None:
            fn = ring_call(call)
            if fn is not None:
                return _RingInput(fn)
        program = self._program(item)
        if program is None:  # pragma: no cover - every ring kind is handled above
            raise RealizeError(f"cpu backend: cannot compile {item.name}")
        self._load([program])
        if item.kind == "elementwise":
            (kernel,) = program.kernels
            return CpuCall(kernel.name, self.entries[kernel.name], len(kernel.params))
        return HostRunner(program, self.hosted)

    def graph(self, calls: Sequence[tuple[KernelFn, list[Any]]],
              patches: Sequence[tuple[int, int, int]]) -> CompiledPlan:
        unwrapped = [(fn.call if isinstance(fn, _RingInput) else fn, args) for fn, args in calls]
        return CompiledPlan(unwrapped, patches)


def open_device(name: str) -> CpuDevice:
    return CpuDevice(name)


__all__ = ["CPU_FLAGS", "CompiledPlan", "CpuCall", "CpuDevice", "cache_dir", "cpu_flags",
           "open_device", "ring_library"]
