"""The generic RLWE `Ciphertext` (c0, c1[, c2]) at a level, and the one check of a Poly field
(a Poly, the right ring, the NTT domain, the parameters' device) that ciphertexts, plaintexts and
keys of every scheme share.

A scheme's ciphertext adds its own metadata (CKKS: the scale) and converts to and from this one
where it calls the RLWE layer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Self

from ren.errors import (
    DeviceError,
    DomainError,
    ParameterError,
    RingMismatchError,
    check_callable,
    check_instance,
)
from ren.poly import Poly
from ren.ring import Domain, RingSpec
from ren.rlwe.params import RLWEParams


def check_ntt_polys(polys: tuple[object, ...], where: Callable[[int], str], ring: RingSpec,
                    ring_name: str, ring_fix: str, params: RLWEParams) -> None:
    """Every object of `polys` is a Poly over `ring` (called `ring_name`; `ring_fix` says how to
    get there), in the NTT domain, on `params.device`; `where(i)` names object i in the
    messages."""
    # this runs for every result: one cheap test of the arguments, the checkers on failure only
    if not (isinstance(polys, tuple | list) and isinstance(ring, RingSpec)
            and isinstance(params, RLWEParams) and callable(where)):
        _check_arguments(polys, where, ring, params)
    device = params.device
    for i, p in enumerate(polys):
        if not isinstance(p, Poly):
            raise ParameterError(f"{where(i)} must be a Poly, got {type(p).__name__} {p!r}")
        spec = p.spec  # one lookup for ring, domain and device (this runs for every result)
        if spec.ring is not ring and spec.ring != ring:
            raise RingMismatchError(f"{where(i)} lives in {spec.ring.short()}, not in "
                                    f"{ring_name} ({ring.short()}); {ring_fix}")
        if spec.domain is not Domain.NTT:
            raise DomainError(f"{where(i)} is in the {spec.domain.name} domain; {params.scheme} "
                              "keeps polynomials in the NTT domain (call .ntt())")
        if spec.device != device:
            raise DeviceError(f"{where(i)} lives on {spec.device!r} but the parameters' device "
                              f"is {device!r}; move it with .to({device!r}) or use "
                              f"{type(params).__name__}(..., device={spec.device!r})")


def _check_arguments(polys: object, where: object, ring: object, params: object) -> None:
    """The ParameterError naming the first bad argument of `check_ntt_polys`."""
    if not isinstance(polys, tuple | list):
        raise ParameterError(f"check_ntt_polys: polys must be a tuple or list of Polys, got "
                             f"{type(polys).__name__}")
    check_callable(where, "check_ntt_polys: where", hint="a function of the index, e.g. "
                   "lambda i: f'part {i}'")
    check_instance(ring, RingSpec, "check_ntt_polys: ring")
    check_instance(params, RLWEParams, "check_ntt_polys: params")


def check_parts(kind: str, parts: object) -> tuple:
    """`parts` as a tuple of 2 or 3 objects (ParameterError otherwise)."""
    if not isinstance(parts, tuple | list) or len(parts) not in (2, 3):
        n = len(parts) if isinstance(parts, tuple | list) else None
        got = f"a {type(parts).__name__}" if n is None else f"{n} part" + "s" * (n != 1)
        raise ParameterError(f"{kind}: parts must be a tuple of 2 Polys (c0, c1), or 3 between "
                             f"a multiplication without relinearization and relinearize; got "
                             f"{got}")
    return tuple(parts)


class Parts:
    """What every scheme's ciphertext made of `parts` (Polys c0, c1[, c2]) shares: the parts by
    name, their count, and realizing them together (RLWE's, CKKS's and BFV's ciphertexts)."""

    parts: tuple[Poly, ...]

    @property
    def c0(self) -> Poly:
        return self.parts[0]

    @property
    def c1(self) -> Poly:
        return self.parts[1]

    @property
    def size(self) -> int:
        return len(self.parts)

    def realize(self) -> Self:
        """Compute every part now (together, sharing work); returns self."""
        self.parts[0].realize(*self.parts[1:])
        return self


@dataclass(eq=False)
class Ciphertext(Parts):
    """An RLWE ciphertext (c0, c1[, c2]) with c0 + c1·s (+ c2·s²) ≈ m mod Q_level (NTT domain).

    Three parts only between a tensor product and relinearization."""

    parts: tuple[Poly, ...]
    level: int
    params: RLWEParams

    def __post_init__(self) -> None:
        self.parts = check_parts("Ciphertext", self.parts)
        params, level = self.params, self.level
        if not isinstance(params, RLWEParams):
            raise ParameterError(f"Ciphertext: params must be RLWEParams, got "
                                 f"{type(params).__name__}")
        if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= params.depth:
            raise ParameterError(f"Ciphertext: level must be an int in [0, {params.depth}], got "
                                 f"{level!r}")
        check_ntt_polys(self.parts, lambda i: f"Ciphertext: part {i}", params.ring(level),
                        f"the ring of level {level}",
                        f"use params.ring({level}), or the level its ring belongs to", params)

    def __repr__(self) -> str:
        return f"<RLWE Ciphertext size {self.size} level {self.level} N={self.params.N}>"


__all__ = ["Ciphertext", "check_ntt_polys", "check_parts"]
