"""The encoder's fused rounding and its message polynomial (issue 42 §4, stop 58).

`ren.ckks.embedding.embed_inverse_rounded` scales and rounds the coefficients inside the two
half transforms' tasks (on both threads): the integers must be exactly those of the passes it
replaces, NumPy's rint(embed_inverse(z)·Δ), at every thread count.  `encoder._message_poly`
hands the int64 coefficients to TO_RNS as their own bytes: the residues must be c mod q_i
(NumPy) and those of `Poly.from_coefficients`.  An encoding decodes to the values (NumPy)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ren.backend import backend_override, cpu
from ren.backend.c_host import find_cc
from ren.ckks import CKKSParams, Encoder
from ren.ckks import encoder as encoder_module
from ren.ckks.embedding import embed_inverse, embed_inverse_rounded
from ren.ckks.errors import ScaleOutOfBoundsError
from ren.errors import ParameterError
from ren.ops import Op
from ren.poly import Poly
from ren.ring import RingSpec

needs_cc = pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")


def _slots(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    if kind == "complex":
        return rng.uniform(-1, 1, n) + 1j * rng.uniform(-1, 1, n)
    if kind == "real":
        return rng.uniform(-1, 1, n).astype(np.complex128)
    if kind == "zeros":
        return np.zeros(n, dtype=np.complex128)
    if kind == "spiky":  # a few large slots: coefficients far from uniform
        z = np.zeros(n, dtype=np.complex128)
        z[rng.integers(0, n, 5)] = rng.uniform(-1e3, 1e3, 5)
        return z
    raise ValueError(kind)


@pytest.mark.parametrize("N", [1 << 14, 1 << 15])
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("kind", ["complex", "real", "zeros", "spiky"])
def test_the_fused_rounding_gives_numpys_integers(N, threads, kind):
    rng = np.random.default_rng(N + threads + len(kind))
    z = _slots(rng, N // 2, kind)
    for scale in (2.0 ** 20, 2.0 ** 40, 2.0 ** 47 * 1.5, 12345.678):
        got = embed_inverse_rounded(z, N, scale, threads)
        assert got is not None
        c, top = got
        m = embed_inverse(z, N, 1)
        assert c.dtype == np.int64 and c.shape == (N,)
        assert np.array_equal(c, np.rint(m * scale).astype(np.int64))
        assert top == float(np.max(np.abs(m)))


def test_below_the_split_there_is_nothing_to_fuse():
    z = np.ones(512, dtype=np.complex128)
    assert embed_inverse_rounded(z, 1024, 2.0 ** 30) is None


def test_a_nan_gives_a_nan_peak_for_the_caller_to_refuse():
    z = np.zeros(1 << 13, dtype=np.complex128)
    z[3] = np.nan
    _, top = embed_inverse_rounded(z, 1 << 14, 2.0 ** 30, 2)
    assert math.isnan(top)


@needs_cc
@pytest.mark.parametrize("device", ["cpu", "python"])
def test_the_message_poly_holds_the_coefficients_residues(device):
    ring = RingSpec.generate(1 << 10, 4)
    rng = np.random.default_rng(5)
    c = rng.integers(-(1 << 61), 1 << 61, ring.N, dtype=np.int64)
    c[:4] = [0, -1, 1, -(1 << 61)]
    with backend_override("python", cpu.open_device):
        p = encoder_module._message_poly(c, ring, device)
        assert p.node.op is Op.TO_RNS and p.node.arg == (ring, 2)
        want = np.stack([np.mod(c, q) for q in ring.moduli]).astype(np.uint32)
        assert np.array_equal(p.numpy(), want)
        assert np.array_equal(Poly.from_coefficients(c, ring, device=device).numpy(), want)
        # (anything else takes from_coefficients: a list of Python ints)
        q = encoder_module._message_poly([int(x) for x in c], ring, device)
        assert np.array_equal(q.numpy(), want)


def _params() -> CKKSParams:
    return CKKSParams.fastest_key_switching(N=1 << 14, depth=3, scale_bits=40, first_bits=50,
                                            insecure=True)


@needs_cc
@pytest.mark.parametrize("threads", [1, 2])
def test_an_encoding_decodes_to_its_values_with_the_same_coefficients(threads):
    p = _params()
    enc = Encoder(p)
    rng = np.random.default_rng(9)
    x = rng.uniform(-1, 1, p.slots) + 1j * rng.uniform(-1, 1, p.slots)
    dev = cpu.CpuDevice("cpu")
    try:
        with backend_override("python", cpu.open_device):
            dev.set_threads(threads)
            pt = enc.encode(x)
            back = enc.decode(pt)
            c = np.array(enc.coefficients(x, p.scale(p.depth)), dtype=np.int64)
            m = embed_inverse(x, p.N, 1)
            assert np.array_equal(c, np.rint(m * float(p.scale(p.depth))).astype(np.int64))
            coeff = pt.poly.intt().numpy()
            want = np.stack([np.mod(c, q) for q in pt.poly.ring.moduli]).astype(np.uint32)
            assert np.array_equal(coeff, want)
    finally:
        dev.set_threads(None)
    assert np.max(np.abs(back - x)) < 2.0 ** -25


def test_values_too_large_still_take_the_checked_path():
    p = _params()
    enc = Encoder(p)
    with pytest.raises(ScaleOutOfBoundsError):
        enc.encode(np.full(p.slots, 1e45))  # (beyond Q/2 = 2^169)
    with pytest.raises(ScaleOutOfBoundsError):
        enc.encode(np.full(p.slots, 1e300), scale=2.0 ** 40)
    with pytest.raises(ParameterError):
        enc.encode(np.full(p.slots, np.nan))
    # beyond int64 but within the level's modulus: exact Python ints (the passes' path)
    big = enc.coefficients(np.full(p.slots, 2.0 ** 30), 2.0 ** 40)
    assert max(abs(v) for v in big) > 1 << 63
