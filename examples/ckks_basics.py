"""CKKS basics: encrypt two vectors, add, multiply, rotate, conjugate, decrypt; print the max
error and the precision in bits of each result.

Run:  python examples/ckks_basics.py            (N = 2^14, 128-bit secure, takes a while)
      python examples/ckks_basics.py --small    (N = 2^8, INSECURE, a few seconds)
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np

from ren.ckks import (
    CKKSParams,
    Decryptor,
    Encoder,
    Encryptor,
    Evaluator,
    InsecureParametersWarning,
    KeyGenerator,
)


def params_for(small: bool) -> CKKSParams:
    if not small:
        return CKKSParams.preset("N14")
    with warnings.catch_warnings():  # tiny ring on purpose: a demo, not security
        warnings.simplefilter("ignore", InsecureParametersWarning)
        return CKKSParams(N=256, depth=3, scale_bits=40, first_bits=55, insecure=True)


def report(label: str, got: np.ndarray, want: np.ndarray) -> float:
    err = float(np.max(np.abs(got - want)))
    bits = -math.log2(err) if err else math.inf
    print(f"  {label:<28} max error {err:.3e}   precision {bits:5.1f} bits")
    return bits


def main(argv: list[str] | None = None) -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="tiny insecure parameters (fast)")
    args = ap.parse_args(argv)
    params = params_for(args.small)
    print(params.describe())

    t0 = time.perf_counter()
    keygen = KeyGenerator(params)
    sk, pk, rlk = keygen.secret_key(), keygen.public_key(), keygen.relin_key()
    gk = keygen.rotation_keys([1, -3], conjugate=True)
    print(f"\nkeys ({time.perf_counter() - t0:.1f} s): public {pk.nbytes:,} B, relinearization "
          f"{rlk.nbytes:,} B, 3 Galois keys {gk.nbytes:,} B")

    encoder, evaluator = Encoder(params), Evaluator(params, relin_key=rlk, rotation_keys=gk)
    encryptor, decryptor = Encryptor(params, pk), Decryptor(params, sk)
    rng = np.random.default_rng(2024)
    n = params.slots
    x = rng.uniform(-1, 1, n) + 1j * rng.uniform(-1, 1, n)
    y = rng.uniform(-1, 1, n)
    cx, cy = encryptor.encrypt(encoder.encode(x)), encryptor.encrypt(encoder.encode(y))

    def dec(ct):
        return encoder.decode(decryptor.decrypt(ct))

    print(f"\n{n} slots, inputs uniform in [-1, 1] (x complex, y real):")
    bits = {
        "encrypt/decrypt": report("encrypt/decrypt x", dec(cx), x),
        "add": report("x + y", dec(evaluator.add(cx, cy)), x + y),
        "multiply": report("x * y (relin + rescale)",
                           dec(evaluator.rescale(evaluator.multiply(cx, cy))), x * y),
        "rotate": report("rotate(x, 1)", dec(evaluator.rotate(cx, 1)), np.roll(x, -1)),
        "rotate_right": report("rotate(x, -3)", dec(evaluator.rotate(cx, -3)), np.roll(x, 3)),
        "conjugate": report("conjugate(x)", dec(evaluator.conjugate(cx)), np.conj(x)),
    }
    sq = evaluator.rescale(evaluator.square(cy))
    poly = evaluator.add(sq, evaluator.adjust_scale(cy, sq.scale))  # y² + y at one scale
    bits["y^2+y"] = report("y^2 + y", dec(poly), y * y + y)
    return bits


if __name__ == "__main__":
    main()
