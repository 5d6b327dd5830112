"""CKKS side by side, one thread: Ren (NumPy and compiled devices), SEAL (tenseal.sealapi), DESILO.

All libraries run at the same ring degree N (2^14 by default; --sizes 14,16 runs 2^14 and 2^16
in one go; --big is --sizes 16), the same multiplicative depth and scale, at 128-bit classical
security (Homomorphic Encryption Standard table, ternary secret), each on one thread.  Defaults
per N: depth 7 and a 40-bit scale at 2^14; depth 20 and a 47-bit scale at 2^16 (DESILO puts
max_level 18..36 on N = 2^16, and Ren's u32 limbs need a 47-bit scale for 20 levels at 2^16: a
scale above 31 bits is a pair of primes ≡ 1 mod 2N, scarce at large N).  For each library it
prints the parameters actually used, then the median wall time (ms) of:

  keygen    secret + public + relinearization + one rotation key (step 1)
  encrypt   encode + public-key encryption of N/2 real slots
  add       ciphertext + ciphertext
  mul       ciphertext × ciphertext, relinearize, rescale (DESILO's multiply does all three)
  rotate    rotate slots left by 1
  decrypt   decryption + decoding
  mul jit, rotate jit   (Ren only) the same op as a `ren.jit` function: captured on the first
            call, then each timed call is a replay (binds the inputs, runs the captured kernels,
            returns new, realized output buffers)

each beside its precision, in bits (−log2 of the max abs error against NumPy, inputs uniform in
[-1, 1]) where the op has one: "ms / bits" for encrypt (a fresh encryption, which shows the scale
really used), mul and rotate, eager and replayed, and the programs; then Ren's time over the
fastest matched peer's, per op, with Ren's precision minus that peer's (a faster Ren that is
noisier says so in the same cell).  Ren runs once per
--device: "python" (NumPy kernels) and "cpu" (kernels compiled by the C compiler, ring kernels
from its C library; REN_CPU_THREADS, default 1).  The last table sums up every N: Ren eager and
JIT per device, SEAL, DESILO (ms and bits, mul and rotate) and Ren cpu JIT over SEAL.

Matching: SEAL gets the modulus chain [first_bits] + [scale_bits]·depth + [special_bits], i.e. one
special prime and a decomposition into the depth + 1 ciphertext primes; Ren gets the same log2 Q
(its limbs are < 2^31, so each level above 31 bits is two primes and the first modulus two 30-bit
primes) and, by default, the key-switching shape its cost model finds cheapest among the secure
ones whose key switch adds no more noise than a rescale (`CKKSParams.fastest_key_switching`:
fewer, larger digits and a larger P, still within the HE-standard 128-bit bound, and P well
above every digit; at N = 2^14, depth 7: dnum 9 and 2 special primes; at N = 2^16, depth 20:
dnum 2 and 17 special primes); with --key-switching seal, SEAL's shape: a 60-bit P (two 30-bit
special primes) and dnum = depth + 1; with --key-switching unbounded, the cheapest secure shape
whatever its noise (`max_noise_bits=None`: the fewest digits at most P each, which loses bits of
rotation precision: 8 at N = 2^14, depth 7).  Each library's chain (log2 Q, log2 QP, the
key-switching shape and, for Ren, its key-switching noise estimate against a rescale's,
`ren.rlwe.cost.key_switch_noise_bits`) is printed beside its figures.
DESILO exposes only max_level: it picks N and its modulus chain itself (it
is not visible through its API), so the table shows its N, its depth and its ciphertext size, and
marks it unmatched (and leaves it out of the ratios) when its N differs from the others'.

The peers are an optional extra: `pip install -e ".[bench]"`; a missing one is skipped with a note.

Ren's section also shows where its time goes (building the graph, then the realization's
schedule / plan / lower / run stages, and the JIT capture); --breakdown times every kernel of the
JIT plans of mul and rotate by category (NTT, INTT, basis conversion, mod-down, rescale, key inner
product, automorphism, other elementwise; ckks_breakdown.py) against the replay and eager totals;
--profile adds a cProfile of one Ren multiply.

Run:  python benchmarks/bench_ckks.py [--reps 7] [--only ren,seal,desilo] [--device python,cpu]
                                      [--sizes 14,16 | --big] [--depth 7] [--scale-bits 40]
                                      [--threads 1,2 [--rounds 3]] [--breakdown] [--profile]
                                      [--key-switching fast|seal|unbounded]

--threads 1,2,...: Ren's "cpu" device once per thread count (REN_CPU_THREADS), columns
ren-cpux1, ren-cpux2, ...; the peers stay on one thread.  Compare wall and CPU time: on a
loaded machine a second thread shows up as CPU time without a wall-time gain.  Every thread
count warms each op up alike (`ckks_common.WARMUP`: key generation three times, the first ones
grow the process's heap).  --rounds 3 runs the counts three times in turn (1,2,1,2,1,2) and
pools each count's samples, so a load that comes and goes falls on both alike.
"""

from __future__ import annotations

import os

