"""BFV basics: batch-encode two integer vectors, encrypt, compute their dot product with one
multiplication and log2(N) rotations, decrypt, and compare exactly with integer arithmetic mod
t; print the noise budget after each step.

Run:  python examples/bfv_basics.py            (N = 2^13 preset, t = 65537, 128-bit secure)
      python examples/bfv_basics.py --small    (N = 2^10, INSECURE, a few seconds)
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from ren.bfv import (
    BFVParams,
    Decryptor,
    Encoder,
    Encryptor,
    Evaluator,
    InsecureParametersWarning,
    galois_keys,
)
from ren.rlwe import KeyGenerator


def params_for(small: bool) -> BFVParams:
    if not small:
        return BFVParams.preset("N13")
    with warnings.catch_warnings():  # tiny ring on purpose: a demo, not security
        warnings.simplefilter("ignore", InsecureParametersWarning)
        return BFVParams.generate(1 << 10, 40961, chain_primes=4, insecure=True)


def main(argv: list[str] | None = None) -> dict[str, int | float | bool]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="tiny insecure parameters (fast)")
    args = ap.parse_args(argv)
    params = params_for(args.small)
    print(params)

    t0 = time.perf_counter()
    keygen = KeyGenerator(params)
    gk = galois_keys(keygen)  # column rotations by 1, 2, 4, ..., N/4 and the row swap
    evaluator = Evaluator(params, keygen.relin_key(), gk)
    encryptor = Encryptor(params, keygen.public_key())
    decryptor = Decryptor(params, keygen.secret_key())
    encoder = Encoder(params)
    print(f"keys: {time.perf_counter() - t0:.1f} s ({len(gk)} Galois keys)")

    rng = np.random.default_rng(2024)
    n, t = params.slots, params.t
    x = rng.integers(-1000, 1000, n)
    y = rng.integers(-1000, 1000, n)
    cx, cy = encryptor.encrypt(encoder.encode(x)), encryptor.encrypt(encoder.encode(y))

    def budget(label: str, ct) -> float:
        bits = decryptor.noise_budget(ct)
        print(f"  {label:<34} noise budget {bits:6.1f} bits")
        return bits

    print(f"\n{n} slots (2 rows x {n // 2} columns), entries in [-1000, 1000), t = {t}:")
    fresh = budget("fresh encryption", cx)
    prod = evaluator.multiply(cx, cy)
    budget("x * y (slot-wise, relinearized)", prod)
    acc, step = prod, 1
    while step < n // 2:  # sum the columns: rotate by 1, 2, 4, ... and add
        acc = evaluator.add(acc, evaluator.rotate_columns(acc, step))
        step *= 2
    acc = evaluator.add(acc, evaluator.rotate_rows(acc))  # and the two rows
    final = budget("after log2(N) rotations and adds", acc)

    got = encoder.decode(decryptor.decrypt(acc), signed=True)
    want = sum(int(a) * int(b) for a, b in zip(x.tolist(), y.tolist(), strict=True))
    want_t = (want + t // 2) % t - t // 2  # centred mod t
    exact = bool((got == want_t).all())
    print(f"\ndot product: {int(got[0])} (every slot), exact mod t: {want_t} "
          f"(over the integers: {want}); all slots agree: {exact}")
    return {"dot": int(got[0]), "want": want_t, "exact": exact, "fresh": fresh,
            "final": final}


if __name__ == "__main__":
    main()
