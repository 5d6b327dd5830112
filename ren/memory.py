"""Memory planning: pack intermediate buffers of a schedule into one arena per device.

    plan = plan_memory(schedule, outputs)
    plan.offset(buf), plan.size(buf), plan.arenas, plan.arena_bytes, plan.peak_live_bytes

**Live ranges.**  Item ``i`` of the schedule writes ``bufs[0]`` and reads ``bufs[1:]``.  A buffer
is live from its first use to its last use, both inclusive: written at ``i`` and read last at
``j`` it is live during ``[i, j]`` (so an item's output never shares bytes with its inputs).  A
view's uses also count as uses of its base (the view reads the base's storage).

**Who is planned.**  Buffers whose identity matters keep their own storage: the final outputs,
buffers that are already allocated, both buffers of every ``copy`` item, views (the view buffer
of every ``view`` item among them), the bases of kept views (an output's, a copy's, a no_opt
one's), and ``no_opt`` buffers.  Every other buffer is an *optimizable intermediate* — the base of
an intermediate view too: the view reads the base's storage wherever it lies, and its uses keep
the base live.  (At N = 2^14 the bootstrapping's key switches read ~2,200 bases through views,
1.85 GB that kept their own storage, allocated and page-faulted in anew on every run.)

**The problem.**  Per device, each planned buffer reserves its bytes rounded up to 256-byte
granules; buffers whose live ranges meet (*rivals*) must not share a granule; the arena is the
highest end.  ``peak_live_bytes`` (the largest total of reservations live at one step, per device,
summed) is the lower bound any placement needs; ``arena_bytes`` is what the plan uses.  The
buffers split into *components*, runs of the schedule no live range crosses between; each is
placed from offset 0 on its own, and the arena is the largest one's.

**Placements** (`PLACEMENTS`, in the order ``auto`` tries them):

* ``by_size``, ``by_area`` — first fit: largest size (size × lifetime) first, each buffer at the
  lowest offset clear of its already placed rivals.
* ``lowest_by_start`` / ``_end`` / ``_area`` / ``_life`` / ``_size`` — lowest first: repeatedly
  place the unplaced buffer whose lowest clear offset is lowest (ties: earliest first use, latest
  last use, largest size × lifetime, longest lifetime, largest size).  First fit in order of the
  offsets of any placement never raises an offset, so some order reaches the optimum; lowest first
  builds one bottom-up.
* ``tlsf`` — online: replay the schedule through the TLSF-style allocator of `ren.tlsf` (an exact
  best fit over segregated free lists, splitting and coalescing blocks, growing the arena when
  nothing fits).  At step ``i`` what died at ``i - 1`` is freed, then what ``i`` writes is
  allocated, largest first.
* ``search`` (``auto`` only, on a component of at most ``SEARCH_MAX_BUFFERS`` buffers that no
  placement fits within the bound) — a bounded depth-first search (`_search`) aiming at the
  bound, then at one granule below the best found, until a target fails or the device's
  ``SEARCH_NODES`` are spent.

``auto`` keeps per component the smallest arena (the earlier placement on ties), stopping at the
first that reaches the bound.  A component of more than ``LARGE_COMPONENT`` buffers (a
bootstrapping's) tries the cheap placements first (`LARGE_ORDER`: TLSF, ~0.02 s on 4,500
buffers, then first fit, ~0.1 s, against ~0.5 s for each lowest-first) and stops within
``GOOD_ENOUGH`` (2 %) of the bound; ``plan.policies[device]`` names the placement of the
component that sets the device's arena.  A named ``policy`` uses that placement alone.
Past ``MAX_RIVALS`` rival pairs only ``tlsf`` runs (the others need the pairs).

On 900 random Poly programs as `ren.schedule` lowers them (the slow survey of
tests/test_memory_programs.py) the former planner (TLSF or by-size) reached 1.27x the bound (p99
1.20x); ``auto`` reaches 1.06x (p99 1.02x, 886 of 896 arenas at the bound).  Planning takes about
2 ms per 100 buffers when by-size reaches the bound (the common case), several times that when
every placement and the search run (at most tens of ms).

The plan is made once from the schedule; execution reuses the offsets.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate

from ren.device import Buffer
from ren.errors import MemoryPlanError, ParameterError
from ren.kernel import LIGHT_KINDS, VIEW, ScheduledKernel
from ren.tlsf import Block, TLSFArena

ALIGN = 256  # bytes: block sizes and offsets are multiples of this
MAX_RIVALS = 1_000_000  # offline placements are skipped past this many overlapping pairs
SEARCH_NODES = 1000  # search nodes per device (tens of microseconds each)
SEARCH_NODES_PER_TARGET = 500
SEARCH_MAX_BUFFERS = 128  # larger components are not searched (it rarely pays off there)
#: a component of more buffers than this tries LARGE_ORDER and stops at the first placement
#: within GOOD_ENOUGH of the bound: on the small bootstrapping's 4,500 buffers (N = 2^12) TLSF
#: takes 0.02 s for 1.0025x the bound, by_size 0.11 s for 1.000x, each lowest-first ~0.5 s, so
#: the cheapest goes first (a first call spends the difference before its first kernel)
LARGE_COMPONENT = 2000
GOOD_ENOUGH = 1.02
LARGE_ORDER = ("tlsf", "by_size", "by_area", "lowest_by_start", "lowest_by_end",
               "lowest_by_area", "lowest_by_life", "lowest_by_size")


def reserved_bytes(buf: Buffer) -> int:
    """The bytes a planned buffer reserves in its arena: nbytes rounded up to ALIGN (>= ALIGN)."""
    return max(ALIGN, -(-buf.nbytes // ALIGN) * ALIGN)


# -- the placement problem of one device ----------------------------------------------------------
class _Problem:
    """The planned buffers of one device as intervals: buffer k (k in order of first use) is live
    during steps [first[k], last[k]] and takes size[k] granules."""

    def __init__(self, first: list[int], last: list[int], size: list[int]):
        self.first, self.last, self.size = first, last, size
        self.components: list[list[int]] = []  # runs of k no live range crosses between
        end = -1
        for k in range(len(size)):
            if first[k] > end:
                self.components.append([])
            self.components[-1].append(k)
            end = max(end, last[k])

    @cached_property
    def rivals(self) -> list[list[int]] | None:
        """k -> the buffers whose live range meets k's (None: too many pairs).  Made when first
        asked: TLSF, which a large component tries first, does without them."""
        return self._rivals()

    def _rivals(self) -> list[list[int]] | None:
        rivals: list[list[int]] = [[] for _ in self.size]
        active: list[int] = []
        pairs = 0
        for k, f in enumerate(self.first):
            active = [a for a in active if self.last[a] >= f]
            pairs += len(active)
            if pairs > MAX_RIVALS:
                return None
            for a in active:
                rivals[a].append(k)
            rivals[k].extend(active)
            active.append(k)
        return rivals

    def peak(self) -> int:
        """The largest total of granules live at one step: the bound on any arena."""
        delta: Counter[int] = Counter()
        for f, last, s in zip(self.first, self.last, self.size, strict=True):
            delta[f] += s
            delta[last + 1] -= s
        return max(accumulate(delta[step] for step in sorted(delta)), default=0)

    def top(self, offsets: dict[int, int], members: Iterable[int]) -> int:
        return max(offsets[k] + self.size[k] for k in members)


Offsets = dict[int, int]  # buffer index -> offset in granules
Key = Callable[[_Problem, int], tuple]


def _tlsf(p: _Problem, members: list[int], limit: int) -> Offsets | None:
    """Replay the live ranges through a TLSF arena: free after last use, allocate at first use."""
    born: dict[int, list[int]] = {}
    dies: dict[int, list[int]] = {}
    for k in members:
        born.setdefault(p.first[k], []).append(k)
        dies.setdefault(p.last[k], []).append(k)
    arena = TLSFArena()
    blocks: dict[int, Block] = {}
    for i in sorted(born.keys() | {d + 1 for d in dies}):
        for k in dies.get(i - 1, ()):
            arena.free(blocks[k])
        for k in sorted(born.get(i, ()), key=lambda k: -p.size[k]):  # large blocks first
            blocks[k] = arena.malloc(p.size[k])
        if arena.end >= limit:
            return None
    return {k: b.offset for k, b in blocks.items()}


def _first_fit(p: _Problem, order: Iterable[int], limit: int) -> Offsets | None:
    """Each buffer in turn at the lowest offset clear of its already placed rivals."""
    off: Offsets = {}
    size, rivals = p.size, p.rivals
    assert rivals is not None
    for k in order:
        at, s = 0, size[k]
        for lo, hi in sorted((off[a], off[a] + size[a]) for a in rivals[k] if a in off):
            if at + s <= lo:
                break
            at = max(at, hi)
        if at + s >= limit:
            return None
        off[k] = at
    return off


def _lowest_first(p: _Problem, members: list[int], key: Key, limit: int) -> Offsets | None:
    """Repeatedly place the unplaced buffer whose lowest clear offset is lowest (ties: `key`).

    Lowest clear offsets only grow as rivals get placed, so a heap with stale entries skipped
    finds the next one; a placement only moves the rivals whose current spot it covers.  A span
    that starts more than the largest size below a spot ends below it: the scan for the next
    clear spot starts there (a bisection), not at the bottom of the arena.
    """
    size, rivals = p.size, p.rivals
    assert rivals is not None
    widest = max((size[k] for k in members), default=0)
    off: Offsets = {}
    pos = dict.fromkeys(members, 0)
    spans: dict[int, list[tuple[int, int]]] = {k: [] for k in members}  # placed rivals, sorted
    rank = {k: key(p, k) for k in members}
    heap = [(0, rank[k], k) for k in members]
    heapq.heapify(heap)
    while heap:
        at, _, k = heapq.heappop(heap)
        if k in off or at != pos[k]:
            continue
        hi = at + size[k]
        if hi >= limit:
            return None
        off[k] = at
        for a in rivals[k]:
            if a in off:
                continue
            sp = spans[a]
            insort(sp, (at, hi))
            lo, s = pos[a], size[a]
            if at < lo + s and lo < hi:  # k covers a's spot: move a up to the next clear one
                for j in range(bisect_left(sp, (lo - widest,)), len(sp)):
                    slo, shi = sp[j]
                    if shi <= lo:
                        continue
                    if lo + s <= slo:
                        break
                    lo = shi
                pos[a] = lo
                heapq.heappush(heap, (lo, rank[a], a))
    return off


class _OutOfNodes(Exception):
    pass


def _search(p: _Problem, members: list[int], target: int,
            nodes: int) -> tuple[Offsets | None, int]:
    """A placement of `members` within `target` granules (None: none found in `nodes` nodes), and
    the nodes used.

    Depth-first over the buffers in order of first use; each goes to the bottom or the top of a
    free gap among the buffers live at its first use.  Gaps whose neighbour dies when the new
    buffer does come first (freed together, they leave one hole, not two); the arena's floor and
    ceiling count as neighbours that never die.  Limited discrepancy: pass `slack` allows taking
    a candidate of rank r with r of the slack; failed (buffer, live placement) states are memoised.
    """
    first, last, size = p.first, p.last, p.size
    order = sorted(members, key=lambda k: (first[k], -size[k], k))
    never = 1 << 62
    off: Offsets = {}
    failed: dict[tuple, int] = {}  # state -> the largest slack it failed with
    left = nodes
    cut = False  # did slack prune a candidate (so that more slack may still succeed)?

    def place(i: int, live: list[int], slack: int) -> bool:
        nonlocal left, cut
        if i == len(order):
            return True
        k = order[i]
        f, end, s = first[k], last[k], size[k]
        live = [a for a in live if last[a] >= f]
        state = (i, tuple(sorted((off[a], a) for a in live)))
        if failed.get(state, -1) >= slack:
            return False
        if left == 0:
            raise _OutOfNodes
        left -= 1
        cands = []
        at, below = 0, never  # `below`: when the buffer under the current gap dies
        for lo, hi, dies in sorted([(off[a], off[a] + size[a], last[a]) for a in live]
                                   + [(target, target, never)]):
            if lo - at >= s:
                cands.append((abs(below - end), at))
                if lo - s > at:
                    cands.append((abs(dies - end), lo - s))
            if hi > at:
                at, below = hi, dies
        cands.sort()
        cut = cut or len(cands) > slack + 1
        live.append(k)
        for r, (_, o) in enumerate(cands[: slack + 1]):
            off[k] = o
            if place(i + 1, live, slack - r):
                return True
        off.pop(k, None)
        failed[state] = max(failed.get(state, -1), slack)
        return False

    try:
        for slack in range(2 * len(order) + 1):
            cut = False
            if place(0, [], slack):
                return off, nodes - left
            if not cut:  # the whole tree failed: no placement with these candidates
                break
    except _OutOfNodes:
        pass
    return None, nodes - left


#: tie-breaking keys over buffer k: larger first / earlier first use / later last use
_KEYS: dict[str, Key] = {
    "size": lambda p, k: (-p.size[k], p.first[k], k),
    "area": lambda p, k: (-p.size[k] * (p.last[k] - p.first[k] + 1), p.first[k], k),
    "life": lambda p, k: (p.first[k] - p.last[k], -p.size[k], p.first[k], k),
    "start": lambda p, k: (p.first[k], -p.size[k], k),
    "end": lambda p, k: (-p.last[k], -p.size[k], k),
}


Placement = Callable[[_Problem, list[int], int], Offsets | None]


def _by(key: Key) -> Placement:
    return lambda p, members, limit: _first_fit(p, sorted(members, key=lambda k: key(p, k)), limit)


def _lowest(key: Key) -> Placement:
    return lambda p, members, limit: _lowest_first(p, members, key, limit)


#: the candidate placements, in the order `auto` tries them (see the module doc); each gives up
#: (None) as soon as its arena would reach `limit`, the best one so far
PLACEMENTS: dict[str, Placement] = {
    "by_size": _by(_KEYS["size"]),
    "lowest_by_start": _lowest(_KEYS["start"]),
    "lowest_by_end": _lowest(_KEYS["end"]),
    "lowest_by_area": _lowest(_KEYS["area"]),
    "lowest_by_life": _lowest(_KEYS["life"]),
    "lowest_by_size": _lowest(_KEYS["size"]),
    "by_area": _by(_KEYS["area"]),
    "tlsf": _tlsf,
}


def _place_device(p: _Problem, policy: str) -> tuple[Offsets, int, str]:
    """Offsets (granules) of every buffer of one device, the arena (granules), the winner."""
    names = list(PLACEMENTS) if policy == "auto" else [policy]
    if policy not in ("auto", "tlsf") and p.rivals is None:
        raise MemoryPlanError(f"{policy} placement: more than {MAX_RIVALS} pairs of "
                              "simultaneously live buffers; use policy='tlsf' or 'auto'")
    bound = p.peak()
    nodes = SEARCH_NODES
    offsets: Offsets = {}
    arena, winner = 0, names[0]
    for comp in p.components:
        best: tuple[int, str, Offsets] | None = None
        large = len(comp) > LARGE_COMPONENT and policy == "auto"
        enough = bound * GOOD_ENOUGH if large else bound
        for name in (LARGE_ORDER if large else names):
            if name != "tlsf" and p.rivals is None:
                continue  # too many pairs for the others: TLSF alone
            off = PLACEMENTS[name](p, comp, best[0] if best else 1 << 62)
            if off is not None:
                best = (p.top(off, comp), name, off)
                if best[0] <= enough:
                    break
        assert best is not None
        target = bound  # search: first the bound, then one granule below the best so far
        while (policy == "auto" and best[0] > bound and nodes > 0
               and len(comp) <= SEARCH_MAX_BUFFERS and p.rivals is not None):
            found, used = _search(p, comp, target, min(nodes, SEARCH_NODES_PER_TARGET))
            nodes -= used
            if found is not None:
                best = (p.top(found, comp), "search", found)
            elif target >= best[0] - 1:
                break
            target = best[0] - 1
        offsets.update((k, best[2][k]) for k in comp)
        if best[0] > arena:
            arena, winner = best[0], best[1]
    return offsets, arena, winner


# -- the plan --------------------------------------------------------------------------------------
@dataclass
class MemoryPlan:
    """Where each optimizable intermediate lives: a byte offset in its device's arena."""

    steps: int = 0
    live: dict[Buffer, tuple[int, int]] = field(default_factory=dict)
    offsets: dict[Buffer, int] = field(default_factory=dict)
    sizes: dict[Buffer, int] = field(default_factory=dict)
    planned: tuple[Buffer, ...] = ()
    excluded: dict[Buffer, str] = field(default_factory=dict)  # buffer -> why it is not planned
    arenas: dict[str, int] = field(default_factory=dict)  # device -> arena bytes
    peaks: dict[str, int] = field(default_factory=dict)  # device -> peak live planned bytes
    policies: dict[str, str] = field(default_factory=dict)  # device -> placement used

    def is_planned(self, buf: Buffer) -> bool:
        return buf in self.offsets

    def offset(self, buf: Buffer) -> int:
        """Byte offset of a planned buffer in its device's arena."""
        if buf not in self.offsets:
            raise KeyError(f"{buf} is not planned ({self._why(buf)}); check is_planned() first")
        return self.offsets[buf]

    def size(self, buf: Buffer) -> int:
        """Bytes reserved in the arena for a planned buffer (nbytes rounded up to ALIGN)."""
        if buf not in self.sizes:
            raise KeyError(f"{buf} is not planned ({self._why(buf)}); check is_planned() first")
        return self.sizes[buf]

    def live_range(self, buf: Buffer) -> tuple[int, int]:
        """(first use, last use) schedule indices, inclusive."""
        if buf not in self.live:
            raise KeyError(f"{buf} does not appear in the planned schedule")
        return self.live[buf]

    def _why(self, buf: Buffer) -> str:
        return self.excluded.get(buf, "not in the schedule")

    @property
    def arena_bytes(self) -> int:
        return sum(self.arenas.values())

    @property
    def planned_bytes(self) -> int:
        return sum(self.sizes.values())

    @property
    def peak_live_bytes(self) -> int:
        return sum(self.peaks.values())

    def __repr__(self) -> str:  # the fields hold every buffer: far too long to print
        return (f"<MemoryPlan {self.steps} steps, {len(self.planned)} planned buffers, "
                f"arena {self.arena_bytes} bytes (peak live {self.peak_live_bytes})>")

    def summary(self) -> str:
        """A short table: per device, planned buffers, their bytes, the arena and the bound."""
        lines = [f"memory plan: {self.steps} items, {len(self.planned)} planned buffers, "
                 f"{len(self.excluded)} kept",
                 f"{'device':<10} {'buffers':>8} {'planned':>10} {'peak live':>10} "
                 f"{'arena':>10} {'ratio':>6}  policy"]
        for dev, arena in self.arenas.items():
            bufs = [b for b in self.planned if b.device == dev]
            peak = self.peaks[dev]
            lines.append(f"{dev:<10} {len(bufs):>8} {sum(self.sizes[b] for b in bufs):>10} "
                         f"{peak:>10} {arena:>10} {arena / peak:>6.3f}  {self.policies[dev]}")
        reasons = Counter(self.excluded.values())
        if reasons:
            lines.append("kept: " + ", ".join(f"{n} {why}" for why, n in reasons.items()))
        return "\n".join(lines)


