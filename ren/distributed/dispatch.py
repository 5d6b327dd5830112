"""A Dask plugin of `local_client`'s scheduler that writes a map job's tasks to the workers at once.

Dask paces each of its batched streams: a message that follows another on the same stream by
less than the stream's interval waits out the rest (``BatchedSend``: the client's stream to
the scheduler 10 ms, the scheduler's to each worker 5 ms).  A Ren map job sends a few large
tasks, so the pacing saves nothing there, while its first task's ``compute-task`` followed the
previous job's ``free-keys`` and waited.  `SchedulerDispatch` wakes the scheduler's streams to
the workers that hold messages once a task of a map job (a key ``ren-map-...``) went to
processing; the flush is a callback on the scheduler's event loop, so it runs after the turn
that queued the messages.  Messages of other tasks keep Dask's pacing.  The client's own stream
is flushed by `ren.distributed.cluster.send_now`.

Measured (1 worker, N = 2^14, 64 inputs a job back to back, one clock; 2 alternated pairs of
10 jobs, loaded 2-core VM): the first task's message from the scheduler's processing to the
worker mean 1.94 -> 1.30 ms, median 1.35 -> 1.15, worst 6.9 -> 2.9 ms.  Tried and not kept:
the same flush of the scheduler's streams to the clients and of each worker's stream to the
scheduler when a map task's result went to memory (the job's tail): last task's end -> the
client's take of its post 1.87/2.09 -> 1.94/2.05 ms, the tail 4.00/4.24 -> 4.08/4.24 ms
(medians of 10): those paces did not fall on the tail.

Imported only by `local_client` (it imports `distributed`)."""

from __future__ import annotations

from typing import Any

from distributed.diagnostics.plugin import SchedulerPlugin

from ren.distributed.cluster import wake_batched

#: the name both plugins are registered under
NAME = "ren-dispatch"
#: the keys of a map job's tasks (`ren.distributed.grouping.Sender`)
MAP_KEY = "ren-map-"


def flush(comms: Any) -> None:
    """Wake each of the batched streams `comms` that holds messages and waits out its pacing
    (on the loop's thread: `ren.distributed.cluster.wake_batched`)."""
    for comm in list(comms):
        wake_batched(comm)


class SchedulerDispatch(SchedulerPlugin):
    """On the scheduler: after a turn that made a map task processing, its streams to the
    workers are flushed (once per turn)."""

    def __init__(self, scheduler: Any) -> None:
        self.scheduler, self.pending = scheduler, False

    def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        if finish == "processing" and not self.pending and isinstance(key, str) and \
                key.startswith(MAP_KEY):
            self.pending = True
            self.scheduler.loop.add_callback(self.flush)

    def flush(self) -> None:
        self.pending = False
        flush(self.scheduler.stream_comms.values())


def add_to_scheduler(dask_scheduler: Any) -> None:
    """Add `SchedulerDispatch` to a scheduler (run on its loop: ``client.run_on_scheduler``)."""
    dask_scheduler.add_plugin(SchedulerDispatch(dask_scheduler), name=NAME)


def add(client: Any) -> None:
    """`SchedulerDispatch` on `client`'s scheduler."""
    client.run_on_scheduler(add_to_scheduler)


__all__ = ["MAP_KEY", "NAME", "SchedulerDispatch", "add", "add_to_scheduler", "flush"]
