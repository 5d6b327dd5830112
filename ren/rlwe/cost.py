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
  multiply-add per output word.  Where a rescale follows (a product's relinearization, a
  transform's last mod-down), pass 4 folds the mod-down's correction into the rescale's NTT
  (`ren.passes.elision.split_ntt`): the L-limb NTT counted here is then the one both share.

`work` weighs an NTT of one limb as log2(N)/2 multiply-adds per coefficient (its butterflies),
a mod-down lift row as log2(N)/4 (a pass over memory with one product per word) and a RESCALE
kernel multiply-add as one: weights that rank the shapes as measured at N = 2^16, depth 20,
47-bit scale with the compiled device (replayed rotation, one thread: dnum 3 93 ms, 2 96,
4 102, 5 114, 6 144, 9 193).  Fewer, larger digits cut the transforms and the inner product and
need a larger P (more special primes, a larger log2 QP, less security margin); the mod-down
grows with P, slowly since it is one kernel.  The cheapest shapes have 2–4 digits there, where
SEAL's shape is dnum = depth + 1 = 21.  (With the chain of lifts for every α the mod-down grew
fast and dnum 6 was cheapest: 6 144 ms, 5 157, 4 256, 3 365.)

Cheaper is not all: a shape also decides how much noise a key switch adds, and
`key_switch_noise_bits` estimates it against a rescale's (below).
`CKKSParams.key_switching_options` ranks only the shapes whose key switch adds no more noise than
a rescale (`MAX_NOISE_BITS`), so the cheapest shape is never bought with bits of precision.

The noise, at a slot (the canonical embedding: a polynomial's value at a primitive 2N-th root of
unity ζ, what decoding reads), for a secret with h nonzero coefficients on average (h = 2N/3 for
a uniform ternary secret) and key errors of standard deviation σ:

* a rescale's rounding (and the mod-down's own, which ends every key switch) leaves r0 + r1·s
  with r0, r1 uniform in [-1/2, 1/2): a slot's variance is N·(1 + h)/12, and over the N/2 slots
  the largest is about sqrt(2·ln N) standard deviations:
  B_rescale = sqrt(2·ln N · N·(1 + h)/12);
* the key switch's inner product leaves Σ_j x_j·e_j / P after the mod-down, e_j the key's
  Gaussian error and x_j the digit j raised to Q·P by fast basis conversion: for a digit of k_j
  primes with product D_j, each coefficient is a sum of k_j terms uniform in [0, D_j), so of
  variance k_j·D_j²/12 and mean m_j = k_j·D_j/2 (the conversion is not centred).  The zero-mean
  part gives a slot the variance N·σ²·N·k_j·D_j²/12 / P²; the mean part is
  m_j·(1 + X + … + X^(N−1))·e_j, whose value at ζ is m_j·e_j(ζ)·2/(1 − ζ), largest at the slot
  nearest ζ = 1, where |2/(1 − ζ)| = 1/sin(π/2N) ≈ 2N/π: a variance N·σ²·m_j²/sin²(π/2N) / P².
  B_ks = sqrt(N·σ²·Σ_j (N·k_j·D_j²/12 + m_j²/sin²(π/2N))) / P (that slot's standard
  deviation; only the two slots nearest ζ = ±1 come close to it).

`key_switch_noise_bits` = log2(B_ks / B_rescale).  At or below 0 a key switch costs a rotation at
most about one bit against a fresh ciphertext (its own rounding, the fresh rounding and at most
one more).  The mean part dominates from small N on, so the rule asks for P about
k·D·σ·sqrt(N) (10 or more bits above the largest digit at N = 2^14) -- far more than
`RLWEParams`' default rule for dnum (every digit at most P), which only keeps the digits below P.
Measured at N = 2^14, depth 7, 40-bit scale (rotation by one, bits lost against a fresh
ciphertext, where two roundings alone lose about 0.5): 2 special primes and dnum 7 (the shape the
cost alone chose): estimate 8.2 bits, lost 8.1; dnum 8: 3.0, 3.1; dnum 9: −11.6, 0.2; 1 special
prime, dnum 16: 6.5, 5.3 -- an estimate within a bit or two, on the safe side.  The estimate is
of the top level: a lower level's digits are the top's, clipped, so its noise is no larger.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ren.node import Node
from ren.ops import Op
from ren.passes.elision import RESCALE_KERNEL_FROM

