"""Device names, the device table, and `Buffer`, the unit of storage.

Devices are strings ``"kind"`` or ``"kind:index"``: ``"python"`` (NumPy on the host;
``"python:1"``, ``"python:2"``, … are further host devices, handy for testing copies) and
``"cuda"`` / ``"cuda:N"``.  The kinds are whatever the device table holds: `ren.backend` (the
registry, one line per backend) fills it with `register_device`, and `get_device` turns a name
into the backend's device object (its allocator, compiler and runtime; the interface is
documented in `ren.backend`).  This module only holds the table, so the base layer can name
devices and allocate buffers without importing the engine.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ren.errors import DeviceError

_DEVICE_RE = re.compile(r"^(?P<kind>[a-z]+)(?::(?P<index>\d+))?$")

#: kind -> factory(canonical name) -> device object; filled by `ren.backend`
_FACTORIES: dict[str, Callable[[str], Any]] = {}
#: canonical name -> device object, made on first use
_OPEN: dict[str, Any] = {}
#: device name as given -> its canonical name, for the kinds registered now (cleared when they
#: change): every Buffer checks its device, and a bootstrapping's capture makes ~7,000 of them
_CANONICAL: dict[str, str] = {}
_lock = threading.Lock()


def register_device(kind: str, factory: Callable[[str], Any]) -> None:
    """Make `kind` a device kind: `factory(name)` returns the device object for ``name``
    (``"kind"`` or ``"kind:N"``), or raises DeviceError saying why it is unavailable."""
    if not _DEVICE_RE.match(kind) or ":" in kind:
        raise DeviceError(f"device kind must be lowercase letters, got {kind!r}")
    with _lock:
        _FACTORIES[kind] = factory
        _CANONICAL.clear()
        for name in [n for n in _OPEN if device_kind(n) == kind]:
            del _OPEN[name]


def device_factory(kind: str) -> Callable[[str], Any] | None:
    """The factory registered for `kind` (None if the kind is unknown)."""
    return _FACTORIES.get(kind)


def unregister_device(kind: str) -> None:
    """Forget a device kind (for tests that register a temporary backend)."""
    with _lock:
        _FACTORIES.pop(kind, None)
        _CANONICAL.clear()
        for name in [n for n in _OPEN if device_kind(n) == kind]:
            del _OPEN[name]


def device_kinds() -> tuple[str, ...]:
    """The registered device kinds, e.g. ``("python", "cuda")``."""
    return tuple(_FACTORIES)


def canonical_device(device: str) -> str:
    """Normalise a device name: ``"PYTHON"`` and ``"python:0"`` -> ``"python"``."""
    known = _CANONICAL.get(device) if type(device) is str else None
    if known is not None:
        return known
    if not isinstance(device, str):
        raise DeviceError(f"device must be a string such as 'python', got {device!r}")
    m = _DEVICE_RE.match(device.strip().lower())
    if not m or m.group("kind") not in _FACTORIES:
        known = ", ".join(_FACTORIES) or "none (import ren to register the backends)"
        raise DeviceError(
            f"unknown device {device!r}; known devices are {known} "
            "(optionally with an index, e.g. 'python:1' or 'cuda:0')"
        )
    index = int(m.group("index") or 0)
    name = m.group("kind") if index == 0 else f"{m.group('kind')}:{index}"
    if len(_CANONICAL) < 1024:  # (bounded: names are few, but any string can be asked)
        _CANONICAL[device] = name
    return name


def device_kind(device: str) -> str:
    """The backend of a device: ``"python:1"`` -> ``"python"``."""
    return device.split(":", 1)[0]


def get_device(device: str) -> Any:
    """The device object of a device name (see `ren.backend.Device`).  Raises DeviceError for an
    unknown name, or one whose backend is not available in this build."""
    dev = _OPEN.get(device)
    if dev is not None:
        return dev
    name = canonical_device(device)
    with _lock:
        dev = _OPEN.get(name)
        if dev is None:
            dev = _FACTORIES[device_kind(name)](name)
            _OPEN[name] = dev
    return dev


def in_host_memory(device: str) -> bool:
    """Whether `device` is available here and keeps its storage in host memory (as "python"
    and "cpu" do: one allocator), so a kernel of it can read a host array where it lies."""
    try:
        return get_device(device).allocator is get_device("python").allocator
    except DeviceError:
        return False


_buffer_ids = itertools.count()


class Buffer:
    """A (rows × cols) array of u32 on one device.

    A buffer is either a *base* (owns or will own its storage) or a *view* of a base at an
    element offset.  Storage is attached when the buffer is allocated — by the memory plan
    (inside an arena) or on its own.  Identity matters: BUFFER nodes are hashed by the Buffer
    object, so two buffers never merge.
    """

    __slots__ = ("__weakref__", "_data", "again_of", "base", "device", "no_opt", "offset",
                 "shape", "uid")

    def __init__(self, device: str, shape: tuple[int, int], *, base: Buffer | None = None,
                 offset: int = 0, no_opt: bool = False):
        self.device = canonical_device(device)
        self.shape = (int(shape[0]), int(shape[1]))
        self.base = base
        self.offset = int(offset)  # in elements, for views
        self.no_opt = no_opt  # never placed in a shared arena
        self.uid = next(_buffer_ids)
        self._data: Any = None  # a backend array once allocated
        #: the buffer whose value this one holds again (`ren.schedule.linearize` computes a
        #: cheap value a second time rather than keep it): pictures and reports name it so
        self.again_of: Buffer | None = None

    def fresh_like(self) -> Buffer:
        """A new, unallocated base buffer with this one's device, shape and no_opt flag (no
        re-validation: they are canonical already; replays make one per output and run)."""
        b = Buffer.__new__(Buffer)
        b.device, b.shape, b.base, b.offset, b.no_opt = self.device, self.shape, None, 0, \
            self.no_opt
        b.uid = next(_buffer_ids)
        b._data = None
        b.again_of = None
        return b

    @property
    def size(self) -> int:
        """Number of u32 elements."""
        return self.shape[0] * self.shape[1]

    @property
    def nbytes(self) -> int:
        return 4 * self.size

    @property
    def root(self) -> Buffer:
        """The base buffer whose storage this buffer names (itself unless it is a view)."""
        b = self
        while b.base is not None:
            b = b.base
        return b

    @property
    def is_allocated(self) -> bool:
        if self.base is not None:
            return self.base.is_allocated
        return self._data is not None

    @property
    def allocator(self) -> Any:
        """The allocator of this buffer's device (raises DeviceError if it is unavailable)."""
        return get_device(self.device).allocator

    def attach(self, data: Any) -> None:
        """Use `data` (a backend array of exactly this buffer's size, e.g. a sub-view of an
        arena) as storage."""
        if self.base is not None:
            raise DeviceError("cannot attach storage to a view; attach it to the base buffer")
        self._data = self.allocator.adopt(data, self.shape)

    def allocate(self) -> Buffer:
        """Give the buffer its own storage if it has none (views allocate their base)."""
        if self.base is not None:
            self.base.allocate()
        elif self._data is None:
            self._data = self.allocator.alloc(self.shape)
        return self

    def array(self) -> Any:
        """The storage as a (rows × cols) backend array (a NumPy array on host devices; a view
        into the base's storage for view buffers)."""
        if self.base is not None:
            return self.allocator.view(self.base.array(), self.offset, self.shape)
        if self._data is None:
            raise DeviceError(f"{self} has no storage yet (it was never allocated or realized)")
        return self._data

    def copyin(self, host: np.ndarray) -> Buffer:
        """Allocate if needed and copy a host (rows × cols) u32 array into the storage."""
        host = np.asarray(host)
        if host.dtype != np.uint32 or host.shape != self.shape:
            raise DeviceError(f"copyin: a {host.dtype}{list(host.shape)} array does not fit "
                              f"{self}; give a uint32 array of shape {self.shape}")
        self.allocate()
        self.allocator.copyin(self.array(), host)
        return self

    def copyout(self) -> np.ndarray:
        """A host copy of the storage: a (rows × cols) u32 NumPy array."""
        return self.allocator.copyout(self.array())

    def release(self) -> None:
        """Drop the storage (the buffer can be allocated again)."""
        self._data = None

    def __repr__(self) -> str:
        view = f" view of #{self.base.uid}+{self.offset}" if self.base is not None else ""
        return f"<Buffer #{self.uid} {self.device} {self.shape[0]}x{self.shape[1]}{view}>"