def _live_ranges(schedule: Sequence[ScheduledKernel],
                 outputs: set[Buffer]) -> dict[Buffer, tuple[int, int]]:
    """First and last use of every buffer (a view's uses count for its base); checks reads."""
    live: dict[Buffer, tuple[int, int]] = {}
    written: set[Buffer] = set()

    def use(b: Buffer | None, i: int) -> None:
        while b is not None:
            live[b] = (live.get(b, (i, i))[0], i)
            b = b.base

    for i, item in enumerate(schedule):
        if not item.bufs:
            raise MemoryPlanError(f"schedule item {i} ({item.name}, {item.kind}) has no buffers; "
                                  "every item writes bufs[0]")
        for b in item.bufs[1:]:
            if b not in written and not b.is_allocated and b not in outputs and b.base is None:
                raise MemoryPlanError(
                    f"schedule item {i} ({item.name}, {item.kind}) reads {b}, which no earlier "
                    "item writes and which is not allocated, an output or a view; schedule the "
                    "item that produces it first, or allocate/realize the buffer beforehand")
        for b in item.bufs:
            use(b, i)
        written.add(item.bufs[0])
    return live


#: the reasons of a buffer kept only for being a view (its base may still be planned)
_MERE_VIEW = ("view", f"{VIEW} buffer")


