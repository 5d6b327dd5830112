"""CKKS bootstrapping: compute to the last level, bootstrap, keep computing.

Encrypts x at level 3, applies y -> 2y² - 1 (which keeps [-1, 1]) down to level 1, the last level
a computation uses (level 0 holds only the bootstrapping input, at the small scale EvalMod is
fitted to: `bootstrap` takes it there for free), bootstraps it back to a usable level, applies it
once more, and prints the precision before and after and the levels regained.  The key set is the
one the rotation-key planner finds in the bootstrapping itself.

``--small`` (the default) is the small preset (N = 256, INSECURE: a toy ring for learning and
tests, seconds); the N = 2^16 preset runs in `benchmarks/bench_bootstrap.py --preset n16`
(minutes, ~16 GB).  ``--dense`` draws a dense ternary secret, as the N = 2^16 preset does: the
bootstrapping then switches to an ephemeral sparse secret around ModRaise (sparse-secret
encapsulation, two more keys) and uses one level more (the preset has one more).

Run:  python examples/ckks_bootstrap.py --small [--dense]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import ren
from ren.ckks import (
    Decryptor,
    Encoder,
    Encryptor,
    Evaluator,
    KeyGenerator,
    plan_rotation_keys,
)
from ren.ckks.circuits.bootstrap import Bootstrapper, bootstrap_params_small


def bits(got, want) -> float:
    return -math.log2(float(np.max(np.abs(np.asarray(got) - np.asarray(want)))))


def main(argv: list[str] | None = None) -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", default=True,
                    help="the small insecure preset (the only one so far)")
    ap.add_argument("--device", default="python", choices=("python", "cpu"))
    ap.add_argument("--dense", action="store_true",
                    help="a dense ternary secret, bootstrapped through sparse-secret "
                         "encapsulation")
    args = ap.parse_args(argv)
    params = bootstrap_params_small(args.device, **({"secret": "ternary"} if args.dense else {}))
    print(f"{params!r}")
    t0 = time.perf_counter()
    bt = Bootstrapper(params)
    with ren.random.seeded(1):  # reproducible (insecure) keys: this is a demonstration
        kg = KeyGenerator(params)
        # a dense secret: the two keys of sparse-secret encapsulation (not Galois keys)
        ek = bt.encapsulation_keys(kg) if bt.encapsulation is not None else None
    plan = plan_rotation_keys(lambda ev, ct: bt.bootstrap(ev, ct, ek), params, 1)
    print(f"bootstrapping uses {bt.levels_used} of {params.depth} levels (CoeffToSlot "
          f"{bt.cts_levels}, EvalMod {bt.evalmod_levels}, SlotToCoeff {bt.stc_levels}) and leaves "
          f"{bt.output_level}; EvalMod: degree "
          f"{bt.degree} Chebyshev and {bt.double_angles} double angles over |I| <= {bt.K}")
    print(f"keys: {plan.summary().splitlines()[0]}")
    if ek is not None:
        print(f"encapsulation: an ephemeral sparse secret of weight {ek.weight}, two keys of "
              f"{ek.nbytes / 2**10:.0f} KiB")
    with ren.random.seeded(2):
        ev = Evaluator(params, kg.relin_key(), plan.generate(kg))
        encryptor = Encryptor(params, kg.public_key())
    enc, dec = Encoder(params), Decryptor(params, kg.secret_key())
    print(f"setup: {time.perf_counter() - t0:.1f} s")

    x = np.random.default_rng(2).uniform(-1, 1, params.slots)
    def step(c):  # y -> 2y² - 1, one level
        return ev.add_scalar(ev.multiply_int(ev.rescale(ev.square(c)), 2), -1)

    ct, want = encryptor.encrypt(enc.encode(x, level=3)), x
    while ct.level > 1:  # compute down to the last level
        ct, want = step(ct), 2 * want * want - 1
    before = bits(enc.decode(dec.decrypt(ct)), want)
    print(f"computed to level {ct.level}: {before:.1f} bits")
    t0 = time.perf_counter()
    fresh = bt.bootstrap(ev, ct, ek)
    after = bits(enc.decode(dec.decrypt(fresh)), want)
    print(f"bootstrapped in {time.perf_counter() - t0:.1f} s: level {fresh.level} regained, "
          f"{after:.1f} bits")
    more = step(fresh)
    again = bits(enc.decode(dec.decrypt(more)), 2 * want * want - 1)
    print(f"kept computing: one more step at level {more.level}: {again:.1f} bits")
    return {"before": before, "after": after, "levels": fresh.level, "again": again}


if __name__ == "__main__":
    main()
