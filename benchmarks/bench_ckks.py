"""CKKS side by side, one thread: Ren (NumPy backend), SEAL (tenseal.sealapi), DESILO (CPU).

All three run at the same ring degree N (2^14; 2^16 with --big), the same multiplicative depth and a
40-bit scale, at 128-bit classical security (Homomorphic Encryption Standard table, ternary
secret), each on one thread.  For each library it prints the parameters actually used, then the
median wall time (ms) of:

  keygen    secret + public + relinearization + one rotation key (step 1)
  encrypt   encode + public-key encryption of N/2 real slots
  add       ciphertext + ciphertext
  mul       ciphertext × ciphertext, relinearize, rescale (DESILO's multiply does all three)
  rotate    rotate slots left by 1
  decrypt   decryption + decoding

and the precision, in bits (−log2 of the max abs error against NumPy, inputs uniform in [-1, 1]),
of mul and of rotate (and of a fresh encryption, which shows the scale really used); then Ren's
time over the fastest matched peer's, per op.

Matching: SEAL gets the modulus chain [first_bits] + [scale_bits]·depth + [special_bits], i.e. one
special prime and a decomposition into the depth + 1 ciphertext primes; Ren gets the same log2 Q
(its limbs are < 2^31, so each 40-bit level is two primes and the first modulus two 30-bit
primes), a 60-bit P (two 30-bit special primes) and dnum = depth + 1 digits, which is SEAL's
key-switching shape.  DESILO exposes only max_level: it picks N and its modulus chain itself (it
is not visible through its API), so the table shows its N, its depth and its ciphertext size, and
marks it unmatched (and leaves it out of the ratios) when its N differs from the others'.

The peers are an optional extra: `pip install -e ".[bench]"`; a missing one is skipped with a note.

Ren's section also shows where its time goes (building the graph, then the realization's
schedule / plan / lower / run stages); --profile adds a cProfile of one Ren multiply.

Run:  python benchmarks/bench_ckks.py [--reps 7] [--only ren,seal,desilo] [--big] [--depth 7]
                                      [--profile]
"""

from __future__ import annotations

import os

# One thread everywhere: the OpenMP/BLAS pools read these when the libraries load, so they are set
# before anything (numpy included) is imported.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

OPS = ("keygen", "encrypt", "add", "mul", "rotate", "decrypt")
LIBS = ("ren", "seal", "desilo")
# Homomorphic Encryption Standard, 128-bit classical, ternary secret: max log2(QP) per N.
HE_STD_128 = {1 << 10: 27, 1 << 11: 54, 1 << 12: 109, 1 << 13: 218, 1 << 14: 438,
              1 << 15: 881, 1 << 16: 1772}


class Skipped(Exception):
    """A library cannot run here (not installed, or it refused the parameters): print and go on."""


@dataclasses.dataclass(frozen=True)
class Config:
    n: int = 1 << 14
    depth: int = 7
    scale_bits: int = 40
    first_bits: int = 60
    special_bits: int = 60
    reps: int = 7
    keygen_reps: int = 3
    seed: int = 0
    insecure: bool = False  # only the smoke tests use tiny, insecure rings
    profile: bool = False  # cProfile one Ren mul+relin+rescale


@dataclasses.dataclass
class Result:
    lib: str
    params: dict[str, Any]
    times: dict[str, list[float]] = dataclasses.field(default_factory=dict)  # wall seconds
    cpu: dict[str, list[float]] = dataclasses.field(default_factory=dict)  # process CPU seconds
    precision: dict[str, float] = dataclasses.field(default_factory=dict)  # bits
    matched: bool = True
    notes: list[str] = dataclasses.field(default_factory=list)
    # Ren only: op -> stage -> seconds of the last timed run (graph build, then the realization's
    # schedule / plan / lower / run) and its kernel count.
    stages: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)

    def median_ms(self, op: str, cpu: bool = False) -> float:
        samples = (self.cpu if cpu else self.times).get(op)
        return statistics.median(samples) * 1e3 if samples else math.nan

    def record(self, op: str, timing: tuple[tuple[list[float], list[float]], Any]) -> Any:
        """Keep the samples of `timed(...)` under op; return the op's result."""
        (self.times[op], self.cpu[op]), out = timing
        return out


