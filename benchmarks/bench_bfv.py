"""BFV side by side, one thread: Ren (ren.bfv, compiled "cpu" device by default) and SEAL's BFV
(tenseal.sealapi), at the same N, plaintext modulus t and ciphertext chain Q, in one run; Ren's
BGV (ren.bfv.BGVParams over the same primes) beside them when it is there.

Parameters: Ren's preset (--preset N13 | N14 | N15, default N14: t = 65537, twelve 30-bit primes
of Q and two special primes); SEAL gets the same Q primes and one special prime of the size of
Ren's P (SEAL keeps one; a 60-bit prime for two 30-bit ones), so both decompose a key switch into
one digit per prime of Q.  Ren's BGV gets the same primes as a BGV chain (two base primes, two
per level).  For each it prints the median wall time (ms) of:

  keygen       secret + public + relinearization key + the Galois keys of both rotations
  encrypt      batch encode + public-key encryption of N slots
  add          ciphertext + ciphertext
  mul          ciphertext × ciphertext and relinearization (BGV: and its modulus switch)
  rotate       rotate both rows left by one column (Ren: rotate_columns(1); SEAL: rotate_rows(1))
  rotate_rows  swap the two rows (Ren: rotate_rows; SEAL: rotate_columns)
  decrypt      decryption + decoding
  mul jit, rotate jit   Ren only: the op as a `ren.jit` function, captured on the first call,
               every timed call a replay (benchmarks/bench_ckks.py does the same)

then the noise budget (bits, SEAL's invariant noise budget; Ren's Decryptor.noise_budget) left
after each op and after a chain of 1..--chain products with relinearization, every result
checked against NumPy slot arithmetic mod t ("exact" column), and Ren's time over SEAL's (the
goal: mul and rotate at most 0.5x SEAL at N = 2^14 on one thread).  --breakdown times each kernel
of Ren's mul and rotate JIT plans by category (benchmarks/ckks_breakdown.py).

Run:  python benchmarks/bench_bfv.py [--preset N14] [--reps 5] [--device cpu|python]
                                     [--only ren,seal,bgv] [--chain 3] [--breakdown]

Wall times on a shared machine are noisy; CPU time is printed beside them.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("REN_CPU_THREADS", "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_HERE, os.path.dirname(_HERE)]

from bench_ckks import realize_all  # noqa: E402
from ckks_common import Result, Skipped, timed  # noqa: E402

OPS = ("keygen", "encrypt", "add", "mul", "rotate", "rotate_rows", "decrypt")
JIT_OPS = ("mul jit", "rotate jit")
LIBS = ("ren", "seal", "bgv")


@dataclasses.dataclass(frozen=True)
class Config:
    preset: str | None = "N14"  # Ren's BFV preset; None: n, t, chain_primes, special_primes
    n: int = 1 << 10
    t: int = 40961
    chain_primes: int = 4
    special_primes: int = 1
    reps: int = 5
    keygen_reps: int = 2
    chain: int = 3  # products in the budget chain
    seed: int = 0
    device: str = "cpu"
    insecure: bool = False  # the smoke test's tiny ring
    breakdown: bool = False


def bfv_params(cfg: Config, device: str = "python") -> Any:
    from ren.bfv import BFVParams

    if cfg.preset is not None:
        return BFVParams.preset(cfg.preset, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return BFVParams.generate(cfg.n, cfg.t, cfg.chain_primes, cfg.special_primes,
                                  insecure=cfg.insecure, device=device)


def inputs(cfg: Config, n: int, t: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(cfg.seed)
    return rng.integers(0, t, n), rng.integers(0, t, n)


def expected(x: np.ndarray, y: np.ndarray, t: int, k: int = 1) -> dict[str, np.ndarray]:
    """NumPy slot results mod t of each op (rows of N/2 columns)."""
    half = len(x) // 2
    rows = x.reshape(2, half)
    out = {"encrypt": x, "add": (x + y) % t, "mul": x * y % t,
           "rotate": np.roll(rows, -1, axis=1).reshape(-1),
           "rotate_rows": rows[::-1].reshape(-1)}
    c = x.copy()
    for i in range(1, k + 1):
        c = c * y % t
        out[f"multiply x{i}"] = c
    return out


# ---------------------------------------------------------------- Ren (BFV, and BGV beside it)

def _device(cfg: Config) -> str:
    if cfg.device not in ("python", "cpu"):
        raise Skipped(f"ren: unknown device {cfg.device!r}; choose python or cpu")
    if cfg.device == "cpu":
        import ren
        from ren.backend import cpu

        try:
            cpu.cpu_flags()  # DeviceError without a C compiler
        except ren.RenError as e:
            raise Skipped(f"ren-cpu: {e}") from e
    return cfg.device


def run_ren(cfg: Config, scheme: str = "bfv") -> Result:
    """Ren's BFV (scheme "bfv") or BGV ("bgv", the same primes as a BGV chain)."""
    import ren
    import ren.bfv as rb
    from ren.rlwe import KeyGenerator

    device = _device(cfg)
    bfv = bfv_params(cfg, device)
    if scheme == "bgv":
        if not hasattr(rb, "BGVParams"):
            raise Skipped("bgv: ren.bfv has no BGV in this checkout")
        L = len(bfv.chain)
        base = 2 if L % 2 == 0 else 1
        params = rb.BGVParams(bfv.N, bfv.t, bfv.chain, bfv.special_moduli,
                              levels=list(range(base, L + 1, 2)), insecure=cfg.insecure,
                              device=device)
        Enc, Dec, Ev = rb.BGVEncryptor, rb.BGVDecryptor, rb.BGVEvaluator
    else:
        params = bfv
        Enc, Dec, Ev = rb.Encryptor, rb.Decryptor, rb.Evaluator
    res = Result(f"ren-{scheme}", {
        "N": params.N, "t": params.t, "log2_Q": params.log2_Q, "log2_QP": params.log2_QP,
        "key_switching": f"P: {len(params.special_moduli)} primes, dnum = {params.dnum}",
        "device": f"{device}, {ren.settings.get('REN_CPU_THREADS')} thr"
        if device == "cpu" else device}, device=device)
    if scheme == "bfv":
        res.params["aux basis"] = f"B: {len(params.aux_moduli)} primes + m_sk + m~"
    else:
        res.params["levels"] = f"{params.depth + 1} ({params.level_limbs[0]} base primes, +2 each)"
    n, t = params.N, params.t

    def realize(obj: Any) -> Any:
        realize_all(obj)  # Ren's ops only build graphs: force every Poly inside obj
        return obj

    def keygen() -> tuple[Any, ...]:
        kg = KeyGenerator(params)
        return realize((kg.secret_key(), kg.public_key(), kg.relin_key(),
                        rb.galois_keys(kg, [1])))

    with ren.random.seeded(cfg.seed):
        sk, pk, rk, gk = res.record("keygen", timed(keygen, cfg.keygen_reps))
    encoder, encryptor, decryptor = rb.Encoder(params), Enc(params, pk), Dec(params, sk)
    ev = Ev(params, rk, gk)
    x, y = inputs(cfg, n, t)

    def encrypt(v: np.ndarray) -> Any:
        return realize(encryptor.encrypt(encoder.encode(v)))

    def decrypt(ct: Any) -> np.ndarray:
        return np.asarray(encoder.decode(decryptor.decrypt(ct)))

    def mul(a: Any, b: Any) -> Any:
        return ev.multiply(a, b)

    def rotate(a: Any) -> Any:
        return ev.rotate_columns(a, 1)

    cx = res.record("encrypt", timed(lambda: encrypt(x), cfg.reps))
    cy = encrypt(y)
    outs = {"encrypt": cx,
            "add": res.record("add", timed(lambda: realize(ev.add(cx, cy)), cfg.reps)),
            "mul": res.record("mul", timed(lambda: realize(mul(cx, cy)), cfg.reps)),
            "rotate": res.record("rotate", timed(lambda: realize(rotate(cx)), cfg.reps)),
            "rotate_rows": res.record("rotate_rows",
                                      timed(lambda: realize(ev.rotate_rows(cx)), cfg.reps))}
    jitted = {"mul": (ren.jit(mul), (cx, cy)), "rotate": (ren.jit(rotate), (cx,))}
    for name, (fn, args) in jitted.items():
        out = res.record(f"{name} jit", timed(lambda fn=fn, args=args: fn(*args), cfg.reps))
        if fn.misses != 1 or fn.hits != cfg.reps:
            raise AssertionError(f"ren {name} jit: {fn.misses} captures, {fn.hits} replays")
        (plan,) = fn.plans
        res.capture[name] = plan.capture_seconds
        outs[f"{name} jit"] = out
        if cfg.breakdown:
            from ckks_breakdown import plan_breakdown

            res.breakdown[name] = plan_breakdown(
                plan, args, cfg.reps, params.special_moduli,
                {"eager": lambda fn=fn, args=args: realize(fn.fn(*args)),
                 "replay": lambda fn=fn, args=args: fn(*args)})
    res.record("decrypt", timed(lambda: decrypt(cx), cfg.reps))
    c = cx
    # BGV: as many products as its levels allow (each switches one level down)
    chain = cfg.chain if scheme == "bfv" else min(cfg.chain, params.depth)
    for i in range(1, chain + 1):
        c = mul(c, cy)
        outs[f"multiply x{i}"] = c
    _budgets(res, outs, decryptor.noise_budget, decrypt, expected(x, y, t, cfg.chain))
    return res


