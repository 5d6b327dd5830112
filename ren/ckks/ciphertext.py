"""`Plaintext` and `Ciphertext`: plain dataclasses of Polys (NTT domain) plus the exact scale, the
level and the parameters, so the JIT can treat them as pytrees.  Their Polys are lazy until
something (decryption, `realize()`, serialization) needs the values."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ren.ckks.params import CKKSParams
from ren.poly import Poly


@dataclass(eq=False)
class Plaintext:
    """An encoded message: ``poly`` ≈ Δ·m (NTT domain, ring of ``level``) with scale Δ."""

    poly: Poly
    scale: Fraction
    level: int
    params: CKKSParams

    def realize(self) -> Plaintext:
        self.poly.realize()
        return self

    @property
    def log2_scale(self) -> float:
        return math.log2(self.scale)

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
        return math.log2(self.scale)

    def realize(self) -> Ciphertext:
        """Compute every part now (together, sharing work); returns self."""
        self.parts[0].realize(*self.parts[1:])
        return self

    def __repr__(self) -> str:
        return (f"<Ciphertext size {self.size} level {self.level} scale 2^{self.log2_scale:.3f} "
                f"N={self.params.N}>")
