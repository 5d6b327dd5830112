"""Memory planning: pack intermediate buffers of a schedule into one arena per device.

    plan = plan_memory(schedule, outputs)
    plan.offset(buf), plan.size(buf), plan.arenas, plan.arena_bytes, plan.peak_live_bytes

**Live ranges.**  Item ``i`` of the schedule writes ``bufs[0]`` and reads ``bufs[1:]``.  A buffer
is live from its first use to its last use, both inclusive: written at ``i`` and read last at
``j`` it is live during ``[i, j]`` (so an item's output never shares bytes with its inputs).  A
view's uses also count as uses of its base (the view reads the base's storage).

**Who is planned.**  Buffers whose identity matters keep their own storage: the final outputs,
buffers that are already allocated, both buffers of every ``copy`` and ``view`` item, views and
the bases of views, and ``no_opt`` buffers.  Every other buffer is an *optimizable intermediate*.

**Allocator.**  The intermediates are placed by simulating, step by step, a TLSF-style allocator
(Two-Level Segregated Fit) over one growable arena per device, in 256-byte granules:

* free blocks sit in segregated lists indexed by a first level (the power of two of the size) and
  a second level (``2**SL_LOG2`` equal slices of that power-of-two range); one bitmap of non-empty
  first levels and one per first level of non-empty second levels find the next non-empty class
  in O(1);
* allocation searches the request's own class for the smallest block that fits, then the next
  non-empty classes (every block there fits), taking the smallest block (lowest address on ties):
  an exact best fit, deterministic;
* the chosen block is split: the request takes its low end, the rest goes back as a free block;
* freeing coalesces the block with free physical neighbours before filing it;
* when nothing fits, the arena grows at its end (absorbing a free block that ends the arena), so
  the final arena size is the allocator's high-water mark.

At step ``i`` the buffers whose last use was ``i - 1`` are freed first, then what item ``i``
writes is allocated (largest first).

**Offline check.**  An online allocator only sees the past; the planner knows every live range.
So it also places each device's buffers *by size*: largest first (ties: earliest first use), each
at the lowest offset clear of every already-placed buffer whose live range meets its own (rivals
come from one sweep over the schedule; skipped past ``MAX_RIVALS`` overlapping pairs).  Per
device the smaller arena wins, TLSF on a tie; ``plan.policies`` says which, and
``policy="tlsf"`` / ``"by_size"`` forces one.  On synthetic CKKS-shaped schedules TLSF alone
lands within about 1.2x of the bound; by-size rescues the cases where a long-lived buffer sits in
the middle of the arena and fragments it (key switching: 1.13-1.18x -> 1.0x).

``peak_live_bytes`` — the largest total of simultaneously live reservations, per device, summed —
is the lower bound any placement needs; ``arena_bytes`` is what the plan uses.  The plan is made
once from the schedule; execution reuses the offsets.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate

from ren.device import Buffer
from ren.errors import MemoryPlanError, ParameterError
from ren.kernel import ScheduledKernel

ALIGN = 256  # bytes: block sizes and offsets are multiples of this
SL_LOG2 = 3  # 2**SL_LOG2 second-level classes per power of two
MAX_RIVALS = 1_000_000  # by-size placement is skipped past this many overlapping pairs


def reserved_bytes(buf: Buffer) -> int:
    """The bytes a planned buffer reserves in its arena: nbytes rounded up to ALIGN (>= ALIGN)."""
    return max(ALIGN, -(-buf.nbytes // ALIGN) * ALIGN)


# -- the TLSF simulation ---------------------------------------------------------------------------
class _Block:
    """A physical block of the arena, in granules; `prev`/`next` are its physical neighbours."""

    __slots__ = ("free", "next", "offset", "prev", "size")

    def __init__(self, offset: int, size: int, prev: _Block | None = None):
        self.offset, self.size, self.free = offset, size, False
        self.prev: _Block | None = prev
        self.next: _Block | None = None


def _mapping(size: int) -> tuple[int, int]:
    """The (first level, second level) class of a block of `size` granules."""
    fl = size.bit_length() - 1
    if fl >= SL_LOG2:
        sl = (size >> (fl - SL_LOG2)) - (1 << SL_LOG2)
    else:
        sl = (size - (1 << fl)) << (SL_LOG2 - fl)
    return fl, sl


def _lowest_bit(x: int) -> int:
    return (x & -x).bit_length() - 1


class TLSFArena:
    """A growable arena managed by a TLSF-style allocator (sizes and offsets in granules)."""

    def __init__(self) -> None:
        self.end = 0  # arena size: the high-water mark
        self.last: _Block | None = None  # the physically last block
        self.fl_bitmap = 0
        self.sl_bitmap: dict[int, int] = {}
        self.lists: dict[tuple[int, int], list[_Block]] = {}

    def _insert(self, b: _Block) -> None:
        fl, sl = _mapping(b.size)
        b.free = True
        self.lists.setdefault((fl, sl), []).append(b)
        self.sl_bitmap[fl] = self.sl_bitmap.get(fl, 0) | (1 << sl)
        self.fl_bitmap |= 1 << fl

    def _remove(self, b: _Block) -> None:
        fl, sl = _mapping(b.size)
        blocks = self.lists[(fl, sl)]
        blocks.remove(b)
        b.free = False
        if not blocks:
            self.sl_bitmap[fl] &= ~(1 << sl)
            if not self.sl_bitmap[fl]:
                self.fl_bitmap &= ~(1 << fl)

    def _next_class(self, fl: int, sl: int) -> tuple[int, int] | None:
        """The first non-empty class strictly above (fl, sl), from the bitmaps."""
        above = self.sl_bitmap.get(fl, 0) & (-1 << (sl + 1))
        if above:
            return fl, _lowest_bit(above)
        fls = self.fl_bitmap & (-1 << (fl + 1))
        if not fls:
            return None
        fl = _lowest_bit(fls)
        return fl, _lowest_bit(self.sl_bitmap[fl])

    def _find(self, size: int) -> _Block | None:
        fl, sl = _mapping(size)
        fits = [b for b in self.lists.get((fl, sl), ()) if b.size >= size]
        cls: tuple[int, int] | None = (fl, sl)
        while not fits:
            cls = self._next_class(*cls)
            if cls is None:
                return None
            fits = self.lists[cls]
        return min(fits, key=lambda b: (b.size, b.offset))

    def malloc(self, size: int) -> _Block:
        block = self._find(size)
        if block is None:  # grow the arena at its end
            tail = self.last
            if tail is not None and tail.free:
                self._remove(tail)
                self.end += size - tail.size
                tail.size = size
                return tail
            block = _Block(self.end, size, tail)
            if tail is not None:
                tail.next = block
            self.last, self.end = block, self.end + size
            return block
        self._remove(block)
        if block.size > size:  # split: the request takes the low end
            rest = _Block(block.offset + size, block.size - size, block)
            rest.next, block.next, block.size = block.next, rest, size
            if rest.next is not None:
                rest.next.prev = rest
            else:
                self.last = rest
            self._insert(rest)
        return block

    def free(self, b: _Block) -> None:
        for nb in (b.prev, b.next):  # coalesce with free physical neighbours
            if nb is None or not nb.free:
                continue
            self._remove(nb)
            lo, hi = (nb, b) if nb is b.prev else (b, nb)
            lo.size += hi.size
            lo.next = hi.next
            if hi.next is not None:
                hi.next.prev = lo
            if self.last is hi:
                self.last = lo
            b = lo
        self._insert(b)


# -- placements: buffer -> byte offset, for the planned buffers of one device -------------------
Placement = dict[Buffer, int]


def place_tlsf(bufs: Sequence[Buffer], live: dict[Buffer, tuple[int, int]],
               sizes: dict[Buffer, int]) -> Placement:
    """Replay the live ranges through a TLSF arena: free after last use, allocate at first use."""
    born: dict[int, list[Buffer]] = {}
    dies: dict[int, list[Buffer]] = {}
    for b in bufs:
        first, last = live[b]
        born.setdefault(first, []).append(b)
        dies.setdefault(last, []).append(b)
    arena = TLSFArena()
    blocks: dict[Buffer, _Block] = {}
    offsets: Placement = {}
    for i in sorted(born.keys() | {d + 1 for d in dies}):
        for b in dies.get(i - 1, ()):
            arena.free(blocks[b])
        for b in sorted(born.get(i, ()), key=lambda b: -sizes[b]):  # large blocks first
            blocks[b] = arena.malloc(sizes[b] // ALIGN)
            offsets[b] = blocks[b].offset * ALIGN
    return offsets


def place_by_size(bufs: Sequence[Buffer], live: dict[Buffer, tuple[int, int]],
                  sizes: dict[Buffer, int]) -> Placement | None:
    """Offline: largest first, each at the lowest offset clear of its placed live-range rivals.

    Quadratic in the number of simultaneously live buffers: gives up (None) past MAX_RIVALS pairs.
    """
    rank = {b: k for k, b in enumerate(bufs)}
    pairs = 0
    rivals: dict[Buffer, list[Buffer]] = {b: [] for b in bufs}
    active: dict[Buffer, None] = {}
    for b in sorted(bufs, key=lambda b: (live[b][0], rank[b])):  # sweep over first uses
        first = live[b][0]
        for a in [a for a in active if live[a][1] < first]:
            del active[a]
        pairs += len(active)
        if pairs > MAX_RIVALS:
            return None
        for a in active:
            rivals[a].append(b)
            rivals[b].append(a)
        active[b] = None
    offsets: Placement = {}
    for b in sorted(bufs, key=lambda b: (-sizes[b], live[b][0], rank[b])):
        spans = sorted((offsets[a], offsets[a] + sizes[a]) for a in rivals[b] if a in offsets)
        at = 0
        for lo, hi in spans:
            if at + sizes[b] <= lo:
                break
            at = max(at, hi)
        offsets[b] = at
    return offsets


PLACEMENTS = {"tlsf": place_tlsf, "by_size": place_by_size}


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

    def use(b: Buffer, i: int) -> None:
        live[b] = (live.get(b, (i, i))[0], i)
        if b.base is not None:
            use(b.base, i)

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


def _exclusions(schedule: Sequence[ScheduledKernel], outputs: set[Buffer],
                buffers: Iterable[Buffer]) -> dict[Buffer, str]:
    """Why each identity-bearing buffer is not planned (the first matching reason)."""
    light: dict[Buffer, str] = {}
    for item in schedule:
        if item.kind in ("copy", "view"):
            for b in item.bufs:
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
    for b in list(why):
        base = b.base
        while base is not None:
            why.setdefault(base, "view base")
            base = base.base
    return why


def _peak(bufs: Sequence[Buffer], live: dict[Buffer, tuple[int, int]],
          sizes: dict[Buffer, int]) -> int:
    """The largest total of reserved bytes live at one step."""
    delta: dict[int, int] = {}
    for b in bufs:
        first, last = live[b]
        delta[first] = delta.get(first, 0) + sizes[b]
        delta[last + 1] = delta.get(last + 1, 0) - sizes[b]
    return max(accumulate(delta[step] for step in sorted(delta)), default=0)


def plan_memory(schedule: Sequence[ScheduledKernel], outputs: Iterable[Buffer] = (), *,
                policy: str = "auto") -> MemoryPlan:
    """Plan arena offsets for the optimizable intermediates of `schedule` (see the module doc).

    `policy`: ``"auto"`` (per device the smaller of the TLSF and by-size arenas), ``"tlsf"`` or
    ``"by_size"``.
    """
    if policy != "auto" and policy not in PLACEMENTS:
        raise ParameterError(f"unknown memory-plan policy {policy!r}; use 'auto', "
                         + " or ".join(repr(p) for p in PLACEMENTS))
    outs = set(outputs)
    live = _live_ranges(schedule, outs)
    excluded = _exclusions(schedule, outs, live)
    planned = tuple(b for b in live if b not in excluded)  # dict order = order of first use
    sizes = {b: reserved_bytes(b) for b in planned}
    plan = MemoryPlan(steps=len(schedule), live=live, sizes=sizes, planned=planned,
                      excluded=excluded)
    by_device: dict[str, list[Buffer]] = {}
    for b in planned:
        by_device.setdefault(b.device, []).append(b)
    for dev, bufs in by_device.items():
        best: tuple[int, str, Placement] | None = None
        for name in PLACEMENTS if policy == "auto" else (policy,):
            offsets = PLACEMENTS[name](bufs, live, sizes)
            if offsets is None:
                continue
            arena = max(offsets[b] + sizes[b] for b in bufs)
            if best is None or arena < best[0]:
                best = (arena, name, offsets)
        if best is None:  # only when by_size was forced and gave up
            raise MemoryPlanError(f"by-size placement on {dev}: more than {MAX_RIVALS} pairs of "
                                  "simultaneously live buffers; use policy='tlsf' or 'auto'")
        plan.arenas[dev], plan.policies[dev] = best[0], best[1]
        plan.offsets.update(best[2])
        plan.peaks[dev] = _peak(bufs, live, sizes)
    plan.offsets = {b: plan.offsets[b] for b in planned}  # deterministic order
    return plan
