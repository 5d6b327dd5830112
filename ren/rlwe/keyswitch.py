"""Hybrid key switching and relinearization, written with Poly ops.

For d (NTT domain, ring Q_l of a level l) and a switching key from s' to s, `key_switch` returns
(u0, u1) with u0 + u1·s ≈ d·s' (mod Q_l):

1. split Q_l's primes into the key's digits D_j (the top-level digits clipped to Q_l);
2. mod-up: each digit's residues [d]_{D_j} go to the coefficient domain and are extended to
   Q_l·P by fast basis conversion (`to_ring`: the digit's own primes are kept exactly, every other
   prime receives d_j + u·D_j for a small u — the u·D_j term vanishes against the key's gadget);
3. inner product with the key rows (restricted to Q_l·P) in the NTT domain;
4. mod-down: `rescale` by the special primes P (exact rounding of x / P).

The scheduler sees all of it as one graph and fuses it like any other Poly code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ren.poly import Poly
from ren.rlwe.keys import RelinKey, SwitchingKey

if TYPE_CHECKING:
    from ren.rlwe.params import RLWEParams


def decompose(d: Poly, params: RLWEParams, level: int) -> tuple[Poly, ...]:
    """Steps 1–2 of the module docstring: d's digits at `level`, each raised to Q_l·P (NTT
    domain).  The decomposition is the expensive half of a key switch (an INTT, a basis
    conversion and an NTT per digit); `hoisted` automorphisms share one between rotations."""
    ring, ring_qp = params.ring(level), params.ring_qp(level)
    out = []
    for a, b in params.digits_at(level):
        digit = d if (a, b) == (0, ring.limbs) else d.to_ring(ring.sub(a, b))
        out.append(digit.intt().to_ring(ring_qp).ntt())  # mod-up by basis conversion
    return tuple(out)


def switch_decomposed(ups: Sequence[Poly], key: SwitchingKey, level: int) -> tuple[Poly, Poly]:
    """Steps 3–4: the inner product of a decomposition with the key rows, then the mod-down."""
    p = key.params
    ring_qp = p.ring_qp(level)
    top = level == p.depth
    acc0: Poly | None = None
    acc1: Poly | None = None
    for j, up in enumerate(ups):
        kb, ka = key.b[j], key.a[j]
        if not top:  # the key's rows on Q_l·P: an exact reduction (drop the other primes)
            kb, ka = kb.to_ring(ring_qp), ka.to_ring(ring_qp)
        t0, t1 = up * kb, up * ka
        acc0 = t0 if acc0 is None else acc0 + t0
        acc1 = t1 if acc1 is None else acc1 + t1
    assert acc0 is not None and acc1 is not None  # every level has at least one digit
    return acc0.rescale(p.special_moduli), acc1.rescale(p.special_moduli)  # mod-down by P


def key_switch(d: Poly, key: SwitchingKey, level: int) -> tuple[Poly, Poly]:
    """(u0, u1) with u0 + u1·s ≈ d·s' mod Q_level (see the module docstring)."""
    return switch_decomposed(decompose(d, key.params, level), key, level)


def relinearize(parts: Sequence[Poly], key: RelinKey, level: int) -> tuple[Poly, Poly]:
    """(d0, d1, d2) under (1, s, s²) -> (d0 + u0, d1 + u1) under (1, s), with (u0, u1) the key
    switch of d2 from s² to s."""
    d0, d1, d2 = parts
    u0, u1 = key_switch(d2, key, level)
    return d0 + u0, d1 + u1


__all__ = ["decompose", "key_switch", "relinearize", "switch_decomposed"]
