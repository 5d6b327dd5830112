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
from typing import Any

from ren.distributed import frames
from ren.distributed.frames import Sealed
from ren.distributed.shmfiles import (
    ALIGN,
    HEAD,
    MIN_BYTES,
    NAME,
    NO_SPACE,
    SHM_DIR,
    map_segment,
    path_of,
    remove_file,
    write_segment,
)
from ren.distributed.shmslots import _Slot, borrow_slot, pool_for, read_slot
from ren.errors import SerializationError

_counter = itertools.count()



# -- segments ---------------------------------------------------------------------------------
class Segments:
    """Writes the records of one job of at least `least` bytes of frames into segments named
    ``<prefix>-<pid>.<n>``; `names` lists those it made (`discard` unlinks them)."""

    def __init__(self, prefix: str, least: int = MIN_BYTES, pooled: bool = False,
                 borrow: bool = False) -> None:
        self.prefix, self.least, self.job = f"{prefix}-{os.getpid()}", least, prefix
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


__all__ = ["Segments", "Shared", "receive", "register_dask"]
