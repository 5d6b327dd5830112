"""CKKS bootstrapping at the small preset: time (first call, eager again, JIT capture and replay),
precision, levels regained, key bytes, kernels, peak memory.

The small preset (`ren.ckks.bootstrap.bootstrap_params_small`: N = 256, INSECURE) is the only one
so far; the N = 2^16 preset and the side-by-side run with DESILO's CPU bootstrapping wait for
the factored CoeffToSlot/SlotToCoeff (issue 19).

Run:  python benchmarks/bench_bootstrap.py [--device cpu] [--reps 3]
"""

from __future__ import annotations

import argparse
import math
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's Ren first


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", choices=("python", "cpu"))
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)

    import ren
    from ren import realization
    from ren.ckks import Decryptor, Encoder, Encryptor, Evaluator, KeyGenerator
    from ren.ckks.bootstrap import Bootstrapper, bootstrap_params_small

    params = bootstrap_params_small(args.device)
    t0 = time.perf_counter()
    bt = Bootstrapper(params)
    prepare = time.perf_counter() - t0
    with ren.random.seeded(1):
        kg = KeyGenerator(params)
        keys = bt.keys(kg)
        ev = Evaluator(params, kg.relin_key(), keys)
        encryptor = Encryptor(params, kg.public_key())
    enc, dec = Encoder(params), Decryptor(params, kg.secret_key())
    rng = np.random.default_rng(2)

    def fresh():
        return encryptor.encrypt(enc.encode(rng.uniform(-1, 1, params.slots), level=0))

    def realize(ct):
        ren.realize(list(ct.parts))
        return ct

    first_ct = fresh()
    t0 = time.perf_counter()
    out = realize(bt.bootstrap(ev, first_ct))
    first = time.perf_counter() - t0
    kernels = realization.last_timings.kernels
    eager = []
    for _ in range(args.reps):
        ct = fresh()
        t0 = time.perf_counter()
        realize(bt.bootstrap(ev, ct))
        eager.append(time.perf_counter() - t0)
    fn = ren.jit(lambda c: bt.bootstrap(ev, c))
    t0 = time.perf_counter()
    fn(fresh())
    capture = time.perf_counter() - t0
    replays, bits = [], []
    for _ in range(args.reps):
        x = rng.uniform(-1, 1, params.slots)
        ct = encryptor.encrypt(enc.encode(x, level=0))
        realize(ct)
        t0 = time.perf_counter()
        res = fn(ct)
        replays.append(time.perf_counter() - t0)
        bits.append(-math.log2(float(np.max(np.abs(enc.decode(dec.decrypt(res)) - x)))))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"bootstrapping at the small preset (Ren at {ROOT}), device {args.device}, one thread")
    print(f"  {params!r}")
    print(f"  levels: {bt.levels_used} used of {params.depth}, {out.level} regained "
          f"(CoeffToSlot 1, EvalMod {bt.evalmod_levels}, SlotToCoeff 1)")
    print(f"  keys: {len(keys)} Galois keys + relinearization, "
          f"{keys.nbytes + ev.relin_key.nbytes:,} bytes")
    print(f"  kernels per bootstrapping: {kernels}")
    print(f"  prepare {prepare:.2f} s; first call {first:.1f} s (scheduling and compiling); "
          f"eager again {statistics.median(eager):.1f} s; JIT capture {capture:.1f} s, replay "
          f"{statistics.median(replays):.2f} s (median of {args.reps})")
    print(f"  precision: {min(bits):.1f}..{max(bits):.1f} bits (inputs uniform in [-1, 1])")
    print(f"  peak RSS {peak:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