def bits(err: float) -> float:
    """Precision in bits: −log2 of the max abs error (inf when exact)."""
    return math.inf if err == 0 else -math.log2(err)


def inputs(cfg: Config) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(cfg.seed)
    slots = cfg.n // 2
    return rng.uniform(-1, 1, slots), rng.uniform(-1, 1, slots)


def timed(fn: Callable[[], Any], reps: int) -> tuple[tuple[list[float], list[float]], Any]:
    """Run fn once to warm up, then `reps` times: ((wall s, process CPU s) per run, last result).

    CPU time counts every thread of the process, so it also shows a library that does not keep
    to one thread (CPU > wall), and it is less disturbed than wall time by other load.
    """
    out = fn()
    wall, cpu = [], []
    for _ in range(reps):
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return (wall, cpu), out


def check_security(lib: str, n: int, log2_qp: float, insecure: bool) -> None:
    limit = HE_STD_128.get(n)
    if insecure:
        return
    if limit is None or log2_qp > limit:
        raise Skipped(f"{lib}: log2(QP) = {log2_qp:.1f} exceeds the 128-bit bound "
                      f"{limit} for N = {n}; lower --depth")


# ---------------------------------------------------------------- SEAL (through tenseal.sealapi)

def run_seal(cfg: Config) -> Result:
    try:
        import tenseal
        import tenseal.sealapi as seal
    except ImportError as e:
        raise Skipped("seal: tenseal is not installed (pip install -e \".[bench]\")") from e
    n, slots = cfg.n, cfg.n // 2
    bit_sizes = [cfg.first_bits] + [cfg.scale_bits] * cfg.depth + [cfg.special_bits]
    parms = seal.EncryptionParameters(seal.SCHEME_TYPE.CKKS)
    parms.set_poly_modulus_degree(n)
    parms.set_coeff_modulus(seal.CoeffModulus.Create(n, bit_sizes))
    # SEAL's own 128-bit check knows N <= 2^15 only (MaxBitCount is 0 above); check_security below
    # applies the same HE-standard table, 2^16 included.
    tc128 = seal.SEC_LEVEL_TYPE.TC128
    known = seal.CoeffModulus.MaxBitCount(n, tc128) > 0
    level = tc128 if known and not cfg.insecure else seal.SEC_LEVEL_TYPE.NONE
    ctx = seal.SEALContext(parms, True, level)
    if not ctx.parameters_set():
        raise Skipped(f"seal: refused the parameters: {ctx.parameters_error_message()}")
    moduli = [m.value() for m in ctx.key_context_data().parms().coeff_modulus()]
    log2_q = sum(math.log2(q) for q in moduli[:-1])
    log2_qp = log2_q + math.log2(moduli[-1])
    check_security("seal", n, log2_qp, cfg.insecure)
    scale = 2.0 ** cfg.scale_bits
    res = Result("seal", {
        "version": tenseal.__version__, "N": n, "depth": cfg.depth, "scale_bits": cfg.scale_bits,
        "log2_Q": log2_q, "log2_QP": log2_qp,
        "key_switching": f"P: 1 prime, dnum = {cfg.depth + 1}"})

    def keygen() -> tuple[Any, ...]:
        kg = seal.KeyGenerator(ctx)
        pk, rlk, gk = seal.PublicKey(), seal.RelinKeys(), seal.GaloisKeys()
        kg.create_public_key(pk)
        kg.create_relin_keys(rlk)
        # This overload takes Galois elements: rotation by +1 is 3, SEAL's slot generator.
        kg.create_galois_keys([3], gk)
        return kg.secret_key(), pk, rlk, gk

    sk, pk, rlk, gk = res.record("keygen", timed(keygen, cfg.keygen_reps))
    encoder, encryptor = seal.CKKSEncoder(ctx), seal.Encryptor(ctx, pk)
    decryptor, ev = seal.Decryptor(ctx, sk), seal.Evaluator(ctx)
    x, y = inputs(cfg)
    assert encoder.slot_count() == slots

    def encrypt(v: np.ndarray) -> Any:
        pt, ct = seal.Plaintext(), seal.Ciphertext()
        encoder.encode(v.tolist(), scale, pt)
        encryptor.encrypt(pt, ct)
        return ct

    def decrypt(ct: Any) -> np.ndarray:
        pt = seal.Plaintext()
        decryptor.decrypt(ct, pt)
        return np.asarray(encoder.decode_double(pt))

    def add() -> Any:
        out = seal.Ciphertext()
        ev.add(cx, cy, out)
        return out

    def mul() -> Any:
        out = seal.Ciphertext()
        ev.multiply(cx, cy, out)
        ev.relinearize_inplace(out, rlk)
        ev.rescale_to_next_inplace(out)
        return out

    def rotate() -> Any:
        out = seal.Ciphertext()
        ev.rotate_vector(cx, 1, gk, out)
        return out

    cx = res.record("encrypt", timed(lambda: encrypt(x), cfg.reps))
    cy = encrypt(y)
    res.params["ct_bytes"] = 2 * n * cx.coeff_modulus_size() * 8
    res.record("add", timed(add, cfg.reps))
    prod = res.record("mul", timed(mul, cfg.reps))
    rot = res.record("rotate", timed(rotate, cfg.reps))
    res.record("decrypt", timed(lambda: decrypt(cx), cfg.reps))
    res.precision["encrypt"] = bits(np.abs(decrypt(cx) - x).max())
    res.precision["mul"] = bits(np.abs(decrypt(prod) - x * y).max())
    res.precision["rotate"] = bits(np.abs(decrypt(rot) - np.roll(x, -1)).max())
    return res


