"""Encrypted logistic-regression inference on a batch of samples.

A client encrypts many feature vectors packed into one ciphertext (each sample takes d slots);
the server, holding a plaintext model (w, b), computes for every sample

    t = <w, x> + b           multiply by the tiled weights, then rotate_sum over d slots
    p ≈ sigmoid(t)           0.5 + 0.197·t − 0.004·t³  (a degree-3 fit on [-8, 8])

and the client decrypts the probabilities.  Three levels are used after the dot product.  The
script prints the max error against the same computation in NumPy (precision in bits), the error
of the polynomial against the true sigmoid, and whether the predicted classes agree.

Run:  python examples/ckks_logreg.py            (N = 2^14, 128-bit secure)
      python examples/ckks_logreg.py --small    (N = 2^8, INSECURE, a few seconds)
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

C1, C3 = 0.197, -0.004  # sigmoid(t) ≈ 0.5 + C1·t + C3·t³ on [-8, 8]


def sigmoid_poly(t: np.ndarray) -> np.ndarray:
    return 0.5 + C1 * t + C3 * t**3


def encrypted_sigmoid(ev: Evaluator, t):
    """0.5 + C1·t + C3·t³ with exact scale bookkeeping: every term lands on one scale."""
    t2 = ev.rescale(ev.square(t))                                   # level l-1
    c3t = ev.rescale(ev.multiply_scalar(t, C3, target_scale=t2.scale))  # C3·t, same scale as t²
    t3 = ev.rescale(ev.multiply(t2, c3t))                           # C3·t³, level l-2
    lin = ev.rescale(ev.multiply_scalar(t, C1, target_scale=t3.scale))  # C1·t, level l-1
    return ev.add_scalar(ev.add(t3, ev.drop_level(lin, t3.level)), 0.5)


def main(argv: list[str] | None = None) -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="tiny insecure parameters (fast)")
    ap.add_argument("--features", type=int, default=16, help="features per sample (power of 2)")
    args = ap.parse_args(argv)
    if args.small:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InsecureParametersWarning)
            params = CKKSParams(N=256, depth=4, scale_bits=40, first_bits=55, insecure=True)
    else:
        params = CKKSParams.preset("N14")
    d = args.features
    if d & (d - 1) or not 1 <= d <= params.slots:
        ap.error(f"--features must be a power of two <= {params.slots}")
    batch = params.slots // d
    print(f"{params!r}\n{batch} samples × {d} features in one ciphertext")

    rng = np.random.default_rng(7)
    w = rng.normal(0, 1, d) / math.sqrt(d)
    b = 0.1
    X = rng.uniform(-1, 1, (batch, d))

    t0 = time.perf_counter()
    keygen = KeyGenerator(params)
    rlk = keygen.relin_key()
    gk = keygen.rotation_keys([1 << i for i in range(d.bit_length() - 1)])
    enc, ev = Encoder(params), Evaluator(params, relin_key=rlk, rotation_keys=gk)
    encryptor = Encryptor(params, keygen.public_key())
    decryptor = Decryptor(params, keygen.secret_key())
    print(f"keys: {time.perf_counter() - t0:.1f} s ({rlk.nbytes + gk.nbytes:,} bytes of "
          "evaluation keys)")

    t0 = time.perf_counter()
    ct = encryptor.encrypt(enc.encode(X.ravel()))                       # client
    z = ev.rescale(ev.multiply(ct, np.tile(w, batch)))                  # server: x_i · w
    t = ev.add_scalar(ev.rotate_sum(z, d), b)                           # slot i·d: <w, x_i> + b
    p = encrypted_sigmoid(ev, t)
    got = enc.decode(decryptor.decrypt(p)).real[::d]                    # client
    print(f"encrypted inference: {time.perf_counter() - t0:.1f} s, result at level {p.level}")

    logits = X @ w + b
    want = sigmoid_poly(logits)
    err = float(np.max(np.abs(got - want)))
    bits = -math.log2(err)
    approx = float(np.max(np.abs(want - 1 / (1 + np.exp(-logits)))))
    agree = float(np.mean((got > 0.5) == (logits > 0)))
    print(f"max error vs NumPy (same polynomial): {err:.3e} = {bits:.1f} bits of precision")
    print(f"polynomial vs true sigmoid on these logits: max {approx:.3e}")
    print(f"predicted classes agree with the plaintext model: {agree:.1%}")
    return {"bits": bits, "agree": agree}


if __name__ == "__main__":
    main()
