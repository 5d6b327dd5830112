"""Precision at realistic sizes (N = 2^12 … 2^14, secure presets) against NumPy.

The acceptance figure: at N = 2^14 with a 40-bit composite scale, one multiply + relinearize +
rescale keeps at least the precision SEAL reaches for the same operation at a 40-bit scale
(measured with benchmarks/bench_ckks.py on this kind of machine: SEAL fresh 25.4–25.8 bits,
multiply+relin+rescale 25.1–25.7, rotate 19.0–21.5; Ren 27.0 / 26.2 / 26.8 at the seed below).
Ren, like SEAL, encrypts under the public key over a larger ring and divides (over Q·P' with
P' the first special primes, enough to hide the noise), so a fresh ciphertext carries rounding
noise only.
"""

from __future__ import annotations

import numpy as np
import pytest
from ckks_helpers import check_precision, context, random_slots


@pytest.fixture(scope="module")
def n14():
    return context(preset="N14", steps=(1,), powers_of_two=False)


def test_n14_multiply_relin_rescale(n14):
    rng = np.random.default_rng(14)
    x, y = random_slots(n14.params.slots, rng), random_slots(n14.params.slots, rng)
    cx, cy = n14.encrypt(x), n14.encrypt(y)
    check_precision(n14.decrypt(cx), x, 25.5, "N=2^14 fresh")
    out = n14.ev.rescale(n14.ev.multiply(cx, cy))
    check_precision(n14.decrypt(out), x * y, 25, "N=2^14 multiply+relin+rescale")
    check_precision(n14.decrypt(n14.ev.rotate(cx, 1)), np.roll(x, -1), 25,
                    "N=2^14 rotate(1)")


@pytest.mark.slow
def test_n14_depth7_squaring_chain(n14):
    x = np.random.default_rng(7).uniform(-1, 1, n14.params.slots).astype(complex)
    ct, want = n14.encrypt(x), x
    for _ in range(n14.params.depth):
        ct, want = n14.ev.rescale(n14.ev.square(ct)), want * want
    assert ct.level == 0
    check_precision(n14.decrypt(ct), want, 14, "N=2^14 depth-7 squaring chain")


def test_n13_depth_circuit():
    c = context(preset="N13", steps=(1,), powers_of_two=False)
    x = np.random.default_rng(13).uniform(-1, 1, c.params.slots).astype(complex)
    ct, want = c.encrypt(x), x
    for _ in range(c.params.depth):
        ct, want = c.ev.rescale(c.ev.square(ct)), want * want
    assert ct.level == 0
    check_precision(c.decrypt(ct), want, 17, "N=2^13 depth-3 squaring chain")


def test_n12_multiply():
    c = context(preset="N12", steps=(1,), powers_of_two=False)
    rng = np.random.default_rng(12)
    x, y = random_slots(c.params.slots, rng), random_slots(c.params.slots, rng)
    out = c.ev.rescale(c.ev.multiply(c.encrypt(x), c.encrypt(y)))
    check_precision(c.decrypt(out), x * y, 12, "N=2^12 (30-bit scale) multiply+relin+rescale")
