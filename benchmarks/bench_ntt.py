"""NTT and INTT, NumPy vs compiled per vector path: ms and ns per butterfly, N = 2^14, 2^16.

Two implementations of the same transforms (negacyclic, bit-reversed NTT output; the INTT
includes the 1/N scaling), on one thread:

* numpy — `ren.ring.ntt` / `ren.ring.intt`, the "python" device's kernels;
* cpu   — the "cpu" device's ring library (`ren.backend.cpu.ring_library(isa)`: `ren_cpu_ntt`
  and `ren_cpu_intt` from cpu_ring.c), once per vector path (`REN_CPU_ISA`'s avx512, avx2,
  scalar: every path this machine runs, or those of --isa), called exactly as the device calls
  it (`ren.backend.cpu.library_call`: sizes and tables from `ren.ring.kernel_tables`), on an
  argument vector built once, so a timed call is the C function alone.  avx512: 16-lane lazy
  butterflies for every modulus, two stages a pass; avx2: 8-lane lazy butterflies for moduli
  below 2^30, a scalar exact butterfly for 30-31 bits; scalar: portable C.

Both transforms run out of place on a random (L, N) array of residues; every path's outputs are
asserted bit-identical to `ren.ring.ntt` / `ren.ring.intt` (and INTT(NTT(a)) == a).  A butterfly
is one (limb, stage, pair) update: L · (N/2) · log2(N) of them per transform.  --bits picks the
moduli sizes (default 30,31).  Goal lines at N = 2^16 × 16 limbs: the best path's forward NTT
against 0.3 ns per butterfly, and avx512 against avx2 (goal: 1.5× faster).  The compiled paths
are timed in turns (one call of each per round), so load on a shared machine hits them alike.

"In registers": each path's forward butterfly alone (`ren_cpu_fly_regs`: the NTT's own lazy
butterfly code, q < 2^30, on 8 independent vector pairs with no load, store or shuffle), the
rate the arithmetic reaches on this CPU.  Its avx512/avx2 ratio is what the wider vectors can
gain on the butterfly itself (an Intel core runs 512-bit integer work on two ports, 256-bit on
three); the NTT's figure against it is what the transform's memory and shuffles cost.

Run:  python benchmarks/bench_ntt.py [--repeat 15] [--bits 30,31] [--isa avx512,avx2,scalar]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # one thread, read when the libraries load

import argparse  # noqa: E402
import ctypes  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402

import numpy as np  # noqa: E402

# this checkout's Ren, not another one installed in the interpreter
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ren  # noqa: E402
from ren.backend.numpy_backend import host_empty  # noqa: E402
from ren.errors import RenError  # noqa: E402
from ren.kernel import RingCall  # noqa: E402
from ren.ring import RingKernel, RingSpec, get_tables, intt, ntt  # noqa: E402

SHAPES = ((1 << 14, 8), (1 << 14, 16), (1 << 16, 8), (1 << 16, 16))
GOAL_NS, GOAL_SHAPE, GOAL_SPEEDUP = 0.3, (1 << 16, 16), 1.5


def median_s(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm-up: scratch buffers, caches, page faults of the output
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def interleaved_medians(runs: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Median seconds of each run, timed in turns (one call of each per round), so a burst of
    load on a shared machine falls on every path alike."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for fn in runs.values():
        fn()  # warm-up
    for _ in range(repeat):
        for name, fn in runs.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) for name, ts in times.items()}


def compiled(isa: str) -> Callable[[RingKernel, RingSpec], Callable]:
    """A maker of compiled transforms on vector path `isa`, or raises RenError (no C compiler,
    no compiled device, a path this machine does not run)."""
    from ren.backend import cpu

    cpu.ring_library(isa).ren_set_threads(1)

    def make(kind: RingKernel, ring: RingSpec) -> Callable:
        call = cpu.library_call(RingCall(kind, ring.N, ring.moduli, ring.moduli), isa)

        def bind(out: np.ndarray, a: np.ndarray) -> Callable[[], None]:
            argv = call.argv([out, a])  # built once; call.extra keeps the tables alive
            return lambda: call.fn(argv)

        return bind

    return make


def paths(wanted: str) -> tuple[list[tuple[str, Callable]], str]:
    """The compiled paths to time (name, maker) and a note on those skipped."""
    try:
        from ren.backend import cpu

        names = list(cpu.available_isas()) if wanted == "all" else [
            cpu.resolve_isa() if w == "auto" else w for w in wanted.split(",") if w.strip()]
    except (ImportError, RenError) as e:
        return [], f"cpu: skipped ({e})"
    makers, skipped = [], []
    for name in names:
        try:
            makers.append((name, compiled(name)))
        except (RenError, ValueError) as e:
            skipped.append(f"{name} skipped ({e})")
    return makers, "; ".join(skipped)


#: a modulus below 2^30 and a twiddle for the register-only butterfly
FLY_Q, FLY_W = 1073479681, 12345678


def fly_words(lib: ctypes.CDLL) -> int:
    """The words `ren_cpu_fly_regs` of ring library `lib` works on: an X and a Y vector (or
    word, on the scalar path) per pair."""
    return 2 * lib.ren_cpu_fly_pairs() * max(1, lib.ren_cpu_vector_bits() // 32)


def fly_in_registers(isa: str, x: np.ndarray, rounds: int, q: int = FLY_Q,
                     w: int = FLY_W) -> int:
    """Run `rounds` of path `isa`'s forward lazy butterfly on the words of `x` in place
    (uint32, ``2 * pairs * lanes`` words in [0, 4q): X words first, then Y), with no memory
    traffic in the loop; returns the butterflies done."""
    from ren.backend import cpu

    lib = cpu.ring_library(isa)
    words = fly_words(lib)
    if x.dtype != np.uint32 or x.shape != (words,) or not x.flags.c_contiguous:
        raise ValueError(f"{isa}: x must be {words} contiguous uint32 words, got {x.dtype} "
                         f"{x.shape}")
    if not 2 < q < 1 << 30 or not 0 <= w < q:
        raise ValueError(f"the register butterfly needs 2 < q < 2^30 and 0 <= w < q, got "
                         f"q={q}, w={w}")
    fn = lib.ren_cpu_fly_regs
    fn.argtypes = [ctypes.c_void_p, ctypes.c_longlong, ctypes.c_uint32, ctypes.c_uint32,
                   ctypes.c_uint32]
    fn.restype = ctypes.c_longlong
    return int(fn(x.ctypes.data, rounds, q, w, (w << 32) // q))


def register_rates(names: Sequence[str], repeat: int, rounds: int = 1 << 16) -> dict[str, float]:
    """ns per butterfly of each path's butterfly in registers (`fly_in_registers`), timed in
    turns."""
    from ren.backend import cpu

    runs, done = {}, {}
    for name in names:
        words = fly_words(cpu.ring_library(name))
        x = np.random.default_rng(3).integers(0, 4 * FLY_Q, words, dtype=np.uint32)
        done[name] = fly_in_registers(name, x, rounds)
        runs[name] = (lambda name=name, x=x: fly_in_registers(name, x, rounds))
    times = interleaved_medians(runs, repeat)
    return {name: times[name] * 1e9 / done[name] for name in names}


def bench(N: int, limbs: int, bits: int, repeat: int,
          makers: Sequence[tuple[str, Callable]]) -> dict:
    ring = RingSpec.generate(N, limbs, bits)
    q = get_tables(ring).q64
    _ = get_tables(ring).ntt_plan  # build twiddles outside the timing
    rng = np.random.default_rng(1)
    # every array starts on a cache line, as the JIT's arena buffers do (ren's host allocator)
    a = host_empty((limbs, N))
    a[...] = rng.integers(0, 2**32, (limbs, N), dtype=np.uint64) % q
    fwd, back = host_empty(a.shape), host_empty(a.shape)
    row = {"N": N, "limbs": limbs, "bits": bits,
           "butterflies": limbs * (N // 2) * ring.logN,
           "numpy ntt": median_s(lambda: ntt(a, ring, out=fwd), repeat),
           "numpy intt": median_s(lambda: intt(fwd, ring, out=back), repeat)}
    assert np.array_equal(back, a), "numpy: INTT(NTT(a)) != a"
    want_intt = intt(fwd, ring)
    runs, outs = {}, {}
    for name, make in makers:
        c_fwd, c_back = outs[name] = host_empty(a.shape), host_empty(a.shape)
        runs[f"{name} ntt"] = make(RingKernel.NTT, ring)(c_fwd, a)
        runs[f"{name} intt"] = make(RingKernel.INTT, ring)(c_back, c_fwd)
    row.update(interleaved_medians(runs, 4 * repeat))  # cheap: more samples
    for name, make in makers:
        c_fwd, c_back = outs[name]
        where = f"{name} path, N={N}, L={limbs}, {bits}-bit moduli"
        assert np.array_equal(c_fwd, fwd), f"compiled NTT != ren.ring.ntt ({where})"
        assert np.array_equal(c_back, a), f"compiled INTT(NTT(a)) != a ({where})"
        make(RingKernel.INTT, ring)(c_back, fwd)()
        assert np.array_equal(c_back, want_intt), f"compiled INTT != ren.ring.intt ({where})"
    return row


def _ns(row: dict, name: str) -> float:
    return row[name] * 1e9 / row["butterflies"]


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15,
                    help="timed calls per NumPy figure (the compiled ones take 4x as many)")
    ap.add_argument("--bits", default="30,31", help="comma list of modulus sizes, e.g. 30,31")
    ap.add_argument("--isa", default="all",
                    help="compiled vector paths: all (every one this machine runs), auto, or a "
                         "comma list of avx512, avx2, scalar")
    ap.add_argument("--shapes", default=None, help="comma list of NxL, e.g. 65536x16")
    args = ap.parse_args(argv)
    bits_list = [int(b) for b in args.bits.split(",") if b.strip()]
    shapes = SHAPES if args.shapes is None else tuple(
        (int(n), int(limbs)) for n, limbs in (s.split("x") for s in args.shapes.split(",")))
    makers, note = paths(args.isa)
    names = [n for n, _ in makers]
    ren_dir = os.path.dirname(os.path.dirname(os.path.abspath(ren.__file__)))
    print(f"NTT/INTT, median ms (numpy) and ns per butterfly, one thread; cpu: the 'cpu' "
          f"device's ring library per vector path{'; ' + note if note else ''}; "
          f"Ren from {ren_dir}")
    head = (f"{'N':>7} {'limbs':>5} {'q bits':>6} | {'numpy ntt':>9} {'ns/bf':>6} "
            f"{'intt':>8} {'ns/bf':>6} |" + "".join(
                f" {n + ' ntt':>10} {'intt':>6} |" for n in names) + f" {'vs numpy':>8}")
    print(head)
    print("-" * len(head))
    rows = []
    for bits in bits_list:
        for N, limbs in shapes:
            r = bench(N, limbs, bits, args.repeat, makers)
            rows.append(r)
            cells = "".join(f" {_ns(r, n + ' ntt'):10.3f} {_ns(r, n + ' intt'):6.3f} |"
                            for n in names)
            speed = f"{r['numpy ntt'] / r[names[0] + ' ntt']:7.1f}x" if names else f"{'-':>8}"
            print(f"{N:>7} {limbs:>5} {bits:>6} | {r['numpy ntt'] * 1e3:9.3f} "
                  f"{_ns(r, 'numpy ntt'):6.3f} {r['numpy intt'] * 1e3:8.3f} "
                  f"{_ns(r, 'numpy intt'):6.3f} |{cells} {speed}")
    if names:
        print(f"every path's outputs bit-identical to ren.ring.ntt / ren.ring.intt: checked "
              f"(assert); 'vs numpy': NumPy's NTT time over {names[0]}'s")
    # the vector paths only: the compiler turns the scalar path's loops into SSE code of its
    # own, so its register butterfly says nothing of its NTT
    vector = [n for n in names if n != "scalar"]
    fly = register_rates(vector, 4 * args.repeat) if vector else {}
    if fly:
        print("in registers (the forward butterfly alone, q < 2^30), ns per butterfly: "
              + ", ".join(f"{n} {ns:.3f}" for n, ns in fly.items()))
        if {"avx512", "avx2"} <= set(fly):
            print(f"  avx512 / avx2 on the butterfly itself: {fly['avx2'] / fly['avx512']:.2f}x "
                  f"(what the wider vectors can gain on this CPU's arithmetic)")
        for r in rows:
            if r["bits"] < 31:
                print(f"  N={r['N']} x {r['limbs']}: the NTT runs at " + ", ".join(
                    f"{n} {100 * ns / _ns(r, n + ' ntt'):.0f}%" for n, ns in fly.items())
                    + " of its path's rate in registers")
    for r in rows:
        if (r["N"], r["limbs"]) != GOAL_SHAPE or not names:
            continue
        ns = _ns(r, names[0] + " ntt")
        print(f"goal: compiled NTT <= {GOAL_NS} ns/butterfly at N=2^16 x 16 limbs "
              f"({r['bits']}-bit moduli, {names[0]}): {ns:.3f} ns -> "
              f"{'met' if ns <= GOAL_NS else 'not met'}")
        if {"avx512", "avx2"} <= set(names):
            up = r["avx2 ntt"] / r["avx512 ntt"]
            up_i = r["avx2 intt"] / r["avx512 intt"]
            print(f"goal: avx512 NTT >= {GOAL_SPEEDUP}x avx2 at N=2^16 x 16 limbs "
                  f"({r['bits']}-bit moduli): {up:.2f}x (INTT {up_i:.2f}x) -> "
                  f"{'met' if up >= GOAL_SPEEDUP else 'not met'}")
    return rows


if __name__ == "__main__":
    main()
