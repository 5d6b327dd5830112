"""A deep lazy graph against the same work realized step by step: CKKS rotate_sum over all slots.

``ev.rotate_sum(ct)`` is log2(N/2) rotations, each added to the running sum.  Left lazy and
realized once, the scheduler sees one graph of log2(N/2) key switches in which every step reads
the previous sum twice (directly and rotated).  Issue 16's acceptance: the lazy realization takes
at most 1.5x the time of realizing every step as it is made (before the fix, fusion inlined the
previous sum at every index map it was read at: 2^k copies after k steps; at N=2^14 on "cpu" a
990 MB C file).

Each mode runs in a fresh process (cold caches: scheduling, replay templates, and a temporary
compile cache for "cpu"), so both pay their scheduling and compiling; keys are made before the
clock starts.  Prints wall seconds per mode, their ratio, kernels run and the result's error.

Run:  python benchmarks/bench_rotate_sum.py [--sizes 12,14] [--devices python,cpu] [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's Ren first
sys.path.insert(0, str(ROOT / "tests"))  # ckks_helpers: cached, seeded key sets


def one(log_n: int, mode: str, device: str) -> dict:
    """Run one mode in this process (called in a child process by `main`)."""
    import contextlib

    import numpy as np

    from ren import realization

    cm = contextlib.nullcontext()
    if device == "cpu":
        from ren.backend import backend_override
        from ren.backend.cpu import open_device

        cm = backend_override("python", open_device)
    with cm:
        from ckks_helpers import context

        n = 1 << log_n
        c = context(N=n, depth=2, steps=tuple(1 << k for k in range(log_n - 1)))
        x = np.random.default_rng(1).uniform(-1, 1, n // 2)
        ct = c.encrypt(x)
        ct.c0.realize(ct.c1)
        kernels = 0
        t = time.perf_counter()
        if mode == "lazy":
            out = c.ev.rotate_sum(ct)
            out.c0.realize(out.c1)
            kernels = realization.last_timings.kernels
        else:
            out, step = ct, 1
            while step < n // 2:
                out = c.ev.add(out, c.ev.rotate(out, step))
                out.c0.realize(out.c1)
                kernels += realization.last_timings.kernels
                step *= 2
        seconds = time.perf_counter() - t
        error = float(np.max(np.abs(c.decrypt(out) - x.sum())))
    return {"seconds": seconds, "kernels": kernels, "error": error}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="12,14", help="log2 N, comma separated")
    ap.add_argument("--devices", default="python,cpu")
    ap.add_argument("--reps", type=int, default=3, help="fresh processes per mode (median)")
    ap.add_argument("--child", nargs=3, metavar=("LOGN", "MODE", "DEVICE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(one(int(args.child[0]), args.child[1], args.child[2])))
        return 0
    print(f"rotate_sum over all slots, lazy vs step by step (Ren at {ROOT}); wall seconds, "
          f"median of {args.reps} fresh processes")
    print(f"{'N':>6} {'device':>7} {'step s':>8} {'lazy s':>8} {'lazy/step':>9} "
          f"{'kernels step/lazy':>18} {'max error':>10}")
    worst = 0.0
    for log_n in map(int, args.sizes.split(",")):
        for device in args.devices.split(","):
            runs: dict[str, list[dict]] = {"step": [], "lazy": []}
            for _ in range(args.reps):
                for mode in runs:  # interleaved, so machine load hits both alike
                    with tempfile.TemporaryDirectory() as cache:
                        env = dict(os.environ, REN_CACHE_DIR=cache)
                        out = subprocess.run(
                            [sys.executable, __file__, "--child", str(log_n), mode, device],
                            env=env, check=True, capture_output=True, text=True).stdout
                    runs[mode].append(json.loads(out.strip().splitlines()[-1]))
            step, lazy = (statistics.median(r["seconds"] for r in runs[m]) for m in runs)
            ratio = lazy / step
            worst = max(worst, ratio)
            error = max(r["error"] for m in runs for r in runs[m])
            print(f"{'2^' + str(log_n):>6} {device:>7} {step:8.2f} {lazy:8.2f} {ratio:9.2f} "
                  f"{runs['step'][0]['kernels']:>9}/{runs['lazy'][0]['kernels']:<8} "
                  f"{error:10.1e}")
    print(f"worst lazy/step: {worst:.2f} (goal <= 1.5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
