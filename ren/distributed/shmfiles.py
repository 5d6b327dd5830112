"""The files of the same-host path (`ren.distributed.shm`): segments, pool slots, and `Shared`.

This module writes a record's frames into files in `SHM_DIR` (tmpfs: memory) and reads them
back; `ren.distributed.shm` decides when a job uses it and when its files go.  The Dask message
carries only the record's header with its checksum, the file's name, and the frames' offsets
and sizes (`Shared`).  The receiver decodes the record as any other: the checksum, the frames'
lengths and the residue ranges are checked as before, so a corrupted, truncated, missing or
overwritten file raises `SerializationError`.

**Pool slots (what a job uses).**  Each writer process (the client for inputs, a worker for
results) keeps a `Pool` per client: up to `POOL_SLOTS` files ``<client>-pool-<pid>.<k>``,
mapped for good and written over.  A slot's first word is its state: 0 is free, else the
generation of the record in it, which the message names too.  The writer copies the frames
into pages that already exist.  The reader checks the generation, copies the frames out (one
C copy each into a buffer of its own), checks the generation again, and frees the slot.  An
input's slot is freed at once.  A result's slot is freed by `MapJob.result` once it has decoded
the result (`release`, through `Sealed.origin`): Dask fetches a result again when a gather of
several fails half-way (a worker killed meanwhile), and that second read must find it.  A slot
whose job ended (its marker gone: `job_alive`) is taken again, so a reader that never came
does not leak it.  A slot that another process cut short or unlinked is dropped, not written
past its end.

**Borrowed slots (a packed group's inputs).**  A record sealed with ``borrow`` (the client's
`Segments` of a job of packed groups) is not copied out: the worker keeps the client's slot
file mapped (`borrow_slot`, one mapping per slot, dropped when the file is unlinked or its
client's marker is gone) and the decoded Polys' storage is its pages.  The slot stays taken
until the task that read it has encoded its result: `ren.distributed.worker.run_item` checks
that the slot still holds the same generation (`borrowed_intact`) and frees it (`release`).
A writer takes a taken slot back only when its job has ended, and then the task's result is
no longer wanted; the check turns it into a SerializationError rather than words read from
another record.

**Segments.**  When a pool is full the record gets a *segment* of its own instead (`Segments`
without a pool), named after its job (``<job>-<writer pid>.<n>``).  The receiver maps such a
segment (``mmap``: the mapped words become the Poly's storage, no copy).  It unlinks an input's
segment as it maps it.  A result's segment stays until the job ends.

**Cost.**  Measured on a shared 2-core VM (noisy; CPU time per 2.1 MB record, one core):
- A new tmpfs file costs ~0.95 ms to write (tmpfs allocates and charges every page), ~0.3 ms
  to map with ``MAP_POPULATE``, and ~0.45 ms to free its pages.  That is about what the loopback
  TCP path costs, and the one-segment-per-record design measured worse than ``off`` in
  `bench_distributed.py --device cpu`.  Hence the pools.
- Writing into a kept mapping costs ~0.06 ms, and copying out with ``preadv`` ~0.2 ms.

**Trust.**  A file here is one the client's user can write (mode 0600): the same trust as the
loopback TCP connection it replaces.  A process of the same user that rewrites a mapped
segment after its checksum was verified could change the words under the decoder, which TCP
would not allow.  Do not share a `SHM_DIR` with processes you do not trust.
"""

from __future__ import annotations

import atexit
import errno
import itertools
import mmap
import os
import re
import struct
import threading
import weakref
from collections.abc import Iterable
from typing import Any

import numpy as np

from ren import settings
from ren.distributed import frames
from ren.distributed.frames import Sealed
from ren.errors import SerializationError

#: where segments live (tmpfs on Linux); None where there is none (the path is then off)
SHM_DIR: str | None = "/dev/shm" if os.path.isdir("/dev/shm") and \
    os.access("/dev/shm", os.W_OK) else None
#: records with fewer bytes of frames travel in the message by default (the switch
#: ``REN_DISTRIBUTED_SHM_MIN_BYTES``'s default; `ren.distributed.shm.min_bytes` reads it)
MIN_BYTES = int(settings.SWITCHES["REN_DISTRIBUTED_SHM_MIN_BYTES"].default)
#: frames start at multiples of this in a segment (page and cache-line aligned words)
ALIGN = 64
PREFIX = "ren-"
#: reusable slots a writer process keeps per client (`Pool`); a record finds none free: a
#: segment of its own
POOL_SLOTS = 48
#: a slot's header: its state word (0: free; else the generation of the record in it)
HEAD = 64
#: a Ren file name: ``ren-<client pid>-<token>`` and a suffix
NAME = re.compile(r"ren-(\d+)-([0-9a-f]{12})(?:[-.][A-Za-z0-9.-]*)?")

