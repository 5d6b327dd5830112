"""Pool slots of the same-host path (`ren.distributed.shm`): files a writer reuses.

**Pool slots (what a job uses).**  Each writer process (the client for inputs, a worker for
results) keeps a `Pool` per client: up to `POOL_SLOTS` files ``<client>-pool-<pid>.<k>``,
mapped for good and written over.  A slot's first word is its state: 0 is free, else the
generation of the record in it, which the message names too.  The writer copies the frames
into pages that already exist.  The reader checks the generation, copies the frames out (one
C copy each into a buffer of its own), checks the generation again, and frees the slot (the
client reads results through mappings of the workers' slots it keeps while they live:
`_read_mapped`, `unmap_results`).  An
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
"""
from __future__ import annotations

import atexit
import contextlib
import fcntl
import itertools
import mmap
import os
import struct
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ren.distributed import recycle
from ren.distributed.errors import SlotTakenError
from ren.distributed.frames import Sealed
from ren.distributed.shmfiles import (
    HEAD,
    NO_SPACE,
    POOL_SLOTS,
    SHM_DIR,
    job_alive,
    path_of,
    remove_file,
)
from ren.errors import SerializationError

#: re-entrant: a garbage collection inside a locked section may run a job's finalizer
#: (`ren.distributed.shm.end_job` -> `unmap_results`) on the same thread
_lock = threading.RLock()

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
            # held while this process lives: a slot whose lock is free and whose writer's pid
            # is gone is a killed writer's (`ren.distributed.shm.reap` removes it at once)
            fcntl.flock(self.fd, fcntl.LOCK_SH)
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

    def fill(self, rec: Sealed, offsets: list[int], sizes: list[int]) -> int:
        """`rec`'s frames copied in (its state word set already by `Pool.take`); the
        generation the slot holds."""
        for frame, off, size in zip(rec.frames, offsets, sizes):
            self.mm[off:off + size] = memoryview(frame).cast("B")
        return _state(self.mm)


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
        self.start = 0  # where the next take starts looking (after the slot taken last)

    def _drop(self, slot: _Slot) -> None:
        """Stop using `slot` (unlinked or cut short by another process) and unlink it."""
        self.slots.remove(slot)
        os.close(slot.fd)
        remove_file(path_of(slot.name))

    def take(self, job: str, need: int) -> _Slot | None:
        """A slot of at least `need` bytes for a record of `job`, its state word set to a new
        generation (None: the pool is full, or /dev/shm is).  The search starts after the
        slot taken last (slots come back in about the order they went), so a take usually
        looks at one or two slots; each is checked (`_Slot.intact`: one fstat) before its
        state word is read.  Checking every slot on every take cost ~2 us a slot (~0.1 ms a
        record with 48)."""
        with self.lock:
            slot = None
            for s in self.slots[self.start:] + self.slots[:self.start]:
                if not s.intact():
                    self._drop(s)
                elif s.size >= need and (_state(s.mm) == 0 or
                                         (s.job != job and not job_alive(s.job))):
                    slot = s
                    break
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
            self.start = (self.slots.index(slot) + 1) % len(self.slots)
            slot.job = job
            struct.pack_into("<Q", slot.mm, 0, next(_gens))
            return slot


def pool_for(client: str) -> Pool:
    """This process's `Pool` for the client of prefix `client` (pools of clients whose marker
    is gone are dropped, their files unlinked: a client that exited took them, one that was
    killed left them)."""
    with _lock:
        pool = _pools.get(client)
        if pool is None:
            for other in [c for c in _pools if not os.path.exists(path_of(c + ".host"))]:
                for s in _pools.pop(other).slots:
                    remove_file(path_of(s.name))
                    os.close(s.fd)  # (its lock with it)
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
    SerializationError when it is missing, short, or holds another record.  A result a client
    reads from a slot of its own job's pool (a worker's: `free` is False) is copied from a
    mapping the client keeps while its jobs run (`_read_mapped`)."""
    if not free and name.startswith(f"ren-{os.getpid()}-"):
        return _read_mapped(name, gen, offsets, sizes)
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
            # a result (read by the client, freed later): a buffer whose pages an earlier
            # result used (`recycle`: no page faults); an input: a fresh one (a worker keeps
            # no free buffers: its memory must not grow)
            buf = np.empty(size, np.uint8) if free else recycle.take(size)
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


#: workers' pool slots this process (their jobs' client) reads results from, kept mapped
#: while their files live (`_read_mapped`, `unmap_results`): name -> (fd, mapping, inode)
_results: dict[str, tuple[int, mmap.mmap, int]] = {}  # (and the file's inode)


def _frames_end(name: str, offsets: list[int], sizes: list[int]) -> int:
    """Where the frames at `offsets` of slot `name` end (the bytes its file must hold); a
    SerializationError where one overlaps the slot's header."""
    if min(offsets, default=HEAD) < HEAD:
        raise SerializationError(f"the shared-memory slot {name}: a frame overlaps its header")
    return max((o + s for o, s in zip(offsets, sizes)), default=HEAD)


