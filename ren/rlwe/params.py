"""`RLWEParams`: what ring-LWE keys, encryption and key switching need, and nothing about encoding.

The ring degree N; the modulus chain Q (a tuple of u32 primes in ring order) whose prefixes are
the rings of the levels (``levels[l]`` primes at level l, lowest level first); the special primes
P of hybrid key switching, kept apart (the key ring is ``Q | P``); the key-switching digits
(``dnum`` contiguous ranges of Q's primes); the secret and error distributions; the device.  A
scheme builds its parameters on this class (`ren.ckks.CKKSParams` adds scales and encoding).
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Sequence
from functools import cached_property
from typing import Any, ClassVar

from ren.device import canonical_device
from ren.errors import (
    ParameterError,
    RingMismatchError,
    check_instance,
    check_int_range,
    check_real_range,
    is_int,
)
from ren.ring import RingSpec
from ren.ring.ringspec import MAX_LOG_N
from ren.rlwe.errors import warn_insecure
from ren.rlwe.gadget import balanced_digits
from ren.sampling import gaussian_bound

#: Homomorphic Encryption Standard, 128-bit classical security, ternary secret: max log2(QP).
HE_STANDARD_128 = {1 << 10: 27, 1 << 11: 54, 1 << 12: 109, 1 << 13: 218, 1 << 14: 438,
                   1 << 15: 881, 1 << 16: 1772}


def max_log_qp(N: int) -> float:
    """The HE-standard bound for N (extrapolated in proportion to N outside the table)."""
    N = check_int_range(N, "max_log_qp: N", 1, hint="N is the ring degree, e.g. 2**14")
    if N in HE_STANDARD_128:
        return float(HE_STANDARD_128[N])
    lo, hi = min(HE_STANDARD_128), max(HE_STANDARD_128)
    ref = lo if lo > N else hi
    return HE_STANDARD_128[ref] * N / ref


def estimated_security(N: int, log_qp: float) -> float:
    """A rough estimate of classical security bits: 128 at the table's bound, in inverse
    proportion to log2(QP) (lattice attacks' cost grows with N / log Q)."""
    bound = max_log_qp(N)
    log_qp = check_real_range(log_qp, "estimated_security: log_qp", 0, lo_open=True,
                              hint="log2 of the modulus Q·P, e.g. params.log2_QP")
    return 128.0 * bound / log_qp


# -- argument checks shared with the schemes' parameter classes (`who` names the class) ----------
def check_ring_degree(who: str, N: Any) -> int:
    if isinstance(N, bool) or not isinstance(N, int) or N < 2:
        raise ParameterError(f"{who}: N must be an int >= 2, got {N!r}")
    if N & (N - 1) or N < 4 or N > 1 << MAX_LOG_N:
        raise ParameterError(f"{who}: N must be a power of two in [4, 2^{MAX_LOG_N}] "
                             f"(Ren's rings stop at 2^{MAX_LOG_N}), got {N}")
    return N


def check_sigma(who: str, sigma: Any) -> float:
    if isinstance(sigma, bool) or not isinstance(sigma, int | float) or not 0 < sigma < 100:
        raise ParameterError(f"{who}: sigma must be a positive number, got {sigma!r}")
    return float(sigma)


def check_insecure(who: str, insecure: Any) -> bool:
    if not isinstance(insecure, bool):  # a truthy string must not switch security off
        raise ParameterError(f"{who}: insecure must be True or False, got {insecure!r}")
    return insecure


def parse_secret(who: str, secret: Any, N: int) -> tuple[str, int | None]:
    """("ternary", None) or ("sparse", h) from ``"ternary"`` or ``("sparse", h)``."""
    if isinstance(secret, str) and secret == "ternary":  # (== on an array would be elementwise)
        return "ternary", None
    if isinstance(secret, tuple | list) and len(secret) == 2 and isinstance(secret[0], str) \
            and secret[0] == "sparse":
        h = secret[1]
        if isinstance(h, bool) or not isinstance(h, int) or not 1 <= h <= N:
            raise ParameterError(f"{who}: sparse secret weight must be an int in [1, {N}], "
                                 f"got {h!r}")
        return "sparse", h
    raise ParameterError(f"{who}: secret must be 'ternary' or ('sparse', h), got {secret!r}")


def _moduli(who: str, name: str, value: Any) -> tuple[int, ...]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence) or not value or \
            not all(is_int(q) for q in value):
        raise ParameterError(f"{who}: {name} must be a non-empty sequence of primes, got "
                             f"{value!r}"[:300])
    return tuple(int(q) for q in value)


