"""Same-host records through shared memory: Dask carries the names, /dev/shm the limbs.

When a client and its workers share a machine (a `local_client()` cluster, or workers started
on the client's host), sending a 2 MB ciphertext through Dask's TCP comm costs each side's
event-loop thread ~2-3 ms of CPU (tornado's reads and writes in ~64-128 kB pieces).  On this
path the record's frames go through a file in `SHM_DIR` (tmpfs: memory) and the Dask message
carries only its name (`Shared`).  Records under `MIN_BYTES` (and everything that is not a
record) still travel in the message.

This module is the job-level protocol: which path a job takes, the client's marker and the
workers' probe, and when files go.  The files themselves (pool slots, segments, `Shared` and
its receiver, their costs and the trust they need) are `ren.distributed.shmfiles`',
`shmslots`' and `shmrecords`'; their names are importable from here too.

**Which path.**  ``REN_DISTRIBUTED_SHM`` (a `ren.settings` switch read each time a job starts,
on the client: `mode`):
- ``off``: the frames travel in the message.
- ``auto`` (the default): files when every worker of the job sees the client's `SHM_DIR`, the
  frames in the message otherwise (and when /dev/shm is full; see *Cost* in
  `ren.distributed.shmfiles` for what the pooled files save).  The probe: the client writes a
  marker file of random contents there and the workers read it back, once per client and
  worker address (`visible_workers`).
- ``on``: files are required; a job whose workers do not all see the marker raises
  `DistributedError`.
``REN_DISTRIBUTED_SHM_MIN_BYTES`` (`min_bytes`, also read when a job starts) is sent to the
workers with the job.  ``settings.override(REN_DISTRIBUTED_SHM="auto")`` sets either for a
block of the client's thread.  A worker writes its results into files only while the client's
job marker is in its `SHM_DIR` (a worker of another machine never does).  ``keep=True``
results, which stay on the workers, never go into files.

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
- A process that starts using this path, and every job's end, removes at once the files of
  processes that are gone without exiting (`reap`: a client or worker killed by a signal, a
  Jupyter kernel killed).  Each owner holds a shared ``flock`` on a file for as long as it
  lives: a client on its marker (``<prefix>.host``), a writer on each pool slot it made; the
  kernel drops the lock when the process dies, however it dies.  A file goes when no process
  holds its owner's lock and the owner's pid is not in ``/proc`` (a slot's owner is its writer,
  any other file's its client).  A live owner in another pid namespace (not in this
  ``/proc``) holds its lock and keeps its files; a pid reused by another process keeps them
  too (the next reap, once that process is gone, takes them).
"""

from __future__ import annotations

import atexit
import fcntl
import itertools
import os
import secrets
import threading
from collections.abc import Callable
from typing import Any

from ren import settings
from ren.distributed.errors import DistributedError
from ren.distributed.shmfiles import (
    ALIGN,
    HEAD,
    MIN_BYTES,
    NAME,
    POOL_SLOTS,
    PREFIX,
    SHM_DIR,
    job_alive,
    job_marker,
    map_segment,
    path_of,
    remove_file,
    remove_prefix,
    write_segment,
)
from ren.distributed.shmrecords import (
    Deferred,
    Segments,
    Shared,
    SlotPages,
    receive,
    received,
    register_dask,
)
from ren.distributed.shmslots import (
    Pool,
    borrow_slot,
    borrowed_intact,
    free_slot,
    pool_for,
    read_slot,
    release,
    remove_dead_pools,
    unmap_results,
)
from ren.errors import SerializationError

#: the switch that picks the path: "auto", "on" or "off" (module doc; `ren.settings`' values
#: and default, read each time a job starts)
ENV = "REN_DISTRIBUTED_SHM"
MODES: tuple[str, ...] = tuple(str(v) for v in settings.SWITCHES[ENV].allowed or ())
#: the switch that sets the threshold (`MIN_BYTES` by default) for the client's jobs, workers
#: included
MIN_ENV = "REN_DISTRIBUTED_SHM_MIN_BYTES"
_lock = threading.Lock()
_token: str | None = None  # this process's client token (its marker's contents), once made
_jobs = itertools.count()
_visible: dict[tuple[int, str], bool] = {}  # (id of a client, worker address) -> sees the marker
_reaped = False
_host_fd: int | None = None  # this client's marker, open and locked while the process lives


def mode() -> str:
    """The path ``REN_DISTRIBUTED_SHM`` picks now ("auto" when unset; ``settings.get``, which
    reads this switch each time); SettingsError for a value that is not one of `MODES`."""
    return str(settings.get(ENV))


def min_bytes() -> int:
    """The smallest record (bytes of frames) a job of this client starting now puts into a
    segment (``REN_DISTRIBUTED_SHM_MIN_BYTES``, read each time; SettingsError when it is not
    a number of bytes)."""
    return int(settings.get(MIN_ENV))


# -- the client's marker and jobs -------------------------------------------------------------
def client_prefix() -> str:
    """This process's prefix of segment names (``ren-<pid>-<token>``), its marker file made
    (the probe workers read) the first time."""
    global _token, _host_fd
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
                fcntl.flock(fd, fcntl.LOCK_SH)  # held while this process lives (`reap`)
                os.write(fd, token.encode())
            except BaseException:
                os.close(fd)
                raise
            _token, _host_fd = token, fd
            atexit.register(_at_exit, prefix)
        return f"{PREFIX}{os.getpid()}-{_token}"