def _budgets(res: Result, outs: dict[str, Any], budget: Callable[[Any], int],
             decrypt: Callable[[Any], np.ndarray], want: dict[str, np.ndarray]) -> None:
    """res.precision[op] = the noise budget (bits) after op; res.params['exact'] lists any op
    whose decryption is not NumPy's result."""
    wrong = []
    for name, ct in outs.items():
        res.precision[name] = float(budget(ct))
        if not (decrypt(ct) == want[name.removesuffix(" jit")]).all():
            wrong.append(name)
    res.params["exact"] = "all" if not wrong else "WRONG: " + ", ".join(wrong)


# ---------------------------------------------------------------- SEAL (tenseal.sealapi)

def run_seal(cfg: Config) -> Result:
    try:
        import tenseal
        import tenseal.sealapi as seal
    except ImportError as e:
        raise Skipped("seal: tenseal is not installed (pip install -e \".[bench]\")") from e
    ren_params = bfv_params(cfg)
    n, t = ren_params.N, ren_params.t
    if len(ren_params.special_moduli) == 1:
        special = seal.Modulus(ren_params.special_moduli[0])
    else:  # one prime of the size of Ren's P (at most 60 bits), ≡ 1 mod 2N
        bits = min(60, round(ren_params.log2_P))
        special = seal.CoeffModulus.Create(n, [bits])[0]
    parms = seal.EncryptionParameters(seal.SCHEME_TYPE.BFV)
    parms.set_poly_modulus_degree(n)
    parms.set_coeff_modulus([seal.Modulus(q) for q in ren_params.chain] + [special])
    parms.set_plain_modulus(t)
    level = seal.SEC_LEVEL_TYPE.NONE if cfg.insecure else seal.SEC_LEVEL_TYPE.TC128
    ctx = seal.SEALContext(parms, True, level)
    if not ctx.parameters_set():
        raise Skipped(f"seal: refused the parameters: {ctx.parameters_error_message()}")
    res = Result("seal", {
        "version": tenseal.__version__, "N": n, "t": t, "log2_Q": ren_params.log2_Q,
        "log2_QP": ren_params.log2_Q + math.log2(special.value()),
        "key_switching": f"P: 1 prime ({special.bit_count()} bits), "
                         f"dnum = {len(ren_params.chain)}", "device": "cpu, 1 thr"})
    elements = [pow(3, 1, 2 * n), 2 * n - 1]

    def keygen() -> tuple[Any, ...]:
        kg = seal.KeyGenerator(ctx)
        pk, rk, gk = seal.PublicKey(), seal.RelinKeys(), seal.GaloisKeys()
        kg.create_public_key(pk)
        kg.create_relin_keys(rk)
        kg.create_galois_keys(elements, gk)
        return kg.secret_key(), pk, rk, gk

    sk, pk, rk, gk = res.record("keygen", timed(keygen, cfg.keygen_reps))
    be, enc = seal.BatchEncoder(ctx), seal.Encryptor(ctx, pk)
    dec, ev = seal.Decryptor(ctx, sk), seal.Evaluator(ctx)
    x, y = inputs(cfg, n, t)

    def encrypt(v: np.ndarray) -> Any:
        pt, ct = seal.Plaintext(), seal.Ciphertext()
        be.encode(v.tolist(), pt)
        enc.encrypt(pt, ct)
        return ct

    def decrypt(ct: Any) -> np.ndarray:
        pt = seal.Plaintext()
        dec.decrypt(ct, pt)
        return np.asarray(be.decode_uint64(pt), np.int64)

    def out(fn: Callable[..., Any], *args: Any) -> Callable[[], Any]:
        def run() -> Any:
            c = seal.Ciphertext()
            fn(*args, c)
            return c
        return run

    def mul(a: Any, b: Any) -> Any:
        c = seal.Ciphertext()
        ev.multiply(a, b, c)
        ev.relinearize_inplace(c, rk)
        return c

    cx = res.record("encrypt", timed(lambda: encrypt(x), cfg.reps))
    cy = encrypt(y)
    outs = {"encrypt": cx,
            "add": res.record("add", timed(out(ev.add, cx, cy), cfg.reps)),
            "mul": res.record("mul", timed(lambda: mul(cx, cy), cfg.reps)),
            # SEAL's rotate_rows(k) rotates within the rows; its rotate_columns swaps them
            "rotate": res.record("rotate", timed(out(ev.rotate_rows, cx, 1, gk), cfg.reps)),
            "rotate_rows": res.record("rotate_rows",
                                      timed(out(ev.rotate_columns, cx, gk), cfg.reps))}
    res.record("decrypt", timed(lambda: decrypt(cx), cfg.reps))
    c = cx
    for i in range(1, cfg.chain + 1):
        c = mul(c, cy)
        outs[f"multiply x{i}"] = c
    _budgets(res, outs, dec.invariant_noise_budget, decrypt, expected(x, y, t, cfg.chain))
    return res