def _exclusions(schedule: Sequence[ScheduledKernel], outputs: set[Buffer],
                buffers: Iterable[Buffer]) -> dict[Buffer, str]:
    """Why each identity-bearing buffer is not planned (the first matching reason)."""
    light: dict[Buffer, str] = {}
    for item in schedule:
        if item.kind in LIGHT_KINDS:
            for b in item.bufs if item.kind != VIEW else item.bufs[:1]:  # a view, not its base
                light.setdefault(b, f"{item.kind} buffer")
    why: dict[Buffer, str] = {}
    for b in buffers:
        if b in outputs:
            why[b] = "output"
        elif b.is_allocated:
            why[b] = "allocated"
        elif b in light:
            why[b] = light[b]
        elif b.base is not None:
            why[b] = "view"
        elif b.no_opt:
            why[b] = "no_opt"
    for b in list(why):  # the bases of kept views (a mere view leaves its base to the plan)
        if why[b] in _MERE_VIEW:
            continue
        base = b.base
        while base is not None:
            why.setdefault(base, "view base")
            base = base.base
    return why


def plan_memory(schedule: Sequence[ScheduledKernel], outputs: Iterable[Buffer] = (), *,
                policy: str = "auto") -> MemoryPlan:
    """Plan arena offsets for the optimizable intermediates of `schedule` (see the module doc).

    `schedule` is the list of `ScheduledKernel` items that `ren.schedule` returns; `outputs` the
    buffers that must keep their own storage.  `policy`: ``"auto"`` (per component the smallest of
    every placement, then a search when none reaches the bound) or one name of `PLACEMENTS`.
    """
    if policy != "auto" and policy not in PLACEMENTS:
        raise ParameterError(f"unknown memory-plan policy {policy!r}; use 'auto' or one of "
                             + ", ".join(repr(p) for p in PLACEMENTS))
    live, excluded, planned, sizes, problems = _problems(schedule, outputs)
    plan = MemoryPlan(steps=len(schedule), live=live, sizes=sizes, planned=planned,
                      excluded=excluded)
    for dev, (bufs, p) in problems.items():
        offsets, arena, plan.policies[dev] = _place_device(p, policy)
        plan.arenas[dev], plan.peaks[dev] = arena * ALIGN, p.peak() * ALIGN
        plan.offsets.update((b, offsets[k] * ALIGN) for k, b in enumerate(bufs))
    plan.offsets = {b: plan.offsets[b] for b in planned}  # deterministic order
    return plan


