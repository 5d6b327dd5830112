"""The device registry: a device name -> a `Device` (allocator, compiler, runtime).

    get_device("python")    -> the NumPy host device (`numpy_backend`)
    get_device("python:1")  -> a second host device sharing the host allocator
    get_device("cpu")       -> host memory, kernels compiled by the system C compiler (`cpu`), or
                               DeviceError when there is no compiler
    get_device("cuda")      -> the CuPy device (`cuda`), or DeviceError saying what to install
                               or that no GPU is present

The interface every backend implements (tinygrad's ``Compiled`` device is the model):

* `Allocator` — backend arrays, opaque to the rest of Ren (NumPy arrays for the host):
  ``alloc(shape)`` a (rows × cols) u32 array; ``arena(nwords)`` one flat block for the memory
  plan; ``view(base, offset, shape)`` a sub-array of an arena or base array at an element offset
  (no copy); ``adopt(data, shape)`` check an array handed to `Buffer.attach`; ``copyin(dst,
  host)`` / ``copyout(src)`` move data from / to host NumPy; ``transfer(dst, src)`` a copy
  between two arrays of this allocator (devices that share an allocator copy directly).
* Compiler / renderer — ``Device.compile(item)`` turns a `ScheduledKernel` into a `KernelFn`.
  Kernels are self-describing (`ren.kernel`): a renderer reads the AST and the kernel's
  metadata only.  Compiled kernels are cached per device, keyed by the hash-consed AST and the
  kernel's parameters (a bounded LRU: kernels are pure functions of their AST).
* Runtime — a `KernelFn` runs the kernel on the backend arrays bound to its slots (slot order,
  slot 0 is the output); `copy_fn(dst_device, src_device)` gives the KernelFn of a device copy:
  a same-allocator ``transfer``, an allocator's ``peer_copy`` (e.g. GPU to GPU with peer
  access), or a host-mediated ``copyout`` + ``copyin``.
* Graph runner (optional) — ``Device.graph(calls, patches)`` turns the kernel calls of a
  `ren.replay.Template` (what eager realization and ren.jit both run) into a `GraphRunner`
  that replays them with only the per-run arrays rebound (NumPy: a prebound call list; "cpu":
  compiled call loops; CUDA: a CUDA graph over staging arrays).  None: the backend has none,
  and templates run their ExecUnits one by one.

The registry (`BACKENDS`) maps a device kind to the module implementing it, or to
`Unavailable(reason)`.  A new backend is one module defining ``open_device(name) -> Device``
plus one line in `BACKENDS`.  `ren.device` holds the name -> device table, so that the base
layer (`Buffer.allocate`, `canonical_device`) reaches backends without importing this layer.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ren.device import device_factory, device_kinds, get_device, register_device
from ren.errors import DeviceError, RealizeError
from ren.kernel import ScheduledKernel
from ren.random import RandomSpec
from ren.ring import RingSpec
from ren.sampling import sample

#: A runnable kernel: called with the backend arrays bound to its slots (slot 0 is the output).
KernelFn = Callable[[Sequence[Any]], None]

#: Compiled kernels kept per device (least recently used are dropped first).
KERNEL_CACHE_SIZE = 1024


class Allocator:
    """Storage of one kind of memory.  Subclasses implement every method (see module doc)."""

    def alloc(self, shape: tuple[int, int]) -> Any:
        raise NotImplementedError

    def arena(self, nwords: int) -> Any:
        raise NotImplementedError

    def recycle(self, arena: Any) -> None:
        """`arena` (from `arena`) is dead: the run that used it is over and its buffers are
        detached.  An allocator may keep it for a later `arena` call; this default drops it."""

    def view(self, base: Any, offset: int, shape: tuple[int, int]) -> Any:
        """A (rows × cols) view at an element offset of `base`; this default serves any array
        type with NumPy's reshape and slicing (NumPy, CuPy)."""
        size = shape[0] * shape[1]
        flat = base.reshape(-1)
        if offset < 0 or offset + size > flat.size:
            raise DeviceError(f"a {shape[0]}x{shape[1]} view at offset {offset} does not fit "
                              f"in storage of {flat.size} words")
        return flat[offset : offset + size].reshape(shape)

    def adopt(self, data: Any, shape: tuple[int, int]) -> Any:
        raise NotImplementedError

    def can_adopt(self, data: Any, shape: tuple[int, int]) -> bool:
        """Whether host array `data`, fresh and held by nothing else (a sampler's output), can
        be a buffer's storage as it is (`adopt`) instead of being copied in; this default: no."""
        return False

    def copyin(self, dst: Any, host: np.ndarray) -> None:
        raise NotImplementedError

    def copyout(self, src: Any) -> np.ndarray:
        raise NotImplementedError

    def transfer(self, dst: Any, src: Any) -> None:
        raise NotImplementedError

    def peer_copy(self, src_allocator: Allocator) -> Callable[[Any, Any], None] | None:
        """A direct copy (dst, src) from arrays of `src_allocator` into arrays of this one, or
        None when data must go through host memory (the default)."""
        return None


