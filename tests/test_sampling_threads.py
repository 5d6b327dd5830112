"""The "cpu" device's samplers on a realization's side-by-side pool (issue 42 §4): a sampler
called on a thread of `ren.realization`'s sampling pool runs without a team of its own
(`cpu_sampling.threads_here`: the pool already has as many threads as the device, and a team
under each of them put twice as many busy threads as cores), a thread-local setting of the ring
library that does not leak to other threads or past the call; the words are
`ren.sampling.sample`'s whatever the thread count, on every vector path."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import ren.sampling
from ren.backend.c_host import find_cc
from ren.errors import ParameterError
from ren.random import RandomSpec
from ren.ring import RingSpec

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")

KINDS = [("uniform", ()), ("ternary", ()), ("gaussian", (3.2,)), ("sparse_ternary", (64,)),
         ("uniform_on_interval", (-9, 2**31))]


def _ring(limbs: int = 5, N: int = 1 << 12) -> RingSpec:
    from ren.ring.ringspec import ntt_primes

    return RingSpec(N, tuple(ntt_primes(N, 30, limbs)))


def _libs():
    from ren.backend import cpu

    return [cpu.ring_library(isa) for isa in cpu.available_isas()]


def _with_device_threads(lib, n: int, fn):
    from ren.backend import cpu

    lib.ren_set_threads(n)
    try:
        return fn()
    finally:
        lib.ren_set_threads(cpu.threads())


@pytest.mark.parametrize("kind,params", KINDS)
def test_the_words_are_ren_samplings_at_every_thread_setting(kind, params) -> None:
    from ren.backend import cpu_sampling

    ring = _ring()
    spec = RandomSpec(kind, params, b"threads " + kind.encode(), "cpu")
    want = ren.sampling.sample(spec, ring)
    for lib in _libs():
        for device_threads in (1, 2, 3):
            for here in (None, 0, 1, 2, 3):
                got = _with_device_threads(lib, device_threads, lambda lib=lib, here=here:
                                           cpu_sampling.sample(lib, spec, ring, threads=here))
                assert np.array_equal(got, want), (kind, device_threads, here)
        # on a side-by-side pool thread (one thread each), two leaves at once
        with ThreadPoolExecutor(2, thread_name_prefix=cpu_sampling.SIDE_BY_SIDE_PREFIX) as pool:
            got = list(pool.map(lambda _, lib=lib: cpu_sampling.sample(lib, spec, ring), (0, 1)))
        assert all(np.array_equal(g, want) for g in got)


def test_a_side_by_side_pool_thread_samples_on_one_thread_and_nothing_leaks() -> None:
    """Inside a sampler call on a thread named like realization's pool, the library's samplers
    take one thread; on the caller (and after the call) the device's; an explicit count wins."""
    from ren.backend import cpu_sampling

    lib = _libs()[0]
    seen: dict[str, int] = {}
    real_uniform = cpu_sampling.sample_uniform

    def spy(lib_, spec, ring, ways=None):
        seen[threading.current_thread().name.split("_")[0]] = cpu_sampling.sampler_threads(lib_)
        return real_uniform(lib_, spec, ring, ways)

    ring, spec = _ring(), RandomSpec("uniform", (), b"spy", "cpu")
    cpu_sampling.sample_uniform = spy
    try:
        def run():
            cpu_sampling.sample(lib, spec, ring)

        _with_device_threads(lib, 3, run)  # the caller: the device's three
        assert seen.pop("MainThread") == 3
        for prefix, want in ((cpu_sampling.SIDE_BY_SIDE_PREFIX, 1), ("other-pool", 3)):
            with ThreadPoolExecutor(1, thread_name_prefix=prefix) as pool:
                _with_device_threads(lib, 3, lambda: pool.submit(run).result())
                # after the call the pool thread is back to the device's count
                assert _with_device_threads(lib, 3, lambda: pool.submit(
                    cpu_sampling.sampler_threads, lib).result()) == 3
            assert seen.pop(prefix) == want, prefix
        _with_device_threads(lib, 3, lambda: cpu_sampling.sample(lib, spec, ring, threads=2))
        assert seen.pop("MainThread") == 2
        assert _with_device_threads(lib, 3, lambda: cpu_sampling.sampler_threads(lib)) == 3
    finally:
        cpu_sampling.sample_uniform = real_uniform


def test_the_setting_is_per_os_thread() -> None:
    """A pool thread's one-thread setting (held while it samples) is not the caller's."""
    from ren.backend import cpu_sampling

    lib = _libs()[0]
    inside, release = threading.Event(), threading.Event()

    def hold():
        with cpu_sampling._on_threads(lib, None):
            inside.set()
            release.wait(10)
            return cpu_sampling.sampler_threads(lib)

    with ThreadPoolExecutor(1, thread_name_prefix=cpu_sampling.SIDE_BY_SIDE_PREFIX) as pool:
        held = _with_device_threads(lib, 2, lambda: pool.submit(hold))
        assert inside.wait(10)
        try:
            assert _with_device_threads(lib, 2, lambda: cpu_sampling.sampler_threads(lib)) == 2
        finally:
            release.set()
        assert held.result() == 1


@pytest.mark.parametrize("bad", [-1, 257, 1.5, "2", True])
def test_a_bad_thread_count_is_refused(bad) -> None:
    from ren.backend import cpu_sampling

    with pytest.raises(ParameterError, match="sampler threads must be an int in"):
        cpu_sampling.sample(_libs()[0], RandomSpec("ternary", (), b"x", "cpu"), _ring(),
                            threads=bad)