def _at_exit(prefix: str) -> None:
    remove_prefix(prefix)


def sees_marker(name: str, token: str) -> bool:
    """Whether this process's `SHM_DIR` holds the marker `name` with the contents `token` (run
    on each worker by `visible_workers`)."""
    if SHM_DIR is None:
        return False
    try:
        with open(path_of(name), "rb") as f:
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
    fd = os.open(job_marker(prefix), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    return prefix


def end_job(prefix: str | None) -> int:
    """Remove job `prefix`'s marker, then every segment of it left (module doc); how many
    segments.  Idempotent.

    One listing of `SHM_DIR`, taken after the marker went (a worker that wrote a segment and
    then found the marker gone unlinks it itself), serves every step, and each writer's pid is
    looked up in ``/proc`` once: the steps listed it four times and looked up each pool
    file's writer, ~0.6-0.9 ms of the client's CPU at the end of every job (on its critical
    path: `MapJob.result` returns after it) with ~100 files of a worker's pool there."""
    if prefix is None:
        return 0
    remove_file(job_marker(prefix))
    client = prefix.rsplit("-", 1)[0]
    names = _listing()
    alive = _pid_lookup()
    # a killed worker's slots, once no other job of this client runs: a running job may still
    # take a post of that worker naming them (`ren.distributed.posts`), and must read its words
    running = jobs_running(client, names)
    if not running:
        remove_dead_pools(client, names, alive)
        unmap_results(client)  # (of the slots of workers that are gone)
    gone = remove_prefix(prefix + "-", names)
    # and what processes killed meanwhile left (a killed client's files)
    reap(keep=client + "-pool-" if running else None, names=names, alive=alive)
    return gone


def _listing() -> list[str] | None:
    """The names in `SHM_DIR` now (None when there is none, or it cannot be listed)."""
    if SHM_DIR is None:
        return None
    try:
        return os.listdir(SHM_DIR)
    except OSError:
        return None


def _pid_lookup() -> Callable[[int], bool]:
    """Whether a pid is in ``/proc``, each pid looked up once (for one pass over the files)."""
    seen: dict[int, bool] = {}

    def alive(pid: int) -> bool:
        found = seen.get(pid)
        if found is None:
            found = seen[pid] = os.path.exists(f"/proc/{pid}")
        return found

    return alive


def jobs_running(client: str, names: list[str] | None = None) -> bool:
    """Whether a job of client prefix `client` has its marker here (it has not ended);
    `names`: a listing of `SHM_DIR` taken already."""
    if names is None:
        names = _listing()
    return any(n.startswith(client + "-") and n.endswith(".job") for n in names or ())


def lock_held(path: str) -> bool | None:
    """Whether a process holds a lock on file `path` (its owner lives: module doc); None when
    the file is not there (or cannot be locked)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released when fd closes
    except BlockingIOError:
        return True
    except OSError:
        return None
    finally:
        os.close(fd)
    return False


def owner(name: str) -> tuple[str, int] | None:
    """The file whose lock says whether Ren file `name`'s owner lives, and the owner's pid: a
    pool slot's writer (the slot itself), else its client (the client's marker); None for a
    name that is not a Ren file's."""
    m = NAME.fullmatch(name)
    if m is None:
        return None
    client = f"{PREFIX}{m.group(1)}-{m.group(2)}"
    slot = name[len(client):]
    if slot.startswith("-pool-"):
        pid = slot[6:].split(".")[0]
        if pid.isdigit():
            return name, int(pid)
    return client + ".host", int(m.group(1))


def reap(keep: str | None = None, names: list[str] | None = None,
         alive: Callable[[int], bool] | None = None) -> int:
    """Unlink, at once, the files of processes that are gone (module doc: nobody holds the
    owner's lock and the owner's pid is not in /proc), but for names that start with `keep`;
    how many.  `names`: a listing of `SHM_DIR` taken already; `alive`: the pid lookup of the
    pass (`end_job`)."""
    global _reaped
    _reaped = True
    if SHM_DIR is None:
        return 0
    if names is None:
        names = _listing()
    alive = alive or _pid_lookup()
    gone = 0
    me = os.getpid()
    for n in names or ():
        whose = owner(n)
        if whose is None or whose[1] == me or (keep and n.startswith(keep)) or \
                alive(whose[1]) or lock_held(os.path.join(SHM_DIR, whose[0])):
            continue
        gone += remove_file(os.path.join(SHM_DIR, n))
    return gone


__all__ = [
    "ALIGN", "ENV", "HEAD", "MIN_BYTES", "MIN_ENV", "MODES", "POOL_SLOTS", "SHM_DIR", "Deferred",
    "Pool", "Segments", "Shared", "SlotPages", "borrow_slot", "borrowed_intact", "client_prefix",
    "end_job", "free_slot", "job_alive", "jobs_running", "lock_held", "map_segment", "min_bytes",
    "mode", "owner", "pool_for", "read_slot", "reap", "receive", "received", "register_dask",
    "release", "remove_dead_pools", "remove_prefix", "sees_marker", "start_job", "unmap_results",
    "visible_workers",
    "write_segment",
]
