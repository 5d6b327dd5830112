"""Data that stays on the cluster: `Batch`, and what a client sends once per worker.

    cts = scatter(cts, client=client)                       # encrypted on the laptop, sent once
    mid = map(lintrans, cts, keys=gk, keep=True)            # a Batch: results on the workers
    out = map(poly, mid, keys=rlk, keep=True)               # chained: no byte back to the client
    values = out.gather()                                   # later: fetched and decoded

**A Batch** is a list of Dask futures, each holding one item's wire form (a `ren.distributed.wire`
tree) in a worker's memory, with the parameters that decode them.  `map` takes a Batch (or a
plain list of Dask futures) as its batch: each task takes its input where it lies and no input
passes through the client; ``keep=True`` makes `map` return its results as a Batch instead of
fetching them.  A Batch's futures keep its items alive on the cluster (Dask's reference
counting) until the Batch is released or garbage collected; a Batch made by a map also keeps
that map's inputs, so that Dask can compute again a result lost with its worker.

**Stand-ins.**  A `ren.jit` function is captured on the client, which needs one object of each
input spec (ring, domain, level, scale, ...), not the data.  A Batch carries, per distinct spec,
a *stand-in*: an object of that spec whose polynomials are zero, made from the job's plan (the
results of a map), from the items themselves (`scatter`) or from ``like=`` (`load`); it has been
through the wire once (encoded and decoded), so it has the spec a worker's decoded input has.
A Batch without stand-ins (futures made elsewhere) makes a jitted function capture on each
worker instead, once per input spec and worker process.

**Sent once.**  A job's parameters and public keys (the *context*) and its program are
broadcast to the workers under a name derived from their content (`share`); the client keeps
that future for its later jobs, so a second map with the same keys sends no key byte (a worker
that joins later gets them from another worker, not from the client).  Each worker decodes a
blob once (`ren.distributed.worker.cached`, `stats`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ren.distributed.cluster import (
    cancel_quietly,
    check_timeout,
    dask_distributed,
    gather_as_completed,
    keeps_broadcasts,
    resolve_client,
    worker_addresses,
)
from ren.distributed.errors import DistributedError
from ren.distributed.wire import Codec, LiveSecrets, wire_bytes
from ren.errors import ParameterError, check_int_range
from ren.ir import is_const
from ren.poly import Poly
from ren.rlwe.params import RLWEParams
from ren.tree import flatten, unflatten

#: blobs (contexts, programs) a client keeps broadcast on its workers for later jobs
SHARED_ENTRIES = 8

_ids = itertools.count()
_shared: weakref.WeakKeyDictionary[Any, OrderedDict[str, Any]] = weakref.WeakKeyDictionary()
_shared_lock = threading.Lock()


def share(client: Any, name: str, blob: Any, nbytes: int | None = None,
          addresses: list[str] | None = None) -> tuple[Any, int]:
    """The future of `blob` (bytes, or an object of `nbytes` bytes: a job's context, whose
    key records Dask sends out of band) broadcast to every worker of `client`, and the bytes
    sent now: 0 when an earlier job of this client broadcast the same `name` (a content hash)
    and its data is still on the cluster, its bytes per worker otherwise.  The client keeps
    the last `SHARED_ENTRIES` blobs; Dask keeps an evicted one while a job still holds it.
    A kept blob that some worker lost (`_on_every_worker`) is copied to it again, from another
    worker, where the client keeps broadcasts (`ren.distributed.cluster.keeps_broadcasts`).
    `addresses`: the workers, where the caller asked the scheduler for them just now."""
    with _shared_lock:
        entries = _shared.setdefault(client, OrderedDict())
        future = entries.get(name)
        if future is not None and future.status == "finished":
            entries.move_to_end(name)
        else:
            future = None
    if addresses is None:
        addresses = worker_addresses(client)
    if future is not None:
        if keeps_broadcasts(client):
            _on_every_worker(client, future, addresses)
        return future, 0
    workers = len(addresses)
    # a name of its own per broadcast: scattering a key that a released earlier copy still
    # held raced the scheduler forgetting it (a KeyError in Dask's replicate)
    key = f"{name}-{os.getpid()}-{next(_ids)}"
    future = client.scatter({key: blob}, broadcast=True, hash=False)[key]
    with _shared_lock:
        entries = _shared.setdefault(client, OrderedDict())
        entries[name] = future
        while len(entries) > SHARED_ENTRIES:
            entries.popitem(last=False)
    return future, (len(blob) if nbytes is None else nbytes) * max(1, workers)


def _on_every_worker(client: Any, future: Any, addresses: list[str]) -> None:
    """Copy a broadcast blob back to the workers that no longer hold it, worker to worker,
    before a job's tasks need it: Dask's active memory manager (its ReduceReplicas policy,
    on by default) drops all copies but one of a key no task waits for, i.e. between two jobs
    (`ren.distributed.cluster.local_client` turns that policy off for its own clusters).
    Fetched on demand instead, a blob came from a worker busy computing (2.4 s for 344 MB of
    keys at N = 2^13, with the other worker idle).  One scheduler round trip when nothing is
    missing."""
    holders = set(client.who_has([future]).get(future.key, ()))
    if holders and not set(addresses) <= holders:
        # a worker died meanwhile: its tasks fetch it on demand
        with contextlib.suppress(OSError, ValueError):
            client.replicate([future])


def forget_shared(client: Any) -> None:
    """Release every blob `client` keeps broadcast (the next job sends its keys again)."""
    with _shared_lock:
        _shared.pop(client, None)


# -- stand-ins ------------------------------------------------------------------------------
def _zero_like(p: Poly) -> Poly:
    if is_const(p.node):
        return p
    ring = p.ring
    return Poly.from_residues(np.zeros((ring.limbs, ring.N), np.int64), ring, p.domain,
                              p.device)


def spec_key(obj: Any) -> tuple:
    """What a jit cache key sees of `obj`: its structure, its Polys' specs, its scalars."""
    polys: list[Poly] = []
    scalars: list[Any] = []
    structure = flatten(obj, polys, scalars)
    return structure, tuple((p.spec, is_const(p.node)) for p in polys), \
        tuple(repr(s) for s in scalars)


