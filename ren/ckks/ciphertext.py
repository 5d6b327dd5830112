"""`Plaintext` and `Ciphertext`: plain dataclasses of Polys (NTT domain) plus the exact scale, the
level and the parameters, so the JIT can treat them as pytrees.  Their Polys are lazy until
something (decryption, `realize()`, serialization) needs the values.

Construction checks every field (the JIT rebuilds them without running the checks again): the
parameters, the level, a scale that fits the level (`CKKSParams.check_scale`), and Polys in the
level's ring, in the NTT domain, on the parameters' device.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from ren.ckks.params import CKKSParams, log2_exact, scale_arg
from ren.errors import DeviceError, DomainError, ParameterError, RingMismatchError
from ren.poly import Poly
from ren.ring import Domain, RingSpec


def check_ntt_polys(polys: tuple[object, ...], where: Callable[[int], str], ring: RingSpec,
                    ring_name: str, ring_fix: str, device: str) -> None:
    """Every object of `polys` is a Poly over `ring` (called `ring_name`; `ring_fix` says how to
    get there), in the NTT domain, on `device`; `where(i)` names object i in the messages.
    Shared by ciphertexts, plaintexts and keys."""
    for i, p in enumerate(polys):
        if not isinstance(p, Poly):
            raise ParameterError(f"{where(i)} must be a Poly, got {type(p).__name__} {p!r}")
        spec = p.spec  # one lookup for ring, domain and device (this runs for every result)
        if spec.ring is not ring and spec.ring != ring:
            raise RingMismatchError(f"{where(i)} lives in {spec.ring.short()}, not in "
                                    f"{ring_name} ({ring.short()}); {ring_fix}")
        if spec.domain is not Domain.NTT:
            raise DomainError(f"{where(i)} is in the {spec.domain.name} domain; CKKS keeps "
                              "polynomials in the NTT domain (call .ntt())")
        if spec.device != device:
            raise DeviceError(f"{where(i)} lives on {spec.device!r} but the parameters' device "
                              f"is {device!r}; move it with .to({device!r}) or use "
                              f"CKKSParams(..., device={spec.device!r})")


def _check_fields(kind: str, params: object, level: object, scale: object,
                  polys: tuple[object, ...]) -> tuple[int, Fraction]:
    """(level, scale) of a Plaintext or Ciphertext (`kind`) after checking every field."""
    if not isinstance(params, CKKSParams):
        raise ParameterError(f"{kind}: params must be CKKSParams, got {type(params).__name__}")
    if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= params.depth:
        raise ParameterError(f"{kind}: level must be an int in [0, {params.depth}], got "
                             f"{level!r}")
    scale = scale_arg(scale, f"{kind}: scale")
    where = (lambda i: f"{kind}: part {i}") if kind == "Ciphertext" else (lambda i: f"{kind}: poly")
    check_ntt_polys(polys, where, params.ring(level), f"the ring of level {level}",
                    f"use params.ring({level}), or the level its ring belongs to", params.device)
    scale = params.check_scale(scale, level, kind, fix=lambda: (
        f"a {kind.lower()} at level {level} needs a smaller scale (rescale it, or build it at a "
        "higher level)"))
    return level, scale


@dataclass(eq=False)
class Plaintext:
    """An encoded message: ``poly`` ≈ Δ·m (NTT domain, ring of ``level``) with scale Δ."""

    poly: Poly
    scale: Fraction
    level: int
    params: CKKSParams

    def __post_init__(self) -> None:
        self.level, self.scale = _check_fields("Plaintext", self.params, self.level, self.scale,
                                               (self.poly,))

    def realize(self) -> Plaintext:
        self.poly.realize()
        return self

    @property
    def log2_scale(self) -> float:
        return log2_exact(self.scale)

    def __repr__(self) -> str:
        return f"<Plaintext level {self.level} scale 2^{self.log2_scale:.3f} N={self.params.N}>"


@dataclass(eq=False)
class Ciphertext:
    """An encryption (c0, c1[, c2]) with c0 + c1·s (+ c2·s²) ≈ Δ·m mod Q_level.

    Three parts only between a multiplication without relinearization and `relinearize`.
    """

    parts: tuple[Poly, ...]
    scale: Fraction
    level: int
    params: CKKSParams

    def __post_init__(self) -> None:
        if not isinstance(self.parts, tuple | list) or len(self.parts) not in (2, 3):
            n = len(self.parts) if isinstance(self.parts, tuple | list) else None
            got = (f"a {type(self.parts).__name__}" if n is None
                   else f"{n} part" + "s" * (n != 1))
            raise ParameterError(f"Ciphertext: parts must be a tuple of 2 Polys (c0, c1), or 3 "
                                 f"between a multiplication without relinearization and "
                                 f"relinearize; got {got}")
        self.parts = tuple(self.parts)
        self.level, self.scale = _check_fields("Ciphertext", self.params, self.level, self.scale,
                                               self.parts)

    @property
    def c0(self) -> Poly:
        return self.parts[0]

    @property
    def c1(self) -> Poly:
        return self.parts[1]

    @property
    def size(self) -> int:
        return len(self.parts)

    @property
    def log2_scale(self) -> float:
        return log2_exact(self.scale)

    def realize(self) -> Ciphertext:
        """Compute every part now (together, sharing work); returns self."""
        self.parts[0].realize(*self.parts[1:])
        return self

    def __repr__(self) -> str:
        return (f"<Ciphertext size {self.size} level {self.level} scale 2^{self.log2_scale:.3f} "
                f"N={self.params.N}>")