RUNNERS: dict[str, Callable[[Config], Result]] = {
    "ren": run_ren, "seal": run_seal, "bgv": lambda cfg: run_ren(cfg, "bgv")}


# ---------------------------------------------------------------- report

def _ms(r: Result, op: str) -> str:
    ms = r.median_ms(op)
    return "-" if math.isnan(ms) else f"{ms:.2f} ({r.median_ms(op, cpu=True):.2f})"


#: Ren's op timed against SEAL's: the JIT replay where there is one
_REN_TIMED = {"mul": "mul jit", "rotate": "rotate jit"}


def ratio(ren: Result, seal: Result, op: str, cpu: bool = False) -> float:
    """Ren's median time over SEAL's for op (the JIT replay for mul and rotate); wall time, or
    process CPU time if `cpu` (steadier on a loaded machine)."""
    return ren.median_ms(_REN_TIMED.get(op, op), cpu) / seal.median_ms(op, cpu)


def time_table(results: list[Result]) -> str:
    seal = next((r for r in results if r.lib == "seal"), None)
    rens = [r for r in results if r.lib != "seal"]
    width = 22
    head = "op, ms (cpu ms)".ljust(14) + "".join(r.name.rjust(width) for r in results)
    if seal is not None:
        head += "".join(f"{r.lib}/seal wall, cpu".rjust(24) for r in rens)
    lines = [head, "-" * len(head)]
    for op in (*OPS, *JIT_OPS):
        row = op.ljust(14) + "".join(_ms(r, op).rjust(width) for r in results)
        if seal is not None and op in OPS:
            row += "".join(f"{ratio(r, seal, op):.2f}x, {ratio(r, seal, op, True):.2f}x".rjust(24)
                           for r in rens)
        lines.append(row)
    return "\n".join(lines)


