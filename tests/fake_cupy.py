"""A stand-in for the few CuPy APIs `ren.backend.cuda` uses, backed by NumPy and the host shim.

It lets the CPU tests drive the real CUDA backend code — allocator, views, arenas, copies, table
uploads, launches with their (grid, block) and arguments, host steps, stream capture into a
graph and its replay — with every kernel executed by its host-shim build
(`ren.backend.c_host`): a kernel's name is a hash of its dialect-neutral text, so the CUDA and
the shim program of an item name the same functions.  `RawModule` compiles the CUDA source it is
given for the host (the CUDA prelude swapped for the shim's); `FUNCTIONS` maps kernel names to
the compiled host wrappers.
"""

from __future__ import annotations

import ctypes
import re
import types
from collections.abc import Callable

import numpy as np

from ren.backend.c_host import compile_source
from ren.backend.render_c import CUDA_PRELUDE, SHIM_PRELUDE, CKernel, Param, host_wrapper

uint32 = np.uint32
FUNCTIONS: dict[str, Callable] = {}
LAUNCHES: list[tuple[str, tuple, tuple]] = []  # every kernel launch (name, grid, block)
_capture: list[list[Callable[[], None]]] = []


def _submit(op: Callable[[], None]) -> None:
    if _capture:
        _capture[-1].append(op)
    else:
        op()


class _Pointer:
    def __init__(self, arr: ndarray):
        self.arr = arr

    def copy_from_device_async(self, src: _Pointer, nbytes: int, stream=None) -> None:
        dst_bytes = self.arr.reshape(-1).view(np.uint8)
        src_bytes = src.arr.reshape(-1).view(np.uint8)
        _submit(lambda: np.copyto(dst_bytes[:nbytes], src_bytes[:nbytes]))


class ndarray(np.ndarray):
    @property
    def data(self) -> _Pointer:
        return _Pointer(self)

    @property
    def device(self):
        return types.SimpleNamespace(id=0)

    def set(self, arr: np.ndarray, stream=None) -> None:
        np.copyto(self, arr)

    def get(self, stream=None) -> np.ndarray:
        return np.array(self, copy=True).view(np.ndarray)


def empty(shape, dtype=np.uint32) -> ndarray:
    return np.empty(shape, dtype).view(ndarray)


def asarray(a) -> ndarray:
    return np.ascontiguousarray(a).view(ndarray)


def is_available() -> bool:
    return True


class _Context:
    def __init__(self, *args, **kw):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Graph:
    def __init__(self, ops: list[Callable[[], None]]):
        self.ops = ops

    def launch(self, stream=None) -> None:
        for op in self.ops:
            op()


class _Stream(_Context):
    def synchronize(self) -> None:
        pass

    def begin_capture(self, mode=None) -> None:
        _capture.append([])

    def end_capture(self) -> _Graph:
        return _Graph(_capture.pop())


class _Kernel:
    def __init__(self, name: str):
        self.name = name

    def __call__(self, grid, block, args) -> None:
        LAUNCHES.append((self.name, tuple(grid), tuple(block)))
        fn = FUNCTIONS[self.name]
        dims = (ctypes.c_longlong * 6)(*grid, *block)
        values = (ctypes.c_void_p * len(args))()
        keep = []
        for i, a in enumerate(args):
            if isinstance(a, np.ndarray):
                assert isinstance(a, ndarray), f"{self.name}: argument {i} is a host array"
                assert a.flags.c_contiguous
                values[i] = a.ctypes.data
            else:
                assert isinstance(a, np.int32), f"{self.name}: argument {i} is {type(a)}"
                c = ctypes.c_int(int(a))
                keep.append(c)
                values[i] = ctypes.addressof(c)

        def run() -> None:
            fn(dims, values)
            del keep[:0]  # the scalars live as long as the launch

        _submit(run)


_KERNEL_RE = re.compile(r"REN_KERNEL void (\w+)\(([^)]*)\)")


class RawModule:
    """Compiles the CUDA source for the host: the CUDA prelude swapped for the shim's, and host
    wrappers made from the kernels' signatures (phases counted from REN_PHASE markers)."""

    def __init__(self, code: str, options=()):
        self.code = code

    def compile(self) -> None:
        body = self.code.split(CUDA_PRELUDE, 1)[1]
        kernels = []
        for m in _KERNEL_RE.finditer(body):
            name = m.group(1)
            if name in FUNCTIONS:
                continue
            params = tuple(Param(p.rsplit(" ", 1)[1], p.rsplit(" ", 1)[0].strip())
                           for p in (x.replace(" REN_RESTRICT", "").strip()
                                     for x in m.group(2).split(",")))
            end = body.find("REN_KERNEL", m.end())
            phases = max(1, body[m.end(): end if end >= 0 else None].count("REN_PHASE("))
            kernels.append(CKernel(name, "", params, phases))
        if kernels:
            source = SHIM_PRELUDE + body + "".join(host_wrapper(k) for k in kernels)
            lib = compile_source(source)
            for k in kernels:
                fn = getattr(lib, f"ren_host_{k.name}")
                fn.argtypes = [ctypes.POINTER(ctypes.c_longlong),
                               ctypes.POINTER(ctypes.c_void_p)]
                FUNCTIONS[k.name] = fn

    def get_function(self, name: str) -> _Kernel:
        assert f"void {name}(" in self.code
        if name not in FUNCTIONS:
            self.compile()
        return _Kernel(name)


class _Event:
    def record(self, stream=None) -> None:
        pass

    def synchronize(self) -> None:
        pass


class CompileException(Exception):
    pass


cuda = types.SimpleNamespace(
    Device=_Context,
    Stream=_Stream,
    Event=_Event,
    get_elapsed_time=lambda start, end: 1.0,
    runtime=types.SimpleNamespace(getDeviceCount=lambda: 1,
                                  deviceCanAccessPeer=lambda a, b: 0,
                                  getDeviceProperties=lambda i: {"name": b"fake GPU"}),
    compiler=types.SimpleNamespace(CompileException=CompileException),
)