class GraphRunner:
    """A captured sequence of kernel calls, replayed as a whole (see `Device.graph`).

    ``runner(arrays)`` runs every call with the per-run `arrays` patched into their slots;
    ``runner.profile(arrays)`` does the same but times each call on its own (seconds per call).
    ``kind`` names the runner for plan listings."""

    kind = "graph"

    def __call__(self, arrays: Sequence[Any]) -> None:
        raise NotImplementedError

    def profile(self, arrays: Sequence[Any]) -> list[float]:
        raise NotImplementedError


class Device:
    """One device: its name, its allocator, a compiler (with a cache) and its runtime.

    Subclasses implement `build` (render + compile one kernel); `compile` adds the cache."""

    #: whether this device's RESCALE kernel runs a call's rows of 0 without their buffer
    #: (`ren.kernel.RingCall.zero_rows`: slot 1 holds the other rows).  Pass 5 asks it of the
    #: device in force (`takes_zero_rows`) to store only y under a RESCALE of CONCAT(0, y), and
    #: the backend's kernel checks calls against it (`RingCall.check_rescale`): one fact, here.
    #: Off by default: the renderer of `ren.backend.ring_c` (host shim, CUDA) reads every row.
    rescale_zero_rows: bool = False

    def __init__(self, name: str, allocator: Allocator, cache_size: int = KERNEL_CACHE_SIZE):
        self.name = name
        self.allocator = allocator
        self.cache_size = cache_size
        self._cache: OrderedDict[Any, KernelFn] = OrderedDict()
        self._lock = threading.Lock()  # realizations may run on several threads
        self.compiles = 0  # cache misses (kernels built), for tests and benchmarks
        self.hits = 0

    def build(self, item: ScheduledKernel) -> KernelFn:
        """Render and compile one kernel (no caching)."""
        raise NotImplementedError

    def prepare(self, items: Iterable[ScheduledKernel]) -> int:
        """Called with every compute item of a schedule before they are compiled one by one:
        a compiling backend builds the ones not cached yet in one compiler run.  Returns how
        many kernels it compiled (this default compiles none)."""
        return 0

    def lacks(self, items: Iterable[ScheduledKernel]) -> bool:
        """Whether a cold compile cache lacks kernels of `items` (`ren.replay.lower_and_run`
        asks it of a first chunk, then compiles every chunk's missing kernels at once).  This
        default compiles them now (`prepare`) and says whether it compiled any; a device that
        can tell without compiling (`CpuDevice.lacks`) leaves them to that one batch."""
        return bool(self.prepare(items))

    def is_cached(self, item: ScheduledKernel) -> bool:
        return item.key in self._cache

    def compile(self, item: ScheduledKernel) -> KernelFn:
        """The KernelFn of `item`, compiled once per (AST, parameters) on this device: kernels
        are pure functions of their hash-consed AST, so equal keys share one compiled kernel."""
        key = item.key
        cache = self._cache
        with self._lock:
            fn = cache.get(key)
            if fn is not None:
                cache.move_to_end(key)
                self.hits += 1
                return fn
        fn = self.build(item)
        with self._lock:
            self.compiles += 1
            cache[key] = fn
            if len(cache) > self.cache_size:
                cache.popitem(last=False)
        return fn

    def graph(self, calls: Sequence[tuple[KernelFn, list[Any]]],
              patches: Sequence[tuple[int, int, int]]) -> GraphRunner | None:
        """A runner for `calls` — (kernel, its slot arrays) in order, with None in the slots that
        change from run to run — where ``patches`` lists each such (call, slot, index into the
        per-run arrays).  The default: no graph runner (None)."""
        return None

    def sample(self, spec: RandomSpec, ring: RingSpec) -> np.ndarray:
        """The standard-form residues (L, N) u32 of the RANDOM node `spec` in `ring`, which
        `ren.sampling.sample` defines; a device may compute the same words faster (the "cpu"
        device samples uniform limbs in C, on its threads)."""
        return sample(spec, ring)

    def sample_stored(self, spec: RandomSpec, ring: RingSpec) -> np.ndarray | None:
        """`sample`'s words already in storage form (r·2^32 mod q_i), written by the device's
        own sampler so that realization need not convert them (`ren.realization._draw`); None
        where the device has no such sampler (this default) or declines."""
        return None

    def host_threads(self) -> int:
        """How many host threads the device's kernels run on (this default: the calling
        thread alone).  A cold first call compiles chunk by chunk only where they leave a core
        free (`ren.compile_batches.split_point`)."""
        return 1

    def sampling_threads(self) -> int:
        """How many `sample` calls realization may run side by side for this device (this
        default: one at a time, on the calling thread)."""
        return 1

    def clear_cache(self) -> None:
        self._cache.clear()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