def budget_table(results: list[Result]) -> str:
    seal = next((r for r in results if r.lib == "seal"), None)
    rens = [r for r in results if r.lib != "seal"]
    names = [k for k in results[0].precision if not k.endswith(" jit")]
    width = 14
    head = "noise budget (bits)".ljust(22) + "".join(r.name.rjust(width) for r in results)
    if seal is not None:
        head += "".join(f"{r.lib}-seal".rjust(width) for r in rens)
    lines = [head, "-" * len(head)]
    for k in names:
        label = "fresh" if k == "encrypt" else k
        row = label.ljust(22) + "".join(
            (f"{r.precision[k]:.0f}" if k in r.precision else "-").rjust(width) for r in results)
        if seal is not None:
            row += "".join((f"{r.precision[k] - seal.precision[k]:+.0f}"
                            if k in r.precision and k in seal.precision else "-").rjust(width)
                           for r in rens)
        lines.append(row)
    lines.append("decrypts exactly".ljust(22) + "".join(
        str(r.params.get("exact", "-")).rjust(width) for r in results))
    return "\n".join(lines)


def param_table(results: list[Result]) -> str:
    keys = ("N", "t", "log2_Q", "log2_QP", "key_switching", "aux basis", "levels", "device",
            "version")
    lines = []
    for r in results:
        lines.append(f"{r.name}: " + ", ".join(
            f"{k} {r.params[k]:.1f}" if isinstance(r.params.get(k), float)
            else f"{k} {r.params[k]}" for k in keys if k in r.params))
        for name, seconds in r.capture.items():
            lines.append(f"  {name} jit captured in {seconds * 1e3:.0f} ms")
    return "\n".join(lines)