def standin(obj: Any, codec: Codec) -> Any:
    """An object of `obj`'s spec with zero polynomials, as a worker decodes it (module doc)."""
    polys: list[Poly] = []
    scalars: list[Any] = []
    structure = flatten(obj, polys, scalars)
    zero = unflatten(structure, iter([_zero_like(p) for p in polys]), iter(scalars))
    return codec.decode(codec.encode(zero, "a stand-in"))


@dataclass
class Batch:
    """Items kept on the cluster (module doc): `futures` (one Dask future per item, holding its
    wire form), `params` (the parameter sets that decode them), `standins` and `which` (the
    stand-in of item i is ``standins[which[i]]``; None: unknown) and `client`.  `gather()`
    fetches and decodes them; `release()` lets the cluster forget them."""

    client: Any
    futures: list[Any]
    params: list[RLWEParams] = field(default_factory=list)
    standins: list[Any] | None = None
    which: list[int] | None = None
    #: futures this batch keeps alive besides its own (the inputs of the map that made it)
    held: list[Any] = field(default_factory=list, repr=False)
    received_bytes: int = 0  # wire bytes fetched by gather() so far

    def __post_init__(self) -> None:
        distributed = dask_distributed()
        if not isinstance(self.client, distributed.Client):
            raise ParameterError(f"Batch: client must be a distributed.Client, got "
                                 f"{type(self.client).__name__}")
        for what in ("futures", "params", "held"):
            if not isinstance(getattr(self, what), list):
                raise ParameterError(f"Batch: {what} must be a list, got "
                                     f"{type(getattr(self, what)).__name__}")
        if not all(isinstance(p, RLWEParams) for p in self.params):
            raise ParameterError("Batch: params must be a list of parameter sets (CKKSParams) "
                                 "that decode the items")
        if not all(isinstance(f, distributed.Future) for f in self.held):
            raise ParameterError("Batch: held must be a list of Dask futures")
        self.received_bytes = check_int_range(self.received_bytes, "Batch: received_bytes", 0)
        if not all(isinstance(f, distributed.Future) for f in self.futures):
            bad = next(f for f in self.futures if not isinstance(f, distributed.Future))
            raise ParameterError(f"Batch: futures must be Dask futures, got "
                                 f"{type(bad).__name__}")
        if len({f.key for f in self.futures}) != len(self.futures):
            raise ParameterError("Batch: a future appears twice; each item is one future")
        if (self.standins is None) != (self.which is None) or (
                self.which is not None and (
                    not isinstance(self.standins, list) or not isinstance(self.which, list) or
                    len(self.which) != len(self.futures) or any(
                        type(w) is not int or not 0 <= w < len(self.standins or ())
                        for w in self.which))):
            raise ParameterError("Batch: standins and which go together, one index into "
                                 "standins per future")

    def __len__(self) -> int:
        return len(self.futures)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.futures)

    def __getitem__(self, index: slice) -> Batch:
        """The items `index` (a slice) as a Batch on the same cluster."""
        if not isinstance(index, slice):
            raise ParameterError("Batch[...] takes a slice (batch[2:5]); batch.futures[i] is "
                                 "one item's Dask future")
        which = None if self.which is None else self.which[index]
        return Batch(self.client, self.futures[index], list(self.params), self.standins,
                     which, list(self.held))

    def standin(self, i: int) -> Any:
        """Item `i`'s stand-in (module doc), or None where it is not known."""
        i = check_int_range(i, "Batch.standin: i", 0, max(0, len(self.futures) - 1))
        if self.standins is None or self.which is None:
            return None
        return self.standins[self.which[i]]

    def codec(self) -> Codec:
        return Codec({p.fingerprint: p for p in self.params})

    def gather(self, timeout: float | None = None) -> list[Any]:
        """Every item fetched and decoded on the client, in order (the futures stay: the items
        stay on the cluster until `release`).  A result lost with its worker is computed
        again first; one that cannot be raises DistributedError."""
        timeout = check_timeout(timeout, "Batch.gather: timeout")
        codec = self.codec()
        out: list[Any] = [None] * len(self.futures)
        futures = list(self.futures)  # gather_as_completed cancels what it leaves unfinished
        for i, wire in gather_as_completed(self.client, futures, "batch item", timeout):
            self.received_bytes += wire_bytes(wire)
            out[i] = codec.decode(wire)
        return out

    def wait(self, timeout: float | None = None) -> Batch:
        """Wait until every item is computed, fetching nothing (TaskError for one that
        failed); returns the batch."""
        timeout = check_timeout(timeout, "Batch.wait: timeout")
        for _ in gather_as_completed(self.client, list(self.futures), "batch item", timeout,
                                     fetch=False):
            pass
        return self

    def release(self) -> None:
        """Let the cluster forget the items (and the inputs this batch kept); the batch is
        empty afterwards."""
        cancel_quietly(self.client, self.futures)
        for f in (*self.futures, *self.held):
            f.release()
        self.futures, self.held = [], []
        if self.which is not None:
            self.which = []

    def describe(self) -> str:
        """One line: items, where they are, stand-ins."""
        where: dict[str, int] = {}
        if self.futures:
            for ws in self.client.who_has(self.futures).values():
                for w in ws:
                    where[w] = where.get(w, 0) + 1
        specs = "unknown specs" if self.standins is None else f"{len(self.standins)} spec(s)"
        return (f"Batch of {len(self)} items on the cluster ({specs}; per worker: "
                f"{dict(sorted(where.items()))})")