# ---------------------------------------------------------------- DESILO (desilofhe, CPU mode)

def run_desilo(cfg: Config) -> Result:
    try:
        from importlib.metadata import version

        import desilofhe
    except ImportError as e:
        raise Skipped("desilo: desilofhe is not installed (pip install -e \".[bench]\")") from e
    try:
        # max_level is DESILO's depth; it derives N and the modulus chain from it.
        engine = desilofhe.Engine(max_level=cfg.depth, mode="cpu", thread_count=1)
    except Exception as e:  # its errors are plain RuntimeError/ValueError with a message
        raise Skipped(f"desilo: refused max_level={cfg.depth}: {e}") from e
    n = 2 * engine.slot_count
    res = Result("desilo", {
        "version": version("desilofhe"), "N": n, "depth": engine.max_level,
        "scale_bits": "library's", "log2_Q": "not exposed", "log2_QP": "not exposed",
        "key_switching": "library's"})
    if n != cfg.n:
        res.matched = False
        res.notes.append(f"desilo: max_level={cfg.depth} gives N = {n}, not {cfg.n}: unmatched, "
                         "left out of the ratios (its N is 2^14 for depth 3..7, 2^16 for 18..36)")
    cfg_d = dataclasses.replace(cfg, n=n)

    def keygen() -> tuple[Any, ...]:
        sk = engine.create_secret_key()
        return (sk, engine.create_public_key(sk), engine.create_relinearization_key(sk),
                engine.create_fixed_rotation_key(sk, 1))

    sk, pk, rlk, rotk = res.record("keygen", timed(keygen, cfg.keygen_reps))
    x, y = inputs(cfg_d)

    def rotate() -> Any:
        return engine.rotate(cx, rotk)

    cx = res.record("encrypt", timed(lambda: engine.encrypt(x, pk), cfg.reps))
    cy = engine.encrypt(y, pk)
    res.params["ct_bytes"] = getattr(cx, "nbytes", "?")
    res.record("add", timed(lambda: engine.add(cx, cy), cfg.reps))
    # DESILO's multiply relinearizes and rescales (the level drops by one).
    prod = res.record("mul", timed(lambda: engine.multiply(cx, cy, rlk), cfg.reps))
    assert prod.level == cx.level - 1, "desilo multiply did not rescale"
    rot = res.record("rotate", timed(rotate, cfg.reps))
    res.record("decrypt", timed(lambda: engine.decrypt(cx, sk), cfg.reps))
    res.precision["encrypt"] = bits(np.abs(np.asarray(engine.decrypt(cx, sk)) - x).max())
    res.precision["mul"] = bits(np.abs(np.asarray(engine.decrypt(prod, sk)) - x * y).max())
    res.precision["rotate"] = bits(np.abs(np.asarray(engine.decrypt(rot, sk))
                                          - np.roll(x, -1)).max())
    return res


