"""ExecUnits: the executable form of a schedule, and the loop that runs them.

`make_exec_units(schedule)` lowers each `ScheduledKernel` to an `ExecUnit`:

* ``compute`` — a backend kernel (`Device.compile` of the registry, `ren.backend`) bound to its
  buffers;
* ``copy`` — `ren.backend.copy_fn`: a device transfer when source and destination share an
  allocator (host devices "python", "python:1", … do), otherwise a host-mediated copy;
* ``view`` — no work: checks that the view lies inside its base and binds it.

`run_exec_units(units)` allocates what each unit needs — planned intermediates get their
offsets in one arena per device (allocated once for the whole run by the device's allocator),
other buffers their own storage — runs the units in order, and finally detaches the planned
intermediates and hands the arena back to its allocator (`Allocator.recycle`: the host one keeps
the largest for the next run, whose pages are then already faulted in).

`fault_in_background(arrays)` faults a first run's new scratch memory in on a thread of its own
(populating pages without writing them where Linux can), while `ren.replay.lower_and_run` lowers
the schedule.

Thread safety: a run attaches, allocates and releases buffer storage (`Buffer` itself takes no
lock), so runs must not overlap; `ren.realization` holds its lock around each.  `record_units`
is per thread: it sees the units run by the thread that opened it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ren import settings
from ren.backend import KernelFn, copy_fn, get_device
from ren.backend.malloc import advise_huge_pages, populate_pages
from ren.device import Buffer
from ren.errors import RealizeError
from ren.kernel import COMPUTE, COPY, LIGHT_KINDS, VIEW, ScheduledKernel


@dataclass
class ExecUnit:
    """One runnable step: `kind` is COMPUTE, COPY or VIEW (`ren.kernel`)."""

    kind: str
    name: str
    bufs: tuple[Buffer, ...]
    fn: KernelFn | None
    item: ScheduledKernel

    def __call__(self) -> None:
        for b in self.bufs:
            b.allocate()
        if self.kind == VIEW:
            _check_view(self.bufs[0])
            return
        assert self.fn is not None  # every unit but a view has a kernel function
        self.fn([b.array() for b in self.bufs])

    def __repr__(self) -> str:
        return f"<ExecUnit {self.kind} {self.name}>"


@dataclass
class Arena:
    device: str
    data: Any  # the device allocator's flat arena array
    buffers: list[Buffer] = field(default_factory=list)


def _check_view(view: Buffer) -> None:
    base = view.base
    if base is None or view.offset < 0 or view.offset + view.size > base.size:
        raise RealizeError(f"{view} does not fit inside its base {base}")


def make_exec_units(schedule: list[ScheduledKernel]) -> list[ExecUnit]:
    """Lower every scheduled item to an ExecUnit (compiling kernels for their device; each
    device first sees all of its compute items at once, so it can compile them together)."""
    per_device: dict[str, list[ScheduledKernel]] = {}
    for item in schedule:
        if item.kind not in LIGHT_KINDS:
            per_device.setdefault(item.bufs[0].device, []).append(item)
    for device, items in per_device.items():
        get_device(device).prepare(items)
    units = []
    for item in schedule:
        if item.kind == VIEW:
            units.append(ExecUnit(VIEW, item.name, item.bufs, None, item))
        elif item.kind == COPY:
            fn = copy_fn(item.bufs[0].device, item.bufs[1].device)
            units.append(ExecUnit(COPY, item.name, item.bufs, fn, item))
        else:
            units.append(ExecUnit(COMPUTE, item.name, item.bufs,
                                  get_device(item.bufs[0].device).compile(item), item))
    return units


def bind_arenas(plan) -> list[Arena]:
    """Allocate one arena per device and point every planned buffer at its offset."""
    if plan is None:
        return []
    arenas = {device: Arena(device, get_device(device).allocator.arena(max(nbytes, 4) // 4))
              for device, nbytes in plan.arenas.items()}
    for buf in plan.planned:
        arena = arenas[buf.device]
        start = plan.offset(buf) // 4
        buf.attach(buf.allocator.view(arena.data, start, buf.shape))
        arena.buffers.append(buf)
    return list(arenas.values())


class _Recorders(threading.local):
    def __init__(self) -> None:
        self.lists: list[list[ExecUnit]] = []


_trace = _Recorders()


@contextlib.contextmanager
def record_units() -> Iterator[list[ExecUnit]]:
    """Collect every ExecUnit this thread runs inside the block (for tests and debugging)."""
    seen: list[ExecUnit] = []
    recorders = _trace.lists
    recorders.append(seen)
    try:
        yield seen
    finally:  # by identity: two recorders holding equal lists are still different recorders
        del recorders[next(i for i, r in enumerate(recorders) if r is seen)]


def note_units(units: list[ExecUnit]) -> None:
    """Report units that ran by other means (a backend graph runner) to `record_units` blocks."""
    for seen in _trace.lists:
        seen.extend(units)


def run_exec_units(units: list[ExecUnit], plan=None) -> None:
    """Run the units in order, with planned intermediates placed in per-device arenas."""
    arenas = bind_arenas(plan)
    debug = settings.get("REN_DEBUG")
    recorders = _trace.lists
    try:
        for unit in units:
            t0 = time.perf_counter() if debug >= 2 else 0.0
            unit()
            for seen in recorders:
                seen.append(unit)
            if debug >= 2:
                ms = (time.perf_counter() - t0) * 1e3
                print(f"[ren] {unit.kind:8s} {unit.name:24s} {ms:8.3f} ms  "
                      f"bufs={[b.uid for b in unit.bufs]}")
    finally:
        for arena in arenas:  # planned intermediates are dead now: hand the arena back
            for buf in arena.buffers:
                buf.release()
            get_device(arena.device).allocator.recycle(arena.data)


# -- a first run's scratch, faulted in while its schedule is lowered (`ren.replay.lower_and_run`)
#: u32 words per page of host memory (4 KiB): one write per page faults it in
_WORDS_PER_PAGE = 1024


#: fault a first run's scratch in on a thread of its own, while the lowering goes on (False:
#: on the lowering thread, before the first chunk is lowered)
FAULT_IN_BACKGROUND = True


def fault_in_background(arrays: Sequence[Any]) -> Callable[[], None]:
    """Start faulting `arrays` in on a thread of their own and return a function that waits
    until the first run may start (re-raising what the faulting raised).  Where the kernel can
    populate pages without writing them (`_populate`: Linux 5.14+), no word changes, so the run
    need not wait: its kernels and the thread fault pages in side by side.  Elsewhere the pages
    get a zero each (`_fault_in`) and the run waits for them.  Either way the faulting runs
    without the GIL, so the lowering goes on meanwhile.  With FAULT_IN_BACKGROUND off: written
    in this thread, now."""
    host = [a for a in arrays if isinstance(a, np.ndarray) and a.flags.c_contiguous and a.size]
    if not FAULT_IN_BACKGROUND or not host:
        for a in host:
            _fault_in(a)
        return lambda: None
    populate = _populate(host[0].reshape(-1)[:1])  # (a probe: one page)
    failed: list[BaseException] = []

    def fault() -> None:
        try:
            for a in host:
                if populate:  # (huge pages first, as `_fault_in` advises them)
                    advise_huge_pages(a)
                    _populate(a)
                else:
                    _fault_in(a)
        except BaseException as e:  # (re-raised by the waiter)
            failed.append(e)

    thread = threading.Thread(target=fault, name="ren-fault-in", daemon=True)
    thread.start()
    if populate:
        return lambda: None

    def wait() -> None:
        thread.join()
        if failed:
            raise failed[0]

    return wait


def _populate(array: np.ndarray) -> bool:
    """`ren.backend.malloc.populate_pages` (a name of its own here: the tests replace it)."""
    return populate_pages(array)


def _fault_in(array: Any) -> None:
    """Write a zero into every page of a host scratch array (no-op for device arrays): the pages
    are mapped now, not by the first kernel that writes them.  A large one is first advised to
    take transparent huge pages (`advise_huge_pages`)."""
    if isinstance(array, np.ndarray) and array.flags.c_contiguous and array.size:
        advise_huge_pages(array)
        array.reshape(-1)[::_WORDS_PER_PAGE] = 0
