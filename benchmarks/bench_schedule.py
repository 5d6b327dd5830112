"""Scheduling cost per node for graphs of about 10^2, 10^3 and 10^4 nodes.

Each graph is a deterministic random mix of Poly operations (adds, products, constant scalings,
rotations, conjugations, domain changes, views, rescales) over a handful of realized inputs, with
several outputs; its size is the number of nodes of the input graph.  The check at the end
asserts that the median cost per node at 10^4 is at most twice the cost at 10^2 (no quadratic
pass).  The runs of the three sizes are interleaved, each size reports the median of `--repeat`
runs, and the cost is the process's CPU time (wall time is shown too): on a shared machine, time
spent waiting for a core is not scheduling cost.

What grows (measured): the work per node is flat from 10^3 to 10^4 (Python calls per kernel
1611 and 1610; instructions per node 2.07M and 2.13M) and ~1.25x higher than at 10^2, whose
graph has more leaves and fewer kernels per node (0.76 against 0.87); the rest is memory
traffic (simulated L1 misses per node 12k, 16.5k, 18k) as the working set outgrows the caches.

Run:  python benchmarks/bench_schedule.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from dataclasses import dataclass, field

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
    # the nodes reachable from outputs + pool (the set only grows: a Poly leaves the pool only
    # to become an output), counted incrementally: len(toposort(SINK(outputs + pool))) - 1
    seen: set[int] = set()
    keep = []  # hold every counted node so an id() is never reused

    def count(p: ren.Poly) -> None:
        stack = [p.node]
        while stack:
            n = stack.pop()
            if id(n) not in seen:
                seen.add(id(n))
                keep.append(n)
                stack.extend(n.src)

    for p in pool:
        count(p)
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
        count(c)
        if len(pool) > 12:
            outputs.append(pool.pop(rng.randrange(len(pool))))
        nodes += 3  # rough: refreshed below
        if len(outputs) % 8 == 0:
            nodes = len(seen) + 1  # + the SINK
    return tuple(outputs + pool)


SIZES = (100, 1000, 10000)


@dataclass
class Runs:
    nodes: int
    kernels: int
    cpu: list[float] = field(default_factory=list)  # process CPU time of each run
    wall: list[float] = field(default_factory=list)


def measure(repeat: int) -> dict[int, Runs]:
    """`repeat` scheduling runs of each size, interleaved (10^2, 10^3, 10^4, 10^2, …) so a burst
    of load on a shared machine hits every size alike."""
    sinks = {target: as_sink(*build_graph(target)) for target in SIZES}
    results: dict[int, Runs] = {}
    for target, sink in sinks.items():
        final = run_passes(sink).sink  # warm-up; also counts the kernels
        results[target] = Runs(len(toposort(sink)), len(linearize(final)))
        del final
    for _ in range(repeat):
        for target, sink in sinks.items():
            c0, w0 = time.process_time(), time.perf_counter()
            final = run_passes(sink).sink
            c1, w1 = time.process_time(), time.perf_counter()
            results[target].cpu.append(c1 - c0)
            results[target].wall.append(w1 - w0)
            del final  # free the scheduled graph outside the timed region
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    results = measure(args.repeat)
    print(f"{'nodes':>7} {'kernels':>8} {'cpu median':>11} {'cpu/node':>10} {'(min..max)':>13} "
          f"{'wall/node':>10}")
    per_node = {}
    for target, r in results.items():
        cpu = statistics.median(r.cpu)
        per_node[target] = cpu / r.nodes
        spread = f"({min(r.cpu) / r.nodes * 1e6:.0f}..{max(r.cpu) / r.nodes * 1e6:.0f})"
        wall = statistics.median(r.wall) / r.nodes
        print(f"{r.nodes:>7} {r.kernels:>8} {cpu * 1e3:>8.1f} ms {per_node[target] * 1e6:>7.1f} us "
              f"{spread:>13} {wall * 1e6:>7.1f} us")
    ratio = per_node[10000] / per_node[100]
    print(f"median CPU time per node at 10^4 / at 10^2 = {ratio:.2f} (must be <= 2; "
          f"{args.repeat} interleaved runs per size)")
    if ratio > 2:
        raise SystemExit("scheduling cost grows faster than linear")


if __name__ == "__main__":
    main()
