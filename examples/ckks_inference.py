"""Encrypted inference through a small neural network: a dense layer, a Chebyshev sigmoid, an
output neuron; then degree-63 approximations of sigmoid and exp on their own.

The client encrypts a feature vector x (d values, repeated to fill the slots); the server holds
a plaintext model and computes

    h = sigmoid(W·x + b)      W: d×d, a linear transform (baby-step giant-step, hoisted
                              rotations, one level) and a degree-15 Chebyshev fit on [-8, 8]
    y = <w, h>                a product with w and a rotate_sum over d slots

with no rescale or scale bookkeeping in sight: the evaluator's automatic mode does it.  Before
running anything, `ren.ckks.debug.budget` traces the program (levels and scales per line) and
`plan_rotation_keys` says which Galois keys to make; after it, `ren.ckks.debug.precision`
shows where precision went, per line.

Run:  python examples/ckks_inference.py            (N = 2^14, 128-bit secure, depth 7)
      python examples/ckks_inference.py --small    (N = 2^8, INSECURE, seconds)
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
    LinearTransform,
    chebyshev_coefficients,
    debug,
    plan_rotation_keys,
)


def sigmoid(t):
    return 1 / (1 + np.exp(-t))


def bits(got, want) -> float:
    return -math.log2(float(np.max(np.abs(np.asarray(got) - np.asarray(want)))))


def main(argv: list[str] | None = None) -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="tiny insecure parameters (fast)")
    ap.add_argument("--features", type=int, default=16, help="d, a power of two")
    args = ap.parse_args(argv)
    if args.small:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InsecureParametersWarning)
            params = CKKSParams(N=256, depth=7, scale_bits=40, first_bits=55, insecure=True)
    else:
        params = CKKSParams.preset("N14")
    d, slots = args.features, params.slots
    if d & (d - 1) or not 2 <= d <= slots:
        ap.error(f"--features must be a power of two in [2, {slots}]")
    print(f"{params!r}")

    rng = np.random.default_rng(7)
    W = rng.normal(0, 2.0, (d, d)) / math.sqrt(d)
    b = rng.normal(0, 0.5, d)
    w = rng.normal(0, 1.0, d) / math.sqrt(d)
    x = rng.uniform(-1, 1, d)
    sig15 = chebyshev_coefficients(sigmoid, 15, (-8, 8))
    layer = LinearTransform(params, W)

    def network(ev, ct):
        h = ev.add(ev.linear_transform(ct, layer), np.tile(b, slots // d))
        h = ev.evaluate_polynomial(h, sig15, basis="chebyshev", interval=(-8, 8))
        return ev.rotate_sum(ev.multiply(h, np.tile(w, slots // d)), d)

    # -- before running: levels, scales and keys, traced (no kernel runs)
    plan = debug.budget(network, params)
    print(f"budget: {plan.summary()}")
    keys = plan_rotation_keys(network, params)
    print(f"keys: {keys.summary()}")

    t0 = time.perf_counter()
    keygen = KeyGenerator(params)
    ev = Evaluator(params, keygen.relin_key(), keys.generate(keygen))
    enc = Encoder(params)
    encryptor, decryptor = Encryptor(params, keygen.public_key()), Decryptor(params,
                                                                             keygen.secret_key())
    print(f"key generation: {time.perf_counter() - t0:.1f} s")

    t0 = time.perf_counter()
    ct = encryptor.encrypt(enc.encode(np.tile(x, slots // d)))          # client
    y = network(ev, ct)                                                 # server
    got = enc.decode(decryptor.decrypt(y)).real[0]                      # client
    print(f"encrypted inference: {time.perf_counter() - t0:.1f} s, result at level {y.level}")
    pre = W @ x + b
    want_poly = w @ np.polynomial.chebyshev.chebval(pre / 8, sig15)
    want_true = w @ sigmoid(pre)
    out = {"network": bits(got, want_poly)}
    print(f"y = {got:.6f}; NumPy, same polynomial: {want_poly:.6f} ({out['network']:.1f} bits); "
          f"true sigmoid: {want_true:.6f}")

    # -- where precision went, line by line (debug mode: decrypts every intermediate)
    report = debug.precision(network, np.tile(x, slots // d), evaluator=ev,
                             secret_key=keygen.secret_key())
    print(report)

    # -- degree-63 approximations on their own (7 levels with the interval change)
    t = rng.uniform(-1, 1, slots)
    for name, fn, (lo, hi), degree in (("sigmoid", sigmoid, (-8, 8), 63),
                                       ("exp", np.exp, (-2, 2), 63)):
        if math.ceil(math.log2(degree + 1)) + 1 > params.depth:
            continue
        coeffs = chebyshev_coefficients(fn, degree, (lo, hi))
        xs = (hi - lo) / 2 * t + (lo + hi) / 2
        ct = encryptor.encrypt(enc.encode(xs))
        res = ev.evaluate_polynomial(ct, coeffs, basis="chebyshev", interval=(lo, hi))
        got = enc.decode(decryptor.decrypt(res)).real
        poly = np.polynomial.chebyshev.chebval((2 * xs - lo - hi) / (hi - lo), coeffs)
        out[name] = bits(got, poly)
        print(f"{name} (degree {degree} on [{lo}, {hi}], {ct.level - res.level} levels): "
              f"{out[name]:.1f} bits against NumPy, fit error {np.max(np.abs(poly - fn(xs))):.1e}")
    return out


if __name__ == "__main__":
    main()
