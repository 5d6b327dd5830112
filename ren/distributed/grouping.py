"""How a map job's inputs go out: packed groups, the window of tasks in flight, the sender.

`ren.distributed.batch.submit` sends a small batch as one Dask task per input and a large one
(`inputs_per_task` > 1) as **packed groups**: a group of consecutive inputs is ONE scattered
object (the group's wire trees in one list: one Dask key, its records' frames zero-copy in one
message) run by ONE task (`ren.distributed.worker.run_item` with ``group=True``) that returns
ONE object (the list of the group's results and timings).  Dask's cost is per key, per task
and per message, not per byte, so a group of g inputs costs the client and the workers about
what one input costs in scheduling, messages and event-loop work, plus the bytes.

Measured at N = 2^14 (CPU per ciphertext, 64 inputs; noisy, shared 2-core machine), one
worker: the client 3.1-4.2 ms with 8 inputs a task, 3.0-3.5 with 16, 3.1-3.4 with 32; the
worker outside the replay 2.5-3.0, 2.8-3.0, 2.9 ms.  Two workers: the client 2.9 ms with 8,
2.1 with 16; the workers outside the replay 2.8 and 2.5 ms.  A plain Dask job moving the same
bytes (NumPy arrays of the same sizes, no Ren) costs the client 2.1 / 1.7 / 1.4 ms per input
in groups of 8 / 16 / 64: the floor of Dask's TCP path on that machine.

**The size of a group** (`inputs_per_task`, `bytes_cap`): from `PACK_FROM` inputs per
worker, as many inputs as give each worker `TASKS_PER_WORKER` tasks (one window: one running and
one queued behind it), at most `MAX_INPUTS_PER_TASK` inputs and `MAX_TASK_BYTES` of them per
task (a worker holds two groups, the one it runs and the one queued); more tasks where a cap
applies.  Each task costs the client's event loop (its in-process scheduler and comms) and the
worker's a few ms of CPU whatever it carries.  Bisected (plain Dask tasks on `local_client`,
adding Ren's features one at a time; per-thread CPU, loaded 2-core VM): a task that runs for
80 ms costs the client's loop 2.1-2.7 ms and the worker's 1.9-2.5 ms (each task's finish and
the next dispatch are then messages of their own; 8 instant tasks of one map batch them, ~1 ms
each), of which ~0.8 and ~0.3 ms are the loops' periodic work while it runs (7-13 and 3-7 ms
per second).  Ren's features together (a map per chunk and per worker, `Packed` blobs, the
context and program futures, worker restrictions, `send_now`, done-callbacks, posted values)
add ~0-1 ms to the client's loop and ~0.3 to the worker's, none of them alone above the
noise; with the shared-memory pool no longer full, the real map measures 2.5-6 and 1.2-3 ms
per extra task (4 against 6 tasks a job).  Two tasks per worker instead
of four (64 inputs at N = 2^14: 4 tasks instead of 6 on one worker, 8 instead of 11 on two)
cut the client's CPU per ciphertext 1.82/1.78 -> 1.51/1.39 ms and the worker's outside the
replay 1.09/1.03 -> 1.00/0.87 ms on one worker (its event-loop thread 0.44/0.42 -> 0.29/0.26),
alternated runs of 6 jobs, loaded 2-core VM.  The middle groups are as many as a multiple of
the workers (`_even`), so that each worker runs as many: 7 groups of 8 on two workers gave one
of them 36 of 64 inputs, and the job's wall waited for it.

**The start and the end of a job** (`make_groups` with `TAPER`): a worker waits for the
client to encode its whole first group before it starts, and the client decodes the last
group's results only once every one of them is computed, while the workers have nothing left
to do.  At N = 2^14 that is ~0.3 ms of the client's time per input of the first group and ~1 ms
per result of the last (16 of each on one worker: ~20 ms of a ~600 ms job).  So the first
group of each worker is `TAPER` times smaller than the rest and the last `LAST_TAPER` times
(64 inputs on one worker: 7, 27, 27, 3; on two: 4, 4, 13 x 4, 2, 2).  The first
stays at a quarter: the worker's second group goes in another message, which Dask's client
holds up to 10 ms behind the first (its batched stream's interval), and must arrive before the
first group is done.  The last at an eighth (2 inputs instead of 4 on one worker): from the
last task's end to `result()` returning 5.1/6.3 ms against 6.3/7.4 (medians of 24/18 jobs,
N = 2^14, two alternated runs each, a loaded 2-core VM), while the client still decodes the
group before it within the last group's replays.

**The window** (`window`): a job keeps `IN_FLIGHT_PER_WORKER` tasks of one input per worker
out at a time, or `GROUPED_IN_FLIGHT_PER_WORKER` tasks of a group; `MapJob` sends the next
chunk from Dask's callback thread when half of the window has finished.

`Sender` encodes, scatters and submits a chunk of inputs (or groups): one scatter of all
their wire trees (a dict, one key each), then one `client.map` of their tasks.  On the path
of shared memory a group is not scattered: its wire trees (slot names, a few hundred bytes
per input) are pickled into its task (`ren.distributed.worker.Packed`), which cuts the
messages of a job by ~40 % (counted, N = 2^14, 64 inputs, 1 worker: the client's and
in-process scheduler's comm writes 102 -> 62 per job, the worker's 27 -> 19).
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any

from ren.distributed import posts
from ren.distributed.cluster import send_now
from ren.distributed.wire import Codec, wire_bytes
from ren.distributed.worker import Packed, run_item

#: tasks of one input a job keeps out per worker (sent, not finished): `MapJob`'s flow control
IN_FLIGHT_PER_WORKER = 4
#: tasks of a group a job keeps out per worker: one running and one queued behind it
GROUPED_IN_FLIGHT_PER_WORKER = 2
#: tasks per worker a large batch is cut into, at least (one window of grouped tasks)
TASKS_PER_WORKER = GROUPED_IN_FLIGHT_PER_WORKER
#: inputs per worker from which a batch goes as packed groups (`inputs_per_task`)
PACK_FROM = 8
#: the most inputs one task of a large batch carries (`inputs_per_task`)
MAX_INPUTS_PER_TASK = 32
#: the most wire bytes of inputs one task carries (a worker holds two such groups)
MAX_TASK_BYTES = 64 << 20
#: the first group of each worker is this many times smaller (`make_groups`)
TAPER = 4
#: and its last group this many times (at least 2 inputs)
LAST_TAPER = 8
#: the most pickled bytes per input a packed group carries in its task (`Sender`): its records
#: in shared memory are a few hundred bytes each; records under the shared-memory threshold
#: travel in the pickle, and past this a chunk is scattered as before (the scheduler holds and
#: forwards a task's arguments)
MAX_PACKED_BYTES = 64 << 10


def inputs_per_task(n: int, workers: int) -> int:
    """Inputs per Dask task for a batch of `n` inputs on `workers` workers (module doc): 1 for
    a batch of fewer than `PACK_FROM` inputs per worker; else as many as gives each worker
    `TASKS_PER_WORKER` tasks, at most `MAX_INPUTS_PER_TASK` (and `bytes_cap`).  64 inputs:
    32 a task on one worker, 16 on two."""
    w = max(1, workers)
    if n < PACK_FROM * w:
        return 1
    return max(1, min(MAX_INPUTS_PER_TASK, n // (TASKS_PER_WORKER * w)))


def bytes_cap(per_task: int, nbytes: int) -> int:
    """`per_task` inputs of `nbytes` wire bytes each, cut to at most `MAX_TASK_BYTES` a task
    (at least 1): 31 of N = 2^14 (2.1 MB each), 5 dense N = 2^16 ciphertexts of 24 limbs
    (12.6 MB each)."""
    return max(1, min(per_task, MAX_TASK_BYTES // max(1, nbytes)))


def make_groups(n: int, per_task: int, workers: int = 0) -> list[list[int]]:
    """The input indices of each task: consecutive runs of `per_task` (the last one shorter).
    With `workers` and groups of at least ``2 * TAPER``, the batch's first `workers` groups
    are `TAPER` times smaller and its last `workers` `LAST_TAPER` times (at least 2 inputs, and
    `TAPER` times where that would take a task more; module doc: the start and the end of a
    job), and the runs between them even (at most `per_task` each)."""
    small = per_task // TAPER
    if workers < 1 or small < 2 or n - 2 * workers * small < per_task:
        return [list(range(s, min(n, s + per_task))) for s in range(0, n, per_task)]
    tasks = _even(-(-(n - 2 * workers * small) // per_task), workers, n - 2 * workers * small)
    last = max(2, per_task // LAST_TAPER)
    if _even(-(-(n - workers * (small + last)) // per_task), workers,
             n - workers * (small + last)) > tasks:
        last = small  # (a smaller last group would cost a task more)
    rest = n - workers * (small + last)
    sizes = [small] * workers + [rest // tasks + (i < rest % tasks) for i in range(tasks)] + \
        [last] * workers
    out, start = [], 0
    for k in sizes:
        out.append(list(range(start, start + k)))
        start += k
    return out


def _even(tasks: int, workers: int, inputs: int) -> int:
    """`tasks` rounded up to a multiple of `workers` where `inputs` fill that many (each
    worker then runs as many of the even middle groups: 7 groups of 8 on two workers gave one
    of them 36 inputs of 64 and the job's wall waited for it)."""
    even = -(-tasks // workers) * workers
    return even if even <= inputs else tasks


def window(workers: int, grouped: bool) -> int:
    """Tasks a job keeps out at a time on `workers` workers (module doc)."""
    per = GROUPED_IN_FLIGHT_PER_WORKER if grouped else IN_FLIGHT_PER_WORKER
    return per * max(1, workers)


@dataclass
class Sender:
    """Sends inputs of a job: scatters their wire forms to workers, then submits their tasks."""

    client: Any
    items: list[Any]
    codec: Codec
    shared: dict[str, Any]  # the context and program futures, by key
    context_key: str
    program_key: str
    which: list[int | None]
    job_id: str
    addresses: list[str]
    keep: bool = False
    group: bool = False  # each item is a list of inputs run by one task (`inputs_per_task`)
    indices: list[list[int]] = field(default_factory=list)  # each group's input indices
    #: the job's shared-memory prefix and smallest record (`ren.distributed.shm`), or None
    shm: tuple[str, int] | None = None
    segments: Any = None  # its writer of input segments
    #: tasks of packed groups out per worker (`_submit_packed`), and where each was placed
    placed: dict[str, int] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)
    #: the post of each packed group's last sending, by group (`ren.distributed.posts`)
    post_names: dict[int, str] = field(default_factory=dict)

    def send_many(self, indices: range, attempt: int = 0) -> list[tuple[Any, Any, int]]:
        """(the task's future, the scattered input's future, the input's wire bytes) of each
        of the inputs (or groups) `indices`, sent for the `attempt`-th time (0: the first): one
        scatter over `addresses` (Dask deals them out round robin), then one submission of all
        their tasks.  Dask's cost is per message, not per input (measured with 2 MB inputs:
        the client's CPU per 64 inputs 0.42 s one by one, 0.20 s in chunks)."""
        keys = [f"ren-map-{self.job_id}-{i}" + (f"-resend{attempt}" if attempt else "")
                for i in indices]
        wires = [self.codec.encode(self.items[i], f"batch[{i}]", self.segments)
                 for i in indices]
        if self.group and self.shm is not None:
            blobs = [pickle.dumps(w, protocol=5) for w in wires]
            if sum(len(b) for b in blobs) <= MAX_PACKED_BYTES * len(blobs):
                return self._submit_packed(indices, keys, blobs, wires, attempt)
        # a dict: each wire tree (a group's list too) is one value, one key (a list would be
        # scattered item by item)
        data = self.client.scatter({f"{k}-input": w for k, w in zip(keys, wires)},
                                   workers=self.addresses, hash=False)
        ck, pk = self.context_key, self.program_key
        futures = self.client.map(
            run_item, [self.which[i] for i in indices], [data[f"{k}-input"] for k in keys],
            [self.indices[i] for i in indices] if self.group else list(indices), key=keys,
            pure=False, context_key=ck, context_blob=self.shared[ck], program_key=pk,
            program_blob=self.shared[pk], keep=self.keep, group=self.group, shm=self.shm)
        send_now(self.client)  # (the tasks' graph, not after Dask's 10 ms pacing: `send_now`)
        return [(f, data[f"{k}-input"], wire_bytes(w)) for f, k, w in zip(futures, keys, wires)]

    def _submit_packed(self, indices: range, keys: list[str], blobs: list[bytes],
                       wires: list[Any], attempt: int) -> list[tuple[Any, Any, int]]:
        """`send_many` for groups whose records are in shared memory: each group's pickled
        wire trees go in its task (`Packed`), with no scattered input (its future is None).
        Each task is placed on the worker with the fewest of this job's tasks out (loosely:
        Dask runs it elsewhere when that worker is gone), one `client.map` per worker.  Each
        task posts its results (`ren.distributed.posts`) under the name `post_names` keeps."""
        assert self.shm is not None
        out: dict[str, tuple[Any, Any, int]] = {}
        for i in indices:
            self.post_names[i] = posts.name_of(self.shm[0], i, attempt)
        by_worker: dict[str, list[int]] = {}
        for k, _ in enumerate(indices):
            where = min(self.addresses, key=lambda a: (self.placed.get(a, 0), a))
            self.placed[where] = self.placed.get(where, 0) + 1
            by_worker.setdefault(where, []).append(k)
        ck, pk = self.context_key, self.program_key
        for where, ks in by_worker.items():
            futures = self.client.map(
                run_item, [self.which[indices[k]] for k in ks],
                [Packed(blobs[k], self.post_names[indices[k]]) for k in ks],
                [self.indices[indices[k]] for k in ks], key=[keys[k] for k in ks], pure=False,
                workers=[where], allow_other_workers=True, context_key=ck,
                context_blob=self.shared[ck], program_key=pk, program_blob=self.shared[pk],
                keep=self.keep, group=True, shm=self.shm)
            for k, f in zip(ks, futures):
                self.where[f.key] = where
                out[keys[k]] = (f, None, wire_bytes(wires[k]))
        send_now(self.client)  # (the tasks' graph, not after Dask's 10 ms pacing: `send_now`)
        return [out[k] for k in keys]

    def finished(self, key: str) -> None:
        """The task `key` is no longer out (`_submit_packed`'s count of tasks per worker)."""
        where = self.where.pop(key, None)
        if where is not None:
            self.placed[where] -= 1


__all__ = ["GROUPED_IN_FLIGHT_PER_WORKER", "IN_FLIGHT_PER_WORKER", "LAST_TAPER",
           "MAX_INPUTS_PER_TASK", "MAX_PACKED_BYTES", "MAX_TASK_BYTES", "PACK_FROM", "TAPER",
           "TASKS_PER_WORKER", "Sender", "bytes_cap", "inputs_per_task", "make_groups", "window"]
