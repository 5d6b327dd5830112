"""`BFVParams`: the RLWE parameters (`ren.rlwe.RLWEParams`) of a BFV ciphertext chain Q plus the
plaintext modulus t, the auxiliary basis of the scale-invariant multiplication, the presets and
the checks in BFV terms.

BFV keeps one ring: every ciphertext lives on all of Q (the RLWE layer sees one level, depth 0),
and the multiplicative depth is a noise budget, not a count of primes.  ``Δ = Q/t`` scales a
message into the top of the coefficients; a product is scaled back by t/Q on an auxiliary basis
``B | m_sk`` (`aux_moduli`, `sk_modulus`): primes ≡ 1 (mod 2N) below 2^31, disjoint from Q and
P, chosen so that ``B > 4·t·N·Q`` holds, and one more prime m̃ (`tilde_modulus`) of the exact
extension of the operands from Q to ``B | m_sk`` (see `ren.bfv.evaluator`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from functools import cached_property
from typing import Any, ClassVar

from ren.bfv.errors import ChainSecurityError, PlaintextModulusError
from ren.errors import ParameterError, check_int, check_int_range
from ren.ring import RingSpec, is_prime
from ren.ring.ringspec import ntt_primes
from ren.rlwe.params import RLWEParams

#: The largest plaintext modulus (coefficient encoding keeps plaintexts in int64 arrays).
MAX_T_BITS = 60
#: Bits a fresh ciphertext's noise takes beyond log2(t): about log2(N) + FRESH_MARGIN_BITS.
FRESH_MARGIN_BITS = 4
#: Bits one multiplication with relinearization consumes beyond log2(t) + log2(N): the product's
#: noise grows by about t·N·‖v‖ (the exact extension adds nothing to textbook BFV).  Measured
#: (SEAL's figures too, `tests/test_bfv_seal.py`): 28 to 29 bits per product at N = 2^13 and
#: 29 to 30 at N = 2^14 with t = 65537; 24 to 25 with a 15.3-bit t at N = 2^10.
MULT_MARGIN_BITS = 1

PRESETS: dict[str, dict[str, Any]] = {
    # N, t, primes of Q, special primes P, and the multiplicative depth measured on the preset
    # (a chain of that many multiplications with relinearization decrypts exactly; one more
    # does not; `estimated_depth` is at most this).  Measured on the "cpu" device: fresh 156,
    # 336, 725 bits; 28-29, 29-30, 30-32 bits per product (SEAL's figures at N = 2^14)
    "N13": dict(N=1 << 13, t=65537, chain_primes=6, special_primes=1, mult_depth=5),
    "N14": dict(N=1 << 14, t=65537, chain_primes=12, special_primes=2, mult_depth=11),
    "N15": dict(N=1 << 15, t=65537, chain_primes=25, special_primes=4, mult_depth=23),
}


def batches(N: int, t: int) -> bool:
    """Whether t supports batch (slot) encoding at ring degree N: a prime ≡ 1 (mod 2N) below
    2^31 (the slot NTT runs in a one-prime Ren ring)."""
    N = check_int_range(N, "batches: N", 1, hint="the ring degree, e.g. 8192")
    t = check_int(t, "batches: t")
    return 1 < t < 1 << 31 and t % (2 * N) == 1 and is_prime(t)


#: the keyword arguments BFVParams.__init__ takes beyond N, t, moduli, special_moduli
_INIT_KEYWORDS = ("mult_depth", "dnum", "secret", "sigma", "insecure", "device")


def _check_keywords(where: str, given: dict[str, Any], known: tuple[str, ...]) -> None:
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise ParameterError(f"{where}: unknown keyword(s) {unknown}; the keywords are "
                             f"{sorted(known)}")


def check_plain_modulus(t: Any, who: str = "BFVParams") -> int:
    """`t` as an int in [2, 2^MAX_T_BITS] (PlaintextModulusError otherwise)."""
    return check_int_range(t, f"{who}: t", 2, 1 << MAX_T_BITS, error=PlaintextModulusError,
                           hint="the plaintext modulus, e.g. 65537 (batches for N <= 2^15)")


class BFVParams(RLWEParams):
    """BFV parameters.  Read-only after construction; equal when their fingerprints are.

    Args:
        N: ring degree (power of two).
        t: plaintext modulus (any int >= 2 for coefficient encoding; a prime ≡ 1 mod 2N below
            2^31 for batch encoding).
        moduli: the ciphertext chain Q, u32 NTT-friendly primes (below 2^31, ≡ 1 mod 2N).
        special_moduli: the special primes P of hybrid key switching.
        mult_depth: the multiplicative depth the caller expects (None: `estimated_depth`);
            informative, checked against nothing but its type.
        dnum, secret, sigma, insecure, device: as `RLWEParams`.
    """

    scheme: ClassVar[str] = "BFV"
    _security_advice: ClassVar[str] = (
        "Use fewer chain primes or special primes, raise N, or pass insecure=True for tests "
        "and experiments")

    def __init__(self, N: int, t: int, moduli: Sequence[int], special_moduli: Sequence[int], *,
                 mult_depth: int | None = None, dnum: int | None = None,
                 secret: str | tuple[str, int] = "ternary", sigma: float = 3.2,
                 insecure: bool = False, device: str = "python") -> None:
        self.t = check_plain_modulus(t)
        if isinstance(moduli, str | bytes) or not isinstance(moduli, Sequence) or not moduli:
            raise ParameterError(f"BFVParams: moduli must be a non-empty sequence of primes, got "
                                 f"{moduli!r}"[:300])
        super().__init__(N, moduli, special_moduli, levels=(len(moduli),), dnum=dnum,
                         secret=secret, sigma=sigma, insecure=insecure, device=device)
        if self.fresh_budget_estimate < 1:
            raise PlaintextModulusError(
                f"BFVParams: t = {self.t} ({math.log2(self.t):.1f} bits) is too large for the "
                f"chain Q ({self.log2_Q:.1f} bits) at N={self.N}: a fresh ciphertext would have "
                f"no noise budget (log2 Q must exceed log2 t + log2 N + {FRESH_MARGIN_BITS}). "
                "Use a smaller t or more chain primes")
        if mult_depth is None:
            self.mult_depth = self.estimated_depth
        else:
            self.mult_depth = check_int_range(mult_depth, "BFVParams: mult_depth", 0)

    def _check_security(self) -> None:
        try:
            super()._check_security()
        except ParameterError as exc:
            raise ChainSecurityError(str(exc)) from None

    # -- constructors -----------------------------------------------------------------------------
    @classmethod
    def generate(cls, N: int, t: int, chain_primes: int, special_primes: int = 1,
                 bits: int = 30, **kwargs: Any) -> BFVParams:
        """Parameters over the largest `chain_primes` + `special_primes` NTT primes below
        2^bits (Q first, P after them)."""
        _check_keywords("BFVParams.generate", kwargs, _INIT_KEYWORDS)
        N = check_int_range(N, "BFVParams.generate: N", 4, 1 << 17)
        n = check_int_range(chain_primes, "BFVParams.generate: chain_primes", 1, 256)
        k = check_int_range(special_primes, "BFVParams.generate: special_primes", 1, 64)
        bits = check_int_range(bits, "BFVParams.generate: bits", 20, 31)
        primes = ntt_primes(N, bits, n + k)
        if len(primes) < n + k:
            raise ParameterError(f"BFVParams.generate: only {len(primes)} primes ≡ 1 mod {2 * N}"
                                 f" below 2^{bits}; asked for {n + k}")
        return cls(N, t, primes[:n], primes[n:], **kwargs)

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> BFVParams:
        """A named preset (`PRESETS`: N13, N14, N15), 128-bit secure; `overrides` replace its
        entries (and pass other keyword arguments, e.g. device=)."""
        if not isinstance(name, str) or name not in PRESETS:
            raise ParameterError(f"BFVParams.preset: unknown preset {name!r}; choose one of "
                                 f"{sorted(PRESETS)}")
        _check_keywords(f"BFVParams.preset({name!r})", overrides,
                        (*PRESETS[name], "bits", *_INIT_KEYWORDS))
        kwargs = {**PRESETS[name], **overrides}
        return cls.generate(**kwargs)

    # -- plaintext side ---------------------------------------------------------------------------
    @property
    def batching(self) -> bool:
        """Whether t supports batch encoding (`batches`)."""
        return batches(self.N, self.t)

    @property
    def slots(self) -> int:
        return self.N

    @cached_property
    def Q(self) -> int:
        return math.prod(self.chain)

    @cached_property
    def delta(self) -> int:
        """Δ = floor(Q/t)."""
        return self.Q // self.t

    @property
    def fresh_budget_estimate(self) -> float:
        """About the noise budget (bits) of a fresh encryption: log2 Q − log2 t − log2 N −
        FRESH_MARGIN_BITS."""
        return self.log2_Q - math.log2(self.t) - math.log2(self.N) - FRESH_MARGIN_BITS

    @property
    def estimated_depth(self) -> int:
        """About how many multiplications (with relinearization) in a row the chain supports."""
        per_mult = math.log2(self.t) + math.log2(self.N) + MULT_MARGIN_BITS
        return max(0, int((self.fresh_budget_estimate - 1) // per_mult))

    # -- the auxiliary basis of multiplication ----------------------------------------------------
    @cached_property
    def _aux(self) -> tuple[tuple[int, ...], int, int]:
        # |tensor| <= N·Q²/2·(1 + 2(L+1)/m̃)² for centred parts, so y = round(t·d/Q) < t·N·Q/2 (+1)
        need = self.log2_Q + math.log2(self.t) + math.log2(self.N) + 2
        used = set(self.chain) | set(self.special_moduli)
        out: list[int] = []
        count = len(self.chain) + len(self.special_moduli) + int(need // 30) + 5
        for q in ntt_primes(self.N, 31, count):
            if q in used:
                continue
            out.append(q)
            if sum(math.log2(p) for p in out[:-2]) > need:
                break
        if sum(math.log2(p) for p in out[:-2]) <= need:
            raise ParameterError(f"BFVParams: too few primes ≡ 1 mod {2 * self.N} below 2^31 "
                                 "for the auxiliary basis of multiplication; use a smaller chain")
        return tuple(out[:-2]), out[-2], out[-1]

    @property
    def aux_moduli(self) -> tuple[int, ...]:
        """The auxiliary basis B (see the module docstring)."""
        return self._aux[0]

    @property
    def sk_modulus(self) -> int:
        """The redundant prime m_sk of the exact conversion from B back to Q (m_sk > |B|)."""
        return self._aux[1]

    @property
    def tilde_modulus(self) -> int:
        """The extra prime m̃ of the exact extension from Q to B | m_sk (a Montgomery reduction
        by m̃ corrects the fast conversion's u·Q; m̃ > 2·(L + 1))."""
        return self._aux[2]

    @cached_property
    def ring_aux_q(self) -> RingSpec:
        """B | m_sk | Q: where the tensor product is computed (Q trailing, divided out)."""
        return RingSpec(self.N, (*self.aux_moduli, self.sk_modulus, *self.chain))

    # -- identity ---------------------------------------------------------------------------------
    @cached_property
    def fingerprint(self) -> bytes:
        desc = repr(("ren.bfv/1", self.N, self.chain, self.special_moduli, self.digits,
                     self.secret, self.hamming_weight, self.sigma, self.t))
        return hashlib.sha256(desc.encode()).digest()[:16]

    def __repr__(self) -> str:
        return (f"BFVParams(N={self.N}, t={self.t}{' (batching)' if self.batching else ''}, "
                f"limbs={len(self.chain)}+{len(self.special_moduli)}, log2(QP)="
                f"{self.log2_QP:.1f}, mult_depth={self.mult_depth}, "
                f"~{self.security_bits:.0f}-bit"
                f"{', INSECURE' if self.security_bits < 128 else ''})")


__all__ = ["MAX_T_BITS", "PRESETS", "BFVParams", "batches", "check_plain_modulus"]
