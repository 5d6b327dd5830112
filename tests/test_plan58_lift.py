"""A public-key encryption adds an encoded message before the division by P'
(ren/rlwe/encrypt.py `_lifted_message`): P'·m over Q·P' rides in e0's place, so the message
joins the division's correction in the coefficient domain and the graph has one NTT fewer.
(y + P'·m).rescale(P') = y.rescale(P') + m mod Q exactly for any integers m, so the words
must be those of the graph that adds m after the division, on every device and thread count,
for messages of any size and sign; a message that is no lazy TO_RNS keeps the old graph."""

from __future__ import annotations

import numpy as np
import pytest

import ren
import ren.random
import ren.rlwe.encrypt as rlwe_encrypt
from ren.backend import backend_override, cpu, device_factory
from ren.ckks import CKKSParams, Decryptor, Encoder, Encryptor, KeyGenerator
from ren.ops import Op
from ren.poly import Poly, realize_polys


def _params() -> CKKSParams:
    return CKKSParams.fastest_key_switching(N=1 << 11, depth=3, scale_bits=30, first_bits=40,
                                            insecure=True)


def _count(poly: Poly, op: Op) -> int:
    seen, stack, n = set(), [poly.node], 0
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        n += x.op is op
        stack.extend(x.src)
    return n


def _ckks_words(seed: int, lift: bool, realized_message: bool = False):
    p = _params()
    x = np.linspace(-1, 1, p.slots)
    rlwe_encrypt.LIFT_MESSAGE = lift
    try:
        with ren.random.seeded(seed):
            kg = KeyGenerator(p)
            sk, pk = kg.secret_key(), kg.public_key()
            pt = Encoder(p).encode(x)
            if realized_message:
                realize_polys([pt.poly])
            ct = Encryptor(p, pk).encrypt(pt)
        ntts = _count(ct.c0, Op.NTT)
        realize_polys([ct.c0, ct.c1])
        words = [ct.c0.numpy(), ct.c1.numpy()]
        back = np.real(Encoder(p).decode(Decryptor(p, sk).decrypt(ct)))
    finally:
        rlwe_encrypt.LIFT_MESSAGE = True
    assert np.max(np.abs(back - x)) < 1e-3
    return words, ntts


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_ckks_encryption_words_are_the_old_graphs(threads):
    """Seeded CKKS public-key encryptions on the cpu device (1-3 threads) and the python
    device: lifted and old graphs give the same words; the lifted c0 has one NTT fewer."""
    with backend_override("python", cpu.open_device):
        dev = cpu.CpuDevice("cpu")
        try:
            dev.set_threads(threads)
            for seed in (5, 6):
                new, ntt_new = _ckks_words(seed, True)
                old, ntt_old = _ckks_words(seed, False)
                assert all(np.array_equal(a, b) for a, b in zip(new, old, strict=True))
                assert ntt_new == ntt_old - 1
        finally:
            dev.set_threads(None)
    new, _ = _ckks_words(5, True)
    old, _ = _ckks_words(5, False)
    assert all(np.array_equal(a, b) for a, b in zip(new, old, strict=True))


def test_a_realized_message_keeps_the_old_graph():
    """A plaintext realized before the encryption (no lazy TO_RNS): added after the
    division, as before, with the same words."""
    with backend_override("python", cpu.open_device):
        new, ntt_new = _ckks_words(8, True, realized_message=True)
        old, ntt_old = _ckks_words(8, False, realized_message=True)
    assert ntt_new == ntt_old
    assert all(np.array_equal(a, b) for a, b in zip(new, old, strict=True))


@pytest.mark.parametrize("backend", ["cpu", "python"])
def test_rlwe_messages_of_any_size_and_sign(backend):
    """RLWE encryptions of integer messages from Poly.from_coefficients (0, ±1, ±2^40,
    beyond the ring's Q and up to ±(2^62 - 1), random signs): lifted words == old words, and
    c0 + c1·s - m is small noise (old graph's words: the definition)."""
    p = _params()
    ring = p.ring(p.depth)
    rng = np.random.default_rng(12)
    big = (1 << 62) - 1
    coeffs = [int(c) for c in rng.integers(-big, big, ring.N, dtype=np.int64)]
    coeffs[:6] = [0, 1, -1, 1 << 40, -(1 << 40), big]
    factory = cpu.open_device if backend == "cpu" else device_factory("python")
    with backend_override("python", factory):
        with ren.random.seeded(21):
            kg = KeyGenerator(p)
            sk, pk = kg.secret_key(), kg.public_key()
            realize_polys([sk.poly, pk.b, pk.a])
        out = {}
        for lift in (True, False):
            rlwe_encrypt.LIFT_MESSAGE = lift
            try:
                m = Poly.from_coefficients(coeffs, ring, device=p.device).ntt()
                with ren.random.seeded(22):
                    c0, c1 = rlwe_encrypt.Encryptor(p, pk).encrypt_parts(m, p.depth)
                ntts = _count(c0, Op.NTT)
                out[lift] = (c0.numpy(), c1.numpy(), ntts)
            finally:
                rlwe_encrypt.LIFT_MESSAGE = True
    assert np.array_equal(out[True][0], out[False][0])
    assert np.array_equal(out[True][1], out[False][1])
    assert out[True][2] == out[False][2] - 1