# ---------------------------------------------------------------- Ren (NumPy backend)

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
    """Where Ren's time goes, per op: building the graph, then each stage of realizing it."""
    names = ("build graph", "schedule", "plan", "lower", "run")
    head = "ren, last run (ms)".ljust(20) + "".join(n.rjust(13) for n in names) + "  kernels"
    lines = [head, "-" * len(head)]
    for op_name, st in res.stages.items():
        lines.append(op_name.ljust(20) + "".join(f"{st[n] * 1e3:13.2f}" for n in names)
                     + f"  {int(st['kernels']):7d}")
    return "\n".join(lines)


def _param(params: Any, *names: str) -> Any:
    for name in names:
        value = getattr(params, name, None)
        if value is not None:
            return value() if callable(value) else value
    return None


def run_ren(cfg: Config) -> Result:
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
        )
    except ImportError as e:
        raise Skipped(f"ren: ren.ckks is not available in this checkout ({e})") from e
    try:
        # P of about special_bits (30-bit special primes) and dnum = depth + 1: SEAL's shape.
        params = CKKSParams(N=cfg.n, depth=cfg.depth, scale_bits=cfg.scale_bits,
                            first_bits=cfg.first_bits,
                            special_primes=max(1, round(cfg.special_bits / 30)),
                            dnum=cfg.depth + 1, insecure=cfg.insecure)
    except ren.RenError as e:
        raise Skipped(f"ren: refused the parameters: {e}") from e
    log2_q = _param(params, "log2_q", "log2_Q", "log_q")
    log2_qp = _param(params, "log2_qp", "log2_QP", "log_qp")
    res = Result("ren", {
        "version": getattr(ren, "__version__", "worktree"), "N": cfg.n, "depth": cfg.depth,
        "scale_bits": cfg.scale_bits,
        "log2_Q": log2_q if log2_q is not None else "?",
        "log2_QP": log2_qp if log2_qp is not None else "?",
        "key_switching": f"P: {max(1, round(cfg.special_bits / 30))} primes, "
                         f"dnum = {cfg.depth + 1}"})
    if isinstance(log2_qp, int | float):
        check_security("ren", cfg.n, log2_qp, cfg.insecure)

    def keygen() -> tuple[Any, ...]:
        kg = KeyGenerator(params)
        keys = (kg.secret_key(), kg.public_key(), kg.relin_key(), kg.rotation_keys([1]))
        realize_all(keys)
        return keys

    sk, pk, rlk, gk = res.record("keygen", timed(keygen, cfg.keygen_reps))
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

    cx = res.record("encrypt", timed(lambda: encrypt(x), cfg.reps))
    cy = encrypt(y)
    res.params["ct_bytes"] = sum(p.numpy().nbytes for p in _polys(cx))
    # A lazy engine could share a result between identical graphs; every timed run below builds
    # its graph anew on realized inputs, and Poly.realize skips nothing that is not realized.
    res.record("add", timed(op("add", lambda: ev.add(cx, cy)), cfg.reps))
    prod = res.record("mul", timed(op("mul", lambda: ev.rescale(ev.multiply(cx, cy))), cfg.reps))
    rot = res.record("rotate", timed(op("rotate", lambda: ev.rotate(cx, 1)), cfg.reps))
    if cfg.profile:
        res.notes.append(profile(op("mul", lambda: ev.rescale(ev.multiply(cx, cy)))))
    res.record("decrypt", timed(lambda: decrypt(cx), cfg.reps))
    res.precision["encrypt"] = bits(np.abs(decrypt(cx) - x).max())
    res.precision["mul"] = bits(np.abs(decrypt(prod) - x * y).max())
    res.precision["rotate"] = bits(np.abs(decrypt(rot) - np.roll(x, -1)).max())
    return res


FOOTER = """\
encrypt = encode + encrypt; decrypt = decrypt + decode; keygen = sk, pk, relin, one rotation key.
Precision: -log2 of the max abs error against NumPy, inputs uniform in [-1, 1]; "fresh" is
encrypt then decrypt, which shows the scale a library really encodes at.
Wall times on a shared machine are noisy; CPU time (all threads of the process) is steadier, and
would exceed wall time if a library used more than one thread."""

RUNNERS: dict[str, Callable[[Config], Result]] = {"ren": run_ren, "seal": run_seal,
                                                    "desilo": run_desilo}


# ---------------------------------------------------------------- report

def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.1f}"
    return str(v)


