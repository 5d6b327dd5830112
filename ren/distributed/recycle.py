"""Receive buffers a client reuses: a result's storage without fresh page faults.

A result read out of a worker's pool slot (`ren.distributed.shmslots.read_slot`) needs a
buffer of the client's own, which becomes the decoded Poly's storage.  A fresh 1.84 MB
buffer (an N = 2^14 result) is ~450 pages that the kernel faults in and zeroes one by one:
~0.6 ms of the client's CPU against ~0.08 ms for the copy itself (measured on the 2-core test
machine; glibc returns the freed buffers of the receiving thread's arena to the kernel, so a
later job faulted again: ~200 faults per result).  `take` hands out a buffer whose pages a
result that is gone already used, and gets it back when the last view of it goes (the user
dropped the result); at most `KEEP_BYTES` of such free buffers are kept per process, the rest
is freed as usual.

The buffer handed out is an array over a memoryview of the kept block: NumPy makes every view
of it (and every memoryview of those) refer to that array, not to the block, so the array
lives exactly as long as anything reads the block, and only then does the block come back.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

#: free receive buffers a process keeps, in bytes (the rest goes back to the allocator)
KEEP_BYTES = 128 << 20

_lock = threading.RLock()  # (a finalizer may run on this thread while `take` holds it)
_free: dict[int, list[np.ndarray]] = {}
_held = 0
#: buffers handed out that reused a kept block, and that were allocated anew (for tests)
counts = {"reused": 0, "new": 0}


def take(size: int) -> np.ndarray:
    """A writable uint8 array of `size` bytes (its contents undefined), a kept block when
    one of that size is free."""
    global _held
    block = None
    with _lock:
        blocks = _free.get(size)
        if blocks:
            block = blocks.pop()
            _held -= size
    counts["reused" if block is not None else "new"] += 1
    if block is None:
        block = np.empty(size, np.uint8)
    out = np.frombuffer(memoryview(block.data), np.uint8)
    weakref.finalize(out, _give_back, block)
    return out


def _give_back(block: np.ndarray) -> None:
    global _held
    with _lock:
        if _held + block.nbytes <= KEEP_BYTES:
            _free.setdefault(block.nbytes, []).append(block)
            _held += block.nbytes


def held() -> int:
    """Bytes of free buffers kept now."""
    return _held


def clear() -> None:
    """Forget every kept buffer (they go back to the allocator)."""
    global _held
    with _lock:
        _free.clear()
        _held = 0


__all__ = ["KEEP_BYTES", "clear", "counts", "held", "take"]
