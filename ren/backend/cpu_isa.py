"""The vector unit the ``"cpu"`` device compiles for, chosen at run time (``REN_CPU_ISA``).

Three paths, best first:

* ``avx512`` — AVX-512 F/DQ/BW/VL: 16-lane ring kernels (`cpu_ring_avx512.c`) for every modulus
  below 2^31, and elementwise loops the compiler vectorizes with 512-bit registers;
* ``avx2`` — the 8-lane ring kernels (`cpu_ring_avx2.c`, moduli below 2^30), 256-bit loops;
* ``scalar`` — no AVX2: the portable C of `cpu_ring.c` (what every other machine runs).

``REN_CPU_ISA=auto`` (the default) takes the best path that both this CPU (its feature flags:
``/proc/cpuinfo`` on Linux, else a compiled probe using ``__builtin_cpu_supports``) and the C
compiler (it accepts the path's flags) support; naming a path forces it, and one the machine
cannot run is a `DeviceError` saying what the CPU has.  Each path compiles with its own flags
on top of the base ones (``-mno-avx512f`` for avx2, ``-mno-avx2 -mno-avx512f`` for scalar), and
its name heads every source (`isa_tag`), so the path is part of every cache key and a cache
folder shared by two kinds of machines never hands one the other's library.
"""

from __future__ import annotations

import ctypes
import platform
from collections.abc import Callable
from functools import cache

from ren import settings
from ren.backend.c_host import CFLAGS, compile_source
from ren.errors import DeviceError

#: the paths, best first
ISAS: tuple[str, ...] = ("avx512", "avx2", "scalar")

#: the CPU features (Linux /proc/cpuinfo names) each path needs
REQUIRES: dict[str, frozenset[str]] = {
    "avx512": frozenset({"avx2", "avx512f", "avx512dq", "avx512bw", "avx512vl"}),
    "avx2": frozenset({"avx2"}),
    "scalar": frozenset(),
}

#: compiler flags of each path on x86, after the base flags (which may hold -march=native):
#: they switch the path's instruction sets on and the better paths' off, so a forced path is
#: the code that path's machines run
ISA_FLAGS: dict[str, tuple[str, ...]] = {
    "avx512": ("-mavx2", "-mfma", "-mavx512f", "-mavx512dq", "-mavx512bw", "-mavx512vl",
               "-mprefer-vector-width=512"),
    "avx2": ("-mavx2", "-mfma", "-mno-avx512f"),
    "scalar": ("-mno-avx2", "-mno-avx512f"),
}

#: the features the probe asks __builtin_cpu_supports about (bit i: FEATURES[i])
FEATURES: tuple[str, ...] = ("avx2", "avx512f", "avx512dq", "avx512bw", "avx512vl",
                             "avx512ifma")

_PROBE = ("int ren_cpu_features(void) {\n  int f = 0;\n"
          "#if defined(__x86_64__) || defined(__i386__)\n  __builtin_cpu_init();\n"
          + "".join(f'  if (__builtin_cpu_supports("{name}")) f |= {1 << i};\n'
                    for i, name in enumerate(FEATURES))
          + "#endif\n  return f;\n}\n")


def is_x86() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64", "i386", "i686", "x86")


def cpuinfo_features(path: str = "/proc/cpuinfo") -> frozenset[str] | None:
    """The flags of the first CPU in a Linux cpuinfo file, or None without one."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        return None
    return None


def probe_features() -> frozenset[str]:
    """The `FEATURES` this CPU (and its OS) supports, asked of ``__builtin_cpu_supports`` in a
    tiny library built without -march (plain code, safe to share between machines)."""
    lib = compile_source(_PROBE, CFLAGS)
    fn = lib["ren_cpu_features"]
    fn.restype = ctypes.c_int
    bits = int(fn())
    return frozenset(name for i, name in enumerate(FEATURES) if bits >> i & 1)


@cache
def cpu_features() -> frozenset[str]:
    """This CPU's feature flags: /proc/cpuinfo's on Linux, else the compiled probe's (empty
    on a machine that is not x86)."""
    if not is_x86():
        return frozenset()
    found = cpuinfo_features()
    return found if found is not None else probe_features()


def cpu_has(isa: str) -> bool:
    """Whether this CPU has the features path `isa` needs."""
    return REQUIRES[isa] <= cpu_features()


def isa_flags(isa: str) -> tuple[str, ...]:
    """The flags path `isa` adds to the base flags (none off x86: only scalar runs there)."""
    return ISA_FLAGS[isa] if is_x86() else ()


def isa_tag(isa: str) -> str:
    """The comment heading every source compiled for path `isa` (so it is in the cache key)."""
    return f"/* ren cpu isa {isa} */\n"


def resolve(builds: Callable[[str], bool], requested: str | None = None) -> str:
    """The path to compile for: `requested` (else ``REN_CPU_ISA``); ``auto`` is the best path
    the CPU has and the compiler builds (`builds(isa)`, asked only as far as needed).  A path
    this machine cannot run is a DeviceError saying what the CPU has."""
    want = settings.check("REN_CPU_ISA", requested) if requested is not None \
        else settings.get("REN_CPU_ISA")
    if want == "auto":
        return next(i for i in ISAS if i == "scalar" or (cpu_has(i) and builds(i)))
    if want == "scalar" or (cpu_has(want) and builds(want)):
        return want
    paths = [i for i in ISAS if i == "scalar" or (cpu_has(i) and builds(i))]
    missing = sorted(REQUIRES[want] - cpu_features())
    why = (f"this CPU lacks {', '.join(missing)}" if missing
           else "the C compiler does not build with " + " ".join(isa_flags(want)))
    has = sorted(cpu_features() & set().union(*REQUIRES.values(), {"avx512ifma"}))
    raise DeviceError(f"REN_CPU_ISA={want} asks for the {want} path of the 'cpu' device, but "
                      f"{why} (its vector features: {', '.join(has) or 'none'}); this machine "
                      f"runs {', '.join(paths)}: set REN_CPU_ISA to one of them or to auto")


__all__ = ["FEATURES", "ISAS", "ISA_FLAGS", "REQUIRES", "cpu_features", "cpu_has",
           "cpuinfo_features", "is_x86", "isa_flags", "isa_tag", "probe_features", "resolve"]
