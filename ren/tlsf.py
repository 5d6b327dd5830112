"""A TLSF-style allocator (Two-Level Segregated Fit) over a growable arena, simulated in granules.

The memory planner (`ren.memory`) replays a schedule through it as its online placement:

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
"""

from __future__ import annotations

SL_LOG2 = 3  # 2**SL_LOG2 second-level classes per power of two


class Block:
    """A physical block of the arena, in granules; `prev`/`next` are its physical neighbours."""

    __slots__ = ("free", "next", "offset", "prev", "size")

    def __init__(self, offset: int, size: int, prev: Block | None = None):
        self.offset, self.size, self.free = offset, size, False
        self.prev: Block | None = prev
        self.next: Block | None = None


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
        self.last: Block | None = None  # the physically last block
        self.fl_bitmap = 0
        self.sl_bitmap: dict[int, int] = {}
        self.lists: dict[tuple[int, int], list[Block]] = {}

    def _insert(self, b: Block) -> None:
        fl, sl = _mapping(b.size)
        b.free = True
        self.lists.setdefault((fl, sl), []).append(b)
        self.sl_bitmap[fl] = self.sl_bitmap.get(fl, 0) | (1 << sl)
        self.fl_bitmap |= 1 << fl

    def _remove(self, b: Block) -> None:
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

    def _find(self, size: int) -> Block | None:
        fl, sl = _mapping(size)
        fits = [b for b in self.lists.get((fl, sl), ()) if b.size >= size]
        cls = (fl, sl)
        while not fits:
            above = self._next_class(*cls)
            if above is None:
                return None
            cls = above
            fits = self.lists[cls]
        return min(fits, key=lambda b: (b.size, b.offset))

    def malloc(self, size: int) -> Block:
        block = self._find(size)
        if block is None:  # grow the arena at its end
            tail = self.last
            if tail is not None and tail.free:
                self._remove(tail)
                self.end += size - tail.size
                tail.size = size
                return tail
            block = Block(self.end, size, tail)
            if tail is not None:
                tail.next = block
            self.last, self.end = block, self.end + size
            return block
        self._remove(block)
        if block.size > size:  # split: the request takes the low end
            rest = Block(block.offset + size, block.size - size, block)
            rest.next, block.next, block.size = block.next, rest, size
            if rest.next is not None:
                rest.next.prev = rest
            else:
                self.last = rest
            self._insert(rest)
        return block

    def free(self, b: Block) -> None:
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
