"""When a cold first call compiles its kernels (`ren.replay.lower_and_run`'s batches).

    compiled = split_point(items, first, device)    # the items compiled before the run starts
    prepare(items[:compiled])                      # each device compiles what it lacks, at once
    lacks(items[:first])                           # is the compile cache cold for these?

A cold first call compiles every missing kernel in one batch (the compiler's units split across
the cores) before its first kernel runs, unless its run is long: then the first chunks' kernels
compile first and each next chunk's while the chunks before it run, so the compiler works beside
the run instead of before it (n16's bootstrapping at N = 2^16: ~60 kernels, ~3 s of compiler CPU,
a ~7 s run; cold first call 1.57-1.72x its replay in one batch, 1.31-1.46x chunk by chunk, three
alternated pairs).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ren import settings
from ren.backend import Device, get_device
from ren.kernel import LIGHT_KINDS, ScheduledKernel

# A cold first call of a schedule whose compute items write at least REN_COMPILE_SPLIT_BYTES in
# all (a switch, default 12 GiB: a proxy of its run time, ~21 GiB for n16's bootstrapping at
# N = 2^16, whose run, ~7 s, is twice its kernels' compiler CPU) compiles its missing kernels
# chunk by chunk: the first chunks' (to the first chunk end at or past `COMPILE_SPLIT_FRACTION`
# of the items) before the run starts, then each next chunk's while the chunks before it run.
# A shorter run would wait on each compiler run, and a run on every core (the device's threads)
# would share them with the compiler: those compile everything in one batch (split across the
# cores) before they start.

#: the share of a split schedule's items whose kernels compile before its run starts.  Not a
#: switch: it tunes how far the compiler starts ahead of the run (the first chunks' wait against
#: the run catching up with it), a detail of the mechanism, not a choice a user makes -- whether
#: a first call splits at all is (REN_COMPILE_SPLIT_BYTES); and the registry holds ints, not
#: fractions.  Tests and A/B measurements of the mechanism patch it
COMPILE_SPLIT_FRACTION = 1 / 16


def split_point(items: Sequence[ScheduledKernel], first: int, device: Device) -> int:
    """The items whose kernels a cold first call compiles before its run starts
    (REN_COMPILE_SPLIT_BYTES): up to the first chunk end (chunks of `first`, 2 `first`, 4 `first`
    ... items) at or past `COMPILE_SPLIT_FRACTION` of `items`, or all of them for a short run or
    one whose `device` runs a thread on every core."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if device.host_threads() >= (cores or 1):
        return len(items)
    written = sum(item.bufs[0].nbytes for item in items
                  if item.kind not in LIGHT_KINDS and item.bufs)
    # read here, on the thread that lowers the first call (its caller: `lower_and_run`'s worker
    # thread only runs chunks), so a `settings.override` around the call holds for it
    if written < settings.get("REN_COMPILE_SPLIT_BYTES"):
        return len(items)
    end, size = first, first
    while end < COMPILE_SPLIT_FRACTION * len(items):
        size *= 2
        end += size
    return min(end, len(items))


def per_device(items: Sequence[ScheduledKernel]) -> dict[str, list[ScheduledKernel]]:
    """The compute items of `items` by the device they run on."""
    by_device: dict[str, list[ScheduledKernel]] = {}
    for item in items:
        if item.kind not in LIGHT_KINDS:
            by_device.setdefault(item.bufs[0].device, []).append(item)
    return by_device


def prepare(items: Sequence[ScheduledKernel]) -> int:
    """Let each device compile the kernels of its compute `items` it lacks, all at once
    (`Device.prepare`); returns how many kernels were compiled."""
    return sum(get_device(d).prepare(group) for d, group in per_device(items).items())


def lacks(items: Sequence[ScheduledKernel]) -> bool:
    """Whether a device lacks compiled kernels of `items` (a cold compile cache: `Device.lacks`,
    asked of every device, since a device that compiles to answer has then compiled them)."""
    return any([get_device(d).lacks(group) for d, group in per_device(items).items()])


__all__ = ["COMPILE_SPLIT_FRACTION", "lacks", "per_device", "prepare",
           "split_point"]


settings.retire_constants(__name__, {"COMPILE_SPLIT_BYTES": "REN_COMPILE_SPLIT_BYTES"})
