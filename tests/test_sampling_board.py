"""The side-by-side samplers' board (`cpu_ring_share.c`, issue 42 §4): a sampler on a thread of
`ren.realization`'s pool posts what it can divide (a uniform's limbs, a mapping's chunks, the
residues' limbs) and the pool threads done with their own leaves join it
(`cpu_sampling.help_side_by_side`).  The words are `ren.sampling.sample`'s whoever runs which
task, at every device thread count; a helper does join; a uniform started side by side counts
a sibling (it relies on the board instead of keeping a full team for its whole run)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import ren.sampling
from ren.backend.c_host import find_cc
from ren.random import RandomSpec
from ren.ring import RingSpec

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")

KINDS = [("uniform", ()), ("ternary", ()), ("gaussian", (3.2,)), ("sparse_ternary", (64,)),
         ("uniform_on_interval", (-9, 2**31))]


def _ring(limbs: int, N: int) -> RingSpec:
    from ren.ring.ringspec import ntt_primes

    return RingSpec(N, tuple(ntt_primes(N, 30, limbs)))


def _libs():
    from ren.backend import cpu

    return [cpu.ring_library(isa) for isa in cpu.available_isas()]


def _owner_and_helper(lib, spec: RandomSpec, ring: RingSpec) -> tuple[np.ndarray, int]:
    """`spec` sampled on a side-by-side thread while another side-by-side thread waits on the
    board (inside C, the GIL released: a helper polling from Python was kept off the cores by
    the GIL's hand-over on a loaded machine) and joins what is posted: (the words, the jobs the
    helper joined)."""
    from ren.backend import cpu_sampling

    waiting = threading.Event()

    def helper():
        lib.ren_cpu_sample_side_by_side(1)  # a leaf's end: the board's last event is now,
        lib.ren_cpu_sample_side_by_side(0)  # so the helper waits up to the grace below
        waiting.set()
        return cpu_sampling.help_side_by_side(lib, 0.05)

    def owner():
        waiting.wait(10)
        return cpu_sampling.sample(lib, spec, ring)

    with ThreadPoolExecutor(2, thread_name_prefix=cpu_sampling.SIDE_BY_SIDE_PREFIX) as pool:
        h = pool.submit(helper)
        words = pool.submit(owner).result()
        return words, h.result()


@pytest.mark.parametrize("kind,params", KINDS)
def test_the_words_are_ren_samplings_with_a_helper_at_every_thread_count(kind, params) -> None:
    from ren.backend import cpu

    ring = _ring(12, 1 << 13)
    spec = RandomSpec(kind, params, b"board " + kind.encode(), "cpu")
    want = ren.sampling.sample(spec, ring)
    for lib in _libs():
        for device_threads in (1, 2, 3):
            lib.ren_set_threads(device_threads)
            try:
                got, _ = _owner_and_helper(lib, spec, ring)
            finally:
                lib.ren_set_threads(cpu.threads())
            assert np.array_equal(got, want), (kind, device_threads)


@pytest.mark.parametrize("kind,params", KINDS)
def test_a_helper_joins_every_kind_and_the_words_stay(kind, params) -> None:
    """Every kind posts something (its residues' limbs at least); the helper waiting on the board
    joins it (tried again where a loaded machine kept the helper off a core for the owner's whole
    run)."""
    from ren.backend import cpu

    ring = _ring(64, 1 << 14)
    spec = RandomSpec(kind, params, b"board join " + kind.encode(), "cpu")
    want = ren.sampling.sample(spec, ring)
    lib = _libs()[0]
    lib.ren_set_threads(2)
    try:
        for _ in range(10):
            got, joined = _owner_and_helper(lib, spec, ring)
            assert np.array_equal(got, want)
            if joined:
                return
    finally:
        lib.ren_set_threads(cpu.threads())
    pytest.fail(f"no helper ever joined a {kind} sampler")


def test_a_pool_thread_done_with_its_leaf_joins_a_running_uniform() -> None:
    """Two leaves on realization's pool at once, as key generation's public key draws them: a
    big uniform and a small Gaussian; the Gaussian's thread, done first, joins the uniform's
    limbs (`cpu_sampling.sample` helps before returning), and the words stay the same."""
    from ren.backend import cpu, cpu_sampling

    # a uniform long enough (~3 ms alone on two threads) that the Gaussian's thread gets
    # a core while it runs even beside other load (48 limbs, ~0.9 ms, missed 80 tries in a
    # row once beside three busy processes)
    big, small = _ring(192, 1 << 14), _ring(1, 1 << 13)
    uniform = RandomSpec("uniform", (), b"board big", "cpu")
    gaussian = RandomSpec("gaussian", (3.2,), b"board small", "cpu")
    want = ren.sampling.sample(uniform, big)
    lib = _libs()[0]
    lib.ren_set_threads(2)
    try:
        with ThreadPoolExecutor(2, thread_name_prefix=cpu_sampling.SIDE_BY_SIDE_PREFIX) as pool:
            # the uniform must still be claiming when the Gaussian ends: on a loaded machine (the
            # full suite on 2 cores beside other work) most tries miss, so try often
            for _ in range(100):
                before = cpu_sampling.help_joins(lib)
                started = threading.Event()

                def gaussian_after_start(started=started):
                    started.wait(5)
                    return cpu_sampling.sample(lib, gaussian, small)

                def uniform_first(started=started):
                    started.set()
                    return cpu_sampling.sample(lib, uniform, big)

                g = pool.submit(gaussian_after_start)
                got = pool.submit(uniform_first).result()
                g.result()
                assert np.array_equal(got, want)
                if cpu_sampling.help_joins(lib) > before:
                    break
            else:
                pytest.fail("the Gaussian's pool thread never joined the uniform")
    finally:
        lib.ren_set_threads(cpu.threads())


def test_a_side_by_side_uniform_counts_a_sibling() -> None:
    """Alone on a side-by-side thread, a uniform and the small kinds take half the device's
    threads (a sibling may not have started yet; when done it joins through the board), and off
    the pool both take all."""
    from ren.backend import cpu, cpu_sampling

    lib = _libs()[0]
    cpu_sampling.sampler_threads(lib)  # binds

    def counts():
        return lib.ren_cpu_sample_uniform_threads_here(), cpu_sampling.sampler_threads(lib)

    lib.ren_set_threads(4)
    try:
        assert counts() == (4, 4)
        with ThreadPoolExecutor(1, thread_name_prefix=cpu_sampling.SIDE_BY_SIDE_PREFIX) as pool:
            def inside():
                with cpu_sampling._on_threads(lib, None):
                    return counts()

            assert pool.submit(inside).result() == (2, 2)
    finally:
        lib.ren_set_threads(cpu.threads())
