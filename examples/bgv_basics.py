"""BGV basics: batch-encode three integer vectors, encrypt, compute the dot product of two of them
(one multiplication, log2(N) rotations and adds) and the slot-wise product of all three, decrypt,
and compare exactly with integer arithmetic mod t; print the level, the factor and the noise
budget after each step.

BGV keeps the message in the low bits (the phase is f·m + t·v) and divides by a level's primes
after every product (modulus switching), so each product costs one level; BFV (see
bfv_basics.py) keeps one modulus and pays in noise budget instead.

Run:  python examples/bgv_basics.py            (N = 2^13 preset, t = 65537, depth 2, 128-bit)
      python examples/bgv_basics.py --small    (N = 2^10, INSECURE, a few seconds)
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from ren.bfv import (
    BGVDecryptor,
    BGVEncryptor,
    BGVEvaluator,
    BGVParams,
    Encoder,
    InsecureParametersWarning,
    galois_keys,
)
from ren.rlwe import KeyGenerator


def params_for(small: bool) -> BGVParams:
    if not small:
        return BGVParams.preset("N13")
    with warnings.catch_warnings():  # tiny ring on purpose: a demo, not security
        warnings.simplefilter("ignore", InsecureParametersWarning)
        return BGVParams.generate(1 << 10, 40961, depth=3, insecure=True)


def main(argv: list[str] | None = None) -> dict[str, int | float | bool]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="tiny insecure parameters (fast)")
    args = ap.parse_args(argv)
    params = params_for(args.small)
    print(params)

    t0 = time.perf_counter()
    keygen = KeyGenerator(params)
    gk = galois_keys(keygen)  # column rotations by 1, 2, 4, ..., N/4 and the row swap
    evaluator = BGVEvaluator(params, keygen.relin_key(), gk)  # auto mode: levels by itself
    encryptor = BGVEncryptor(params, keygen.public_key())
    decryptor = BGVDecryptor(params, keygen.secret_key())
    encoder = Encoder(params)
    print(f"keys: {time.perf_counter() - t0:.1f} s ({len(gk)} Galois keys)")

    rng = np.random.default_rng(2024)
    n, t = params.slots, params.t
    x, y, z = (rng.integers(-1000, 1000, n) for _ in range(3))
    cx, cy, cz = (encryptor.encrypt(encoder.encode(v)) for v in (x, y, z))

    def show(label: str, ct) -> int:
        bits = decryptor.noise_budget(ct)
        print(f"  {label:<34} level {ct.level}  factor {ct.factor:>6}  noise budget "
              f"{bits:4d} bits")
        return bits

    print(f"\n{n} slots (2 rows x {n // 2} columns), entries in [-1000, 1000), t = {t}:")
    fresh = show("fresh encryption", cx)
    prod = evaluator.multiply(cx, cy)  # relinearized, then switched one level down
    show("x * y (slot-wise)", prod)
    acc, step = prod, 1
    while step < n // 2:  # sum the columns: rotate by 1, 2, 4, ... and add
        acc = evaluator.add(acc, evaluator.rotate_columns(acc, step))
        step *= 2
    acc = evaluator.add(acc, evaluator.rotate_rows(acc))  # and the two rows
    final = show("after log2(N) rotations and adds", acc)
    xyz = evaluator.multiply(prod, cz)  # cz is switched down to prod's level first
    deep = show("x * y * z (slot-wise)", xyz)

    got = encoder.decode(decryptor.decrypt(acc), signed=True)
    want = sum(int(a) * int(b) for a, b in zip(x.tolist(), y.tolist(), strict=True))
    want_t = (want + t // 2) % t - t // 2  # centred mod t
    exact = bool((got == want_t).all())
    got3 = encoder.decode(decryptor.decrypt(xyz), signed=True)
    want3 = [(int(a) * int(b) * int(c) + t // 2) % t - t // 2
             for a, b, c in zip(x.tolist(), y.tolist(), z.tolist(), strict=True)]
    exact3 = got3.tolist() == want3
    print(f"\ndot product: {int(got[0])} (every slot), exact mod t: {want_t} "
          f"(over the integers: {want}); all slots agree: {exact}")
    print(f"x * y * z: all {n} slots exact mod t: {exact3}")
    return {"dot": int(got[0]), "want": want_t, "exact": exact, "exact3": exact3,
            "fresh": fresh, "final": final, "deep": deep, "level": xyz.level}


if __name__ == "__main__":
    main()
