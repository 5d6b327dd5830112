"""Rendered kernels on the host: the shim (and plain C) dialects of `ren.backend.render_c`,
compiled by the system C compiler and called through ctypes.

This is how the CUDA renderer's *semantics* are checked without a GPU: the very kernel bodies
NVRTC compiles for the GPU are compiled here under the shim header (thread and block indices as
globals set by a loop over the grid, shared memory as a static array, barrier phases run in
order) and must give the NumPy backend's words exactly.  It is also the starting point of the
compiled-CPU backend (the plain `C` dialect).

* `compile_host(programs, dialect)` — one ``cc`` run for every distinct kernel of the programs
  (a shared library per source text, cached in-process).
* `compiler()` — the C compiler command: ``$CC`` parsed as a command line (``CC='gcc -O0'``),
  or the first of cc, gcc, clang; a `DeviceError` says which compiler was tried and why not.
* `cached_library(source, flags, folder)` — a library's path in a disk cache folder, verified
  against the digest file written beside it after a complete build, rebuilt when it is missing
  or fails verification (a truncated, flipped, emptied or swapped file is never loaded); one
  that cannot be written there is built in the folder a `fallback` names, if any.
* `HostShimDevice` — a `Device` on host memory (the NumPy allocator) whose kernels are rendered,
  compiled and run this way.  `prepare(items)` compiles many kernels in one compiler run;
  `build` compiles whatever is still missing.  Tests open it for the ``"python"`` kind with
  `ren.backend.backend_override` to run whole programs (corpus, CKKS) through it.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import os
import re
import shlex
import shutil
import stat
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ren.backend import Allocator, Device, KernelFn
from ren.backend.render_c import (
    SHIM,
    Dialect,
    Program,
    host_wrapper,
    needs_host_wrapper,
    render_program,
    translation_unit,
)
from ren.errors import DeviceError, KernelCompileError
from ren.kernel import LIGHT_KINDS, ScheduledKernel

#: flags of the host build (-O1: the emulated kernels are tiny; compile time dominates)
CFLAGS = ("-O1", "-std=c11", "-shared", "-fPIC", "-Wall", "-Werror=implicit-function-declaration",
          "-Wno-unused-function", "-Wno-unused-variable", "-Wno-unused-but-set-variable")

_libs: dict[str, ctypes.CDLL] = {}
_lock = threading.Lock()
#: how many times this process ran the C compiler (tests check that a disk cache hit runs none)
compiler_invocations = 0
_tmpdir: str | None = None


#: compilers tried, in order, when $CC is unset or blank
DEFAULT_CCS = ("cc", "gcc", "clang")


def compiler() -> tuple[str, ...]:
    """The C compiler command line: ``$CC`` parsed like a shell would (shlex), its program found
    on PATH, else (``$CC`` unset or blank) the first of `DEFAULT_CCS` on PATH.  A DeviceError
    names the compiler that was tried and why it cannot be used."""
    raw = os.environ.get("CC", "")
    if not raw.strip():
        for name in DEFAULT_CCS:
            path = shutil.which(name)
            if path is not None:
                return (path,)
        raise DeviceError(f"no C compiler found: $CC is not set and none of "
                          f"{', '.join(DEFAULT_CCS)} is on PATH; install one (e.g. apt-get "
                          "install gcc) or set CC to a C compiler command")
    try:
        words = shlex.split(raw)
    except ValueError as e:
        raise DeviceError(f"CC={raw!r} is not a valid command line ({e}); set CC to a compiler "
                          "command such as 'gcc' or 'clang -O2'") from None
    path = shutil.which(words[0])
    if path is None:
        why = "is not an executable file" if os.sep in words[0] else "is not on PATH"
        raise DeviceError(f"CC={raw!r}: the compiler {words[0]!r} {why}; set CC to an installed "
                          f"C compiler (e.g. CC=gcc) or unset it to use the first of "
                          f"{', '.join(DEFAULT_CCS)}")
    return (path, *words[1:])


def find_cc() -> tuple[str, ...] | None:
    """The C compiler command (`compiler()`), or None if there is none."""
    try:
        return compiler()
    except DeviceError:
        return None


def _workdir() -> str:
    global _tmpdir
    if _tmpdir is None:
        _tmpdir = tempfile.mkdtemp(prefix="ren-c-")
    return _tmpdir


#: what to do about a compiler that cannot build libraries (ends those errors' messages)
CC_HINT = "; set CC to a working C compiler (e.g. CC=gcc)"
#: first bytes of a shared library this platform can load
_MAGICS = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe")  # ELF, Mach-O 64/32
#: names of build folders and stamp files being written (never loaded; swept when stale)
TEMP_PREFIX = ".ren-"


def _not_a_library(path: str) -> str | None:
    """Why the file a compiler wrote at `path` is not a shared library, or None."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except FileNotFoundError:
        return "wrote no file at the -o path"
    except OSError as e:
        return f"wrote output that cannot be read ({e})"
    if not head:
        return "wrote an empty file"
    if not head.startswith(_MAGICS):
        return f"wrote a file that is not a shared library (it starts with {head!r})"
    return None