def report(results: list[Result], notes: list[str]) -> str:
    parts = [param_table(results), time_table(results), budget_table(results)]
    rens = [r for r in results if r.breakdown]
    if rens:
        from ckks_breakdown import breakdown_table

        parts.append(breakdown_table(rens, results[0].params["N"]))
    seal = next((r for r in results if r.lib == "seal"), None)
    ren = next((r for r in results if r.lib == "ren-bfv" or r.name.startswith("ren-bfv")), None)
    if seal is not None and ren is not None:
        goals = []
        for op in ("mul", "rotate"):
            wall, cpu = ratio(ren, seal, op), ratio(ren, seal, op, True)
            goals.append(f"{op} {wall:.2f}x SEAL wall, {cpu:.2f}x CPU time (goal <= 0.5x: "
                         f"{'met' if max(wall, cpu) <= 0.5 else 'missed'})")
        parts.append("Ren BFV (JIT replay) vs SEAL: " + "; ".join(goals))
    parts.append("mul = multiply + relinearize (BGV: + modulus switch, so its budgets are on a "
                 "smaller Q); rotate = both rows left by one column; ren/seal: Ren's JIT replay "
                 "for mul and rotate, its eager op otherwise, over wall and over CPU time.  Wall "
                 "times on a shared machine are noisy; CPU time is steadier.")
    return "\n\n".join(parts + notes)


def main(argv: list[str] | None = None) -> list[Result]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="N14", help="Ren's BFV preset: N13, N14 or N15")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--keygen-reps", type=int, default=2)
    ap.add_argument("--device", default="cpu", choices=("cpu", "python"))
    ap.add_argument("--only", default=",".join(LIBS), help="comma list of ren,seal,bgv")
    ap.add_argument("--chain", type=int, default=3, help="products in the budget chain")
    ap.add_argument("--breakdown", action="store_true")
    ap.add_argument("--smoke", action="store_true",
                    help="a tiny insecure ring (N = 2^10), one rep: for the tests")
    a = ap.parse_args(argv)
    if a.smoke:
        cfg = Config(preset=None, reps=1, keygen_reps=1, chain=2, insecure=True,
                     device=a.device, breakdown=a.breakdown)
    else:
        cfg = Config(preset=a.preset, reps=a.reps, keygen_reps=a.keygen_reps, chain=a.chain,
                     device=a.device, breakdown=a.breakdown)
    results, notes = [], []
    for lib in a.only.split(","):
        if lib not in RUNNERS:
            raise SystemExit(f"unknown library {lib!r}; choose from {', '.join(LIBS)}")
        try:
            results.append(RUNNERS[lib](cfg))
        except Skipped as e:
            notes.append(str(e))
    if results:
        print(report(results, notes))
    else:
        print("\n".join(notes))
    return results


if __name__ == "__main__":
    main()
