"""Errors of `ren.distributed`: each is a `RenError` (and the built-in exception it refines), so a
handler for Ren's errors catches them too."""

from __future__ import annotations

from typing import Any

from ren.errors import ParameterError, RenError, SerializationError


class DistributedError(RenError, RuntimeError):
    """The distributed layer could not do what was asked: no Dask client, a cluster that lost
    the data a task needs, results that do not fit the job."""


class DaskUnavailableError(DistributedError, ImportError):
    """Dask distributed is not installed; the message says which extra to install."""


class SecretKeyError(ParameterError):
    """A secret key (or an object holding one: a KeyGenerator, a Decryptor, a secret-key
    Encryptor) was about to be sent to a worker.  Workers get ciphertexts and public evaluation
    keys only; encrypt and decrypt on the client."""


class WireError(ParameterError):
    """A value that cannot cross the wire: only Ren's own objects (ciphertexts, plaintexts,
    public keys, Polys, parameters), plain scalars, NumPy arrays and lists, tuples and dicts of
    them travel to and from workers."""


class SchedulerLostError(DistributedError):
    """The client lost its Dask scheduler (killed, or its machine gone) while a job ran.  The
    job cannot go on: the scheduler held its tasks and every result not yet fetched.
    `completed` lists the indices (inputs of a map, points of a sweep) whose results had
    arrived, `results` maps each of them to its result (decoded), so only the rest needs to run
    again on a new cluster."""

    def __init__(self, message: str, completed: list[int] | None = None,
                 results: dict[int, Any] | None = None):
        super().__init__(message)
        self.completed = list(completed or [])
        self.results = dict(results or {})

    def __reduce__(self) -> tuple:
        return (type(self), (str(self), self.completed, self.results))


class SlotTakenError(SerializationError):
    """A packed group's input, read in place from the client's shared-memory pool slot, is no
    longer in its slot: the slot was freed by an earlier run of the same task (whose worker
    died before its result was fetched, and Dask ran the task again) and maybe written over
    since.  `MapJob` sends the input again, encoded anew, as for an input lost with its
    worker; never words read from another record."""


class TaskError(DistributedError):
    """A task raised on a worker (or was lost with too many workers).  `index` is the input's
    position in the batch (or the point's in a sweep); the worker's exception is `__cause__`
    (also `original`), with the worker's traceback."""

    def __init__(self, message: str, index: int, original: BaseException | None = None):
        super().__init__(message)
        self.index = index
        self.original = original

    def __reduce__(self) -> tuple:
        return (type(self), (str(self), self.index, self.original))


__all__ = ["DaskUnavailableError", "DistributedError", "SchedulerLostError", "SecretKeyError",
           "SlotTakenError", "TaskError", "WireError"]
