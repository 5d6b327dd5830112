"""Device names and `Buffer`, the unit of storage.

Devices are strings: ``"python"`` (NumPy on the host; ``"python:1"``, ``"python:2"``, … are
further host devices, handy for testing copies) and ``"cuda"`` / ``"cuda:N"``.
"""

from __future__ import annotations

import itertools
import re

import numpy as np

from ren.errors import DeviceError

BACKENDS = ("python", "cuda")
_DEVICE_RE = re.compile(r"^(?P<kind>[a-z]+)(?::(?P<index>\d+))?$")


def canonical_device(device: str) -> str:
    """Normalise a device name: ``"PYTHON"`` and ``"python:0"`` -> ``"python"``."""
    if not isinstance(device, str):
        raise DeviceError(f"device must be a string such as 'python', got {device!r}")
    m = _DEVICE_RE.match(device.strip().lower())
    if not m or m.group("kind") not in BACKENDS:
        raise DeviceError(
            f"unknown device {device!r}; known devices are {', '.join(BACKENDS)} "
            "(optionally with an index, e.g. 'python:1' or 'cuda:0')"
        )
    index = int(m.group("index") or 0)
    return m.group("kind") if index == 0 else f"{m.group('kind')}:{index}"


def device_kind(device: str) -> str:
    """The backend of a device: ``"python:1"`` -> ``"python"``."""
    return device.split(":", 1)[0]


_buffer_ids = itertools.count()


class Buffer:
    """A (rows × cols) array of u32 on one device.

    A buffer is either a *base* (owns or will own its storage) or a *view* of a base at an
    element offset.  Storage is attached when the buffer is allocated — by the memory plan
    (inside an arena) or on its own.  Identity matters: BUFFER nodes are hashed by the Buffer
    object, so two buffers never merge.
    """

    __slots__ = ("__weakref__", "_data", "base", "device", "no_opt", "offset", "shape", "uid")

    def __init__(self, device: str, shape: tuple[int, int], *, base: Buffer | None = None,
                 offset: int = 0, no_opt: bool = False):
        self.device = canonical_device(device)
        self.shape = (int(shape[0]), int(shape[1]))
        self.base = base
        self.offset = int(offset)  # in elements, for views
        self.no_opt = no_opt  # never placed in a shared arena
        self.uid = next(_buffer_ids)
        self._data: np.ndarray | None = None

    @property
    def size(self) -> int:
        """Number of u32 elements."""
        return self.shape[0] * self.shape[1]

    @property
    def nbytes(self) -> int:
        return 4 * self.size

    @property
    def is_allocated(self) -> bool:
        if self.base is not None:
            return self.base.is_allocated
        return self._data is not None

    def attach(self, data: np.ndarray) -> None:
        """Use `data` (a u32 array of exactly this buffer's size) as storage."""
        if self.base is not None:
            raise DeviceError("cannot attach storage to a view; attach it to the base buffer")
        if data.dtype != np.uint32 or data.size != self.size:
            raise DeviceError(f"storage of {data.dtype}[{data.size}] does not fit buffer {self}")
        self._data = data.reshape(self.shape)

    def allocate(self) -> Buffer:
        """Give the buffer its own storage if it has none (views allocate their base)."""
        if self.base is not None:
            self.base.allocate()
        elif self._data is None:
            if device_kind(self.device) != "python":
                raise DeviceError(
                    f"no allocator for device {self.device!r} in this build (the CUDA backend is "
                    "not available); keep the computation on 'python'"
                )
            self._data = np.empty(self.shape, dtype=np.uint32)
        return self

    def array(self) -> np.ndarray:
        """The storage as a (rows × cols) u32 array (a view for view buffers)."""
        if self.base is not None:
            flat = self.base.array().reshape(-1)
            return flat[self.offset : self.offset + self.size].reshape(self.shape)
        if self._data is None:
            raise DeviceError(f"{self} has no storage yet (it was never allocated or realized)")
        return self._data

    def release(self) -> None:
        """Drop the storage (the buffer can be allocated again)."""
        self._data = None

    def __repr__(self) -> str:
        view = f" view of #{self.base.uid}+{self.offset}" if self.base is not None else ""
        return f"<Buffer #{self.uid} {self.device} {self.shape[0]}x{self.shape[1]}{view}>"
