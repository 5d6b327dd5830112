"""Hybrid key switching and relinearization, written with Poly ops.

For d (NTT domain, ring Q_l of a level l) and a switching key from s' to s, `key_switch` returns
(u0, u1) with u0 + u1·s ≈ d·s' (mod Q_l):

1. split Q_l's primes into the key's digits D_j (the top-level digits clipped to Q_l);
2. mod-up: each digit's residues [d]_{D_j} go to the coefficient domain and are extended to
   Q_l·P by fast basis conversion (`to_ring`: the digit's own primes are kept exactly, every other
   prime receives d_j + u·D_j for a small u — the u·D_j term vanishes against the key's gadget);
3. inner product with the key rows (restricted to Q_l·P) in the NTT domain;
4. mod-down: `rescale` by the special primes P (exact rounding of x / P).

The halves are public: `decompose` (steps 1–2), `inner_product` (step 3), `mod_down` (step 4),
`switch_decomposed` (3 and 4), and `times_p` (a Q_l polynomial times P on Q_l·P).  Rounding
commutes with adding multiples of P (round((x + P·y)/P) = round(x/P) + y), and sums of inner
products in Q_l·P are exact, so algorithms that add several key switches stay in Q_l·P and
divide by P once (double hoisting in `ren.ckks.circuits.lintrans`).

The scheduler sees all of it as one graph and fuses it like any other Poly code.  A lean key's
a rows (`ren.rlwe.keys.SwitchingKey.lean`) are RANDOM nodes of that graph: sampled where the
inner product reads them and freed after (eagerly and in `ren.jit` replays).  The sample covers
the whole key ring Q·P; below the top level step 3 keeps its Q_l·P rows (the IR samples a
RANDOM node whole: a sampler of a row subset would spare the rest).
"""

from __future__ import annotations

import math
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
    return _decompose(d, params, level)


# the unchecked halves (`_decompose`, `_inner_product`, `_key_switch`) serve the checked public
# functions and the automorphisms once their arguments are checked: a key switch checks its
# input once, not again at every step of the chain (graph building stays as cheap as before)
def _decompose(d: Poly, params: RLWEParams, level: int) -> tuple[Poly, ...]:
    ring, ring_qp = params.ring(level), params.ring_qp(level)
    out = []
    for a, b in params.digits_at(level):
        digit = d if (a, b) == (0, ring.limbs) else d.to_ring(ring.sub(a, b))
        out.append(digit.intt().to_ring(ring_qp).ntt())  # mod-up by basis conversion
    return tuple(out)


def _check_ups(ups: object, p: RLWEParams, level: int, who: str) -> Sequence[Poly]:
    """`ups` if it is a decomposition at `level`: one Q_l·P Poly (NTT domain) per digit."""
    n = len(p.digits_at(level))
    items = check_sequence(ups, f"{who}: ups", n, n,
                           hint=f"one Poly per key-switching digit at level {level}: "
                                "decompose(d, params, level)")
    check_ntt_polys(tuple(items), lambda i: f"{who}: ups[{i}]", p.ring_qp(level),
                    f"Q·P at level {level}", f"use params.ring_qp({level})", p)
    return items


def _inner_product(ups: Sequence[Poly], key: SwitchingKey, level: int) -> tuple[Poly, Poly]:
    p = key.params
    ring_qp = p.ring_qp(level)
    top = level == p.depth
    acc0: Poly | None = None
    acc1: Poly | None = None
    rows_a = key.a  # a lean key's: fresh samples, regenerated by the graph that reads them
    for j, up in enumerate(ups):
        kb, ka = key.b[j], rows_a[j]
        if not top:  # the key's rows on Q_l·P: an exact reduction (drop the other primes)
            kb, ka = kb.to_ring(ring_qp), ka.to_ring(ring_qp)
        t0, t1 = up * kb, up * ka
        acc0 = t0 if acc0 is None else acc0 + t0
        acc1 = t1 if acc1 is None else acc1 + t1
    assert acc0 is not None and acc1 is not None  # every level has at least one digit
    return acc0, acc1


