"""The ``"cpu"`` backend: kernels compiled to native code by the system C compiler.

* Elementwise kernels are rendered by the C-family renderer in its plain `C` dialect
  (`ren.backend.render_c`: one loop nest, limbs outside, coefficients inside) and compiled with
  ``cc -O1 -ftree-vectorize -march=native``, the rendered ring programs (RANDOM) with ``-O2``
  (`cpu_build.kernel_flags` per `cpu_build.kernel_kind`; the ring library keeps ``-O3``) plus
  the vector path's flags (and ``-fopenmp`` when the compiler has it) into shared libraries:
  `CpuDevice.prepare` compiles every kernel of a schedule in one compiler run per kind (or
  several per kind, one per core: `_split`), all side by side.
* Ring kernels are the compiled library `cpu_ring.c` (NTT/INTT with Harvey's lazy butterflies
  and Shoup twiddles — AVX-512 or AVX2 when the path has it —, fast basis conversion and exact
  rescale (`cpu_ring_rns.c`), TO_RNS by Shoup products per packed word: `cpu_ring_to_rns.c`,
  which runs inside replays too, where a transform's diagonals are stored as integer
  coefficients), fed the call's tables from `ren.ring.kernel_tables`.  RANDOM is
  `ren.backend.ring_c`'s program in the same C dialect (it expands its seed on the host, so it
  is bit-identical to the NumPy device by construction).
* Sampling (`CpuDevice.sample`, what realization asks for a random polynomial): uniform limbs
  come from the ring library's own SHAKE-128 and rejection sampler (`cpu_ring_sample.c`,
  `ren.backend.cpu_sampling`), one limb per thread: `ren.sampling`'s words, without hashlib's
  GIL, so key generation uses ``REN_CPU_THREADS``.
* Vector unit: one path per device, chosen when it opens (`ren.backend.cpu_isa`,
  ``REN_CPU_ISA``: auto, avx512, avx2, scalar): the path's flags go after the base ones and its
  name heads every source, so libraries of different paths never share a cache entry.  The
  flags, the compiler probes and the source head are `ren.backend.cpu_build`'s (`cpu_flags`,
  `resolve_isa`, `isa_flags`, `source_head`).
* Libraries are cached on disk by a hash of their source, flags and compiler (`cache_dir()`:
  ``$REN_CACHE_DIR/cpu``, else ``~/.cache/ren/cpu``), so a second process compiles nothing.
  Each library is checked against the digest written beside it after its build before it is
  loaded (`c_host.cached_library`), so a damaged file is rebuilt, never loaded.  A cache folder
  that cannot be created falls back to a private temporary one, and a library that cannot be
  written into it (a read-only shared cache, a folder in its place) is built in one (one
  `CacheWarning`); the folder is `ren.backend.cpu_cache`'s.
* Loaded libraries are owned by what points into them: a `CpuCall` (and so a `CompiledPlan`,
  a JIT plan, a replay template) holds its library, which is closed (dlclose) once the last
  holder is gone.  Each device keeps its ``REN_CPU_LIBRARIES`` most recently used libraries
  loaded for reuse; older ones leave its kernel tables and kernel cache, and close when no
  plan or template still runs them.
* Every compiled entry point has one signature, ``void f(void** args)``; a `CpuCall` is the
  KernelFn binding one of them to its tables.  `CpuDevice.graph` (the JIT's hook) turns a captured
  call list into `CompiledPlan` (`ren.backend.cpu_plan`): a C array of entry points and
  argument vectors run by one C loop (``ren_run_plan``), with only the per-run arrays patched
  in from Python.
* Threads: ``REN_CPU_THREADS`` (default 1) splits limbs over OpenMP threads when the compiler
  supports OpenMP: a limb loop goes parallel only when its work is large enough (2^15 weighted
  words in the ring kernels, 2^16 words in an elementwise kernel), with dynamic scheduling, and
  team threads wait passively (`omp_environment`).  Where the threads outnumber the limbs (a
  level-0 ciphertext, the special primes of key switching, the last levels of a bootstrapping)
  or 3 limbs would leave one of 2 threads idle half the time, each limb is split too
  (cpu_ring.c's ``ren_split``): an elementwise kernel over at most 3 limbs loops over (limb,
  piece) tasks (`ren.backend.elementwise_c`'s ``REN_PIECES``), the basis conversion shares out
  pieces of rows, and the NTT shares out the butterflies of its large stages, then its blocks.
  Results are bit-identical at every thread count: every task writes only its own words, and
  every word is fully reduced.  A compiled plan runs each stretch of consecutive NTT, INTT,
  conversion, rescale and elementwise kernels, whatever their size, inside one team
  (`cpu_ring_plan.c`): every thread calls every kernel and takes its share of the kernel's
  loop, and the threads meet at Ren's own barrier (`cpu_ring_team.c`: a bounded spin, then a
  futex) only before a kernel that depends on one since the last barrier (`cpu_plan.team_flags`)
  — a bootstrapping replay at N = 2^12 wakes its team 8 times instead of forking ~4,500 teams.
  `CpuDevice.set_threads(n)` reaches
  the libraries loaded already and pins n for those loaded later; ``set_threads(None)`` goes
  back to ``REN_CPU_THREADS``.

Memory is the host allocator of the NumPy device, so copies between ``"python"`` and ``"cpu"``
are plain array copies.  Without a C compiler, opening ``"cpu"`` raises a `DeviceError` that
says so; ``"python"`` keeps working.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ren import settings
from ren.backend import Device, KernelFn, cpu_calls, cpu_sampling
from ren.backend.c_host import HostRunner, compiler, host_function
from ren.backend.cpu_build import (
    CPU_FLAGS,
    KERNEL_KINDS,
    available_isas,
    cpu_flags,
    isa_flags,
    kernel_flags,
    kernel_kind,
    resolve_isa,
    source_head,
)
from ren.backend.cpu_cache import (
    CacheWarning,
    cache_dir,
    cached_library,
    configured_cache_dir,
    index_library,
    indexed_library,
)
from ren.backend.cpu_calls import CpuCall, RingInput, address
from ren.backend.cpu_libs import (
    LIBRARY_HEADER,
    entry_wrapper,
    host_parallel,
    host_parallel_function,
    loaded_libraries,
    open_kernel_library,
    pin_threads,
    ring_library,
    ring_source,
    threads,
)
from ren.backend.cpu_libs import (  # (importable from here, as before the split)
    _live as _live,
)
from ren.backend.cpu_libs import (
    omp_environment as omp_environment,
)
from ren.backend.cpu_plan import CompiledPlan
from ren.backend.malloc import tune_allocator
from ren.backend.numpy_backend import HOST
from ren.backend.render_c import (
    CORE_HELPERS,
    C,
    CKernel,
    Program,
    render_program,
    translation_unit,
)
from ren.errors import KernelCompileError, RealizeError
from ren.kernel import ELEMENTWISE, LIGHT_KINDS, RingCall, ScheduledKernel
from ren.random import RandomSpec
from ren.ring import RingKernel, RingSpec

#: kernels per compiler run before a build is split into runs on several cores (gcc takes one).
#: Kernels that differ only in constants share one source (`ren.backend.elementwise_c`), so a
#: first bootstrapping compiles ~60 distinct kernels, some of ~2 s each: small units keep both
#: cores busy
KERNELS_PER_UNIT = 16


def _split(programs: list[Program], fresh: dict[str, CKernel]) -> list[list[Program]]:
    """`programs` in units for parallel compiler runs: one per core while each gets
    KERNELS_PER_UNIT new kernels or more, else one.  Units are balanced by the length of their
    new kernels' sources (a rough measure of compile time: a 34-term product sum takes ~2 s,
    a sum of two rows ~0.05 s), largest first onto the least loaded unit.  A kernel two
    programs share goes with the first (the others are left out)."""
    units = max(1, min(len(os.sched_getaffinity(0)), len(fresh) // KERNELS_PER_UNIT))
    if units == 1:
        return [programs]
    seen: set[str] = set()
    weighted = []
    for i, p in enumerate(programs):
        new = [k.name for k in p.kernels if k.name in fresh and k.name not in seen]
        seen.update(new)
        if new:  # (a program whose kernels an earlier one brings is left out: many programs
            # share one kernel, and each unit holding one would compile it again)
            weighted.append((sum(len(fresh[n].source) for n in new), i, p))
    out: list[list[Program]] = [[] for _ in range(units)]
    load = [0] * units
    for weight, _, p in sorted(weighted, key=lambda w: (-w[0], w[1])):
        u = min(range(units), key=lambda k: (load[k], len(out[k])))
        out[u].append(p)
        load[u] += weight
    return [u for u in out if u]


def _kind(program: Program) -> str:
    """The kind (`cpu_build.KERNEL_KINDS`) a program is compiled as: its kernels' (a rendered
    program's kernels are all of one kind; a mixed one would take the slower-to-build
    ``hosted`` flags, and its elementwise kernels then miss the index: rebuilt, never wrong)."""
    kinds = {kernel_kind(k.name) for k in program.kernels}
    return "elementwise" if kinds == {"elementwise"} else "hosted"


def library_call(call: RingCall, isa: str | None = None,
                 lib: ctypes.CDLL | None = None) -> CpuCall | None:
    """The library CpuCall of a ring call on path `isa` (default: `resolve_isa()`), or None for
    the kinds run as rendered programs.  `lib`: that path's ring library when the caller holds
    it already (resolving a path looks $CC up on PATH: a device builds thousands of calls)."""
    return cpu_calls.library_call(call, lib if lib is not None else ring_library(isa),
                                  takes_zero_rows=CpuDevice.rescale_zero_rows)


#: programs `CpuDevice.prepare` keeps for `build` at most (more: builds that never came)
_RENDERED_KEPT = 1 << 16


class _HostRunner(HostRunner):
    """A HostRunner that names the libraries its host wrappers live in (`owners`), so the
    device's LRU can drop it from the kernel cache when it unloads one of them."""

    def __init__(self, program: Program, functions: dict[str, Any],
                 owners: tuple[ctypes.CDLL, ...]):
        super().__init__(program, functions)
        self.owners = owners


