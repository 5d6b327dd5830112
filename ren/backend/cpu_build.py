"""How the ``"cpu"`` device builds its libraries: the C compiler's flags and every source's head.

* `cpu_flags()`: `CPU_FLAGS`, less ``-march=native`` where the compiler rejects it, plus
  ``-fopenmp`` where it builds OpenMP code — asked of the compiler once per process by building
  tiny probe libraries; no compiler, or one that builds no shared library, is a `DeviceError`
  saying what was tried.
* The vector path (`ren.backend.cpu_isa` chooses it): `available_isas()` and `resolve_isa()` add
  to the CPU's features the question whether the compiler builds with the path's flags;
  `isa_flags(isa)` is the base flags followed by the path's.
* `kernel_flags(isa, kind)`: the flags of the *generated* kernel libraries — the path's flags
  with ``-O3`` replaced by the kind's `KERNEL_OPT`.  A cold first call spends most of its time in
  the compiler (a bootstrapping compiles ~330 kernels), so each kind gets the cheapest level that
  keeps its code as fast, chosen from what the kernel is (`kernel_kind`: its name says it), not
  from how long it runs:

  - ``elementwise`` (``ren_ew_*``: one plain loop nest over limbs and coefficients, its helpers
    ``static inline``): ``-O1`` with the loop vectorizer — half ``-O2``'s compiler CPU (n16 shape:
    3.19 -> 1.64 s, kernels compiled one by one), the replay's kernels as fast (per-kernel minima
    at N = 2^14, fast and lean modes: within ±2 % in total).  ``-O1`` alone is scalar, 5x slower.
  - ``hosted`` (a rendered ring program, i.e. RANDOM: a CUDA-style kernel run per element by a
    grid loop through thread-local indices): ``-O2`` plus the optimizations ``-O3`` adds (its
    vectorizer cost model, loop unswitching, peeling, versioning ...) without ``-O3``'s larger
    inlining and unrolling budgets.  It needs ``-O2``'s inliner: at ``-O1`` the grid loop calls
    the kernel, and ``__tls_get_addr``, once per element, which made the lean mode's replay (a
    RANDOM per regenerated key half) spend 2.0x as long in them (N = 2^14: 1.28 -> 2.58 s; n16
    lean 15.3 -> ~22 s).  They are few and small, so their level costs the compiler little.

  The fixed ring library (`cpu_ring.c`, compiled once per install) keeps ``-O3``.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shlex
import tempfile
from collections.abc import Sequence
from functools import cache

from ren.backend import cpu_isa
from ren.backend.c_host import CC_HINT, build_library, compiler, find_cc
from ren.errors import DeviceError, KernelCompileError

#: flags of every compiled library (-fopenmp is added when the compiler supports it)
CPU_FLAGS: tuple[str, ...] = (
    "-O3", "-march=native", "-std=gnu11", "-shared", "-fPIC", "-Wall",
    "-Werror=implicit-function-declaration", "-Wno-unused-function", "-Wno-unused-variable",
    "-Wno-unused-but-set-variable")


def _build_problem(cc: Sequence[str], flags: Sequence[str], source: str) -> str | None:
    """Why `cc` does not build a shared library from `source` with `flags`, or None."""
    with tempfile.TemporaryDirectory(prefix="ren-cc-") as d:
        try:
            build_library(cc, source, flags, os.path.join(d, "probe.so"))
        except (KernelCompileError, DeviceError) as e:
            return str(e).removesuffix(CC_HINT)
    return None


def _builds(cc: Sequence[str], flags: Sequence[str], source: str) -> bool:
    """Whether `cc` builds a shared library from `source` with `flags`."""
    return _build_problem(cc, flags, source) is None


def _no_cc_reason() -> str:
    try:
        compiler()
    except DeviceError as e:
        return str(e)
    return "none found: set CC or install one, e.g. apt-get install gcc"


@cache
def cpu_flags() -> tuple[str, ...]:
    """CPU_FLAGS, less ``-march=native`` where the compiler rejects it, plus ``-fopenmp``
    where it builds OpenMP code (e.g. clang without libomp does not)."""
    cc = find_cc()
    if cc is None:
        raise DeviceError(f"device 'cpu' needs a C compiler ({_no_cc_reason()}); use the "
                          "'python' device meanwhile")
    flags = CPU_FLAGS
    probe = "int f(void) { return 1; }\n"
    if not _builds(cc, flags, probe):
        flags = tuple(f for f in flags if f != "-march=native")
        if not _builds(cc, flags, probe):
            origin = f"CC={os.environ['CC']!r}" if os.environ.get("CC", "").strip() \
                else f"found on PATH: {shlex.join(cc)}"
            raise DeviceError(f"device 'cpu' cannot use its C compiler ({origin}), which does "
                              f"not build a shared library: {_build_problem(cc, flags, probe)}"
                              f"{CC_HINT}, or use the 'python' device meanwhile")
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


_PROBE = "int f(void) { return 1; }\n"


@cache
def _flags_build(cc: tuple[str, ...], flags: tuple[str, ...]) -> bool:
    return _builds(cc, flags, _PROBE)


def _isa_builds(isa: str) -> bool:
    """Whether the C compiler builds with path `isa`'s flags (scalar adds none that matter);
    remembered per compiler and flags, so a compiler found later is asked again."""
    if isa == "scalar":
        return True
    cc = find_cc()
    return cc is not None and _flags_build(cc, isa_flags(isa))


def available_isas() -> tuple[str, ...]:
    """The vector paths this machine runs, best first (`cpu_isa.ISAS`): the CPU has their
    features and the C compiler builds with their flags; scalar always."""
    return tuple(i for i in cpu_isa.ISAS
                 if i == "scalar" or (cpu_isa.cpu_has(i) and _isa_builds(i)))


def resolve_isa(isa: str | None = None) -> str:
    """The path to compile for: `isa`, else ``REN_CPU_ISA`` (auto: the best available); a path
    this machine cannot run is a DeviceError saying what the CPU has."""
    return cpu_isa.resolve(_isa_builds, isa)


def isa_flags(isa: str) -> tuple[str, ...]:
    """The flags of every library compiled for path `isa`: `cpu_flags()` then the path's."""
    return cpu_flags() + cpu_isa.isa_flags(isa)


