"""Host-side work shared over REN_CPU_THREADS (issue 42 §4): the CKKS decoder's CRT lift runs in
pieces of `ren.ckks.encoder.LIFT_PIECE` columns on a thread pool, and gives
`ren.ring.rns.centered_floats`'s floats — checked against Python big integers and against the
whole-array lift, at 1 and 2 threads, also where the prefix lift falls back to the whole basis."""

from __future__ import annotations

import random

import numpy as np
import pytest

import ren
from ren.ckks import encoder
from ren.ring import RingSpec
from ren.ring.rns import centered_floats


def _residues(values: list[int], ring: RingSpec) -> np.ndarray:
    return np.array([[v % q for v in values] for q in ring.moduli], dtype=np.uint32)


@pytest.mark.parametrize("big", [False, True])
def test_decoder_lift_in_pieces_gives_centered_floats_words(big):
    N = 4 * encoder.LIFT_PIECE
    ring = RingSpec.generate(N, 5)
    bits = 40  # the prefix lift covers |x| < 2^(bits+1); `big` puts one value far above it
    rnd = random.Random(7)
    values = [rnd.randrange(-(1 << bits), 1 << bits) for _ in range(N)]
    if big:
        values[3 * encoder.LIFT_PIECE + 5] = -(1 << 120) + 12345
    res = _residues(values, ring)
    want = centered_floats(res, ring, 0, bits=bits)
    assert np.array_equal(want, np.array([float(v) for v in values]))  # the lift is exact here
    for t in (1, 2):
        with ren.settings.override(REN_CPU_THREADS=t):
            got = encoder._lift(res, ring, 0, bits)
        assert np.array_equal(got.view(np.int64), want.view(np.int64)), f"{t} threads"


def test_decode_is_the_same_at_one_and_two_threads():
    from ren.ckks import CKKSParams, Decryptor, Encoder, Encryptor, KeyGenerator

    params = CKKSParams(N=2 * encoder.LIFT_PIECE, depth=1, scale_bits=30, first_bits=40,
                        insecure=True)
    with ren.random.seeded(1):
        kg = KeyGenerator(params)
        enc = Encoder(params)
        ct = Encryptor(params, kg.public_key()).encrypt(enc.encode(np.linspace(-1, 1, 64)))
        pt = Decryptor(params, kg.secret_key()).decrypt(ct)
    out = {}
    for t in (1, 2):
        with ren.settings.override(REN_CPU_THREADS=t):
            out[t] = enc.decode(pt)
    assert np.array_equal(out[1].view(np.float64), out[2].view(np.float64))
    assert np.max(np.abs(out[1][:64].real - np.linspace(-1, 1, 64))) < 1e-3