if TYPE_CHECKING:
    from ren.rlwe.params import RLWEParams

#: The most noise, in bits against a rescale's rounding (`key_switch_noise_bits`), that a
#: key-switching shape `CKKSParams.key_switching_options` proposes may add.
MAX_NOISE_BITS = 0.0


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
    noise_bits: float = math.nan  # the key switch's noise against a rescale's, log2 (see above)

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
                f"coefficient (work {self.work:.0f}); noise 2^{self.noise_bits:.1f} of a "
                "rescale's")


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
    return KeySwitchCost(params.N, len(digits), alpha, ntt, conversion, product, rows, macs,
                         key_switch_noise_bits(params, level))


def key_switch_noise_bits(params: RLWEParams, level: int | None = None) -> float:
    """log2(B_ks / B_rescale) at `level` (default: the top, the largest): the estimated largest
    slot error the key switch's inner product leaves, against a rescale rounding's (see the
    module docstring).  At most `MAX_NOISE_BITS` (0): no more noise than a rescale."""
    level = params.max_level if level is None else params.check_level(level)
    N, P = params.N, math.prod(params.special_moduli)
    h = params.hamming_weight if params.hamming_weight is not None else 2 * N / 3
    near_one = 1 / math.sin(math.pi / (2 * N)) ** 2  # |2/(1 − ζ)|² at the slot nearest ζ = 1
    chain = params.chain
    # Σ_j (N·k·D²/12 + (k·D/2)²·near_one) / P², each term scaled by P² first: D and P have
    # hundreds of bits, past a float's range once squared
    acc = 0.0
    for a, b in params.digits_at(level):
        k, ratio = b - a, math.prod(chain[a:b]) / P  # Python's int / int: exact, then a float
        acc += ratio * ratio * (N * k / 12 + k * k / 4 * near_one)
    if acc == 0.0:  # P past a float's range above the digits: nothing left to count
        return -math.inf
    ks = math.sqrt(N * params.sigma ** 2 * acc)
    rescale = math.sqrt(2 * math.log(N) * N * (1 + h) / 12)
    return math.log2(ks / rescale)


def is_lift(n: Node) -> bool:
    """n is P·x on Q·P made by `ren.rlwe.keyswitch.times_p` (double hoisting's lift of c0):
    NTT(TO_RING(INTT(x))) times the constant P."""
    return (n.op is Op.MUL and n.src[0].op is Op.NTT and n.src[0].src[0].op is Op.TO_RING
            and n.src[1].op is Op.AS_RING and n.src[1].src[0].op is Op.CONST)


def key_switch_counts(roots: Iterable[Node], special: tuple[int, ...]) -> tuple[int, int, int]:
    """(mod-downs, mod-ups, lifts) in the lazy graph under `roots`, counted without running
    anything: RESCALEs by exactly the special primes, TO_RINGs of an INTT onto a ring holding
    them (one per decomposition digit; a lift's own TO_RING not counted), and `is_lift` lifts."""
    seen: set[int] = set()
    stack = list(roots)
    downs = ups = lifts = 0
    lifted: set[int] = set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.op is Op.RESCALE and tuple(n.arg) == special:
            downs += 1
        if n.op is Op.TO_RING and n.src[0].op is Op.INTT and set(special) <= set(n.arg.moduli):
            ups += 1
        if is_lift(n):
            lifts += 1
            lifted.add(id(n.src[0].src[0]))
        stack.extend(n.src)
    return downs, ups - len(lifted), lifts


__all__ = ["MAX_NOISE_BITS", "KeySwitchCost", "is_lift", "key_switch_cost",
           "key_switch_counts", "key_switch_noise_bits"]
