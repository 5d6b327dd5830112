"""Same-host records through shared memory: Dask carries the names, /dev/shm the limbs.

When a client and its workers share a machine (a `local_client()` cluster, or workers started
on the client's host), sending a 2 MB ciphertext through Dask's TCP comm costs each side's
event-loop thread ~2-3 ms of CPU (tornado's reads and writes in ~64-128 kB pieces).  On this
path the record's frames go through a file in `SHM_DIR` (tmpfs: memory).  The Dask message
carries only the record's header with its checksum, the file's name, and the frames' offsets
and sizes (`Shared`).  The receiver decodes the record as any other: the checksum, the frames'
lengths and the residue ranges are checked as before, so a corrupted, truncated, missing or
overwritten file raises `SerializationError`.  Records under `MIN_BYTES` (and everything that
is not a record) still travel in the message.

**Pool slots (what a job uses).**  Each writer process (the client for inputs, a worker for
results) keeps a `Pool` per client: up to `POOL_SLOTS` files ``<client>-pool-<pid>.<k>``,
mapped for good and written over.  A slot's first word is its state: 0 is free, else the
generation of the record in it, which the message names too.  The writer copies the frames
into pages that already exist.  The reader checks the generation, copies the frames out (one
C copy each into a buffer of its own), checks the generation again, and frees the slot.  An
input's slot is freed at once.  A result's slot is freed by `MapJob.result` once it has decoded
the result (`release`, through `Sealed.origin`): Dask fetches a result again when a gather of
several fails half-way (a worker killed meanwhile), and that second read must find it.  A slot
whose job ended is taken again, so a reader that never came does not leak it.  A slot that
another process cut short or unlinked is dropped, not written past its end.  When a pool is
full the record gets a *segment* of its own instead (`Segments` without a pool).  The
receiver maps such a segment (``mmap``: the mapped words become the Poly's storage, no copy).
It unlinks an input's segment as it maps it.  A result's segment stays until the job ends.

**Which path.**  ``REN_DISTRIBUTED_SHM`` (environment variable, read per job):
- ``off`` (the default, see *Cost*): the frames travel in the message.
- ``auto``: files when every worker of the job sees the client's `SHM_DIR`, the frames in the
  message otherwise.  The probe: the client writes a marker file of random contents there and
  the workers read it back, once per client and worker address (`visible_workers`).
- ``on``: files are required; a job whose workers do not all see the marker raises
  `DistributedError`.
A worker writes its results into files only while the client's job marker is in its `SHM_DIR`
(a worker of another machine never does).  ``keep=True`` results, which stay on the workers,
never go into files.

**Lifetimes.**  Every file lives under the client's prefix (``ren-<client pid>-<token>``);
segments are also named after their job (``...-<job>-<writer pid>.<n>``).
- When a job ends (`end_job`: at the end of `MapJob.result` or `persist`, on a failure, or
  when the job object is garbage collected), the client removes the job marker first, then
  every segment of the job's prefix, and the pool files of writers whose process is gone (a
  killed worker's).  A worker writes a record and then checks the marker.  When the marker is
  gone it unlinks or frees what it wrote and sends the frames instead, so nothing outlives
  its job.
- At exit every process unlinks its own pool files, and the client every file of its prefix
  (`atexit`).
- A process that starts using this path removes the files of clients whose process is gone
  (`reap`, e.g. a client killed by a signal).  It only removes files older than `REAP_AFTER`
  seconds, and it judges by pid, so it assumes one pid namespace per `SHM_DIR`.

**Cost.**  Measured on a shared 2-core VM (noisy; CPU time per 2.1 MB record, one core):
- A new tmpfs file costs ~0.95 ms to write (tmpfs allocates and charges every page), ~0.3 ms
  to map with ``MAP_POPULATE``, and ~0.45 ms to free its pages.  That is about what the loopback
  TCP path costs, and the one-segment-per-record design measured worse than ``off`` in
  `bench_distributed.py --device cpu`.  Hence the pools.
- Writing into a kept mapping costs ~0.06 ms, and copying out with ``preadv`` ~0.2 ms.
- With the pools, the benchmark's CPU figures were within the run-to-run noise of ``off`` (see
  the session note); Dask's own per-task work dominates the client's CPU.  So ``off`` stays the
  default.

**Trust.**  A file here is one the client's user can write (mode 0600): the same trust as the
loopback TCP connection it replaces.  A process of the same user that rewrites a mapped
segment after its checksum was verified could change the words under the decoder, which TCP
would not allow.  Do not share a `SHM_DIR` with processes you do not trust.
"""

