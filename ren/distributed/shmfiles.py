"""The files of the same-host path (`ren.distributed.shm`): names, markers, segment files.

The same-host path is three modules, each above the one before: this one (the files' names,
the job markers, a segment file written and mapped), `ren.distributed.shmslots` (the pool
slots writers reuse, read copied out or in place) and `ren.distributed.shmrecords` (`Segments`,
the writer of a job's records; `Shared`, what Dask sends; `receive`, its receiver).
`ren.distributed.shm` decides when a job uses them and when its files go, and re-exports their
names.

A record's frames go into files in `SHM_DIR` (tmpfs: memory).  The Dask message
carries only the record's header with its checksum, the file's name, and the frames' offsets
and sizes (`Shared`).  The receiver decodes the record as any other: the checksum, the frames'
lengths and the residue ranges are checked as before, so a corrupted, truncated, missing or
overwritten file raises `SerializationError`.

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

import errno
import mmap
import os
import re
from collections.abc import Iterable
from typing import Any

from ren import settings
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
#: segment of its own (new pages: page faults).  64: a job's window on one worker holds two
#: packed groups of up to 32 inputs (`ren.distributed.grouping`: 27 + 27 of a 64-input batch
#: at N = 2^14); at 48 the client's pool was full and 6 inputs per chunk went to segments of
#: their own (its callback thread's CPU 0.31/0.31 -> 0.16/0.23 ms per input at 64, 2
#: alternated pairs of 6 jobs); slots are made only as needed (54 there)
POOL_SLOTS = 64
#: a slot's header: its state word (0: free; else the generation of the record in it)
HEAD = 64
#: a Ren file name: ``ren-<client pid>-<token>`` and a suffix
NAME = re.compile(r"ren-(\d+)-([0-9a-f]{12})(?:[-.][A-Za-z0-9.-]*)?")

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


def remove_prefix(prefix: str, names: list[str] | None = None) -> int:
    """Unlink every file in `SHM_DIR` whose name starts with `prefix`; how many.  `names`: a
    listing of `SHM_DIR` taken already (`ren.distributed.shm.end_job`)."""
    if SHM_DIR is None:
        return 0
    if names is None:
        try:
            names = os.listdir(SHM_DIR)
        except OSError:
            return 0
    return sum(remove_file(os.path.join(SHM_DIR, n)) for n in names if n.startswith(prefix))


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


__all__ = [
    "ALIGN", "HEAD", "MIN_BYTES", "NAME", "NO_SPACE", "POOL_SLOTS", "PREFIX", "SHM_DIR",
    "job_alive", "job_marker", "map_segment", "path_of", "remove_file", "remove_prefix",
    "write_segment",
]