#: a function a compiler message is about (GCC/Clang: "In function 'f'") or a definition's name
_IN_FUNCTION = re.compile(r"[Ii]n function [\u2018'`\"]([A-Za-z_]\w*)")
_ERROR_LINE = re.compile(r"kernels\.c:(\d+):(?:\d+:)? (?:fatal )?error")
_DEFINITION = re.compile(
    r"^(?:REN_KERNEL|REN_ROW|REN_FN|static|void|int|u32)\b.*?\b([A-Za-z_]\w*)\s*\(")


def _kernel_of(function: str) -> str:
    """The kernel a generated function belongs to: ``ren_ew_<hash>`` for its row function,
    launch and host wrappers (``..._row``, ``ren_cpu_...``, ``ren_host_...``), else itself."""
    m = re.search(r"ren_ew_[0-9a-f]{16}", function)
    return m.group(0) if m else function.removeprefix("ren_host_").removeprefix("ren_cpu_")


def failing_kernels(log: str, source: str) -> list[str]:
    """The kernels a failed compile's messages are about, in order: the functions its
    "In function" lines name, else the function defined above each error's line in `source`."""
    names = [_kernel_of(f) for f in _IN_FUNCTION.findall(log)]
    if not names:
        lines = source.splitlines()
        for m in _ERROR_LINE.finditer(log):
            for text in reversed(lines[:int(m.group(1))]):
                d = _DEFINITION.match(text)
                if d is not None:
                    names.append(_kernel_of(d.group(1)))
                    break
    return list(dict.fromkeys(names))


def _file_digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def build_library(cc: Sequence[str], source: str, flags: Sequence[str], dest: str) -> str:
    """Compile `source` with `cc` and `flags` into the shared library `dest`; returns the new
    file's sha256.  The compiler works in a private folder beside `dest` that is removed on
    every path out, and `dest` is replaced (atomically, by a rename) only by a complete library:
    the compiler exited 0 and wrote a non-empty file with a library's header.  Mode 0755, so
    other users of a shared cache folder can load it."""
    command = shlex.join(cc)
    with tempfile.TemporaryDirectory(prefix=TEMP_PREFIX + "build-",
                                     dir=os.path.dirname(dest) or None) as tmp:
        src, out = os.path.join(tmp, "kernels.c"), os.path.join(tmp, "kernels.so")
        with open(src, "w") as f:
            f.write(source)
        try:
            res = subprocess.run([*cc, *flags, "-o", out, src], capture_output=True, text=True)
        except OSError as e:
            raise DeviceError(f"the C compiler {command} could not be run ({e}){CC_HINT}") from None
        if res.returncode != 0:
            log = (res.stderr or res.stdout).strip()
            names = failing_kernels(log, source)
            where = f"in kernel {', '.join(names)} " if names else ""
            raise KernelCompileError(f"the C compiler {command} failed (exit status "
                                     f"{res.returncode}) {where}" + (
                                         f"on the rendered kernels:\n{log[-8000:]}" if log
                                         else "and printed nothing"))
        problem = _not_a_library(out)
        if problem is not None:
            raise KernelCompileError(f"the C compiler {command} exited 0 but {problem}{CC_HINT}")
        os.chmod(out, 0o755)  # not the compiler's mode (0711 from a mkstemp file)
        digest = _file_digest(out)
        os.replace(out, dest)
    return digest