def _levels(who: str, levels: Any, n: int) -> tuple[int, ...]:
    if levels is None:
        return tuple(range(1, n + 1))
    if isinstance(levels, str | bytes) or not isinstance(levels, Sequence) or not levels or \
            not all(is_int(v) for v in levels):
        raise ParameterError(f"{who}: levels must be a sequence of ints, got {levels!r}"[:300])
    out = tuple(int(v) for v in levels)
    if out[0] < 1 or out[-1] != n or any(a >= b for a, b in itertools.pairwise(out)):
        raise ParameterError(f"{who}: levels must count the chain primes of each level's ring, "
                             f"increasing from at least 1 to all {n}, got {list(out)}")
    return out


class RLWEParams:
    """Ring-LWE parameters.  Read-only after construction; equal when their fingerprints are.

    Args:
        N: ring degree (power of two).
        moduli: the chain Q, u32 NTT-friendly primes in ring order.
        special_moduli: the special primes P of hybrid key switching.
        levels: how many primes of Q the ring of each level holds, lowest level first (default:
            one prime per level, ``1, 2, …, len(moduli)``); the top level holds all of Q.
        dnum: key-switching digits (None: the fewest whose every digit is at most P).
        secret: ``"ternary"`` or ``("sparse", h)`` (h nonzero ±1 coefficients).
        sigma: error standard deviation.
        insecure: accept parameters below 128-bit security (with a warning).
        device: where keys and ciphertexts live and run ("python", "cpu", "cuda", ...); not part
            of the fingerprint.
    """

    #: The scheme's name in messages ("CKKS keeps polynomials in the NTT domain").
    scheme: ClassVar[str] = "RLWE"
    #: What to change when the parameters are insecure (a scheme names its own knobs).
    _security_advice: ClassVar[str] = (
        "Use fewer or smaller moduli (Q or P), raise N, or pass insecure=True for tests and "
        "experiments")

    def __init__(self, N: int, moduli: Sequence[int], special_moduli: Sequence[int], *,
                 levels: Sequence[int] | None = None, dnum: int | None = None,
                 secret: str | tuple[str, int] = "ternary", sigma: float = 3.2,
                 insecure: bool = False, device: str = "python") -> None:
        who = type(self).__name__
        self.N = check_ring_degree(who, N)
        chain, special = _moduli(who, "moduli", moduli), _moduli(who, "special_moduli",
                                                                 special_moduli)
        try:  # primes, distinct, q ≡ 1 (mod 2N), below 2^31
            RingSpec(self.N, chain + special)
        except ParameterError as exc:
            raise ParameterError(f"{who}: the moduli Q and P: {exc}") from None
        self.chain: tuple[int, ...] = chain
        self.special_moduli: tuple[int, ...] = special
        self.level_limbs: tuple[int, ...] = _levels(who, levels, len(chain))
        self.depth = len(self.level_limbs) - 1
        self.sigma = check_sigma(who, sigma)
        self.insecure = check_insecure(who, insecure)
        self.device = canonical_device(device)
        self.secret, self.hamming_weight = parse_secret(who, secret, self.N)
        self._cache: dict[tuple[str, int], Any] = {}
        self.dnum, self.digits = self._digits(dnum)
        self._check_security()

    # -- construction helpers ---------------------------------------------------------------------
    def _digits(self, dnum: int | None) -> tuple[int, tuple[tuple[int, int], ...]]:
        bits = [math.log2(q) for q in self.chain]
        n = len(bits)
        if dnum is None:
            for d in range(1, n + 1):
                digits = balanced_digits(bits, d)
                if max(sum(bits[a:b]) for a, b in digits) <= self.log2_P:
                    break
            return d, tuple(digits)
        if isinstance(dnum, bool) or not isinstance(dnum, int) or not 1 <= dnum <= n:
            raise ParameterError(f"{type(self).__name__}: dnum must be an int in [1, {n}] (the "
                                 f"chain has {n} primes), got {dnum!r}")
        return dnum, tuple(balanced_digits(bits, dnum))

    def _check_security(self) -> None:
        bound = max_log_qp(self.N)
        if self.N in HE_STANDARD_128 and self.log2_QP <= bound:
            return
        why = (f"log2(QP) = {self.log2_QP:.1f} exceeds {bound:.0f}, the HE-standard maximum for "
               f"128-bit security at N={self.N}" if self.N in HE_STANDARD_128 else
               f"N={self.N} is outside the HE-standard table (2^10..2^16)")
        if not self.insecure:
            raise ParameterError(f"{type(self).__name__}: {why}. {self._security_advice}")
        warn_insecure(f"insecure {self.scheme} parameters (about {self.security_bits:.0f}-bit): "
                      f"{why}", stacklevel=4)

    # -- levels and rings -------------------------------------------------------------------------
    @property
    def max_level(self) -> int:
        return self.depth

    def check_level(self, level: int) -> int:
        """`level` as an int if it is one of these parameters' levels (ParameterError)."""
        if type(level) is int and 0 <= level <= self.depth:  # the common case, kept cheap
            return level
        return check_int_range(level, "level", 0, self.depth)

    def limbs(self, level: int) -> int:
        """Number of chain primes in the ring of `level`."""
        return self.level_limbs[self.check_level(level)]

    def ring(self, level: int | None = None) -> RingSpec:
        """The ciphertext ring of `level` (default: the top)."""
        level = self.depth if level is None else self.check_level(level)
        if ("Q", level) not in self._cache:
            self._cache["Q", level] = RingSpec(self.N, self.chain[: self.level_limbs[level]])
        return self._cache["Q", level]

    def ring_qp(self, level: int | None = None) -> RingSpec:
        """The ring of `level` extended by the special primes (where key switching works)."""
        return self._extended("QP", level, self.special_moduli)

    @cached_property
    def encryption_special_moduli(self) -> tuple[int, ...]:
        """The special primes P' that public-key encryption works over before dividing by them
        (`ren.rlwe.Encryptor`): the fewest of P, from the first, whose product exceeds 2^20 times
        the largest |v·e + e0 + e1·s| can be (v and s ternary or sparse, the errors clipped to
        `gaussian_bound`).  Dividing by P' leaves under 2^-20 of that noise, so a fresh
        ciphertext carries the division's rounding noise only, as when dividing by all of P,
        over fewer limbs (N = 2^16 with 17 special primes of 31 bits: 2 of them).  All of P when
        even that is not enough."""
        h = self.hamming_weight if self.hamming_weight is not None else self.N
        need = ((self.N + h + 1) * gaussian_bound(self.sigma)) << 20
        chosen, product = [], 1
        for p in self.special_moduli:
            if product > need:
                break
            chosen.append(p)
            product *= p
        return tuple(chosen)

    def ring_encryption(self, level: int | None = None) -> RingSpec:
        """The ring of `level` extended by `encryption_special_moduli`."""
        return self._extended("QP'", level, self.encryption_special_moduli)

    def _extended(self, name: str, level: int | None, moduli: tuple[int, ...]) -> RingSpec:
        level = self.depth if level is None else self.check_level(level)
        if (name, level) not in self._cache:
            self._cache[name, level] = self.ring(level).extend(moduli)
        return self._cache[name, level]

    @property
    def key_ring(self) -> RingSpec:
        """Q·P, where keys live."""
        return self.ring_qp(self.depth)

    def level_of(self, ring: RingSpec) -> int:
        """The level whose ring is `ring` (RingMismatchError if none is)."""
        check_instance(ring, RingSpec, "level_of: ring", hint="e.g. params.ring(level)")
        for level in range(self.depth + 1):
            if self.ring(level) == ring:
                return level
        raise RingMismatchError(f"{ring.short()} is the ring of no level of these parameters; "
                                "use params.ring(level)")

    def digits_at(self, level: int) -> tuple[tuple[int, int], ...]:
        """The key-switching digits (limb ranges) clipped to the ring of `level`."""
        n = self.limbs(level)
        return tuple((a, min(b, n)) for a, b in self.digits if a < n)

    # -- sizes and security -----------------------------------------------------------------------
    @cached_property
    def log2_Q(self) -> float:
        return sum(math.log2(q) for q in self.chain)

    @cached_property
    def log2_P(self) -> float:
        return sum(math.log2(q) for q in self.special_moduli)

    @property
    def log2_QP(self) -> float:
        return self.log2_Q + self.log2_P

    @property
    def security_bits(self) -> float:
        return estimated_security(self.N, self.log2_QP)

    # -- identity ---------------------------------------------------------------------------------
    @cached_property
    def fingerprint(self) -> bytes:
        """16 bytes identifying everything that decides the meaning of a ciphertext or key."""
        desc = repr(("ren.rlwe/1", self.N, self.chain, self.level_limbs, self.special_moduli,
                     self.digits, self.secret, self.hamming_weight, self.sigma))
        return hashlib.sha256(desc.encode()).digest()[:16]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RLWEParams) and self.fingerprint == other.fingerprint

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    def __getstate__(self) -> dict[str, Any]:
        """What a pickle holds: the fields, not the caches (rings, tables and cached properties,
        rebuilt on use), so equal parameters pickle to the same bytes however much each was used
        (ren.distributed names shared objects by their bytes)."""
        cached = {name for klass in type(self).__mro__ for name, attr in vars(klass).items()
                  if isinstance(attr, cached_property)}
        state = {k: v for k, v in self.__dict__.items() if k not in cached}
        state["_cache"] = {}
        return state

    def __repr__(self) -> str:
        return (f"RLWEParams(N={self.N}, depth={self.depth}, limbs={len(self.chain)}+"
                f"{len(self.special_moduli)}, log2(QP)={self.log2_QP:.1f}, dnum={self.dnum}, "
                f"~{self.security_bits:.0f}-bit{', INSECURE' if self.security_bits < 128 else ''})")


__all__ = ["HE_STANDARD_128", "RLWEParams", "check_insecure", "check_ring_degree", "check_sigma",
           "estimated_security", "max_log_qp", "parse_secret"]
