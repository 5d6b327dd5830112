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

**Double hoisting** (`hoisted_automorphisms_qp`, Bossuat et al. 2021): the mod-down by P can wait
too.  Each automorphism is returned on Q_l·P as (P·σ(c0) + u0, u1), u0 and u1 the inner products
not yet divided by P: a ciphertext of P·σ(m), whose mod-down (both parts) is
`hoisted_automorphisms`'s result, exactly.  A sum of such terms times plaintexts (a linear
transform's baby steps) is divided by P once: round((Σ_i pt_i·v_i)/P) instead of
Σ_i pt_i·round(v_i/P).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ren.errors import ParameterError, check_callable, check_instance, check_sequence
from ren.poly import Poly
from ren.rlwe.errors import ParamsMismatchError
from ren.rlwe.keys import GaloisKey, SwitchingKey
from ren.rlwe.keyswitch import (
    _decompose,
    _inner_product,
    _key_switch,
    check_ct_parts,
    check_level,
    times_p,
)


def _check_key(key: object, what: str) -> GaloisKey:
    """`key` if it is a Galois key (a switching key with a Galois element)."""
    checked: SwitchingKey = check_instance(key, SwitchingKey, what, hint="a Galois key: "
                                           "keygen.rotation_keys([...]).keys[g] or "
                                           "keygen.galois_key(g)")
    if checked.galois is None:
        raise ParameterError(f"{what} must be a Galois key, got {key!r}; use "
                             "keygen.rotation_keys([...]) or keygen.galois_key(g)")
    return checked  # type: ignore[return-value]  # a switching key with a Galois element


def _check(parts: Sequence[Poly], key: GaloisKey, level: int, who: str) -> int:
    """`level` after checking `parts` (two Polys at that level: a size-3 ciphertext needs
    relinearizing first) and `key` (a Galois key of the same parameters)."""
    if isinstance(parts, tuple | list) and len(parts) == 3:
        raise ParameterError(f"{who}: the ciphertext has 3 parts; relinearize it first")
    level = check_level(key.params, level, who)
    check_ct_parts(parts, key.params, level, who, 2)
    return level


def automorphism(parts: Sequence[Poly], key: GaloisKey, level: int,
                 sigma: Callable[[Poly], Poly] | None = None) -> tuple[Poly, Poly]:
    """(σ(c0) + u0, u1): the two-part ciphertext `parts` under s mapped by X -> X^g (g =
    ``key.galois``) and switched back to s.

    `sigma` is the Poly form of the map (default ``Poly.automorph(g)``); a scheme may pass
    ``lambda c: c.rotate(k)`` or ``lambda c: c.conjugate()`` so its graphs name the rotation."""
    key = _check_key(key, "automorphism: key")
    level = _check(parts, key, level, "automorphism")
    g: int = key.galois  # type: ignore[assignment]  # _check_key: not None
    if sigma is None:
        def sigma(c: Poly) -> Poly:
            return c.automorph(g)
    else:
        check_callable(sigma, "automorphism: sigma", hint="a map of Polys, e.g. "
                       "lambda c: c.automorph(g), or None")
    c0, c1 = (_mapped(sigma, c, "automorphism") for c in parts)
    u0, u1 = _key_switch(c1, key, level)
    return c0 + u0, u1


def _mapped(sigma: Callable[[Poly], Poly], c: Poly, who: str) -> Poly:
    """sigma(c), which must be a Poly (the parts and keys are checked already: this one test
    keeps a map that returns something else from failing deep inside the key switch)."""
    out = sigma(c)
    if not isinstance(out, Poly):
        raise ParameterError(f"{who}: sigma must map a Poly to a Poly, got "
                             f"{type(out).__name__}")
    return out


def _check_hoisted(parts: Sequence[Poly], keys: Sequence[GaloisKey], level: int,
                   sigmas: Sequence[Callable[[Poly], Poly]], who: str
                   ) -> tuple[list[GaloisKey], list[Callable[[Poly], Poly]], int | None]:
    """The checked keys, maps and level (None: no keys, nothing to do)."""
    keys = [_check_key(k, f"{who}: keys[{i}]")
            for i, k in enumerate(check_sequence(keys, f"{who}: keys"))]
    sigmas = [check_callable(f, f"{who}: sigmas[{i}]", hint="a map of Polys, e.g. "
                             "lambda c: c.automorph(g)")
              for i, f in enumerate(check_sequence(sigmas, f"{who}: sigmas"))]
    if len(keys) != len(sigmas):
        raise ParameterError(f"{who}: {len(keys)} keys for {len(sigmas)} maps")
    if not keys:
        check_sequence(parts, f"{who}: parts", 2, 2)
        return keys, sigmas, None
    for i, key in enumerate(keys[1:], start=1):
        if key.params != keys[0].params:
            raise ParamsMismatchError(f"{who}: keys[{i}] was made under other parameters than "
                                      "keys[0]")
    return keys, sigmas, _check(parts, keys[0], level, who)


def hoisted_automorphisms(parts: Sequence[Poly], keys: Sequence[GaloisKey], level: int,
                          sigmas: Sequence[Callable[[Poly], Poly]]) -> list[tuple[Poly, Poly]]:
    """`automorphism(parts, key, level, sigma)` for each (key, sigma) pair, with one
    decomposition of c1 shared by all of them (see the module docstring).  `sigmas[i]` must be
    the map of ``keys[i].galois``."""
    keys, sigmas, checked = _check_hoisted(parts, keys, level, sigmas, "hoisted_automorphisms")
    if checked is None:
        return []
    c0, c1 = parts
    special = keys[0].params.special_moduli
    ups = _decompose(c1, keys[0].params, checked)
    out = []
    for key, sigma in zip(keys, sigmas, strict=True):
        who = "hoisted_automorphisms"
        a0, a1 = _inner_product([_mapped(sigma, u, who) for u in ups], key, checked)
        u0, u1 = a0.rescale(special), a1.rescale(special)  # (switch_decomposed's graph)
        out.append((_mapped(sigma, c0, who) + u0, u1))
    return out


def hoisted_automorphisms_qp(parts: Sequence[Poly], keys: Sequence[GaloisKey], level: int,
                             sigmas: Sequence[Callable[[Poly], Poly]]) -> list[tuple[Poly, Poly]]:
    """Double hoisting: for each (key, sigma) pair (P·σ(c0) + u0, u1) on Q_l·P, u0 and u1 the
    inner products not divided by P (see the module docstring); one decomposition of c1 and one
    `times_p` of c0 shared by all.  ``(mod_down(v0), mod_down(v1))`` is the automorphism."""
    keys, sigmas, checked = _check_hoisted(parts, keys, level, sigmas,
                                           "hoisted_automorphisms_qp")
    if checked is None:
        return []
    params = keys[0].params
    c0, c1 = parts
    ups = _decompose(c1, params, checked)
    c0_p = times_p(c0, params, checked)
    out = []
    for key, sigma in zip(keys, sigmas, strict=True):
        who = "hoisted_automorphisms_qp"
        u0, u1 = _inner_product([_mapped(sigma, u, who) for u in ups], key, checked)
        out.append((_mapped(sigma, c0_p, who) + u0, u1))
    return out


__all__ = ["automorphism", "hoisted_automorphisms", "hoisted_automorphisms_qp"]
