"""Polynomial evaluation before and after baby-step giant-step (issue 41 §1): per degree and
basis, the ciphertext products (relinearizations in the traced program), the levels used, the
precision and, with --reps, the time of one realized evaluation.

"before" is ``evaluate_polynomial(..., baby_bound=2)``: degree-1 leaves and no baby steps, the
evaluation Ren had before (the same tree and the same products, measured identical in bits);
"after" is the default (the baby-step bound with the fewest products).  Precision is −log2 of
the largest slot error against NumPy's evaluation of the same polynomial on the exact input,
the minimum and the mean over --seeds encryptions.  Power basis: random coefficients divided by
(i + 1)²; Chebyshev basis: the interpolant of sin(3x) + tanh(4x − 1)/2 on [-1, 1].

Run:  python benchmarks/bench_polyeval.py [--log-n 10] [--degrees 3,7,15,31,63,127]
      [--bases power,chebyshev] [--seeds 4] [--reps 0] [--device python]
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


def coefficients(basis: str, d: int) -> np.ndarray:
    from ren.ckks.circuits.polyeval import chebyshev_coefficients

    if basis == "power":
        return np.random.default_rng(d).uniform(-1, 1, d + 1) / np.arange(1, d + 2) ** 2
    return chebyshev_coefficients(lambda t: np.sin(3 * t) + np.tanh(4 * t - 1) / 2, d)


def run(log_n: int, degrees: list[int], bases: list[str], seeds: int, reps: int,
        device: str) -> list[dict]:
    import ren
    from ren.ckks import (
        CKKSParams,
        Decryptor,
        Encoder,
        Encryptor,
        Evaluator,
        InsecureParametersWarning,
        KeyGenerator,
    )
    from ren.ckks.circuits.polyeval import depth_of, evaluate_polynomial
    from ren.ckks.operations import record_operations

    depth = max(depth_of(d) for d in degrees)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        params = CKKSParams(N=1 << log_n, depth=depth, scale_bits=40, first_bits=55,
                            insecure=True)
    with ren.random.seeded(1):
        kg = KeyGenerator(params)
        ev = Evaluator(params, kg.relin_key())
        enc = Encoder(params)
        encryptor, dec = Encryptor(params, kg.public_key()), Decryptor(params, kg.secret_key())
    x = np.random.default_rng(2).uniform(-1, 1, params.slots)
    cts = []
    for s in range(seeds):
        with ren.random.seeded(100 + s):
            cts.append(encryptor.encrypt(enc.encode(x)))
    rows = []
    for basis in bases:
        numpy_eval = (np.polynomial.polynomial.polyval if basis == "power"
                      else np.polynomial.chebyshev.chebval)
        for d in degrees:
            coeffs = list(coefficients(basis, d))
            want = numpy_eval(x, coeffs)
            row: dict = {"basis": basis, "degree": d}
            for side, bound in (("before", 2), ("after", None)):
                def make(ct, bound=bound, coeffs=coeffs, basis=basis):
                    return evaluate_polynomial(ev, ct, coeffs, basis, baby_bound=bound)

                with record_operations() as log:
                    out = make(cts[0])
                row[f"products_{side}"] = sum(o.name == "relinearize" for o in log.operations)
                row[f"rescales_{side}"] = sum(o.name == "rescale" for o in log.operations)
                row[f"levels_{side}"] = cts[0].level - out.level
                bits = [-math.log2(float(np.max(np.abs(enc.decode(dec.decrypt(make(ct)))
                                                        - want)))) for ct in cts]
                row[f"bits_{side}"] = (min(bits), statistics.mean(bits))
                if reps:
                    with device_context(device):
                        make(cts[0]).c0.numpy()  # warm-up: compile and cache the schedule
                        samples = []
                        for _ in range(reps):
                            t = time.perf_counter()
                            make(cts[0]).c0.numpy()
                            samples.append(time.perf_counter() - t)
                    row[f"ms_{side}"] = 1000 * statistics.median(samples)
            rows.append(row)
            print(_line(row), flush=True)
    return rows


HEADER = ("| basis | degree | products before / after | levels before / after | rescales "
          "before / after | bits min, mean: before / after |")


def _line(r: dict) -> str:
    (b0, m0), (b1, m1) = r["bits_before"], r["bits_after"]
    line = (f"| {r['basis']} | {r['degree']} | {r['products_before']} / {r['products_after']} | "
            f"{r['levels_before']} / {r['levels_after']} | {r['rescales_before']} / "
            f"{r['rescales_after']} | {b0:.1f}, {m0:.1f} / {b1:.1f}, {m1:.1f} |")
    if "ms_before" in r:
        line += f" {r['ms_before']:.1f} / {r['ms_after']:.1f} ms |"
    return line


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log-n", type=int, default=10)
    ap.add_argument("--degrees", default="3,7,15,31,63,127")
    ap.add_argument("--bases", default="power,chebyshev")
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--reps", type=int, default=0, help="timed realizations (0: no timing)")
    ap.add_argument("--device", default="python", choices=["python", "cpu"])
    args = ap.parse_args(argv)
    degrees = [int(d) for d in args.degrees.split(",")]
    bases = args.bases.split(",")
    if not degrees or min(degrees) < 1 or max(degrees) > 1023:
        ap.error("--degrees: comma-separated degrees in [1, 1023]")
    if any(b not in ("power", "chebyshev") for b in bases):
        ap.error("--bases: power and/or chebyshev")
    if args.seeds < 1 or args.reps < 0 or not 4 <= args.log_n <= 16:
        ap.error("--seeds >= 1, --reps >= 0, --log-n in [4, 16]")
    print(f"N = 2^{args.log_n}, {args.seeds} encryption(s), device {args.device}")
    print(HEADER + (" time before / after |" if args.reps else ""))
    return run(args.log_n, degrees, bases, args.seeds, args.reps, args.device)


if __name__ == "__main__":
    main()
