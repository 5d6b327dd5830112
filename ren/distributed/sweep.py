"""`sweep`: one CKKS program over a grid of parameter sets, one Dask task per point, as a table.

    def program(ev, ct):                      # the evaluator style of ren.ckks.debug
        return ev.rescale(ev.multiply(ct, ct))

    table = sweep(program, {"N": [64, 128], "depth": [2, 3], "scale_bits": [25, 30],
                            "insecure": True}, reference=np.square, client=client)

**The grid.**  A dict maps each `CKKSParams` field (``N``, ``depth``, ``scale_bits``,
``first_bits``, ``special_primes``, ``dnum``, ``secret``, ``sigma``, ``insecure``, ``device``)
or ``preset`` to a *list* of choices (every combination is a point) or to one value (the same
for every point; a tuple such as ``("sparse", 16)`` is one value); a list of dicts gives the
points one by one.

**One point** (`run_point`; the same function runs on the worker and, for a check, locally):
the parameters are built and keys are made *on the worker* (the relinearization key, and
exactly the Galois keys the program uses, found by `ren.ckks.plan_rotation_keys`); the inputs
(`inputs(slots)`, default one vector uniform in [-1, 1]) are encrypted at the top level; the
program is captured by `ren.jit` and replayed `repeat` times; the output is decrypted and
compared with `reference(*inputs)`.  With ``meter=True`` (or no `reference`) the precision
meter (`ren.ckks.debug.precision`) runs the program beside a plaintext shadow as well.  Only
measurements come back: the keys, the secret key included, never leave the worker.

**Columns.**  The point's fields (``N``, ``depth``, ``scale_bits``, ``dnum`` as built, ``secret``,
``log2_QP``, ``security_bits``); ``seconds`` (the best replay of `repeat`), ``capture_seconds``,
``keygen_seconds``; ``bits`` (−log2 of the largest slot error of the output); ``levels_used``,
``output_level``, ``output_log2_scale``; ``relin_key_bytes``, ``galois_keys``,
``galois_key_bytes``, ``key_bytes`` (their sum, full form) and ``key_bytes_compact`` (uniform
halves as seeds, what `map` sends); with the meter, ``meter_min_bits``, ``meter_worst_op``,
``meter_worst_lost`` and ``meter`` (the whole per-operation report as text); ``error`` (None, or
the exception of a point run with ``errors="record"``); ``worker``.

``seed=k`` makes every point reproducible (point i draws from the insecure seeded stream
k + i: the keys, the encryptions, hence every measurement but the times, equal those of
`run_point` with the same seed); the default draws from the OS CSPRNG.
"""

from __future__ import annotations

import inspect
import itertools
import math
import os
import pickle
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

import ren
from ren.backend.malloc import tune_allocator
from ren.ckks import (
    Ciphertext,
    CKKSParams,
    Decryptor,
    Encoder,
    Encryptor,
    Evaluator,
    InsecureParametersWarning,
    KeyGenerator,
    plan_rotation_keys,
)
from ren.ckks.debug import precision
from ren.ckks.serialize import serialized_size
from ren.distributed.cluster import check_timeout, gather_as_completed, resolve_client
from ren.distributed.errors import SchedulerLostError
from ren.distributed.wire import guarded_dumps, live_secret_keys, refuse_secret_data
from ren.distributed.worker import worker_address
from ren.errors import (
    ParameterError,
    check_bool,
    check_callable,
    check_choice,
    check_instance,
    check_int,
    check_int_range,
    check_sequence,
)
from ren.jit import jit

#: the fields a grid point may set: CKKSParams' arguments, and "preset"
FIELDS = tuple(p for p in inspect.signature(CKKSParams.__init__).parameters if p != "self")
#: the fields a point without a "preset" must set (N and depth)
REQUIRED = tuple(n for n, p in inspect.signature(CKKSParams.__init__).parameters.items()
                 if n != "self" and p.default is inspect.Parameter.empty)

#: the most points one sweep runs (a grid's product past this is a typo, not a study)
MAX_POINTS = 100_000
#: the most replays `repeat` asks for per point
MAX_REPEAT = 10_000

Inputs = Callable[[int], Sequence[Any]]
Reference = Callable[..., Any]


