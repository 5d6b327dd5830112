"""Where CKKS operands meet: levels and scales, the part of the `Evaluator` that moves them.

`LevelsAndScales` is the Evaluator's mixin for everything that brings a ciphertext or a
plaintext to a level and an exact scale: `drop_level` (a view), `align` (free moves to a level
and scale), `is_unrescaled_product`, and auto mode's meeting of two operands (`_meet`,
`_meet_plain`: see the module docstring of `ren.ckks.evaluator`).  It calls back into the
Evaluator's arithmetic (rescale, multiply_scalar, multiply_int, adjust_scale, relinearize), so it
is only ever used as the Evaluator's base; it lives apart so that the arithmetic and the rules
of meeting read separately.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any, overload

from ren.ckks.ciphertext import Ciphertext, Plaintext, settle_scale
from ren.ckks.errors import OutOfLevelsError, ParamsMismatchError, ScaleMismatchError
from ren.ckks.params import (
    log2_exact,
    normalize_scale,
    scale_arg,
    scale_difference,
)
from ren.errors import check_instance, check_int, is_int

if TYPE_CHECKING:
    from ren.ckks.encoder import Encoder
    from ren.ckks.params import CKKSParams


class LevelsAndScales:
    """The Evaluator's level and scale moves (module doc); not used on its own."""

    if TYPE_CHECKING:  # what it uses of the Evaluator
        params: CKKSParams
        encoder: Encoder

        @property
        def auto(self) -> bool: ...
        def is_unrescaled_product(self, ct: Ciphertext) -> bool: ...
        def check_ciphertext(self, ct: Any, what: str = ..., op: str = ...) -> Ciphertext: ...
        def rescale(self, ct: Ciphertext) -> Ciphertext: ...
        def relinearize(self, ct: Ciphertext) -> Ciphertext: ...
        def multiply_int(self, ct: Ciphertext, k: int) -> Ciphertext: ...
        def multiply_scalar(self, ct: Ciphertext, c: complex,
                            scale: Fraction | float | None = ..., *,
                            target_scale: Fraction | float | None = ...) -> Ciphertext: ...
        def adjust_scale(self, ct: Ciphertext, target_scale: Fraction | float) -> Ciphertext: ...
        def _product_scale(self, scale: Fraction, level: int, op: str,
                           message: float | Fraction = ...) -> Fraction: ...

    @staticmethod
    def _scale_arg(value: Any, what: str) -> Fraction:
        """A scale argument as an exact Fraction (NumPy integers read as ints)."""
        return scale_arg(int(value) if is_int(value) else value, what)

    @overload
    def drop_level(self, x: Ciphertext, level: int | None = None) -> Ciphertext: ...
    @overload
    def drop_level(self, x: Plaintext, level: int | None = None) -> Plaintext: ...

    def drop_level(self, x: Ciphertext | Plaintext, level: int | None = None
                   ) -> Ciphertext | Plaintext:
        """`x` at the lower `level` (default: one below), same scale: a view of a prefix of its
        primes, no computation."""
        check_instance(x, (Ciphertext, Plaintext), "drop_level: x",
                       hint="drop_level moves a ciphertext or a plaintext to a lower level")
        if x.params != self.params:
            raise ParamsMismatchError(f"drop_level: the {type(x).__name__.lower()} was made "
                                      "under other CKKSParams than the evaluator's")
        level = x.level - 1 if level is None else check_int(level, "drop_level: level")
        if not 0 <= level <= x.level:
            raise OutOfLevelsError(f"drop_level: cannot move from level {x.level} to {level!r}; "
                                   f"pick a level in [0, {x.level}]")
        if level == x.level:
            return x
        self.params.check_scale(x.scale, level, "drop_level", fix=lambda: (
            f"dropping from level {x.level} keeps the scale but shrinks the modulus; rescale "
            "instead (it divides the scale too) or drop fewer levels"))
        ring = self.params.ring(level)
        if isinstance(x, Plaintext):
            values = x.values
            out = Plaintext(x.poly.to_ring(ring), x.scale, level, x.params)
            return out if values is None else out.keep_values(values)
        return Ciphertext(tuple(c.to_ring(ring) for c in x.parts), x.scale, level, x.params)

    def align(self, ct: Ciphertext, level: int | None = None,
              scale: Fraction | float | None = None) -> Ciphertext:
        """`ct` at `level` (default: its own) with exactly `scale` (default: its own), at no cost
        to the result's level: a view when only the level changes; dropped to level + 1, an
        integer product aimed at `scale` and a rescale when the scale changes too; at its own
        level, a scale that is an integer multiple of its own (an exact integer product).  Any
        other scale at its own level needs a level (`adjust_scale`): ScaleMismatchError.

        In auto mode an unrescaled product that has to move is rescaled first (then ``scale``
        defaults to the rescaled scale).  This is what auto mode does to meet another operand,
        offered to code that needs an input at a given level and scale (transforms,
        bootstrapping, your own algorithms)."""
        ct = self.check_ciphertext(ct, op="align")
        if level is not None:
            level = check_int(level, "align: level", hint="levels are ints in [0, depth]")
        target = None if scale is None else self._scale_arg(scale, "align: scale")
        if (level is None or level == ct.level) and (target is None or target == ct.scale):
            return ct
        ct = self._ready(ct)
        level = ct.level if level is None else level
        target = ct.scale if target is None else target
        if not 0 <= level <= ct.level:
            raise OutOfLevelsError(
                f"align: cannot move a ciphertext at level {ct.level} to level {level}: levels "
                f"only go down (pick a level in [0, {ct.level}]); bootstrap to raise one")
        if target == ct.scale:
            return self.drop_level(ct, level)
        target = self.params.check_scale(target, level, "align", fix=lambda: (
            f"the requested scale must fit level {level}; ask for another one"))
        if level < ct.level:
            return self._reach(ct, level, target)
        ratio = target / ct.scale
        if ratio.denominator != 1:
            raise ScaleMismatchError(
                f"align: at its own level {level} a ciphertext reaches only an integer multiple "
                f"of its scale for free, and {scale_difference(target, ct.scale)} is none; "
                "align to a lower level (free), or use adjust_scale (it costs a level)")
        out = self.multiply_int(ct, ratio.numerator)
        return Ciphertext(out.parts, target, level, self.params)

    def _align(self, a, b):
        level = min(a.level, b.level)
        return self.drop_level(a, level), self.drop_level(b, level)

    # -- the automatic mode -----------------------------------------------------------------------
    def _ready(self, ct: Ciphertext, size2: bool = False) -> Ciphertext:
        """Auto mode: `ct` rescaled if it is an unrescaled product (and relinearized first when
        a two-part ciphertext is needed)."""
        if not self.auto:
            return ct
        if size2 and ct.size == 3:
            ct = self.relinearize(ct)
        while self.is_unrescaled_product(ct):
            ct = self.rescale(ct)
        return ct

    def _reach(self, ct: Ciphertext, level: int, scale: Fraction) -> Ciphertext:
        """`ct` (above `level`) at `level` with exactly `scale`, at no cost to the result's
        level: dropped to level + 1, an integer product aimed at `scale`, one rescale (the one
        place that does this: auto mode's meeting of operands, `align`, transforms,
        bootstrapping)."""
        ct = self.drop_level(ct, level + 1)
        return settle_scale(self.rescale(self.multiply_scalar(ct, 1.0, target_scale=scale)),
                            scale)

    def _meet(self, a: Ciphertext, b: Ciphertext, op: str, scales: bool = True
              ) -> tuple[Ciphertext, Ciphertext]:
        """Auto mode: a and b at one level (the lower) and, if `scales`, one exact scale: the
        higher operand reaches the lower one's scale by an integer product and a rescale from
        one level above (free); at the same level, unequal scales cost a level."""
        if a.level == b.level:
            if not scales or a.scale == b.scale:
                return a, b
            if a.level == 0:
                self._same_scale(a, b, op)  # nothing left to adjust with: the explicit error
            target = self.params.scale(a.level - 1)
            return self.adjust_scale(a, target), self.adjust_scale(b, target)
        low, high = (a, b) if a.level < b.level else (b, a)
        if scales and high.scale != low.scale:
            high = self._reach(high, low.level, low.scale)
        else:
            high = self.drop_level(high, low.level)
        return (low, high) if a is low else (high, low)

    def _plain_at(self, pt: Plaintext, level: int, scale: Fraction, op: str
                  ) -> Plaintext | None:
        """`pt` at `level` (at most its own unless its values are known) with exactly `scale`,
        for free: re-encoded from its values; or its words dropped (equal scales), multiplied
        by an integer aimed at `scale` and rescaled from level + 1 (a lower level), or
        multiplied by the integer scale / pt.scale (its own level).  None when only the last
        could do and the ratio is no integer."""
        if (pt.level, pt.scale) == (level, scale):
            return pt
        values = pt.values
        if values is not None:
            return self.encoder.encode(values, level, scale)
        if scale == pt.scale:
            return self.drop_level(pt, level)
        p = self.params
        if level < pt.level:
            pt = self.drop_level(pt, level + 1)
            moduli = p.rescale_moduli(level + 1)
            enc = normalize_scale(scale * prod(moduli) / pt.scale)
            p.check_scale(enc, level + 1, f"{op}: the plaintext's integer factor",
                          fix_small=lambda: (
                              f"its scale 2^{pt.log2_scale:.2f} is more than one level's primes "
                              f"above the ciphertext's 2^{log2_exact(scale):.2f}; encode it at "
                              "a scale near the ciphertext's"))
            self._product_scale(pt.scale * enc, level + 1, op)
            poly = (pt.poly * round(enc)).rescale(moduli)
            return Plaintext(poly, scale, level, p)
        ratio = scale / pt.scale
        if level != pt.level or ratio.denominator != 1:
            return None
        p.check_scale(scale, level, op, fix="the ciphertext's scale does not fit its level")
        return Plaintext(pt.poly * ratio.numerator, scale, level, p)

    def _meet_plain(self, ct: Ciphertext, pt: Plaintext, op: str
                    ) -> tuple[Ciphertext, Plaintext]:
        """Auto mode: a (ready) ciphertext and a plaintext at one level and exact scale (see
        the module docstring): a lower plaintext is met by the ciphertext, any other follows
        it."""
        if ct.level > pt.level:
            if ct.scale != pt.scale:
                ct = self._reach(ct, pt.level, pt.scale)
            return self.drop_level(ct, pt.level), pt
        moved = self._plain_at(pt, ct.level, ct.scale, op)
        if moved is not None:
            return ct, moved
        if ct.level == 0:
            self._same_scale(ct, pt, op)  # nothing left to adjust with: the explicit error
        target = self.params.scale(ct.level - 1)
        moved = self._plain_at(pt, ct.level - 1, target, op)
        assert moved is not None  # a lower level is always reachable
        return self.adjust_scale(ct, target), moved

    @staticmethod
    def _same_scale(a, b, op: str) -> None:
        if a.scale != b.scale:
            raise ScaleMismatchError(
                f"{op}: the operands' scales differ: {scale_difference(a.scale, b.scale)}; "
                "bring one to the other's with evaluator.adjust_scale(ct, other.scale) (uses a "
                "level), or encode plaintexts with scale=ct.scale (auto mode does this itself)")


def prod(xs: Any) -> int:
    """The product of the integers `xs` (1 for none)."""
    out = 1
    for x in xs:
        out *= x
    return out


__all__ = ["LevelsAndScales", "prod"]