from __future__ import annotations

import atexit
import itertools
import mmap
import os
import re
import secrets
import struct
import threading
import time
from collections.abc import Iterable
from typing import Any

import numpy as np

from ren import settings
from ren.distributed import frames
from ren.distributed.errors import DistributedError
from ren.distributed.frames import Sealed
from ren.errors import SerializationError

#: where segments live (tmpfs on Linux); None where there is none (the path is then off)
SHM_DIR: str | None = "/dev/shm" if os.path.isdir("/dev/shm") and \
    os.access("/dev/shm", os.W_OK) else None
#: the environment variable that picks the path: "auto", "on" or "off" (module doc); its
#: values and default are `ren.settings`' (read here per job, not once per process)
ENV = "REN_DISTRIBUTED_SHM"
MODES: tuple[str, ...] = tuple(str(v) for v in settings.SWITCHES[ENV].allowed or ())
#: records with fewer bytes of frames travel in the message (``REN_DISTRIBUTED_SHM_MIN_BYTES``
#: on the client overrides it for its jobs, workers included)
MIN_ENV = "REN_DISTRIBUTED_SHM_MIN_BYTES"
MIN_BYTES = int(settings.SWITCHES[MIN_ENV].default)
#: frames start at multiples of this in a segment (page and cache-line aligned words)
ALIGN = 64
#: files of a dead client younger than this (seconds) are left to `reap` later
REAP_AFTER = 60.0
PREFIX = "ren-"
#: reusable slots a writer process keeps per client (`Pool`); a record finds none free: a
#: segment of its own
POOL_SLOTS = 48
#: a slot's header: its state word (0: free; else the generation of the record in it)
HEAD = 64
_NAME = re.compile(r"ren-(\d+)-([0-9a-f]{12})(?:[-.][A-Za-z0-9.-]*)?")

_lock = threading.Lock()
_token: str | None = None  # this process's client token (its marker's contents), once made
_counter = itertools.count()
_jobs = itertools.count()
_visible: dict[tuple[int, str], bool] = {}  # (id of a client, worker address) -> sees the marker
_reaped = False


def mode() -> str:
    """The path ``REN_DISTRIBUTED_SHM`` picks ("off" when unset); DistributedError for a
    value that is not one of `MODES`."""
    default = str(settings.SWITCHES[ENV].default)
    value = os.environ.get(ENV, default).strip().lower() or default
    value = {"1": "on", "0": "off", "true": "on", "false": "off"}.get(value, value)
    if value not in MODES:
        raise DistributedError(f"{ENV}={value!r}: expected one of {', '.join(MODES)}")
    return value


def min_bytes() -> int:
    """The smallest record (bytes of frames) a job of this client puts into a segment."""
    value = os.environ.get(MIN_ENV, "").strip()
    if not value:
        return MIN_BYTES
    if not value.isdigit():
        raise DistributedError(f"{MIN_ENV}={value!r}: expected a number of bytes")
    return int(value)


def _path(name: str) -> str:
    assert SHM_DIR is not None
    if not _NAME.fullmatch(name):
        raise SerializationError(f"a shared-memory record names the segment {name!r:.80}, "
                                 "which is not a Ren segment name")
    return os.path.join(SHM_DIR, name)


