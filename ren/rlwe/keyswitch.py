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

from ren.errors import ParameterError, check_instance, check_int_range, check_sequence
from ren.poly import Poly
from ren.rlwe.ciphertext import check_ntt_polys
from ren.rlwe.keys import RelinKey, SwitchingKey
from ren.rlwe.params import RLWEParams


# -- argument checks (every function here is public: the schemes call them with checked objects,
# -- a user may not) ------------------------------------------------------------------------------
def check_level(params: RLWEParams, level: object, who: str) -> int:
    """`level` as an int, if it is a level of `params` (ParameterError naming `who`)."""
    if type(level) is int and 0 <= level <= params.depth:
        return level
    return check_int_range(level, f"{who}: level", 0, params.depth)


def check_switching_key(key: object, who: str, kind: type = SwitchingKey) -> SwitchingKey:
    """`key` if it is a switching key (`kind`: e.g. RelinKey, GaloisKey)."""
    return check_instance(key, kind, f"{who}: key",
                          hint="make one with KeyGenerator (relin_key, rotation_keys, ...)")


def check_ct_parts(parts: object, params: RLWEParams, level: int, who: str, size: int
                   ) -> tuple[Poly, ...]:
    """`parts` as a tuple of `size` Polys in the ring of `level` (NTT domain)."""
    items = tuple(check_sequence(parts, f"{who}: parts", size, size, hint=(
        "the parts (c0, c1) of a ciphertext, e.g. ct.parts" if size == 2 else
        "the parts (d0, d1, d2) of a product before relinearization")))
    check_ntt_polys(items, lambda i: f"{who}: part {i}", params.ring(level),
                    f"the ring of level {level}", f"use params.ring({level})", params)
    return items


def decompose(d: Poly, params: RLWEParams, level: int) -> tuple[Poly, ...]:
    """Steps 1–2 of the module docstring: d's digits at `level`, each raised to Q_l·P (NTT
    domain).  The decomposition is the expensive half of a key switch (an INTT, a basis
    conversion and an NTT per digit); `hoisted` automorphisms share one between rotations."""
    check_instance(params, RLWEParams, "decompose: params")
    level = check_level(params, level, "decompose")
    check_ntt_polys((d,), lambda _: "decompose: d", params.ring(level),
                    f"the ring of level {level}", f"use params.ring({level})", params)
    ring, ring_qp = params.ring(level), params.ring_qp(level)
    out = []
    for a, b in params.digits_at(level):
        digit = d if (a, b) == (0, ring.limbs) else d.to_ring(ring.sub(a, b))
        out.append(digit.intt().to_ring(ring_qp).ntt())  # mod-up by basis conversion
    return tuple(out)


def switch_decomposed(ups: Sequence[Poly], key: SwitchingKey, level: int) -> tuple[Poly, Poly]:
    """Steps 3–4: the inner product of a decomposition with the key rows, then the mod-down."""
    p = check_switching_key(key, "switch_decomposed").params
    level = check_level(p, level, "switch_decomposed")
    n = len(p.digits_at(level))
    ups = check_sequence(ups, "switch_decomposed: ups", n, n,
                         hint=f"one Poly per key-switching digit at level {level}: "
                              "decompose(d, params, level)")
    ring_qp = p.ring_qp(level)
    check_ntt_polys(tuple(ups), lambda i: f"switch_decomposed: ups[{i}]", ring_qp,
                    f"Q·P at level {level}", f"use params.ring_qp({level})", p)
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
    key = check_switching_key(key, "key_switch")
    return switch_decomposed(decompose(d, key.params, level), key, level)


def relinearize(parts: Sequence[Poly], key: RelinKey, level: int) -> tuple[Poly, Poly]:
    """(d0, d1, d2) under (1, s, s²) -> (d0 + u0, d1 + u1) under (1, s), with (u0, u1) the key
    switch of d2 from s² to s."""
    rk = check_switching_key(key, "relinearize")  # (a RelinKey, or a SwitchingKey from s²)
    if rk.galois is not None:  # a Galois key would switch from s(X^g): a wrong result
        raise ParameterError(f"relinearize: key must be the relinearization key (from s² to s), "
                             f"got {rk!r}; use keygen.relin_key()")
    level = check_level(rk.params, level, "relinearize")
    d0, d1, d2 = check_ct_parts(parts, rk.params, level, "relinearize", 3)
    u0, u1 = key_switch(d2, rk, level)
    return d0 + u0, d1 + u1


__all__ = ["check_ct_parts", "check_level", "check_switching_key", "decompose", "key_switch",
           "relinearize", "switch_decomposed"]
