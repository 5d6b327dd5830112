"""glibc's malloc thresholds for a process that runs Ren's host devices (`tune_allocator`).

glibc hands out a buffer above its mmap threshold (128 kB at first) as a fresh mapping and gives
freed heap memory back to the system above its trim threshold.  Its adaptive rule raises both
after the first large free, but the "python" device's NumPy temporaries (limb arrays of 64 kB to
a few MB) still went back and forth: an N = 2^14 CKKS multiply replay on "python" page-faulted
about 27,000 times (108 MB, a quarter of its time in the kernel) on every call.  Setting
``MALLOC_TRIM_THRESHOLD_`` (Dask's nanny sets 65536 for its workers) switches the adaptive rule
off and makes it worse: 153,000 faults and 2.7x the time.

`tune_allocator` raises the mmap threshold to 32 MiB (glibc's largest) and the trim threshold to
256 MiB: a process keeps up to that much freed heap for its next buffers.  The host devices call
it when they open; ``REN_MALLOC_TUNE=0`` leaves the allocator as it is.

`advise_huge_pages` asks Linux for transparent huge pages over a large host array before its
first touch (a first run's arena: `ren.replay` faults it in).  `AheadFault` faults a new array in
on a thread of its own, before anything uses it (a jitted function's arena while the function is
traced: `ren.arena_ahead.fault_ahead`).
"""

from __future__ import annotations

import ctypes
import sys
import threading
from typing import Any

import numpy as np

from ren import settings

#: glibc's mallopt parameters
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD_BYTES = 32 << 20  # glibc's largest
TRIM_THRESHOLD_BYTES = 256 << 20

_lock = threading.Lock()
_tuned: bool | None = None  # None: not tried yet in this process