#: what replaces -O3 in the flags of each kind of generated kernel (`kernel_flags`; module
#: docstring says why each level)
KERNEL_OPT: dict[str, tuple[str, ...]] = {
    "elementwise": ("-O1", "-ftree-vectorize", "-fvect-cost-model=dynamic"),
    "hosted": (
        "-O2", "-fgcse-after-reload", "-fipa-cp-clone", "-floop-interchange",
        "-floop-unroll-and-jam", "-fpeel-loops", "-fpredictive-commoning", "-fsplit-loops",
        "-fsplit-paths", "-ftree-loop-distribution", "-ftree-partial-pre", "-funswitch-loops",
        "-fvect-cost-model=dynamic", "-fversion-loops-for-strides"),
}
#: the kinds of generated kernel, each compiled in its own libraries with its own flags
KERNEL_KINDS: tuple[str, ...] = tuple(KERNEL_OPT)


def kernel_kind(name: str) -> str:
    """The kind (`KERNEL_KINDS`) of the generated kernel named `name`: ``elementwise`` for the
    elementwise kernels (``ren_ew_<hash>``, called through ``ren_cpu_<name>``), ``hosted`` for
    the rest (rendered ring programs run by their grid wrappers: RANDOM)."""
    return "elementwise" if name.startswith("ren_ew_") else "hosted"


def kernel_flags(isa: str, kind: str = "elementwise") -> tuple[str, ...]:
    """The flags of every generated kernel library of kind `kind` (`KERNEL_KINDS`) compiled for
    path `isa`: `isa_flags(isa)` with ``-O3`` replaced by ``KERNEL_OPT[kind]``.  Part of every
    such library's cache key (and of the kernel index's context), as all flags are, so kinds
    never share a library.  A compiler that rejects one of them (another compiler as CC, an old
    GCC) gets `isa_flags` as they are."""
    full = isa_flags(isa)
    opt = KERNEL_OPT[kind]
    flags = tuple(g for f in full for g in (opt if f == "-O3" else (f,)))
    cc = find_cc()
    return flags if cc is not None and _flags_build(cc, flags) else full


def source_head(isa: str) -> str:
    """What heads every source compiled for path `isa`: the host and the path, both part of
    the cache key."""
    return host_tag() + cpu_isa.isa_tag(isa)


__all__ = ["CPU_FLAGS", "KERNEL_KINDS", "KERNEL_OPT", "available_isas", "cpu_flags", "host_tag",
           "isa_flags", "kernel_flags", "kernel_kind", "resolve_isa", "source_head"]