def takes_zero_rows(device: str) -> bool:
    """Whether the device in force for `device` (a name such as ``"cpu"`` or ``"python:1"``,
    whatever backend opens it now: `backend_override`) has `Device.rescale_zero_rows`.  An
    unavailable device (``"cuda"`` without a GPU, ``"cpu"`` without a compiler) does not:
    graphs for it are still scheduled (``ren-inspect``), with the stored CONCAT."""
    try:
        return bool(get_device(device).rescale_zero_rows)
    except DeviceError:
        return False


def zero_rows_devices(devices: Iterable[str]) -> tuple[str, ...]:
    """The sorted names among `devices` that `takes_zero_rows` (the plan cache's key: a plan
    whose RESCALEs read only y never loads where its device reads every row)."""
    return tuple(sorted({d for d in devices if takes_zero_rows(d)}))


def check_backends(items: Iterable[ScheduledKernel]) -> None:
    """RealizeError unless the backends that open the devices of the scheduled kernels `items`
    in this process can run them: a rescale that takes rows of 0 without their buffer
    (`RingCall.zero_rows`) was scheduled where its device's backend has
    `Device.rescale_zero_rows`; a plan pickled there (e.g. under ``backend_override("python",
    cpu)``) and loaded where that device's backend lacks it would otherwise fail deep in its
    kernel's check, with a message about rows of 0 rather than about the backend."""
    for item in items:
        call = item.ring_call
        device = item.bufs[0].device if item.bufs else None
        if call is not None and call.zero_rows and device and not takes_zero_rows(device):
            raise RealizeError(
                f"this plan was scheduled where device {device!r} is opened by a backend whose "
                "rescale takes rows of 0 without their buffer (Device.rescale_zero_rows), and "
                f"here {device!r} is opened by one that does not: load it where {device!r} is "
                "opened as when it was captured (the same backend, or the same "
                "backend_override), or capture it again here")


@dataclass(frozen=True)
class Unavailable:
    """A registry entry for a device kind this build knows by name but cannot run."""

    reason: str

    def __call__(self, name: str) -> Device:
        raise DeviceError(f"device {name!r} is not available: {self.reason}")


#: The registry: device kind -> the module implementing it (``open_device(name)``), or why it is
#: unavailable.  One line per backend.
BACKENDS: dict[str, str | Unavailable] = {
    "python": "ren.backend.numpy_backend",
    "cpu": "ren.backend.cpu",
    "cuda": "ren.backend.cuda",
}


def _loader(module: str) -> Callable[[str], Device]:
    def open_device(name: str) -> Device:
        return importlib.import_module(module).open_device(name)

    return open_device


for _kind, _entry in BACKENDS.items():
    register_device(_kind, _entry if isinstance(_entry, Unavailable) else _loader(_entry))


def copy_fn(dst_device: str, src_device: str) -> KernelFn:
    """The KernelFn of a copy (arrays: destination, source) between two devices: a direct
    transfer when they share an allocator, otherwise through host memory."""
    dst, src = get_device(dst_device).allocator, get_device(src_device).allocator
    direct = dst.transfer if dst is src else dst.peer_copy(src)
    if direct is not None:

        def copy_direct(arrays: Sequence[Any]) -> None:
            direct(arrays[0], arrays[1])

        return copy_direct

    def copy_through_host(arrays: Sequence[Any]) -> None:
        dst.copyin(arrays[0], src.copyout(arrays[1]))

    return copy_through_host


#: called with no argument whenever `backend_override` swaps a backend: caches of compiled work
#: one layer up register here (the eager replay templates: `ren.replay`), so this layer needs to
#: know none of them
_on_backend_change: list[Callable[[], None]] = []


def on_backend_change(fn: Callable[[], None]) -> Callable[[], None]:
    """Register `fn` to run when `backend_override` enters or leaves (returns `fn`)."""
    _on_backend_change.append(fn)
    return fn


@contextlib.contextmanager
def backend_override(kind: str, factory: Callable[[str], Device]) -> Iterator[None]:
    """Inside the block, devices of `kind` are opened by `factory` (e.g. run everything that
    names ``"python"`` — all of `ren.ckks` — through the host C shim or on a GPU, for
    differential tests and benchmarks).  Devices opened before are dropped, and so are captured
    replay templates (their units hold the other backend's kernels: `on_backend_change`), on
    entry and on exit.  Buffers realized outside the block keep arrays of the other backend:
    make inputs inside."""
    previous = device_factory(kind)
    if previous is None:
        raise DeviceError(f"backend_override: no device kind {kind!r} is registered")
    for fn in _on_backend_change:
        fn()
    register_device(kind, factory)
    try:
        yield
    finally:
        for fn in _on_backend_change:
            fn()
        register_device(kind, previous)


__all__ = ["BACKENDS", "Allocator", "Device", "GraphRunner", "KernelFn", "Unavailable",
           "backend_override", "check_backends", "copy_fn", "device_kinds", "get_device",
           "on_backend_change", "takes_zero_rows", "zero_rows_devices"]
