"""The serial parts the threads helper took out of the "cpu" device's encrypt, keygen and
decrypt (issue 42 §4): samples come in the host allocator's own kind of array (so realization
can adopt one as a buffer's storage instead of copying it on one thread), and the decoder's
float pieces run side by side (tests/test_cpu_threads.py checks their words)."""

from __future__ import annotations

import numpy as np
import pytest

import ren.sampling
from ren.backend.c_host import find_cc
from ren.backend.numpy_backend import HOST_ALIGN
from ren.ops import Op
from ren.random import RandomSpec
from ren.ring import RingSpec

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")


@pytest.mark.parametrize("kind, params", [("uniform", ()), ("ternary", ()), ("gaussian", (3.2,))])
def test_cpu_samples_are_aligned_host_arrays_with_the_python_words(kind, params):
    """Every kind the cpu device samples comes as a C-contiguous u32 (L, N) array starting on a
    HOST_ALIGN boundary (what `HostAllocator.alloc` gives), with `ren.sampling`'s words."""
    from ren.backend import cpu

    ring = RingSpec.generate(1024, 3)
    dev = cpu.CpuDevice("cpu")
    for seed in range(4):  # a lucky alignment of a plain np.empty passes one, not four
        spec = RandomSpec(kind, params, bytes([seed]) * 32, "cpu")
        out = dev.sample(spec, ring)
        assert out.dtype == np.uint32 and out.shape == (3, 1024) and out.flags.c_contiguous
        assert out.ctypes.data % HOST_ALIGN == 0, (kind, seed, out.ctypes.data % HOST_ALIGN)
        assert np.array_equal(out, ren.sampling.sample(spec, ring))


@pytest.mark.parametrize("N, src_limbs, dst_limbs, copies", [
    (1 << 14, 3, 1, 0),   # one output row on 2 threads: rows split in pieces
    (1 << 13, 2, 3, 1),   # 3 output rows (one a copy) on 2 threads: pieces too
    (4096, 12, 8, 4),     # whole rows, the conversion's work above the team's threshold
    (4096, 2, 2, 0),      # below the threshold: no team at all
])
def test_basis_conversion_gives_the_same_words_on_one_and_two_threads(N, src_limbs, dst_limbs,
                                                                      copies):
    """The conversion's two loops share one team (one wake-up, a barrier between them): the
    words of `ren.ring.ring_convert_mont` at 1 and 2 threads, with rows copied from the
    source and rows converted."""
    from ren.backend import cpu
    from ren.kernel import RingCall
    from ren.ring import RingKernel, ring_convert_mont

    ring = RingSpec.generate(N, src_limbs + dst_limbs)
    src = RingSpec(N, ring.moduli[:src_limbs])
    dst = RingSpec(N, ring.moduli[src_limbs - copies:src_limbs - copies + dst_limbs])
    rng = np.random.default_rng(N + src_limbs)
    q = np.array(src.moduli, dtype=np.uint64).reshape(-1, 1)
    x = (rng.integers(0, 1 << 62, (src.limbs, N), dtype=np.uint64) % q).astype(np.uint32)
    x[:, :3] = (q - 1).astype(np.uint32)  # the largest residues
    fn = cpu.library_call(RingCall(RingKernel.BASIS_CONVERT, N, src.moduli, dst.moduli))
    assert fn is not None
    dev = cpu.CpuDevice("cpu")
    want = ring_convert_mont(x, src, dst)
    try:
        for t in (1, 2):
            dev.set_threads(t)
            out = np.full((dst.limbs, N), 7, np.uint32)
            fn([out, x])
            assert np.array_equal(out, want), t
    finally:
        dev.set_threads(None)


def test_plan_runs_consecutive_ring_kernels_in_one_team_with_the_same_words():
    """A jitted multiply (key switch: INTT, basis conversion, NTT in a row) and a rotation replay
    with the runs of ring kernels in one OpenMP team each at 2 threads (ren_run_plan), giving
    the words of 1 thread and of the "python" device."""
    import ctypes

    import ren
    from ren.backend import backend_override, cpu
    from ren.ckks import CKKSParams, Encoder, Encryptor, Evaluator, KeyGenerator

    params = CKKSParams(N=1 << 13, depth=3, scale_bits=30, first_bits=40, insecure=True)
    x = np.linspace(-1, 1, 64)

    def run(threads: int | None):
        with ren.random.seeded(5):
            kg = KeyGenerator(params)
            ev = Evaluator(params, relin_key=kg.relin_key(), rotation_keys=kg.rotation_keys([1]))
            enc = Encryptor(params, kg.public_key())
            a, b = (enc.encrypt(Encoder(params).encode(v)) for v in (x, x[::-1]))
        mul = ren.jit(lambda u, v: ev.rescale(ev.multiply(u, v)))
        rot = ren.jit(lambda u: ev.rotate(u, 1))
        for _ in range(2):  # capture, then replay
            out = [mul(a, b), rot(a)]
        words = [p.numpy() for ct in out for p in ct.parts]
        return words, (mul, rot)

    want, _ = run(None)
    dev = cpu.CpuDevice("cpu")
    lib = cpu.ring_library()
    lib.ren_cpu_plan_teams.restype = ctypes.c_longlong
    lib.ren_cpu_plan_teams.argtypes = [ctypes.c_longlong, ctypes.c_void_p, ctypes.c_void_p]
    got = {}
    try:
        with backend_override("python", cpu.open_device):
            for t in (2, 1):
                with ren.settings.override(REN_CPU_THREADS=t):
                    dev.set_threads(t)
                    got[t], jitted = run(t)
                    teams = 0
                    for fn in jitted:
                        runner = fn.plans[0].template.runner
                        assert isinstance(runner, cpu.CompiledPlan)
                        for seg in runner.segments:
                            if seg[0] == "c":
                                teams += lib.ren_cpu_plan_teams(seg[1], ctypes.addressof(seg[2]),
                                                                ctypes.addressof(seg[3]))
                    assert (teams > 0) == (t == 2), (t, teams)
    finally:
        dev.set_threads(None)
    for t in (1, 2):
        assert len(got[t]) == len(want)
        assert all(np.array_equal(g, w) for g, w in zip(got[t], want)), t


