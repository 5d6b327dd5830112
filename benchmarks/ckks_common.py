"""Shared pieces of benchmarks/bench_ckks.py: configuration, results, timing, security check.

Kept apart so the peers' runners (ckks_peers.py) and the Ren runner (bench_ckks.py) use one
definition; bench_ckks.py re-exports every name here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

OPS = ("keygen", "encrypt", "add", "mul", "rotate", "decrypt")
#: Ren only: the same ops replayed by a `ren.jit` plan captured on the first call
JIT_OPS = ("mul jit", "rotate jit")
#: CKKS programs, where the depth allows (>= PROGRAM_DEPTH): a degree-7 polynomial (power basis,
#: 3 levels) and a dense 64×64 matrix times a vector repeated in every 64-slot block (1 level)
PROGRAM_OPS = ("poly", "lintrans")
PROGRAM_DEPTH = 4
#: sigmoid's Taylor polynomial to degree 7, lowest degree first
POLY = (0.5, 0.25, 0.0, -1 / 48, 0.0, 1 / 480, 0.0, -17 / 80640)
MATRIX_N = 64
LIBS = ("ren", "seal", "desilo")
#: Ren's devices: "python" (NumPy kernels) and "cpu" (kernels compiled by the C compiler)
DEVICES = ("python", "cpu")
# Homomorphic Encryption Standard, 128-bit classical, ternary secret: max log2(QP) per N.
HE_STD_128 = {1 << 10: 27, 1 << 11: 54, 1 << 12: 109, 1 << 13: 218, 1 << 14: 438,
              1 << 15: 881, 1 << 16: 1772}


class Skipped(Exception):
    """A library cannot run here (not installed, or it refused the parameters): print and go on."""


@dataclasses.dataclass(frozen=True)
class Config:
    n: int = 1 << 14
    depth: int = 7
    scale_bits: int = 40
    first_bits: int = 60
    special_bits: int = 60
    reps: int = 7
    keygen_reps: int = 3
    seed: int = 0
    insecure: bool = False  # only the smoke tests use tiny, insecure rings
    profile: bool = False  # cProfile one Ren mul+relin+rescale
    device: str = "python"  # Ren's device (DEVICES)
    breakdown: bool = False  # Ren: time each kernel of the JIT plans by category
    threads: int | None = None  # Ren's "cpu" device: REN_CPU_THREADS for this run (None: as set)
    key_switching: str = "fast"  # Ren: "fast" (CKKSParams.fastest_key_switching) or "seal"


@dataclasses.dataclass
class Result:
    lib: str
    params: dict[str, Any]
    times: dict[str, list[float]] = dataclasses.field(default_factory=dict)  # wall seconds
    cpu: dict[str, list[float]] = dataclasses.field(default_factory=dict)  # process CPU seconds
    precision: dict[str, float] = dataclasses.field(default_factory=dict)  # bits
    matched: bool = True
    notes: list[str] = dataclasses.field(default_factory=list)
    # Ren only: op -> stage -> seconds of the last timed run (graph build, then the realization's
    # schedule / plan / lower / run) and its kernel count.
    stages: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    device: str | None = None  # Ren's device; None for the peers
    threads: int | None = None  # Ren "cpu" with --threads: the thread count of this run
    # Ren only: op -> JIT capture seconds, and op -> kernel category -> seconds (--breakdown)
    capture: dict[str, float] = dataclasses.field(default_factory=dict)
    breakdown: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)

    @property
    def name(self) -> str:
        """The column name: the library, and Ren's device when one is set."""
        if self.device is None:
            return self.lib
        return f"{self.lib}-{self.device}" + ("" if self.threads is None else f"x{self.threads}")

    def median_ms(self, op: str, cpu: bool = False) -> float:
        samples = (self.cpu if cpu else self.times).get(op)
        return statistics.median(samples) * 1e3 if samples else math.nan

    def record(self, op: str, timing: tuple[tuple[list[float], list[float]], Any]) -> Any:
        """Keep the samples of `timed(...)` under op; return the op's result."""
        (self.times[op], self.cpu[op]), out = timing
        return out


def merge_round(results: list[Result], new: Result) -> None:
    """Add `new` to `results`, or, where a run of the same library, device and thread count is
    there already (an earlier --rounds round), its timed samples to that one's."""
    for r in results:
        if (r.lib, r.device, r.threads) == (new.lib, new.device, new.threads):
            for op, samples in new.times.items():
                r.times.setdefault(op, []).extend(samples)
                r.cpu.setdefault(op, []).extend(new.cpu.get(op, []))
            return
    results.append(new)


def bits(err: float) -> float:
    """Precision in bits: −log2 of the max abs error (inf when exact)."""
    return math.inf if err == 0 else -math.log2(err)


def inputs(cfg: Config) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(cfg.seed)
    slots = cfg.n // 2
    return rng.uniform(-1, 1, slots), rng.uniform(-1, 1, slots)


def program_inputs(cfg: Config) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the matrix, its vector x, x repeated over the slots) of the lintrans program."""
    rng = np.random.default_rng(cfg.seed + 1)
    m, x = rng.uniform(-1, 1, (MATRIX_N, MATRIX_N)), rng.uniform(-1, 1, MATRIX_N)
    return m, x, np.tile(x, cfg.n // 2 // MATRIX_N)


def poly_value(x: np.ndarray) -> np.ndarray:
    return np.polynomial.polynomial.polyval(x, POLY)


#: untimed warm-up runs of an op before its timed runs (`timed`), where one is not enough:
#: a key generation at N = 2^16 holds ~170 MB, and the first three in a process (or after the
#: thread count changes, a new CKKSParams) still grow the heap, paying 250-350 ms of page faults
#: (system time) each, so with one warm-up only the first thread count of `--threads` paid them
#: in its timed runs (keygen 1 thread 368 ms CPU against 150 steady)
WARMUP = {"keygen": 3}


def timed(fn: Callable[[], Any], reps: int, warmup: int = 1
          ) -> tuple[tuple[list[float], list[float]], Any]:
    """Run fn `warmup` times to warm up, then `reps` times: ((wall s, process CPU s) per run,
    last result).

    CPU time counts every thread of the process, so it also shows a library that does not keep
    to one thread (CPU > wall), and it is less disturbed than wall time by other load.
    """
    for _ in range(max(1, warmup)):
        out = fn()  # (each run while the last one's result is held, as the timed runs below)
    wall, cpu = [], []
    for _ in range(reps):
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return (wall, cpu), out


def check_security(lib: str, n: int, log2_qp: float, insecure: bool) -> None:
    limit = HE_STD_128.get(n)
    if insecure:
        return
    if limit is None or log2_qp > limit:
        raise Skipped(f"{lib}: log2(QP) = {log2_qp:.1f} exceeds the 128-bit bound "
                      f"{limit} for N = {n}; lower --depth")


def device_context(name: str) -> contextlib.AbstractContextManager:
    """Ren's "python" device as it is, or replaced by the compiled "cpu" device (name "cpu"):
    the context a benchmark builds its keys and ciphertexts in."""
    if name == "python":
        return contextlib.nullcontext()
    from ren.backend import backend_override
    from ren.backend.cpu import open_device

    return backend_override("python", open_device)
