"""The CUDA backend on a GPU: NTT throughput and CKKS operations, eager and replayed as a CUDA
graph.

  ntt       forward and inverse NTT of N = 2^16 × 16 limbs (one ring-kernel call each): GPU time
            per call (CUDA events) and ns per butterfly
  mul       CKKS multiply + relinearize + rescale at N = 2^16 (preset N16 unless --depth)
  rotate    CKKS rotate by 1 (key switching with a Galois key)

Each CKKS op is timed two ways:
  eager     `realize()` of the lazy result, wall time with the stream synchronized: after the
            first call the realization replays its captured schedule (`ren.replay`), so this is
            the steady state of ordinary eager code, Python per-kernel dispatch included
  graph     the op's ren.jit plan, whose template runs as one CUDA graph (`Device.graph`, the
            device's graph runner), launched per call: GPU time between CUDA events (the
            graph alone, without the replay's copies to and from its staging arrays)

All of Ren's work runs on the GPU: every device named "python" (ren.ckks names only that one) is
opened as a CUDA device (`ren.backend.backend_override`), so keys and ciphertexts are made there.
Without CuPy or a GPU it prints why and exits 0.  Goal (issue 11): HMult at N = 2^16 replayed in
at most 0.3 ms on an H200.

Run:  python benchmarks/bench_cuda.py [--reps 50] [--depth D] [--json figures.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from collections.abc import Callable

import numpy as np


def gpu_note() -> str | None:
    """Why this machine cannot run the benchmark, or None."""
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed (pip install -e '.[cuda]')"
    try:
        if not cupy.is_available() or cupy.cuda.runtime.getDeviceCount() == 0:
            return "no CUDA GPU is present (cupy.is_available() is False)"
    except Exception as exc:  # no driver
        return f"no usable CUDA GPU ({exc})"
    return None


def lower_plan(polys) -> tuple[list, object, list]:
    """Schedule, plan and lower Polys with realized inputs without running them."""
    from ren.ir import storage_buffer
    from ren.memory import plan_memory
    from ren.runtime import make_exec_units
    from ren.schedule import ScheduleContext, as_sink, linearize, run_passes

    nodes = [p.node for p in polys]
    ctx = ScheduleContext(outputs=tuple(nodes))
    sink = run_passes(as_sink(*nodes), ctx=ctx).sink
    items = linearize(sink)
    outs = [storage_buffer(ctx.becomes_map[n]) for n in nodes]
    return make_exec_units(items), plan_memory(items, outputs=set(outs)), outs


def gpu_ms(fn: Callable[[], None], stream, reps: int) -> float:
    """Mean GPU milliseconds per call of fn (work enqueued on `stream`), by CUDA events."""
    import cupy

    fn()
    stream.synchronize()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record(stream)
    for _ in range(reps):
        fn()
    end.record(stream)
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end) / reps


def wall_ms(fn: Callable[[], None], sync: Callable[[], None], reps: int) -> float:
    """Median wall milliseconds per call (synchronized)."""
    fn()
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def bench_ntt(dev, reps: int, logn: int = 16, limbs: int = 16) -> dict[str, float]:
    import ren
    from ren.kernel import COMPUTE
    from ren.ring import RingSpec

    ring = RingSpec.generate(1 << logn, limbs)
    rng = np.random.default_rng(1)
    x = np.stack([rng.integers(0, q, ring.N) for q in ring.moduli]).astype(np.uint32)
    p = ren.Poly.from_residues(x, ring)
    out = {}
    butterflies = limbs * ring.logN * ring.N // 2
    for label, poly in (("ntt", p.ntt()), ("intt", ren.Poly.from_residues(x, ring, "NTT").intt())):
        units, _, _ = lower_plan([poly])
        (unit,) = [u for u in units if u.kind == COMPUTE]
        ms = gpu_ms(unit, dev.stream, reps)
        out[f"{label}_ms"] = ms
        out[f"{label}_ns_per_butterfly"] = ms * 1e6 / butterflies
    return out


def bench_ckks(dev, reps: int, depth: int | None, small: bool = False) -> dict[str, float]:
    import ren
    from ren.ckks import (
        CKKSParams,
        Encoder,
        Encryptor,
        Evaluator,
        InsecureParametersWarning,
        KeyGenerator,
    )
    from ren.kernel import COMPUTE

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        if small:  # the smoke test's tiny, insecure ring
            params = CKKSParams(N=1 << 10, depth=2, scale_bits=40, first_bits=55, insecure=True)
        else:
            params = CKKSParams.preset("N16", **({} if depth is None else {"depth": depth}))
    t0 = time.perf_counter()
    with ren.random.seeded(1):
        kg = KeyGenerator(params)
        ev = Evaluator(params, kg.relin_key(), kg.rotation_keys([1]))
        enc, encryptor = Encoder(params), Encryptor(params, kg.public_key())
        rng = np.random.default_rng(2)
        a = encryptor.encrypt(enc.encode(rng.uniform(-1, 1, params.slots))).realize()
        b = encryptor.encrypt(enc.encode(rng.uniform(-1, 1, params.slots))).realize()
    dev.synchronize()
    out = {"setup_s": time.perf_counter() - t0, "limbs": len(a.c0.ring.moduli)}
    ops = {"mul": (lambda a, b: ev.rescale(ev.multiply(a, b)), (a, b)),
           "rotate": (lambda a: ev.rotate(a, 1), (a,))}
    for name, (op, args) in ops.items():
        out[f"{name}_eager_ms"] = wall_ms(lambda op=op, args=args: op(*args).realize(),
                                          dev.synchronize, max(3, reps // 5))
        jitted = ren.jit(op)
        jitted(*args)  # the capture: its first run records the CUDA graph
        plan = jitted.plans[0]
        graph = getattr(plan.template.runner, "graph", None)
        if graph is None:
            out[f"{name}_graph_ms"] = float("nan")
            continue
        out[f"{name}_graph_ms"] = gpu_ms(lambda graph=graph: graph.launch(stream=dev.stream),
                                         dev.stream, reps)
        out[f"{name}_kernels"] = sum(u.kind == COMPUTE for u in plan.units)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--depth", type=int, default=None, help="override the N16 preset's depth")
    ap.add_argument("--gpu", type=int, default=0, help="GPU index")
    ap.add_argument("--only", default="ntt,ckks", help="comma list of: ntt, ckks")
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    ap.add_argument("--small", action="store_true", help="tiny sizes (a smoke test, not figures)")
    args = ap.parse_args(argv)
    note = gpu_note()
    if note is not None:
        print(f"bench_cuda: skipped: {note}.  Nothing to measure on this machine.")
        return 0
    import cupy

    from ren.backend import backend_override, get_device
    from ren.backend.cuda import CudaDevice

    props = cupy.cuda.runtime.getDeviceProperties(args.gpu)
    gpu = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    figures: dict[str, object] = {"gpu": gpu}
    print(f"bench_cuda on {gpu} (cuda:{args.gpu}), {args.reps} reps")
    with backend_override("python", lambda name: CudaDevice(name, cupy, args.gpu)):
        dev = get_device("python")
        only = set(args.only.split(","))
        if "ntt" in only:
            logn, limbs = (10, 2) if args.small else (16, 16)
            r = bench_ntt(dev, args.reps, logn, limbs)
            figures.update(r)
            print(f"  NTT  N=2^{logn} x {limbs} limbs: forward {r['ntt_ms']:.3f} ms "
                  f"({r['ntt_ns_per_butterfly']:.4f} ns/butterfly), inverse {r['intt_ms']:.3f} ms "
                  f"({r['intt_ns_per_butterfly']:.4f} ns/butterfly)")
        if "ckks" in only:
            r = bench_ckks(dev, args.reps, args.depth, args.small)
            figures.update(r)
            print(f"  CKKS N=2^{10 if args.small else 16}, {r['limbs']} ciphertext limbs at the "
                  f"top level (setup {r['setup_s']:.1f} s)")
            for name in ("mul", "rotate"):
                print(f"    {name:<7} eager {r[f'{name}_eager_ms']:8.3f} ms   CUDA graph "
                      f"{r[f'{name}_graph_ms']:8.3f} ms   ({r.get(f'{name}_kernels', '?')} "
                      "kernels)")
            goal = r["mul_graph_ms"]
            print(f"  goal: HMult replayed <= 0.3 ms: {'met' if goal <= 0.3 else 'not met'} "
                  f"({goal:.3f} ms)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
