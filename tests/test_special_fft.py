"""The special FFT's sparse factors (`ren.ckks.special_fft`) against NumPy's FFT-based encoding
(`ren.ckks.embedding.embed`, the special DFT) and against dense matrix products."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ren.ckks.embedding import embed, embed_inverse
from ren.ckks.special_fft import (
    apply_diagonals,
    bit_reverse,
    merge_stages,
    multiply_diagonals,
    special_fft_stages,
)
from ren.errors import ParameterError

SIZES = [2, 4, 8, 64, 1024]


def _dense(d: dict[int, np.ndarray], n: int) -> np.ndarray:
    m = np.zeros((n, n), complex)
    rows = np.arange(n)
    for k, v in d.items():
        m[rows, (rows + k) % n] += v
    return m


def _halves(m: np.ndarray) -> np.ndarray:
    n = len(m) // 2
    return m[:n] + 1j * m[n:]


@pytest.mark.parametrize("n", SIZES)
def test_the_stages_are_the_encoding(n):
    """U·BR·(m_lo + i·m_hi) = the slots of m, for the factors applied one after another."""
    m = np.random.default_rng(n).normal(size=2 * n)
    x = bit_reverse(_halves(m))
    for s in special_fft_stages(n):
        assert len(s) <= 3  # diagonals 0 and ±len/2
        x = apply_diagonals(s, x)
    assert np.allclose(x, embed(m, 2 * n), atol=1e-9 * n)


@pytest.mark.parametrize("n", SIZES)
def test_the_inverse_stages_decode_into_bit_reversed_coefficients(n):
    z = np.random.default_rng(n + 1).normal(size=n) + 1j * np.random.default_rng(n).normal(size=n)
    y = z
    for s in special_fft_stages(n, inverse=True):
        y = apply_diagonals(s, y)
    assert np.allclose(y, bit_reverse(_halves(embed_inverse(z, 2 * n))), atol=1e-12 * n)


@pytest.mark.parametrize(("n", "groups"), [(8, 1), (8, 3), (64, 2), (1024, 3), (1024, 4)])
def test_merged_groups_multiply_out_to_the_same_map(n, groups):
    stages = special_fft_stages(n, inverse=True)
    merged = merge_stages(stages, groups)
    assert len(merged) == groups
    want = np.eye(n)
    for s in stages:
        want = _dense(s, n) @ want
    got = np.eye(n)
    for g in merged:
        got = _dense(g, n) @ got
    assert np.allclose(got, want, atol=1e-12)
    # r merged butterfly stages of distances d..2^(r-1)·d touch at most 2^(r+1) − 1 diagonals
    sizes = [len(stages) // groups + (g >= groups - len(stages) % groups) for g in range(groups)]
    for g, r in zip(merged, sizes, strict=True):
        assert len(g) <= 2 ** (r + 1) - 1


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.data())
def test_multiply_diagonals_is_the_matrix_product(log_n, data):
    n = 1 << log_n
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    def random_diagonals():
        keys = data.draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=n))
        return {k: rng.normal(size=n) + 1j * rng.normal(size=n) for k in keys}
    a, b = random_diagonals(), random_diagonals()
    assert np.allclose(_dense(multiply_diagonals(a, b, n), n), _dense(a, n) @ _dense(b, n))
    x = rng.normal(size=n)
    assert np.allclose(apply_diagonals(a, x), _dense(a, n) @ x)


def test_bit_reverse_is_an_involution_and_a_permutation():
    x = np.arange(64)
    assert sorted(bit_reverse(x)) == list(x) and list(bit_reverse(bit_reverse(x))) == list(x)
    assert list(bit_reverse(np.arange(8))) == [0, 4, 2, 6, 1, 5, 3, 7]


def test_bad_sizes():
    for n in (0, 1, 3, 12):
        with pytest.raises(ParameterError, match="power of two"):
            special_fft_stages(n)
    stages = special_fft_stages(8)
    for g in (0, 4):
        with pytest.raises(ParameterError, match=r"groups must be in \[1, 3\]"):
            merge_stages(stages, g)
