"""Backends: turn a `ScheduledKernel` into something that runs on a device.

* ``"python"`` — `numpy_backend`: NumPy, vectorised over the whole index space of a kernel.
* ``"cuda"`` — not available in this build (a later issue adds the CUDA renderer and runtime).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ren.device import device_kind
from ren.errors import DeviceError
from ren.kernel import ScheduledKernel

KernelFn = Callable[[list[np.ndarray]], None]


def compile_for(device: str, item: ScheduledKernel) -> KernelFn:
    """A callable that runs `item` on `device`, given the arrays bound to its slots."""
    kind = device_kind(device)
    if kind == "python":
        from ren.backend.numpy_backend import compile_kernel

        return compile_kernel(item)
    raise DeviceError(
        f"no backend can run kernels on device {device!r} in this build; use device='python'"
    )