def peak_live_bytes(schedule: Sequence[ScheduledKernel], outputs: Iterable[Buffer] = ()) -> int:
    """`plan_memory(schedule, outputs).peak_live_bytes` without placing anything: the bound any
    arena of this order needs (`ren.schedule.linearize` compares orders by it)."""
    problems = _problems(schedule, outputs)[4]
    return sum(p.peak() * ALIGN for _, p in problems.values())


def _problems(schedule: Sequence[ScheduledKernel], outputs: Iterable[Buffer]
              ) -> tuple[dict[Buffer, tuple[int, int]], dict[Buffer, str], tuple[Buffer, ...],
                         dict[Buffer, int], dict[str, tuple[list[Buffer], _Problem]]]:
    """What `plan_memory` and `peak_live_bytes` both start from: every buffer's live range, the
    excluded ones (and why), the planned ones in order of first use with their reserved bytes,
    and per device its planned buffers and their placement problem."""
    outs = _check_arguments(schedule, outputs)
    live = _live_ranges(schedule, outs)
    excluded = _exclusions(schedule, outs, live)
    planned = tuple(b for b in live if b not in excluded)  # dict order = order of first use
    sizes = {b: reserved_bytes(b) for b in planned}
    by_device: dict[str, list[Buffer]] = {}
    for b in planned:
        by_device.setdefault(b.device, []).append(b)
    problems = {dev: (bufs, _Problem([live[b][0] for b in bufs], [live[b][1] for b in bufs],
                                     [sizes[b] // ALIGN for b in bufs]))
                for dev, bufs in by_device.items()}
    return live, excluded, planned, sizes, problems


def _check_arguments(schedule: object, outputs: object) -> set[Buffer]:
    """Bad arguments raise ParameterError here, not a bare TypeError deep inside the planner."""
    expected = "plan_memory expects a list of ScheduledKernel items (what ren.schedule returns)"
    if not isinstance(schedule, Sequence) or isinstance(schedule, str | bytes):
        raise ParameterError(f"{expected}, got {type(schedule).__name__}")
    for i, item in enumerate(schedule):
        if not isinstance(item, ScheduledKernel):
            raise ParameterError(f"{expected}; item {i} is {type(item).__name__}")
        if not isinstance(item.bufs, tuple) or not all(isinstance(b, Buffer) for b in item.bufs):
            raise ParameterError(f"schedule item {i} ({item.name}): bufs must be a tuple of "
                                 f"ren.device.Buffer, got {item.bufs!r}")
    if not isinstance(outputs, Iterable) or isinstance(outputs, str | bytes):
        raise ParameterError("plan_memory: outputs must be an iterable of Buffers, got "
                             f"{type(outputs).__name__}")
    outs = set(outputs)
    bad = [o for o in outs if not isinstance(o, Buffer)]
    if bad:
        raise ParameterError(f"plan_memory: outputs must be Buffers, got {bad[0]!r}")
    return outs
