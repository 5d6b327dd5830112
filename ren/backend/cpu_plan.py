"""The ``"cpu"`` device's graph runner: a JIT plan's compiled calls run as C loops.

`CompiledPlan` turns a captured call list (`CpuDevice.graph`) into C arrays of entry points and
argument vectors that the ring library's ``ren_run_plan_teams`` runs in one loop; only the
per-run arrays are patched in from Python.  Calls that are not compiled entry points run from
Python between two such loops.  On more than one thread, the runner runs each stretch of two or
more consecutive *team kernels* (NTT, INTT, basis conversion, rescale, TO_RNS, and the elementwise
kernels of libraries built with a team path: `team_kernel`) inside one OpenMP team, whose
threads all call every kernel, share its loops out and meet at the runner's own bounded-spin
barrier between kernels (cpu_ring_team.c): one wake-up of the team per stretch instead of one
per kernel, and kernels too small to fork a team of their own are shared out too
(``ren_set_plan_teams(0)`` on the ring library turns this off, for measurements).
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ren.backend import GraphRunner, KernelFn
from ren.backend.cpu_calls import VOIDP, CpuCall, pointer

#: the ring library's entries that share their loops out inside a plan team (cpu_ring_plan.c;
#: TO_RNS by the runner, which gives each thread chunks of its rows)
RING_TEAM_KERNELS = frozenset({"ntt", "intt", "basis_convert", "rescale", "to_rns"})


def team_kernel(call: CpuCall) -> bool:
    """Whether `call` may run inside a plan team: every thread of the team calls it and it
    shares its own loops out (a ring kernel of `RING_TEAM_KERNELS`, or an elementwise kernel
    whose library was built with the team path: it exports ``ren_team_kernels``)."""
    if call.name in RING_TEAM_KERNELS:
        return True
    if not call.name.startswith("ren_ew_") or call.owner is None:
        return False
    try:
        call.owner["ren_team_kernels"]  # not getattr: that caches the function in the library
    except AttributeError:
        return False
    return True


#: entry flags ``ren_run_plan_tiled`` reads: a team kernel; a barrier before it (in a stretch);
#: run in one tile with the entry before it (row by row, cpu_ring_plan.c's tiles)
TEAM, BARRIER, TILE = 1, 2, 4

_ROWS_FN = ctypes.CFUNCTYPE(ctypes.c_longlong, ctypes.c_void_p, ctypes.c_longlong,
                            ctypes.c_longlong)


#: tile entries whose rows read every input word: they may start a tile, never join one
STARTS_ONLY = frozenset({"to_rns"})


def tile_entry(call: CpuCall) -> tuple[int, int] | None:
    """``(row function, row length N)`` of a call that may run in a tile, row by row: an NTT,
    INTT or TO_RNS (0: the runner calls its limb code; a TO_RNS only starts a tile: each of its
    rows reads every input word) or an elementwise kernel its renderer found
    row-local (its library exports ``ren_rows_<name>``: row r of its output reads rows r of its
    inputs alone, each N words from r * N); None for the rest (basis conversions and rescales
    mix rows)."""
    if call.name in ("ntt", "intt") or call.name in STARTS_ONLY:  # the runner's own row code
        return 0, int(call.extra[0][0])  # (sizes {N, ...})
    if not call.name.startswith("ren_ew_") or call.owner is None:
        return None
    try:  # not getattr: that caches the function in the library
        rows = call.owner[f"ren_rows_{call.name}"]
        rowlen = call.owner[f"ren_rowlen_{call.name}"]
    except AttributeError:
        return None
    rowlen.restype = ctypes.c_longlong
    address = ctypes.cast(rows, VOIDP).value
    return (address, int(rowlen())) if address else None


def _same(a: Any, b: Any) -> bool:
    """Whether spans `a` and `b` start at one address (a per-run array: the same one), so that
    row r of either is row r of the other."""
    if isinstance(a[0], str) or isinstance(b[0], str):
        return a == b and a[-1] >= 0
    return a[0] == b[0]


@dataclass
class _Tile:
    """The tile `team_flags` is building: the row length of its kernels, what they write and
    read, what the kernels since the last barrier before it write and read (and whether one
    of them was a basis conversion, which holds the team's scratch), and how many calls it has."""
    row: int
    writes: list[Any]
    reads: list[Any]
    before_writes: list[Any] = field(default_factory=list)
    before_reads: list[Any] = field(default_factory=list)
    scratch: bool = False
    size: int = 1


def _joins(w: list[Any], r: list[Any], tile: _Tile) -> bool:
    """Whether a row-local call writing `w` and reading `r` may join `tile`: it touches
    nothing the kernels before the tile (since the last barrier) write nor writes what they
    read (they may still run on another thread), and every array it shares with the tile's
    kernels starts where theirs does (row r of it is the row the same thread ran)."""
    if _conflict(w, r, tile.before_writes, tile.before_reads):
        return False
    return all(_same(x, y) for x in r + w for y in tile.writes if _overlap(x, y)) and \
        all(_same(x, y) for x in w for y in tile.reads if _overlap(x, y))


def _spans(fn: CpuCall, args: Sequence[Any], patched: dict[int, int],
           fresh: Mapping[int, int] | None = None):
    """What call `fn` on `args` writes and reads: byte ranges ``(start, end)`` of its static
    arrays, ``("o", base, i)`` for a slot the run patches with its i-th array when that is a
    new output or a view of one (`fresh`: i -> its base output's index, ren.replay.Patches)
    and ``("p", i)`` for a slot patched with another run array.  Slot 0 is every compiled
    entry's output (an elementwise kernel's s0, a ring kernel's a[0]); the other slots are
    read."""
    def span(slot: int) -> Any:
        a = args[slot] if slot < len(args) else None
        if a is None:
            i = patched.get(slot, -1)
            if fresh is not None and i in fresh:
                return ("o", fresh[i], i)
            return ("p", i)
        start = pointer(a)
        return (start, start + a.nbytes)
    return [span(0)], [span(s) for s in range(1, fn.nslots)]


def _overlap(a: Any, b: Any) -> bool:
    if a[0] == "o" or b[0] == "o":  # a new output: only its own base and that base's views
        return a[0] == b[0] and a[1] == b[1]
    if isinstance(a[0], str) or isinstance(b[0], str):  # a per-run array: any other may alias it
        return isinstance(a[0], str) and isinstance(b[0], str)
    return a[0] < b[1] and b[0] < a[1]


def _conflict(w: list[Any], r: list[Any], writes: list[Any], reads: list[Any]) -> bool:
    return (any(_overlap(x, y) for x in r + w for y in writes) or
            any(_overlap(x, y) for x in w for y in reads))


def team_flags(run: Sequence[tuple[CpuCall, Sequence[Any]]],
               patched: Sequence[dict[int, int]],
               tiles: Sequence[tuple[int, int] | None] | None = None,
               fresh: Mapping[int, int] | None = None) -> list[int]:
    """Per call of a C segment: `TEAM` when it may run in a plan team (`team_kernel`), and
    `BARRIER` when the team must meet before it: it follows a team kernel of its stretch and
    reads or writes what a kernel since the last barrier writes, or writes what one reads (a
    DAG's independent neighbours run without one: the threads that finish the first kernel's
    share go on to the second's, two one-row kernels side by side).  Two basis conversions
    never share a barrier interval (they share the team's scratch).

    `tiles` (per call, its `tile_entry`): `TILE` when a call joins the tile of the call before
    it (`_joins`: row-local kernels of one row length on the same rows).  The runner runs a
    tile row by row, meeting nowhere inside it, or (too few rows, cpu_ring_plan.c) kernel by
    kernel, meeting at the BARRIERs its calls also carry, as untiled.  The call after a tile
    of two or more is flagged against everything since the last barrier before the tile.

    `fresh` (run array index -> its base's, ren.replay.Patches): the run arrays that are new
    outputs, which alias nothing but their own base's arrays; without it every run array may
    alias every other (an encryption's c0 written in a tile would otherwise keep the next
    kernel, which reads the public key, out of it: they might be one array)."""
    flags: list[int] = []
    writes: list[Any] = []
    reads: list[Any] = []
    scratch = False
    tile: _Tile | None = None  # the tile the last call is in
    for k, ((fn, args), slots) in enumerate(zip(run, patched)):
        team = team_kernel(fn)
        w, r = _spans(fn, args, slots, fresh)
        entry = tiles[k] if tiles is not None and team else None
        if not team or not flags or not flags[-1] & TEAM:  # a stretch starts (or none)
            flags.append(TEAM if team else 0)
            writes, reads, scratch = list(w), list(r), fn.name == "basis_convert"
            tile = _Tile(entry[1], list(w), list(r)) if entry is not None else None
            continue
        if tile is not None and entry is not None and entry[1] == tile.row and \
                fn.name not in STARTS_ONLY and _joins(w, r, tile):
            barrier = _conflict(w, r, writes, reads)  # where the untiled run meets
            flags.append(TEAM | TILE | (BARRIER if barrier else 0))
            if barrier:
                writes, reads, scratch = list(w), list(r), False
            else:
                writes, reads = writes + w, reads + r
            tile.writes.extend(w)
            tile.reads.extend(r)
            tile.size += 1
            continue
        if tile is not None and tile.size > 1:  # after a tile: since the barrier before it
            writes, reads = tile.before_writes + tile.writes, tile.before_reads + tile.reads
            scratch = scratch or tile.scratch
        conflict = _conflict(w, r, writes, reads) or (scratch and fn.name == "basis_convert")
        if conflict:
            flags.append(TEAM | BARRIER)
            writes, reads, scratch = list(w), list(r), False
            before: tuple[list, list] = ([], [])
        else:
            flags.append(TEAM)
            before = (list(writes), list(reads))
            writes += w
            reads += r
        tile = _Tile(entry[1], list(w), list(r), *before, scratch) if entry is not None else None
        scratch = scratch or fn.name == "basis_convert"
    return flags


class CompiledPlan(GraphRunner):
    """The ``"cpu"`` graph runner: consecutive compiled calls run as one C loop
    (``ren_run_plan`` over arrays of entry points and argument vectors built once); a call that
    is not a compiled entry point (a host copy, RANDOM's host expansion) runs from Python between
    two such loops.  A run patches the per-run arrays into the argument vectors and clears them
    afterwards.  Not reentrant: callers hold a lock per runner."""

    kind = "cpu-compiled"

    def __init__(self, calls: Sequence[tuple[KernelFn, list[Any]]],
                 patches: Sequence[tuple[int, int, int]], ring_lib: ctypes.CDLL):
        run_plan = ring_lib.ren_run_plan_tiled
        run_plan.argtypes = [ctypes.c_longlong, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                             ctypes.c_void_p]
        run_plan.restype = None
        self._run_plan = run_plan
        self._keep = [args for _, args in calls]  # the static arrays stay alive with the plan
        # and so do the calls, which hold their libraries: the plan runs raw entry points
        self._calls = [fn for fn, _ in calls]
        # ("c", count, fns, argvs, vectors, team flags, tile row functions) | ("py", fn, args)
        self.segments: list[tuple] = []
        where: list[tuple[Any, int]] = []  # per call: (argument vector or list, segment)
        run: list[tuple[CpuCall, list[Any]]] = []
        patched: dict[int, dict[int, int]] = {}  # call -> {slot: the run's array index}
        for c, slot, i in patches:
            patched.setdefault(c, {})[slot] = i
        # the run arrays that are new outputs (ren.replay.Patches); a plain list: none known
        fresh: dict[int, int] = dict(getattr(patches, "fresh", None) or {})
        slots: list[dict[int, int]] = []  # the patched slots of each call of `run`

        def flush() -> None:
            if not run:
                return
            vectors = [fn.argv(args) for fn, args in run]
            fns = (VOIDP * len(run))(*(fn.address for fn, _ in run))
            argvs = (VOIDP * len(run))(*(ctypes.addressof(v) for v in vectors))
            entries = [tile_entry(fn) for fn, _ in run]
            flags = team_flags(run, slots, entries, fresh)
            team = (ctypes.c_byte * len(run))(*flags)
            # per call: its row function (ren_rows_*; the entry itself for an NTT/INTT) where
            # it runs in a tile (it or the call after it has TILE), else NULL
            tiled = [bool(f & TILE) or (k + 1 < len(flags) and bool(flags[k + 1] & TILE))
                     for k, f in enumerate(flags)]
            tile = (VOIDP * len(run))(*((e[0] or fn.address) if t and e is not None else None
                                        for (fn, _), e, t in zip(run, entries, tiled)))
            for v in vectors:
                where.append((v, len(self.segments)))
            self.segments.append(("c", len(run), fns, argvs, vectors, team, tile))
            run.clear()
            slots.clear()

        for c, (fn, args) in enumerate(calls):
            if isinstance(fn, CpuCall):
                run.append((fn, list(args)))
                slots.append(patched.get(c, {}))
            else:
                flush()
                args = list(args)
                where.append((args, len(self.segments)))
                self.segments.append(("py", fn, args))
        flush()
        self.patches = [(where[c][0], slot, i, isinstance(where[c][0], list))
                        for c, slot, i in patches]
        self.calls = len(calls)

    def _patch(self, arrays: Sequence[Any]) -> None:
        for target, slot, i, is_list in self.patches:
            target[slot] = arrays[i] if is_list else pointer(arrays[i])

    def _unpatch(self) -> None:
        for target, slot, _, _ in self.patches:
            target[slot] = None

    def __call__(self, arrays: Sequence[Any]) -> None:
        self._patch(arrays)
        try:
            for seg in self.segments:
                if seg[0] == "c":
                    self._run_plan(seg[1], seg[2], seg[3], seg[5], seg[6])
                else:
                    seg[1](seg[2])
        finally:
            self._unpatch()

    def team_waits(self, arrays: Sequence[Any], lib: ctypes.CDLL) -> list[tuple[float, float]]:
        """One run that also measures, per call, the seconds team threads 0 and 1 waited at the
        barrier after it (0 for calls outside teams and the last of a stretch): where the second
        thread idles.  `lib`: the ring library (``cpu.ring_library()``)."""
        return self._per_call_pairs(arrays, lib.ren_set_team_wait)

    def team_work(self, arrays: Sequence[Any], lib: ctypes.CDLL) -> list[tuple[float, float]]:
        """One run that also measures, per call, the CPU seconds team threads 0 and 1 spent in
        their own shares of it (their own clocks, barriers excluded: the same on a loaded
        machine; (0, 0) for calls outside teams).  Between two barriers the difference of the
        two threads' sums is what the faster one waits on idle cores: where the work is not
        divided.  `lib`: the ring library (``cpu.ring_library()``)."""
        return self._per_call_pairs(arrays, lib.ren_set_team_work)

    def _per_call_pairs(self, arrays: Sequence[Any], set_buffer: Any) -> list[tuple[float, float]]:
        """One run with the ring library's per-call measurement `set_buffer`
        (``ren_set_team_wait`` or ``ren_set_team_work``) pointed at a buffer of two doubles per
        call of each plan stretch; (0, 0) for the calls outside stretches."""
        pairs: list[tuple[float, float]] = []
        self._patch(arrays)
        try:
            for seg in self.segments:
                if seg[0] == "c":
                    buf = (ctypes.c_double * (2 * seg[1]))()
                    set_buffer(buf, ctypes.c_longlong(seg[1]))
                    try:
                        self._run_plan(seg[1], seg[2], seg[3], seg[5], seg[6])
                    finally:
                        set_buffer(None, ctypes.c_longlong(0))
                    pairs.extend((buf[2 * k], buf[2 * k + 1]) for k in range(seg[1]))
                else:
                    seg[1](seg[2])
                    pairs.append((0.0, 0.0))
        finally:
            self._unpatch()
        return pairs

    def profile(self, arrays: Sequence[Any]) -> list[float]:
        self._patch(arrays)
        times: list[float] = []
        try:
            for seg in self.segments:
                if seg[0] == "c":
                    base_f, base_a = ctypes.addressof(seg[2]), ctypes.addressof(seg[3])
                    step = ctypes.sizeof(VOIDP)
                    for k in range(seg[1]):
                        t0 = time.perf_counter()
                        self._run_plan(1, base_f + k * step, base_a + k * step, None, None)
                        times.append(time.perf_counter() - t0)
                else:
                    t0 = time.perf_counter()
                    seg[1](seg[2])
                    times.append(time.perf_counter() - t0)
        finally:
            self._unpatch()
        return times


__all__ = ["CompiledPlan"]
