"""Serial parts taken out of key generation, encryption and decryption on the "cpu" device
(issue 42 §4): a sampled leaf's NTT reads the sample's buffer itself, and its conversion to
storage form (times 2^32) moves after the transform, where it fuses into the kernel that reads
the transform (`ren.realization._transformed_samples`), on a device whose sampler writes the
standard form; the "cpu" device's sampler writes storage form itself (`Device.sample_stored`),
which leaves realization nothing to convert.  The words must not change."""

from __future__ import annotations

import numpy as np
import pytest

import ren
import ren.random
from ren import realization
from ren.backend import backend_override, cpu
from ren.backend.c_host import find_cc
from ren.ops import Op
from ren.poly import Poly
from ren.ring import RingSpec

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")


def _no_fold(nodes, samples):
    return {}


def _standard(self, spec, ring):
    return None  # `Device.sample_stored`'s default: the sampler writes the standard form


@pytest.fixture
def standard_samples(monkeypatch):
    """The "cpu" device's samples in standard form, as a device without a storage-form sampler
    gives them (the fold's case)."""
    monkeypatch.setattr(cpu.CpuDevice, "sample_stored", _standard)


def _graph(ring: RingSpec) -> list[Poly]:
    """Key generation's and encryption's shapes: e.ntt() - a·s (a uniform in the NTT domain,
    an output too), a ternary's NTT as an output, a Gaussian's NTT read by two kernels, and
    ring products of coefficient-domain leaves: v·b and a·v (v read by both), v·e2 (two
    leaves), v·c (c a coefficient-domain polynomial), v·3 (a scalar)."""
    s = Poly.ternary(ring, device="cpu")
    a = Poly.uniform(ring, device="cpu", domain="NTT")
    e = Poly.gaussian(ring, 3.2, device="cpu").ntt()
    s_ntt = s.ntt()
    v = Poly.ternary(ring, device="cpu")
    e2 = Poly.gaussian(ring, 3.2, device="cpu")
    c = Poly.uniform(ring, device="cpu") + 1
    return [e - a * s_ntt, a, s_ntt, e * 3, e + a, v * e + e2.ntt(), a * v, v * e2, v * c, v * 3]


def _words(fold: bool, monkeypatch: pytest.MonkeyPatch, seed: int) -> list[np.ndarray]:
    monkeypatch.setattr(realization, "_transformed_samples",
                        _TRANSFORMED if fold else _no_fold)
    ring = RingSpec.generate(1024, 3)
    with ren.random.seeded(seed), backend_override("python", cpu.open_device):
        polys = _graph(ring)
        polys[0].realize(*polys[1:])
        return [p.numpy() for p in polys]


_TRANSFORMED = realization._transformed_samples


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_sampled_leafs_ntt_folds_its_conversion_with_the_same_words(monkeypatch, threads,
                                                                     standard_samples):
    """Realizing with the fold gives the words realizing without it gives (the NTT is linear),
    at 1, 2 and 3 device threads, for several seeds."""
    dev = cpu.CpuDevice("cpu")
    try:
        dev.set_threads(threads)
        for seed in range(3):
            got = _words(True, monkeypatch, seed)
            want = _words(False, monkeypatch, seed)
            for g, w in zip(got, want, strict=True):
                assert np.array_equal(g, w)
    finally:
        dev.set_threads(None)


def test_the_fold_maps_each_ntt_of_a_sampled_leaf(standard_samples):
    """Each NTT of a sampled leaf maps to (NTT of the sample's buffer) × 2^32 in the NTT
    domain; a leaf read by anything else keeps `sample_random_leaves`' substitute."""
    ring = RingSpec.generate(1024, 2)
    with backend_override("python", cpu.open_device):
        g = Poly.gaussian(ring, 3.2, device="cpu")
        u = Poly.uniform(ring, device="cpu", domain="NTT")
        nodes = [(g.ntt() - u).node, (g * 2).node]
        samples = realization.sample_random_leaves(nodes)
        assert len(samples) == 2
        folded = realization._transformed_samples(nodes, samples)
    assert list(folded) == [g.ntt().node]
    sub = folded[g.ntt().node]
    assert sub.op is Op.MUL
    transform, const = sub.src
    assert transform.op is Op.NTT and transform.src[0] is samples[g.node].src[0]
    c = const.src[0]
    assert c.op is Op.CONST and c.arg[0] == (1 << 32) % ring.Q
    assert const.arg == (ring, ren.ring.Domain.NTT)


@pytest.mark.parametrize("shape", ["public key", "encryption"])
def test_the_fold_saves_a_kernel(monkeypatch, shape, standard_samples):
    """The conversion before the transform was a kernel of its own: with the fold, the
    template of e.ntt() - a·s (a public key's b), and that of v·b, v·a (an encryption's
    ternary, its transform read by two products), has one kernel fewer."""
    ring = RingSpec.generate(1024, 3)
    counts = {}
    for fold in (False, True):
        monkeypatch.setattr(realization, "_transformed_samples",
                            _TRANSFORMED if fold else _no_fold)
        with backend_override("python", cpu.open_device):
            s = Poly.ternary(ring, device="cpu").ntt().realize()
            a = Poly.uniform(ring, device="cpu", domain="NTT")
            if shape == "public key":
                b = Poly.gaussian(ring, 3.2, device="cpu").ntt() - a * s
                b.realize(a)
            else:
                a.realize()
                v = Poly.ternary(ring, device="cpu")
                (v * s).realize(v * a)
            counts[fold] = realization.last_timings.kernels
    assert counts[True] == counts[False] - 1, counts


_STORED = cpu.CpuDevice.sample_stored


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_samples_in_storage_form_give_the_same_words(monkeypatch, threads):
    """A device sampler that writes storage form (``sample_stored``: the cpu sampler with
    ``stored=True``) leaves realization nothing to convert: the same words as the standard form
    times 2^32, with and without the fold, at 1, 2 and 3 device threads."""
    dev = cpu.CpuDevice("cpu")
    try:
        dev.set_threads(threads)
        for seed in range(2):
            monkeypatch.setattr(cpu.CpuDevice, "sample_stored", _standard)
            want = _words(True, monkeypatch, seed)
            monkeypatch.setattr(cpu.CpuDevice, "sample_stored", _STORED)
            for fold in (True, False):
                got = _words(fold, monkeypatch, seed)
                for g, w in zip(got, want, strict=True):
                    assert np.array_equal(g, w), (seed, fold)
    finally:
        dev.set_threads(None)


def test_a_stored_sample_is_its_buffer_and_saves_the_outputs_conversion(monkeypatch):
    """With storage-form samples the substitute of a leaf is its buffer (no product by 2^32),
    the fold maps nothing, and a public key's template (a uniform output) has a kernel fewer."""
    ring = RingSpec.generate(1024, 3)
    counts = {}
    for stored in (False, True):
        monkeypatch.setattr(cpu.CpuDevice, "sample_stored", _STORED if stored else _standard)
        with backend_override("python", cpu.open_device):
            s = Poly.ternary(ring, device="cpu").ntt().realize()
            a = Poly.uniform(ring, device="cpu", domain="NTT")
            e = Poly.gaussian(ring, 3.2, device="cpu")
            b = e.ntt() - a * s
            nodes = [b.node, a.node]
            samples = realization.sample_random_leaves(nodes)
            assert all((sub.op is Op.AS_RING) is stored for sub in samples.values())
            assert bool(realization._transformed_samples(nodes, samples)) is not stored
            b.realize(a)
            counts[stored] = realization.last_timings.kernels
    assert counts[True] == counts[False] - 1, counts
