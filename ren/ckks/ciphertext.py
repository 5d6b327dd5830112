"""`Plaintext` and `Ciphertext`: plain dataclasses of Polys (NTT domain) plus the exact scale, the
level and the parameters, so the JIT can treat them as pytrees.  Their Polys are lazy until
something (decryption, `realize()`, serialization) needs the values.

Construction checks every field (the JIT rebuilds them without running the checks again): the
parameters, the level, a scale that fits the level (`CKKSParams.check_scale`), and Polys in the
level's ring, in the NTT domain, on the parameters' device (`ren.rlwe.check_ntt_polys`).

They carry what an RLWE ciphertext (`ren.rlwe.Ciphertext`) carries plus the scale; `as_rlwe` and
`from_rlwe` convert where the CKKS layer calls the RLWE layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ren.ckks.params import CKKSParams, log2_exact, scale_arg
from ren.errors import ParameterError, ShapeError, check_instance, check_number
from ren.poly import Poly
from ren.ring import Domain
from ren.rlwe.ciphertext import Ciphertext as RLWECiphertext
from ren.rlwe.ciphertext import Parts, check_ntt_polys, check_parts


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
                    f"use params.ring({level}), or the level its ring belongs to", params)
    scale = params.check_scale(scale, level, kind, fix=lambda: (
        f"a {kind.lower()} at level {level} needs a smaller scale (rescale it, or build it at a "
        "higher level)"))
    return level, scale


def _slot_values(values: Any, slots: int) -> np.ndarray:
    """`values` (one number, or up to `slots` numbers) as a complex array (0-d for one number);
    a ParameterError for anything else (strings, bools, NaN, nested lists), ShapeError for too
    many values."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "iufc":
        z = np.array(values, dtype=np.complex128)
        if z.ndim > 1:
            raise ShapeError(f"keep_values: values must be one number or a 1-D vector, got "
                             f"shape {z.shape}")
        if not np.all(np.isfinite(z)):
            raise ParameterError("keep_values: values must be finite (no NaN or infinity)")
    elif isinstance(values, list | tuple):
        z = np.array([check_number(v, f"keep_values: values[{i}]")
                      for i, v in enumerate(values)], dtype=np.complex128)
    else:
        z = np.array(check_number(values, "keep_values: values", hint="give one number or a "
                                  "vector of up to N/2 numbers"), dtype=np.complex128)
    if z.size > slots:
        raise ShapeError(f"keep_values: {z.size} values do not fit {slots} slots (N/2)")
    return z


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
    def values(self) -> np.ndarray | None:
        """The N/2 slot values this plaintext was encoded from (a read-only copy), or None when
        only its words are known (decrypted, deserialized, built from a Poly, rebuilt by the JIT,
        or its poly, scale or level changed since).  Not a dataclass field: the JIT and
        serialization carry the words only.  Auto mode re-encodes from these values to meet a
        ciphertext's level and scale, exactly and for free."""
        kept = self.__dict__.get("_encoded_from")
        if kept is None or kept[1] is not self.poly or kept[2] != (self.scale, self.level):
            return None
        z = kept[0]
        if z.ndim == 0:  # one number for every slot
            z = np.full(self.params.slots, z, dtype=np.complex128)
        elif len(z) < self.params.slots:  # the leading slots, the rest zero
            z = np.concatenate([z, np.zeros(self.params.slots - len(z), dtype=np.complex128)])
        z.flags.writeable = False
        return z

    @property
    def coefficient_form(self) -> Poly | None:
        """``poly.intt()`` (the coefficient form decoding reads), when whoever made this plaintext
        computed it alongside (`Decryptor.decrypt` realizes it together with the decryption:
        decrypt + decode is one realization, not two); None otherwise, or once `poly` changed.
        An optional attribute, as `values` is, not a dataclass field: the JIT's trees,
        serialization and pickles carry the words only."""
        kept = self.__dict__.get("_coefficient_form")
        return kept[1] if kept is not None and kept[0] is self.poly else None

    def keep_coefficient_form(self, coeffs: Poly) -> Plaintext:
        """Remember `coeffs` (= ``poly.intt()``, in the plaintext's ring, coefficient domain) as
        its `coefficient_form`, valid while `poly` is the same Poly.  Returns self."""
        check_instance(coeffs, Poly, "Plaintext.keep_coefficient_form: coeffs",
                       hint="the plaintext's poly.intt()")
        if coeffs.ring != self.poly.ring or coeffs.domain is not Domain.COEFF:
            raise ParameterError("Plaintext.keep_coefficient_form: coeffs must be the "
                                 "plaintext's poly in coefficient form (poly.intt()), in its "
                                 "ring")
        self.__dict__["_coefficient_form"] = (self.poly, coeffs)
        return self

    def __getstate__(self) -> dict[str, Any]:
        """Pickles leave the coefficient form out (it is the words again, and derived)."""
        return {k: v for k, v in self.__dict__.items() if k != "_coefficient_form"}

    def keep_values(self, values: Any) -> Plaintext:
        """Remember `values` (complex slots; a 0-d array for one number in every slot, or the
        leading slots) as what this plaintext encodes, for `values`: `Encoder.encode` calls it.
        Returns self."""
        z = _slot_values(values, self.params.slots)  # a copy: later edits do not leak
        z.flags.writeable = False
        self.__dict__["_encoded_from"] = (z, self.poly, (self.scale, self.level))
        return self

    @property
    def log2_scale(self) -> float:
        return log2_exact(self.scale)

    def __repr__(self) -> str:
        return f"<Plaintext level {self.level} scale 2^{self.log2_scale:.3f} N={self.params.N}>"


