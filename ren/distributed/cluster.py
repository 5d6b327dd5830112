"""Finding a Dask client: the one passed in, the current default one, or a local cluster.

    with local_client(workers=2) as client:      # a LocalCluster of 2 single-threaded processes
        results = ren.distributed.map(fn, batch, keys=rlk, client=client)

    client = distributed.Client("tcp://scheduler:8786")   # a real cluster: Dask's own client

Dask is imported only when a function here is called, so `import ren.distributed` works without
the `distributed` extra and says what to install when it is needed.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import time
import weakref
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from ren.distributed.errors import (
    DaskUnavailableError,
    DistributedError,
    SchedulerLostError,
    SlotTakenError,
    TaskError,
)
from ren.errors import (
    ParameterError,
    check_bool,
    check_int_range,
    check_real_range,
)

INSTALL_HINT = 'pip install -e ".[distributed]" (or pip install "dask[distributed]")'

#: environment of local worker processes: one thread per process for NumPy's libraries too
WORKER_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
#: the longest wait a job takes (seconds, about 31 years; None waits without a limit): Python's
#: thread waits refuse much more (OverflowError), and more is a mistake anyway
MAX_TIMEOUT = 10**9
#: the most worker processes, and threads per process, `local_client` starts on one machine
MAX_LOCAL_WORKERS = 1024
#: the event-loop tick of `local_client`'s processes (``distributed.admin.tick.interval``, where
#: the caller's Dask config leaves it at Dask's 20 ms): the tick only measures how late the
#: loop runs (Dask warns when it is later than ``distributed.admin.tick.limit``, 3 s)
TICK_INTERVAL = "1s"
#: the memory limit per worker `local_client` gives Dask unless the caller names one: 0 is none
#: (Dask's own default, "auto", is the machine's memory split evenly over the workers, and its
#: nanny restarts a worker past 95 % of that share: `local_client`'s doc)
LOCAL_MEMORY_LIMIT = 0
#: Dask's config of the active memory manager's policies (`local_client`: none)
AMM_POLICIES = "distributed.scheduler.active-memory-manager.policies"
#: the clients whose jobs keep their broadcast blobs on every worker (`local_client`'s
#: ``keep_broadcasts``, `keep_broadcasts_on`)
_keeping: weakref.WeakSet[Any] = weakref.WeakSet()
#: a Dask client whose status is one of these can send and receive
_LIVE = ("running", "newly-created")


def dask_distributed() -> ModuleType:
    """The `distributed` module, or DaskUnavailableError saying how to install it."""
    try:
        import distributed
    except ImportError as e:
        raise DaskUnavailableError(f"ren.distributed needs Dask distributed, which is not "
                                   f"installed ({e}); install it with {INSTALL_HINT}") from e
    return distributed


def dask_config() -> Any:
    """`dask.config` (installed with `distributed`)."""
    dask_distributed()
    import dask.config

    return dask.config


def check_timeout(timeout: Any, what: str) -> float | None:
    """`timeout` as seconds (a finite real > 0, at most `MAX_TIMEOUT`), or None (no limit)."""
    if timeout is None:
        return None
    return check_real_range(timeout, what, 0, MAX_TIMEOUT, lo_open=True,
                            hint="seconds to wait, or None to wait without a limit")


def scheduler_lost(client: Any) -> bool:
    """True once `client` lost its scheduler (reconnecting, or closed after it gave up)."""
    return getattr(client, "status", "running") not in _LIVE


def worker_addresses(client: Any) -> list[str]:
    """The addresses of the workers the scheduler of `client` knows now, asked of the
    scheduler itself.  ``Client.scheduler_info(n_workers=-1)`` fetches into the client's
    shared cache and returns the cache, which the client's periodic refresh (totals only, no
    worker entries) can overwrite in between: under load a job saw "no workers" on a healthy
    cluster (3 of ~30 jobs of 64 inputs on a loaded 2-core machine).

    A scheduler in this process (a `LocalCluster`'s, as `local_client` makes it) is read
    directly (`_local_scheduler`): the same dict its ``identity`` walks, without the round
    trip through the event loop (measured on an idle cluster: 0.95 ms of wall and 0.49 ms of
    the client's CPU per ask, on the path of every job before its first task is sent)."""
    local = _local_scheduler(client)
    if local is not None:
        # (a copy in C under the GIL: the event loop's thread cannot change the dict midway)
        return sorted(dict.keys(local.workers))
    scheduler = getattr(client, "scheduler", None)
    if scheduler is not None and hasattr(client, "sync") and not scheduler_lost(client):
        try:
            info = client.sync(scheduler.identity, n_workers=-1)
        except OSError:  # the caller checks whether the scheduler was lost
            info = {}
    else:
        info = client.scheduler_info(n_workers=-1)
    return list(info.get("workers", {}))


def _local_scheduler(client: Any) -> Any:
    """The running `distributed.Scheduler` object `client` is connected to when it lives in
    this process (its cluster's, with the same address), else None."""
    scheduler = getattr(getattr(client, "cluster", None), "scheduler", None)
    if scheduler is None or scheduler_lost(client):
        return None
    try:
        from distributed import Scheduler
    except ImportError:
        return None
    address = getattr(getattr(client, "scheduler", None), "address", None)
    if not isinstance(scheduler, Scheduler) or address is None or \
            scheduler.address != address or getattr(scheduler.status, "name", "") != "running":
        return None
    return scheduler


def send_now(client: Any) -> None:
    """Have `client`'s batched stream to its scheduler write what it holds at once, instead of
    when its pacing allows (a callback on the client's event loop, queued behind the messages
    the caller's thread just handed it: Dask's ``Client._send_to_scheduler``).

    Dask's client writes its stream at most every 10 ms (``BatchedSend(interval="10ms")``): a
    message that follows another by less waits out the rest.  A job's first tasks followed the
    previous job's releases of its results, so their graph waited: traced (1 worker, N = 2^14,
    64 inputs a job, back to back, the same clock on the client, the scheduler and the worker)
    the first task's graph reached the scheduler 8.8-12.6 ms (medians of 10 jobs) after
    `submit` began, 6-10 ms after ``client.map`` returned, and its task started 10.7-14.3 ms
    after; with the stream written at once 3.8-5.7 ms and 6.2-8.0 ms.  Messages that come
    between tasks (releases) keep Dask's pacing.  A client without such a stream (a stand-in,
    another Dask) is left alone."""
    comm = getattr(client, "scheduler_comm", None)
    loop = getattr(client, "loop", None)
    if loop is None or not _batched(comm):
        return
    # (a loop closed meanwhile: the messages go, or fail, as Dask sends them)
    with contextlib.suppress(Exception):
        loop.add_callback(functools.partial(wake_batched, comm))


#: the fields of Dask's ``BatchedSend`` that `wake_batched` sets (distributed 2024-2026)
_BATCHED_FIELDS = ("buffer", "next_deadline", "waker")


def _batched(comm: Any) -> bool:
    """Whether `comm` is a batched stream `wake_batched` knows how to wake (None: no stream)."""
    return comm is not None and all(hasattr(comm, a) for a in _BATCHED_FIELDS)


def wake_batched(comm: Any) -> None:
    """Have one of Dask's batched streams (``BatchedSend``) write the messages it holds now
    rather than when its pacing allows; a stream without those fields (None, another Dask) is
    left alone.  Runs on the stream's event loop: its sending coroutine writes when woken."""
    if _batched(comm) and comm.buffer and comm.next_deadline is not None:
        comm.next_deadline = None
        comm.waker.set()


def cancel_quietly(client: Any, futures: list[Any]) -> None:
    """Cancel the futures of `futures` not done yet; nothing when the scheduler is lost (Dask
    cancelled them itself, and a message to a lost scheduler waits out the connect timeout)."""
    if scheduler_lost(client):
        return
    pending = [f for f in futures if f is not None and not f.done()]
    if not pending:
        return
    try:
        client.cancel(pending)
    except Exception:
        if not scheduler_lost(client):  # lost just now: nothing to cancel, nothing to report
            raise


def lost_error(what: str, arrived: list[bool], cause: BaseException | None = None
               ) -> SchedulerLostError:
    """SchedulerLostError for a job of `what`s whose results `arrived` marks."""
    done = [i for i, a in enumerate(arrived) if a]
    shown = str(done) if len(done) <= 20 else f"{done[:20]} ... ({len(done)} in all)"
    because = ""  # Dask's own report of the loss (Ren's DistributedErrors only repeat it)
    if cause is not None and not isinstance(cause, DistributedError):
        because = f" ({type(cause).__name__}: {(str(cause).splitlines() or [''])[0]})"
    return SchedulerLostError(
        f"the Dask scheduler was lost while the job ran{because}: {len(done)} of {len(arrived)} "
        f"results ({what}s) had arrived ({shown}; the error's .completed and .results), the rest "
        "is lost with it.  Start the scheduler (or the cluster) again, make a new client and "
        "submit the rest", done)


def resolve_client(client: Any = None) -> Any:
    """`client`, or Dask's current default client; DistributedError when there is none."""
    distributed = dask_distributed()
    if client is not None:
        if not isinstance(client, distributed.Client):
            raise ParameterError(f"client must be a distributed.Client, got "
                                 f"{type(client).__name__}")
        if client.status not in _LIVE:
            raise DistributedError(f"the Dask client is {client.status} (it was closed, or it "
                                   "lost its scheduler); make a new one "
                                   "(ren.distributed.local_client() or distributed.Client(addr))")
        return client
    try:
        return distributed.get_client()
    except ValueError:
        raise DistributedError(
            "no Dask client: start one (`with ren.distributed.local_client(workers=2) as "
            "client:` for this machine, or `distributed.Client('tcp://scheduler:8786')` for a "
            "running cluster) and pass it as client=, or create it before this call so that it "
            "is the default client") from None


def _completed(client: Any, done: Any, fetch: bool = True
               ) -> Iterator[tuple[Any, dict[str, Any]]]:
    """(future, values fetched with it) for each future of `done` (a distributed.as_completed)
    as it completes.  The results of the futures that finished together are fetched in one
    call (one message per worker instead of one per result); when that fails (a task that
    raised, a result lost on the way) the dict is empty and each is fetched on its own.
    ``fetch=False`` fetches nothing (the dict is always empty)."""
    for batch in done.batches():
        ready: dict[str, Any] = {}
        finished = [f for f in batch if f.status == "finished"]
        if fetch and len(finished) > 1:
            try:
                ready = dict(zip([f.key for f in finished], client.gather(finished)))
            except Exception:  # each future is taken on its own below
                ready = {}
        for fut in batch:
            yield fut, ready


def gather_as_completed(client: Any, futures: list[Any], what: str, timeout: float | None,
                        resubmit: Callable[[int], Any] | None = None,
                        more: Callable[[float | None], list[tuple[int, Any]]] | None = None,
                        fetch: bool = True) -> Iterator[tuple[int, Any]]:
    """(index, value) of every future of `futures` as it completes, each exactly once.

    A result lost with its worker after it completed (the scheduler computes it again) is
    waited for again, not taken twice.  A task cancelled behind the caller's back (its
    scattered input died with a worker) is replaced by ``resubmit(index)`` (in `futures` too)
    when that gives a future, else raises DistributedError.  A task that raised cancels the
    others and raises TaskError naming "`what` `index`"; `timeout` seconds without every
    result cancel the rest and raise DistributedError.

    `futures` may hold None for inputs not sent yet: ``more(wait)`` gives the (index, future)
    pairs sent since it was last asked, waiting up to `wait` seconds (None: no limit) for some
    when asked with a wait, and [] when nothing more will be sent.

    ``fetch=False`` waits for the same completions without fetching any value: it yields
    (index, None) for each task that finished (its result stays on its worker, e.g. for a
    `ren.distributed.Batch`); failures, cancellations and resends are handled as above."""
    distributed = dask_distributed()
    index = {f.key: i for i, f in enumerate(futures) if f is not None}
    arrived = [False] * len(futures)
    # the client's own loop: without it Dask takes the default client's, which fails without
    # one (a client made with set_as_default=False) and may never see another client's futures
    done = distributed.as_completed([f for f in futures if f is not None], loop=client.loop,
                                    timeout=timeout)
    deadline = None if timeout is None else time.monotonic() + timeout

    def take(new: list[tuple[int, Any]]) -> None:
        for j, fut in new:
            if index.get(fut.key) == j:
                continue  # tracked already (`futures` had it when the walk began)
            futures[j] = fut
            index[fut.key] = j
            done.add(fut)

    try:
        while True:
            for fut, ready in _completed(client, done, fetch):
                i = index[fut.key]
                if fut.status in ("pending", "lost"):  # lost with its worker: being recomputed
                    done.add(fut)
                    continue
                try:
                    if fut.key in ready:
                        value = ready[fut.key]
                    elif fetch or fut.status != "finished":
                        value = fut.result()  # (a task that raised, or was cancelled, raises)
                    else:
                        value = None
                except distributed.client.FutureCancelledError as e:  # type: ignore[attr-defined]
                    if scheduler_lost(client):  # Dask cancelled every future: nothing to resend
                        raise lost_error(what, arrived, e) from e
                    new = resubmit(i) if resubmit is not None and not arrived[i] else None
                    if new is None:
                        raise DistributedError(f"{what} {i}: its task was cancelled") from e
                    take([(i, new)])
                    continue
                except SlotTakenError as e:  # a packed group run again after its slots went
                    new = resubmit(i) if resubmit is not None and not arrived[i] else None
                    if new is None:
                        raise TaskError(f"{what} {i} failed on a worker with "
                                        f"{type(e).__name__}: {e}", i, e) from e
                    take([(i, new)])
                    continue
                except distributed.KilledWorker as e:
                    raise TaskError(f"{what} {i} killed its worker too many times (too little "
                                    "memory for it, or a crash in a kernel)", i, e) from e
                except Exception as e:
                    raise TaskError(f"{what} {i} failed on a worker with {type(e).__name__}: "
                                    f"{e}", i, e) from e
                if arrived[i]:
                    raise DistributedError(f"the result of {what} {i} arrived twice")
                arrived[i] = True
                yield i, value
                if more is not None:
                    take(more(0))
            # every future sent so far has arrived: wait for the next ones, if any will come
            new = [] if more is None else more(
                None if deadline is None else max(0.0, deadline - time.monotonic()))
            if not new:
                break
            take(new)
    except SchedulerLostError:
        raise
    except Exception as e:
        if scheduler_lost(client):  # whatever failed first (a resend, a fetch): the real cause
            raise lost_error(what, arrived, e) from e
        if isinstance(e, distributed.TimeoutError):
            late = arrived.count(False)
            raise DistributedError(f"{late} of {len(futures)} results ({what}s) did not arrive "
                                   f"within {timeout} s; the rest is cancelled") from e
        raise
    finally:
        cancel_quietly(client, futures)
    missing = [i for i, a in enumerate(arrived) if not a]
    if missing:
        raise DistributedError(f"the results of {what}s {missing[:10]} never arrived")


def _default_amm_policies(policies: Any) -> bool:
    """Whether Dask's config holds its default memory-manager policies (ReduceReplicas only)."""
    return isinstance(policies, list) and len(policies) == 1 and isinstance(policies[0], dict) \
        and str(policies[0].get("class", "")).endswith("ReduceReplicas")


def _cluster_option_names(distributed: ModuleType) -> set[str]:
    """The options LocalCluster takes: its own, and those it hands to each Nanny and Worker."""
    names: set[str] = set()
    for cls in (distributed.LocalCluster, distributed.Nanny, distributed.Worker):
        names |= {n for n, p in inspect.signature(cls.__init__).parameters.items()
                  if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    return names - {"self", "worker_kwargs", "kwargs"}


@contextlib.contextmanager
def local_client(workers: int = 2, threads_per_worker: int = 1, *, profile: bool = False,
                 keep_broadcasts: bool = False, **cluster_options: Any) -> Iterator[Any]:
    """A `distributed.LocalCluster` of `workers` processes (each `threads_per_worker` threads,
    NumPy's thread pools at 1; its web server on a free port, logs at warnings) and a Client on
    it (sending and fetching data to and from the workers directly, not through the
    scheduler); both are closed when the block ends.  `cluster_options` go to LocalCluster (e.g.
    ``memory_limit="4GiB"``, ``dashboard_address=":8787"``); a name LocalCluster (or its
    nannies and workers) does not take is refused (ParameterError) before anything starts, and
    a cluster that does not start raises DistributedError with Dask's reason.

    ``profile=False`` (the default) switches off Dask's statistical profiler in the workers
    (``distributed.worker.profile.enabled``: a thread that reads every thread's stack every 10
    ms, holding the GIL, for the dashboard's profile page).  Measured in `bench_distributed.py`:
    about 5 % of a worker's CPU and of the job's wall time.  ``profile=True`` keeps it.

    The event loops' tick (a callback that measures how late each loop runs, for Dask's
    "event loop was unresponsive" warning and the dashboard) runs every `TICK_INTERVAL`
    instead of Dask's 20 ms, unless the caller's Dask config sets another interval: measured on
    an idle cluster of one worker (noisy, shared 2-core machine), the 20 ms tick costs the
    client process (which hosts the scheduler) 15-17 ms of CPU per second and each worker
    ~9 ms per second, about 0.3 ms of the client's CPU per N = 2^14 ciphertext of a
    `ren.distributed.map` at ~15 ms per ciphertext.

    **Memory.**  Unless ``memory_limit=`` is given, the workers have no Dask memory limit
    (`LOCAL_MEMORY_LIMIT` = 0): Dask's default gives each worker an even share of the machine's
    memory, pauses it at 80 % and has its nanny kill and restart it at 95 %, which a job sees
    as "lost dependencies" or a lost worker mid-batch.  A worker of an N = 2^16 bootstrapping
    holds ~5 GiB (lean) to ~11 GiB of keys, plan and arena plus Dask's copy of what was
    broadcast to it: on a 23 GiB machine with two workers, near its share.  Without the limit
    only the machine's own limits (the kernel's OOM killer, a container's cgroup) apply;
    ``memory_limit="8GiB"`` (per worker) brings Dask's back.

    **Broadcast keys between jobs** (``keep_broadcasts``).  Dask's active memory manager runs
    its `ReduceReplicas` policy every 2 s: it drops every copy but one of a key no waiting task
    needs, which between two jobs is each blob a job broadcast (its keys and plan,
    `ren.distributed.remote.share`).  The next job's tasks then fetch them from the one worker
    left holding them, while it computes: 2.4 s for 344 MB of bootstrapping keys at N = 2^13,
    3.2 GB at n16 (issue 42's two-worker n16 gap).  ``keep_broadcasts=True`` runs the
    scheduler with no policy (unless the caller's Dask config names its own; the manager
    itself stays, for retiring workers) and has `share` copy a dropped blob back to every
    worker before a job's tasks go: no fetch, but every worker holds Dask's serialized copy
    beside the keys it decoded, for as long as the client keeps the blob: at n16 lean 3.2 GB
    more per worker, which put two workers and the client past a 23 GiB machine (the kernel's
    OOM killer, a job's tasks cancelled).  The default keeps Dask's policy: memory first."""
    workers = check_int_range(workers, "local_client: workers", 1, MAX_LOCAL_WORKERS)
    threads = check_int_range(threads_per_worker, "local_client: threads_per_worker", 1,
                              MAX_LOCAL_WORKERS)
    profile = check_bool(profile, "local_client: profile")
    keep_broadcasts = check_bool(keep_broadcasts, "local_client: keep_broadcasts")
    distributed = dask_distributed()
    known = _cluster_option_names(distributed)
    unknown = sorted(map(str, set(cluster_options) - known))
    if unknown:
        raise ParameterError(
            f"local_client: unknown cluster option(s) {unknown}; the options are those of "
            f"distributed.LocalCluster, Nanny and Worker (e.g. memory_limit, dashboard_address, "
            f"local_directory); see help(distributed.LocalCluster)")
    options: dict[str, Any] = dict(n_workers=workers, threads_per_worker=threads, processes=True,
                                   dashboard_address=":0", silence_logs=logging.WARNING,
                                   env=dict(WORKER_ENV), memory_limit=LOCAL_MEMORY_LIMIT)
    options.update(cluster_options)
    # the nannies copy this process's Dask config into their workers when they start
    worker_config: dict[str, Any] = {"distributed.worker.profile.enabled": profile}
    from dask.utils import parse_timedelta

    if parse_timedelta(dask_config().get("distributed.admin.tick.interval"), "ms") == 0.02:
        worker_config["distributed.admin.tick.interval"] = TICK_INTERVAL  # (Dask's default)
    if keep_broadcasts and _default_amm_policies(dask_config().get(AMM_POLICIES, None)):
        worker_config[AMM_POLICIES] = []  # (read by the scheduler, in this process)
    with contextlib.ExitStack() as stack:
        # last, once the workers exited: the client's mappings of their result slots go too
        stack.callback(_unmap_results)
        try:
            stack.enter_context(dask_config().set(worker_config))
            cluster = stack.enter_context(distributed.LocalCluster(**options))
            client = stack.enter_context(distributed.Client(cluster, direct_to_workers=True))
            # every worker registered before anything is sent: a broadcast scatter reaches only
            # the workers the scheduler knows, and data scattered to one worker alone dies with it
            client.wait_for_workers(workers, timeout=120)
        except Exception as e:
            options.pop("env")
            raise DistributedError(
                f"local_client: the local Dask cluster did not start ({type(e).__name__}: {e}); "
                f"check the options ({options}) and the workers' log above") from e
        # (its map jobs' messages written at once: `ren.distributed.dispatch`)
        from ren.distributed import dispatch

        dispatch.add(client)
        if keep_broadcasts:
            keep_broadcasts_on(client)
        yield client


def _unmap_results() -> None:
    from ren.distributed import shmslots  # (lazily: it loads the wire formats)

    shmslots.unmap_results(everything=True)


def keep_broadcasts_on(client: Any) -> None:
    """Have `client`'s jobs copy a broadcast blob (keys, plan) that Dask's memory manager
    dropped back to every worker before their tasks go (`local_client`'s ``keep_broadcasts``;
    on your own cluster, also name no `ReduceReplicas` policy in the scheduler's Dask config)."""
    _keeping.add(client)


def keeps_broadcasts(client: Any) -> bool:
    """Whether `client`'s jobs keep their broadcast blobs on every worker."""
    return client in _keeping


__all__ = ["AMM_POLICIES", "INSTALL_HINT", "LOCAL_MEMORY_LIMIT",
           "MAX_LOCAL_WORKERS", "MAX_TIMEOUT", "TICK_INTERVAL", "WORKER_ENV",
           "cancel_quietly", "check_timeout", "dask_distributed", "gather_as_completed",
           "keep_broadcasts_on", "keeps_broadcasts", "local_client", "lost_error",
           "resolve_client", "scheduler_lost", "send_now", "wake_batched", "worker_addresses"]
