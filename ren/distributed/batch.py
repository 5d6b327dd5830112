"""`map` and `submit`: one function over a batch of ciphertexts (or Polys) on a Dask cluster.

    results = map(square, cts, keys=rlk)        # in order, decoded on the client
    job = submit(square, cts, keys=rlk)         # the same, without waiting
    job.describe()                              # what travelled: keys, plan, inputs, per worker
    results = job.result()

**The function.**  A `ren.jit` function (the intended case) is captured on the client: for each
input spec in the batch, the plan its first input would replay (`Jitted.plan_for`), capturing
it there by one call where there is none.  The plans travel pickled and every worker replays
them; no worker schedules or lowers anything.  Any other callable runs eagerly on the workers
(pickled by cloudpickle: a function of an importable module by reference, one of ``__main__``
by value).

**Calls.**  An input that is a tuple is spread into positional arguments, anything else is the
one argument; with ``keys=...`` every call also gets ``keys=<the decoded keys>``.  Keys are any
tree (tuple, list, dict) of public keys: `RelinKey`, `GaloisKeys`, `PublicKey`.

**What travels.** Once per worker (a broadcast scatter): the parameters and keys (wire records
in the compact form: each uniform half as its seed) and the program; the client keeps them
there for its later jobs (`ren.distributed.remote.share`), so a second map with the same keys
sends no key byte (`MapJob.shared_sent_bytes` is 0).  Per input: the input's wire form (a
`ren.distributed.wire` record: a header and frames of the limbs' storage, checksummed),
scattered to one worker (round robin) and its task sent after it, which the scheduler runs
where the input is; at most `IN_FLIGHT_PER_WORKER` tasks per worker are out at a time, sent in
chunks as results come back (`MapJob`); per result: the result's wire form.  A large batch (8
inputs or more per worker; not with ``keep=True``) goes as **packed groups**
(`ren.distributed.grouping`): each group of up to `MAX_INPUTS_PER_TASK` consecutive inputs is
one scattered object, one task and one result object, `GROUPED_IN_FLIGHT_PER_WORKER` tasks out
per worker: Dask's cost is per key, task and message, and the job's `futures` are then one
per group.  On the path of shared memory a group's inputs are slot names, pickled into its
task (`ren.distributed.worker.Packed`): no scattered key at all.  With a client
made with ``direct_to_workers=True`` (as `local_client` makes it) inputs and results go between
the client and the workers directly, not through the scheduler: measured with 2 MB inputs,
that halves the client process's CPU per task.  A secret key never travels (`SecretKeyError`
from the client before anything is sent).

**Data that stays on the cluster** (`ren.distributed.remote`).  The batch may be a `Batch` (or
a list of Dask futures): each task then takes its input where it lies, and nothing passes
through the client.  ``keep=True`` leaves the results on the workers and returns them as a
`Batch` (`MapJob.persist`), which the next map takes as its batch: a chain of maps runs on the
cluster, and `Batch.gather()` fetches the last results when they are wanted.

**Failures.**  A worker that dies mid-batch loses its running tasks, the results it held and
the inputs scattered to it.  Dask runs again, on the other workers, the tasks whose input is
still on one; a task whose input died with the worker comes back cancelled, and the client
scatters that input again (encoded anew from the batch; at most `MAX_RESENDS` times per
input).  A packed group's task Dask runs again after its first run freed the group's input
slots raises `SlotTakenError`, and the client sends the group again the same way.  Every
result arrives exactly once.  A task that raises cancels the rest of the job and
raises `TaskError` with the input's index, the worker's exception as its cause (e.g. a
`LevelError` for an input with no level left).  A scheduler lost mid-job (killed, its machine
gone) ends the job at once with `SchedulerLostError`: which inputs' results had arrived
(`.completed`) and those results (`.results`); nothing is sent to, or cancelled through, the
lost scheduler.

**The client.**  Everything goes through the client passed as ``client=`` (else Dask's
default one): the scatters, the tasks, and the wait for their results (Dask's `as_completed`
on that client's event loop), so a client made with ``set_as_default=False`` works, beside
another default client too.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from ren.distributed import posts, shm
from ren.distributed.cluster import (
    cancel_quietly,
    check_timeout,
    gather_as_completed,
    resolve_client,
    scheduler_lost,
    worker_addresses,
)
from ren.distributed.errors import DistributedError, SchedulerLostError, TaskError
from ren.distributed.grouping import (
    GROUPED_IN_FLIGHT_PER_WORKER,
    IN_FLIGHT_PER_WORKER,
    MAX_INPUTS_PER_TASK,
    Sender,
    bytes_cap,
    inputs_per_task,
    make_groups,
    window,
)
from ren.distributed.remote import Batch, as_batch, share
from ren.distributed.shipping import (
    context,
    context_name,
    encode_keys,
    program_blob,
    program_of,
    result_standins,
)
from ren.distributed.wire import Codec, LiveSecrets, refuse_secret, wire_bytes
from ren.distributed.worker import run_item
from ren.errors import ParameterError, check_bool
from ren.jit import Jitted

_job_ids = itertools.count()
#: times the client scatters one input again after the worker holding it died
MAX_RESENDS = 3
#: seconds a job sends to the workers it last asked the scheduler for (`MapJob._feed`); a
#: send that fails, and every resend, asks again at once
ADDRESSES_TTL = 1.0

@dataclass
class MapJob:
    """A submitted batch: its futures (in input order; None for an input not sent yet) and
    what travelled.  `result()` waits.  (A packed group's future on the path of shared memory
    holds only `ren.distributed.posts.POSTED`: `result()` takes its results from the post.)

    **Flow control.**  At most `IN_FLIGHT_PER_WORKER` tasks per worker are out at a time
    (`GROUPED_IN_FLIGHT_PER_WORKER` when tasks carry several inputs; sent and not yet
    finished): whenever half of them have finished, the next chunk is encoded
    and sent, from Dask's callback thread, so the job keeps going while the caller does
    something else.  A worker holds a few inputs, not the whole batch, and the client encodes
    the inputs as they are needed rather than all at the start, when every worker's first task
    would compete with it for the cores (measured at N = 2^14, 2 workers on 2 cores: the first
    task of each worker took 380-660 ms instead of 290 ms)."""

    client: Any
    futures: list[Any]
    codec: Codec
    context_bytes: int  # parameters and keys, sent once per worker
    keys_bytes: int  # of which the keys' wire bytes (compact form)
    program_bytes: int  # the pickled plans or function, sent once per worker
    input_bytes: int  # the wire bytes of the inputs sent so far (all, once every one is out)
    plans: int  # captured plans shipped (0 for a plain function)
    workers: int  # workers the context and program were broadcast to
    #: bytes of the context and program the client sent for this job (to every worker): 0
    #: when an earlier job had sent the same ones
    shared_sent_bytes: int = 0
    keep: bool = False  # the results stay on the workers (`persist`)
    #: the results' stand-ins (`ren.distributed.remote`), per plan; None where unknown
    standins: list[Any] | None = None
    _which: list[int | None] = field(default_factory=list)  # the plan of each input
    _held: list[Any] = field(default_factory=list)  # the input Batch's futures (kept alive)
    _fetched: bool = False  # result() fetched (and released) the results
    timings: list[dict[str, Any]] = field(default_factory=list)
    result_bytes: int = 0
    wall_seconds: float = 0.0
    _submitted: float = 0.0
    _inputs: list[Any] = field(default_factory=list)  # the scattered inputs' futures
    _sender: Sender | None = None
    _attempts: list[int] = field(default_factory=list)  # resends, per input
    _cancelled: bool = False
    _next: int = 0  # the first input not sent yet
    _out: set[str] = field(default_factory=set)  # the keys of the tasks out now
    #: sent by the callbacks (and in `futures`) since result()'s walk last asked
    _new: list[tuple[int, Any]] = field(default_factory=list)
    _failed: BaseException | None = None  # what stopped the sending
    _cond: threading.Condition = field(default_factory=threading.Condition)
    #: the input indices of each task when tasks carry several inputs (`inputs_per_task`);
    #: `futures`, `_inputs` and `_attempts` are then per task
    _groups: list[list[int]] | None = None
    #: ends the job's shared-memory segments (`ren.distributed.shm.end_job`; once)
    _shm_end: Callable[[], Any] | None = None
    #: when the sender's addresses were last asked of the scheduler (`time.monotonic`), and
    #: whether a task that did not finish came back since (`_feed` asks again then)
    _asked: float = 0.0
    _stale: bool = False

    def _sent_inputs(self) -> int:
        """Inputs sent so far."""
        if self._groups is None:
            return self._next
        return sum(len(g) for g in self._groups[:self._next])

    def _count(self) -> int:
        """Inputs of the job."""
        return len(self.futures) if self._groups is None else sum(len(g) for g in self._groups)

    @property
    def resends(self) -> int:
        """Inputs scattered again after the worker holding them died."""
        return sum(self._attempts)

    def _window(self) -> int:
        """Tasks out at a time: per worker `IN_FLIGHT_PER_WORKER` of one input, or
        `GROUPED_IN_FLIGHT_PER_WORKER` of several (as many inputs, or more, in fewer tasks)."""
        workers = len(self._sender.addresses) if self._sender is not None else 1
        return window(workers, self._groups is not None)

    def _send(self, indices: range, attempt: int = 0) -> list[tuple[int, Any]]:
        """Send `indices` (holding the lock); (index, task future) of each."""
        assert self._sender is not None
        sent = []
        for i, (future, data, nbytes) in zip(indices, self._sender.send_many(indices, attempt)):
            self._inputs[i] = data
            if not attempt:
                self.input_bytes += nbytes
            self._out.add(future.key)
            future.add_done_callback(self._finished)
            sent.append((i, future))
        return sent

    def _feed(self) -> None:
        """Send the next chunk when no more than half the window is out (holding the lock)."""
        n, window, sender = len(self.futures), self._window(), self._sender
        if sender is None or self._cancelled or self._failed is not None or self._next >= n or \
                len(self._out) > window // 2:
            return
        chunk = range(self._next, min(n, self._next + window - len(self._out)))
        for attempt in range(MAX_RESENDS + 1):
            try:
                # to the workers alive now (one may have died since the last chunk), asked of
                # the scheduler again after ADDRESSES_TTL s, a task that did not finish or a
                # failed send (an ask of a remote scheduler costs ~0.3-0.4 ms of the client's
                # CPU, one of a scheduler in this process nothing: `worker_addresses`; and
                # Dask's scatter sends only to those of them still running anyway)
                if attempt or self._stale or time.monotonic() - self._asked > ADDRESSES_TTL:
                    sender.addresses = self._live_workers()
                for i, future in self._send(chunk):
                    self.futures[i] = future
                    self._new.append((i, future))
            except Exception as e:  # a worker that died during the scatter: try again
                if attempt == MAX_RESENDS or isinstance(e, DistributedError):
                    self._failed = e  # result() raises it in the caller's thread
                    break
            else:
                self._next = chunk.stop
                break
        self._cond.notify_all()

    def _live_workers(self) -> list[str]:
        if scheduler_lost(self.client):  # asking a lost scheduler waits out the connect timeout
            # (gather_as_completed turns this into SchedulerLostError, with what arrived)
            raise DistributedError("map: the Dask scheduler was lost")
        addresses = worker_addresses(self.client)
        self._asked, self._stale = time.monotonic(), False
        if not addresses:
            raise DistributedError("map: every worker of the cluster is gone; start workers "
                                   "and submit the job again")
        return addresses

    def _finished(self, future: Any) -> None:
        """A task finished (Dask's callback thread): maybe send the next chunk."""
        with self._cond:
            self._out.discard(future.key)
            finished = getattr(self._sender, "finished", None)  # (None: a test's stand-in)
            if finished is not None:
                finished(future.key)
            if getattr(future, "status", "finished") != "finished":
                self._stale = True  # cancelled (its input lost with a worker?) or failed
            self._feed()

    def _more(self, wait: float | None) -> list[tuple[int, Any]]:
        """The futures sent since the last call (`gather_as_completed`'s `more`)."""
        with self._cond:
            if wait != 0:
                # in slices: a scheduler lost meanwhile sends nothing and wakes no one
                deadline = None if wait is None else time.monotonic() + wait
                while True:
                    left = None if deadline is None else deadline - time.monotonic()
                    waited = self._cond.wait_for(
                        lambda: self._new or self._failed is not None or self._cancelled or
                        self._next >= len(self.futures) or scheduler_lost(self.client),
                        0.5 if left is None else max(0.0, min(0.5, left)))
                    if waited or (left is not None and left <= 0.5):
                        break
                if scheduler_lost(self.client):
                    raise DistributedError("map: the Dask scheduler was lost")
                if not waited:
                    raise DistributedError(f"map: no input was sent for {wait:.0f} s (the "
                                           "cluster is stuck); the rest is cancelled")
            if self._failed is not None:
                raise DistributedError(f"map: sending the inputs from {self._next} on failed "
                                       f"with {type(self._failed).__name__}: {self._failed}"
                                       ) from self._failed
            new, self._new = self._new, []
            return new

    def _resend(self, i: int) -> Any:
        """A new future for input `i`, whose task was cancelled by the loss of its input with
        its worker; None when the job was cancelled or the input was resent too often."""
        with self._cond:
            if self._cancelled or self._sender is None or self._attempts[i] >= MAX_RESENDS:
                return None
            self._attempts[i] += 1
            if self._inputs[i] is not None:  # (a packed group's input travels in its task)
                self._inputs[i].release()
            # the workers alive now: the input must not go to the one that died
            self._sender.addresses = self._live_workers()
            ((_, future),) = self._send(range(i, i + 1), self._attempts[i])
            return future

    def __len__(self) -> int:
        return self._count()

    def result(self, timeout: float | None = None) -> list[Any]:
        """The results in input order.  A failed task cancels the rest and raises TaskError
        with its input's index; `timeout` (seconds) raises DistributedError when it passes; a
        lost scheduler raises SchedulerLostError with the results that had arrived."""
        timeout = check_timeout(timeout, "map: timeout")
        groups = self._groups
        out: list[Any] = [None] * self._count()
        timings: list[dict[str, Any]] = [{}] * self._count()
        # packed groups post their results (`ren.distributed.posts`): none fetched through Dask
        posted = self._sender is not None and getattr(self._sender, "post_names", None)
        try:
            for i, value in gather_as_completed(
                    self.client, self.futures, "map: input", timeout, resubmit=self._resend,
                    more=self._more, fetch=not posted):
                if posted:
                    value = self._take(i)
                for j, one in zip([i] if groups is None else groups[i],
                                  [value] if groups is None else value, strict=True):
                    wire, timing = (one, {}) if self.keep else one
                    wire = shm.received(wire)  # (a posted result's records read now: `take`)
                    self.result_bytes += wire_bytes(wire)
                    out[j] = self.codec.decode(wire)
                    shm.release(wire)  # its shared-memory slots, if any, back to the worker
                    timings[j] = timing
                self.futures[i].release()  # the worker may drop it (and its input) now
                if self._inputs[i] is not None:  # (a Batch's input stays: the Batch holds it)
                    self._inputs[i].release()
        except SchedulerLostError as e:
            if groups is not None:
                e.completed = [j for i in e.completed for j in groups[i]]
            e.results = {i: out[i] for i in e.completed}
            self.cancel()
            raise
        except TaskError as e:
            self.cancel()
            if groups is None:
                raise
            # the worker names the input that raised (`worker.run_item`)
            at = getattr(e.original, "ren_input", None)
            name = f"input {at}" if at is not None else \
                f"inputs {groups[e.index][0]}-{groups[e.index][-1]}"
            raise TaskError(str(e).replace(f"map: input {e.index} ", f"map: {name} ", 1),
                            groups[e.index][0] if at is None else at, e.original
                            ) from e.original
        except BaseException:
            self.cancel()  # no further input is sent for a job that failed
            raise
        finally:
            self._end_segments()
        self.timings = timings
        self.wall_seconds = time.perf_counter() - self._submitted
        self._fetched = True
        return out

    def _take(self, i: int) -> Any:
        """Task `i`'s value: its post (`ren.distributed.posts`), else fetched through Dask (a
        group that was scattered, or whose value could not be posted)."""
        assert self._sender is not None
        name = self._sender.post_names.get(i)
        if name is not None:
            found, value = posts.take(name)
            if found:
                return value
        value = self.futures[i].result()
        if isinstance(value, str) and value == posts.POSTED:
            raise DistributedError(f"map: the posted results of task {i} are gone (their "
                                   "job's files were removed?)")
        return value

    def persist(self, timeout: float | None = None) -> Batch:
        """Wait until every task has finished, fetching no result: the results, on the
        workers, as a `Batch` (with the results' stand-ins where the job's plans give them).
        Failures, resends and timeouts as in `result`.  The Batch keeps the job's inputs alive
        too, so that Dask can compute again a result lost with its worker."""
        timeout = check_timeout(timeout, "map: timeout")
        if self._fetched:
            raise DistributedError("map: persist() after result(): the results were fetched and "
                                   "released on the cluster; submit with keep=True and call "
                                   "persist() instead of result()")
        try:
            for _ in gather_as_completed(self.client, self.futures, "map: input", timeout,
                                         resubmit=self._resend, more=self._more, fetch=False):
                pass
        except BaseException:
            self.cancel()
            raise
        finally:
            self._end_segments()
        self.wall_seconds = time.perf_counter() - self._submitted
        which = None
        if self.standins is not None:
            which = [w if w is not None else 0 for w in self._which]
        held = [f for f in self._inputs if f is not None] + list(self._held)
        return Batch(self.client, list(self.futures), list(self.codec.params.values()),
                     self.standins, which, held)

    def cancel(self) -> None:
        """Cancel every task of the job that has not finished, and send no further input."""
        with self._cond:
            self._cancelled = True
            self._cond.notify_all()
        cancel_quietly(self.client, self.futures)

    def _end_segments(self) -> None:
        """Unlink what is left of the job's shared-memory segments (an input a dead worker
        never read, a cancelled task's result; `result` and `persist` call it when they end,
        and the job's finalizer when it is collected: not `cancel`, after which `result` still
        fetches what had finished); nothing on the path of frames."""
        if self._shm_end is not None:
            self._shm_end()

    def describe(self) -> str:
        """What travelled, in a few lines (bytes; per worker where it is sent once each)."""
        n = self._count()
        sent = (f"sent now: {size(self.shared_sent_bytes)} in all" if self.shared_sent_bytes
                else "already on the workers (sent by an earlier job), sent now: 0 B")
        lines = [
            f"map job: {n} inputs, {self.plans} plan(s) "
            f"({'replayed' if self.plans else 'a plain function, eager'} on {self.workers} "
            f"worker(s), at most {self._window()} {'tasks' if self._groups else 'inputs'} out at a "
            "time"
            + (f", {len(self._groups[0])} inputs a task)" if self._groups else ")"),
            f"  once per worker: keys {size(self.keys_bytes)} (compact form), parameters and "
            f"keys {size(self.context_bytes)}, program {size(self.program_bytes)}; {sent}",
            f"  inputs sent {size(self.input_bytes)} "
            f"({size(self.input_bytes // max(1, self._sent_inputs()))} each)"
            + (" (the batch was on the cluster)" if self._held else ""),
        ]
        if self.timings:
            k = len(self.timings)
            run = sum(t["run"] for t in self.timings)
            wire = sum(t["decode"] + t["encode"] for t in self.timings)
            lines += [f"  results {size(self.result_bytes)}; on the workers per input: run "
                      f"{run / k * 1e3:.2f} ms, decode+encode {wire / k * 1e3:.2f} ms; wall "
                      f"{self.wall_seconds:.2f} s"]
        return "\n".join(lines)


def size(nbytes: int) -> str:
    """`nbytes` in B, kB or MB (decimal units)."""
    if nbytes < 1000:
        return f"{nbytes} B"
    return f"{nbytes / 1e3:.1f} kB" if nbytes < 10**6 else f"{nbytes / 1e6:.2f} MB"



def submit(fn: Callable[..., Any] | Jitted, batch: Iterable[Any] | Batch, *, keys: Any = None,
           client: Any = None, keep: bool = False) -> MapJob:
    """Start `fn` on every input of `batch` (module doc); `MapJob.result()` gathers them,
    `MapJob.persist()` leaves them on the cluster (``keep=True``)."""
    client = resolve_client(client)
    keep = check_bool(keep, "map: keep")
    if not callable(fn.fn if isinstance(fn, Jitted) else fn):
        raise ParameterError(f"map: fn must be a ren.jit function or a callable, got "
                             f"{type(fn).__name__} {fn!r:.60}")
    remote = as_batch(batch, client)
    # (a dict would map over its keys, a set in no particular order: refused, not guessed at)
    if remote is None and (isinstance(batch, str | bytes | Mapping | AbstractSet) or
                           not isinstance(batch, Iterable)):
        raise ParameterError(f"map: batch must be a list of inputs (ciphertexts, Polys or tuples "
                             f"of them) or a ren.distributed.Batch, got {type(batch).__name__}")
    secrets = LiveSecrets()  # looked up only where a check needs them (Polys, a new program)
    codec = Codec(secret_buffers=secrets.buffers)
    keys_wire = encode_keys(codec, keys) if keys is not None else None
    if remote is not None:
        for params in remote.params:
            codec.register(params)
        n = len(remote)
        items: list[Any] = []
        captured = None if remote.standins is None else [remote.standin(i) for i in range(n)]
    else:
        items = list(batch)  # type: ignore[arg-type]
        n = len(items)
        for i, item in enumerate(items):  # every input checked before the first one is sent
            codec.check(item, f"batch[{i}]")
        captured = items
    refuse_secret(fn, "map: fn")
    program, which = program_of(fn, captured, keys)
    which = which or [None] * n
    pk, program_pickle = program_blob(program, secrets)
    context_obj, context_bytes = context(codec, keys_wire, keys is not None)
    job_id = f"{os.getpid()}-{next(_job_ids)}"
    ck = context_name(list(codec.params), keys_wire, keys is not None)
    addresses = worker_addresses(client) if n else []
    if n and not addresses:
        raise DistributedError("map: the cluster has no workers; start some (or wait for them: "
                               "client.wait_for_workers(n)) before submitting")
    job = MapJob(client, [None] * n, codec, context_bytes, wire_bytes(keys_wire),
                 len(program_pickle), 0, len(program.plans or ()), len(addresses), keep=keep,
                 standins=result_standins(program, codec) if keep else None, _which=which,
                 _submitted=time.perf_counter(), _inputs=[None] * n, _attempts=[0] * n,
                 _asked=time.monotonic())
    if not n:
        return job
    prefix = shm.start_job(client, addresses)  # None: records travel in the messages
    job_shm = None if prefix is None else (prefix, shm.min_bytes())
    if prefix is not None:
        # the job's leftovers are unlinked when it ends, or when it is garbage collected
        job._shm_end = weakref.finalize(job, shm.end_job, prefix)
    # ck and pk name the content (the workers' cache of loaded keys and plans); the client
    # keeps them broadcast for its later jobs (remote.share)
    shared: dict[str, Any] = {}
    for name, blob, nbytes in ((ck, context_obj, context_bytes),
                               (pk, program_pickle, len(program_pickle))):
        shared[name], sent = share(client, name, blob, nbytes, addresses)
        job.shared_sent_bytes += sent
    if remote is not None:  # every task at once, each where its input lies
        job._held = list(remote.futures)
        tasks = client.map(run_item, which, remote.futures, list(range(n)),
                           key=[f"ren-map-{job_id}-{i}" for i in range(n)], pure=False,
                           context_key=ck, context_blob=shared[ck], program_key=pk,
                           program_blob=shared[pk], keep=keep, shm=job_shm)
        job.futures[:] = tasks
        job._next = n
        return job
    per_task = 1 if keep else inputs_per_task(n, len(addresses))
    if per_task > 1:  # at most MAX_TASK_BYTES of inputs a task (as large as the first one)
        per_task = bytes_cap(per_task, wire_bytes(codec.encode(items[0], "batch[0]")))
    if per_task > 1:  # packed groups (`ren.distributed.grouping`): futures etc. per group
        groups = make_groups(n, per_task, len(addresses))
        job._groups, n = groups, len(groups)
        job.futures, job._inputs, job._attempts = [None] * n, [None] * n, [0] * n
        job._sender = Sender(client, [[items[j] for j in g] for g in groups], codec, shared,
                             ck, pk, [[which[j] for j in g] for g in groups],  # type: ignore
                             job_id, addresses, keep, group=True, indices=groups)
    else:
        job._sender = Sender(client, items, codec, shared, ck, pk, which, job_id, addresses,
                             keep)
    if job_shm is not None:
        # a group's inputs are read in place on its worker, their slots freed by its task
        job._sender.shm = job_shm
        job._sender.segments = shm.Segments(*job_shm, pooled=True,
                                            borrow=job._groups is not None)
    with job._cond:
        # one input to each worker first, so that every worker starts at once; then the
        # rest of the window, which the workers' first tasks no longer wait for
        first = min(n, len(addresses))
        for chunk in (range(first), range(first, min(n, job._window()))):
            if chunk:
                for i, future in job._send(chunk):
                    job.futures[i] = future
        job._next = min(n, job._window())
    return job


def map(fn: Callable[..., Any] | Jitted, batch: Iterable[Any] | Batch, *, keys: Any = None,
        client: Any = None, timeout: float | None = None, keep: bool = False) -> Any:
    """`fn` applied to every input of `batch` on the cluster, results in input order (module
    doc).  ``map(square, cts, keys=rlk)`` calls ``square(ct, keys=rlk)`` for each ciphertext.
    `batch` may be a `Batch` (or a list of Dask futures) on the cluster; ``keep=True``
    returns the results as a `Batch` left on the workers, once every one is computed."""
    check_timeout(timeout, "map: timeout")  # before anything is sent
    job = submit(fn, batch, keys=keys, client=client, keep=keep)
    return job.persist(timeout=timeout) if job.keep else job.result(timeout=timeout)


__all__ = ["ADDRESSES_TTL", "GROUPED_IN_FLIGHT_PER_WORKER", "IN_FLIGHT_PER_WORKER",
           "MAX_INPUTS_PER_TASK", "MAX_RESENDS", "MapJob", "encode_keys", "map", "submit"]
