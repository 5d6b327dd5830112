"""The "cpu" device's samplers on a realization's side-by-side pool (issue 42 §4): a sampler
called on a thread of `ren.realization`'s sampling pool shares the device's threads with the
other samplers running at the time (`cpu_sampling.side_by_side`: two at once on two threads run
one thread each instead of a team under each, twice as many busy threads as cores; one alone
counts a sibling that may not have started yet; what a sampler can divide also goes on a board
that the pool threads done with their own leaves join: tests/test_sampling_board.py), a
thread-local setting of the ring library that does not leak to other threads or past the call;
the words are
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
            for here in (None, 1, 2, 3):
                got = _with_device_threads(lib, device_threads, lambda lib=lib, here=here:
                                           cpu_sampling.sample(lib, spec, ring, threads=here))
                assert np.array_equal(got, want), (kind, device_threads, here)
        # on a side-by-side pool thread (one thread each), two leaves at once
        with ThreadPoolExecutor(2, thread_name_prefix=cpu_sampling.SIDE_BY_SIDE_PREFIX) as pool:
            got = list(pool.map(lambda _, lib=lib: cpu_sampling.sample(lib, spec, ring), (0, 1)))
        assert all(np.array_equal(g, want) for g in got)


def test_a_side_by_side_sampler_shares_the_device_threads_and_nothing_leaks() -> None:
    """On a thread named like realization's pool, a sampler alone takes half the device's
    threads (a sibling may not have started yet), two at once take half each (at least one);
    another pool's thread and the caller take the device's; an explicit count wins; nothing is
    left set after a call."""
    from ren.backend import cpu_sampling

    lib = _libs()[0]
    seen: dict[str, list[int]] = {}
    real_uniform = cpu_sampling.sample_uniform
    both_inside = threading.Barrier(2, timeout=10)

    def spy(lib_, spec, ring, ways=None, stored=False):
        name = threading.current_thread().name
        if spec.seed == b"pair":
            both_inside.wait()  # two side-by-side samplers running at once
        seen.setdefault(name.split("_")[0], []).append(cpu_sampling.sampler_threads(lib_))
        if spec.seed == b"pair":
            both_inside.wait()  # neither leaves before both have looked
        return real_uniform(lib_, spec, ring, ways, stored)

    ring = _ring()
    one, pair = RandomSpec("uniform", (), b"one", "cpu"), RandomSpec("uniform", (), b"pair", "cpu")
    cpu_sampling.sample_uniform = spy
    try:
        _with_device_threads(lib, 4, lambda: cpu_sampling.sample(lib, one, ring))
        assert seen.pop("MainThread") == [4]  # the caller: the device's four
        for prefix, alone, two in ((cpu_sampling.SIDE_BY_SIDE_PREFIX, 2, 2), ("other", 4, 4)):
            with ThreadPoolExecutor(2, thread_name_prefix=prefix) as pool:
                def run(spec, pool=pool):
                    return [f.result() for f in [pool.submit(cpu_sampling.sample, lib, spec, ring)
                                                 for _ in range(1 if spec is one else 2)]]

                _with_device_threads(lib, 4, lambda: run(one))
                assert seen.pop(prefix) == [alone], prefix
                _with_device_threads(lib, 4, lambda: run(pair))
                assert seen.pop(prefix) == [two, two], prefix
                # after the calls every pool thread is back to the device's count
                assert _with_device_threads(lib, 4, lambda: sorted(
                    f.result() for f in [pool.submit(cpu_sampling.sampler_threads, lib)
                                         for _ in range(2)])) == [4, 4]
        _with_device_threads(lib, 3, lambda: cpu_sampling.sample(lib, one, ring, threads=2))
        assert seen.pop("MainThread") == [2]
        assert _with_device_threads(lib, 3, lambda: cpu_sampling.sampler_threads(lib)) == 3
        # two at once on a two-thread device: one thread each
        with ThreadPoolExecutor(2, thread_name_prefix=cpu_sampling.SIDE_BY_SIDE_PREFIX) as pool:
            _with_device_threads(lib, 2, lambda: [f.result() for f in [
                pool.submit(cpu_sampling.sample, lib, pair, ring) for _ in range(2)]])
        assert seen.pop(cpu_sampling.SIDE_BY_SIDE_PREFIX) == [1, 1]
    finally:
        cpu_sampling.sample_uniform = real_uniform


def test_the_setting_is_per_os_thread() -> None:
    """A pool thread's fixed count (held while it samples) is not the caller's."""
    from ren.backend import cpu_sampling

    lib = _libs()[0]
    inside, release = threading.Event(), threading.Event()

    def hold():
        with cpu_sampling._on_threads(lib, 3):
            inside.set()
            release.wait(10)
            return cpu_sampling.sampler_threads(lib)

    with ThreadPoolExecutor(1) as pool:
        held = _with_device_threads(lib, 2, lambda: pool.submit(hold))
        assert inside.wait(10)
        try:
            assert _with_device_threads(lib, 2, lambda: cpu_sampling.sampler_threads(lib)) == 2
        finally:
            release.set()
        assert held.result() == 3


@pytest.mark.parametrize("bad", [0, -1, 257, 1.5, "2", True])
def test_a_bad_thread_count_is_refused(bad) -> None:
    from ren.backend import cpu_sampling

    with pytest.raises(ParameterError, match="sampler threads must be an int in"):
        cpu_sampling.sample(_libs()[0], RandomSpec("ternary", (), b"x", "cpu"), _ring(),
                            threads=bad)


def test_realizations_sampling_pool_is_recognised_as_side_by_side() -> None:
    """`side_by_side` recognises `ren.realization`'s pool by its thread names: a renamed pool
    would silently bring back a full team under each of its threads."""
    from ren import realization
    from ren.backend import cpu_sampling

    assert not cpu_sampling.side_by_side()
    assert realization._sampling_pool().submit(cpu_sampling.side_by_side).result()
