"""What one hybrid key switch costs, counted from the digits: how `CKKSParams` picks the
key-switching shape (`CKKSParams.key_switching_options`).

For d at level l (L limbs of Q_l), α special primes and digits of d_j limbs, Ren's key switch
(`ren.rlwe.keyswitch`, after pass 4's transform elision) does, per coefficient:

* mod-up, per digit: an INTT of its d_j limbs, a basis conversion onto the L + α − d_j others
  (d_j multiply-adds each) and their NTTs (its own limbs are kept as they are);
* the inner product with the key: 2 parts × dnum digits × (L + α) limbs, a multiply-add each;
* mod-down, per part: an INTT of the α special limbs, the exact rounding
  (`ren.passes.elision.rescale_in_ntt`) and the NTTs of the L limbs.  The rounding is, below
  `RESCALE_KERNEL_FROM` special primes, α lifts from one modulus, the m-th onto L + m − 1 limbs
  (each a row set written and summed again); from it on, one RESCALE kernel, an α-term
  multiply-add per output word.

`work` weighs an NTT of one limb as log2(N)/2 multiply-adds per coefficient (its butterflies),
a mod-down lift row as log2(N)/4 (a pass over memory with one product per word) and a RESCALE
kernel multiply-add as one: weights that rank the shapes as measured at N = 2^16, depth 20,
47-bit scale with the compiled device (replayed rotation, one thread: dnum 3 93 ms, 2 96,
4 102, 5 114, 6 144, 9 193).  Fewer, larger digits cut the transforms and the inner product and
need a larger P (more special primes, a larger log2 QP, less security margin); the mod-down
grows with P, slowly since it is one kernel.  The cheapest shapes have 2–4 digits there, where
SEAL's shape is dnum = depth + 1 = 21.  (With the chain of lifts for every α the mod-down grew
fast and dnum 6 was cheapest: 6 144 ms, 5 157, 4 256, 3 365.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ren.passes.elision import RESCALE_KERNEL_FROM

if TYPE_CHECKING:
    from ren.rlwe.params import RLWEParams


@dataclass(frozen=True)
class KeySwitchCost:
    """The operations of one key switch, per coefficient (see the module docstring)."""

    N: int
    dnum: int
    special_primes: int
    ntt_limbs: int  # forward and inverse transforms of one limb
    conversion_macs: int  # mod-up basis conversion multiply-adds
    product_macs: int  # key inner-product multiply-adds
    moddown_rows: int  # limb rows the mod-down's exact rounding lifts and sums (α < 3)
    moddown_macs: int = 0  # the mod-down's RESCALE kernel multiply-adds (α ≥ 3)

    @property
    def work(self) -> float:
        """Multiply-adds per coefficient, a limb transform counted as log2(N)/2 of them and a
        mod-down row as log2(N)/4 (see the module docstring)."""
        log_n = self.N.bit_length() - 1
        return (self.ntt_limbs * log_n / 2 + self.conversion_macs + self.product_macs
                + self.moddown_rows * log_n / 4 + self.moddown_macs)

    def __str__(self) -> str:
        return (f"dnum {self.dnum}, {self.special_primes} special primes: "
                f"{self.ntt_limbs} limb NTTs, {self.conversion_macs} conversion and "
                f"{self.product_macs} inner-product multiply-adds, {self.moddown_rows} "
                f"mod-down rows and {self.moddown_macs} mod-down multiply-adds per "
                f"coefficient (work {self.work:.0f})")


def key_switch_cost(params: RLWEParams, level: int | None = None) -> KeySwitchCost:
    """The cost of one key switch at `level` (default: the top)."""
    level = params.max_level if level is None else params.check_level(level)
    L = params.limbs(level)
    alpha = len(params.special_moduli)
    digits = [b - a for a, b in params.digits_at(level)]
    ntt = sum(d + (L + alpha - d) for d in digits) + 2 * (alpha + L)
    conversion = sum(d * (L + alpha - d) for d in digits)
    product = 2 * len(digits) * (L + alpha)
    if alpha < RESCALE_KERNEL_FROM:  # the chain of one-modulus lifts, per part
        rows, macs = 2 * sum(L + m - 1 for m in range(1, alpha + 1)), 0
    else:  # one RESCALE kernel per part: an α-term sum per output word
        rows, macs = 0, 2 * alpha * L
    return KeySwitchCost(params.N, len(digits), alpha, ntt, conversion, product, rows, macs)


__all__ = ["KeySwitchCost", "key_switch_cost"]