def as_batch(batch: Any, client: Any) -> Batch | None:
    """`batch` as a Batch when it is one or a non-empty list of Dask futures, else None."""
    if isinstance(batch, Batch):
        if batch.client is not client and batch.futures and batch.client.scheduler.address != \
                client.scheduler.address:
            raise ParameterError("map: the Batch lives on another cluster than client=; pass "
                                 "its own client (batch.client)")
        return batch
    distributed = dask_distributed()
    if isinstance(batch, list | tuple) and batch and all(
            isinstance(f, distributed.Future) for f in batch):
        return Batch(client, list(batch))
    if isinstance(batch, list | tuple) and any(isinstance(f, distributed.Future) for f in batch):
        raise ParameterError("map: a batch mixes Dask futures and local values; put the local "
                             "ones on the cluster first (ren.distributed.scatter) or fetch the "
                             "futures")
    return None


def scatter(items: Iterable[Any], *, client: Any = None) -> Batch:
    """`items` (ciphertexts, Polys, tuples of them) sent to the workers, round robin, in Ren's
    wire format: a Batch to `map` over (possibly many times) without sending them again.  A
    secret key is refused (`SecretKeyError`), as by `map`."""
    client = resolve_client(client)
    if isinstance(items, str | bytes | dict) or not isinstance(items, Iterable):
        raise ParameterError(f"scatter: items must be a list of ciphertexts (or Polys, or "
                             f"tuples of them), got {type(items).__name__}")
    items = list(items)
    codec = Codec(secret_buffers=LiveSecrets().buffers)  # looked up if a Poly is sent
    for i, item in enumerate(items):
        codec.check(item, f"scatter: items[{i}]")
    standins: list[Any] = []
    which: list[int] = []
    index: dict[tuple, int] = {}
    for item in items:
        key = spec_key(item)
        if key not in index:
            index[key] = len(standins)
            standins.append(standin(item, codec))
        which.append(index[key])
    addresses = worker_addresses(client)
    if items and not addresses:
        raise DistributedError("scatter: the cluster has no workers; start some first")
    tag = f"ren-item-{os.getpid()}-{next(_ids)}"
    wires = {f"{tag}-{i}": codec.encode(item, f"scatter: items[{i}]")
             for i, item in enumerate(items)}
    data = client.scatter(wires, workers=addresses, hash=False) if wires else {}
    return Batch(client, [data[k] for k in wires], list(codec.params.values()), standins, which)


__all__ = ["SHARED_ENTRIES", "Batch", "as_batch", "forget_shared", "scatter", "share",
           "spec_key", "standin"]
