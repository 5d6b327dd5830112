"""Hoisted against unhoisted rotations, and the linear transform built on them (issue 18 §2).

Two measurements per device, at N = 2^14 (8192 slots) by default:

* **rotations**: ct rotated by 1 … k, realized together: ``ev.rotate_hoisted(ct, steps)`` (one
  key-switching decomposition shared) against ``[ev.rotate(ct, s) for s in steps]`` (one each);
* **transform**: ``ev.linear_transform(ct, LinearTransform(params, M))`` for a dense n×n matrix
  (baby-step giant-step), baby steps hoisted or not, against NumPy's M @ x for precision.

Each figure is the median of --reps realizations after one warm-up (which compiles the kernels
and caches the schedule), so both sides are steady-state replays; keys are made before the
clock starts.  Precision is −log2 of the largest slot error.

Run:  python benchmarks/bench_lintrans.py [--log-n 14] [--devices cpu,python] [--reps 5]
      [--k 15] [--n 128]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's Ren first


def _device(name: str) -> contextlib.AbstractContextManager:
    if name == "python":
        return contextlib.nullcontext()
    from ren.backend import backend_override
    from ren.backend.cpu import open_device

    return backend_override("python", open_device)


def _median_seconds(make, reps: int) -> tuple[float, object]:
    out = make()  # warm-up: compile, schedule, cache the template
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        out = make()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples), out


def run(log_n: int, device: str, reps: int, k: int, n: int) -> None:
    import ren
    from ren.ckks import (
        CKKSParams,
        Decryptor,
        Encoder,
        Encryptor,
        Evaluator,
        InsecureParametersWarning,
        KeyGenerator,
        LinearTransform,
    )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        params = CKKSParams(N=1 << log_n, depth=3, scale_bits=40, first_bits=55, insecure=True)
    slots = params.slots
    rng = np.random.default_rng(1)
    m, x = rng.uniform(-1, 1, (n, n)), rng.uniform(-1, 1, n)
    lt = LinearTransform(params, m)
    steps = list(range(1, k + 1))
    with ren.random.seeded(2):
        kg = KeyGenerator(params)
        ev = Evaluator(params, kg.relin_key(),
                       kg.rotation_keys(sorted(set(steps) | set(lt.rotation_steps))))
        enc = Encoder(params)
        ct = Encryptor(params, kg.public_key()).encrypt(enc.encode(np.tile(x, slots // n)))
    ct.c0.realize(ct.c1)
    dec = Decryptor(params, kg.secret_key())

    def realize(cts):
        ren.realize([p for c in cts for p in c.parts])
        return cts

    hoisted, _ = _median_seconds(lambda: realize(list(ev.rotate_hoisted(ct, steps).values())),
                                 reps)
    single, _ = _median_seconds(lambda: realize([ev.rotate(ct, s) for s in steps]), reps)
    print(f"{'2^' + str(log_n):>6} {device:>7}  {k} rotations: hoisted {hoisted * 1e3:8.1f} ms, "
          f"one by one {single * 1e3:8.1f} ms, ratio {hoisted / single:.2f}")
    want = np.tile(m @ x, slots // n)
    for label, flag in (("hoisted", True), ("unhoisted", False)):
        sec, out = _median_seconds(lambda f=flag: realize([ev.linear_transform(ct, lt, f)])[0],
                                   reps)
        err = float(np.max(np.abs(enc.decode(dec.decrypt(out)) - want)))
        print(f"{'':>6} {'':>7}  {n}x{n} transform ({label}, n1={lt.baby_steps}, "
              f"{len(lt.rotation_steps)} keys): {sec * 1e3:8.1f} ms, "
              f"{-math.log2(err):.1f} bits")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log-n", type=int, default=14)
    ap.add_argument("--devices", default="cpu")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--k", type=int, default=15, help="rotations 1..k in the first figure")
    ap.add_argument("--n", type=int, default=128, help="matrix size of the transform")
    args = ap.parse_args(argv)
    print(f"hoisted rotations and linear transforms (Ren at {ROOT}); one thread, median of "
          f"{args.reps} warm realizations")
    for device in args.devices.split(","):
        with _device(device):
            run(args.log_n, device, args.reps, args.k, args.n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