_lock = threading.Lock()
_counter = itertools.count()


def path_of(name: str) -> str:
    """The path of Ren file `name` in `SHM_DIR`; SerializationError for a name that is not a
    Ren file's (e.g. a path from a forged message)."""
    assert SHM_DIR is not None
    if not NAME.fullmatch(name):
        raise SerializationError(f"a shared-memory record names the segment {name!r:.80}, "
                                 "which is not a Ren segment name")
    return os.path.join(SHM_DIR, name)


def remove_file(path: str) -> bool:
    """Unlink `path`; whether it was there."""
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False



def job_marker(prefix: str) -> str:
    """The path of job `prefix`'s marker (it exists while the job runs)."""
    return path_of(prefix + ".job")


def job_alive(prefix: str) -> bool:
    """Whether job `prefix`'s marker is here (a worker of the same machine, job not ended)."""
    try:
        return SHM_DIR is not None and os.path.exists(job_marker(prefix))
    except SerializationError:
        return False


def remove_prefix(prefix: str) -> int:
    """Unlink every file in `SHM_DIR` whose name starts with `prefix`; how many."""
    if SHM_DIR is None:
        return 0
    try:
        names = os.listdir(SHM_DIR)
    except OSError:
        return 0
    return sum(remove_file(os.path.join(SHM_DIR, n)) for n in names if n.startswith(prefix))


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
                shared = slot.fill(rec, [HEAD + o for o in offsets], sizes)
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


#: the errors of a full (or size-capped) /dev/shm: a record then travels in Dask's message
NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def write_segment(path: str, frames: Iterable[Any], offsets: list[int], total: int) -> None:
    """A new file `path` of `total` bytes holding each frame at its offset (one ``pwritev``;
    the bytes between frames are zero)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.ftruncate(fd, total)
        for frame, off in zip(frames, offsets):
            view = memoryview(frame).cast("B")
            done = 0
            while done < view.nbytes:  # tmpfs writes it all at once; a signal may cut it
                done += os.pwrite(fd, view[done:], off + done)
    except BaseException:
        remove_file(path)
        raise
    finally:
        os.close(fd)


def map_segment(name: str, offsets: list[int], sizes: list[int], unlink: bool = True
                ) -> list[memoryview]:
    """The frames of segment `name`, mapped (writable, no copy), its name unlinked when
    `unlink`; SerializationError when it is missing or shorter than the frames."""
    path = path_of(name)
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        raise SerializationError(f"the shared-memory segment {name} of a Ren record is gone "
                                 "(read twice, or its job ended); send it again") from None
    except OSError as exc:
        raise SerializationError(f"cannot open the shared-memory segment {name}: {exc}") \
            from exc
    try:
        if unlink:
            remove_file(path)  # in transit only: the mapping keeps the memory
        need = max((o + s for o, s in zip(offsets, sizes)), default=0)
        have = os.fstat(fd).st_size
        if have < need:
            raise SerializationError(f"the shared-memory segment {name} has {have} bytes, its "
                                     f"record's frames need {need}: it was cut short")
        if need == 0:
            return [memoryview(b"")] * len(sizes)
        flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
        m = mmap.mmap(fd, need, flags, mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(fd)
    view = memoryview(m)
    return [view[o:o + s] for o, s in zip(offsets, sizes)]



_gens = itertools.count(1)
_pools: dict[str, Pool] = {}


def _state(view: Any) -> int:
    return int(struct.unpack_from("<Q", view, 0)[0])


class _Slot:
    """One reusable file of a `Pool`, mapped in its writer for good."""

    def __init__(self, name: str, size: int) -> None:
        self.name, self.size, self.job = name, size, ""
        self.fd = os.open(path_of(name), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(self.fd, size)
            # the pages taken now: a full /dev/shm (a container's 64 MB, say) is an OSError
            # here, not a SIGBUS when a write through the mapping finds no page
            os.posix_fallocate(self.fd, 0, size)
            self.mm = mmap.mmap(self.fd, size,
                                mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0))
        except BaseException:
            os.close(self.fd)
            remove_file(path_of(name))
            raise

    def intact(self) -> bool:
        """Whether the file is still linked and whole (writing through the mapping past a
        file cut short by someone else would kill this process with SIGBUS)."""
        st = os.fstat(self.fd)
        return st.st_nlink > 0 and st.st_size >= self.size

    def fill(self, rec: Sealed, offsets: list[int], sizes: list[int]) -> Shared:
        """`rec`'s frames copied in (its state word set already by `Pool.take`)."""
        for frame, off, size in zip(rec.frames, offsets, sizes):
            self.mm[off:off + size] = memoryview(frame).cast("B")
        return Shared(rec, self.name, offsets, sizes, _state(self.mm))


