"""The ``"cuda"`` backend: CuPy arrays, kernels rendered to CUDA C, NVRTC, CUDA streams and graphs.

    pip install -e ".[cuda]"      # cupy-cuda13x and nvidia-cuda-nvrtc

* Devices ``"cuda"`` / ``"cuda:N"`` (GPU N).  Opening one without CuPy, or on a machine with no
  usable GPU, raises DeviceError saying what to install or that no GPU is present.
* Storage (`CudaAllocator`): C-contiguous (rows × cols) uint32 CuPy arrays on the device; arenas
  are flat arrays and views are slices of them (no copy).  Host copies are ``set``/``get`` on
  the device's stream; a copy between two GPUs is a peer copy when the hardware allows it and
  goes through host memory otherwise (`Allocator.peer_copy`).
* Kernels: each compute item is rendered by `ren.backend.render_c` (CUDA dialect) into a
  `Program`; the new kernels of a schedule are compiled together by NVRTC through
  ``cupy.RawModule`` (`CudaDevice.prepare`; modules cached by source text, functions by kernel
  name — a hash of the kernel's text); the call's constant tables are uploaded once per
  compiled kernel;
  launches use the program's (grid, block), which come from the kernel's iteration space, on
  the device's CuPy stream (one non-blocking stream per device: work on a device is ordered).
* Graphs: `CudaDevice.graph` (the device's graph runner, `ren.backend.Device.graph`) captures a
  template's kernel calls as one CUDA graph over staging arrays (`CudaGraphCalls`) and launches
  it per run; eager templates and JIT plans both get theirs there.
* `nvrtc_cubin(source, arch)` compiles CUDA C to a cubin with ``cupy.cuda.nvrtc`` without any
  GPU (the CI check that every rendered kernel compiles for sm_90).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ren.backend import Allocator, Device, GraphRunner, KernelFn
from ren.backend.render_c import CUDA, Program, render_program, translation_unit
from ren.errors import DeviceError, KernelCompileError
from ren.kernel import ScheduledKernel

INSTALL = "pip install -e '.[cuda]' (cupy-cuda13x and nvidia-cuda-nvrtc)"
#: NVRTC options of every module (NVRTC compiles C++; the kernels are extern "C")
NVRTC_OPTIONS = ("-std=c++17",)


def import_cupy() -> Any:
    """CuPy, or DeviceError saying how to install it."""
    try:
        import cupy
    except ImportError as exc:
        raise DeviceError(f"the CUDA backend needs CuPy, which is not installed ({exc}); "
                          f"install it with {INSTALL}, or run on device='python'") from None
    return cupy


def gpu_count() -> int:
    """CUDA GPUs usable by CuPy here (0 without CuPy, a driver or a GPU)."""
    try:
        cupy = import_cupy()
        if not cupy.is_available():
            return 0
        return int(cupy.cuda.runtime.getDeviceCount())
    except DeviceError:
        return 0
    except Exception:  # a driver error means no usable GPU
        return 0


def nvrtc_cubin(source: str, arch: str = "sm_90", name: str = "ren.cu") -> bytes:
    """Compile CUDA C to a cubin for `arch` with NVRTC (no GPU needed).  Raises
    KernelCompileError with NVRTC's log when the source does not compile, DeviceError when
    NVRTC is missing."""
    cupy = import_cupy()
    try:
        from cupy.cuda import nvrtc
        nvrtc.getVersion()
    except Exception as exc:
        raise DeviceError(f"NVRTC is not available ({exc}); install it with {INSTALL}") from None
    del cupy
    prog = nvrtc.createProgram(source, name, [], [])
    try:
        try:
            nvrtc.compileProgram(prog, [f"--gpu-architecture={arch}", *NVRTC_OPTIONS])
        except nvrtc.NVRTCError as exc:
            log = nvrtc.getProgramLog(prog)
            raise KernelCompileError(f"NVRTC could not compile the rendered kernels for {arch} "
                                     f"({exc}):\n{log[-8000:]}") from None
        return nvrtc.getCUBIN(prog)
    finally:
        nvrtc.destroyProgram(prog)


# -- storage -----------------------------------------------------------------------------------
class CudaAllocator(Allocator):
    """Device memory of one GPU: (rows × cols) uint32 CuPy arrays, ordered on `stream`."""

    def __init__(self, cupy: Any, index: int, stream: Any):
        self.cp, self.index, self.stream = cupy, index, stream
        self.cuda_device = cupy.cuda.Device(index)

    def alloc(self, shape: tuple[int, int]) -> Any:
        with self.cuda_device:
            return self.cp.empty(shape, dtype=self.cp.uint32)

    def arena(self, nwords: int) -> Any:
        with self.cuda_device:
            return self.cp.empty(max(int(nwords), 1), dtype=self.cp.uint32)

    def adopt(self, data: Any, shape: tuple[int, int]) -> Any:
        """A CuPy array on this GPU is used as is; a host NumPy array (e.g. the packed words
        `Poly.from_coefficients` attaches) is uploaded."""
        cp = self.cp
        if isinstance(data, np.ndarray) and data.dtype == np.uint32 and \
                data.size == shape[0] * shape[1]:
            arr = self.alloc(shape)
            self.copyin(arr, data.reshape(shape))
            return arr
        if not isinstance(data, cp.ndarray) or data.dtype != cp.uint32 or \
                data.size != shape[0] * shape[1] or data.device.id != self.index:
            raise DeviceError(f"storage {type(data).__name__} does not fit a {shape[0]}x{shape[1]}"
                              f" u32 buffer on cuda:{self.index}; give a uint32 CuPy array of "
                              "that many elements on that GPU (or a uint32 NumPy array)")
        return data.reshape(shape)

    def copyin(self, dst: Any, host: np.ndarray) -> None:
        with self.cuda_device:
            dst.set(np.ascontiguousarray(host, dtype=np.uint32), stream=self.stream)

    def copyout(self, src: Any) -> np.ndarray:
        with self.cuda_device:
            return src.get(stream=self.stream)  # waits for the stream

    def transfer(self, dst: Any, src: Any) -> None:
        with self.cuda_device:
            dst.data.copy_from_device_async(src.data, src.nbytes, stream=self.stream)

    def peer_copy(self, src_allocator: Allocator) -> Any:
        """A device-to-device copy from another CUDA allocator: on the same GPU (another
        device name), or from a peer GPU; None (through host memory) without peer access."""
        if not isinstance(src_allocator, CudaAllocator):
            return None
        other = src_allocator
        if other.index != self.index and \
                not self.cp.cuda.runtime.deviceCanAccessPeer(self.index, other.index):
            return None

        def copy_device(dst: Any, src: Any) -> None:
            other.stream.synchronize()  # the source is complete on its own stream
            with self.cuda_device:
                dst.data.copy_from_device_async(src.data, src.nbytes, stream=self.stream)
            self.stream.synchronize()  # the source device may reuse src right after this

        return copy_device


# -- kernels -----------------------------------------------------------------------------------
class CudaKernel:
    """A KernelFn: a compiled `Program` with its tables on the device."""

    def __init__(self, device: CudaDevice, program: Program):
        self.device, self.program = device, program
        cp = device.cp
        device.load([program])
        with device.allocator.cuda_device:
            self.tables = {k: cp.asarray(np.ascontiguousarray(v)) for k, v in
                           program.tables.items()}
        self.launches = [(device.functions[launch.kernel], launch.grid, launch.block,
                          launch.args) for launch in program.launches]

    @property
    def capturable(self) -> bool:
        """No host step per call (so a CUDA graph can replay it)."""
        return self.program.prepare is None

    def __call__(self, bufs: Sequence[Any]) -> None:
        dev = self.device
        cp = dev.cp
        host = {}
        with dev.allocator.cuda_device, dev.stream:
            if self.program.prepare is not None:
                host = {k: cp.asarray(v) for k, v in self.program.prepare().items()}
            for fn, grid, block, args in self.launches:
                values = tuple(bufs[a[1]] if a[0] == "slot" else self.tables[a[1]]
                               if a[0] == "table" else host[a[1]] if a[0] == "host"
                               else np.int32(a[1]) for a in args)
                fn(grid, block, values)


class CudaDevice(Device):
    """One GPU: CuPy storage, NVRTC-compiled kernels, one stream, CUDA graphs."""

    allocator: CudaAllocator

    def __init__(self, name: str, cupy: Any, index: int):
        self.cp = cupy
        with cupy.cuda.Device(index):
            self.stream = cupy.cuda.Stream(non_blocking=True)
        super().__init__(name, CudaAllocator(cupy, index, self.stream))
        self.index = index
        self.modules: dict[str, Any] = {}  # translation-unit source -> RawModule
        self.functions: dict[str, Any] = {}  # kernel name -> its RawKernel
        self._module_lock = threading.Lock()

    def load(self, programs: Sequence[Program]) -> int:
        """Compile every kernel of `programs` not loaded yet, in one NVRTC run (a module per
        source text, cached); returns how many kernels were new."""
        with self._module_lock:
            missing = {k.name for p in programs for k in p.kernels} - set(self.functions)
            if not missing:
                return 0
            todo = [p for p in programs if any(k.name in missing for k in p.kernels)]
            source = translation_unit(todo, CUDA)
            mod = self.modules.get(source)
            if mod is None:
                with self.allocator.cuda_device:
                    mod = self.cp.RawModule(code=source, options=NVRTC_OPTIONS)
                    try:
                        mod.compile()
                    except self.cp.cuda.compiler.CompileException as exc:
                        names = ", ".join(p.name for p in todo)
                        raise KernelCompileError(f"NVRTC could not compile {names}:\n"
                                                 f"{exc}") from None
                self.modules[source] = mod
            with self.allocator.cuda_device:
                for name in missing:
                    self.functions[name] = mod.get_function(name)
            return len(missing)

    def prepare(self, items: Iterable[ScheduledKernel]) -> int:
        fresh = {i.key: i for i in items if not self.is_cached(i)}  # one render per kernel
        return self.load([render_program(i, CUDA) for i in fresh.values()])

    def build(self, item: ScheduledKernel) -> KernelFn:
        return CudaKernel(self, render_program(item, CUDA))

    def synchronize(self) -> None:
        self.stream.synchronize()

    def graph(self, calls: Sequence[tuple[Any, list[Any]]],
              patches: Sequence[tuple[int, int, int]]) -> CudaGraphCalls | None:
        """The graph runner (see `Device.graph`): a CUDA graph of the calls, or None when
        a call cannot be captured (a kernel with a host step, such as random sampling, or a copy
        that is not a captured kernel)."""
        if any(not getattr(fn, "capturable", False) for fn, _ in calls):
            return None
        return CudaGraphCalls(self, calls, patches)


class CudaGraphCalls(GraphRunner):
    """`Device.graph` on a GPU: the captured calls as one CUDA graph.

    The graph is captured at the first run over *staging* arrays standing in for the per-run
    arrays (a CUDA graph holds fixed addresses).  Each run copies every per-run array into its
    staging array, launches the graph, and copies the staging arrays back (the outputs' values;
    inputs are only read, so copying them back changes nothing).  All on the device's stream."""

    kind = "cuda-graph"

    def __init__(self, device: CudaDevice, calls: Sequence[tuple[Any, list[Any]]],
                 patches: Sequence[tuple[int, int, int]]):
        self.device = device
        self.calls = [(fn, list(args)) for fn, args in calls]
        self.patches = list(patches)
        self.graph: Any = None
        self.staging: list[Any] = []

    def _capture(self, arrays: Sequence[Any]) -> None:
        dev = self.device
        self.staging = [dev.allocator.alloc(tuple(a.shape)) for a in arrays]
        for c, slot, i in self.patches:
            self.calls[c][1][slot] = self.staging[i]
        for fn, args in self.calls:  # warm-up outside capture: modules load, tables upload
            fn(args)
        dev.stream.synchronize()
        dev.stream.begin_capture()
        try:
            for fn, args in self.calls:
                fn(args)
        finally:
            self.graph = dev.stream.end_capture()

    def __call__(self, arrays: Sequence[Any]) -> None:
        dev = self.device
        with dev.allocator.cuda_device, dev.stream:
            if self.graph is None:
                self._capture(arrays)
            for dst, src in zip(self.staging, arrays, strict=True):
                dst[...] = src
            self.graph.launch(stream=dev.stream)
            for src, dst in zip(self.staging, arrays, strict=True):
                dst[...] = src
            dev.stream.synchronize()

    def profile(self, arrays: Sequence[Any]) -> list[float]:
        """Seconds of each call run on its own (synchronized), with `arrays` patched in."""
        import time

        dev = self.device
        calls = [(fn, list(args)) for fn, args in self.calls]
        for c, slot, i in self.patches:
            calls[c][1][slot] = arrays[i]
        out = []
        with dev.allocator.cuda_device, dev.stream:
            for fn, args in calls:
                dev.stream.synchronize()
                t0 = time.perf_counter()
                fn(args)
                dev.stream.synchronize()
                out.append(time.perf_counter() - t0)
        return out


def open_device(name: str) -> CudaDevice:
    cupy = import_cupy()
    index = int(name.split(":", 1)[1]) if ":" in name else 0
    count = gpu_count()
    if count == 0:
        raise DeviceError(f"device {name!r} is not available: no CUDA GPU is present "
                          "(cupy.is_available() is False: no GPU or no driver); run on "
                          "device='python'")
    if index >= count:
        raise DeviceError(f"device {name!r} is not available: this machine has {count} CUDA "
                          f"GPU(s), cuda:0 to cuda:{count - 1}; run on one of those or on "
                          "device='python'")
    return CudaDevice(name, cupy, index)


__all__ = ["INSTALL", "CudaAllocator", "CudaDevice", "CudaGraphCalls", "gpu_count",
           "import_cupy", "nvrtc_cubin", "open_device"]
