"""Meta-BTS: iterated bootstrapping (Bae et al.), the bootstrapping error bootstrapped once more.

    bt = Bootstrapper(params)                            # any bootstrapper
    meta = MetaBootstrapper(bt, error_bits=20)           # |error| of one bootstrapping ≤ 2^-20
    fresh = meta.bootstrap(ev, ct)                       # at meta.output_level (one below bt's)

One bootstrapping returns ct₁ ≈ m + e with |e| ≈ 2^-b (b its precision: ~21 bits at n16, ~28
at the small preset), but the input ct still holds m exactly (to its own noise).  So
d = ct₁ − ct (ct₁ brought down to ct's level and scale, for free: `Evaluator.align`) encrypts
e alone; d·2^k (an exact integer product of the parts, no level) lies in [−1, 1] when
k ≤ b − 1, and a second bootstrapping returns it as 2^k·e + e₂ with the same absolute error
|e₂| ≈ 2^-b.  Then

    ct₁ − BTS(2^k·d)/2^k  ≈  m + e − e − e₂/2^k  =  m − e₂/2^k:

about b + k ≈ 2b − 1 bits, until another floor (the scale's rounding, the fit of EvalMod at
small arguments, the encoding's float64) is reached.  With ``iterations=3`` the remaining error
is bootstrapped once more (shift 2k); every iteration after the first costs one bootstrapping
and **one level** (the multiplication by 2^-k and its rescale; ct₁ is brought to that level
for free), so ``output_level = bt.output_level − (iterations − 1)``; or none with
``keep_level=True``, which leaves the 2^-k in the scale label (Δ·2^k at bt.output_level) for
the caller to fold into a later product.

The error must fit: ``error_bits`` is a lower bound on the plain bootstrapping's precision in
bits (max |e| ≤ 2^-error_bits for messages in [−1, 1]); the shift is k = error_bits − 1.  Too
optimistic a bound degrades gracefully: 2^k·e beyond [−1, 1] bends on EvalMod's sine (bits
lost, measured at the small preset: error_bits 28/36/40 give 51/42/34 bits), and far beyond
it wraps, but the wrapped correction is divided by 2^k and changes nothing (error_bits 50:
one bootstrapping's 28 bits).  A pessimistic bound gives fewer bits (k + b in all).
Default: `default_error_bits` (measured precisions minus a margin).

Uses the Evaluator's public API only, and the `Bootstrapper` as it is: the two bootstrappings
share its keys, transforms and EvalMod.
"""

from __future__ import annotations

from fractions import Fraction

from ren.ckks.ciphertext import Ciphertext, settle_scale
from ren.ckks.circuits.bootstrap import Bootstrapper
from ren.ckks.encapsulation import EncapsulationKeys
from ren.ckks.errors import OutOfLevelsError
from ren.ckks.evaluator import Evaluator
from ren.errors import check_bool, check_instance, check_int_range

#: the iterations a MetaBootstrapper offers (1: a plain bootstrapping)
MAX_ITERATIONS = 3


def default_error_bits(bt: Bootstrapper) -> int:
    """A lower bound on `bt`'s precision in bits for slots in [−1, 1], with a margin: 17 when
    `bt` encapsulates a dense secret (n16 measures 21.3 bits; its shape at N = 2^12 20.1, where
    error_bits 16/18/20 give 42.8/44.0/40.7 bits), 24 otherwise (the small preset measures
    27.9–28.2; error_bits 20/24/28/32/36 give 48.2/50.7/51.4/50.0/42.1 bits)."""
    check_instance(bt, Bootstrapper, "default_error_bits: bt")
    return 17 if bt.ephemeral_weight else 24


