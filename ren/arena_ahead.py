"""Arenas faulted in ahead of the first run that takes them (issue 41: a jitted first call).

A first run's arena is fresh memory: at N = 2^16 seconds of page faults on a VM whose host backs
each page on first touch, which the run's own thread would otherwise take.  `fault_ahead` starts
a thread that writes the pages of a new arena (`ren.backend.malloc.AheadFault`) while the caller
does Python work that leaves a core idle (a jitted function's trace and schedule:
`ren.jit`, from the plan cache's arena hint or a guess); the graph runner's storage
(`ren.replay`) takes it through `take_arena` when it fits, and `drop_ahead` frees what no run
took.  The words a run computes never depend on it: an arena is written before it is read.

`fault_early` starts the same earlier, when ``ren.jit`` wraps a function whose last capture
left a hint (`ren.plan_cache.function_hint`): its fault-in then runs while the program makes
its keys and inputs, on the core a one-thread program leaves idle, not in the ~0.3 s of trace
and lookup of a plan-cache hit.  Such an arena belongs to that function: `claim_early` hands it
to the function's capture (as if `fault_ahead` had started it there); other captures never see
it, and the Jitted's finalizer (`drop_early`) frees it if no capture claims it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

from ren.backend import get_device
from ren.backend.malloc import AheadFault, release_pages
from ren.device import in_host_memory
from ren.node import Node, toposort
from ren.spec import ring_of

__all__ = ["EARLY_MIN_BYTES", "GUESS_DIVISOR", "GUESS_MIN_BYTES", "claim_early", "drop_ahead",
           "drop_early", "early_arenas", "fault_ahead", "fault_early", "fault_guess",
           "faulting_ahead", "peak_live_bytes", "take_arena"]

#: host arenas being faulted in before the run that takes them (`fault_ahead`), by device
_ahead: dict[str, AheadFault] = {}
#: arenas faulted in for a function's first capture (`fault_early`): device -> (owner, fault);
#: one per device (the function wrapped last), so at most one arena's memory waits per device
_early: dict[str, tuple[int, AheadFault]] = {}
#: (reentrant: `drop_early` runs from a Jitted's finalizer, which a collection may start in a
#: thread that holds the lock)
_ahead_lock = threading.RLock()
#: an early fault-in only for an arena at least this large (a small one faults in quickly in the
#: call itself; and a program that wraps many small functions holds no memory for them)
EARLY_MIN_BYTES = 32 << 20


def fault_ahead(device: str, nbytes: int, touch: int | None = None) -> bool:
    """Start faulting in a new arena of `nbytes` (its first `touch` bytes; default all) for the
    next graph runner of host device `device` (a thread writes its pages: `AheadFault`); that
    runner takes it if it fits (`take_arena`).  The
    plan cache starts this from the arena size a capture needed last time, before the trace:
    a first run's arena is fresh memory, seconds of page faults at N = 2^16 on a VM whose host
    backs each page on first touch, and otherwise the run's own thread faults much of it.
    Returns whether it started (not for a device outside host memory, nor when the arena its
    allocator keeps is that large: resident already)."""
    ahead = _fault(device, nbytes, touch)
    if ahead is None:
        return False
    with _ahead_lock:
        old, _ahead[device] = _ahead.get(device), ahead
    if old is not None:
        old.take()  # (dropped)
    return True


def _fault(device: str, nbytes: int, touch: int | None = None) -> AheadFault | None:
    """An AheadFault over a new arena of `nbytes` for host device `device` (None: not host
    memory, the allocator's kept arena covers it, or the system refuses the reservation)."""
    if nbytes <= 0 or not in_host_memory(device):
        return None
    allocator = get_device(device).allocator
    if getattr(allocator, "spare_bytes", lambda: 0)() >= (nbytes if touch is None else touch):
        return None
    try:
        return AheadFault(allocator.arena(max(nbytes, 4) // 4), touch)
    except MemoryError:  # (a reservation the system refuses: no head start, nothing else)
        return None


def fault_early(owner: int, arenas: dict[str, int]) -> list[str]:
    """Start faulting in `arenas` (bytes per device: a function's hint) for the first capture of
    `owner` (a token of the Jitted), replacing an earlier owner's on the same device (freed).
    Arenas under EARLY_MIN_BYTES are left to the call.  Returns the devices started."""
    started = []
    for device, nbytes in arenas.items():
        # (nor one above half the machine's memory: only a damaged hint says that, and a
        # system that overcommits would let the writes run into the OOM killer)
        if not EARLY_MIN_BYTES <= nbytes <= _physical_bytes() // 2:
            continue
        ahead = _fault(device, nbytes)
        if ahead is None:
            continue
        with _ahead_lock:
            old = _early.get(device)
            _early[device] = (owner, ahead)
        if old is not None:
            old[1].take()  # (dropped)
        started.append(device)
    return started


def _physical_bytes() -> int:
    """This machine's physical memory in bytes (a large number where it cannot be read)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def early_arenas(owner: int) -> dict[str, int]:
    """The bytes per device being faulted in early for `owner` (`fault_early`), not yet claimed."""
    with _ahead_lock:
        return {d: a.array.nbytes for d, (o, a) in list(_early.items()) if o == owner}


def claim_early(owner: int) -> dict[str, int]:
    """Hand `owner`'s early arenas to its capture: each becomes its device's arena faulted in
    ahead (what `take_arena` gives the run, if it fits; `drop_ahead` frees it otherwise).
    Returns their bytes per device."""
    claimed: dict[str, int] = {}
    dropped = []
    with _ahead_lock:
        for device, (o, ahead) in list(_early.items()):
            if o == owner:
                del _early[device]
                old, _ahead[device] = _ahead.get(device), ahead
                if old is not None:
                    dropped.append(old)
                claimed[device] = ahead.array.nbytes
    for old in dropped:
        old.take()
    return claimed


def drop_early(owner: int) -> None:
    """Stop and free `owner`'s early arenas that no capture claimed (the Jitted is gone)."""
    with _ahead_lock:
        mine = [d for d, (o, _) in _early.items() if o == owner]
        left = [_early.pop(d)[1] for d in mine]
    for ahead in left:
        ahead.take()


def faulting_ahead() -> bool:
    """Whether an arena is being faulted in ahead (`fault_ahead`) and not yet taken."""
    return bool(_ahead)


def drop_ahead() -> None:
    """Stop and free the arenas `fault_ahead` started that no run took."""
    with _ahead_lock:
        left = list(_ahead.values())
        _ahead.clear()
    for ahead in left:
        ahead.take()


def take_arena(device: str, nwords: int) -> Any:
    """A new arena of `nwords` words for `device`: the one faulted in ahead if it fits."""
    with _ahead_lock:
        ahead = _ahead.pop(device, None)
    if ahead is not None:
        array = ahead.take()  # (its writes stopped before any kernel writes it)
        # a larger one (a guess) keeps only the pages of its first nwords
        if nwords <= array.size and (array.size - nwords <= nwords // 8
                                     or release_pages(array[nwords:])):
            return array[:nwords]
        # freed before the allocation: pages just freed come back to it still backed by the
        # host (a VM reports free memory to its host after ~2 s), so they fault in cheaply
        del ahead, array
    return get_device(device).allocator.arena(nwords)


#: a capture whose call has no arena hint yet (`ren.plan_cache.arena_hint`) reserves the traced
#: graph's peak live bytes with every node counted as a buffer (`peak_live_bytes`) as its arena, and
#: faults its first 1/GUESS_DIVISOR in while it is scheduled, on the core the schedule leaves
#: idle.  Fusion materializes far fewer buffers (the bootstrapping's count is 4.5-5.1x its arena
#: at N = 2^13 and 2^14): the reservation holds the arena, whose first ~0.6 are faulted in, and
#: the pages past the arena are given back (`ren.arena_ahead.take_arena`), so no more memory is
#: held than the arena's.  Where the count falls short of the arena, the reservation is freed
#: just before the arena is allocated, which gets some of its pages back still backed by the
#: host ...
GUESS_DIVISOR = 8
#: ... and only when that is at least this many bytes (a small arena faults in quickly anyway)
GUESS_MIN_BYTES = 32 << 20


def peak_live_bytes(nodes: Sequence[Node]) -> int:
    """The peak live bytes of a traced graph in topological order, every non-leaf node a buffer
    of its ring's size (an upper estimate of its arena: see GUESS_DIVISOR)."""
    order = toposort(*nodes)
    last: dict[int, int] = {}
    for i, n in enumerate(order):
        for src in n.src:
            last[id(src)] = i
    ends: dict[int, int] = {}  # position -> bytes whose last use it is
    live = peak = 0
    for i, n in enumerate(order):
        ring = ring_of(n) if n.src else None
        if ring is not None:
            size = ring.limbs * ring.N * 4
            live += size
            peak = max(peak, live)
            end = last.get(id(n), i)
            ends[end] = ends.get(end, 0) + size
        live -= ends.pop(i, 0)
    return peak


def fault_guess(device: str, nodes: Sequence[Node]) -> bool:
    """Start faulting in a guess of the arena of the traced graph `nodes` for `device` (the
    reservation and touch above); returns whether it started."""
    peak = peak_live_bytes(nodes)
    if peak // GUESS_DIVISOR < GUESS_MIN_BYTES:
        return False
    return fault_ahead(device, peak, touch=peak // GUESS_DIVISOR)