def param_table(results: list[Result]) -> str:
    rows = [("N", "N"), ("depth", "depth"), ("scale bits", "scale_bits"),
            ("log2 Q", "log2_Q"), ("log2 QP", "log2_QP"), ("key switching", "key_switching"),
            ("ciphertext bytes", "ct_bytes"), ("version", "version")]
    width = max(18, *(len(_fmt(r.params.get(k, "-"))) + 2 for r in results for _, k in rows))
    head = "parameter".ljust(18) + "".join(r.lib.rjust(width) for r in results)
    lines = [head, "-" * len(head)]
    for label, key in rows:
        lines.append(label.ljust(18) + "".join(_fmt(r.params.get(key, "-")).rjust(width)
                                               for r in results))
    lines.append("128-bit bound".ljust(18) + "".join(
        _fmt(HE_STD_128.get(r.params["N"], "-")).rjust(width) for r in results))
    return "\n".join(lines)


def time_table(results: list[Result], cpu: bool = False) -> str:
    """Median wall ms per op (or process-CPU ms), Ren over the fastest matched peer, precision."""
    peers = [r for r in results if r.lib != "ren" and r.matched]
    ren = next((r for r in results if r.lib == "ren"), None)
    cols = [r.lib + ("" if r.matched else "*") for r in results]
    ratio = ren is not None and bool(peers)
    title = "median CPU ms" if cpu else "median ms"
    head = title.ljust(16) + "".join(c.rjust(12) for c in cols)
    head += "  ren/fastest peer" if ratio else ""
    lines = [head, "-" * len(head)]
    for op_name in OPS:
        line = op_name.ljust(16) + "".join(f"{r.median_ms(op_name, cpu):12.2f}" for r in results)
        if ratio:
            best = min(peers, key=lambda r: r.median_ms(op_name, cpu))
            line += (f"  {ren.median_ms(op_name, cpu) / best.median_ms(op_name, cpu):8.1f}x"
                     f" ({best.lib})")
        lines.append(line)
    if not cpu:
        for op_name in ("encrypt", "mul", "rotate"):
            label = "fresh" if op_name == "encrypt" else op_name
            lines.append(f"{label} precision".ljust(16) + "".join(
                f"{r.precision.get(op_name, math.nan):10.1f} b" for r in results))
    return "\n".join(lines)


def run(cfg: Config, libs: list[str], out: Callable[[str], None] = print) -> list[Result]:
    results = []
    for lib in libs:
        try:
            results.append(RUNNERS[lib](cfg))
        except Skipped as e:
            out(f"note: skipped {e}")
    return results


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7, help="timed repetitions per op (median)")
    ap.add_argument("--keygen-reps", type=int, default=3)
    ap.add_argument("--only", default=",".join(LIBS), help="comma list of ren,seal,desilo")
    ap.add_argument("--big", action="store_true", help="N = 2^16 (default depth 20)")
    ap.add_argument("--depth", type=int, default=None, help="multiplicative depth (default 7)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", action="store_true",
                    help="also cProfile one Ren mul+relin+rescale")
    args = ap.parse_args(argv)
    libs = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(libs) - set(LIBS))
    if unknown:
        ap.error(f"--only: unknown {', '.join(unknown)}; choose from {', '.join(LIBS)}")
    # DESILO puts max_level 18..36 on N = 2^16, so --big defaults to a depth inside that range.
    depth = args.depth if args.depth is not None else (20 if args.big else 7)
    cfg = Config(n=1 << (16 if args.big else 14), depth=depth, reps=args.reps,
                 keygen_reps=args.keygen_reps, seed=args.seed, profile=args.profile)
    print(f"CKKS, N = 2^{cfg.n.bit_length() - 1}, depth {cfg.depth}, {cfg.scale_bits}-bit scale, "
          f"one thread, {cfg.reps} reps (keygen {cfg.keygen_reps}); "
          f"Python {sys.version.split()[0]}, NumPy {np.__version__}")
    results = run(cfg, libs)
    if not results:
        print("nothing ran")
        return
    print()
    print(param_table(results))
    print()
    print(time_table(results))
    print()
    print(time_table(results, cpu=True))
    for r in results:
        if r.stages:
            print()
            print(stage_table(r))
    for r in results:
        for note in r.notes:
            print("note:", note)
    if any(not r.matched for r in results):
        print("* unmatched parameters: left out of the ratios")
    print(FOOTER)


if __name__ == "__main__":
    main()