class MetaBootstrapper:
    """Iterated bootstrapping (module docstring) around a `Bootstrapper`.

    Args:
        bt: the bootstrapper both (or all three) bootstrappings use.
        iterations: 2 (Meta-BTS: one correction) or 3 (two); 1 is a plain bootstrapping.
        error_bits: a lower bound on one bootstrapping's precision in bits (default
            `default_error_bits`); the shift k = error_bits − 1 per correction.
        keep_level: spend no level: the result stays at bt.output_level with the scale
            Δ·2^(k·(iterations − 1)) (Δ the level's scale; the correction's 2^-k is a scale
            label, ct₁ reaches that scale by an exact integer product).  Fold the factor into
            your next plaintext or scalar product (``multiply_scalar(..., target_scale=)``
            aims at any scale), or `Evaluator.adjust_scale` (a level) when you need Δ.

    Attributes: bootstrapper, iterations, error_bits, shift_bits (k), keep_level,
    output_level (bt.output_level − iterations + 1, or bt.output_level with keep_level),
    output_scale (the result's scale), levels_used (params.depth − output_level)."""

    def __init__(self, bt: Bootstrapper, iterations: int = 2,
                 error_bits: int | None = None, keep_level: bool = False) -> None:
        check_instance(bt, Bootstrapper, "MetaBootstrapper: bt",
                       hint="a ren.ckks.circuits.Bootstrapper for the parameters")
        self.bootstrapper = bt
        self.iterations = check_int_range(
            iterations, "MetaBootstrapper: iterations", 1, MAX_ITERATIONS,
            hint="2 bootstraps the error once more (about twice the bits), 3 twice; each "
                 "costs a bootstrapping and a level")
        if error_bits is None:
            error_bits = default_error_bits(bt)
        scale_bits = int(bt.params.scale(bt.output_level)).bit_length() - 1
        corrections = max(1, self.iterations - 1)
        self.error_bits = check_int_range(
            error_bits, "MetaBootstrapper: error_bits", 2, (scale_bits - 2) // corrections + 1,
            hint="a lower bound on one bootstrapping's precision in bits (e.g. 16 at n16, "
                 "20 at the small preset); the shifted errors must stay below the scale")
        self.shift_bits = self.error_bits - 1
        self.keep_level = check_bool(keep_level, "MetaBootstrapper: keep_level")
        spent = 0 if self.keep_level else self.iterations - 1
        self.output_level = bt.output_level - spent
        if self.output_level < 0:
            raise OutOfLevelsError(
                f"MetaBootstrapper: {self.iterations} iterations need {self.iterations - 1} "
                f"level(s) after the bootstrapping, which leaves {bt.output_level}; use fewer "
                "iterations or parameters with more depth")
        self.levels_used = bt.params.depth - self.output_level
        shift = self.shift_bits * (self.iterations - 1) if self.keep_level else 0
        self.output_scale = bt.params.scale(self.output_level) * (1 << shift)
        if shift:  # the scale must leave the message room below Q at that level
            bt.params.check_scale(self.output_scale, self.output_level,
                                  "MetaBootstrapper(keep_level=True)", fix=lambda: (
                                      "use keep_level=False, fewer iterations or a smaller "
                                      "error_bits"))

    def bootstrap(self, ev: Evaluator, ct: Ciphertext,
                  encapsulation_keys: EncapsulationKeys | None = None) -> Ciphertext:
        """`ct` refreshed to `output_level`, its bootstrapping error corrected
        `iterations` − 1 times (arguments as `Bootstrapper.bootstrap`).  `ct` must be at level
        1 or above, or at level 0 at the bootstrapper's `input_scale`."""
        bt = self.bootstrapper
        ct = ev.check_ciphertext(ct, op="MetaBootstrapper.bootstrap")
        x = ev.explicit()
        if x.is_unrescaled_product(ct):
            ct = x.rescale(x.relinearize(ct) if len(ct.parts) > 2 else ct)
        if ct.level == 0 and ct.scale != bt.input_scale:
            # the error is measured against ct, so ct must be where bt can take it
            ct = x.align(ct, 0, bt.input_scale)
        out = bt.bootstrap(ev, ct, encapsulation_keys)
        for i in range(1, self.iterations):
            out = self._correct(x, ct, out, i * self.shift_bits, encapsulation_keys)
        return out

    def _correct(self, x: Evaluator, ct: Ciphertext, out: Ciphertext, shift: int,
                 keys: EncapsulationKeys | None) -> Ciphertext:
        """out − BTS(2^shift·(out − ct))/2^shift, one level below `out` (or at its level at
        the scale Δ·2^shift with keep_level)."""
        bt, params = self.bootstrapper, self.bootstrapper.params
        diff = x.sub(x.align(out, ct.level, ct.scale), ct)  # encrypts out's error only
        # diff·2^shift: `multiply_int`'s guard assumes a message up to 1 (at level 0 it refuses
        # 2^shift), but diff's message is the error, below 2^-error_bits: the exact integer
        # product of the parts, the same words multiply_int would make
        up = Ciphertext(tuple(p * (1 << shift) for p in diff.parts), diff.scale, diff.level,
                        diff.params)
        fixed = bt.bootstrap(x, up, keys)
        if self.keep_level:  # fixed/2^shift as a label, out brought to it exactly
            fix = Ciphertext(fixed.parts, fixed.scale * (1 << shift), fixed.level, fixed.params)
            return x.sub(x.align(out, out.level, fix.scale), fix)
        level = out.level - 1
        target = params.scale(level)
        fix = x.rescale(x.multiply_scalar(fixed, float(Fraction(1, 1 << shift)),
                                          target_scale=target))
        fix = settle_scale(fix, target)  # equal Fractions (aimed up to their rounding)
        return x.sub(x.align(out, level, target), fix)


__all__ = ["MAX_ITERATIONS", "MetaBootstrapper", "default_error_bits"]
