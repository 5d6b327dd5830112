"""A packed group's results posted through shared memory instead of fetched through Dask.

On the path of shared memory (`ren.distributed.shm`) a packed group's results are slot names
and timings, a few hundred bytes per result.  Fetching them as the task's value costs a
``who_has`` round trip to the scheduler, a ``get_data`` round trip to the worker and its
"OK", and the deserialization (with the copy out of each result's slot) on the client's event
loop.  Instead the task (`ren.distributed.worker.run_item`) writes its value, pickled, into a
file of its job (`post`, under the job's prefix: ``<job>-post-<group>-<attempt>``) and
returns the small `POSTED` marker; the client waits for the task's completion only and reads
the file on its own thread (`take`).  Counted (N = 2^14, batch 64, 2 workers): ~45 of the
~106 comm writes per job of the client and its in-process scheduler were the fetches.

**Lifetimes and failures.**  The file is written under a name of the writer's own and renamed
into place (a reader never sees half of it), and only while the job's marker exists (checked
after the rename, as for segments).  The client removes it when it takes it; `end_job`
removes any left (`ren.distributed.shm.end_job`: every file of the job's prefix), e.g. the
post of a run whose worker died before its completion reached the scheduler (Dask runs the
task again, which finds its input slots freed: `SlotTakenError`, and the client sends the
group again under a new attempt, hence a new name).  A value that cannot be posted (no
marker, /dev/shm full, over `MAX_POST_BYTES`) is returned as the task's value as before, and
the client fetches it through Dask when it finds no post.

**Trust.**  The client unpickles the file as it unpickles a worker's result from Dask; it
reads only a regular file owned by its own user (a name under the client's prefix that
another user created first is refused).
"""

from __future__ import annotations

import io
import os
import pickle
import stat
from typing import Any

from ren.distributed.errors import DistributedError
from ren.distributed.shmfiles import (
    NO_SPACE,
    SHM_DIR,
    job_alive,
    path_of,
    remove_file,
    write_segment,
)

#: what a task returns when it posted its value (`post`)
POSTED = "ren-posted"
#: the largest pickled value posted (a group's results in frames, not in slots, are larger:
#: they go through Dask as before)
MAX_POST_BYTES = 4 << 20


def name_of(job: str, group: int, attempt: int) -> str:
    """The post of group `group`'s `attempt`-th sending in job `job` (a prefix)."""
    return f"{job}-post-{group}-{attempt}"


def post(name: str, value: Any, job: str) -> bool:
    """Write `value` (pickled) as the post `name` of job `job` (module doc); whether it is
    there for the client to take."""
    if SHM_DIR is None or not job_alive(job):
        return False
    blob = pickle.dumps(value, protocol=5)
    if len(blob) > MAX_POST_BYTES:
        return False
    tmp = path_of(f"{name}.{os.getpid()}")
    try:
        write_segment(tmp, [blob], [0], len(blob))  # (a new file of ours, written whole)
        os.replace(tmp, path_of(name))
    except OSError as e:
        remove_file(tmp)
        if e.errno in NO_SPACE or isinstance(e, PermissionError | FileExistsError):
            return False
        raise
    if job_alive(job):
        return True
    remove_file(path_of(name))  # the job ended meanwhile: its cleanup may have listed already
    return False


def take(name: str) -> tuple[bool, Any]:
    """(True, the value posted as `name`), the file removed; (False, None) when there is none
    (the task returned its value through Dask).  Its shared-memory records come unread, as
    `Deferred` (read each with `ren.distributed.shm.received`)."""
    path = path_of(name)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return False, None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            raise DistributedError(f"map: the posted results {name} are not a file of this "
                                   "user's; another process wrote them")
        chunks, left = [], st.st_size
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    remove_file(path)
    return True, _Unpickler(io.BytesIO(b"".join(chunks))).load()


class _Unpickler(pickle.Unpickler):
    """Unpickles a post with its shared-memory records left unread (`Deferred`: the caller
    reads each with `received` just before it decodes it, while the copy is in the caches)."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "ren.distributed.shmrecords" and name == "receive":
            from ren.distributed.shmrecords import Deferred  # (not at the top: an import cycle)

            return Deferred
        return super().find_class(module, name)


__all__ = ["MAX_POST_BYTES", "POSTED", "name_of", "post", "take"]
