"""The ``"cpu"`` device's libraries once built: what every kernel library holds besides its
kernels, the ring library, and which libraries are loaded.

* `LIBRARY_HEADER` heads every kernel library (the thread count and the OpenMP limb loop);
  `entry_wrapper` and `host_parallel` are the per-kernel entry points `ren.backend.cpu` appends
  to a compiler run's source.
* `ring_library(isa)`: the compiled ring kernels (`cpu_ring.c` with its included files:
  `ring_source`), loaded once per vector path and never closed.
* `open_kernel_library`: a verified kernel library loaded and registered (`loaded_libraries`),
  closed once nothing holds it.
* Threads: `threads()` is the count a library takes when it loads (REN_CPU_THREADS unless
  `pin_threads` pinned one); `omp_environment` sets libgomp's wait policy before the first
  OpenMP library loads.
"""

from __future__ import annotations

import _ctypes
import ctypes
import os
import threading
import weakref
from importlib import resources
from typing import Any

from ren import settings
from ren.backend.c_host import open_library
from ren.backend.cpu_build import isa_flags, resolve_isa, source_head
from ren.backend.cpu_cache import cache_dir, cached_library
from ren.backend.render_c import CKernel

#: prepended to every kernel library: the thread count and the OpenMP loop over limbs
LIBRARY_HEADER = r"""/* Ren elementwise kernels for the "cpu" device */
static int ren_threads = 1;
void ren_set_threads(int n) { ren_threads = n < 1 ? 1 : n; }
int ren_get_threads(void) { return ren_threads; }
#ifdef _OPENMP
/* the limb loop on ren_threads threads when its words (a constant) reach 2^16: elementwise work
   is memory bound, so a smaller loop is over before a team would have woken up (cpu_ring.c) */
#define REN_PRAGMA(x) _Pragma(#x)
#define REN_PARALLEL_LIMBS(work)                                                     \
  REN_PRAGMA(omp parallel for schedule(dynamic, 1) num_threads(ren_threads)          \
             if(ren_threads > 1 && (work) >= (1LL << 16)))
/* inside the plan runner's team (cpu_ring_plan.c) every thread calls the kernel: its loop is
   shared out without a barrier (the runner's follows); ren_team_kernels marks the library, and
   ren_team_tasks(t) counts the loop's tasks team thread t ran (for tests and measurements) */
extern int omp_in_parallel(void);
extern int omp_get_thread_num(void);
#define REN_TEAM() omp_in_parallel()
#define REN_TEAM_FOR REN_PRAGMA(omp for schedule(dynamic, 1) nowait)
static long long ren_team_tasks_[64];
#define REN_TEAM_TASK() \
  __atomic_fetch_add(&ren_team_tasks_[omp_get_thread_num() & 63], 1, __ATOMIC_RELAXED)
int ren_team_kernels(void) { return 1; }
long long ren_team_tasks(int t) { return t >= 0 && t < 64 ? ren_team_tasks_[t] : 0; }
#endif
"""


#: the thread count `CpuDevice.set_threads` pinned for every library (None: REN_CPU_THREADS)
_pinned_threads: int | None = None


def threads() -> int:
    """The thread count a library takes when it loads: the one `CpuDevice.set_threads` pinned,
    else REN_CPU_THREADS."""
    return _pinned_threads if _pinned_threads is not None else settings.get("REN_CPU_THREADS")


def pin_threads(n: int | None) -> int:
    """Pin `n` threads for every library (None: back to REN_CPU_THREADS), in the ring and
    kernel libraries loaded already and those loaded later; returns the count now in force
    (`CpuDevice.set_threads` checks `n` first)."""
    global _pinned_threads
    _pinned_threads = n
    n = threads()
    with _ring_lock:
        ring_libs = list(_ring_libs.values())
    for lib in ring_libs:
        lib.ren_set_threads(n)
    for lib in list(_live):
        lib["ren_set_threads"](n)
    return n


#: the OpenMP wait policy Ren asks for when the environment names none (`omp_environment`)
OMP_WAIT_DEFAULT = "passive"


def omp_environment() -> None:
    """Before the first OpenMP library loads (libgomp reads its environment once, when it is
    loaded): ``OMP_WAIT_POLICY=passive`` unless ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT`` is set.

    libgomp's default lets an idle team thread spin up to 300,000 pause loops (milliseconds)
    after every parallel loop.  Ren's kernels run one after the other with Python or a short C
    step between them, so with REN_CPU_THREADS=2 on two busy cores the spinning thread took the
    core its own master needed: measured on a 2-core machine with one core busy elsewhere, the
    JIT-replayed multiply at N = 2^14 took 15 ms on 1 thread and 380..630 ms on 2 (spinning),
    18..19 ms on 2 (passive); at N = 2^16, 600 ms against 1190 ms (spinning), 540 ms (passive).
    Passive waiting costs a futex wake per parallel loop instead, which the kernels' work
    thresholds (cpu_ring.c's REN_PAR_MIN_WORK) keep small against the loop.
    On a machine with cores to spare, ``OMP_WAIT_POLICY=active`` restores spinning, and a short
    spin (``GOMP_SPINCOUNT=10000``, ~0.1 ms) catches the next kernel of a plan without sleeping.
    What a wake costs, measured on a 2-core VM (2026-12, other load beside): an OpenMP loop of
    350 us of work took 178 us on 2 threads spinning (any spin count from 1,000 up) and 226 us
    passive; a multiply replay at N = 2^16 (38 kernels) makes ~176 futex calls and ~90
    context switches, a bootstrapping replay at N = 2^12 (4,477 kernels) ~13,600 and ~4,700,
    where 2 threads took 370–585 ms passive against 315–450 ms with GOMP_SPINCOUNT=10000
    (1 thread: 473–525 ms; runs minutes apart on the shared VM).  But with the cores busy
    elsewhere, the same short spin made the multiply at N = 2^14 4x slower (17 -> 70 ms), so
    passive stays the default."""
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["OMP_WAIT_POLICY"] = OMP_WAIT_DEFAULT