def _unlink(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False


# -- the client's marker and jobs -------------------------------------------------------------
def client_prefix() -> str:
    """This process's prefix of segment names (``ren-<pid>-<token>``), its marker file made
    (the probe workers read) the first time."""
    global _token
    with _lock:
        if _token is None:
            if SHM_DIR is None:
                raise DistributedError(f"shared memory: there is no writable {'/dev/shm'} here; "
                                       f"set {ENV}=off")
            reap()
            token = secrets.token_hex(6)
            prefix = f"{PREFIX}{os.getpid()}-{token}"
            fd = os.open(os.path.join(SHM_DIR, prefix + ".host"),
                         os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, token.encode())
            finally:
                os.close(fd)
            _token = token
            atexit.register(_at_exit, prefix)
        return f"{PREFIX}{os.getpid()}-{_token}"


def _at_exit(prefix: str) -> None:
    remove_prefix(prefix)


def remove_prefix(prefix: str) -> int:
    """Unlink every file in `SHM_DIR` whose name starts with `prefix`; how many."""
    if SHM_DIR is None:
        return 0
    try:
        names = os.listdir(SHM_DIR)
    except OSError:
        return 0
    return sum(_unlink(os.path.join(SHM_DIR, n)) for n in names if n.startswith(prefix))


def sees_marker(name: str, token: str) -> bool:
    """Whether this process's `SHM_DIR` holds the marker `name` with the contents `token` (run
    on each worker by `visible_workers`)."""
    if SHM_DIR is None:
        return False
    try:
        with open(_path(name), "rb") as f:
            return f.read(64) == token.encode()
    except (OSError, SerializationError):
        return False


def visible_workers(client: Any, addresses: list[str]) -> bool:
    """Whether every worker of `addresses` sees this client's `SHM_DIR` (asked once per client
    and worker address: ``client.run`` of `sees_marker`)."""
    prefix = client_prefix()
    todo = [a for a in addresses if (id(client), a) not in _visible]
    if todo:
        try:
            seen = client.run(sees_marker, prefix + ".host", str(_token), workers=todo)
        except Exception:  # a worker gone meanwhile: no segments for this job
            return False
        with _lock:
            for a in todo:
                _visible[(id(client), a)] = bool(seen.get(a, False))
    return all(_visible.get((id(client), a), False) for a in addresses)


def start_job(client: Any, addresses: list[str]) -> str | None:
    """The segment prefix of a new job on `addresses` (its marker made), or None when its
    records travel in the messages (`mode`, `visible_workers`)."""
    m = mode()
    if m == "off" or (SHM_DIR is None and m == "auto"):
        return None
    ok = visible_workers(client, addresses)
    if not ok:
        if m == "on":
            raise DistributedError(f"map: {ENV}=on, but not every worker sees this client's "
                                   f"{SHM_DIR} (workers on other machines?); set {ENV}=auto "
                                   "or off")
        return None
    prefix = f"{client_prefix()}-{next(_jobs)}"
    fd = os.open(_job_marker(prefix), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    return prefix


def _job_marker(prefix: str) -> str:
    return _path(prefix + ".job")


def end_job(prefix: str | None) -> int:
    """Remove job `prefix`'s marker, then every segment of it left (module doc); how many
    segments.  Idempotent."""
    if prefix is None:
        return 0
    _unlink(_job_marker(prefix))
    remove_dead_pools(prefix.rsplit("-", 1)[0])  # a killed worker's slots
    return remove_prefix(prefix + "-")


def job_alive(prefix: str) -> bool:
    """Whether job `prefix`'s marker is here (a worker of the same machine, job not ended)."""
    try:
        return SHM_DIR is not None and os.path.exists(_job_marker(prefix))
    except SerializationError:
        return False


def reap(now: float | None = None) -> int:
    """Unlink the files of clients whose process is gone (module doc); how many."""
    global _reaped
    _reaped = True
    if SHM_DIR is None:
        return 0
    now = time.time() if now is None else now
    gone = 0
    try:
        names = os.listdir(SHM_DIR)
    except OSError:
        return 0
    for n in names:
        m = _NAME.fullmatch(n)
        if m is None or int(m.group(1)) == os.getpid() or os.path.exists(f"/proc/{m.group(1)}"):
            continue
        path = os.path.join(SHM_DIR, n)
        try:
            if now - os.stat(path).st_mtime < REAP_AFTER:
                continue
        except OSError:
            continue
        gone += _unlink(path)
    return gone


# -- segments ---------------------------------------------------------------------------------
class Segments:
    """Writes the records of one job of at least `least` bytes of frames into segments named
    ``<prefix>-<pid>.<n>``; `names` lists those it made (`discard` unlinks them)."""

    def __init__(self, prefix: str, least: int = MIN_BYTES, pooled: bool = False) -> None:
        self.prefix, self.least, self.job = f"{prefix}-{os.getpid()}", least, prefix
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
                return slot.fill(rec, [HEAD + o for o in offsets], sizes)
        name = f"{self.prefix}.{next(_counter)}"
        write_segment(_path(name), rec.frames, offsets, end)
        self.names.append(name)
        return Shared(rec, name, offsets, sizes)

    def discard(self) -> None:
        """Unlink every segment this writer made (ENOENT: a receiver took it already) and free
        the pool slots it filled (for a record that will not be sent)."""
        for n in self.names:
            _unlink(_path(n))
        self.names.clear()
        for slot in self.slots:  # its pool slots free again
            struct.pack_into("<Q", slot.mm, 0, 0)
        self.slots.clear()


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
        _unlink(path)
        raise
    finally:
        os.close(fd)


def map_segment(name: str, offsets: list[int], sizes: list[int], unlink: bool = True
                ) -> list[memoryview]:
    """The frames of segment `name`, mapped (writable, no copy), its name unlinked when
    `unlink`; SerializationError when it is missing or shorter than the frames."""
    path = _path(name)
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
            _unlink(path)  # in transit only: the mapping keeps the memory
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
        self.fd = os.open(_path(name), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(self.fd, size)
            self.mm = mmap.mmap(self.fd, size,
                                mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0))
        except BaseException:
            os.close(self.fd)
            _unlink(_path(name))
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
                _unlink(_path(s.name))
            slot = next((s for s in self.slots if s.size >= need and (
                _state(s.mm) == 0 or (s.job != job and not job_alive(s.job)))), None)
            if slot is None:
                if len(self.slots) >= POOL_SLOTS:
                    return None
                slot = _Slot(f"{self.client}-pool-{os.getpid()}.{next(self.numbers)}",
                             -(-need // (1 << 20)) << 20)
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
            for other in [c for c in _pools if not os.path.exists(_path(c + ".host"))]:
                del _pools[other]
            pool = _pools[client] = Pool(client)
            if len(_pools) == 1:
                atexit.register(_drop_pools)
        return pool


def _drop_pools() -> None:
    for pool in list(_pools.values()):
        for s in pool.slots:
            _unlink(_path(s.name))
    _pools.clear()


def read_slot(name: str, gen: int, offsets: list[int], sizes: list[int], free: bool
              ) -> list[Any]:
    """The frames of pool slot `name` holding generation `gen`, copied out (one C copy each
    into a buffer of this process); the slot freed for its writer when `free`.
    SerializationError when it is missing, short, or holds another record."""
    path = _path(name)
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


def free_slot(name: str, gen: int) -> None:
    """Give pool slot `name` back to its writer if it still holds generation `gen`."""
    try:
        fd = os.open(_path(name), os.O_RDWR)
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
                gone += _unlink(os.path.join(SHM_DIR, n))
    return gone


class Shared:
    """A `Sealed` record whose frames are in a segment (module doc): what Dask sends is its
    header, the segment's name, and the frames' offsets and sizes."""

    __slots__ = ("gen", "name", "offsets", "record", "sizes")

    def __init__(self, record: Sealed, name: str, offsets: list[int], sizes: list[int],
                 gen: int = 0) -> None:
        self.record, self.name, self.offsets, self.sizes = record, name, offsets, sizes
        self.gen = gen  # a pool slot's generation (0: a segment of its own)

    @property
    def nbytes(self) -> int:
        return self.record.nbytes

    def header(self) -> dict[str, Any]:
        return {**self.record.header(), "shm": self.name, "offsets": self.offsets,
                "sizes": self.sizes, "gen": self.gen}

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
                                 f"/dev/shm; set {ENV}=off on the client")
    name = header["shm"]
    m = _NAME.fullmatch(name)
    gen = header.get("gen", 0)
    if not isinstance(gen, int) or isinstance(gen, bool) or gen < 0:
        raise SerializationError("a shared-memory Ren record arrived with a malformed slot "
                                 "generation")
    if gen:  # a pool slot: copied out; an input's slot freed now, a result's once decoded
        by_client = m is not None and name.rsplit("-", 1)[-1].split(".")[0] == m.group(1)
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
    "ALIGN", "ENV", "MIN_BYTES", "MIN_ENV", "MODES", "SHM_DIR", "Segments", "Shared",
    "client_prefix", "end_job", "job_alive", "map_segment", "min_bytes", "mode", "reap",
    "receive", "register_dask", "remove_prefix", "sees_marker", "start_job", "visible_workers",
    "write_segment",
]
