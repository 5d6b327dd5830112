"""A memory-aware order of a schedule's items (issue 41 §3: the JIT arena).

    ordered = memory_order(items, outputs)

`ren.memory.plan_memory` packs the arena exactly for the order it is given (arena = peak-live
bytes on the bootstrapping), so the order sets the arena.  `toposort` lists a kernel right where
its first consumer's walk reaches it; a value read by two consumers far apart stays live between
them.  The n16 bootstrapping's peak (CoeffToSlot's first hoisted linear transform, 2^13: 106 of
106 MiB at one step) is such a case: every baby step's rotated digits σ_b(d_j) (7 per step, in
the extended basis) are made, then each step's first inner product (c0) runs, and only after
all of them each step's second one (c1): 49 rotated digits live at once instead of 7.

**The order** is a greedy list schedule (as in XLA's memory scheduler): repeatedly run a ready
item (all its dependencies run), preferring one that frees more bytes than it allocates (it is
the last use of a buffer; the most net bytes first), and otherwise the ready item that comes
first in the given order (so the rest keeps the given order: its team stretches, its locality,
and the short distances `ren.schedule.regenerate_leaf_chains` relies on).  Bytes are those of
the base buffers items write (outputs and allocated buffers excluded); a buffer is live from its
first use to its last, a view's uses counting for its base, as the memory plan counts them.

**Dependencies** come from the buffers alone, per base buffer in the given order: a read
follows the last write, a write follows the last write and every read since (so writes into
views of one base keep their order).  A view item (which only names a region of its base) is
emitted right before the first item that needs it, so it neither blocks a consumer nor extends
its base's life; a view nothing depends on is an ordinary item.  So is a short leaf chain (at
most `LAZY_DEPTH` items from leaf buffers: a lean key's regenerated row, a diagonal's TO_RNS and
NTT), as toposort places it; its value is not weighed, since a reader far from it computes it
again anyway (without that, a lean c1 inner product waits for its key rows and never looks
ready: the lean 2^13 arena stayed at 76.75 MiB; with it 62.12).

Measured (n16 shape, arena toposort -> this order, same words): 2^13 fast 106.25 -> 49.31 MiB,
lean 76.75 -> 62.12; 2^14 fast 212.62 -> 118.50, lean 204.12 -> 151.12 MiB.

`ren.schedule.linearize` applies it (the switch REN_MEMORY_ORDER, on by default) and keeps the
new order only where it lowers the schedule's peak-live bytes (after `regenerate_leaf_chains` on
both), so a graph it cannot help keeps its order, word for word.  Kernels are deterministic and
random kernels carry their own seeds (`ren.random`), so any dependency order computes the same
words.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence

from ren.device import Buffer
from ren.errors import ScheduleError
from ren.kernel import VIEW, ScheduledKernel
from ren.memory import reserved_bytes

#: the longest chain of items from leaf buffers that runs with the item that needs it (as
#: `ren.schedule.REGENERATE_DEPTH`: a diagonal's TO_RNS and NTT, a lean key's row)
LAZY_DEPTH = 2


def dependencies(items: Sequence[ScheduledKernel]) -> list[set[int]]:
    """Per item, the earlier items it must follow (through shared base buffers: see the
    module doc)."""
    last_write: dict[Buffer, int] = {}
    reads_since: dict[Buffer, list[int]] = {}
    deps: list[set[int]] = []
    for i, it in enumerate(items):
        ins = {b.root for b in it.bufs[1:]}
        d = {last_write[r] for r in ins if r in last_write}
        out = None if it.kind == VIEW else it.bufs[0].root
        if out is not None:
            if out in last_write:
                d.add(last_write[out])
            d.update(reads_since.get(out, ()))
        for r in ins:
            reads_since.setdefault(r, []).append(i)
        if out is not None:
            last_write[out], reads_since[out] = i, []
        d.discard(i)
        deps.append(d)
    return deps


def memory_order(items: Sequence[ScheduledKernel], outputs: Iterable[Buffer] = ()
                 ) -> list[ScheduledKernel]:
    """`items` in a dependency order that lowers the live bytes (the module doc); `outputs`:
    base buffers that keep their own storage (not counted)."""
    n = len(items)
    deps = dependencies(items)
    dependents: list[list[int]] = [[] for _ in range(n)]
    for i, d in enumerate(deps):
        for j in d:
            dependents[j].append(i)
    # lazy: a view, or the end of a chain of at most LAZY_DEPTH items from leaves (a lean key's
    # regenerated row, a diagonal's expansion), with something that needs it: emitted right
    # before the first item that needs it, as toposort places it
    lazy = [False] * n
    depth = [0] * n  # of a lazy item that is no view: its chain's length
    for i, it in enumerate(items):
        if not dependents[i]:
            continue
        if it.kind == VIEW:
            lazy[i] = True
        elif all(lazy[j] for j in deps[i]):
            depth[i] = 1 + max((depth[j] for j in deps[i]), default=0)
            lazy[i] = depth[i] <= LAZY_DEPTH

    outs = set(outputs)
    written = {it.bufs[0].root for it in items if it.kind != VIEW}
    # a leaf chain's value is left out of the bytes: it runs with its first reader, and a
    # later reader far from it computes it again (`ren.schedule.regenerate_leaf_chains`)
    chains = {it.bufs[0] for i, it in enumerate(items)
              if lazy[i] and it.kind != VIEW and it.bufs[0].base is None}
    size = {r: reserved_bytes(r) for r in written
            if r not in outs and r not in chains and not r.is_allocated and not r.no_opt}
    # per item, the items it waits for (behind its lazy ones) and the sized bases it touches
    # (its lazy ones' too: they run with it)
    eff: list[set[int]] = [set() for _ in range(n)]
    acc: list[dict[Buffer, None]] = [{} for _ in range(n)]
    for i, it in enumerate(items):
        acc[i] = dict.fromkeys(r for r in (b.root for b in it.bufs) if r in size)
        for j in sorted(deps[i]):
            if lazy[j]:
                eff[i] |= eff[j]
                acc[i].update(acc[j])
            else:
                eff[i].add(j)
    pending: dict[Buffer, set[int]] = {}  # a sized base -> the regular items yet to touch it
    waiting = [0] * n
    waiters: list[list[int]] = [[] for _ in range(n)]
    for i in range(n):
        if lazy[i]:
            continue
        for r in acc[i]:
            pending.setdefault(r, set()).add(i)
        for j in eff[i]:
            waiters[j].append(i)
        waiting[i] = len(eff[i])

    live: set[Buffer] = set()
    key: list[tuple[int, int, int]] = [(0, 0, 0)] * n

    def score(i: int) -> tuple[int, int, int]:
        net = 0
        for r in acc[i]:
            if r not in live:
                net -= size[r]
            if len(pending[r]) == 1:  # i is its last use
                net += size[r]
        return (0, -net, i) if net > 0 else (1, i, 0)

    heap: list[tuple[int, int, int]] = []

    def push(i: int) -> None:
        key[i] = score(i)
        heapq.heappush(heap, key[i])

    for i in range(n):
        if not lazy[i] and not waiting[i]:
            push(i)
    done = [False] * n
    out: list[ScheduledKernel] = []

    def emit_lazy(i: int) -> None:
        for j in sorted(deps[i]):
            if lazy[j] and not done[j]:
                emit_lazy(j)
                done[j] = True
                out.append(items[j])

    while heap:
        k = heapq.heappop(heap)
        i = k[1] if k[0] else k[2]
        if done[i] or k != key[i]:
            continue  # a stale entry: its score changed since
        emit_lazy(i)
        done[i] = True
        out.append(items[i])
        changed: set[int] = set()
        for r in acc[i]:
            p = pending[r]
            p.discard(i)
            if r not in live:
                live.add(r)
                changed |= p
            elif len(p) == 1:
                changed |= p
        for j in waiters[i]:
            waiting[j] -= 1
            if not waiting[j]:
                changed.add(j)
        for j in changed:
            if not waiting[j] and not done[j]:
                push(j)
    if len(out) != n:  # a cycle cannot arise from a valid order; never drop an item
        raise ScheduleError(f"memory_order emitted {len(out)} of {n} items (a dependency cycle "
                            "among them: a bug in Ren; REN_MEMORY_ORDER=0 "
                            "schedules in toposort's order)")
    return out
