"""Hoisted against unhoisted rotations, and the linear transform built on them (issue 18 §2,
double hoisting: issue 41 §2).

Three measurements per device, at N = 2^14 (8192 slots) by default:

* **rotations**: ct rotated by 1 … k, realized together: ``ev.rotate_hoisted(ct, steps)`` (one
  key-switching decomposition shared) against ``[ev.rotate(ct, s) for s in steps]`` (one each);
* **transform**: ``ev.linear_transform(ct, LinearTransform(params, M), hoisted)`` for a dense n×n
  matrix (baby-step giant-step), with ``hoisted`` "double" (the default: the mod-down by P once
  per giant step), "single" (the decomposition shared, every rotation divided by P) and "none",
  against NumPy's M @ x for precision; with the mod-downs (RESCALEs by P) and decompositions
  counted in the lazy graph before it runs;
* **pair**: two n×n transforms of one ciphertext (M and Mᵀ), ``apply_transforms`` (one
  decomposition for both transforms' baby steps) against two ``linear_transform`` calls.

Each figure is the median of --reps realizations after one warm-up (which compiles the kernels
and caches the schedule), so both sides are steady-state replays; keys are made before the
clock starts.  Precision is −log2 of the largest slot error.

Run:  python benchmarks/bench_lintrans.py [--log-n 14] [--devices cpu,python] [--reps 5]
      [--k 15] [--n 128] [--no-pair]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]  # this checkout's Ren first

from ckks_common import device_context  # noqa: E402


def _median_seconds(make, reps: int) -> tuple[float, object]:
    out = make()  # warm-up: compile, schedule, cache the template
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        out = make()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples), out


def graph_counts(cts) -> tuple[int, int]:
    """(mod-downs, mod-ups) in the lazy graph of ciphertexts (`ren.rlwe.cost.key_switch_counts`:
    double hoisting's lift of P·c0 not counted as a mod-up)."""
    from ren.rlwe.cost import key_switch_counts

    downs, ups, _ = key_switch_counts([p.node for ct in cts for p in ct.parts],
                                      tuple(cts[0].params.special_moduli))
    return downs, ups


def run(log_n: int, device: str, reps: int, k: int, n: int, pair: bool) -> None:
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
    from ren.ckks.circuits.lintrans import apply_transforms

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        params = CKKSParams(N=1 << log_n, depth=3, scale_bits=40, first_bits=55, insecure=True)
    slots = params.slots
    rng = np.random.default_rng(1)
    m, x = rng.uniform(-1, 1, (n, n)), rng.uniform(-1, 1, n)
    lt = LinearTransform(params, m)
    lt_t = LinearTransform(params, m.T, baby_steps=lt.baby_steps) if pair else None
    steps = list(range(1, k + 1))
    with ren.random.seeded(2):
        kg = KeyGenerator(params)
        ev = Evaluator(params, kg.relin_key(),
                       kg.rotation_keys(sorted(set(steps) | set(lt.rotation_steps))))
        enc = Encoder(params)
        ct = Encryptor(params, kg.public_key()).encrypt(enc.encode(np.tile(x, slots // n)))
    ct.c0.realize(ct.c1)
    dec = Decryptor(params, kg.secret_key())
    digits = len(params.digits_at(lt.level))

    def realize(cts):
        ren.realize([p for c in cts for p in c.parts])
        return cts

    hoisted, _ = _median_seconds(lambda: realize(list(ev.rotate_hoisted(ct, steps).values())),
                                 reps)
    single, _ = _median_seconds(lambda: realize([ev.rotate(ct, s) for s in steps]), reps)
    print(f"{'2^' + str(log_n):>6} {device:>7}  {k} rotations: hoisted {hoisted * 1e3:8.1f} ms, "
          f"one by one {single * 1e3:8.1f} ms, ratio {hoisted / single:.2f}")
    want = np.tile(m @ x, slots // n)
    for mode in ("double", "single", "none"):
        downs, ups = graph_counts([ev.linear_transform(ct, lt, mode)])  # built, not run
        sec, out = _median_seconds(lambda h=mode: realize([ev.linear_transform(ct, lt, h)])[0],
                                   reps)
        err = float(np.max(np.abs(enc.decode(dec.decrypt(out)) - want)))
        print(f"{'':>6} {'':>7}  {n}x{n} transform ({mode}, n1={lt.baby_steps}, "
              f"{len(lt.rotation_steps)} keys): {sec * 1e3:8.1f} ms, {-math.log2(err):.1f} bits; "
              f"{downs} mod-downs, {ups // digits} decompositions")
    if lt_t is not None:
        both, _ = _median_seconds(lambda: realize(apply_transforms(ev, ct, [lt, lt_t])), reps)
        apart, _ = _median_seconds(
            lambda: realize([ev.linear_transform(ct, lt), ev.linear_transform(ct, lt_t)]), reps)
        print(f"{'':>6} {'':>7}  M and M^T of one ciphertext: apply_transforms "
              f"{both * 1e3:8.1f} ms, one by one {apart * 1e3:8.1f} ms, ratio {both / apart:.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log-n", type=int, default=14)
    ap.add_argument("--devices", default="cpu")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--k", type=int, default=15, help="rotations 1..k in the first figure")
    ap.add_argument("--n", type=int, default=128, help="matrix size of the transform")
    ap.add_argument("--no-pair", action="store_true", help="skip the two-transform figure")
    args = ap.parse_args(argv)
    print(f"hoisted rotations and linear transforms (Ren at {ROOT}); one thread, median of "
          f"{args.reps} warm realizations")
    for device in args.devices.split(","):
        with device_context(device):
            run(args.log_n, device, args.reps, args.k, args.n, not args.no_pair)
    return 0


if __name__ == "__main__":
    sys.exit(main())
