"""Galois automorphisms sigma_g: a(X) -> a(X^g) of Z_q[X]/(X^N + 1), g odd, as index maps.

* Coefficient domain: coefficient i moves to i·g mod 2N, picking up a sign when it wraps past
  N (X^N = -1).  As a gather: out[j] = ±in[src[j]] with t = j·g^-1 mod 2N, src = t mod N and a
  minus sign exactly when t >= N.
* NTT domain (bit-reversed slots, slot j = a(psi^e_j), e_j = 2·brv(j)+1): sigma_g only permutes
  the evaluation points, out[j] = in[k] with e_k = e_j·g mod 2N.

Slot rotation by k uses g = 5^k mod 2N (k may be negative); complex conjugation uses g = 2N - 1.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ren.errors import ParameterError
from ren.ring.tables import bit_reverse_indices

SLOT_GENERATOR = 5


def _check_g(N: int, g: int) -> int:
    if isinstance(g, bool) or not isinstance(g, int | np.integer):
        raise ParameterError(f"automorphism: g must be an int, got {type(g).__name__}")
    g = int(g) % (2 * N)
    if g % 2 == 0:
        raise ParameterError(
            f"automorphism: g={g} is even; X -> X^g is an automorphism of Z[X]/(X^N+1) only for "
            f"odd g (units mod 2N={2 * N})"
        )
    return g


def galois_element(N: int, k: int) -> int:
    """The Galois element of a slot rotation by k: 5^k mod 2N (negative k rotates the other way)."""
    return pow(SLOT_GENERATOR, int(k), 2 * N)


def conjugation_element(N: int) -> int:
    """The Galois element of complex conjugation of the CKKS slots: 2N - 1 (i.e. X -> X^-1)."""
    return 2 * N - 1


def _validated(cached):
    """Validate g before the cache sees it (3.0 == 3 would otherwise hit a cached int entry)."""
    def wrapper(N: int, g: int):
        return cached(N, _check_g(N, g))

    wrapper.__name__, wrapper.__doc__ = cached.__name__, cached.__doc__
    wrapper.cache_clear = cached.cache_clear
    return wrapper


@_validated
@lru_cache(maxsize=256)
def automorph_coeff_map(N: int, g: int) -> tuple[np.ndarray, np.ndarray]:
    """(src, negate) with sigma_g(a)[j] = (-1)^negate[j] · a[src[j]] in the coefficient domain."""
    h = pow(g, -1, 2 * N)
    t = (np.arange(N, dtype=np.int64) * h) % (2 * N)
    src, neg = t % N, t >= N
    src.flags.writeable = False
    neg.flags.writeable = False
    return src, neg


@_validated
@lru_cache(maxsize=256)
def automorph_ntt_map(N: int, g: int) -> np.ndarray:
    """src with sigma_g(a)[j] = a[src[j]] in the (bit-reversed) NTT domain."""
    brv = bit_reverse_indices(N.bit_length() - 1)
    e = 2 * brv + 1
    src = brv[((e * g) % (2 * N) - 1) // 2]
    src.flags.writeable = False
    return src
