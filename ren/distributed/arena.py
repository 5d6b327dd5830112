"""Where a client copies the frames of the results it receives (`Arena`): fresh memory in
transparent huge pages, for `ren.distributed.shmfiles`' pool slots."""

from __future__ import annotations

import threading

import numpy as np

from ren.backend.malloc import advise_huge_pages

#: frames start at multiples of this (cache-line aligned words; as in a segment)
ALIGN = 64
#: bytes of each piece of memory a client copies received results into (`Arena`)
ARENA_CHUNK = 32 << 20


class Arena:
    """Where a client copies the frames of received results: consecutive pieces of chunks of
    `ARENA_CHUNK` bytes, each advised into transparent huge pages before its first touch
    (`ren.backend.malloc.advise_huge_pages`).  A result's frames become its Polys' storage, so
    they are new memory for every result a caller keeps: in 4 KiB pages an N = 2^14 result
    (1.84 MB) faulted in ~450 pages, ~1 ms of the client's CPU on a VM (measured: 1.0 against
    0.24 ms per 2 MB in huge pages).  A chunk is freed when the last array in it goes: a caller
    that keeps one result of a batch keeps its chunk (at most `ARENA_CHUNK` bytes)."""

    def __init__(self, chunk: int = ARENA_CHUNK) -> None:
        self.chunk_bytes = chunk
        self.lock = threading.Lock()
        self.chunk: np.ndarray | None = None
        self.used = 0

    def take(self, size: int) -> np.ndarray:
        """`size` fresh bytes (uninitialized), `ALIGN`-aligned."""
        step = -(-size // ALIGN) * ALIGN
        if step > self.chunk_bytes // 2:  # large: a chunk of its own
            out = np.empty(step + ALIGN, np.uint8)
            advise_huge_pages(out)
            at = -out.ctypes.data % ALIGN
            return out[at:at + size]
        with self.lock:
            if self.chunk is None or self.used + step > self.chunk.nbytes:
                self.chunk = np.empty(self.chunk_bytes + ALIGN, np.uint8)
                advise_huge_pages(self.chunk)
                self.used = -self.chunk.ctypes.data % ALIGN
            out = self.chunk[self.used:self.used + size]
            self.used += step
            return out


#: the arena of results this process receives (a client)
results_arena = Arena()


__all__ = ["ALIGN", "ARENA_CHUNK", "Arena", "results_arena"]
