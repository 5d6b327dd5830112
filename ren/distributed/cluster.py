"""Finding a Dask client: the one passed in, the current default one, or a local cluster.

    with local_client(workers=2) as client:      # a LocalCluster of 2 single-threaded processes
        results = ren.distributed.map(fn, batch, keys=rlk, client=client)

    client = distributed.Client("tcp://scheduler:8786")   # a real cluster: Dask's own client

Dask is imported only when a function here is called, so `import ren.distributed` works without
the `distributed` extra and says what to install when it is needed.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from ren.distributed.errors import DaskUnavailableError, DistributedError, TaskError
from ren.errors import ParameterError, check_int

INSTALL_HINT = 'pip install -e ".[distributed]" (or pip install "dask[distributed]")'

#: environment of local worker processes: one thread per process for NumPy's libraries too
WORKER_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


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


def resolve_client(client: Any = None) -> Any:
    """`client`, or Dask's current default client; DistributedError when there is none."""
    distributed = dask_distributed()
    if client is not None:
        if not isinstance(client, distributed.Client):
            raise ParameterError(f"client must be a distributed.Client, got "
                                 f"{type(client).__name__}")
        if client.status not in ("running", "newly-created"):
            raise DistributedError(f"the Dask client is {client.status}; make a new one "
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


def _completed(client: Any, done: Any) -> Iterator[tuple[Any, dict[str, Any]]]:
    """(future, values fetched with it) for each future of `done` (a distributed.as_completed)
    as it completes.  The results of the futures that finished together are fetched in one
    call (one message per worker instead of one per result); when that fails (a task that
    raised, a result lost on the way) the dict is empty and each is fetched on its own."""
    for batch in done.batches():
        ready: dict[str, Any] = {}
        finished = [f for f in batch if f.status == "finished"]
        if len(finished) > 1:
            try:
                ready = dict(zip([f.key for f in finished], client.gather(finished)))
            except Exception:  # each future is taken on its own below
                ready = {}
        for fut in batch:
            yield fut, ready


def gather_as_completed(client: Any, futures: list[Any], what: str, timeout: float | None,
                        resubmit: Callable[[int], Any] | None = None,
                        more: Callable[[float | None], list[tuple[int, Any]]] | None = None
                        ) -> Iterator[tuple[int, Any]]:
    """(index, value) of every future of `futures` as it completes, each exactly once.

    A result lost with its worker after it completed (the scheduler computes it again) is
    waited for again, not taken twice.  A task cancelled behind the caller's back (its
    scattered input died with a worker) is replaced by ``resubmit(index)`` (in `futures` too)
    when that gives a future, else raises DistributedError.  A task that raised cancels the
    others and raises TaskError naming "`what` `index`"; `timeout` seconds without every
    result cancel the rest and raise DistributedError.

    `futures` may hold None for inputs not sent yet: ``more(wait)`` gives the (index, future)
    pairs sent since it was last asked, waiting up to `wait` seconds (None: no limit) for some
    when asked with a wait, and [] when nothing more will be sent."""
    distributed = dask_distributed()
    index = {f.key: i for i, f in enumerate(futures) if f is not None}
    arrived = [False] * len(futures)
    done = distributed.as_completed([f for f in futures if f is not None], timeout=timeout)
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
            for fut, ready in _completed(client, done):
                i = index[fut.key]
                if fut.status in ("pending", "lost"):  # lost with its worker: being recomputed
                    done.add(fut)
                    continue
                try:
                    value = ready[fut.key] if fut.key in ready else fut.result()
                except distributed.client.FutureCancelledError as e:  # type: ignore[attr-defined]
                    new = resubmit(i) if resubmit is not None and not arrived[i] else None
                    if new is None:
                        raise DistributedError(f"{what} {i}: its task was cancelled") from e
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
    except distributed.TimeoutError as e:
        late = arrived.count(False)
        raise DistributedError(f"{late} of {len(futures)} results ({what}s) did not arrive "
                               f"within {timeout} s; the rest is cancelled") from e
    finally:
        client.cancel([f for f in futures if f is not None and not f.done()])
    missing = [i for i, a in enumerate(arrived) if not a]
    if missing:
        raise DistributedError(f"the results of {what}s {missing[:10]} never arrived")


@contextlib.contextmanager
def local_client(workers: int = 2, threads_per_worker: int = 1, *, profile: bool = False,
                 **cluster_options: Any) -> Iterator[Any]:
    """A `distributed.LocalCluster` of `workers` processes (each `threads_per_worker` threads,
    NumPy's thread pools at 1; its web server on a free port, logs at warnings) and a Client on
    it (sending and fetching data to and from the workers directly, not through the
    scheduler); both are closed when the block ends.  `cluster_options` go to LocalCluster (e.g.
    ``memory_limit="4GiB"``, ``dashboard_address=":8787"``).

    ``profile=False`` (the default) switches off Dask's statistical profiler in the workers
    (``distributed.worker.profile.enabled``: a thread that reads every thread's stack every 10
    ms, holding the GIL, for the dashboard's profile page).  Measured in `bench_distributed.py`:
    about 5 % of a worker's CPU and of the job's wall time.  ``profile=True`` keeps it."""
    workers = check_int(workers, "local_client: workers")
    threads = check_int(threads_per_worker, "local_client: threads_per_worker")
    if workers < 1 or threads < 1:
        raise ParameterError(f"local_client: workers and threads_per_worker must be >= 1, got "
                             f"{workers} and {threads}")
    distributed = dask_distributed()
    options: dict[str, Any] = dict(n_workers=workers, threads_per_worker=threads, processes=True,
                                   dashboard_address=":0", silence_logs=logging.WARNING,
                                   env=dict(WORKER_ENV))
    options.update(cluster_options)
    # the nannies copy this process's Dask config into their workers when they start
    worker_config = {"distributed.worker.profile.enabled": bool(profile)}
    with dask_config().set(worker_config), distributed.LocalCluster(**options) as cluster, \
            distributed.Client(cluster, direct_to_workers=True) as client:
        # every worker registered before anything is sent: a broadcast scatter reaches only the
        # workers the scheduler knows, and data scattered to one worker alone dies with it
        client.wait_for_workers(workers, timeout=120)
        yield client


__all__ = ["INSTALL_HINT", "WORKER_ENV", "dask_distributed", "gather_as_completed", "local_client",
           "resolve_client"]