def ring_source(isa: str) -> str:
    """The ring library's source for path `isa`: `cpu_ring.c` with its ``#include
    "cpu_ring_*.c"`` lines replaced by those files, so the cache key covers all of them."""
    files = resources.files("ren.backend")
    lines = []
    for line in files.joinpath("cpu_ring.c").read_text().splitlines(keepends=True):
        name = line.strip().removeprefix("#include ").strip('"')
        if line.startswith('#include "cpu_ring_') and name.endswith(".c"):
            lines.append(files.joinpath(name).read_text())
        else:
            lines.append(line)
    return source_head(isa) + "".join(lines)


#: the ring libraries loaded, by path (each loaded once and never closed)
_ring_libs: dict[str, ctypes.CDLL] = {}
_ring_lock = threading.Lock()


def ring_library(isa: str | None = None) -> ctypes.CDLL:
    """The compiled ring kernels (`cpu_ring.c`) for path `isa` (default: `resolve_isa()`);
    each path's library is loaded once and never closed."""
    isa = resolve_isa(isa)
    with _ring_lock:
        lib = _ring_libs.get(isa)
        if lib is None:
            path = cached_library(ring_source(isa), isa_flags(isa), cache_dir())
            omp_environment()
            lib = _ring_libs[isa] = open_library(path)
            lib.ren_set_threads(threads())
        return lib


#: the kernel libraries loaded now (dlopened, not closed yet): `set_threads` reaches them all
_live: weakref.WeakSet[ctypes.CDLL] = weakref.WeakSet()


def open_kernel_library(path: str) -> ctypes.CDLL:
    """Load a verified kernel library; it is closed (dlclose) when the CDLL object is collected,
    i.e. when nothing holds it: every holder of an address inside it (a CpuCall, a host
    wrapper function, a CompiledPlan through its calls) holds the CDLL too."""
    omp_environment()
    lib = open_library(path)
    done = weakref.finalize(lib, _ctypes.dlclose, lib._handle)
    done.atexit = False  # nothing needs the memory back at exit, and a thread may still run it
    _live.add(lib)
    return lib


def loaded_libraries() -> int:
    """How many compiled kernel libraries are loaded now (the ring library aside)."""
    return len(_live)


def entry_wrapper(k: CKernel) -> str:
    """``void ren_cpu_<name>(void** a)``: the uniform entry point of an elementwise kernel."""
    args = ", ".join(f"({p.ctype})a[{i}]" for i, p in enumerate(k.params))
    return f"void ren_cpu_{k.name}(void** a) {{ {k.name}({args}); }}\n"


def host_parallel(k: CKernel) -> str:
    """``ren_hostp_<name>(dims, args)``: the host wrapper of a one-phase hosted kernel (RANDOM:
    a thread per output word, no shared memory) with the grid's blocks shared out over
    the OpenMP threads (the shim's block and thread indices are per thread under OpenMP) when
    the grid has 2^16 threads or more; other grids go to the shim's serial ``ren_host_``."""
    call = ", ".join(f"({p.ctype})args[{i}]" if p.is_pointer else f"*(const {p.ctype}*)args[{i}]"
                     for i, p in enumerate(k.params))
    return f"""
void ren_hostp_{k.name}(const long long* dims, void** args) {{
  const long long gx = dims[0], bx = dims[3];
  if (dims[1] != 1 || dims[2] != 1 || dims[4] != 1 || dims[5] != 1) {{
    ren_host_{k.name}(dims, args);
    return;
  }}
#ifdef REN_PARALLEL_LIMBS
  REN_PRAGMA(omp parallel for schedule(static) num_threads(ren_threads) \
             if(ren_threads > 1 && gx * bx >= (1LL << 16)))
#endif
  for (long long b = 0; b < gx; ++b) {{
    gridDim.x = (unsigned)gx; gridDim.y = 1; gridDim.z = 1;
    blockDim.x = (unsigned)bx; blockDim.y = 1; blockDim.z = 1;
    blockIdx.x = (unsigned)b; blockIdx.y = 0; blockIdx.z = 0;
    threadIdx.y = 0; threadIdx.z = 0; ren_phase = 0;
    for (threadIdx.x = 0; threadIdx.x < (unsigned)bx; ++threadIdx.x) {k.name}({call});
  }}
}}
"""


def host_parallel_function(lib: ctypes.CDLL, k_name: str) -> Any:
    """The hosted kernel's wrapper: ``ren_hostp_<name>`` (blocks over the threads); a library
    built before it existed lacks it (AttributeError: its kernels are compiled again)."""
    fn = lib[f"ren_hostp_{k_name}"]
    fn.argtypes = [ctypes.POINTER(ctypes.c_longlong), ctypes.POINTER(ctypes.c_void_p)]
    fn.restype = None
    return fn


__all__ = ["LIBRARY_HEADER", "OMP_WAIT_DEFAULT", "entry_wrapper", "host_parallel",
           "host_parallel_function", "loaded_libraries", "omp_environment", "open_kernel_library",
           "pin_threads", "ring_library", "ring_source", "threads"]
