"""`BGVParams`: BGV's parameters — the plaintext modulus t of `BFVParams` over a modulus chain
with levels, as CKKS has them — its presets, and its level errors.

A BGV ciphertext at level l lives on Q_l, the first ``level_limbs[l]`` primes of the chain (the
RLWE layer's levels: ``levels`` counts the primes of each level's ring, lowest first).  Its phase
``c0 + c1·s`` is ``f·m + t·v`` (mod Q_l): the message times a known factor f (mod t) plus a
multiple of t.  A product multiplies the noise terms, so the evaluator divides the product by the
primes of one level (modulus switching, `ren.bfv.bgv`) and gets back to about the *switching
floor* (the rounding noise of the switch, t·‖δ0 + δ1·s‖/q).  Each level must therefore drop
enough bits to bring a product of two floor-sized noises back to the floor.  Measured (squaring
chains, t = 65537): the floor is about log2(t) + log2(N)/2 + 2 bits (24-25 bits at N = 2^13 to
2^15) and a product of two floors is a little less than 30 bits above it: one 30-bit prime per
level holds the noise at the floor at N = 2^13, while at N = 2^14 and 2^15 it creeps up by a bit
or more per product and then runs away, so the presets drop two primes at every third level
(`PRESETS`).  The base level (level 0) must hold the floor itself with room to spare: two primes
in the presets (about 35 bits left there for sums and rotations; one prime leaves about 6 bits
at N = 2^13 and gives one more level).

`BGVParams` is a `BFVParams` (so the batch `Encoder`, `Plaintext` and `galois_keys` of
``ren.bfv`` take it); the BFV `Evaluator` must not be given one — its ciphertexts live on all of
Q in one level, BGV's on each level's Q_l.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from functools import cached_property
from typing import Any, ClassVar

from ren.bfv.errors import PlaintextModulusError
from ren.bfv.params import BFVParams, check_plain_modulus
from ren.errors import LevelError, ParameterError, check_int_range
from ren.ring.ringspec import ntt_primes
from ren.rlwe.params import RLWEParams

#: Bits a freshly switched ciphertext's phase takes beyond log2(t) + log2(N)/2, with a margin (the
#: switching floor t·‖δ0 + δ1·s‖/q measured 1.5 to 2 bits above log2(t) + log2(N)/2 at
#: N = 2^10..2^13).
FLOOR_MARGIN_BITS = 4

PRESETS: dict[str, dict[str, Any]] = {
    # N, t, the multiplicative depth, the primes each level drops (top level first; 30-bit
    # primes), base primes and special primes.  Q·P stays under the HE-standard bound (218 / 438
    # / 881 bits): N13 7 primes (210 bits), N14 14 (420), N15 29 (870).  A level of one prime
    # does not quite bring a product of two floor-sized noises back to the floor at N >= 2^14
    # (the noise creeps up by 1 to 5 bits per product, then runs away), so every third level
    # drops two primes there.  Measured on squaring chains (seeds 7 and 8, the cpu device): every
    # product exact, the noise 24-32 bits, 28 (N15) to 36 bits left at level 0.
    "N13": dict(N=1 << 13, t=65537, depth=4, primes_per_level=1, base_primes=2,
                special_primes=1),
    "N14": dict(N=1 << 14, t=65537, depth=8, primes_per_level=(1, 1, 2) * 2 + (1, 1),
                base_primes=2, special_primes=2),
    "N15": dict(N=1 << 15, t=65537, depth=18, primes_per_level=(1, 1, 2) * 5 + (1, 1, 1),
                base_primes=2, special_primes=4),
}


#: The keywords `BGVParams.generate` passes on to the constructor.
INIT_KEYWORDS = frozenset({"dnum", "secret", "sigma", "insecure", "device"})
#: The entries a preset has or `BGVParams.preset` may override.
PRESET_FIELDS = INIT_KEYWORDS | {"N", "t", "depth", "primes_per_level", "base_primes",
                                 "special_primes", "bits"}


def _check_known(names: Any, known: frozenset[str], where: str) -> None:
    unknown = sorted(map(str, set(names) - known))
    if unknown:
        raise ParameterError(f"{where}: unknown keyword(s) {unknown}; the keywords are "
                             f"{sorted(known)}")


class BGVLevelError(LevelError):
    """A BGV ciphertext's level does not allow the operation: operands at different levels in
    explicit mode, or a switch below level 0."""


class DepthExhaustedError(BGVLevelError):
    """A product was asked for at level 0: in auto mode every product (ciphertext or plaintext)
    ends with a switch to the next level down, and level 0 has none; its noise would not fit
    Q_0.  Decrypt first, or use parameters with more levels."""


class BGVParams(BFVParams):
    """BGV parameters.  Read-only after construction; equal when their fingerprints are.

    Args:
        N: ring degree (power of two).
        t: plaintext modulus (>= 2, coprime to every prime; a prime ≡ 1 mod 2N below 2^31 for
            batch encoding).
        moduli: the chain Q (u32 NTT primes), lowest level's primes first.
        special_moduli: the special primes P of hybrid key switching.
        levels: how many primes of Q the ring of each level holds, lowest first (default: one
            prime per level); the multiplicative depth is ``len(levels) - 1``.
        dnum, secret, sigma, insecure, device: as `ren.rlwe.RLWEParams`.
    """

    scheme: ClassVar[str] = "BGV"

    def __init__(self, N: int, t: int, moduli: Sequence[int], special_moduli: Sequence[int], *,
                 levels: Sequence[int] | None = None, dnum: int | None = None,
                 secret: str | tuple[str, int] = "ternary", sigma: float = 3.2,
                 insecure: bool = False, device: str = "python") -> None:
        self.t = check_plain_modulus(t, "BGVParams")
        if isinstance(moduli, str | bytes) or not isinstance(moduli, Sequence) or not moduli:
            raise ParameterError(f"BGVParams: moduli must be a non-empty sequence of primes, got "
                                 f"{moduli!r}"[:300])
        # BFVParams.__init__ fixes one level; BGV has the RLWE layer's levels
        RLWEParams.__init__(self, N, moduli, special_moduli, levels=levels, dnum=dnum,
                            secret=secret, sigma=sigma, insecure=insecure, device=device)
        for q in (*self.chain, *self.special_moduli):
            if math.gcd(q, self.t) != 1:
                raise PlaintextModulusError(f"BGVParams: t = {self.t} shares a factor with the "
                                            f"prime {q}; t must be coprime to Q·P")
        if self.floor_budget_estimate(0) < 1:
            raise PlaintextModulusError(
                f"BGVParams: t = {self.t} ({math.log2(self.t):.1f} bits) is too large for the "
                f"base level Q_0 ({self.log2_Q_at(0):.1f} bits) at N={self.N}: a ciphertext at "
                f"level 0 would have no noise budget (log2 Q_0 must exceed log2 t + log2(N)/2 + "
                f"{FLOOR_MARGIN_BITS}). Use a smaller t or more primes in the base level")
        self.mult_depth = self.depth

    # -- constructors -----------------------------------------------------------------------------
    @classmethod
    def generate(cls, N: int, t: int, depth: int,  # type: ignore[override]
                 primes_per_level: int | Sequence[int] = 1, base_primes: int = 1,
                 special_primes: int = 1, bits: int = 30, **kwargs: Any) -> BGVParams:
        """Parameters over the largest NTT primes below 2^bits: `base_primes` for level 0, then
        `depth` levels above it (Q), and `special_primes` (P).  `primes_per_level` is how many
        primes each level drops: one int for all, or `depth` ints, the top level's first (the
        order in which products consume them)."""
        _check_known(kwargs, INIT_KEYWORDS, "BGVParams.generate")
        N = check_int_range(N, "BGVParams.generate: N", 4, 1 << 17)
        depth = check_int_range(depth, "BGVParams.generate: depth", 0, 256)
        if isinstance(primes_per_level, Sequence) and not isinstance(primes_per_level,
                                                                     str | bytes):
            drops = [check_int_range(v, "BGVParams.generate: primes_per_level[i]", 1, 16)
                     for v in primes_per_level]
            if len(drops) != depth:
                raise ParameterError(f"BGVParams.generate: primes_per_level has {len(drops)} "
                                     f"entries for depth {depth}; give one per level (top "
                                     "first) or one int for all")
        else:
            drops = [check_int_range(primes_per_level, "BGVParams.generate: primes_per_level",
                                     1, 16)] * depth
        base = check_int_range(base_primes, "BGVParams.generate: base_primes", 1, 64)
        k = check_int_range(special_primes, "BGVParams.generate: special_primes", 1, 64)
        bits = check_int_range(bits, "BGVParams.generate: bits", 20, 31)
        n = base + sum(drops)
        primes = ntt_primes(N, bits, n + k)
        if len(primes) < n + k:
            raise ParameterError(f"BGVParams.generate: only {len(primes)} primes ≡ 1 mod {2 * N}"
                                 f" below 2^{bits}; asked for {n + k}")
        levels = [base]
        for d in reversed(drops):
            levels.append(levels[-1] + d)
        return cls(N, t, primes[:n], primes[n:], levels=levels, **kwargs)

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> BGVParams:
        """A named preset (`PRESETS`: N13, N14, N15), 128-bit secure; `overrides` replace its
        entries (and pass other keyword arguments, e.g. device=)."""
        if not isinstance(name, str) or name not in PRESETS:
            raise ParameterError(f"BGVParams.preset: unknown preset {name!r}; choose one of "
                                 f"{sorted(PRESETS)}")
        _check_known(overrides, PRESET_FIELDS, "BGVParams.preset")
        return cls.generate(**{**PRESETS[name], **overrides})

    # -- levels -----------------------------------------------------------------------------------
    def Q_at(self, level: int) -> int:
        """Q_level, the product of the primes of `level`'s ring."""
        return math.prod(self.chain[: self.limbs(level)])

    def log2_Q_at(self, level: int) -> float:
        return sum(math.log2(q) for q in self.chain[: self.limbs(level)])

    def dropped(self, level: int) -> tuple[int, ...]:
        """The primes a switch from `level` to `level` − 1 divides out, last prime first."""
        level = self.check_level(level)
        if level == 0:
            raise BGVLevelError("level 0 has no lower level to switch to")
        return tuple(reversed(self.chain[self.limbs(level - 1): self.limbs(level)]))

    def floor_budget_estimate(self, level: int) -> float:
        """About the noise budget (bits) of a ciphertext at the switching floor at `level`:
        log2 Q_level − log2 t − log2(N)/2 − FLOOR_MARGIN_BITS."""
        return (self.log2_Q_at(level) - math.log2(self.t) - math.log2(self.N) / 2
                - FLOOR_MARGIN_BITS)

    @property
    def fresh_budget_estimate(self) -> float:
        return self.floor_budget_estimate(self.depth)

    @property
    def estimated_depth(self) -> int:
        """The multiplicative depth: one level per product (auto mode), so ``depth``."""
        return self.depth

    # -- identity ---------------------------------------------------------------------------------
    @cached_property
    def fingerprint(self) -> bytes:
        desc = repr(("ren.bgv/1", self.N, self.chain, self.level_limbs, self.special_moduli,
                     self.digits, self.secret, self.hamming_weight, self.sigma, self.t))
        return hashlib.sha256(desc.encode()).digest()[:16]

    def __repr__(self) -> str:
        return (f"BGVParams(N={self.N}, t={self.t}{' (batching)' if self.batching else ''}, "
                f"levels={self.depth + 1} ({len(self.chain)}+{len(self.special_moduli)} limbs), "
                f"log2(QP)={self.log2_QP:.1f}, mult_depth={self.mult_depth}, "
                f"~{self.security_bits:.0f}-bit"
                f"{', INSECURE' if self.security_bits < 128 else ''})")


__all__ = ["FLOOR_MARGIN_BITS", "PRESETS", "BGVLevelError", "BGVParams", "DepthExhaustedError"]
