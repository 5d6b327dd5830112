"""What the C sampler tests share: every vector path's ring library of this machine, and a call
run with the library's threads set to a count (the device's count restored after)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def ring_paths() -> list[tuple[str, Any]]:
    """(isa, ring library) for each vector path this machine runs (`cpu.available_isas`)."""
    from ren.backend import cpu

    return [(isa, cpu.ring_library(isa)) for isa in cpu.available_isas()]


def on_threads(lib: Any, n: int, fn: Callable[[], Any]) -> Any:
    """`fn()` with ring library `lib` on `n` threads, then back to the device's thread count."""
    from ren.backend import cpu

    lib.ren_set_threads(n)
    try:
        return fn()
    finally:
        lib.ren_set_threads(cpu.threads())