@dataclass(eq=False)
class Ciphertext(Parts):
    """An encryption (c0, c1[, c2]) with c0 + c1·s (+ c2·s²) ≈ Δ·m mod Q_level.

    Three parts only between a multiplication without relinearization and `relinearize`.
    """

    parts: tuple[Poly, ...]
    scale: Fraction
    level: int
    params: CKKSParams

    def __post_init__(self) -> None:
        self.parts = check_parts("Ciphertext", self.parts)
        self.level, self.scale = _check_fields("Ciphertext", self.params, self.level, self.scale,
                                               self.parts)

    @property
    def log2_scale(self) -> float:
        return log2_exact(self.scale)

    def as_rlwe(self) -> RLWECiphertext:
        """The same parts at the same level as a generic RLWE ciphertext (no scale)."""
        return RLWECiphertext(self.parts, self.level, self.params)

    @classmethod
    def from_rlwe(cls, ct: RLWECiphertext, scale: Fraction) -> Ciphertext:
        """The RLWE ciphertext `ct` (made under CKKSParams) read as an encryption at `scale`."""
        check_instance(ct, RLWECiphertext, "Ciphertext.from_rlwe: ct",
                       hint="a ren.rlwe.Ciphertext, e.g. ct.as_rlwe()")
        if not isinstance(ct.params, CKKSParams):
            raise ParameterError(f"Ciphertext.from_rlwe: params must be CKKSParams, got "
                                 f"{type(ct.params).__name__}")
        return cls(ct.parts, scale, ct.level, ct.params)

    def __repr__(self) -> str:
        return (f"<Ciphertext size {self.size} level {self.level} scale 2^{self.log2_scale:.3f} "
                f"N={self.params.N}>")


#: how far a landed scale may be from its target: only `normalize_scale`'s rounding of very long
#: Fractions (a relative change below 2^-500 per step) may separate them
_SETTLE = Fraction(1, 1 << 400)


def settle_scale(ct: Ciphertext, scale: Fraction) -> Ciphertext:
    """`ct` labelled with exactly `scale`, which a computation aimed at reached up to the rounding
    of long Fraction scales (`ren.ckks.params.normalize_scale`): far below any noise, but two
    ciphertexts must carry equal Fractions to be added.  Anything further off is a bug in the
    aiming, and raises."""
    if ct.scale == scale:
        return ct
    if abs(ct.scale / scale - 1) > _SETTLE:
        raise AssertionError(f"a computation missed its target scale: {ct.scale} vs {scale}")
    return Ciphertext(ct.parts, scale, ct.level, ct.params)
