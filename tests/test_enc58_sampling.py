"""Which random leaves a realization draws side by side (issue 42 §4, stop 58): a set with a
uniform leaf (key generation, secret-key encryption) on the caller and the sampling pool, as
before; a set of small-coefficient leaves only (a public-key encryption's u, e0, e1) one after
another on the caller, each sampler on the device's whole team
(`ren.realization._side_by_side_pays`).  The words never depend on it: they are checked against
`ren.sampling.sample` (the definition, in Python) and against one thread, and the encryption
decrypts to the message (NumPy)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ren
import ren.random
import ren.sampling
from ren import realization
from ren.backend import backend_override, cpu, cpu_sampling
from ren.backend.c_host import find_cc
from ren.ckks import CKKSParams, Decryptor, Encoder, Encryptor, KeyGenerator
from ren.poly import Poly, realize_polys
from ren.ring import RingSpec

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")


@pytest.fixture
def cpu_threads():
    dev = cpu.CpuDevice("cpu")
    try:
        yield dev.set_threads
    finally:
        dev.set_threads(None)


class _RefusingPool:
    """A sampling pool that must not be used."""

    def submit(self, fn, *args):
        raise AssertionError("a set of small-coefficient leaves went to the sampling pool")


class _Unstarted:
    def cancel(self) -> bool:
        return True

    def result(self, timeout=None):
        raise AssertionError("waited on a pool task that had not started")


class _NeverStarts:
    def __init__(self) -> None:
        self.submitted = 0

    def submit(self, fn, *args):
        self.submitted += 1
        return _Unstarted()


def _spy_draws(monkeypatch) -> list[tuple[int, bool, int]]:
    """Records each leaf's draw: (thread, marked side by side, the sampler's threads)."""
    seen: list[tuple[int, bool, int]] = []
    draw = realization._draw

    def spy(device, spec, ring):
        seen.append((threading.get_ident(), cpu_sampling.side_by_side(),
                     cpu_sampling.sampler_threads(device.ring_lib)))
        return draw(device, spec, ring)

    monkeypatch.setattr(realization, "_draw", spy)
    return seen


def _params() -> CKKSParams:
    return CKKSParams.fastest_key_switching(N=1 << 11, depth=3, scale_bits=30, first_bits=40,
                                            insecure=True)


def _stored_words(spec, ring) -> np.ndarray:
    """The definition's residues of `spec` (`ren.sampling.sample`, Python) in storage form,
    r·2^32 mod q_i: what the cpu device's sampler writes."""
    r = ren.sampling.sample(spec, ring).astype(np.uint64) << np.uint64(32)
    return (r % np.array(ring.moduli, dtype=np.uint64)[:, None]).astype(np.uint32)


@pytest.mark.parametrize("threads", [2, 3])
def test_an_encryptions_small_leaves_are_drawn_on_the_caller_with_the_whole_team(
        monkeypatch, cpu_threads, threads):
    """A public-key encryption's three small leaves: each drawn on the calling thread, not
    marked side by side, its sampler on all the device's threads; the pool is not used."""
    p = _params()
    with backend_override("python", cpu.open_device):
        cpu_threads(threads)
        with ren.random.seeded(7):
            kg = KeyGenerator(p)
            pk = kg.public_key()
            realize_polys([pk.b, pk.a])
            ct = Encryptor(p, pk).encrypt(Encoder(p).encode(np.linspace(-1, 1, p.slots)))
        monkeypatch.setattr(realization, "_sampling_pool", lambda: _RefusingPool())
        seen = _spy_draws(monkeypatch)
        realize_polys([ct.c0, ct.c1])
    assert seen == [(threading.get_ident(), False, threads)] * 3


def test_a_set_with_a_uniform_leaf_is_still_drawn_side_by_side(monkeypatch, cpu_threads):
    """A uniform among the leaves (key generation, secret-key encryption): side by side, the
    caller marked and one pool task submitted at two threads."""
    ring = RingSpec.generate(1024, 3)
    with backend_override("python", cpu.open_device):
        cpu_threads(2)
        polys = [Poly.gaussian(ring, 3.2, device="cpu"), Poly.uniform(ring, device="cpu"),
                 Poly.ternary(ring, device="cpu")]
        pool = _NeverStarts()
        monkeypatch.setattr(realization, "_sampling_pool", lambda: pool)
        seen = _spy_draws(monkeypatch)
        subst = realization.sample_random_leaves([q.node for q in polys])
    assert pool.submitted == 1
    assert [s[:2] for s in seen] == [(threading.get_ident(), True)] * 3
    for q in polys:
        assert np.array_equal(subst[q.node].src[0].arg.array(),
                              _stored_words(q.random_origin(), ring))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_small_leaves_drawn_one_after_another_are_the_definitions_words(cpu_threads, threads):
    """Gaussians, ternaries and an interval drawn together (no uniform: one after another at
    two and more threads) are `ren.sampling.sample`'s residues, in storage form."""
    ring = RingSpec.generate(2048, 5)
    with backend_override("python", cpu.open_device):
        cpu_threads(threads)
        with ren.random.seeded(11):
            polys = [Poly.gaussian(ring, 3.2, device="cpu"), Poly.ternary(ring, device="cpu"),
                     Poly.gaussian(ring, 19.0, device="cpu")]
        subst = realization.sample_random_leaves([q.node for q in polys])
    assert len(subst) == 3
    for q in polys:
        assert np.array_equal(subst[q.node].src[0].arg.array(),
                              _stored_words(q.random_origin(), ring))


def _encryption_words(seed: int) -> tuple[list[np.ndarray], np.ndarray]:
    p = _params()
    x = np.linspace(-1, 1, p.slots)
    with ren.random.seeded(seed):
        kg = KeyGenerator(p)
        sk, pk = kg.secret_key(), kg.public_key()
        ct = Encryptor(p, pk).encrypt(Encoder(p).encode(x))
    realize_polys([ct.c0, ct.c1])
    words = [ct.c0.numpy(), ct.c1.numpy()]
    back = np.real(Encoder(p).decode(Decryptor(p, sk).decrypt(ct)))
    assert np.max(np.abs(back - x)) < 1e-3  # NumPy's message, within the encryption noise
    return words, back


@pytest.mark.parametrize("threads", [2, 3])
def test_an_encryption_has_the_same_words_either_way(monkeypatch, cpu_threads, threads):
    """Seeded public-key encryptions: the same words as at one thread, with the small leaves
    one after another (the default) and side by side (SIDE_BY_SIDE = "all")."""
    with backend_override("python", cpu.open_device):
        cpu_threads(1)
        want = {seed: _encryption_words(seed) for seed in (3, 4)}
        cpu_threads(threads)
        for how in ("uniform", "all"):
            monkeypatch.setattr(realization, "SIDE_BY_SIDE", how)
            for seed, (words, back) in want.items():
                got, got_back = _encryption_words(seed)
                for g, w in zip(got, words, strict=True):
                    assert np.array_equal(g, w)
                assert np.array_equal(got_back, back)
