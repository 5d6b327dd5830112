"""Rendered kernels on the host: the shim (and plain C) dialects of `ren.backend.render_c`,
compiled by the system C compiler and called through ctypes.

This is how the CUDA renderer's *semantics* are checked without a GPU: the very kernel bodies
NVRTC compiles for the GPU are compiled here under the shim header (thread and block indices as
globals set by a loop over the grid, shared memory as a static array, barrier phases run in
order) and must give the NumPy backend's words exactly.  It is also the starting point of the
compiled-CPU backend (the plain `C` dialect).

* `compile_host(programs, dialect)` — one ``cc`` run for every distinct kernel of the programs
  (a shared library per source text, cached in-process).
* `HostShimDevice` — a `Device` on host memory (the NumPy allocator) whose kernels are rendered,
  compiled and run this way.  `prepare(items)` compiles many kernels in one compiler run;
  `build` compiles whatever is still missing.  Tests open it for the ``"python"`` kind with
  `ren.backend.backend_override` to run whole programs (corpus, CKKS) through it.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ren.backend import Allocator, Device, KernelFn
from ren.backend.render_c import SHIM, Dialect, Program, render_program, translation_unit
from ren.errors import DeviceError, KernelCompileError
from ren.kernel import ScheduledKernel

#: flags of the host build (-O1: the emulated kernels are tiny; compile time dominates)
CFLAGS = ("-O1", "-std=c11", "-shared", "-fPIC", "-Wall", "-Werror=implicit-function-declaration",
          "-Wno-unused-function", "-Wno-unused-variable", "-Wno-unused-but-set-variable")

_libs: dict[str, ctypes.CDLL] = {}
_lock = threading.Lock()
#: how many times this process ran the C compiler (tests check that a disk cache hit runs none)
compiler_invocations = 0
_tmpdir: str | None = None


def find_cc() -> str | None:
    """The system C compiler ($CC, else ``cc``), or None if there is none."""
    return shutil.which(os.environ.get("CC", "cc"))


def _workdir() -> str:
    global _tmpdir
    if _tmpdir is None:
        _tmpdir = tempfile.mkdtemp(prefix="ren-c-")
    return _tmpdir


def compile_source(source: str, flags: Sequence[str] = CFLAGS,
                   cache_dir: str | None = None) -> ctypes.CDLL:
    """Compile one C translation unit to a shared library and load it (cached by text and flags
    in-process; also on disk when `cache_dir` is given, so later processes skip the compiler)."""
    cc = find_cc()
    digest = hashlib.sha256("\0".join([source, *flags, str(cc)]).encode()).hexdigest()
    with _lock:
        lib = _libs.get(digest)
        if lib is not None:
            return lib
        if cc is None:
            raise DeviceError("no C compiler found (set $CC or install cc, e.g. apt-get install "
                              "gcc); compiled kernels need one")
        folder = cache_dir or _workdir()
        os.makedirs(folder, exist_ok=True)
        so = os.path.join(folder, digest[:24] + ".so")
        if not os.path.exists(so):
            global compiler_invocations
            compiler_invocations += 1
            # compile under a private name, then rename: a concurrent process never loads a
            # half-written library
            fd, tmp = tempfile.mkstemp(suffix=".so", prefix=".ren-", dir=folder)
            os.close(fd)
            src = tmp[:-3] + ".c"
            with open(src, "w") as f:
                f.write(source)
            res = subprocess.run([cc, *flags, "-o", tmp, src], capture_output=True, text=True)
            if res.returncode != 0:
                raise KernelCompileError(f"the C compiler rejected the rendered kernels "
                                         f"({src}):\n{res.stderr[-8000:]}")
            os.remove(src)
            os.replace(tmp, so)
        lib = ctypes.CDLL(so)
        _libs[digest] = lib
        return lib


def compile_host(programs: Sequence[Program], dialect: Dialect = SHIM,
                 flags: Sequence[str] = CFLAGS, cache_dir: str | None = None,
                 extra: str = "", header: str = "") -> ctypes.CDLL:
    """One library holding every kernel of `programs`, with its host launch wrappers (`header`
    goes before the dialect's prelude, `extra` after the kernels)."""
    if not dialect.host:
        raise DeviceError(f"dialect {dialect.name!r} does not run on the host")
    source = header + translation_unit(list(programs), dialect) + extra
    return compile_source(source, flags, cache_dir)


class HostRunner:
    """A KernelFn running a `Program` through its compiled host wrappers on NumPy arrays."""

    def __init__(self, program: Program, functions: dict[str, Any]):
        self.program = program
        self.launches = []
        for launch in program.launches:
            fn = functions[launch.kernel]
            dims = (ctypes.c_longlong * 6)(*launch.grid, *launch.block)
            self.launches.append((fn, dims, launch.args))
        self.tables = {k: np.ascontiguousarray(v) for k, v in program.tables.items()}

    def __call__(self, bufs: Sequence[np.ndarray]) -> None:
        host = self.program.prepare() if self.program.prepare is not None else {}
        for fn, dims, args in self.launches:
            values = (ctypes.c_void_p * len(args))()
            keep = []
            for i, (kind, v) in enumerate(args):
                if kind == "int":
                    c = ctypes.c_int(int(v))
                    keep.append(c)
                    values[i] = ctypes.addressof(c)
                    continue
                arr = bufs[v] if kind == "slot" else (self.tables if kind == "table" else host)[v]
                if not arr.flags.c_contiguous:
                    raise DeviceError(f"{self.program.name}: argument {kind} {v} is not "
                                      "contiguous")
                values[i] = arr.ctypes.data
            fn(dims, values)


def host_function(lib: ctypes.CDLL, name: str) -> Any:
    """The host launch wrapper ``ren_host_<name>(dims, args)`` of kernel `name` in `lib`."""
    fn = getattr(lib, f"ren_host_{name}")
    fn.argtypes = [ctypes.POINTER(ctypes.c_longlong), ctypes.POINTER(ctypes.c_void_p)]
    fn.restype = None
    return fn


class HostShimDevice(Device):
    """Host memory (any host `Allocator`), kernels rendered in `dialect` and run by the host
    shim.  ``options`` go to the renderer (e.g. ``shared_chunk`` of the NTT)."""

    def __init__(self, name: str, allocator: Allocator, dialect: Dialect = SHIM, **options):
        super().__init__(name, allocator)
        self.dialect = dialect
        self.options = options
        self.functions: dict[str, Any] = {}
        self.compiler_runs = 0

    def render(self, item: ScheduledKernel) -> Program:
        return render_program(item, self.dialect, **self.options)

    def prepare(self, items: Iterable[ScheduledKernel]) -> int:
        """Compile the kernels of every compute item not compiled yet, in one compiler run;
        returns how many new kernels were compiled."""
        fresh = {i.key: i for i in items if i.kind not in ("copy", "view")
                 and not self.is_cached(i)}  # one render per distinct kernel
        programs = [self.render(i) for i in fresh.values()]
        return self._load(programs)

    def _load(self, programs: list[Program]) -> int:
        missing = {k.name for p in programs for k in p.kernels} - set(self.functions)
        if not missing:
            return 0
        todo = [p for p in programs if any(k.name in missing for k in p.kernels)]
        lib = compile_host(todo, self.dialect)
        self.compiler_runs += 1
        for name in missing:
            self.functions[name] = host_function(lib, name)
        return len(missing)

    def build(self, item: ScheduledKernel) -> KernelFn:
        program = self.render(item)
        self._load([program])
        return HostRunner(program, self.functions)


__all__ = ["CFLAGS", "HostRunner", "HostShimDevice", "compile_host", "compile_source", "find_cc",
           "host_function"]