def _stored_words(spec, ring) -> np.ndarray:
    """The definition's residues r of `spec` in storage form, r·2^32 mod q_i: what the cpu
    device's sampler writes (`CpuDevice.sample_stored`)."""
    r = ren.sampling.sample(spec, ring).astype(np.uint64) << np.uint64(32)
    return (r % np.array(ring.moduli, dtype=np.uint64)[:, None]).astype(np.uint32)


def test_realization_adopts_a_fresh_aligned_sample_and_copies_anything_else(monkeypatch):
    """A random leaf drawn on the cpu device becomes its buffer's storage as it is (no copy on
    the calling thread); an array the allocator cannot adopt (misaligned, or read-only) is
    copied in; the words are the sampler's either way."""
    from ren import realization
    from ren.backend import cpu
    from ren.backend.numpy_backend import HostAllocator, host_empty

    alloc = HostAllocator()
    good = host_empty((3, 1024))
    assert alloc.can_adopt(good, (3, 1024))
    shifted = host_empty((1, 3 * 1024 + 1)).reshape(-1)[1:].reshape(3, 1024)  # off the line
    assert not alloc.can_adopt(shifted, (3, 1024))
    frozen = host_empty((3, 1024))
    frozen.flags.writeable = False
    assert not alloc.can_adopt(frozen, (3, 1024)) and not alloc.can_adopt(good, (3, 512))

    drawn: list[np.ndarray] = []
    real_sample = cpu.CpuDevice.sample_stored  # (the cpu sampler writes storage form)

    def recording(self, spec, ring):
        out = real_sample(self, spec, ring)
        drawn.append(out)
        return out

    monkeypatch.setattr(cpu.CpuDevice, "sample_stored", recording)
    ring = RingSpec.generate(1024, 3)
    p = ren.Poly.uniform(ring, device="cpu")
    (subst,) = realization.sample_random_leaves([p.node]).values()
    stored = subst.src[0]  # the sample's buffer (as a ring), in storage form already
    assert len(drawn) == 1 and stored.op is Op.BUFFER
    held = stored.arg.array()
    assert np.shares_memory(held, drawn[0])  # adopted, not copied
    assert np.array_equal(held, _stored_words(p.random_origin(), ring))
    # an array it cannot adopt is copied in, with the same words
    monkeypatch.setattr(cpu.CpuDevice, "sample_stored", lambda self, spec, ring: np.array(
        _stored_words(spec, ring)[:, ::-1][:, ::-1], order="F"))
    q = ren.Poly.uniform(ring, device="cpu")
    (subst,) = realization.sample_random_leaves([q.node]).values()
    copied = subst.src[0].arg.array()
    assert not np.shares_memory(copied, drawn[0])
    assert np.array_equal(copied, _stored_words(q.random_origin(), ring))


@pytest.mark.parametrize("threads", [1, 2])
def test_random_leaves_are_drawn_on_as_many_threads_as_the_device_has(monkeypatch, threads):
    """An encryption's random leaves are drawn side by side, but never on more threads than
    the device's (`Device.sampling_threads`): with one, every draw runs on the calling thread
    (a one-thread benchmark uses one thread); the words are the sampler's in order."""
    import threading

    from ren import realization
    from ren.backend import cpu

    where: list[int] = []
    real_sample = cpu.CpuDevice.sample_stored  # (the cpu sampler writes storage form)

    def recording(self, spec, ring):
        where.append(threading.get_ident())
        return real_sample(self, spec, ring)

    monkeypatch.setattr(cpu.CpuDevice, "sample_stored", recording)
    dev = ren.device.get_device("cpu")
    ring = RingSpec.generate(1024, 2)
    polys = [ren.Poly.uniform(ring, device="cpu") for _ in range(5)]
    try:
        dev.set_threads(threads)
        assert dev.sampling_threads() == threads
        subst = realization.sample_random_leaves([p.node for p in polys])
    finally:
        dev.set_threads(None)
    assert len(where) == 5
    assert (set(where) == {threading.get_ident()}) is (threads == 1)
    assert len(set(where)) <= threads
    for p in polys:  # (in storage form: the substitute is the buffer itself)
        got = subst[p.node].src[0].arg.array()
        assert np.array_equal(got, _stored_words(p.random_origin(), ring))
