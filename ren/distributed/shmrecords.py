"""Records of the same-host path (`ren.distributed.shm`): the writer, the message, the receiver.

`Segments` writes a job's records: into a pool slot of its process (`ren.distributed.shmslots`)
where one is free, else into a segment file of their own (`ren.distributed.shmfiles`), else
(no room in `SHM_DIR`) not at all, and the record travels in the message.  `Shared` is what
Dask then sends (the record's header, the file's name, the frames' offsets and sizes), and
`receive` turns it back into a `Sealed` record on the other side: copied out of a pool slot,
read in place from a borrowed one, or mapped from a segment.
"""

from __future__ import annotations

import itertools
import os
import struct
import weakref
from typing import Any

import numpy as np

from ren.distributed import frames
from ren.distributed.frames import Sealed
from ren.distributed.shmfiles import (
    ALIGN,
    HEAD,
    MIN_BYTES,
    NAME,
    NO_SPACE,
    SHM_DIR,
    job_alive,
    map_segment,
    path_of,
    remove_file,
    write_segment,
)
from ren.distributed.shmslots import _Slot, _state, borrow_slot, pool_for, read_slot
from ren.errors import SerializationError

_counter = itertools.count()



# -- segments ---------------------------------------------------------------------------------
class Segments:
    """Writes the records of one job of at least `least` bytes of frames into segments named
    ``<prefix>-<pid>.<n>``; `names` lists those it made (`discard` unlinks them)."""

    def __init__(self, prefix: str, least: int = MIN_BYTES, pooled: bool = False,
                 borrow: bool = False, filled: SlotPages | None = None) -> None:
        self.prefix, self.least, self.job = f"{prefix}-{os.getpid()}", least, prefix
        #: a pool slot a replay wrote its outputs into (`SlotPages`): a record whose frames
        #: are all there goes out in it as it is, without a copy
        self.filled = filled
        #: the reader may use a pool slot's pages as they are until its task ends (`borrow`)
        self.borrow = borrow
        self.names: list[str] = []
        self.slots: list[_Slot] = []  # pool slots it filled
        #: reusable slots of this process for the job's client (`Pool`), when `pooled`
        self.pool = pool_for(prefix.rsplit("-", 1)[0]) if pooled else None

    def seal(self, rec: Sealed) -> Any:
        """`rec` itself when it is small, else a `Shared` of its frames in a new segment."""
        sizes = [memoryview(f).nbytes for f in rec.frames]
        if sum(sizes) < self.least:
            return rec
        if self.filled is not None:
            at = self.filled.claim(rec.frames)
            if at is not None:  # written there by the replay: nothing to copy
                slot = self.filled.slot
                assert slot is not None  # (a claim needs one)
                self.slots.append(slot)
                shared = Shared(rec, slot.name, at, sizes, self.filled.gen)
                shared.borrow = self.borrow
                return shared
        offsets, end = [], 0
        for s in sizes:
            offsets.append(end)
            end += -(-s // ALIGN) * ALIGN
        if self.pool is not None:
            slot = self.pool.take(self.job, HEAD + end)
            if slot is not None:
                self.slots.append(slot)
                at = [HEAD + o for o in offsets]
                shared = Shared(rec, slot.name, at, sizes, slot.fill(rec, at, sizes))
                shared.borrow = self.borrow
                return shared
        name = f"{self.prefix}.{next(_counter)}"
        try:
            write_segment(path_of(name), rec.frames, offsets, end)
        except OSError as e:
            if e.errno not in NO_SPACE:
                raise
            return rec  # /dev/shm is full: the frames travel in the message, as with "off"
        self.names.append(name)
        return Shared(rec, name, offsets, sizes)

    def discard(self) -> None:
        """Unlink every segment this writer made (ENOENT: a receiver took it already) and free
        the pool slots it filled (for a record that will not be sent)."""
        for n in self.names:
            remove_file(path_of(n))
        self.names.clear()
        for slot in self.slots:  # its pool slots free again
            struct.pack_into("<Q", slot.mm, 0, 0)
        self.slots.clear()


class SlotPages:
    """An output provider for `ren.replay.outputs_into` (a worker's replay): the pages of a
    pool slot of this process, taken for the job `prefix` (its smallest record `least`), as
    the arrays the replay writes its outputs into.  `Segments(filled=...)` then sends a record
    whose frames are exactly those arrays in that slot (`claim`), and the result crosses to
    the client without a copy.  A slot no record claimed is freed when the last view of its
    pages goes (its frames may still be on their way in a message); a claimed one is freed by
    its reader, as every result's slot."""

    def __init__(self, prefix: str, least: int = MIN_BYTES) -> None:
        self.job, self.least = prefix, least
        self.slot: _Slot | None = None
        self.gen = 0
        self.base = 0  # the address of the slot's mapping
        self.regions: list[tuple[int, int]] = []  # (address, bytes) handed out
        self._free: Any = None
        self.claimed = False

    def __call__(self, shapes: list[tuple[int, int]]) -> list[np.ndarray] | None:
        if self.slot is not None or not shapes or SHM_DIR is None:
            return None
        sizes = [4 * r * c for r, c in shapes]
        if sum(sizes) < self.least or not job_alive(self.job):
            return None
        offsets, end = [], 0
        for size in sizes:
            offsets.append(HEAD + end)
            end += -(-size // ALIGN) * ALIGN
        slot = pool_for(self.job.rsplit("-", 1)[0]).take(self.job, HEAD + end)
        if slot is None:
            return None
        self.slot, self.gen = slot, _state(slot.mm)
        pages = np.frombuffer(slot.mm, np.uint8)
        self.base = pages.ctypes.data  # (the mapping stays put while the pool holds the slot)
        # not claimed by a record: freed when the last view goes (a replay that failed, a
        # result sent in frames that are views of these pages)
        self._free = weakref.finalize(pages, _free_own, slot, self.gen)
        out = []
        for off, size, shape in zip(offsets, sizes, shapes):
            arr = pages[off:off + size].view(np.uint32).reshape(shape)
            self.regions.append((arr.ctypes.data, size))
            out.append(arr)
        return out

    def claim(self, frames: Any) -> list[int] | None:
        """The offsets in the slot of `frames` when each is one of the arrays handed out (the
        record then goes out in this slot, which its reader frees), else None."""
        if self.slot is None or self.claimed or not frames:
            return None
        at = []
        for f in frames:
            view = np.frombuffer(f, np.uint8)
            address = view.ctypes.data
            if (address, view.nbytes) not in self.regions:
                return None
            at.append(address - self.base)
        if _state(self.slot.mm) != self.gen:
            return None  # taken back meanwhile (its job ended): copy instead
        self.claimed = True
        self._free.detach()
        return at


def _free_own(slot: _Slot, gen: int) -> None:
    """Free a slot of this process's pool if it still holds generation `gen`."""
    if _state(slot.mm) == gen:
        struct.pack_into("<Q", slot.mm, 0, 0)


class Shared:
    """A `Sealed` record whose frames are in a segment (module doc): what Dask sends is its
    header, the segment's name, and the frames' offsets and sizes."""

    __slots__ = ("borrow", "gen", "name", "offsets", "record", "sizes")

    def __init__(self, record: Sealed, name: str, offsets: list[int], sizes: list[int],
                 gen: int = 0) -> None:
        self.record, self.name, self.offsets, self.sizes = record, name, offsets, sizes
        self.gen = gen  # a pool slot's generation (0: a segment of its own)
        #: the reader may read the slot in place and free it when its task ends
        self.borrow = False

    @property
    def nbytes(self) -> int:
        return self.record.nbytes

    def header(self) -> dict[str, Any]:
        head = {**self.record.header(), "shm": self.name, "offsets": self.offsets,
                "sizes": self.sizes, "gen": self.gen}
        if self.borrow:
            head["borrow"] = True
        return head

    def __repr__(self) -> str:
        return f"<Shared {self.record.kind} {self.nbytes} bytes in {self.name}>"

    def __reduce_ex__(self, protocol: Any) -> tuple:
        return receive, (self.header(),)


def receive(header: Any) -> Sealed:
    """The `Sealed` record of a `Shared` header: its segment mapped (`map_segment`); the
    checksum is verified when the record is decoded."""
    if not isinstance(header, dict) or not isinstance(header.get("shm"), str):
        raise SerializationError(f"a shared-memory Ren record arrived with a malformed header "
                                 f"{header!r:.120}")
    offsets, sizes = header.get("offsets"), header.get("sizes")
    if not (isinstance(offsets, list | tuple) and isinstance(sizes, list | tuple) and
            len(offsets) == len(sizes) and
            all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 40
                for v in (*offsets, *sizes))):
        raise SerializationError("a shared-memory Ren record arrived with malformed frame "
                                 "offsets or sizes")
    if SHM_DIR is None:
        raise SerializationError("a shared-memory Ren record arrived in a process without "
                                 "/dev/shm; set REN_DISTRIBUTED_SHM=off on the client")
    name = header["shm"]
    m = NAME.fullmatch(name)
    gen = header.get("gen", 0)
    if not isinstance(gen, int) or isinstance(gen, bool) or gen < 0:
        raise SerializationError("a shared-memory Ren record arrived with a malformed slot "
                                 "generation")
    if gen:  # a pool slot: copied out; an input's slot freed now, a result's once decoded
        by_client = m is not None and name.rsplit("-", 1)[-1].split(".")[0] == m.group(1)
        if by_client and header.get("borrow") is True:  # read in place, freed by its task
            rec = Sealed.from_header(header, borrow_slot(name, gen, list(offsets),
                                                         list(sizes)))
            rec.origin = (name, gen)
            return rec
        rec = Sealed.from_header(header, read_slot(name, gen, list(offsets), list(sizes),
                                                   free=by_client))
        if not by_client:
            rec.origin = (name, gen)
        return rec
    # a client's segment (an input) is unlinked by the worker that maps it; a worker's (a
    # result) stays until its job ends: Dask fetches a result again when a gather of several
    # fails half-way (a worker killed meanwhile), and that must find the segment
    by_client = m is not None and name.rsplit("-", 1)[-1].split(".")[0] == m.group(1)
    return Sealed.from_header(header, map_segment(name, list(offsets), list(sizes), by_client))


class Deferred:
    """A `Shared` record not read yet: what the client's unpickling of a posted group's
    results (`ren.distributed.posts.take`) makes of each, instead of copying every record of
    the group out of its slot at once.  `received` reads it (the copy) just before its
    decode, whose checksum then runs over a copy still in the caches.  Measured (N = 2^14, one
    worker: groups of up to 27 results of 1.8 MB, ~49 MB, more than the 32 MiB L3; the
    client's main thread, 3 alternated pairs): the checksum 0.09-0.10 -> 0.06-0.07 ms per
    result; the copy and the range check unchanged."""

    __slots__ = ("head",)

    def __init__(self, header: Any) -> None:
        self.head = header

    def header(self) -> Any:
        return self.head

    def __repr__(self) -> str:
        return f"<Deferred {self.head.get('shm') if isinstance(self.head, dict) else '?'}>"


def received(tree: Any) -> Any:
    """`tree` with each `Deferred` record read (`receive`: the same checks and errors)."""
    if isinstance(tree, Deferred):
        return receive(tree.head)
    t = type(tree)
    if t is list or t is tuple:
        return t(received(v) for v in tree)
    if t is dict:
        return {k: received(v) for k, v in tree.items()}
    return tree


def _dask_serialize(rec: Shared) -> tuple[dict[str, Any], list[Any]]:
    return rec.header(), []


def _dask_deserialize(header: dict[str, Any], frames: list[Any]) -> Sealed:
    return receive(header)


def _sizeof(rec: Shared) -> int:
    return rec.nbytes + 200


def register_dask() -> None:
    """Register `Shared` with Dask's serialization family (called by
    `ren.distributed.frames.register_dask`)."""
    from dask.sizeof import sizeof
    from distributed.protocol.serialize import dask_deserialize, dask_serialize

    dask_serialize.register(Shared)(_dask_serialize)
    dask_deserialize.register(Shared)(_dask_deserialize)
    sizeof.register(Shared)(_sizeof)


if frames.registered():  # Dask's family knows `Sealed` already: `Shared` too
    register_dask()


__all__ = ["Deferred", "Segments", "Shared", "SlotPages", "receive", "received",
           "register_dask"]