def _stamp_text(key: str, digest: str) -> str:
    return f"ren-library 1 {key} {digest}\n"


def _stamp_fields(stamp: str) -> list[str] | None:
    """[key, sha256] of a library stamp ('ren-library 1 <key> <sha256>'), None if unreadable."""
    try:
        with open(stamp) as f:
            parts = f.read().split()
    except (OSError, UnicodeDecodeError):
        return None
    return parts[2:] if len(parts) == 4 and parts[:2] == ["ren-library", "1"] else None


def _verified(so: str, stamp: str, key: str) -> bool:
    """Whether `so` is the complete library built for `key`: its stamp names `key` and the
    file's sha256 (so a file truncated, flipped, emptied or swapped for another library — with
    or without its stamp — fails)."""
    fields = _stamp_fields(stamp)
    if fields is None or fields[0] != key:
        return False
    try:
        return _file_digest(so) == fields[1]
    except OSError:
        return False


def library_key(so: str) -> str | None:
    """The cache key a cached library's stamp names (None without a readable stamp)."""
    fields = _stamp_fields(so[:-3] + ".sha256")
    return fields[0] if fields is not None else None


def library_verifies(so: str, key: str) -> bool:
    """Whether the cached library `so` is the complete one built for `key` (`_verified`)."""
    return _verified(so, so[:-3] + ".sha256", key)


def write_atomically(path: str, data: str | bytes, folder: str, mode: int = 0o644) -> None:
    """Write `path` whole or not at all: a temporary file in `folder` (same file system; its
    name starts with TEMP_PREFIX, so a killed process's leftover is swept), renamed over `path`.
    A failure removes the temporary file and raises the OSError."""
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX + "write-", dir=folder)
    try:
        with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def cached_library(source: str, flags: Sequence[str], folder: str,
                   fallback: Callable[[str, OSError], str | None] | None = None) -> str:
    """The path of the shared library of `source` (with `flags` and this `compiler()`) in the
    cache `folder`: loaded as is only when it verifies against the stamp written beside it
    after its build (``<key>.sha256``), otherwise built again (see `build_library`).

    When the library cannot be written into `folder` (something other than a file where it or
    its stamp goes, the folder read-only or full), `fallback(folder, error)` names another
    folder to build it in (`ren.backend.cpu_cache` gives a private one); without one, or when it
    returns None, that is a DeviceError."""
    cc = compiler()
    key = hashlib.sha256("\0".join([source, *flags, *cc]).encode()).hexdigest()
    so = os.path.join(folder, key[:24] + ".so")
    stamp = so[:-3] + ".sha256"
    if _verified(so, stamp, key):
        return so
    global compiler_invocations
    try:
        # what would make the build fail, found before the compiler runs
        blocked = _not_a_file(so) or _not_a_file(stamp)
        if blocked is not None:  # (it would fail at the rename)
            raise blocked
        os.makedirs(folder, exist_ok=True)
        if not os.access(folder, os.W_OK | os.X_OK):
            raise PermissionError(errno.EACCES, "the folder cannot be written", folder)
        compiler_invocations += 1
        digest = build_library(cc, source, flags, so)
        # the stamp goes in last, by a rename: a stamp always names a library that was complete
        write_atomically(stamp, _stamp_text(key, digest), folder)
    except OSError as e:
        other = fallback(folder, e) if fallback is not None else None
        if other is not None and other != folder:
            return cached_library(source, flags, other)
        raise DeviceError(f"a compiled library cannot be written to the cache folder {folder} "
                          f"({type(e).__name__}: {e}); free space there or set REN_CACHE_DIR to "
                          "a writable folder") from None
    return so


