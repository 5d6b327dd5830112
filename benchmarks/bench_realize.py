"""Realizing a·b + c (N = 2^14, 8 limbs, COEFF inputs): where the time goes; and the fixed
cost of a small eager realize (a·b on NTT inputs, N = 2^10, 4 limbs) against its raw kernel.

The program is ``a * b + c.ntt()`` — a·b of two coefficient-domain polynomials is computed in the
NTT domain (see README "Domains"), so c is brought there too: three NTT kernels and one fused
multiply-add kernel.  Prints the split schedule / plan / lower (make_exec_units) / run, and the
ratio of the run time to the raw `ren.ring` kernels doing the same work (three NTTs, one
Montgomery product, one modular add), i.e. the interpretive overhead of the backend.

The second part realizes ``a * b`` (two NTT-domain inputs: one Montgomery-product kernel) many
times, each time as a new lazy Poly, and prints the median eager realize time (graph build,
structure lookup, replay of the captured schedule, becomes_map) over the median time of the raw
NumPy kernel (Montgomery product stored into an output array); goal <= 4.

Run:  python benchmarks/bench_realize.py [--repeat 15] [--small-repeat 2000]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import ren
from ren import realization as ren_realize
from ren.replay import templates
from ren.ring import get_tables, mod_add, mont_mul, mont_mul_raw, ntt

N, LIMBS = 1 << 14, 8


def inputs(ring: ren.RingSpec) -> list[ren.Poly]:
    rng = np.random.default_rng(0)
    return [ren.Poly.from_residues(np.stack([rng.integers(0, q, N) for q in ring.moduli]), ring)
            for _ in range(3)]


def raw(ring: ren.RingSpec, arrays: list[np.ndarray]) -> np.ndarray:
    t = get_tables(ring)
    a, b, c = (ntt(x, ring) for x in arrays)
    return mod_add(mont_mul(a, b, t), c, t.q32)


def small_realize(repeat: int) -> None:
    """Eager a*b at N=2^10, 4 limbs (NTT inputs) vs the raw Montgomery-product kernel."""
    ring = ren.RingSpec.generate(1 << 10, 4)
    rng = np.random.default_rng(1)
    a, b = (ren.Poly.from_residues(np.stack([rng.integers(0, q, ring.N) for q in ring.moduli]),
                                   ring, "NTT") for _ in range(2))
    t = get_tables(ring)
    A, B = (p.node.src[0].arg.array() for p in (a, b))
    out = np.empty_like(A)

    def eager() -> None:
        (a * b).realize()

    def raw_kernel() -> None:
        out[...] = mont_mul_raw(A, B, t.q32, t.q64, t.qneg)

    def median_us(fn) -> float:
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return statistics.median(times) * 1e6

    for fn in (eager, raw_kernel):  # warm-up: the first realize schedules and compiles
        for _ in range(20):
            fn()
    rounds = [(median_us(eager), median_us(raw_kernel)) for _ in range(5)]  # interleaved
    e = statistics.median(r[0] for r in rounds)
    k = statistics.median(r[1] for r in rounds)
    print(f"\neager a*b, N=2^10, 4 limbs, NTT inputs: {e:8.1f} us per realize")
    print(f"  raw kernel (Montgomery product + store) {k:8.1f} us")
    print(f"  eager / raw = {e / k:.2f}  (goal <= 4)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--small-repeat", type=int, default=2000)
    args = ap.parse_args()
    ring = ren.RingSpec.generate(N, LIMBS)
    a, b, c = inputs(ring)
    arrays = [p.node.src[0].arg.array() for p in (a, b, c)]  # their Montgomery storage
    stages = {"schedule": [], "plan": [], "lower": [], "run": [], "total": []}
    raw_times = []
    for i in range(args.repeat + 1):
        out = a * b + c.ntt()
        templates.clear()  # the full pipeline every time (a same-shape graph would replay)
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
    small_realize(args.small_repeat)


if __name__ == "__main__":
    main()