def _check_fields(point: Mapping[str, Any], where: str, complete: bool = True) -> None:
    """ParameterError for a field CKKSParams does not take, or (`complete`) for a point that
    sets neither a preset nor every required field."""
    unknown = sorted(set(point) - set(FIELDS) - {"preset"}, key=repr)
    if unknown:
        raise ParameterError(f"{where} sets unknown field(s) {unknown}; the fields are "
                             f"{sorted(FIELDS)} and 'preset'")
    missing = [f for f in REQUIRED if f not in point]
    if complete and "preset" not in point and missing:
        raise ParameterError(f"{where} sets no {' and no '.join(missing)} (and no 'preset'); "
                             f"a point needs {', '.join(REQUIRED)} or a preset, e.g. "
                             "{'N': 64, 'depth': 2, 'insecure': True}")


def check_options(where: str, program: Any, inputs: Any, reference: Any, meter: Any,
                  repeat: Any, seed: Any) -> tuple[bool, int, int | None]:
    """The arguments `run_point` and `sweep` share, checked (ParameterError naming `where`):
    (meter, repeat, seed)."""
    check_callable(program, f"{where}: program", hint="a function fn(ev, *cts) returning a "
                   "Ciphertext")
    if inputs is not None:
        check_callable(inputs, f"{where}: inputs", hint="a function inputs(slots) returning a "
                       "list of value vectors, or None for one vector uniform in [-1, 1]")
    if reference is not None:
        check_callable(reference, f"{where}: reference", hint="a function of the input "
                       "vectors returning the expected output vector, or None")
    meter = check_bool(meter, f"{where}: meter")
    repeat = check_int_range(repeat, f"{where}: repeat", 1, MAX_REPEAT,
                             hint="the number of timed replays per point")
    if seed is not None:
        seed = check_int(seed, f"{where}: seed", hint="an int, or None for the OS CSPRNG")
    return meter, repeat, seed


