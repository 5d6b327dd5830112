"""`save` and `load`: ciphertexts written and read by the workers, in Ren's versioned format.

    paths = save(batch, "/shared/run-7", client=client)        # each worker writes its items
    again = load(paths, params, client=client, like=ct)        # a Batch, read by the workers

The directory must be one that every worker sees (a shared file system; on a LocalCluster any
local directory).  Each item is one file, ``<prefix>-<index>.ren``, holding `ren.ckks.dumps`
bytes (magic, format version, parameters' fingerprint, checksum): the same file
`ren.ckks.loads` reads on any machine.  A file is written to a temporary name and renamed, so
a reader sees a whole file or none.  Only the paths and the byte counts travel to the client,
never the data.  Each job's parameters travel once per worker, as a map's do
(`ren.distributed.remote.share`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ren.ckks.params import CKKSParams
from ren.distributed.batch import context_name
from ren.distributed.cluster import check_timeout, gather_as_completed, resolve_client
from ren.distributed.errors import DistributedError
from ren.distributed.remote import Batch, as_batch, share, spec_key, standin
from ren.distributed.wire import Codec, guarded_dumps
from ren.distributed.worker import load_item, save_item
from ren.errors import ParameterError, check_instance

#: the file name suffix of a saved item
SUFFIX = ".ren"


def _context(client: Any, params: list[Any]) -> tuple[str, Any]:
    blob = guarded_dumps({"params": params, "keys": None, "has_keys": False}, "the parameters")
    name = context_name([p.fingerprint for p in params], None, False)
    return name, share(client, name, blob)[0]


def _directory(directory: Any, what: str) -> str:
    if not isinstance(directory, str | os.PathLike) or not os.fspath(directory):
        raise ParameterError(f"{what}: directory must be a path (str or os.PathLike) that every "
                             f"worker sees, got {type(directory).__name__} {directory!r:.60}")
    return os.fspath(directory)


def save(batch: Batch | Sequence[Any], directory: str | os.PathLike, *, prefix: str = "item",
         client: Any = None, timeout: float | None = None) -> list[str]:
    """Each item of `batch` (a Batch, or Dask futures of wire trees) written by the worker that
    holds it to ``directory/<prefix>-<index>.ren`` (module doc); the paths, in order.  A
    failed write raises TaskError with the item's index."""
    client = resolve_client(client)
    timeout = check_timeout(timeout, "save: timeout")
    folder = _directory(directory, "save")
    check_instance(prefix, str, "save: prefix")
    if not prefix or os.sep in prefix or (os.altsep and os.altsep in prefix):
        raise ParameterError(f"save: prefix must be a non-empty file name part without a path "
                             f"separator, got {prefix!r}")
    remote = as_batch(batch, client)
    if remote is None:
        raise ParameterError(f"save: batch must be a ren.distributed.Batch (or a list of Dask "
                             f"futures) on the cluster, got {type(batch).__name__}; to write "
                             "local ciphertexts use ren.ckks.dumps")
    if not remote.params:
        raise ParameterError("save: the Batch carries no parameters (made from bare futures); "
                             "make it with its parameters: Batch(client, futures, [params])")
    n = len(remote)
    paths = [os.path.join(folder, f"{prefix}-{i:06d}{SUFFIX}") for i in range(n)]
    ck, context = _context(client, remote.params)
    tag = f"ren-save-{os.getpid()}-{id(paths)}"
    futures = client.map(save_item, remote.futures, paths, list(range(n)),
                         key=[f"{tag}-{i}" for i in range(n)], pure=False, context_key=ck,
                         context_blob=context)
    written = 0
    for _, nbytes in gather_as_completed(client, futures, "save: item", timeout):
        written += nbytes
    if n and written <= 0:
        raise DistributedError("save: the workers wrote nothing")
    return paths


def load(paths: Sequence[str | os.PathLike], params: CKKSParams, *, like: Any = None,
         client: Any = None, timeout: float | None = None) -> Batch:
    """The files `paths` (written by `save` or `ren.ckks.dumps`, under `params`) read by the
    workers: a Batch on the cluster, once every file is read (a missing or damaged file raises
    TaskError with its index).  ``like`` (an object of the items' spec, e.g. a ciphertext at
    their level and scale) gives the Batch its stand-in, so that a jitted function is
    captured on the client; without it a jitted map over the Batch captures on the workers."""
    client = resolve_client(client)
    timeout = check_timeout(timeout, "load: timeout")
    if not isinstance(params, CKKSParams):
        raise ParameterError(f"load: params must be the CKKSParams the files were written "
                             f"under, got {type(params).__name__}")
    if isinstance(paths, str | bytes | os.PathLike) or not isinstance(paths, Sequence):
        raise ParameterError(f"load: paths must be a list of file paths (save's result), got "
                             f"{type(paths).__name__}")
    files = [_directory(p, f"load: paths[{i}]") for i, p in enumerate(paths)]
    codec = Codec({params.fingerprint: params})
    standins = None
    if like is not None:
        if not spec_key(like)[1]:
            raise ParameterError(f"load: like= must be an object of the files' kind (e.g. a "
                                 f"ciphertext at their level and scale), got "
                                 f"{type(like).__name__}")
        standins = [standin(like, codec)]
        if list(codec.params) != [params.fingerprint]:
            raise ParameterError("load: like= must be made under the same parameters as the "
                                 "files")
    ck, context = _context(client, [params])
    tag = f"ren-load-{os.getpid()}-{id(files)}"
    futures = client.map(load_item, files, list(range(len(files))),
                         key=[f"{tag}-{i}" for i in range(len(files))], pure=False,
                         context_key=ck, context_blob=context)
    batch = Batch(client, futures, [params], standins,
                  None if standins is None else [0] * len(files))
    return batch.wait(timeout)


__all__ = ["SUFFIX", "load", "save"]
