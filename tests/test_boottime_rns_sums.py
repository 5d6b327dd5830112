"""The cpu ring library's sums of products in registers (`cpu_ring_avx512.c`'s q_sum16, used by
`cpu_ring_rns.c`'s basis conversion and by the mod-down/rescale by more than RESCALE_FOLD
moduli) against Python big integers.

Those loops fold a 64-bit sum (hi 2^32 + lo -> hi (2^32 mod p) + lo) instead of reducing it
every few terms, and reduce once at the end: the words must be the canonical residues the
chunked scalar form gives.  The cases reach the bounds that decide the folds: 31-bit moduli
(two terms fit after a fold, four from zero), words at q - 1, many source rows (several folds),
rows of 16 words (one vector) and more, and N not a multiple of 16 (the scalar form)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_rescale_kernel import big_rescale

from ren.backend.cpu_calls import library_call
from ren.kernel import RingCall
from ren.ring import RingKernel, RingSpec
from ren.ring.ringspec import ntt_primes

R = 1 << 32


def _lib():
    from ren.backend import cpu
    return cpu.ring_library()


def big_bconv(words: np.ndarray, src: tuple[int, ...], dst: tuple[int, ...]) -> np.ndarray:
    """The fast basis conversion's words (Montgomery form in and out): a destination modulus that
    is a source one copies its row; any other p gets sum_i [x_i qhat_i^-1]_(q_i) (Q/q_i) mod p."""
    Q = 1
    for q in src:
        Q *= q
    out = np.empty((len(dst), words.shape[1]), np.uint32)
    for d, p in enumerate(dst):
        if p in src:
            out[d] = words[src.index(p)]
            continue
        for j in range(words.shape[1]):
            s = 0
            for i, q in enumerate(src):
                v = int(words[i, j]) * pow(R, -1, q) % q
                s += v * pow(Q // q, -1, q) % q * (Q // q)
            out[d, j] = s % p * R % p
    return out


def _words(rng: np.random.Generator, moduli: tuple[int, ...], n: int, extreme: bool) -> np.ndarray:
    words = np.stack([rng.integers(0, q, n) for q in moduli]).astype(np.uint32)
    if extreme:  # the largest residue of every row in half the coefficients: the largest sums
        words[:, : n // 2] = np.array(moduli, np.uint32)[:, None] - 1
    return words


@st.composite
def bconv_case(draw):
    bits = draw(st.sampled_from((20, 30, 31)))
    n = draw(st.sampled_from((8, 16, 48, 64)))  # 8: the scalar form; 48: three vectors
    ls = draw(st.integers(1, 13))
    ld = draw(st.integers(1, 4))
    copies = draw(st.integers(0, min(2, ls)))
    pool = ntt_primes(2048, bits, ls + ld)
    moduli = tuple(draw(st.permutations(pool)))
    src, dst = moduli[:ls], moduli[ls:ls + ld] + moduli[:copies]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return src, dst, _words(rng, src, n, draw(st.booleans()))


@settings(max_examples=60, deadline=None)
@given(bconv_case())
def test_basis_conversion_matches_big_integers(case):
    src, dst, words = case
    n = words.shape[1]
    call = library_call(RingCall(RingKernel.BASIS_CONVERT, n, src, dst), _lib())
    assert call is not None
    out = np.full((len(dst), n), 0xFFFFFFFF, np.uint32)
    call([out, words])
    assert np.array_equal(out, big_bconv(words, src, dst))


@st.composite
def wide_rescale_case(draw):
    """K = 4..12 dropped moduli (the folded form; several folds from K = 3 on with 31-bit
    moduli), L kept ones, Z of them rows of 0 not passed (a key switch's mod-down)."""
    bits = draw(st.sampled_from((20, 30, 31)))
    n = draw(st.sampled_from((8, 32, 1024)))  # 1024: two 512-word blocks
    k = draw(st.integers(4, 12))
    kept = draw(st.integers(1, 3))
    zero = draw(st.integers(0, kept))
    pool = ntt_primes(2048, bits, kept + k)
    moduli = tuple(draw(st.permutations(pool)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    words = _words(rng, moduli, n, draw(st.booleans()))
    if draw(st.booleans()):  # every mixed-radix digit at its largest (p_s - 1) in half the words
        P = 1
        for p in moduli[-k:]:
            P *= p
        v = P - 1 - P // 2  # x + floor(P/2) = P - 1 (mod P)
        for j, p in enumerate(moduli[-k:], len(moduli) - k):
            words[j, ::2] = v % p * R % p
    words[:zero] = 0
    return RingSpec(n, moduli), k, zero, words


@settings(max_examples=40, deadline=None)
@given(wide_rescale_case())
def test_wide_rescale_matches_big_integers(case):
    ring, k, zero, words = case
    call = library_call(RingCall(RingKernel.RESCALE, ring.N, ring.moduli,
                                 ring.drop_last(k).moduli, dropped=ring.moduli[-k:],
                                 zero_rows=zero), _lib())
    assert call is not None
    out = np.full((ring.limbs - k, ring.N), 0xFFFFFFFF, np.uint32)
    call([out, words[zero:].copy()])
    assert np.array_equal(out, big_rescale(words, ring, k))


def test_largest_sums_of_31_bit_moduli():
    """13 sources of the largest 31-bit primes, every y_i = [x_i qhat_i^-1]_(q_i) at q_i - 1
    (the largest terms the sums can meet): the most folds, each near its bound (a fixed case
    beside the drawn ones)."""
    n = 32
    pool = tuple(ntt_primes(n, 31, 17))
    src, dst = pool[:13], pool[13:]
    Q = 1
    for q in src:
        Q *= q
    # x_i = (q_i - 1) qhat_i R mod q_i gives y_i = q_i - 1 (x is in Montgomery form)
    top = [(q - 1) * (Q // q) * R % q for q in src]
    words = np.array(top, np.uint32)[:, None] + np.zeros((1, n), np.uint32)
    words[:, ::3] = np.array(src, np.uint32)[:, None] - 1  # and some plain extremes
    call = library_call(RingCall(RingKernel.BASIS_CONVERT, n, src, dst), _lib())
    out = np.empty((len(dst), n), np.uint32)
    call([out, words])
    assert np.array_equal(out, big_bconv(words, src, dst))
