"""The "cpu" device's samplers on one thread (and more): uniform residues and small coefficients.

Uniform: ``ren.backend.cpu_sampling.sample_uniform`` at N = 2^16 × 60 limbs of 30-bit moduli (a
key row of a bootstrapping key), on every vector path this machine runs (REN_CPU_ISA's
avx512 / avx2 / scalar libraries), printing GB/s of residues written (4 bytes each) and of
SHAKE-128 stream read (4 bytes a word, ~1.1 words a residue at 30 bits), the median of --reps
runs, one stream a Keccak permutation (ways=1: the scalar permutation, what every path ran
before the multi-way one) and the path's lanes (8 with AVX-512, 4 with AVX2).  Also hashlib's
`ren.sampling.sample` (the definition, one limb at a time) for one limb, as a reference.

Small coefficients: ternary, sparse ternary (h = 192) and Gaussian (sigma 3.2) at N = 2^16, by
`ren.sampling.sample_signed` (hashlib + NumPy) and ``cpu_sampling.sample_signed`` (hashlib's
words, mapped in C on the threads).

    python benchmarks/bench_sampling.py [--logn 16] [--limbs 60] [--reps 5] [--threads 1,2]

Timings are wall medians, with the process CPU time of the same runs beside them (a loaded
machine shows wall above CPU).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from ren.backend import cpu, cpu_sampling
from ren.random import RandomSpec
from ren.ring import RingSpec
from ren.sampling import sample, sample_signed


def _time(fn: Callable[[], object], reps: int) -> tuple[float, float]:
    """median wall and process-CPU seconds of `fn` over `reps` runs (after one warm-up)"""
    fn()
    walls, cpus = [], []
    for _ in range(reps):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--logn", type=int, default=16)
    ap.add_argument("--limbs", type=int, default=60)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", default="1")
    args = ap.parse_args()
    N = 1 << args.logn
    ring = RingSpec.generate(N, args.limbs, 30)
    spec = RandomSpec("uniform", (), b"bench-sampling", "cpu")
    out_bytes = 4 * N * args.limbs
    keep = np.mean([((1 << 32) // q) * q / 2**32 for q in ring.moduli])
    print(f"uniform: N = 2^{args.logn} x {args.limbs} limbs of 30 bits "
          f"({out_bytes / 2**20:.0f} MiB of residues, {out_bytes / keep / 2**20:.0f} MiB of "
          "stream)")
    threads = [int(t) for t in args.threads.split(",")]
    for isa in cpu.available_isas():
        lib = cpu.ring_library(isa)
        for ways in sorted({1, cpu_sampling.keccak_ways(lib)}):
            for t in threads:
                lib.ren_set_threads(t)
                wall, cput = _time(lambda lib=lib, w=ways: cpu_sampling.sample_uniform(
                    lib, spec, ring, ways=w), args.reps)
                print(f"  {isa:7s} {ways} stream(s) a permutation, {t} thread(s): "
                      f"{wall * 1e3:7.1f} ms (cpu {cput * 1e3:7.1f} ms)  "
                      f"{out_bytes / wall / 1e9:5.2f} GB/s residues, "
                      f"{out_bytes / keep / wall / 1e9:5.2f} GB/s stream")
        lib.ren_set_threads(cpu.threads())
    one = RingSpec(N, ring.moduli[:1])
    wall, _ = _time(lambda: sample(spec, one), max(1, args.reps // 2))
    print(f"  hashlib (ren.sampling, 1 limb): {wall * 1e3:8.1f} ms per limb, "
          f"{4 * N / wall / 1e9:5.2f} GB/s residues")

    print(f"small coefficients: N = 2^{args.logn}")
    lib = cpu.ring_library()
    for kind, params in [("ternary", ()), ("sparse_ternary", (192,)), ("gaussian", (3.2,))]:
        sspec = RandomSpec(kind, params, b"bench-sampling", "cpu")
        py, _ = _time(lambda s=sspec: sample_signed(s, N), args.reps)
        cells = [f"python {py * 1e3:7.2f} ms"]
        for t in threads:
            lib.ren_set_threads(t)
            wall, cput = _time(lambda s=sspec: cpu_sampling.sample_signed(lib, s, N), args.reps)
            cells.append(f"C {t} thread(s) {wall * 1e3:7.2f} ms (cpu {cput * 1e3:7.2f})")
        lib.ren_set_threads(cpu.threads())
        print(f"  {kind:15s} " + "  ".join(cells))


if __name__ == "__main__":
    main()