# One thread everywhere: the OpenMP/BLAS pools read these when the libraries load, so they are set
# before anything (numpy included) is imported.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("REN_CPU_THREADS", "1")  # Ren's "cpu" device: one thread unless told

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

# The helper modules sit next to this file (run as a script, or loaded by the tests by path), and
# the Ren measured is this checkout's (not another one installed in the interpreter).
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_HERE, os.path.dirname(_HERE)]

from ckks_breakdown import breakdown_table, plan_breakdown  # noqa: E402
from ckks_common import (  # noqa: E402  (the tests use bench_ckks.<name>)
    DEVICES,
    HE_STD_128,
    JIT_OPS,
    LIBS,
    MATRIX_N,
    OPS,
    POLY,
    PROGRAM_DEPTH,
    PROGRAM_OPS,
    WARMUP,
    Config,
    Result,
    Skipped,
    bits,
    check_security,
    inputs,
    merge_round,
    poly_value,
    program_inputs,
    timed,
)
from ckks_peers import run_desilo, run_seal  # noqa: E402

#: per log2 N: (depth, scale bits) when --depth / --scale-bits are not given
SIZE_DEFAULTS = {16: (20, 47)}
DEFAULT_DEPTH, DEFAULT_SCALE_BITS = 7, 40


# ---------------------------------------------------------------- Ren (python and cpu devices)


def _polys(obj: Any, seen: set[int] | None = None) -> list[Any]:
    """Every ren.Poly reachable from obj (dataclass fields, attributes, containers)."""
    import ren

    seen = set() if seen is None else seen
    if id(obj) in seen or obj is None or isinstance(obj, str | bytes | int | float | np.ndarray):
        return []
    seen.add(id(obj))
    if isinstance(obj, ren.Poly):
        return [obj]
    if isinstance(obj, dict):
        items = list(obj.values())
    elif isinstance(obj, list | tuple | set | frozenset):
        items = list(obj)
    elif dataclasses.is_dataclass(obj):
        items = [getattr(obj, f.name) for f in dataclasses.fields(obj)]
    else:
        items = list(getattr(obj, "__dict__", {}).values())
    # Parameters hold no data to compute; walking them would only find ring tables.
    items = [i for i in items if type(i).__name__ != "CKKSParams"]
    return [p for i in items for p in _polys(i, seen)]


def realize_all(*objs: Any) -> None:
    """Force every lazy Poly inside objs, in one realization (Ren's ops only build graphs)."""
    import ren

    polys = [p for o in objs for p in _polys(o)]
    if polys:
        ren.realize(polys)


def profile(fn: Callable[[], Any], top: int = 18) -> str:
    """cProfile of one call of fn: the functions with the most time of their own."""
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    prof.runcall(fn)
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(top)
    return "ren mul+relin+rescale, cProfile by own time:\n" + buf.getvalue().strip()


def stage_table(res: Result) -> str:
    """Where Ren's time goes, per op: building the graph, then each stage of realizing it; and
    the JIT capture of the replayed ops."""
    names = ("build graph", "schedule", "plan", "lower", "run")
    head = f"{res.name}, last run (ms)".ljust(24) + "".join(n.rjust(13) for n in names)
    head += "  kernels"
    lines = [head, "-" * len(head)]
    for op_name, st in res.stages.items():
        lines.append(op_name.ljust(24) + "".join(f"{st[n] * 1e3:13.2f}" for n in names)
                     + f"  {int(st['kernels']):7d}")
    for op_name, seconds in res.capture.items():
        runner = res.params.get(f"{op_name} jit runner", "?")
        lines.append(f"{op_name} jit: captured in {seconds * 1e3:.1f} ms, replayed by {runner}")
    return "\n".join(lines)


def _param(params: Any, *names: str) -> Any:
    for name in names:
        value = getattr(params, name, None)
        if value is not None:
            return value() if callable(value) else value
    return None


#: --threads: per (op, thread count), each timed run's (process CPU, busiest thread's CPU) in
#: seconds, from the threads' own clocks (`thread_cpu`); the warm-up runs are left out
THREAD_CPU: dict[tuple[str, int], list[tuple[float, float]]] = {}


def thread_cpu() -> dict[int, float]:
    """CPU seconds of each thread of this process so far (Linux: /proc/self/task/*/schedstat,
    nanoseconds on the CPU); {} where there is no such file.  The calling thread's own figure
    is `time.thread_time()`: a running thread's schedstat is only brought up to date at the
    scheduler's next tick (up to 4 ms behind: an op of a few ms showed a tenth of its CPU)."""
    out = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                out[int(tid)] = int(f.read().split()[0]) * 1e-9
        except (OSError, ValueError, IndexError):  # a thread that ended meanwhile
            pass
    out[threading.get_native_id()] = time.thread_time()
    return out


#: --threads: per (op, thread count), each timed run's share of its wall time that the calling
#: thread spent runnable but not running (waiting for a core other load held: `run_queue_wait`)
PREEMPTED: dict[tuple[str, int], list[float]] = {}


