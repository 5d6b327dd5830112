"""Realizing a·b + c (N = 2^14, 8 limbs, COEFF inputs): where the time goes.

The program is ``a * b + c.ntt()`` — a·b of two coefficient-domain polynomials is computed in the
NTT domain (see README "Domains"), so c is brought there too: three NTT kernels and one fused
multiply-add kernel.  Prints the split schedule / plan / lower (make_exec_units) / run, and the
ratio of the run time to the raw `ren.ring` kernels doing the same work (three NTTs, one
Montgomery product, one modular add), i.e. the interpretive overhead of the backend.

Run:  python benchmarks/bench_realize.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import ren
from ren import realization as ren_realize
from ren.ring import get_tables, mod_add, mont_mul, ntt

N, LIMBS = 1 << 14, 8


def inputs(ring: ren.RingSpec) -> list[ren.Poly]:
    rng = np.random.default_rng(0)
    return [ren.Poly.from_residues(np.stack([rng.integers(0, q, N) for q in ring.moduli]), ring)
            for _ in range(3)]


def raw(ring: ren.RingSpec, arrays: list[np.ndarray]) -> np.ndarray:
    t = get_tables(ring)
    a, b, c = (ntt(x, ring) for x in arrays)
    return mod_add(mont_mul(a, b, t), c, t.q32)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    ring = ren.RingSpec.generate(N, LIMBS)
    a, b, c = inputs(ring)
    arrays = [p.node.src[0].arg.array() for p in (a, b, c)]  # their Montgomery storage
    stages = {"schedule": [], "plan": [], "lower": [], "run": [], "total": []}
    raw_times = []
    for i in range(args.repeat + 1):
        out = a * b + c.ntt()
        t0 = time.perf_counter()
        out.realize()
        total = time.perf_counter() - t0
        t = ren_realize.last_timings
        r0 = time.perf_counter()
        expected = raw(ring, arrays)
        r1 = time.perf_counter()
        if i == 0:  # warm-up, and a correctness check against the raw kernels
            stored = out.node.src[0].arg.array()
            assert np.array_equal(stored, expected), "realized value != raw kernels"
            continue
        for key, val in (("schedule", t.schedule), ("plan", t.plan), ("lower", t.lower),
                         ("run", t.run), ("total", total)):
            stages[key].append(val)
        raw_times.append(r1 - r0)
    med = {k: statistics.median(v) for k, v in stages.items()}
    raw_med = statistics.median(raw_times)
    print(f"a*b + c.ntt(), N=2^14, {LIMBS} limbs, {ren_realize.last_timings.kernels} exec units")
    for key in ("schedule", "plan", "lower", "run", "total"):
        print(f"  {key:9s} {med[key] * 1e3:8.3f} ms")
    print(f"  raw ren.ring kernels  {raw_med * 1e3:8.3f} ms")
    print(f"  run / raw = {med['run'] / raw_med:.3f}  (target <= 1.3)")


if __name__ == "__main__":
    main()
