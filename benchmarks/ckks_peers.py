"""The peers of benchmarks/bench_ckks.py: SEAL (through tenseal.sealapi) and DESILO (CPU mode).

Each runner takes a `Config` and returns a `Result` (ckks_common.py), or raises `Skipped` when
its library is missing or refuses the parameters.  Both are an optional extra:
`pip install -e ".[bench]"`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from ckks_common import (
    MATRIX_N,
    POLY,
    PROGRAM_DEPTH,
    Config,
    Result,
    Skipped,
    bits,
    check_security,
    inputs,
    poly_value,
    program_inputs,
    timed,
)

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
    if cfg.depth >= PROGRAM_DEPTH:
        _seal_programs(cfg, res, bit_sizes, x)
    return res


def _seal_programs(cfg: Config, res: Result, bit_sizes: list[int], x: np.ndarray) -> None:
    """poly and lintrans through TenSEAL's CKKSVector (polyval, matmul) on SEAL, with the same
    modulus chain and all power-of-two Galois keys (TenSEAL's own context)."""
    import tenseal as ts

    try:
        ctx = ts.context(ts.SCHEME_TYPE.CKKS, poly_modulus_degree=cfg.n,
                         coeff_mod_bit_sizes=bit_sizes)
    except ValueError as e:  # TenSEAL refuses some chains SEAL itself takes (e.g. at N = 2^16)
        res.notes.append(f"seal: no poly/lintrans rows: TenSEAL refused the chain {bit_sizes}: "
                         f"{e}")
        return
    ctx.global_scale = 2.0 ** cfg.scale_bits
    ctx.generate_galois_keys()
    m, v, _ = program_inputs(cfg)
    vx, vv = ts.ckks_vector(ctx, x.tolist()), ts.ckks_vector(ctx, v.tolist())
    poly = res.record("poly", timed(lambda: vx.polyval(list(POLY)), cfg.reps))
    lin = res.record("lintrans", timed(lambda: vv.matmul(m.T.tolist()), cfg.reps))
    res.precision["poly"] = bits(np.abs(np.asarray(poly.decrypt()) - poly_value(x)).max())
    res.precision["lintrans"] = bits(np.abs(np.asarray(lin.decrypt())[:MATRIX_N] - m @ v).max())


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
    if cfg.depth >= PROGRAM_DEPTH:
        poly = res.record("poly", timed(lambda: engine.evaluate_polynomial(cx, list(POLY), rlk),
                                        cfg.reps))
        res.precision["poly"] = bits(np.abs(np.asarray(engine.decrypt(poly, sk))
                                            - poly_value(x)).max())
        res.notes.append("desilo: no lintrans (its matrix_multiply multiplies packed matrices, "
                         "not a matrix and a vector)")
    return res