def run_queue_wait() -> float | None:
    """Seconds the calling thread has waited runnable for a core so far (Linux: the second
    field of /proc/thread-self/schedstat); None where there is no such file.  Over a timed run
    it says how much other load stretched that run's wall time: ~0 on a quiet machine."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1]) * 1e-9
    except (OSError, ValueError, IndexError):
        return None


def threads_timed(fn: Callable[[], Any], reps: int, name: str, threads: int, warmup: int = 1
                  ) -> tuple[tuple[list[float], list[float]], Any]:
    """`timed(fn, reps)`, keeping each timed run's CPU per thread in THREAD_CPU[name, threads]:
    the busiest thread's CPU is the wall time the run needs at the least with its threads on
    cores of their own, whatever else runs on the machine (a run whose work is split evenly
    over t threads shows 1/t of its one-thread CPU there; serial parts show on one thread).
    A thread that ends within a run is not counted (Ren's OpenMP team and pools live on)."""
    samples: list[tuple[float, float]] = []
    waits: list[float] = []
    walls: list[float] = []

    def run() -> Any:
        before, waited, t0 = thread_cpu(), run_queue_wait(), time.perf_counter()
        out = fn()
        wall, after = time.perf_counter() - t0, run_queue_wait()
        walls.append(wall)
        used = [cpu - before.get(tid, 0.0) for tid, cpu in thread_cpu().items()]
        samples.append((sum(used), max(used, default=0.0)))
        if waited is not None and after is not None and wall > 0:
            waits.append(min(1.0, (after - waited) / wall))
        return out

    (_, cpu), out = timed(run, reps, warmup)
    # each run's own wall: `timed`'s would also count the /proc reads around fn (~0.3 ms a
    # run with Ren's ~9 threads, the same at every thread count, so it flattened the ratios)
    result = (walls[-reps:], cpu), out
    # (extended: --rounds pools every round's samples)
    THREAD_CPU.setdefault((name, threads), []).extend(samples[max(1, warmup):])
    if len(waits) == len(samples):
        PREEMPTED.setdefault((name, threads), []).extend(waits[max(1, warmup):])
    return result


def preempted_table(threads: tuple[int, ...]) -> str:
    """Per op and thread count: the median share of a timed run's wall time its calling thread
    waited runnable for a core (`run_queue_wait`): how much other load on the machine stretched
    the wall times above (~0 % quiet; wall ratios between thread counts mean little where it is
    large, the CPU splits still do); empty when nothing was measured."""
    ops = list(dict.fromkeys(op for (op, t) in PREEMPTED if t in threads))
    if not ops:
        return ""
    head = f"{'waiting for a core':22s}" + "".join(f"{f'{t} thr':>10s}" for t in threads)
    lines = [head, "-" * len(head)]
    for op in ops:
        cells = [PREEMPTED.get((op, t)) for t in threads]
        lines.append(f"{op:22s}" + "".join(
            f"{statistics.median(c) * 100:9.0f}%" if c else f"{'-':>10s}" for c in cells))
    lines.append("share of each run's wall time the calling thread waited runnable for a core "
                 "held by other load (median): the noise in the wall times")
    return "\n".join(lines)


def thread_table(threads: tuple[int, ...]) -> str:
    """Per op: the CPU of a run on the first thread count, the busiest thread's CPU (and the
    process's) on each other, and their ratio, the speed-up the work's split allows (medians,
    ms); empty when THREAD_CPU holds no op at two of the thread counts."""
    base = threads[0]
    ops = [op for (op, t) in THREAD_CPU if t == base
           and any((op, u) in THREAD_CPU for u in threads[1:])]
    if not ops:
        return ""
    med = statistics.median
    head = (f"{'CPU per thread, ms':22s}{f'{base} thr CPU':>14s}" + "".join(
        f"{f'{t} thr busiest (all)':>26s}{'split':>8s}" for t in threads[1:]))
    lines = [head, "-" * len(head)]
    for op in ops:
        one = med(s[0] for s in THREAD_CPU[op, base]) * 1e3
        line = f"{op:22s}{one:14.1f}"
        for t in threads[1:]:
            samples = THREAD_CPU.get((op, t))
            if not samples:
                line += f"{'-':>26s}{'':>8s}"
                continue
            busy, total = (med(s[1] for s in samples) * 1e3, med(s[0] for s in samples) * 1e3)
            # t cores cannot run the process's CPU in less than total / t: work spread over
            # more threads than t (a pool beside the OpenMP team) is bounded by that
            bound = max(busy, total / t)
            line += f"{f'{busy:.1f} ({total:.1f})':>26s}{one / bound if bound else math.nan:7.2f}x"
        lines.append(line)
    lines.append("split: CPU on one thread over the larger of the busiest thread's CPU and the "
                 "process's CPU / threads: the wall-time speed-up the work's split allows on idle "
                 "cores (memory bandwidth and wake-ups aside)")
    return "\n".join(lines)


def run_ren(cfg: Config) -> Result:
    """Ren on `cfg.device`: the "cpu" device runs every kernel of ren.ckks (which names the
    "python" device) by overriding that device kind for the whole run."""
    if cfg.device not in DEVICES:
        raise Skipped(f"ren: unknown device {cfg.device!r}; choose from {', '.join(DEVICES)}")
    if cfg.device == "python":
        return _run_ren(cfg)
    try:
        import ren
        from ren.backend import backend_override, cpu
    except ImportError as e:
        raise Skipped(f"ren-cpu: the compiled device is not in this checkout ({e})") from e
    try:
        cpu.cpu_flags()  # raises DeviceError when there is no C compiler
    except ren.RenError as e:
        raise Skipped(f"ren-cpu: {e}") from e
    if cfg.threads is None:
        with backend_override("python", cpu.open_device):
            return _run_ren(cfg)
    # --threads: this run's REN_CPU_THREADS, for the libraries loaded already (set_threads
    # reaches every loaded one) and for those compiled during the run (the override)
    with ren.settings.override(REN_CPU_THREADS=cfg.threads), \
            backend_override("python", cpu.open_device):
        cpu.CpuDevice("cpu").set_threads(cfg.threads)
        res = _run_ren(cfg)
    res.threads = cfg.threads
    return res


def _run_ren(cfg: Config) -> Result:
    import ren
    from ren import realization as ren_realization

    try:
        from ren.ckks import (
            CKKSParams,
            Decryptor,
            Encoder,
            Encryptor,
            Evaluator,
            KeyGenerator,
            LinearTransform,
        )
        from ren.rlwe.cost import key_switch_noise_bits
    except ImportError as e:
        raise Skipped(f"ren: ren.ckks is not available in this checkout ({e})") from e
    name = f"ren-{cfg.device}"
    try:
        chain = dict(N=cfg.n, depth=cfg.depth, scale_bits=cfg.scale_bits,
                     first_bits=cfg.first_bits, insecure=cfg.insecure)
        if cfg.key_switching == "seal":
            # P of about special_bits (30-bit special primes) and dnum = depth + 1: SEAL's shape
            params = CKKSParams(**chain, special_primes=max(1, round(cfg.special_bits / 30)),
                                dnum=cfg.depth + 1)
            shape = "SEAL's shape"
        elif cfg.key_switching == "unbounded":  # the cheapest, whatever its noise
            params = CKKSParams.fastest_key_switching(**chain, max_noise_bits=None)
            shape = "fastest_key_switching, max_noise_bits=None"
        else:  # the same chain Q, the cheapest shape that adds no more noise than a rescale
            params = CKKSParams.fastest_key_switching(**chain)
            shape = "CKKSParams.fastest_key_switching"
    except ren.RenError as e:
        raise Skipped(f"{name}: refused the parameters: {e}") from e
    log2_q = _param(params, "log2_q", "log2_Q", "log_q")
    log2_qp = _param(params, "log2_qp", "log2_QP", "log_qp")
    res = Result("ren", {
        "version": getattr(ren, "__version__", "worktree"), "N": cfg.n, "depth": cfg.depth,
        "scale_bits": cfg.scale_bits,
        "log2_Q": log2_q if log2_q is not None else "?",
        "log2_QP": log2_qp if log2_qp is not None else "?",
        "key_switching": f"P: {len(params.special_moduli)} primes "
                         f"({params.log2_P:.0f} bits), dnum = {params.dnum} ({shape})",
        "key_switching_noise": f"2^{key_switch_noise_bits(params):.1f} of a rescale's",
        "device": cfg.device if cfg.device == "python"
        else f"{cfg.device}, {ren.settings.get('REN_CPU_THREADS')} thr"}, device=cfg.device)
    if isinstance(log2_qp, int | float):
        check_security(name, cfg.n, log2_qp, cfg.insecure)

    def timed_op(name: str, fn: Callable[[], Any], reps: int) -> tuple[Any, Any]:
        """`timed`, with each run's CPU per thread kept (THREAD_CPU) under --threads."""
        warmup = WARMUP.get(name, 1)  # the same at every thread count
        return timed(fn, reps, warmup) if cfg.threads is None else \
            threads_timed(fn, reps, name, cfg.threads, warmup)

    def keygen() -> tuple[Any, ...]:
        kg = KeyGenerator(params)
        keys = (kg.secret_key(), kg.public_key(), kg.relin_key(), kg.rotation_keys([1]))
        realize_all(keys)
        return keys

    sk, pk, rlk, gk = res.record("keygen", timed_op("keygen", keygen, cfg.keygen_reps))
    encoder, encryptor = Encoder(params), Encryptor(params, pk)
    decryptor = Decryptor(params, sk)
    ev = Evaluator(params, relin_key=rlk, rotation_keys=gk)
    x, y = inputs(cfg)

    def encrypt(v: np.ndarray) -> Any:
        ct = encryptor.encrypt(encoder.encode(v))
        realize_all(ct)
        return ct

    def decrypt(ct: Any) -> np.ndarray:
        return np.real(np.asarray(encoder.decode(decryptor.decrypt(ct))))

    def op(name: str, fn: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            t0 = time.perf_counter()
            out = fn()
            t1 = time.perf_counter()
            realize_all(out)
            t = ren_realization.last_timings
            res.stages[name] = {"build graph": t1 - t0, "schedule": t.schedule, "plan": t.plan,
                                "lower": t.lower, "run": t.run, "kernels": t.kernels}
            return out
        return run

    def mul(a: Any, b: Any) -> Any:
        return ev.rescale(ev.multiply(a, b))

    def rotate(a: Any) -> Any:
        return ev.rotate(a, 1)

    cx = res.record("encrypt", timed_op("encrypt", lambda: encrypt(x), cfg.reps))
    cy = encrypt(y)
    res.params["ct_bytes"] = sum(p.numpy().nbytes for p in _polys(cx))
    # A lazy engine could share a result between identical graphs; every timed run below builds
    # its graph anew on realized inputs, and Poly.realize skips nothing that is not realized.
    res.record("add", timed_op("add", op("add", lambda: ev.add(cx, cy)), cfg.reps))
    prod = res.record("mul", timed_op("mul", op("mul", lambda: mul(cx, cy)), cfg.reps))
    rot = res.record("rotate", timed_op("rotate", op("rotate", lambda: rotate(cx)),
                                                 cfg.reps))
    # JIT: timed()'s warm-up call captures the plan, every timed call replays it.
    jitted = {"mul": (ren.jit(mul), (cx, cy)), "rotate": (ren.jit(rotate), (cx,))}
    replayed = {}
    for op_name, (fn, args) in jitted.items():
        replayed[op_name] = res.record(f"{op_name} jit",
                                       timed_op(f"{op_name} jit",
                                                lambda fn=fn, args=args: fn(*args), cfg.reps))
        if fn.misses != 1 or fn.hits != cfg.reps:
            raise AssertionError(f"{name}: {op_name} jit captured {fn.misses} times and replayed "
                                 f"{fn.hits} (expected 1 capture, {cfg.reps} replays)")
        (plan,) = fn.plans
        res.capture[op_name] = plan.capture_seconds
        res.params[f"{op_name} jit runner"] = plan.runner
        if cfg.breakdown:
            try:
                eager = op(op_name, lambda fn=fn, args=args: fn.fn(*args))
                res.breakdown[op_name] = plan_breakdown(
                    plan, args, cfg.reps, params.special_moduli,
                    {"eager": eager, "replay": lambda fn=fn, args=args: fn(*args)})
            except ren.RenError as e:  # e.g. a plan without a graph runner
                res.notes.append(f"{name}: no breakdown of {op_name}: {e}")
    if cfg.profile:
        res.notes.append(profile(op("mul", lambda: mul(cx, cy))))
    res.record("decrypt", timed_op("decrypt", lambda: decrypt(cx), cfg.reps))
    if cfg.depth >= PROGRAM_DEPTH:
        # the programs: the transform is prepared once (its diagonals encoded), like Lattigo's;
        # its keys are made apart from the timed key generation
        m, v, tiled = program_inputs(cfg)
        lt = LinearTransform(params, m)
        with ren.random.seeded(cfg.seed):
            lev = Evaluator(params, relin_key=rlk,
                            rotation_keys=KeyGenerator(params, sk).rotation_keys(lt.rotation_steps))
        cv = encrypt(tiled)
        poly = res.record("poly", timed_op(
            "poly", op("poly", lambda: ev.evaluate_polynomial(cx, POLY)), cfg.reps))
        lin = res.record("lintrans", timed_op(
            "lintrans", op("lintrans", lambda: lev.linear_transform(cv, lt)), cfg.reps))
        res.precision["poly"] = bits(np.abs(decrypt(poly) - poly_value(x)).max())
        res.precision["lintrans"] = bits(np.abs(decrypt(lin)[:MATRIX_N] - m @ v).max())
        res.params["lintrans"] = (f"{MATRIX_N}x{MATRIX_N}, BSGS n1={lt.baby_steps}, "
                                  f"{len(lt.rotation_steps)} keys")
    res.precision["encrypt"] = bits(np.abs(decrypt(cx) - x).max())
    res.precision["mul"] = bits(np.abs(decrypt(prod) - x * y).max())
    res.precision["rotate"] = bits(np.abs(decrypt(rot) - np.roll(x, -1)).max())
    res.precision["mul jit"] = bits(np.abs(decrypt(replayed["mul"]) - x * y).max())
    res.precision["rotate jit"] = bits(np.abs(decrypt(replayed["rotate"]) - np.roll(x, -1)).max())
    return res


FOOTER = """\
encrypt = encode + encrypt; decrypt = decrypt + decode; keygen = sk, pk, relin, one rotation key.
mul jit / rotate jit: Ren's replay of a ren.jit plan captured on the first call (Ren only).
poly: a degree-7 polynomial (sigmoid's Taylor terms, power basis) of a ciphertext; lintrans: a
dense 64x64 matrix times a vector repeated over the slots (Ren: LinearTransform, baby-step
giant-step, hoisted; SEAL: TenSEAL's CKKSVector.matmul; DESILO has no matrix-vector product).
"ms / bits": the median time and the precision of the same op's result (-log2 of the max abs
error against NumPy, inputs uniform in [-1, 1]); encrypt's is a fresh encryption decrypted, which
shows the scale a library really encodes at.  "Nx ±b (peer)": Ren's time over the fastest
matched peer's, and Ren's precision minus that peer's (negative: Ren is noisier; "!" past a bit).
DESILO encodes at its own, larger scale (its "fresh" bits), so its precision is not a target a
40-bit scale can meet; SEAL runs Ren's scale and chain.
Wall times on a shared machine are noisy; CPU time (all threads of the process) is steadier, and
would exceed wall time if a library used more than one thread."""

RUNNERS: dict[str, Callable[[Config], Result]] = {"ren": run_ren, "seal": run_seal,
                                                    "desilo": run_desilo}


# ---------------------------------------------------------------- report

def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.1f}"
    return str(v)


def _ms(v: float, width: int = 12) -> str:
    return ("-" if math.isnan(v) else f"{v:.2f}").rjust(width)


def param_table(results: list[Result]) -> str:
    rows = [("N", "N"), ("depth", "depth"), ("scale bits", "scale_bits"),
            ("log2 Q", "log2_Q"), ("log2 QP", "log2_QP"), ("key switching", "key_switching"),
            ("key-switch noise", "key_switching_noise"),
            ("ciphertext bytes", "ct_bytes"), ("device", "device"), ("version", "version")]
    width = max(18, *(len(_fmt(r.params.get(k, "-"))) + 2 for r in results for _, k in rows))
    head = "parameter".ljust(18) + "".join(r.name.rjust(width) for r in results)
    lines = [head, "-" * len(head)]
    for label, key in rows:
        lines.append(label.ljust(18) + "".join(_fmt(r.params.get(key, "-")).rjust(width)
                                               for r in results))
    lines.append("128-bit bound".ljust(18) + "".join(
        _fmt(HE_STD_128.get(r.params["N"], "-")).rjust(width) for r in results))
    return "\n".join(lines)


#: A Ren result noisier than the peer it is compared with by more than this many bits is marked.
NOISIER_BITS = 1.0


def _cell(r: Result, op_name: str, cpu: bool = False) -> str:
    """'ms / bits' (the median time, the precision of the op's result), 'ms' for an op without
    a precision (keygen, add, decrypt), '-' for one that did not run."""
    ms = r.median_ms(op_name, cpu)
    if math.isnan(ms):
        return "-"
    if op_name not in r.precision:
        return f"{ms:.2f}"
    return f"{ms:.2f} / {r.precision[op_name]:.1f}"


def _versus(ren: Result, ren_op: str, peer: Result, peer_op: str, ratio: float,
            digits: int = 1) -> str:
    """'Nx' and, where both have a precision for the op, Ren's bits minus the peer's, marked '!'
    when Ren is noisier by more than NOISIER_BITS."""
    mine, theirs = ren.precision.get(ren_op), peer.precision.get(peer_op)
    if mine is None or theirs is None or math.isinf(mine) or math.isinf(theirs):
        return f"{ratio:.{digits}f}x"
    diff = mine - theirs
    return f"{ratio:.{digits}f}x {diff:+.1f} b" + ("!" if diff < -NOISIER_BITS else "")


def time_table(results: list[Result], cpu: bool = False) -> str:
    """Per op, 'median ms / precision bits' (or process-CPU ms) of each library, and each Ren
    over the fastest matched peer (a replayed op over the peer's op) with Ren's precision minus
    that peer's: a faster but noisier Ren shows it in the same cell."""
    peers = [r for r in results if r.lib != "ren" and r.matched]
    rens = [r for r in results if r.lib == "ren"]
    cols = [r.name + ("" if r.matched else "*") for r in results]
    # each wide enough for "12.3x -10.5 b! (desilo)" after two spaces
    labels = [f"{r.name}/fastest peer".rjust(25) for r in rens] if rens and peers else []
    title = "median CPU ms / bits" if cpu else "median ms / bits"
    width = 17
    head = title.ljust(22) + "".join(c.rjust(width) for c in cols) + "".join(labels)
    lines = [head, "-" * len(head)]
    ops = OPS + tuple(o for o in (*PROGRAM_OPS, *JIT_OPS) if any(o in r.times for r in results))
    noisier = False
    for op_name in ops:
        line = op_name.ljust(22) + "".join(_cell(r, op_name, cpu).rjust(width) for r in results)
        base = op_name.removesuffix(" jit")
        have = [r for r in peers if not math.isnan(r.median_ms(base, cpu))]
        if labels and have:
            best = min(have, key=lambda r: r.median_ms(base, cpu))
            for r, label in zip(rens, labels):
                ratio = r.median_ms(op_name, cpu) / best.median_ms(base, cpu)
                cell = ("-" if math.isnan(ratio) else
                        _versus(r, op_name, best, base, ratio) + f" ({best.lib})")
                noisier |= "!" in cell
                line += cell.rjust(len(label))
        lines.append(line)
    lines.append("(ms / bits: time / precision of the result; Nx ±b: Ren's time and bits "
                 "against the peer's)")
    if noisier:
        lines.append(f"! Ren's result is more than {NOISIER_BITS:g} bit noisier than the "
                     "peer's: that ratio compares unequal precision")
    return "\n".join(lines)


def summary_table(by_n: dict[int, list[Result]]) -> str:
    """Every N at once: mul and rotate, 'ms / bits' per Ren device (eager, JIT) and peer, and
    Ren cpu JIT over SEAL (the last Ren device's JIT when cpu did not run)."""
    devices = [d for d in DEVICES if any(r.device == d for rs in by_n.values() for r in rs)]
    cols: list[tuple[str, str, str | None, str]] = []  # (label, lib, device, op suffix)
    for d in devices:
        cols += [(f"ren {d} eager", "ren", d, ""), (f"ren {d} jit", "ren", d, " jit")]
    cols += [(lib, lib, None, "") for lib in LIBS[1:]
             if any(r.lib == lib for rs in by_n.values() for r in rs)]
    ratio_dev = "cpu" if "cpu" in devices else (devices[-1] if devices else None)
    ratio_label = f"ren {ratio_dev} jit / seal" if ratio_dev else ""
    width = 17
    head = "summary: ms / bits".ljust(20) + "".join(c[0].rjust(width) for c in cols)
    head += f"  {ratio_label}" if ratio_label else ""
    lines = [head, "-" * len(head)]
    for n, results in by_n.items():
        for op_name in ("mul", "rotate"):
            line = f"N=2^{n.bit_length() - 1} {op_name}".ljust(20)
            for _, lib, dev, suffix in cols:
                r = next((r for r in results if r.lib == lib and r.device == dev), None)
                if r is None or op_name + suffix not in r.times:
                    line += "-".rjust(width)
                    continue
                bits_ = r.precision.get(op_name + suffix, math.nan)
                mark = "" if r.matched else "*"
                line += f"{r.median_ms(op_name + suffix):.2f} / {bits_:.1f}{mark}".rjust(width)
            if ratio_label:
                ren_r = next((r for r in results if r.lib == "ren" and r.device == ratio_dev),
                             None)
                seal = next((r for r in results if r.lib == "seal"), None)
                if ren_r is None or seal is None:
                    cell = "-"
                else:
                    ratio = ren_r.median_ms(f"{op_name} jit") / seal.median_ms(op_name)
                    cell = ("-" if math.isnan(ratio) else
                            _versus(ren_r, f"{op_name} jit", seal, op_name, ratio, 2))
                line += cell.rjust(len(ratio_label) + 2)
            lines.append(line)
    return "\n".join(lines)


def run(cfg: Config, libs: list[str], out: Callable[[str], None] = print,
        devices: tuple[str, ...] | None = None,
        threads: tuple[int, ...] | None = None, rounds: int = 1) -> list[Result]:
    """Every library of `libs` on `cfg`; Ren once per device of `devices` (default: cfg's),
    and on "cpu" once per thread count of `threads` (default: REN_CPU_THREADS as set).  With
    `rounds` > 1 the thread counts run that many times in turn (1, 2, 1, 2, ...), each round's
    samples pooled with the earlier ones': a load that comes and goes on a shared machine then
    falls on every thread count alike, not on whichever ran during it."""
    results: list[Result] = []
    for lib in libs:
        for device in (devices or (cfg.device,)) if lib == "ren" else (cfg.device,):
            counts: tuple[int | None, ...] = (threads or (None,)) \
                if lib == "ren" and device == "cpu" else (None,)
            for t in counts * (rounds if threads and counts == threads else 1):
                try:
                    merge_round(results, RUNNERS[lib](dataclasses.replace(cfg, device=device,
                                                                          threads=t)))
                except Skipped as e:
                    out(f"note: skipped {e}")
    return results


def _load() -> str:
    try:
        return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "load average unknown"


def _ren_path() -> str:
    try:
        import ren
    except ImportError:
        return "nowhere (not importable)"
    return os.path.dirname(os.path.dirname(os.path.abspath(ren.__file__)))


def _csv(text: str) -> list[str]:
    return [s.strip() for s in text.split(",") if s.strip()]


def main(argv: list[str] | None = None) -> dict[int, list[Result]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7, help="timed repetitions per op (median)")
    ap.add_argument("--keygen-reps", type=int, default=3)
    ap.add_argument("--only", default=",".join(LIBS), help="comma list of ren,seal,desilo")
    ap.add_argument("--device", default="python",
                    help="Ren's devices, comma list of python,cpu (default python)")
    ap.add_argument("--sizes", default=None,
                    help="comma list of log2 N run one after the other, e.g. 14,16 (default 14)")
    ap.add_argument("--big", action="store_true", help="N = 2^16 (--sizes 16)")
    ap.add_argument("--depth", type=int, default=None,
                    help="multiplicative depth (default 7; 20 at N = 2^16)")
    ap.add_argument("--scale-bits", type=int, default=None,
                    help="scale bits (default 40; 47 at N = 2^16, the least Ren's chain takes "
                         "for depth 20)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--breakdown", action="store_true",
                    help="time Ren's mul and rotate kernels by category (JIT plan profiles)")
    ap.add_argument("--profile", action="store_true",
                    help="also cProfile one Ren mul+relin+rescale")
    ap.add_argument("--threads", default=None,
                    help="Ren cpu: comma list of REN_CPU_THREADS values run one after the other, "
                         "e.g. 1,2 (default: REN_CPU_THREADS, else 1)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="with --threads: run the thread counts this many times in turn "
                         "(1,2,1,2,...) and pool the samples, so that a passing load on a "
                         "shared machine falls on each count alike (default 1)")
    ap.add_argument("--key-switching", default="fast", choices=("fast", "seal", "unbounded"),
                    help="Ren's key-switching shape: the cheapest secure one by its cost model "
                         "that adds no more noise than a rescale (CKKSParams."
                         "fastest_key_switching, default), SEAL's (dnum = depth + 1, a 60-bit "
                         "P) or the cheapest whatever its noise (max_noise_bits=None)")
    ap.add_argument("--insecure", action="store_true", help=argparse.SUPPRESS)  # smoke tests
    args = ap.parse_args(argv)
    libs = _csv(args.only)
    unknown = sorted(set(libs) - set(LIBS))
    if unknown:
        ap.error(f"--only: unknown {', '.join(unknown)}; choose from {', '.join(LIBS)}")
    devices = tuple(_csv(args.device))
    unknown = sorted(set(devices) - set(DEVICES))
    if unknown or not devices:
        ap.error(f"--device: unknown {', '.join(unknown) or '(none given)'}; choose from "
                 f"{', '.join(DEVICES)}")
    if args.sizes is not None and args.big:
        ap.error("--big is --sizes 16: give one of them")
    try:
        sizes = [int(s) for s in _csv(args.sizes or ("16" if args.big else "14"))]
    except ValueError:
        ap.error(f"--sizes: expected log2 N values such as 14,16, got {args.sizes!r}")
    if not sizes or any(not 10 <= s <= 17 for s in sizes):
        ap.error(f"--sizes: log2 N must lie in 10..17, got {args.sizes!r}")
    threads: tuple[int, ...] | None = None
    if args.threads is not None:
        try:
            threads = tuple(int(s) for s in _csv(args.threads))
        except ValueError:
            ap.error(f"--threads: expected thread counts such as 1,2, got {args.threads!r}")
        if not threads or any(not 1 <= t <= 256 for t in threads):
            ap.error(f"--threads: thread counts must lie in 1..256 (REN_CPU_THREADS's range), "
                     f"got {args.threads!r}")
    if args.rounds < 1:
        ap.error(f"--rounds: expected a count >= 1, got {args.rounds}")
    if args.rounds > 1 and (threads is None or len(threads) < 2):
        ap.error("--rounds alternates thread counts: give --threads with two or more, e.g. "
                 "--threads 1,2 --rounds 3")
    by_n: dict[int, list[Result]] = {}
    for log_n in sizes:
        depth, scale_bits = SIZE_DEFAULTS.get(log_n, (DEFAULT_DEPTH, DEFAULT_SCALE_BITS))
        cfg = Config(n=1 << log_n, depth=args.depth if args.depth is not None else depth,
                     scale_bits=args.scale_bits if args.scale_bits is not None else scale_bits,
                     reps=args.reps, keygen_reps=args.keygen_reps, seed=args.seed,
                     profile=args.profile, breakdown=args.breakdown, insecure=args.insecure,
                     device=devices[0], key_switching=args.key_switching)
        thr = ("one thread" if threads is None else
               f"Ren cpu at {','.join(map(str, threads))} threads"
               + (f" in {args.rounds} alternating rounds" if args.rounds > 1 else "")
               + ", peers on one")
        print(f"CKKS, N = 2^{log_n}, depth {cfg.depth}, {cfg.scale_bits}-bit scale, {thr}, "
              f"{cfg.reps} reps (keygen {cfg.keygen_reps}); Ren devices {', '.join(devices)}; "
              f"Python {sys.version.split()[0]}, NumPy {np.__version__}; {_load()}")
        print(f"Ren from {_ren_path()}")
        with warnings.catch_warnings():
            if args.insecure:  # the smoke tests' tiny rings are insecure on purpose
                warnings.simplefilter("ignore")
            results = run(cfg, libs, devices=devices, threads=threads, rounds=args.rounds)
        if not results:
            print("nothing ran")
            continue
        by_n[cfg.n] = results
        print()
        print(param_table(results))
        print()
        print(time_table(results))
        print()
        print(time_table(results, cpu=True))
        if threads is not None and len(threads) > 1 and thread_table(threads):
            print()
            print(thread_table(threads))
        if threads is not None and preempted_table(threads):
            print()
            print(preempted_table(threads))
        THREAD_CPU.clear()
        PREEMPTED.clear()
        for r in results:
            if r.stages:
                print()
                print(stage_table(r))
        table = breakdown_table(results, cfg.n)
        if table:
            print()
            print(table)
        for r in results:
            for note in r.notes:
                print("note:", note)
        if any(not r.matched for r in results):
            print("* unmatched parameters: left out of the ratios")
        print()
    if by_n:
        print(summary_table(by_n))
        print(f"(* unmatched parameters; {_load()})")
        print(FOOTER)
    return by_n


if __name__ == "__main__":
    main()
