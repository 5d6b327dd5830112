"""Shared helpers for the CKKS tests: cached key sets and precision checks against NumPy.

Precision is −log2 of the largest absolute slot error; `check_precision` prints it (visible with
``pytest -s``) and asserts the stated bound.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import cache

import numpy as np

import ren
from ren.ckks import (
    CKKSParams,
    Decryptor,
    Encoder,
    Encryptor,
    Evaluator,
    InsecureParametersWarning,
    KeyGenerator,
)


def make_params(**kw) -> CKKSParams:
    """CKKSParams without the insecure-parameter warning (tests use tiny rings on purpose)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        return CKKSParams(**kw)


@dataclass
class Ctx:
    params: CKKSParams
    keygen: KeyGenerator
    enc: Encoder
    ev: Evaluator
    encryptor: Encryptor
    sk_encryptor: Encryptor
    dec: Decryptor

    def encrypt(self, values, level=None, scale=None):
        return self.encryptor.encrypt(self.enc.encode(values, level, scale))

    def decrypt(self, ct) -> np.ndarray:
        return self.enc.decode(self.dec.decrypt(ct))


@cache
def context(N: int = 64, depth: int = 3, scale_bits: int = 40, first_bits: int = 55,
            special_primes: int | None = None, dnum: int | None = None,
            steps: tuple[int, ...] = (1, 2, -1, 3), secret="ternary", seed: int = 7,
            preset: str | None = None, powers_of_two: bool = True) -> Ctx:
    """A cached parameter set with all keys (seeded: reproducible, insecure on purpose)."""
    if preset is not None:
        params = CKKSParams.preset(preset)
    else:
        params = make_params(N=N, depth=depth, scale_bits=scale_bits, first_bits=first_bits,
                             special_primes=special_primes, dnum=dnum, secret=secret,
                             insecure=True)
    with ren.random.seeded(seed):
        kg = KeyGenerator(params)
        pk, rlk = kg.public_key(), kg.relin_key()
        powers = [1 << i for i in range(params.slots.bit_length() - 1)] if powers_of_two else []
        gk = kg.rotation_keys(list(steps) + powers, conjugate=True)
    enc = Encoder(params)
    return Ctx(params, kg, enc, Evaluator(params, rlk, gk), Encryptor(params, pk),
               Encryptor(params, kg.secret_key()), Decryptor(params, kg.secret_key()))


def random_slots(n: int, rng: np.random.Generator, complex_: bool = True) -> np.ndarray:
    """n values with real (and imaginary) parts uniform in [-1, 1]."""
    x = rng.uniform(-1, 1, n)
    return x + 1j * rng.uniform(-1, 1, n) if complex_ else x.astype(np.complex128)


def precision_bits(got: np.ndarray, want: np.ndarray) -> float:
    err = float(np.max(np.abs(np.asarray(got) - np.asarray(want))))
    return math.inf if err == 0 else -math.log2(err)


def check_precision(got: np.ndarray, want: np.ndarray, bound: float, label: str) -> float:
    """Print the precision in bits and assert it is at least `bound`."""
    bits = precision_bits(got, want)
    print(f"[ckks precision] {label}: {bits:.1f} bits (bound {bound})")
    assert bits >= bound, f"{label}: precision {bits:.2f} bits is below the bound {bound}"
    return bits