def _map_slot(name: str, need: int) -> tuple[int, mmap.mmap]:
    """Slot `name`'s file opened and mapped whole (its descriptor, its mapping); a clear
    SerializationError where it is gone or holds fewer than the `need` bytes its record's
    frames end at."""
    try:
        fd = os.open(path_of(name), os.O_RDWR)
    except OSError as exc:
        raise SerializationError(f"the shared-memory slot {name} of a Ren record is "
                                 f"gone ({exc}); its writer exited or its job ended") from None
    try:
        have = os.fstat(fd).st_size
        if have < need:
            raise SerializationError(f"the shared-memory slot {name} has {have} bytes, "
                                     f"its record's frames need {need}: it was cut short")
        return fd, mmap.mmap(fd, have, mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0))
    except BaseException:
        os.close(fd)
        raise


def _read_mapped(name: str, gen: int, offsets: list[int], sizes: list[int]) -> list[Any]:
    """`read_slot` of a result on the client: copied out of a mapping of the worker's slot
    that this process keeps (made once per slot: `unmap_results`), into a recycled buffer
    (`recycle`).  Measured (1.84 MB, one process, CPU): 0.086 ms with the slot's generation
    checked before and after, against 0.285 ms through ``os.open``, ``preadv`` (the kernel's
    copy out of tmpfs, page by page) and the separate open and write that freed the slot.
    The file's size is checked before each copy: a file cut short by someone
    is a SerializationError, never a read past its end (SIGBUS); so is one unlinked, and
    another file under its name is mapped anew (one ``stat`` of the name per read)."""
    need = _frames_end(name, offsets, sizes)
    with _lock:
        got = _results.get(name)
        if got is not None:
            try:
                st = os.stat(path_of(name))
            except OSError:
                st = None
            if st is None or st.st_ino != got[2] or st.st_size < len(got[1]):
                _unmap(name)  # gone, another file under its name, or cut short: opened anew
                got = None
        if got is None:
            fd, mm = _map_slot(name, need)
            got = _results[name] = (fd, mm, os.fstat(fd).st_ino)
        # (the copy under the lock too: no other thread closes the mapping meanwhile)
        return _copy_out(name, got[1], gen, offsets, sizes, need)


def _copy_out(name: str, mm: mmap.mmap, gen: int, offsets: list[int], sizes: list[int],
              need: int) -> list[Any]:
    """The frames at `offsets` of mapped slot `name`, checked to hold generation `gen`
    before and after the copy (into recycled buffers)."""
    if len(mm) < need:
        raise SerializationError(f"the shared-memory slot {name} has {len(mm)} bytes, its "
                                 f"record's frames need {need}: it was cut short")
    if _state(mm) != gen:
        raise SerializationError(f"the shared-memory slot {name} holds another record now "
                                 f"(generation {_state(mm)}, not {gen}); send it again")
    src = np.frombuffer(mm, np.uint8)
    try:
        out = []
        for off, size in zip(offsets, sizes):
            buf = recycle.take(size)  # (module doc of `recycle`: no page faults)
            np.copyto(buf, src[off:off + size])
            out.append(buf)
    finally:
        del src  # (no export of the mapping outlives the copy: `_unmap` can close it)
    if _state(mm) != gen:
        raise SerializationError(f"the shared-memory slot {name} was written over while "
                                 "it was read; send it again")
    return out