def inner_product(ups: Sequence[Poly], key: SwitchingKey, level: int) -> tuple[Poly, Poly]:
    """Step 3 alone: Σ_j ups[j]·(key.b[j], key.a[j]) on Q_l·P, not yet divided by P.  Its
    `mod_down` is `switch_decomposed`'s result; several of them (each times a plaintext, say)
    may be added first, so that one mod-down serves them all."""
    p = check_switching_key(key, "inner_product").params
    level = check_level(p, level, "inner_product")
    return _inner_product(_check_ups(ups, p, level, "inner_product"), key, level)


def mod_down(x: Poly, params: RLWEParams, level: int) -> Poly:
    """Step 4: x (NTT domain, on Q_l·P) divided by P and rounded, exactly: a Poly on Q_l."""
    check_instance(params, RLWEParams, "mod_down: params")
    level = check_level(params, level, "mod_down")
    check_ntt_polys((x,), lambda _: "mod_down: x", params.ring_qp(level),
                    f"Q·P at level {level}", f"use params.ring_qp({level})", params)
    return x.rescale(params.special_moduli)


def times_p(x: Poly, params: RLWEParams, level: int) -> Poly:
    """P·x on Q_l·P for x on Q_l (NTT domain), exactly (its rows of P are 0): what a key switch
    adds its inner product to when the mod-down waits, since mod_down(times_p(x) + u) =
    x + mod_down(u).  Any extension of x to Q_l·P times P is P·x, so the fast basis
    conversion (`Poly.to_ring`) serves: an INTT of x and the NTT of the rows of P."""
    check_instance(params, RLWEParams, "times_p: params")
    level = check_level(params, level, "times_p")
    check_ntt_polys((x,), lambda _: "times_p: x", params.ring(level),
                    f"the ring of level {level}", f"use params.ring({level})", params)
    return x.intt().to_ring(params.ring_qp(level)).ntt() * math.prod(params.special_moduli)


def switch_decomposed(ups: Sequence[Poly], key: SwitchingKey, level: int) -> tuple[Poly, Poly]:
    """Steps 3–4: the inner product of a decomposition with the key rows, then the mod-down."""
    p = check_switching_key(key, "switch_decomposed").params
    level = check_level(p, level, "switch_decomposed")
    acc0, acc1 = _inner_product(_check_ups(ups, p, level, "switch_decomposed"), key, level)
    return acc0.rescale(p.special_moduli), acc1.rescale(p.special_moduli)  # mod-down by P


def key_switch(d: Poly, key: SwitchingKey, level: int) -> tuple[Poly, Poly]:
    """(u0, u1) with u0 + u1·s ≈ d·s' mod Q_level (see the module docstring)."""
    p = check_switching_key(key, "key_switch").params
    level = check_level(p, level, "key_switch")
    check_ntt_polys((d,), lambda _: "key_switch: d", p.ring(level),
                    f"the ring of level {level}", f"use params.ring({level})", p)
    return _key_switch(d, key, level)


def _key_switch(d: Poly, key: SwitchingKey, level: int) -> tuple[Poly, Poly]:
    p = key.params
    acc0, acc1 = _inner_product(_decompose(d, p, level), key, level)
    return acc0.rescale(p.special_moduli), acc1.rescale(p.special_moduli)  # mod-down by P


def relinearize(parts: Sequence[Poly], key: RelinKey, level: int) -> tuple[Poly, Poly]:
    """(d0, d1, d2) under (1, s, s²) -> (d0 + u0, d1 + u1) under (1, s), with (u0, u1) the key
    switch of d2 from s² to s."""
    rk = check_switching_key(key, "relinearize")  # (a RelinKey, or a SwitchingKey from s²)
    if rk.galois is not None:  # a Galois key would switch from s(X^g): a wrong result
        raise ParameterError(f"relinearize: key must be the relinearization key (from s² to s), "
                             f"got {rk!r}; use keygen.relin_key()")
    level = check_level(rk.params, level, "relinearize")
    d0, d1, d2 = check_ct_parts(parts, rk.params, level, "relinearize", 3)
    u0, u1 = _key_switch(d2, rk, level)
    return d0 + u0, d1 + u1


__all__ = ["check_ct_parts", "check_level", "check_switching_key", "decompose", "inner_product",
           "key_switch", "mod_down", "relinearize", "switch_decomposed", "times_p"]
