"""The "cpu" device's sampler (cpu_ring_sample.c through ren.backend.cpu_sampling): its SHAKE-128
is hashlib's, its uniform residues are `ren.sampling.sample`'s on every vector path and at every
thread count, and the device samples random polynomials with it (so key generation and
encryption give the "python" device's words)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sampling_helpers import on_threads, ring_paths

import ren
from ren.backend.c_host import find_cc
from ren.random import RandomSpec
from ren.ring import RingSpec
from ren.sampling import UNIFORM_PREFIX, sample

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")

#: rings over the moduli sizes Ren uses, 17 to 31 bits (a small prime keeps ~2/3 of the words)
RINGS = [RingSpec.generate(16, 3, 17), RingSpec.generate(64, 2, 31),
         RingSpec.generate(1024, 4, 30), RingSpec.generate(256, 5, 24)]


@pytest.fixture
def c_sampler_calls(monkeypatch) -> list[str]:
    """The kinds of the specs the cpu device's C sampler is asked for, while a test runs."""
    from ren.backend import cpu_sampling

    calls: list[str] = []
    real = cpu_sampling.sample

    def counted(lib, spec, ring, **form):
        calls.append(spec.kind)
        return real(lib, spec, ring, **form)

    monkeypatch.setattr(cpu_sampling, "sample", counted)
    return calls


@pytest.mark.parametrize("length", [0, 1, 54, 135, 136, 137, 166, 167, 168, 169, 272, 335, 336,
                                    337, 600])
def test_shake128_is_hashlib(length: int) -> None:
    from ren.backend.cpu_sampling import shake128

    msg = bytes((7 * i + 3) % 256 for i in range(length))  # every rate boundary, padding byte
    for _isa, lib in ring_paths():
        for nbytes in (0, 1, 167, 168, 169, 1000):
            assert shake128(lib, msg, nbytes) == hashlib.shake_128(msg).digest(nbytes)
            # SHAKE-256 (rate 136) through the same absorb and squeeze
            assert shake128(lib, msg, nbytes, 256) == hashlib.shake_256(msg).digest(nbytes)


@settings(max_examples=30, deadline=None)
@given(msg=st.binary(max_size=400), nbytes=st.integers(0, 700))
def test_shake128_is_hashlib_on_any_message(msg: bytes, nbytes: int) -> None:
    from ren.backend import cpu
    from ren.backend.cpu_sampling import shake128

    assert shake128(cpu.ring_library(), msg, nbytes) == hashlib.shake_128(msg).digest(nbytes)


@settings(max_examples=25, deadline=None)
@given(seed=st.binary(max_size=64), ring=st.sampled_from(RINGS))
def test_uniform_rows_are_ren_samplings_on_every_path(seed: bytes, ring: RingSpec) -> None:
    from ren.backend.cpu_sampling import sample_uniform

    spec = RandomSpec("uniform", (), seed, "cpu")
    want = sample(spec, ring)
    for isa, lib in ring_paths():
        got = sample_uniform(lib, spec, ring)
        assert got is not None and got.dtype == np.uint32 and np.array_equal(got, want), isa


def test_every_thread_count_gives_the_same_words() -> None:
    from ren.backend import cpu
    from ren.backend.cpu_sampling import sample_uniform

    ring = RingSpec.generate(4096, 12, 30)  # above the library's threshold for a team
    spec = RandomSpec("uniform", (), b"threads", "cpu")
    lib = cpu.ring_library()
    want = sample(spec, ring)
    for n in (1, 2, 3):
        assert np.array_equal(on_threads(lib, n, lambda: sample_uniform(lib, spec, ring)),
                              want), n
    assert int(want.max()) < max(ring.moduli) and len(np.unique(want[0])) > 4000


def test_the_device_samples_every_kind_in_c(monkeypatch, c_sampler_calls) -> None:
    import ren.backend
    from ren.backend import cpu, cpu_sampling, get_device

    dev = get_device("cpu")
    ring = RINGS[2]
    calls = c_sampler_calls
    real = cpu_sampling.sample_uniform
    in_python = []
    monkeypatch.setattr(ren.backend, "sample", lambda spec, ring: in_python.append(spec.kind)
                        or sample(spec, ring))
    for kind, params in [("uniform", ()), ("gaussian", (3.2,)), ("ternary", ()),
                         ("sparse_ternary", (5,)), ("uniform_on_interval", (-9, 9))]:
        spec = RandomSpec(kind, params, b"kinds", "cpu")
        assert np.array_equal(dev.sample(spec, ring), sample(spec, ring)), kind
    assert calls == ["uniform", "gaussian", "ternary", "sparse_ternary", "uniform_on_interval"]
    assert in_python == []
    # the longest seed the C sampler takes (1024 bytes of input in all), and one byte more:
    # Python samples that one, the same words
    lib = cpu.ring_library(dev.isa)
    assert lib.ren_cpu_sample_max_input() == 1024
    longest = b"x" * (1024 - len(UNIFORM_PREFIX) - 4)
    spec = RandomSpec("uniform", (), longest, "cpu")
    assert np.array_equal(real(lib, spec, ring), sample(spec, ring))
    spec = RandomSpec("uniform", (), longest + b"y", "cpu")
    assert real(lib, spec, ring) is None
    assert np.array_equal(dev.sample(spec, ring), sample(spec, ring))
    with pytest.raises(ValueError, match="not uniform"):
        real(lib, RandomSpec("ternary", (), b"", "cpu"), ring)


def test_random_polynomials_and_keys_match_the_python_device(c_sampler_calls) -> None:
    used = c_sampler_calls
    ring = RINGS[2]
    words = {}
    for device in ("python", "cpu"):
        with ren.random.seeded(11):
            a = ren.Poly.uniform(ring, device=device, domain="ntt")
            e = ren.Poly.gaussian(ring, device=device)
            words[device] = [p.realize().tolist() for p in (a, e, a * e + e.ntt())]
    assert words["cpu"] == words["python"] and used


def test_ckks_keys_and_ciphertexts_match_the_python_device() -> None:
    from ren.ckks import CKKSParams, Encoder, Encryptor, KeyGenerator
    from ren.ckks.params import InsecureParametersWarning

    out = {}
    for device in ("python", "cpu"):
        with pytest.warns(InsecureParametersWarning):
            params = CKKSParams(N=256, depth=2, scale_bits=30, device=device, insecure=True)
        with ren.random.seeded(4):
            kg = KeyGenerator(params)
            rlk = kg.relin_key()
            ct = Encryptor(params, kg.public_key()).encrypt(Encoder(params).encode([0.5, -1]))
        out[device] = [p.tolist() for p in (*ct.parts, *rlk.b, *rlk.a)]
    assert out["cpu"] == out["python"]


def test_device_sampling_mode_uses_the_c_sampler_too(c_sampler_calls) -> None:
    """REN_DEVICE_SAMPLING=1: the RANDOM kernel expands its seed itself; on "cpu" its uniform
    values come from the same C sampler, and they are the "python" device's words."""
    used = c_sampler_calls
    ring = RINGS[2]
    words = {}
    for device in ("python", "cpu"):
        with ren.settings.override(REN_DEVICE_SAMPLING=1), ren.random.seeded(12):
            words[device] = ren.Poly.uniform(ring, device=device).realize().tolist()
    assert words["cpu"] == words["python"] and used
