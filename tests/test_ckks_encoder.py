"""The encoder: canonical embedding against direct evaluation, slot order under rotation and
conjugation (checked on plaintexts through Poly's automorphisms), exact scales, bad input."""

from __future__ import annotations

import cmath
from fractions import Fraction

import numpy as np
import pytest
from ckks_helpers import check_precision, make_params, random_slots
from hypothesis import given
from hypothesis import strategies as st

from ren.ckks import Encoder, Plaintext, ScaleOutOfBoundsError
from ren.ckks.embedding import embed, embed_inverse
from ren.errors import ParameterError, ShapeError
from ren.ring import Domain

P64 = make_params(N=64, depth=2, scale_bits=40, first_bits=55, insecure=True)


def direct_slots(coeffs, N: int) -> list[complex]:
    """z_j = m(ζ^(5^j)) by plain evaluation (ζ = exp(iπ/N)): the definition of the slots."""
    out = []
    for j in range(N // 2):
        root = cmath.exp(1j * cmath.pi * pow(5, j, 2 * N) / N)
        out.append(sum(float(c) * root**i for i, c in enumerate(coeffs)))
    return out


class TestEmbedding:
    @pytest.mark.parametrize("N", [4, 8, 32, 128])
    def test_embed_matches_direct_evaluation(self, N):
        rng = np.random.default_rng(N)
        m = rng.uniform(-1, 1, N)
        assert np.allclose(embed(m, N), direct_slots(m, N), atol=1e-9)

    @pytest.mark.parametrize("N", [4, 16, 256])
    def test_inverse_is_real_and_inverts(self, N):
        rng = np.random.default_rng(N)
        z = random_slots(N // 2, rng)
        m = embed_inverse(z, N)
        assert m.dtype == np.float64
        assert np.allclose(direct_slots(m, N), z, atol=1e-9)


class TestEncoder:
    def test_round_trip_precision(self):
        enc = Encoder(P64)
        z = random_slots(32, np.random.default_rng(1))
        pt = enc.encode(z)
        assert isinstance(pt, Plaintext) and pt.level == 2 and pt.scale == P64.scale(2)
        assert pt.poly.domain is Domain.NTT and pt.poly.ring == P64.ring(2)
        assert not pt.poly.is_realized  # lazy until decoded
        check_precision(enc.decode(pt), z, 30, "encode/decode N=64")

    def test_decode_real_gives_the_real_slots(self):
        enc = Encoder(P64)
        x = np.random.default_rng(2).uniform(-1, 1, 32)
        got = enc.decode_real(enc.encode(x))
        assert got.dtype == np.float64 and got.shape == (32,) and got.flags.c_contiguous
        assert np.max(np.abs(got - x)) < 2.0 ** -30
        z = x + 1j * x[::-1]  # a complex message: its real parts
        assert np.array_equal(enc.decode_real(enc.encode(z)), enc.decode(enc.encode(z)).real)
        with pytest.raises(ParameterError, match="decode expects a Plaintext"):
            enc.decode_real(x)

    @given(st.lists(st.floats(-1, 1), min_size=1, max_size=32), st.integers(0, 2))
    def test_coefficients_are_rounded_scaled_embedding(self, values, level):
        enc = Encoder(P64)
        pt = enc.encode(values, level=level, scale=2**30)
        coeffs = pt.poly.coefficients()
        expected = np.rint(embed_inverse(np.array(values + [0] * (32 - len(values)),
                                                  dtype=complex), 64) * 2**30)
        assert coeffs == [int(c) for c in expected]

    def test_slot_order_rotation_and_conjugation(self):
        enc = Encoder(P64)
        z = random_slots(32, np.random.default_rng(2))
        pt = enc.encode(z)
        for k in (1, 5, -1, -7, 31, 33):
            rot = Plaintext(pt.poly.rotate(k), pt.scale, pt.level, P64)
            check_precision(enc.decode(rot), np.roll(z, -k), 30, f"plaintext rotate({k})")
        conj = Plaintext(pt.poly.conjugate(), pt.scale, pt.level, P64)
        check_precision(enc.decode(conj), np.conj(z), 30, "plaintext conjugate")

    def test_scalar_broadcast_and_padding(self):
        enc = Encoder(P64)
        assert np.allclose(enc.decode(enc.encode(0.5)), 0.5, atol=1e-8)
        got = enc.decode(enc.encode([1.0, -2.0]))
        assert np.allclose(got[:2], [1, -2], atol=1e-8) and np.allclose(got[2:], 0, atol=1e-8)

    def test_exact_rational_scale(self):
        enc = Encoder(P64)
        s = Fraction(2**41, 3)
        pt = enc.encode([0.25], scale=s)
        assert pt.scale == s
        assert abs(enc.decode(pt)[0] - 0.25) < 1e-9

    def test_huge_scale_uses_python_ints(self):
        enc = Encoder(P64)
        pt = enc.encode([0.5, -0.5], level=2, scale=2**70)
        assert max(abs(c) for c in pt.poly.coefficients()) > 2**62
        assert np.allclose(enc.decode(pt)[:2], [0.5, -0.5], atol=1e-12)

    @pytest.mark.parametrize("bad,err", [
        (np.zeros(33), ShapeError), (np.zeros((2, 2)), ShapeError), (["a"], ShapeError),
        ([float("nan")], ParameterError), ([float("inf")], ParameterError)])
    def test_bad_values(self, bad, err):
        with pytest.raises(err):
            Encoder(P64).encode(bad)

    def test_value_too_large_for_level(self):
        with pytest.raises(ParameterError, match="beyond Q/2"):
            Encoder(P64).encode([2.0**20], level=0)

    @pytest.mark.parametrize("scale", [0, -1.0, float("nan"), "2", True])
    def test_bad_scale(self, scale):
        with pytest.raises(ParameterError):
            Encoder(P64).encode([1.0], scale=scale)

    def test_decode_checks_type_and_params(self):
        other = make_params(N=64, depth=1, scale_bits=40, first_bits=55, insecure=True)
        pt = Encoder(other).encode([1.0])
        with pytest.raises(ParameterError):
            Encoder(P64).decode(pt)
        with pytest.raises(ParameterError):
            Encoder(P64).decode("not a plaintext")


# -- issue 38: found by tests/api_fuzz.py ---------------------------------------------------------
def test_values_that_overflow_the_embedding_are_refused():
    """Before: ValueError "cannot convert NaN to integer ratio" (1e308 is finite, its FFT is
    not)."""
    enc = Encoder(P64)
    for call in (lambda: enc.encode([1e308]), lambda: enc.coefficients(1e308, 2**20)):
        with pytest.raises(ScaleOutOfBoundsError, match="overflow float64 in the embedding"):
            call()


@pytest.mark.parametrize("bad, error, match", [
    ("x", ParameterError, r"keep_values: values must be a finite int, float or complex"),
    ({}, ParameterError, r"keep_values: values must be a finite int, float or complex"),
    (object(), ParameterError, r"keep_values: values must be a finite"),
    ([0.5, "x"], ParameterError, r"keep_values: values\[1\] must be a finite"),
    ([[0.5]], ParameterError, r"keep_values: values\[0\] must be a finite"),
    (np.zeros((2, 2)), ShapeError, r"keep_values: values must be one number or a 1-D vector"),
    (np.array([np.nan]), ParameterError, r"keep_values: values must be finite"),
    (np.zeros(64), ShapeError, r"keep_values: 64 values do not fit 32 slots"),
])
def test_keep_values_checks_its_values(bad, error, match):
    """Before: ValueError/TypeError from NumPy ("could not convert string to complex", "must be
    real number, not dict"), or a 2-D array or a NaN kept as the plaintext's values."""
    pt = Encoder(P64).encode([0.5])
    with pytest.raises(error, match=match):
        pt.keep_values(bad)


def test_from_rlwe_needs_an_rlwe_ciphertext():
    """Before: AttributeError ("'str' object has no attribute 'params'")."""
    from ren.ckks import Ciphertext

    with pytest.raises(ParameterError, match=r"Ciphertext\.from_rlwe: ct must be a Ciphertext"):
        Ciphertext.from_rlwe("ct", 2**40)
