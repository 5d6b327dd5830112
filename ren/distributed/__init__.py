"""`ren.distributed`: Ren programs over a Dask cluster (LocalCluster on a laptop, `dask scheduler`
/ `dask worker` or any Dask deployment on real machines).

    from ren.distributed import local_client, map, sweep
    with local_client(workers=2) as client:
        outs = map(square, cts, keys=rlk, client=client)   # a ren.jit function over a batch
        table = sweep(program, {"N": [64, 128], "depth": [2, 3]}, reference=np.square,
                      client=client)                        # a parameter study, one task a point

* `map` / `submit` (`ren.distributed.batch`): the captured JIT plan and the public evaluation
  keys go to every worker once; each input travels as a checksummed record of frames (the
  limbs' own storage, `ren.distributed.wire`) inside its own task; results come back in
  order.  A worker killed mid-batch has its tasks run again elsewhere; a task that raises
  comes back as `TaskError` with the input's index.
* `Batch`, `scatter` (`ren.distributed.remote`), `save` / `load` (`ren.distributed.storage`):
  data that stays on the cluster.  ``map(fn, batch, keep=True)`` returns a Batch of futures
  left on the workers, which the next map takes as its batch (no byte through the client);
  `save` / `load` have the workers write and read ciphertexts in Ren's versioned format in a
  directory every worker sees; `Batch.gather()` fetches results when they are wanted.  Keys and
  programs are broadcast once per client and worker and reused by later jobs.
* `sweep` (`ren.distributed.sweep`): a CKKS program over a grid of parameter sets; time,
  precision, levels and key bytes per point as a table (pandas DataFrame, or records).
* `ren.distributed.wire`: what crosses the wire, and the guard that refuses to send a secret key.

Secret keys stay on the client: `map` refuses any input, key, function or plan that carries one
(`SecretKeyError`), by type and by data (a function closing over a secret's Poly included).
Every call uses the client it is given (`client=`, else Dask's default one); a scheduler lost
mid-job raises `SchedulerLostError` with the results that had arrived.  A sweep makes each
point's keys on the worker that runs it and returns only measurements.  Importing this package
does not import Dask; calling it without the `distributed` extra raises `DaskUnavailableError`
saying what to install.
"""

from ren.distributed.batch import MapJob, map, submit
from ren.distributed.cluster import local_client, resolve_client
from ren.distributed.errors import (
    DaskUnavailableError,
    DistributedError,
    SchedulerLostError,
    SecretKeyError,
    TaskError,
    WireError,
)
from ren.distributed.remote import Batch, scatter
from ren.distributed.storage import load, save
from ren.distributed.sweep import run_point, sweep

__all__ = [
    "Batch",
    "DaskUnavailableError",
    "DistributedError",
    "MapJob",
    "SchedulerLostError",
    "SecretKeyError",
    "TaskError",
    "WireError",
    "load",
    "local_client",
    "map",
    "resolve_client",
    "run_point",
    "save",
    "scatter",
    "submit",
    "sweep",
]