class Pool:
    """The reusable slots one writer process keeps for one client (`client`: its prefix):
    files ``<client>-pool-<pid>.<k>`` that stay mapped here and are written over, so a record
    costs a copy into pages that exist (~0.06 ms per 2 MB) instead of allocating and freeing
    them.  A slot is taken when its state word is 0 (its reader freed it) or its job ended."""

    def __init__(self, client: str) -> None:
        self.client = client
        self.slots: list[_Slot] = []
        self.numbers = itertools.count()
        self.lock = threading.Lock()

    def take(self, job: str, need: int) -> _Slot | None:
        with self.lock:
            broken = [s for s in self.slots if not s.intact()]
            for s in broken:  # unlinked or cut short by another process: not used again
                self.slots.remove(s)
                os.close(s.fd)
                remove_file(path_of(s.name))
            slot = next((s for s in self.slots if s.size >= need and (
                _state(s.mm) == 0 or (s.job != job and not job_alive(s.job)))), None)
            if slot is None:
                if len(self.slots) >= POOL_SLOTS:
                    return None
                try:
                    slot = _Slot(f"{self.client}-pool-{os.getpid()}.{next(self.numbers)}",
                                 -(-need // (1 << 20)) << 20)
                except OSError as e:
                    if e.errno not in NO_SPACE:
                        raise
                    return None  # no room: the caller writes a file of its own, or sends
                self.slots.append(slot)
            slot.job = job
            struct.pack_into("<Q", slot.mm, 0, next(_gens))
            return slot


def pool_for(client: str) -> Pool:
    """This process's `Pool` for the client of prefix `client` (pools of clients whose marker
    is gone are dropped: their files went with the client)."""
    with _lock:
        pool = _pools.get(client)
        if pool is None:
            for other in [c for c in _pools if not os.path.exists(path_of(c + ".host"))]:
                del _pools[other]
            pool = _pools[client] = Pool(client)
            if len(_pools) == 1:
                atexit.register(_drop_pools)
        return pool


def _drop_pools() -> None:
    for pool in list(_pools.values()):
        for s in pool.slots:
            remove_file(path_of(s.name))
    _pools.clear()


def read_slot(name: str, gen: int, offsets: list[int], sizes: list[int], free: bool
              ) -> list[Any]:
    """The frames of pool slot `name` holding generation `gen`, copied out (one C copy each
    into a buffer of this process); the slot freed for its writer when `free`.
    SerializationError when it is missing, short, or holds another record."""
    path = path_of(name)
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError as exc:
        raise SerializationError(f"the shared-memory slot {name} of a Ren record is gone "
                                 f"({exc}); its writer exited or its job ended") from None
    try:
        need = max((o + s for o, s in zip(offsets, sizes)), default=HEAD)
        have = os.fstat(fd).st_size
        if have < need or min(offsets, default=HEAD) < HEAD:
            raise SerializationError(f"the shared-memory slot {name} has {have} bytes, its "
                                     f"record's frames need {need}: it was cut short")
        head = bytearray(8)
        os.preadv(fd, [head], 0)
        if _state(head) != gen:
            raise SerializationError(f"the shared-memory slot {name} holds another record "
                                     f"now (generation {_state(head)}, not {gen}); send it "
                                     "again")
        out = []
        for off, size in zip(offsets, sizes):
            buf = np.empty(size, np.uint8)  # (not zero-filled, as a bytearray would be)
            if os.preadv(fd, [buf.data], off) != size:
                raise SerializationError(f"the shared-memory slot {name} was cut short")
            out.append(buf)
        os.preadv(fd, [head], 0)
        if _state(head) != gen:
            raise SerializationError(f"the shared-memory slot {name} was written over while "
                                     "it was read; send it again")
        if free:
            os.pwrite(fd, bytes(8), 0)
        return out
    finally:
        os.close(fd)


#: pool slots of a client this process (a worker) reads in place: name -> (fd, mapping)
_borrowed: dict[str, tuple[int, mmap.mmap]] = {}


def _forget(name: str) -> None:
    """Stop keeping slot `name` mapped (arrays over its pages keep the mapping alive)."""
    got = _borrowed.pop(name, None)
    if got is not None:
        os.close(got[0])


def borrow_slot(name: str, gen: int, offsets: list[int], sizes: list[int]) -> list[Any]:
    """The frames of the client's pool slot `name` holding generation `gen`, as views of its
    pages (no copy; the mapping is kept for the slot's next records).  The slot stays taken:
    the task that reads it frees it when it has finished (`release`).  SerializationError when
    it is missing, short, or holds another record."""
    need = max((o + s for o, s in zip(offsets, sizes)), default=HEAD)
    if min(offsets, default=HEAD) < HEAD:
        raise SerializationError(f"the shared-memory slot {name}: a frame overlaps its header")
    with _lock:
        got = _borrowed.get(name)
        if got is not None:
            st = os.fstat(got[0])
            if st.st_nlink == 0 or len(got[1]) < need:  # its writer dropped it: map it anew
                _forget(name)
                got = None
        if got is None:
            try:
                fd = os.open(path_of(name), os.O_RDWR)
            except OSError as exc:
                raise SerializationError(f"the shared-memory slot {name} of a Ren record is "
                                         f"gone ({exc}); its writer exited or its job ended"
                                         ) from None
            try:
                have = os.fstat(fd).st_size
                if have < need:
                    raise SerializationError(f"the shared-memory slot {name} has {have} bytes, "
                                             f"its record's frames need {need}: it was cut short")
                mm = mmap.mmap(fd, have, mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0))
            except BaseException:
                os.close(fd)
                raise
            for other in [n for n in _borrowed if not os.path.exists(
                    path_of(n.split("-pool-")[0] + ".host"))]:
                _forget(other)  # slots of clients that are gone
            got = _borrowed[name] = (fd, mm)
    mm = got[1]
    if _state(mm) != gen:
        raise SerializationError(f"the shared-memory slot {name} holds another record now "
                                 f"(generation {_state(mm)}, not {gen}); send it again")
    pages = np.frombuffer(mm, np.uint8)
    # freed too when the last view of it goes, if no task did (a group that Dask's work
    # stealing ran elsewhere, on a copy): a slot is never held past its record's life
    weakref.finalize(pages, free_slot, name, gen)
    return [pages[o:o + s] for o, s in zip(offsets, sizes)]


def free_slot(name: str, gen: int) -> None:
    """Give pool slot `name` back to its writer if it still holds generation `gen`."""
    got = _borrowed.get(name)
    if got is not None:  # a borrowed slot: through its mapping
        if _state(got[1]) == gen:
            struct.pack_into("<Q", got[1], 0, 0)
        return
    try:
        fd = os.open(path_of(name), os.O_RDWR)
    except OSError:
        return
    try:
        head = bytearray(8)
        if os.preadv(fd, [head], 0) == 8 and _state(head) == gen:
            os.pwrite(fd, bytes(8), 0)
    finally:
        os.close(fd)


def release(tree: Any) -> None:
    """Free the pool slots the records of a received wire tree were read from (a client calls
    it once it decoded a result: Dask may fetch a result again before that)."""
    if isinstance(tree, Sealed):
        if tree.origin is not None:
            free_slot(*tree.origin)
            tree.origin = None
    elif type(tree) in (list, tuple):
        for v in tree:
            release(v)
    elif type(tree) is dict:
        for v in tree.values():
            release(v)


def borrowed_intact(tree: Any) -> bool:
    """Whether every pool slot that records of `tree` borrow (`borrow_slot`) still holds their
    record (a task checks it after it ran on them: a slot taken back meanwhile, e.g. by a
    job that ended, means the words changed under it)."""
    if isinstance(tree, Sealed):
        got = _borrowed.get(tree.origin[0]) if tree.origin is not None else None
        return got is None or _state(got[1]) == tree.origin[1]
    if type(tree) in (list, tuple):
        return all(borrowed_intact(v) for v in tree)
    if type(tree) is dict:
        return all(borrowed_intact(v) for v in tree.values())
    return True


def remove_dead_pools(client: str) -> int:
    """Unlink the pool files under `client` of writer processes that are gone (a killed
    worker's); how many."""
    if SHM_DIR is None:
        return 0
    gone = 0
    for n in os.listdir(SHM_DIR):
        if n.startswith(client + "-pool-"):
            pid = n[len(client) + 6:].split(".")[0]
            if pid.isdigit() and int(pid) != os.getpid() and not os.path.exists(f"/proc/{pid}"):
                gone += remove_file(os.path.join(SHM_DIR, n))
    return gone


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

__all__ = [
    "ALIGN", "HEAD", "MIN_BYTES", "NAME", "POOL_SLOTS", "PREFIX", "SHM_DIR", "Pool", "Segments",
    "Shared", "borrow_slot", "borrowed_intact", "free_slot", "job_alive", "job_marker",
    "map_segment", "path_of", "pool_for", "read_slot", "receive", "register_dask", "release",
    "remove_dead_pools", "remove_file", "remove_prefix", "write_segment",
]