def tune_allocator() -> bool:
    """Raise glibc's mmap and trim thresholds in this process (module doc), once; False where
    there is nothing to tune (not glibc) or ``REN_MALLOC_TUNE=0``.  Returns whether the
    allocator is tuned."""
    global _tuned
    with _lock:
        if _tuned is None:
            if not settings.get("REN_MALLOC_TUNE"):
                return False  # asked again later: the switch may have been turned on
            _tuned = False
            if sys.platform.startswith("linux"):
                try:
                    libc = ctypes.CDLL("libc.so.6")
                    _tuned = bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and \
                        bool(libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
                except (OSError, AttributeError):
                    pass  # not glibc (musl, say): nothing to tune
        return _tuned


def allocator_tuned() -> bool:
    """Whether `tune_allocator` tuned this process's allocator."""
    return bool(_tuned)


__all__ = ["HUGE_PAGE", "MMAP_THRESHOLD_BYTES", "M_MMAP_THRESHOLD", "M_TRIM_THRESHOLD",
           "TOUCH_STEP", "TRIM_THRESHOLD_BYTES", "AheadFault", "advise_huge_pages",
           "allocator_tuned", "release_pages", "tune_allocator"]


#: the transparent huge page size of x86-64 and most aarch64 Linux kernels
HUGE_PAGE = 2 << 20
#: Linux's MADV_HUGEPAGE
_MADV_HUGEPAGE = 14
_madvise: Any = None  # libc's madvise, looked up once (False where there is none)


def advise_huge_pages(array: np.ndarray) -> bool:
    """Ask Linux to back the whole 2 MiB pages inside a host array with transparent huge pages
    (madvise MADV_HUGEPAGE; honoured when THP is "always" or "madvise"), before its first touch:
    one fault per 2 MiB instead of 512.  A first run faults in its arena, which is new memory:
    1.5 GB took 4.7 s in 4 KiB pages on a VM whose host backs each page on first touch, 0.19 s
    in huge pages (the N = 2^16 bootstrapping's arena is that size).  Contents are unchanged;
    returns whether the advice was given (False off Linux, for arrays under two huge pages, or
    where the kernel refuses it)."""
    madvise = _libc_madvise()
    if not madvise or array.nbytes < 2 * HUGE_PAGE:
        return False
    addr = array.ctypes.data
    start = -(-addr // HUGE_PAGE) * HUGE_PAGE
    end = (addr + array.nbytes) // HUGE_PAGE * HUGE_PAGE
    return end > start and madvise(start, end - start, _MADV_HUGEPAGE) == 0


def _libc_madvise() -> Any:
    """libc's madvise, looked up once; False off Linux or where there is none."""
    global _madvise
    if _madvise is None:
        _madvise = False
        if sys.platform.startswith("linux"):
            try:
                fn = ctypes.CDLL(None, use_errno=True).madvise
                fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
                fn.restype = ctypes.c_int
                _madvise = fn
            except (OSError, AttributeError):
                pass
    return _madvise


#: Linux's MADV_POPULATE_WRITE (5.14): fault pages in writable, as a write would, writing nothing
_MADV_POPULATE_WRITE = 23
_PAGE = 4096
#: bytes populated per madvise call (`populate_pages`): two huge pages
POPULATE_STEP = 2 * HUGE_PAGE


def populate_pages(array: np.ndarray) -> bool:
    """Fault in every page that holds a word of host array `array`, changing no word (madvise
    MADV_POPULATE_WRITE); False where the kernel cannot (then nothing is done)."""
    madvise = _libc_madvise()
    if not madvise or not array.nbytes:
        return False
    addr = array.ctypes.data
    start, end = addr // _PAGE * _PAGE, -(-(addr + array.nbytes) // _PAGE) * _PAGE
    # a step at a time: each call holds the process's memory map (read) throughout, and every
    # other thread's mmap/brk waits for it (the lowering's allocations, a thread's stack: one
    # call over a 217 MiB arena held the lowering thread 0.5 s)
    for at in range(start, end, POPULATE_STEP):
        if madvise(at, min(POPULATE_STEP, end - at), _MADV_POPULATE_WRITE) != 0:
            return False
    return True


#: bytes one write pass of `AheadFault` covers before it looks at its stop flag: 2 huge pages
#: (1024 stores: NumPy releases the GIL above 500; a fresh huge page took 2-20 ms on a VM whose
#: host backs pages on first touch, and `take` waits for the pass under way: 4 huge pages a
#: pass made it wait up to 47 ms)
TOUCH_STEP = 2 * HUGE_PAGE


class AheadFault:
    """A new host array that a thread of its own faults in, from its start, by writing a zero
    into each of its pages (huge pages advised first), until `take` stops it or `touch` bytes
    are done (default: all of it; a guessed arena reserves more than it touches).

    Writes rather than MADV_POPULATE_WRITE: a write fault takes only its memory area's lock
    (Linux 6.4+), while populating holds the process's memory map, so every mmap of the thread
    that runs meanwhile (Python's allocator tracing a graph) would wait for it.  Since the words
    change, nothing may use the array before `take` has stopped the writes."""

    def __init__(self, array: np.ndarray, touch: int | None = None):
        self.array = array
        self.touch = array.nbytes if touch is None else min(touch, array.nbytes)
        self._stop = threading.Event()
        advise_huge_pages(array)
        self._thread = threading.Thread(target=self._touch, name="ren-fault-ahead", daemon=True)
        self._thread.start()

    def _touch(self) -> None:
        flat = self.array.reshape(-1).view(np.uint8)[:self.touch]
        for at in range(0, flat.size, TOUCH_STEP):
            if self._stop.is_set():
                return
            # (a strided scalar store of > 500 items: NumPy releases the GIL for it)
            flat[at:at + TOUCH_STEP:_PAGE] = 0

    def take(self) -> np.ndarray:
        """Stop the writes (waiting for the pass under way) and give the array: its pages faulted
        in so far stay, the rest are faulted by their first use."""
        self._stop.set()
        self._thread.join()
        return self.array

    @property
    def done(self) -> bool:
        """Whether the writes are over (every page faulted in, or stopped)."""
        return not self._thread.is_alive()


#: Linux's MADV_DONTNEED: drop the pages (a later touch finds zeros)
_MADV_DONTNEED = 4


def release_pages(array: np.ndarray) -> bool:
    """Give the whole pages inside host array `array` back to the system (madvise
    MADV_DONTNEED): their words read zero afterwards, and they count in no RSS until touched
    again.  For the unused tail of a reserved arena; False where the kernel cannot (nothing is
    done)."""
    madvise = _libc_madvise()
    if not madvise:
        return False
    addr = array.ctypes.data
    start, end = -(-addr // _PAGE) * _PAGE, (addr + array.nbytes) // _PAGE * _PAGE
    return end <= start or madvise(start, end - start, _MADV_DONTNEED) == 0