def _not_a_file(path: str) -> OSError | None:
    """The error a rename over `path` would meet when something other than a file (a folder,
    a socket) is there, else None."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
        return None
    if stat.S_ISDIR(mode):
        return IsADirectoryError(errno.EISDIR, "a folder is where the file goes", path)
    return FileExistsError(errno.EEXIST, "something other than a file is where it goes", path)


def open_library(path: str) -> ctypes.CDLL:
    """dlopen a library `cached_library` verified or built; one that still does not load is a
    KernelCompileError (its files are removed so the next attempt builds it again)."""
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        for p in (path, path[:-3] + ".sha256"):
            with contextlib.suppress(OSError):
                os.remove(p)
        raise KernelCompileError(f"the library {path} built by {shlex.join(compiler())} does "
                                 f"not load ({e}); check that CC is a C compiler for this "
                                 "machine") from None


def compile_source(source: str, flags: Sequence[str] = CFLAGS,
                   cache_dir: str | None = None) -> ctypes.CDLL:
    """Compile one C translation unit to a shared library and load it (cached by text and flags
    in-process; also on disk when `cache_dir` is given, so later processes skip the compiler)."""
    cc = compiler()
    digest = hashlib.sha256("\0".join([source, *flags, *cc]).encode()).hexdigest()
    with _lock:
        lib = _libs.get(digest)
        if lib is not None:
            return lib
        folder = cache_dir or _workdir()
        os.makedirs(folder, exist_ok=True)
        lib = open_library(cached_library(source, flags, folder))
        _libs[digest] = lib
        return lib


def compile_host(programs: Sequence[Program], dialect: Dialect = SHIM,
                 flags: Sequence[str] = CFLAGS, cache_dir: str | None = None,
                 extra: str = "", header: str = "") -> ctypes.CDLL:
    """One library holding every kernel of `programs`, with its host launch wrappers (`header`
    goes before the dialect's prelude, `extra` after the kernels)."""
    if not dialect.host:
        raise DeviceError(f"dialect {dialect.name!r} does not run on the host")
    # every kernel here is run through its ren_host_ wrapper, also those a loop dialect's
    # translation unit leaves to the "cpu" device's own entry points
    kernels = {k.name: k for p in programs for k in p.kernels}
    wrappers = "".join(host_wrapper(k) for k in kernels.values()
                       if not needs_host_wrapper(k, dialect))
    source = header + translation_unit(list(programs), dialect) + wrappers + extra
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
            for i, arg in enumerate(args):
                if arg[0] == "int":
                    c = ctypes.c_int(int(arg[1]))
                    keep.append(c)
                    values[i] = ctypes.addressof(c)
                    continue
                if arg[0] == "slot":
                    arr = bufs[arg[1]]
                else:
                    arr = (self.tables if arg[0] == "table" else host)[arg[1]]
                if not arr.flags.c_contiguous:
                    raise DeviceError(f"{self.program.name}: argument {arg[0]} {arg[1]} is not "
                                      "contiguous")
                values[i] = arr.ctypes.data
            fn(dims, values)


def host_function(lib: ctypes.CDLL, name: str) -> Any:
    """The host launch wrapper ``ren_host_<name>(dims, args)`` of kernel `name` in `lib`."""
    fn = lib[f"ren_host_{name}"]  # not getattr: that caches fn in lib, a cycle keeping it loaded
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
        fresh = {i.key: i for i in items if i.kind not in LIGHT_KINDS
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


__all__ = ["CFLAGS", "DEFAULT_CCS", "HostRunner", "HostShimDevice", "build_library",
           "cached_library", "compile_host", "compile_source", "compiler", "failing_kernels",
           "find_cc", "host_function", "library_key", "library_verifies", "open_library",
           "write_atomically"]
