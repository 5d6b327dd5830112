"""The host thread pool that the CKKS encoder's and decoder's NumPy work shares: the two halves of
the embedding's FFT (`ren.ckks.embedding`) and the pieces of the decoder's CRT lift
(`ren.ckks.lift`).  NumPy's FFT and single-threaded BLAS release the GIL, so pieces run side by
side on threads; `side_by_side` hands them out so that a helper that wakes late never holds the
caller, and every piece's result is the same whichever thread computes it.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

#: the host thread pools, by (process, workers): a process forked from one that had a pool
#: (a worker of ren.distributed, say) has none of its threads, so it makes its own
_pools: dict[tuple[int, int], ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()
POOL_PREFIX = "ren-lift"  # (thread names; kept from when only the lift used it)


def pool(workers: int) -> ThreadPoolExecutor:
    key = (os.getpid(), workers)
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = ThreadPoolExecutor(workers, thread_name_prefix=POOL_PREFIX)
        return pool


def side_by_side(fn: Callable[[int], Any], starts: Sequence[int], workers: int) -> list[Any]:
    """[fn(c) for c in starts] on the caller and up to `workers` − 1 lift-pool threads, each
    taking the next start nobody has taken yet (the caller the first): a helper that wakes late
    (a descheduled or halted core) takes fewer, or none, instead of holding the caller, which
    goes on with the rest, and a helper task that has not started when the caller is through is
    cancelled.  One task (one wake-up) a helper; each result is fn's own whichever thread
    computes it, in the order of `starts`."""
    workers = max(1, min(workers, len(starts)))
    if workers == 1:
        return [fn(c) for c in starts]
    out: list[Any] = [None] * len(starts)
    taken = itertools.count()
    lock = threading.Lock()
    failed: list[bool] = []

    def drain(i: int | None = None) -> None:
        while not failed:
            if i is None:
                with lock:
                    i = next(taken)
            if i >= len(starts):
                return
            try:
                out[i] = fn(starts[i])
            except BaseException:
                failed.append(True)  # the others take no more
                raise
            i = None

    mine = next(taken)  # the caller's first, before any helper can take it
    helpers = pool(workers - 1)
    rest = [helpers.submit(drain) for _ in range(workers - 1)]
    try:
        drain(mine)
    finally:
        for f in rest:
            if not f.cancel():  # started: it may hold a piece; wait for it (and its error)
                f.result()
    return out
