"""Applying a Galois automorphism X -> X^g to an RLWE ciphertext.

σ_g maps a ciphertext (c0, c1) of m under s to (σ(c0), σ(c1)), a ciphertext of σ(m) under σ(s);
a key switch of σ(c1) from σ(s) = s(X^g) back to s (the Galois key of g) gives
(σ(c0) + u0, u1) under s.  Rotation by k is g = 5^k mod 2N, conjugation g = 2N − 1
(`ren.ring.galois_element`, `ren.ring.conjugation_element`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ren.errors import ParameterError
from ren.poly import Poly
from ren.rlwe.keys import GaloisKey
from ren.rlwe.keyswitch import key_switch


def automorphism(parts: Sequence[Poly], key: GaloisKey, level: int,
                 sigma: Callable[[Poly], Poly] | None = None) -> tuple[Poly, Poly]:
    """(σ(c0) + u0, u1): the two-part ciphertext `parts` under s mapped by X -> X^g (g =
    ``key.galois``) and switched back to s.

    `sigma` is the Poly form of the map (default ``Poly.automorph(g)``); a scheme may pass
    ``lambda c: c.rotate(k)`` or ``lambda c: c.conjugate()`` so its graphs name the rotation."""
    if key.galois is None:
        raise ParameterError(f"automorphism needs a Galois key, got {key!r}")
    if len(parts) != 2:
        raise ParameterError(f"automorphism: the ciphertext has {len(parts)} parts; relinearize "
                             "it first")
    g = key.galois
    if sigma is None:
        def sigma(c: Poly) -> Poly:
            return c.automorph(g)
    c0, c1 = (sigma(c) for c in parts)
    u0, u1 = key_switch(c1, key, level)
    return c0 + u0, u1


__all__ = ["automorphism"]