def _unmap(name: str) -> None:
    """Stop keeping result slot `name` mapped (holding `_lock`)."""
    got = _results.pop(name, None)
    if got is not None:
        os.close(got[0])
        with contextlib.suppress(BufferError):  # (an export left: closed when it goes)
            got[1].close()


def unmap_results(client: str = "", everything: bool = False) -> None:
    """Drop this process's mappings of the workers' result slots of client prefix `client`
    (all of them with ""): those whose file is gone or was replaced (a worker that exited or
    was killed: `ren.distributed.shm.end_job`, once no job of the client runs), or with
    `everything` every one (`ren.distributed.local_client` when its cluster closes).  A
    mapping would keep the pages of a slot its worker unlinked for as long as the client
    lives; the others stay for later jobs (mapping a 2 MB slot anew, its pages populated, cost
    ~0.3 ms: once per job for each of a worker's ~30-48 slots it would cost about what the
    mapping saves)."""
    with _lock:
        for name in [n for n in _results if n.startswith(client)]:
            if not everything:
                try:
                    if os.stat(path_of(name)).st_ino == _results[name][2]:
                        continue
                except OSError:
                    pass
            _unmap(name)


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
    need = _frames_end(name, offsets, sizes)
    with _lock:
        got = _borrowed.get(name)
        if got is not None:
            st = os.fstat(got[0])
            if st.st_nlink == 0 or len(got[1]) < need:  # its writer dropped it: map it anew
                _forget(name)
                got = None
        if got is None:
            fd, mm = _map_slot(name, need)
            for other in [n for n in _borrowed if not os.path.exists(
                    path_of(n.split("-pool-")[0] + ".host"))]:
                _forget(other)  # slots of clients that are gone
            got = _borrowed[name] = (fd, mm)
    mm = got[1]
    if _state(mm) != gen:  # (freed by an earlier run of its task: the client sends it again)
        raise SlotTakenError(f"the shared-memory slot {name} holds another record now "
                                 f"(generation {_state(mm)}, not {gen}); send it again")
    pages = np.frombuffer(mm, np.uint8)
    # freed too when the last view of it goes, if no task did (a group that Dask's work
    # stealing ran elsewhere, on a copy): a slot is never held past its record's life
    weakref.finalize(pages, free_slot, name, gen)
    return [pages[o:o + s] for o, s in zip(offsets, sizes)]


def free_slot(name: str, gen: int) -> None:
    """Give pool slot `name` back to its writer if it still holds generation `gen`."""
    got: Any = _borrowed.get(name)
    if got is None and name in _results:
        with _lock:
            got = _results.get(name)
            try:
                if got is not None and os.stat(path_of(name)).st_ino != got[2]:
                    got = None  # (another file under its name now: freed by the name below)
            except OSError:
                return  # (gone)
    if got is not None:  # a borrowed slot, or a result's: through its mapping
        mm = got[1]
        if len(mm) >= HEAD and _state(mm) == gen:
            struct.pack_into("<Q", mm, 0, 0)
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


def remove_dead_pools(client: str, names: list[str] | None = None,
                      alive: Callable[[int], bool] | None = None) -> int:
    """Unlink the pool files under `client` of writer processes that are gone (a killed
    worker's); how many.  `names`: a listing of `SHM_DIR` taken already; `alive`: whether a
    pid is in ``/proc`` (`ren.distributed.shm.end_job` looks each one up once)."""
    if SHM_DIR is None:
        return 0
    if names is None:
        names = os.listdir(SHM_DIR)
    gone = 0
    me = os.getpid()
    for n in names:
        if n.startswith(client + "-pool-"):
            pid = n[len(client) + 6:].split(".")[0]
            if pid.isdigit() and int(pid) != me and not (
                    alive(int(pid)) if alive else os.path.exists(f"/proc/{pid}")):
                gone += remove_file(os.path.join(SHM_DIR, n))
    return gone


__all__ = ["Pool", "borrow_slot", "borrowed_intact", "free_slot", "pool_for", "read_slot",
           "release", "remove_dead_pools", "unmap_results"]
