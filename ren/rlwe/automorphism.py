"""Applying a Galois automorphism X -> X^g to an RLWE ciphertext.

σ_g maps a ciphertext (c0, c1) of m under s to (σ(c0), σ(c1)), a ciphertext of σ(m) under σ(s);
a key switch of σ(c1) from σ(s) = s(X^g) back to s (the Galois key of g) gives
(σ(c0) + u0, u1) under s.  Rotation by k is g = 5^k mod 2N, conjugation g = 2N − 1
(`ren.ring.galois_element`, `ren.ring.conjugation_element`).

**Hoisting** (`hoisted_automorphisms`, Halevi–Shoup): several automorphisms of one ciphertext
share a single decomposition of c1.  σ commutes with the mod-up up to the small multiple of each
digit's modulus that the basis conversion adds anyway (σ permutes coefficients and flips signs,
the digit's own residues map exactly), so σ(ModUp(c1)) is a valid decomposition of σ(c1): each
further automorphism costs a permutation and an inner product with its key, not an INTT, a basis
conversion and an NTT per digit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ren.errors import ParameterError
from ren.poly import Poly
from ren.rlwe.keys import GaloisKey
from ren.rlwe.keyswitch import decompose, key_switch, switch_decomposed


def _check(parts: Sequence[Poly], key: GaloisKey) -> int:
    if key.galois is None:
        raise ParameterError(f"automorphism needs a Galois key, got {key!r}")
    if len(parts) != 2:
        raise ParameterError(f"automorphism: the ciphertext has {len(parts)} parts; relinearize "
                             "it first")
    return key.galois


def automorphism(parts: Sequence[Poly], key: GaloisKey, level: int,
                 sigma: Callable[[Poly], Poly] | None = None) -> tuple[Poly, Poly]:
    """(σ(c0) + u0, u1): the two-part ciphertext `parts` under s mapped by X -> X^g (g =
    ``key.galois``) and switched back to s.

    `sigma` is the Poly form of the map (default ``Poly.automorph(g)``); a scheme may pass
    ``lambda c: c.rotate(k)`` or ``lambda c: c.conjugate()`` so its graphs name the rotation."""
    g = _check(parts, key)
    if sigma is None:
        def sigma(c: Poly) -> Poly:
            return c.automorph(g)
    c0, c1 = (sigma(c) for c in parts)
    u0, u1 = key_switch(c1, key, level)
    return c0 + u0, u1


def hoisted_automorphisms(parts: Sequence[Poly], keys: Sequence[GaloisKey], level: int,
                          sigmas: Sequence[Callable[[Poly], Poly]]) -> list[tuple[Poly, Poly]]:
    """`automorphism(parts, key, level, sigma)` for each (key, sigma) pair, with one
    decomposition of c1 shared by all of them (see the module docstring).  `sigmas[i]` must be
    the map of ``keys[i].galois``."""
    if len(keys) != len(sigmas):
        raise ParameterError(f"hoisted_automorphisms: {len(keys)} keys for {len(sigmas)} maps")
    for key in keys:
        _check(parts, key)
    if not keys:
        return []
    c0, c1 = parts
    ups = decompose(c1, keys[0].params, level)
    out = []
    for key, sigma in zip(keys, sigmas, strict=True):
        u0, u1 = switch_decomposed([sigma(u) for u in ups], key, level)
        out.append((sigma(c0) + u0, u1))
    return out


__all__ = ["automorphism", "hoisted_automorphisms"]