def _owners(fn: Any) -> tuple[ctypes.CDLL, ...]:
    """The kernel libraries a KernelFn of this device points into."""
    if isinstance(fn, CpuCall):
        return () if fn.owner is None else (fn.owner,)
    return getattr(fn, "owners", ())


class CpuDevice(Device):
    """The ``"cpu"`` device: host memory, kernels compiled to native code (module docstring).

    Kernel libraries: `_libs` holds the ``REN_CPU_LIBRARIES`` most recently used ones (a compile
    or a kernel-cache hit is a use).  Dropping one removes its kernels from `entries`, `hosted`
    and the kernel cache, so this device no longer holds it; it is closed when the last JIT
    plan or replay template running one of its kernels goes too.

    `isa`: the vector path of all its kernels (`resolve_isa`: default ``REN_CPU_ISA``), fixed
    when the device opens."""

    #: its library rescale (``ren_cpu_rescale``) reads rows zero_rows.. of its source and takes
    #: the first ones as 0; `library_call` checks every call against this attribute, the one
    #: fact (pass 5 and the plan cache ask it through `Device.rescale_zero_rows`)
    rescale_zero_rows = True

    def __init__(self, name: str, isa: str | None = None):
        super().__init__(name, HOST)
        tune_allocator()
        self.isa = resolve_isa(isa)
        #: the flags of each kind of generated kernel (`cpu_build.kernel_flags`)
        self.kind_flags = {kind: kernel_flags(self.isa, kind) for kind in KERNEL_KINDS}
        self.entries: dict[str, int] = {}  # elementwise kernel name -> entry point address
        self.hosted: dict[str, Any] = {}  # ring_c kernel name -> host wrapper (RANDOM)
        self.compiler_runs = 0
        self._lib_of: dict[str, ctypes.CDLL] = {}  # kernel name -> its library
        # id(library) -> (library, its kernel names), least recently used first
        self._libs: OrderedDict[int, tuple[ctypes.CDLL, list[str]]] = OrderedDict()
        self._build_lock = threading.RLock()
        # what a kernel index entry is valid for: the library head (with the C dialect's
        # prelude and helpers, which the kernels inline or call), compiler, and the flags of
        # the kernel's kind (`_index_context`)
        self._context_head = [source_head(self.isa) + LIBRARY_HEADER + C.prelude + CORE_HELPERS,
                              *compiler()]
        self._contexts: dict[tuple[str, ...], str] = {}
        # programs `prepare` rendered, by item key, for `build` to take instead of rendering again
        self._rendered: dict[Any, Program] = {}
        #: this device's ring library (its path resolved once, here)
        self.ring_lib = ring_library(self.isa)
        self.ring_lib.ren_set_threads(threads())

    def sample(self, spec: RandomSpec, ring: RingSpec) -> np.ndarray:
        """`Device.sample`: every kind in C on this device's threads (`cpu_sampling.sample`:
        uniform limbs by multi-way Keccak, the small distributions with the GIL released), the
        same words as `ren.sampling.sample`; in Python where the C sampler declines."""
        values = cpu_sampling.sample(self.ring_lib, spec, ring)
        return values if values is not None else super().sample(spec, ring)

    def sample_stored(self, spec: RandomSpec, ring: RingSpec) -> np.ndarray | None:
        """`Device.sample_stored`: the C sampler writes r·2^32 mod q_i itself (one Shoup product
        in the pass that writes each row), so realization substitutes the buffer as it is; None
        where it declines."""
        return cpu_sampling.sample(self.ring_lib, spec, ring, stored=True)

    def host_threads(self) -> int:
        """The library kernels' threads (`threads`: REN_CPU_THREADS or `set_threads`)."""
        return threads()

    def sampling_threads(self) -> int:
        """The device's threads (`host_threads`): its samplers release the GIL, so realization
        draws that many random leaves side by side, and one thread means one (a fair one-thread
        benchmark)."""
        return self.host_threads()

    def set_threads(self, n: int | None) -> None:
        """Use `n` OpenMP threads in the library kernels from now on (1: none), in the libraries
        loaded already and in those loaded later; `n` must be in REN_CPU_THREADS's range.
        ``None`` goes back to the setting: libraries loaded later take REN_CPU_THREADS."""
        pin_threads(None if n is None else settings.check("REN_CPU_THREADS", n))

    def libraries(self) -> int:
        """How many kernel libraries this device holds for reuse (at most REN_CPU_LIBRARIES)."""
        return len(self._libs)

    def _program(self, item: ScheduledKernel) -> Program | None:
        """The rendered program of an item this device compiles from source (elementwise,
        RANDOM), or None for library ring kernels."""
        call = item.ring_call
        if call is not None and call.kind is not RingKernel.RANDOM:
            return None
        return render_program(item, C)

    def render(self, item: ScheduledKernel) -> str:
        """The C this device compiles for `item` (its C-dialect program), or for a ring kernel
        of the compiled library (NTT, basis conversion, rescale …) the library function."""
        program = self._program(item)
        if program is None:
            call = item.ring_call
            kind = call.kind.name if call is not None else item.kind
            return (f"/* {kind}: a function of the compiled ring library ren/backend/cpu_ring.c, "
                    "called with this item's tables and buffers */")
        return "\n\n".join(k.source for k in program.kernels)

    def prepare(self, items: Iterable[ScheduledKernel]) -> int:
        """Compile every kernel of `items` not compiled yet in one compiler run; returns how
        many kernels were compiled.  Each distinct kernel (item key) is rendered once: a
        schedule repeats kernels (every key switch of a bootstrapping has the same ones), and
        `build` takes the program rendered here."""
        return self._load(self._programs(items))

    @property
    def flags(self) -> tuple[str, ...]:
        """The elementwise kernels' flags (most kernels are elementwise): ``kind_flags``'s."""
        return self.kind_flags["elementwise"]

    def lacks(self, items: Iterable[ScheduledKernel]) -> bool:
        """`Device.lacks`: whether `items` need a compiler run: a kernel of theirs neither
        loaded nor in the compile cache's index (those the index finds are loaded now, as
        `prepare` would).  Compiles nothing, so that a cold first call builds its first chunk's
        kernels in the same compiler runs as the rest, rather than in a run of their own first
        (~0.3 s of a bootstrapping's critical path on 2 cores)."""
        programs = self._programs(items)
        with self._build_lock:
            known = self.entries.keys() | self.hosted.keys()
            fresh = {k.name: k for p in programs for k in p.kernels if k.name not in known}
            return bool(fresh) and bool(self._load_indexed(fresh, cache_dir()))

    def _programs(self, items: Iterable[ScheduledKernel]) -> list[Program]:
        """The rendered programs of `items`' distinct compute kernels not compiled yet, kept
        for `build` (a program `lacks` rendered already is taken as it is)."""
        programs = []
        seen: set[Any] = set()
        rendered: dict[Any, Program] = {}
        for item in items:
            if item.kind in LIGHT_KINDS or item.key in seen or self.is_cached(item):
                continue
            seen.add(item.key)
            p = self._rendered.get(item.key)  # (one dict read: atomic without the lock)
            if p is None:
                p = self._program(item)
            if p is not None:
                programs.append(p)
                rendered[item.key] = p
        with self._build_lock:
            if len(self._rendered) > _RENDERED_KEPT:  # left by builds that never came
                self._rendered.clear()
            self._rendered.update(rendered)
        return programs

    def _index_context(self, kind: str) -> str:
        """The kernel index context of kind `kind`'s kernels: the head, the compiler and the
        kind's flags, so that an index entry never hands out a library built with other flags."""
        flags = self.kind_flags[kind]
        context = self._contexts.get(flags)
        if context is None:
            context = hashlib.sha256("\0".join([*self._context_head, "flags", *flags])
                                     .encode()).hexdigest()
            self._contexts[flags] = context
        return context

    def _units(self, programs: list[Program],
               fresh: dict[str, CKernel]) -> list[tuple[str, list[Program]]]:
        """The compiler runs of `programs` (those with a kernel in `fresh`): (kind, unit) — each
        kind's programs (`_kind`) split by `_split`, as its kernels get their own flags."""
        out: list[tuple[str, list[Program]]] = []
        for kind in KERNEL_KINDS:
            group = [p for p in programs if _kind(p) == kind]
            if group:
                mine = {n: k for n, k in fresh.items() if kernel_kind(n) == kind}
                out += [(kind, unit) for unit in _split(group, mine)]
        return out

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
            folder = cache_dir()
            fresh = self._load_indexed(fresh, folder)
            if not fresh:
                self._evict()
                return 0
            todo = [p for p in programs if any(k.name in fresh for k in p.kernels)]
            units = self._units(todo, fresh)
            jobs = [(self._unit_source(unit, fresh), self.kind_flags[kind])
                    for kind, unit in units]
            if len(jobs) == 1:
                paths = [cached_library(jobs[0][0], jobs[0][1], folder)]
            else:  # one compiler process per unit, side by side (each builds its own library)
                with ThreadPoolExecutor(len(jobs)) as pool:
                    paths = list(pool.map(lambda job: cached_library(job[0], job[1], folder),
                                          jobs))
            self.compiler_runs += 1
            done: set[str] = set()  # a kernel two units compile is taken from the first
            for (kind, unit), path in zip(units, paths, strict=True):
                lib = open_kernel_library(path)
                names = [n for n in dict.fromkeys(k.name for p in unit for k in p.kernels)
                         if n in fresh and n not in done]
                done.update(names)
                self._register(lib, names, fresh)
                index_library(folder, names, path, self._index_context(kind))
            self._evict()
            return len(fresh)

    def _register(self, lib: ctypes.CDLL, names: list[str], kernels: dict[str, CKernel]) -> None:
        """Take kernels `names` (of `kernels`) from the loaded library `lib` (caller holds the
        build lock); a one-phase hosted kernel through its parallel wrapper."""
        lib["ren_set_threads"](threads())
        found = {name: address(lib, f"ren_cpu_{name}") if name.startswith("ren_ew_")
                 else host_parallel_function(lib, name) if kernels[name].phases == 1
                 else host_function(lib, name) for name in names}
        for name, fn in found.items():
            if name.startswith("ren_ew_"):
                self.entries[name] = fn
            else:
                self.hosted[name] = fn
            self._lib_of[name] = lib
        self._libs[id(lib)] = (lib, names)

    def _load_indexed(self, fresh: dict[str, CKernel], folder: str) -> dict[str, CKernel]:
        """Load the kernels of `fresh` that the cache's kernel index finds in libraries an
        earlier process compiled (`ren.backend.cpu_cache.indexed_library`); returns the rest,
        which need a compiler run.  A library that does not load or lacks a kernel is skipped
        (its kernels are compiled again)."""
        by_library: dict[str, list[str]] = {}
        verified: dict[str, bool] = {}
        for name in fresh:
            so = indexed_library(folder, name, self._index_context(kernel_kind(name)), verified)
            if so is not None:
                by_library.setdefault(so, []).append(name)
        left = dict(fresh)
        for so, names in by_library.items():
            try:
                lib = open_kernel_library(so)
                self._register(lib, names, fresh)
            except (KernelCompileError, AttributeError, OSError):
                continue
            for name in names:
                del left[name]
        return left

    def _unit_source(self, unit: list[Program], fresh: dict[str, CKernel]) -> str:
        """The C source of one compiler run: `unit`'s programs, the wrappers of their new
        elementwise kernels and the parallel host wrappers of their one-phase hosted ones."""
        names = dict.fromkeys(k.name for p in unit for k in p.kernels if k.name in fresh)
        extra = "\n" + "".join(entry_wrapper(fresh[n]) if n.startswith("ren_ew_")
                                else host_parallel(fresh[n]) if fresh[n].phases == 1 else ""
                                for n in names)
        return source_head(self.isa) + LIBRARY_HEADER + translation_unit(unit, C) + extra

    def _evict(self) -> None:
        """Drop the least recently used libraries beyond REN_CPU_LIBRARIES (caller holds the
        build lock)."""
        bound = settings.get("REN_CPU_LIBRARIES")
        while len(self._libs) > bound:
            _, (lib, names) = self._libs.popitem(last=False)
            for name in names:
                if self._lib_of.get(name) is lib:
                    del self._lib_of[name]
                    self.entries.pop(name, None)
                    self.hosted.pop(name, None)
            with self._lock:
                stale = [key for key, fn in self._cache.items() if lib in _owners(fn)]
                for key in stale:
                    del self._cache[key]

    def _touch(self, libs: Sequence[ctypes.CDLL]) -> None:
        with self._build_lock:
            for lib in libs:
                if id(lib) in self._libs:
                    self._libs.move_to_end(id(lib))

    def compile(self, item: ScheduledKernel) -> KernelFn:
        fn = super().compile(item)
        owners = _owners(fn)
        if owners:  # a use: keep its library among the most recently used
            self._touch(owners)
        return fn

    def build(self, item: ScheduledKernel) -> KernelFn:
        call = item.ring_call
        if call is not None:
            fn = library_call(call, self.isa, self.ring_lib)
            if fn is not None:
                return RingInput(fn)
        with self._build_lock:
            program = self._rendered.pop(item.key, None)
        if program is None:
            program = self._program(item)
        if program is None:  # pragma: no cover - every ring kind is handled above
            raise RealizeError(f"cpu backend: cannot compile {item.name}")
        # under the build lock: another thread's load could evict these kernels in between
        with self._build_lock:
            self._load([program])
            if item.kind == ELEMENTWISE:
                (kernel,) = program.kernels
                (launch,) = program.launches  # slots, then the tables passed as parameters
                tables = [program.tables[a[1]] for a in launch.args if a[0] == "table"]
                return CpuCall(kernel.name, self.entries[kernel.name],
                               len(kernel.params) - len(tables), tables,
                               owner=self._lib_of[kernel.name])
            owners = {id(lib): lib for lib in (self._lib_of[k.name] for k in program.kernels)}
            return _HostRunner(program, self.hosted, tuple(owners.values()))

    def graph(self, calls: Sequence[tuple[KernelFn, list[Any]]],
              patches: Sequence[tuple[int, int, int]]) -> CompiledPlan:
        unwrapped = [(fn.call if isinstance(fn, RingInput) else fn, args) for fn, args in calls]
        return CompiledPlan(unwrapped, patches, self.ring_lib)


def open_device(name: str) -> CpuDevice:
    return CpuDevice(name)


# the build and cache names stay importable from here (`cpu_build`, `cpu_cache` define them)
__all__ = ["CPU_FLAGS", "CacheWarning", "CompiledPlan", "CpuCall", "CpuDevice",
           "available_isas", "cache_dir", "configured_cache_dir", "cpu_flags", "isa_flags",
           "library_call", "loaded_libraries", "open_device", "resolve_isa", "ring_library",
           "ring_source", "source_head"]