def expand_grid(grid: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The points of `grid` (module doc), each a dict of CKKSParams fields (or "preset")."""
    if isinstance(grid, Mapping):
        _check_fields(grid, "sweep: the grid", complete=False)
        names = list(grid)
        choices = [v if isinstance(v, list) else [v] for v in grid.values()]
        if any(not c for c in choices):
            empty = [n for n, c in zip(names, choices) if not c]
            raise ParameterError(f"sweep: grid field(s) {empty} have no choices (an empty list)")
        count = math.prod(len(c) for c in choices)
        if count > MAX_POINTS:
            raise ParameterError(f"sweep: the grid has {count} points (the product of its "
                                 f"choices), more than {MAX_POINTS}; sweep fewer choices")
        points = [dict(zip(names, combo)) for combo in itertools.product(*choices)]
    elif isinstance(grid, Sequence) and not isinstance(grid, str | bytes) and \
            all(isinstance(p, Mapping) for p in grid):
        points = [dict(p) for p in grid]
    else:
        raise ParameterError(f"sweep: grid must be a dict of field -> list of choices, or a list "
                             f"of dicts (one per point), got {type(grid).__name__}")
    if not points:
        raise ParameterError("sweep: the grid has no points")
    if len(points) > MAX_POINTS:
        raise ParameterError(f"sweep: the grid has {len(points)} points, more than "
                             f"{MAX_POINTS}; sweep fewer")
    for i, p in enumerate(points):
        _check_fields(p, f"sweep: point {i}")
    return points


def make_params(point: Mapping[str, Any]) -> CKKSParams:
    """The CKKSParams of a grid point (no warning for points that ask for insecure=True)."""
    fields = dict(point)
    preset = fields.pop("preset", None)
    with warnings.catch_warnings():
        if fields.get("insecure"):
            warnings.simplefilter("ignore", InsecureParametersWarning)
        return CKKSParams.preset(preset, **fields) if preset is not None else CKKSParams(**fields)


def default_inputs(slots: int) -> list[np.ndarray]:
    """One input: `slots` real values uniform in [-1, 1] (a fixed NumPy seed)."""
    return [np.random.default_rng(0).uniform(-1.0, 1.0, slots)]


def _bits(got: np.ndarray, want: np.ndarray) -> float:
    err = float(np.max(np.abs(got[: len(want)] - want)))
    return math.inf if err == 0 else -math.log2(err)


def _expected(want: Any, slots: int) -> np.ndarray:
    """`reference`'s result as a vector of at most `slots` complex numbers."""
    try:
        vector = np.asarray(want, dtype=complex)
    except (TypeError, ValueError):
        vector = None
    if vector is None or vector.ndim != 1 or not 1 <= len(vector) <= slots:
        shape = "" if vector is None else f" of shape {vector.shape}"
        raise ParameterError(f"run_point: reference(*inputs) must return the expected output: "
                             f"a vector of 1 to {slots} numbers (one per slot), got "
                             f"{type(want).__name__}{shape}")
    return vector


def _secret_name(params: CKKSParams) -> str:
    return "ternary" if params.secret == "ternary" else f"sparse({params.hamming_weight})"


def run_point(program: Callable[..., Any], point: Mapping[str, Any], *,
              inputs: Inputs | None = None, reference: Reference | None = None,
              meter: bool = False, repeat: int = 3, seed: int | None = None) -> dict[str, Any]:
    """Measure `program` at one grid point, here (module doc: what is measured)."""
    meter, repeat, seed = check_options("run_point", program, inputs, reference, meter, repeat,
                                        seed)
    check_instance(point, Mapping, "run_point: point", hint="a dict of CKKSParams fields (or "
                   "'preset'), e.g. {'N': 64, 'depth': 2, 'insecure': True}")
    _check_fields(point, "run_point: point")
    if seed is None:
        return _measure(program, point, inputs, reference, meter, repeat)
    with ren.random.seeded(seed):
        return _measure(program, point, inputs, reference, meter, repeat)


def _measure(program: Callable[..., Any], point: Mapping[str, Any], inputs: Inputs | None,
             reference: Reference | None, meter: bool, repeat: int) -> dict[str, Any]:
    params = make_params(point)
    row: dict[str, Any] = {
        "N": params.N, "depth": params.depth, "scale_bits": params.scale_bits,
        "dnum": params.dnum, "secret": _secret_name(params), "log2_QP": round(params.log2_QP, 2),
        "security_bits": round(params.security_bits, 1)}
    given = check_sequence((inputs or default_inputs)(params.slots),
                           "run_point: inputs(slots)", 1,
                           hint="a list of value vectors, one per ciphertext the program takes")
    values = [np.asarray(v) for v in given]
    t0 = time.perf_counter()
    keygen = KeyGenerator(params)
    sk, pk, rlk = keygen.secret_key(), keygen.public_key(), keygen.relin_key()
    plan = plan_rotation_keys(program, params, *([None] * len(values)))
    galois = plan.generate(keygen) if plan.count else None
    row["keygen_seconds"] = time.perf_counter() - t0
    row["relin_key_bytes"] = serialized_size(rlk)
    row["galois_keys"] = plan.count
    row["galois_key_bytes"] = serialized_size(galois) if galois is not None else 0
    row["key_bytes"] = row["relin_key_bytes"] + row["galois_key_bytes"]
    row["key_bytes_compact"] = serialized_size(rlk, compact=True) + (
        serialized_size(galois, compact=True) if galois is not None else 0)
    ev = Evaluator(params, relin_key=rlk, rotation_keys=galois)
    encoder, encryptor = Encoder(params), Encryptor(params, pk)
    cts = [encryptor.encrypt(encoder.encode(v)) for v in values]
    ren.poly.realize_polys([p for ct in cts for p in ct.parts])
    jitted = jit(lambda *xs: program(ev, *xs))
    t0 = time.perf_counter()
    out = jitted(*cts)
    row["capture_seconds"] = time.perf_counter() - t0
    check_instance(out, Ciphertext, "run_point: the program's result",
                   hint="program(ev, *cts) must return one Ciphertext")
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = jitted(*cts)
        best = min(best, time.perf_counter() - t0)
    row["seconds"] = best if repeat else math.nan
    got = encoder.decode(Decryptor(params, sk).decrypt(out))
    row["levels_used"] = params.depth - out.level
    row["output_level"] = out.level
    row["output_log2_scale"] = out.log2_scale
    row["bits"] = math.nan
    if reference is not None:
        row["bits"] = _bits(got, _expected(reference(*values), params.slots))
    if meter or reference is None:
        report = precision(program, *values, evaluator=ev, secret_key=sk)
        worst = report.worst
        row["meter_min_bits"] = min(s.bits for s in report.steps)
        row["meter_worst_op"] = worst.op if worst is not None else None
        row["meter_worst_lost"] = worst.lost if worst is not None else math.nan
        row["meter"] = str(report)
        if reference is None:
            row["bits"] = report.steps[-1].bits
    return row


def sweep_task(job_blob: bytes, point: dict[str, Any], index: int, record_errors: bool
               ) -> dict[str, Any]:
    """One point on a worker: `run_point`'s row, with the worker (and the error, if recorded).
    `job_blob` is the pickled (program, options) of the sweep."""
    tune_allocator()
    program, options = pickle.loads(job_blob)
    seed = options["seed"]
    try:
        row = run_point(program, point, inputs=options["inputs"],
                        reference=options["reference"], meter=options["meter"],
                        repeat=options["repeat"], seed=None if seed is None else seed + index)
        row["error"] = None
    except Exception as e:
        if not record_errors:
            e.add_note(f"ren.distributed.sweep: point {index} {point} on worker "
                       f"{worker_address()}")
            raise
        row = {"error": f"{type(e).__name__}: {e}"}
    row["worker"] = worker_address()
    return row


def table(rows: list[dict[str, Any]], points: list[dict[str, Any]], frame: bool | None
          ) -> Any:
    """Rows (with their point's fields first) as a pandas DataFrame, or as the list of dicts
    when `frame` is False or pandas is missing (`frame=True` requires pandas)."""
    records = [{"point": i, **{f"grid_{k}": v for k, v in p.items()}, **r}
               for i, (p, r) in enumerate(zip(points, rows))]
    if frame is False:
        return records
    try:
        import pandas
    except ImportError:
        if frame:
            raise ParameterError("sweep(frame=True) needs pandas (pip install pandas); "
                                 "frame=None gives records without it") from None
        return records
    return pandas.DataFrame.from_records(records)


def sweep(program: Callable[..., Any], grid: Mapping[str, Any] | Sequence[Mapping[str, Any]],
          *, inputs: Inputs | None = None, reference: Reference | None = None,
          meter: bool = False, repeat: int = 3, seed: int | None = None, client: Any = None,
          errors: str = "raise", frame: bool | None = None, timeout: float | None = None
          ) -> Any:
    """Run `program` at every point of `grid`, one task per point (module doc); the table in
    point order.  ``errors="record"`` keeps going past a failing point (its row says why);
    ``"raise"`` cancels the sweep and raises TaskError with the point's index.  A lost
    scheduler raises SchedulerLostError with the rows that had arrived (`.results`)."""
    check_choice(errors, "sweep: errors", ("raise", "record"))
    meter, repeat, seed = check_options("sweep", program, inputs, reference, meter, repeat, seed)
    if frame is not None:
        check_bool(frame, "sweep: frame")
    timeout = check_timeout(timeout, "sweep: timeout")
    points = expand_grid(grid)
    client = resolve_client(client)
    options = {"inputs": inputs, "reference": reference, "meter": meter, "repeat": repeat,
               "seed": seed}
    job_blob = guarded_dumps((program, options), "sweep: the program, inputs and reference")
    # a program that closes over a secret of this process (a Poly of it) would carry it along
    refuse_secret_data(job_blob, live_secret_keys(), "sweep: the program, inputs and reference")
    job = f"{os.getpid()}-{time.monotonic_ns()}"
    futures = [client.submit(sweep_task, job_blob, p, i, errors == "record",
                             key=f"ren-sweep-{job}-{i}", pure=False)
               for i, p in enumerate(points)]
    rows: list[dict[str, Any] | None] = [None] * len(points)
    try:
        for i, row in gather_as_completed(client, futures, "sweep: point", timeout):
            rows[i] = row
    except SchedulerLostError as e:
        e.results = {i: rows[i] for i in e.completed}
        raise
    return table([r for r in rows if r is not None], points, frame)


__all__ = ["FIELDS", "MAX_POINTS", "MAX_REPEAT", "check_options", "default_inputs",
           "expand_grid", "make_params", "run_point", "sweep", "sweep_task", "table"]
