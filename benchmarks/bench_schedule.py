"""Scheduling cost per node for graphs of about 10^2, 10^3 and 10^4 nodes.

Each graph is a deterministic random mix of Poly operations (adds, products, constant scalings,
rotations, conjugations, domain changes, views, rescales) over a handful of realized inputs, with
several outputs; its size is the number of nodes of the input graph.  The check at the end
asserts that the cost per node at 10^4 is at most twice the cost at 10^2 (no quadratic pass).

Run:  python benchmarks/bench_schedule.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import numpy as np

import ren
from ren.node import toposort
from ren.schedule import as_sink, linearize, run_passes

RING = ren.RingSpec.generate(64, 4)


def build_graph(target_nodes: int, seed: int = 7) -> tuple[ren.Poly, ...]:
    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    pool = []
    for _ in range(6):
        res = np.stack([nprng.integers(0, q, RING.N) for q in RING.moduli])
        pool.append(ren.Poly.from_residues(res, RING, ren.Domain.NTT))
    outputs: list[ren.Poly] = []
    nodes = 0
    while nodes < target_nodes:
        a, b = rng.choice(pool), rng.choice(pool)
        r = rng.random()
        if r < 0.3:
            c = a + b
        elif r < 0.5:
            c = a * b
        elif r < 0.6:
            c = a * rng.randrange(2, 1000) - b
        elif r < 0.7:
            c = a.rotate(rng.randrange(-8, 8))
        elif r < 0.75:
            c = a.conjugate() + b
        elif r < 0.85:
            c = (a.intt() + 1).ntt()
        elif r < 0.92:
            c = a.to_ring(RING.sub(0, 3)).to_ring(RING) + b
        else:
            c = a.intt().rescale(RING.moduli[-1]).to_ring(RING).ntt() + b
        pool.append(c)
        if len(pool) > 12:
            outputs.append(pool.pop(rng.randrange(len(pool))))
        nodes += 3  # rough: refreshed below
        if len(outputs) % 8 == 0:
            nodes = len(toposort(as_sink(*(outputs + pool))))
    return tuple(outputs + pool)


def measure(target: int, repeat: int) -> tuple[int, float, int]:
    outputs = build_graph(target)
    sink = as_sink(*outputs)
    n_nodes = len(toposort(sink))
    times = []
    kernels = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        final = run_passes(sink).sink
        times.append(time.perf_counter() - t0)
        kernels = len(linearize(final))
        del final  # free the scheduled graph outside the timed region
    return n_nodes, statistics.median(times), kernels


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(f"{'nodes':>7} {'kernels':>8} {'schedule':>10} {'per node':>10}")
    per_node = {}
    for target in (100, 1000, 10000):
        n, t, k = measure(target, args.repeat)
        per_node[target] = t / n
        print(f"{n:>7} {k:>8} {t * 1e3:>7.1f} ms {t / n * 1e6:>7.1f} us")
    ratio = per_node[10000] / per_node[100]
    print(f"cost per node at 10^4 / at 10^2 = {ratio:.2f} (must be <= 2)")
    if ratio > 2:
        raise SystemExit("scheduling cost grows faster than linear")


if __name__ == "__main__":
    main()
