"""NTT and INTT, NumPy vs compiled: median ms and ns per butterfly, N = 2^14, 2^16; 8, 16 limbs.

Two implementations of the same transforms (negacyclic, bit-reversed NTT output; the INTT
includes the 1/N scaling), on one thread:

* numpy — `ren.ring.ntt` / `ren.ring.intt`, the "python" device's kernels;
* cpu   — the "cpu" device's ring library (`ren.backend.cpu.ring_library()`: `ren_cpu_ntt` and
  `ren_cpu_intt` from cpu_ring.c, Harvey's lazy butterflies with Shoup twiddles, AVX2 for
  moduli below 2^30, a scalar exact butterfly for moduli of 30-31 bits), called exactly as the
  device calls it (`ren.backend.cpu.library_call`: sizes and tables from `ren.ring.kernel_tables`),
  on an argument vector built once, so a timed call is the C function alone.

Both transforms run out of place on a random (L, N) array of residues; the compiled outputs are
asserted bit-identical to `ren.ring.ntt` / `ren.ring.intt` (and INTT(NTT(a)) == a).  A butterfly
is one (limb, stage, pair) update: L · (N/2) · log2(N) of them per transform.  --bits picks the
moduli sizes (default 30: the AVX2 path; 31 adds CKKS-sized primes, the scalar path).  The goal
line checks the compiled forward NTT at N = 2^16 × 16 limbs against 0.3 ns per butterfly.

Run:  python benchmarks/bench_ntt.py [--repeat 15] [--bits 30,31]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # one thread, read when the libraries load

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402

# this checkout's Ren, not another one installed in the interpreter
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ren  # noqa: E402
from ren.errors import RenError  # noqa: E402
from ren.kernel import RingCall  # noqa: E402
from ren.ring import RingKernel, RingSpec, get_tables, intt, ntt  # noqa: E402

SHAPES = ((1 << 14, 8), (1 << 14, 16), (1 << 16, 8), (1 << 16, 16))
GOAL_NS, GOAL_SHAPE = 0.3, (1 << 16, 16)


def median_s(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm-up: scratch buffers, caches, page faults of the output
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def compiled() -> Callable[[RingKernel, RingSpec], Callable[[np.ndarray, np.ndarray], Callable]]:
    """A maker of compiled transforms, or raises RenError (no C compiler, no compiled device)."""
    from ren.backend import cpu

    cpu.ring_library().ren_set_threads(1)

    def make(kind: RingKernel, ring: RingSpec) -> Callable:
        call = cpu.library_call(RingCall(kind, ring.N, ring.moduli, ring.moduli))

        def bind(out: np.ndarray, a: np.ndarray) -> Callable[[], None]:
            argv = call.argv([out, a])  # built once; call.extra keeps the tables alive
            return lambda: call.fn(argv)

        return bind

    return make


def bench(N: int, limbs: int, bits: int, repeat: int, make: Callable | None) -> dict:
    ring = RingSpec.generate(N, limbs, bits)
    q = get_tables(ring).q64
    _ = get_tables(ring).ntt_plan  # build twiddles outside the timing
    rng = np.random.default_rng(1)
    a = (rng.integers(0, 2**32, (limbs, N), dtype=np.uint64) % q).astype(np.uint32)
    fwd, back = np.empty_like(a), np.empty_like(a)
    row = {"N": N, "limbs": limbs, "bits": bits,
           "butterflies": limbs * (N // 2) * ring.logN,
           "numpy ntt": median_s(lambda: ntt(a, ring, out=fwd), repeat),
           "numpy intt": median_s(lambda: intt(fwd, ring, out=back), repeat)}
    assert np.array_equal(back, a), "numpy: INTT(NTT(a)) != a"
    if make is not None:
        c_fwd, c_back = np.empty_like(a), np.empty_like(a)
        run_ntt = make(RingKernel.NTT, ring)(c_fwd, a)
        run_intt = make(RingKernel.INTT, ring)(c_back, c_fwd)
        row["cpu ntt"] = median_s(run_ntt, 4 * repeat)  # cheap: more samples
        row["cpu intt"] = median_s(run_intt, 4 * repeat)
        assert np.array_equal(c_fwd, fwd), f"compiled NTT != ren.ring.ntt (N={N}, L={limbs})"
        assert np.array_equal(c_back, a), f"compiled INTT(NTT(a)) != a (N={N}, L={limbs})"
        run_intt_numpy_input = make(RingKernel.INTT, ring)(c_back, fwd)
        run_intt_numpy_input()
        assert np.array_equal(c_back, intt(fwd, ring)), "compiled INTT != ren.ring.intt"
    return row


def _cells(row: dict, name: str) -> str:
    if name not in row:
        return f"{'-':>9} {'-':>7}"
    s = row[name]
    return f"{s * 1e3:9.3f} {s * 1e9 / row['butterflies']:7.3f}"


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15,
                    help="timed calls per NumPy figure (the compiled ones take 4x as many)")
    ap.add_argument("--bits", default="30", help="comma list of modulus sizes, e.g. 30,31")
    ap.add_argument("--shapes", default=None, help=argparse.SUPPRESS)  # tests: e.g. 1024x2
    args = ap.parse_args(argv)
    bits_list = [int(b) for b in args.bits.split(",") if b.strip()]
    shapes = SHAPES if args.shapes is None else tuple(
        tuple(int(v) for v in s.split("x")) for s in args.shapes.split(","))
    try:
        make = compiled()
        note = "cpu: the 'cpu' device's ring library (cpu_ring.c), one thread"
    except (ImportError, RenError) as e:
        make, note = None, f"cpu: skipped ({e})"
    ren_dir = os.path.dirname(os.path.dirname(os.path.abspath(ren.__file__)))
    print(f"NTT/INTT, median ms and ns per butterfly, one thread; {note}; Ren from {ren_dir}")
    head = (f"{'N':>7} {'limbs':>5} {'q bits':>6} | {'numpy ntt':>9} {'ns/bf':>7} "
            f"{'intt':>9} {'ns/bf':>7} | {'cpu ntt':>9} {'ns/bf':>7} {'intt':>9} {'ns/bf':>7} "
            f"| {'speed-up':>8}")
    print(head)
    print("-" * len(head))
    rows = []
    for bits in bits_list:
        for N, limbs in shapes:
            r = bench(N, limbs, bits, args.repeat, make)
            rows.append(r)
            speed = (f"{r['numpy ntt'] / r['cpu ntt']:7.1f}x" if "cpu ntt" in r else f"{'-':>8}")
            print(f"{N:>7} {limbs:>5} {bits:>6} | {_cells(r, 'numpy ntt')} "
                  f"{_cells(r, 'numpy intt')} | {_cells(r, 'cpu ntt')} {_cells(r, 'cpu intt')} "
                  f"| {speed}")
    print("compiled outputs bit-identical to ren.ring.ntt / ren.ring.intt: checked (assert)")
    for r in rows:
        if (r["N"], r["limbs"]) == GOAL_SHAPE and "cpu ntt" in r:
            ns = r["cpu ntt"] * 1e9 / r["butterflies"]
            print(f"goal: compiled NTT <= {GOAL_NS} ns/butterfly at N=2^16 x 16 limbs "
                  f"({r['bits']}-bit moduli): {ns:.3f} ns -> "
                  f"{'met' if ns <= GOAL_NS else 'not met'}")
    return rows


if __name__ == "__main__":
    main()
