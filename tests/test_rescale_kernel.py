"""The cpu device's RESCALE kernel (`ren/backend/cpu_ring_rns.c`) against Python big integers:
floor((x + floor(P/2)) / P) of every CRT-lifted coefficient, reduced mod the kept moduli (words
in Montgomery form, w = x·2^32 mod q, in and out).

The kernel has two forms for the kept rows: up to RESCALE_FOLD (3) dropped moduli, one 64-bit sum
of K + 1 products and one reduction per word; from 4 on, the digits' sums in chunks, then the
subtraction and the product by P^-1.  Both must give the exact rounding on rings of 20- to
31-bit moduli (the 31-bit ones decide whether K + 1 products fit in 64 bits), over several
256-coefficient blocks and a partial one."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ren.backend.cpu_calls import library_call
from ren.kernel import RingCall
from ren.ring import RingKernel, RingSpec
from ren.ring.ringspec import ntt_primes

R = 1 << 32


def big_rescale(words: np.ndarray, ring: RingSpec, k: int) -> np.ndarray:
    """The reference: CRT-lift each coefficient (out of Montgomery form), divide by P with
    rounding, reduce mod the kept moduli (into Montgomery form)."""
    Q, kept = ring.Q, ring.moduli[: ring.limbs - k]
    P = 1
    for p in ring.moduli[ring.limbs - k:]:
        P *= p
    weights = [(Q // q) * pow(Q // q, -1, q) for q in ring.moduli]
    out = np.empty((len(kept), ring.N), np.uint32)
    for j in range(ring.N):
        x = sum(int(words[i, j]) * pow(R, -1, q) * w
                for i, (q, w) in enumerate(zip(ring.moduli, weights, strict=True))) % Q
        y = (x + P // 2) // P
        out[:, j] = [y * R % q for q in kept]
    return out


@st.composite
def rescale_case(draw):
    bits = draw(st.sampled_from((20, 29, 30, 31)))
    N = draw(st.sampled_from((16, 256, 1024)))
    k = draw(st.integers(1, 5))
    kept = draw(st.integers(1, 4))
    pool = ntt_primes(N, bits, kept + k + 2)
    moduli = tuple(draw(st.permutations(pool))[: kept + k])
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    words = np.stack([rng.integers(0, q, N) for q in moduli]).astype(np.uint32)
    if draw(st.booleans()):  # the extremes of every residue
        words[:, : N // 2] = np.array(moduli, np.uint32)[:, None] - 1
        words[:, N // 2: N // 2 + 2] = 0
    return RingSpec(N, moduli), k, words


@settings(max_examples=40, deadline=None)
@given(rescale_case())
def test_rescale_kernel_is_the_exact_rounding(case):
    ring, k, words = case
    kept = ring.drop_last(k)
    call = library_call(RingCall(RingKernel.RESCALE, ring.N, ring.moduli, kept.moduli,
                                 dropped=ring.moduli[-k:]), _lib())
    assert call is not None
    out = np.empty((kept.limbs, ring.N), np.uint32)
    call([out, np.ascontiguousarray(words)])
    assert np.array_equal(out, big_rescale(words, ring, k))


def _lib():
    from ren.backend import cpu
    return cpu.ring_library()
