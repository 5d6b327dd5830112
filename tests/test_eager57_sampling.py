"""The realizing thread draws random leaves beside the sampling pool (issue 42 §4): at two
device threads an encryption's or a key generation's caller took no leaf and only waited on
pool threads that had to be woken (late on a loaded machine); now it takes leaves too
(`ren.realization.DRAW_ON_CALLER`), marked side by side like a pool thread
(`ren.sampling.side_by_side_here`), so its sampler shares the device's threads instead of
starting a team of all of them, and a pool task that has not started when the caller is through
is cancelled.  The words must not change, whichever thread draws which leaf."""

from __future__ import annotations

import threading
from concurrent.futures import Future

import numpy as np
import pytest

import ren
import ren.random
from ren import realization
from ren.backend import backend_override, cpu, cpu_sampling
from ren.backend.c_host import find_cc
from ren.ckks import CKKSParams, Encoder, Encryptor, KeyGenerator
from ren.poly import Poly, realize_polys
from ren.ring import RingSpec
from ren.sampling import drawing_side_by_side, side_by_side_here

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")


def _keys_and_ciphertext(seed: int) -> list[np.ndarray]:
    """A seeded key generation (sk, pk, relin, one rotation key) and encryption, realized
    together as bench_ckks does, at a small ring: their words."""
    p = CKKSParams.fastest_key_switching(N=1 << 11, depth=3, scale_bits=30, first_bits=40,
                                         insecure=True)
    with ren.random.seeded(seed):
        kg = KeyGenerator(p)
        sk, pk, rlk, gk = kg.secret_key(), kg.public_key(), kg.relin_key(), \
            kg.rotation_keys([1])
        ct = Encryptor(p, pk).encrypt(Encoder(p).encode(np.linspace(-1, 1, p.slots)))
        polys = [q for q in vars(ct).values() if isinstance(q, Poly)]
        for obj in (sk, pk, rlk, gk):
            polys += [q for q in _polys(obj)]
        realize_polys(polys)
        return [q.numpy() for q in polys]


def _polys(obj, seen=None) -> list[Poly]:
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, Poly):
        return [obj]
    if isinstance(obj, dict):
        return [q for v in obj.values() for q in _polys(v, seen)]
    if isinstance(obj, list | tuple):
        return [q for v in obj for q in _polys(v, seen)]
    if hasattr(obj, "__dict__"):
        return [q for v in vars(obj).values() for q in _polys(v, seen)]
    return []


@pytest.fixture
def cpu_threads():
    dev = cpu.CpuDevice("cpu")

    def set_to(n: int) -> None:
        dev.set_threads(n)

    try:
        yield set_to
    finally:
        dev.set_threads(None)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_the_caller_drawing_leaves_gives_the_same_words(monkeypatch, cpu_threads, threads):
    """Keys and a ciphertext drawn with the caller taking leaves (the default) equal those drawn
    by the pool alone, and those at one thread, for several seeds."""
    with backend_override("python", cpu.open_device):
        cpu_threads(1)
        want = {seed: _keys_and_ciphertext(seed) for seed in (3, 4)}
        cpu_threads(threads)
        for on in (True, False):
            monkeypatch.setattr(realization, "DRAW_ON_CALLER", on)
            for seed, words in want.items():
                got = _keys_and_ciphertext(seed)
                assert len(got) == len(words) > 4
                for g, w in zip(got, words, strict=True):
                    assert np.array_equal(g, w)


class _Unstarted(Future):
    """A task that has not started: it can be cancelled; waiting on it would wait forever."""

    def result(self, timeout=None):
        raise AssertionError("the caller waited on a pool task that had not started")


class _NeverStarts:
    """A pool whose tasks never start (a pool thread that is never woken in time): every task
    is cancellable, so the caller must draw every leaf itself."""

    def __init__(self) -> None:
        self.submitted = 0

    def submit(self, fn, *args):
        self.submitted += 1
        return _Unstarted()


def test_the_caller_draws_side_by_side_and_cancels_tasks_not_started(monkeypatch, cpu_threads):
    """With pool threads that never start, the caller draws every leaf, each on a sampler
    marked side by side (so it shares the device's threads), and the realization does not
    wait for the pool; the words are those of a pool-only draw."""
    ring = RingSpec.generate(1024, 3)
    seen: list[tuple[bool, int]] = []
    draw = realization._draw

    def spy(device, spec, ring):
        seen.append((cpu_sampling.side_by_side(), threading.get_ident()))
        return draw(device, spec, ring)

    def leaves(seed: int) -> list[Poly]:
        with ren.random.seeded(seed):
            return [Poly.gaussian(ring, 3.2, device="cpu"), Poly.ternary(ring, device="cpu"),
                    Poly.uniform(ring, device="cpu"), Poly.gaussian(ring, 3.2, device="cpu")]

    with backend_override("python", cpu.open_device):
        cpu_threads(2)
        monkeypatch.setattr(realization, "DRAW_ON_CALLER", False)
        polys = leaves(5)
        realize_polys([polys[0] * polys[1] - polys[3].ntt(), polys[2] + 1, *polys])
        want = [p.numpy() for p in polys]
        monkeypatch.setattr(realization, "DRAW_ON_CALLER", True)
        pool = _NeverStarts()
        monkeypatch.setattr(realization, "_sampling_pool", lambda: pool)
        monkeypatch.setattr(realization, "_draw", spy)
        polys = leaves(5)
        realize_polys([polys[0] * polys[1] - polys[3].ntt(), polys[2] + 1, *polys])
    assert pool.submitted == 1  # two threads: the caller and one pool task
    assert seen == [(True, threading.get_ident())] * 4
    for p, w in zip(polys, want, strict=True):
        assert np.array_equal(p.numpy(), w)


def test_side_by_side_here_marks_this_thread_only():
    """The mark nests, ends with its block (also on an error) and is this thread's alone."""
    assert not drawing_side_by_side() and not cpu_sampling.side_by_side()
    elsewhere: list[bool] = []
    with side_by_side_here():
        assert drawing_side_by_side() and cpu_sampling.side_by_side()
        with side_by_side_here():
            assert drawing_side_by_side()
        assert drawing_side_by_side()
        t = threading.Thread(target=lambda: elsewhere.append(cpu_sampling.side_by_side()))
        t.start()
        t.join()
    assert elsewhere == [False]
    assert not drawing_side_by_side()
    with pytest.raises(RuntimeError), side_by_side_here():
        raise RuntimeError
    assert not cpu_sampling.side_by_side()


def test_the_callers_sampler_counts_a_sibling():
    """Marked side by side, the caller's sampler takes half the device's threads, as a pool
    thread's does (it starts before its sibling has woken: a full team would sit beside the
    sibling's sampler); unmarked, all of them."""
    lib = cpu.ring_library(cpu.available_isas()[0])
    cpu_sampling.sampler_threads(lib)  # binds
    lib.ren_set_threads(4)
    try:
        with cpu_sampling._on_threads(lib, None):
            assert cpu_sampling.sampler_threads(lib) == 4
        with side_by_side_here(), cpu_sampling._on_threads(lib, None):
            assert cpu_sampling.sampler_threads(lib) == 2
            assert lib.ren_cpu_sample_uniform_threads_here() == 2
        with cpu_sampling._on_threads(lib, None):
            assert cpu_sampling.sampler_threads(lib) == 4  # nothing left set
    finally:
        lib.ren_set_threads(cpu.threads())
