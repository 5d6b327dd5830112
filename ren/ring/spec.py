"""`RingSpec` (the ring Z_Q[X]/(X^N + 1) in RNS form) and `Domain`, with validation.

A ring is a power-of-two dimension N and a tuple of distinct NTT-friendly primes
q ≡ 1 (mod 2N), q < 2^31.  The bound keeps a residue in a u32 limb and makes Montgomery
multiplication with R = 2^32 exact in u64 arithmetic (a·b + m·q < 2^62 + 2^63).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from ren.errors import ParameterError, RingMismatchError

MAX_LOG_N = 17
MAX_MODULUS_BITS = 31

_MR_BASES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)


def is_prime(n: int) -> bool:
    """Deterministic Miller–Rabin; exact for every n < 3.3·10^24 (far beyond 2^31)."""
    if n < 2:
        return False
    for p in _MR_BASES:
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for a in _MR_BASES:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


class Domain(enum.Enum):
    """How a polynomial is stored: its coefficients, or its evaluations at the odd powers of a
    primitive 2N-th root of unity (bit-reversed order; see `ren.ring.ntt`)."""

    COEFF = "COEFF"
    NTT = "NTT"

    def other(self) -> Domain:
        return Domain.NTT if self is Domain.COEFF else Domain.COEFF

    def __repr__(self) -> str:
        return f"Domain.{self.name}"


@dataclass(frozen=True, eq=True)
class RingSpec:
    """The RNS ring Z_Q[X]/(X^N + 1) with Q the product of `moduli` (in this order).

    Immutable and hashable; validated on construction.
    """

    N: int
    moduli: tuple[int, ...]
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        N = self.N
        if isinstance(N, bool) or not isinstance(N, int):
            raise ParameterError(f"RingSpec: N must be an int, got {type(N).__name__}")
        if N < 2 or N > (1 << MAX_LOG_N) or N & (N - 1):
            raise ParameterError(
                f"RingSpec: N must be a power of two between 2 and 2^{MAX_LOG_N}, got N={N}. "
                "Pick N = 2^k, e.g. 1024 or 16384."
            )
        try:
            moduli = tuple(int(q) for q in self.moduli)
        except TypeError:
            raise ParameterError(
                f"RingSpec: moduli must be a sequence of ints, got {self.moduli!r}"
            ) from None
        if not moduli:
            raise ParameterError("RingSpec: at least one modulus is required")
        if len(set(moduli)) != len(moduli):
            dup = sorted({q for q in moduli if moduli.count(q) > 1})
            raise ParameterError(f"RingSpec: moduli must be distinct; repeated: {dup}")
        for q in moduli:
            if q <= 2 or q >= (1 << MAX_MODULUS_BITS):
                raise ParameterError(
                    f"RingSpec: modulus {q} is out of range; each modulus must satisfy "
                    f"2 < q < 2^{MAX_MODULUS_BITS} so a residue fits a u32 limb"
                )
            if not is_prime(q):
                raise ParameterError(
                    f"RingSpec: modulus {q} is not prime. Use RingSpec.generate(N, count) to get "
                    "NTT-friendly primes."
                )
            if (q - 1) % (2 * N):
                raise ParameterError(
                    f"RingSpec: modulus {q} is not NTT-friendly for N={N}: need q ≡ 1 (mod 2N="
                    f"{2 * N}), but q mod 2N = {q % (2 * N)}. Use RingSpec.generate(N, count)."
                )
        object.__setattr__(self, "moduli", moduli)
        object.__setattr__(self, "_hash", hash((N, moduli)))

    def __hash__(self) -> int:
        return self._hash

    # -- construction helpers -------------------------------------------------------------
    @classmethod
    def generate(cls, N: int, count: int, bits: int = 30) -> RingSpec:
        """A deterministic ring of `count` distinct NTT-friendly primes just below 2^bits,
        largest first."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ParameterError(f"RingSpec.generate: count must be a positive int, got {count!r}")
        if not isinstance(bits, int) or not 3 <= bits <= MAX_MODULUS_BITS:
            raise ParameterError(
                f"RingSpec.generate: bits must be between 3 and {MAX_MODULUS_BITS}, got {bits!r}"
            )
        if isinstance(N, bool) or not isinstance(N, int) or N < 2 or N & (N - 1):
            raise ParameterError(f"RingSpec.generate: N must be a power of two, got {N!r}")
        step = 2 * N
        q = (1 << bits) - ((1 << bits) - 1) % step  # largest q < 2^bits with q ≡ 1 mod 2N
        if q >= 1 << bits:
            q -= step
        primes: list[int] = []
        while len(primes) < count and q > step:
            if is_prime(q):
                primes.append(q)
            q -= step
        if len(primes) < count:
            raise ParameterError(
                f"RingSpec.generate: only {len(primes)} primes q ≡ 1 mod {step} exist below "
                f"2^{bits}; asked for {count}. Use more bits or a smaller N."
            )
        return cls(N, tuple(primes))

    # -- derived quantities ---------------------------------------------------------------
    @property
    def limbs(self) -> int:
        """Number of RNS limbs (moduli)."""
        return len(self.moduli)

    @property
    def logN(self) -> int:
        return self.N.bit_length() - 1

    @cached_property
    def Q(self) -> int:
        """The modulus Q = product of the moduli (a Python int)."""
        return math.prod(self.moduli)

    # -- sub- and super-bases ---------------------------------------------------------------
    def drop_last(self, k: int = 1) -> RingSpec:
        """The ring without its last `k` moduli (what rescaling by them lands in)."""
        if not isinstance(k, int) or k < 0 or k >= self.limbs:
            raise RingMismatchError(
                f"drop_last({k}): the ring has {self.limbs} moduli; can drop 0..{self.limbs - 1}"
            )
        return RingSpec(self.N, self.moduli[: self.limbs - k]) if k else self

    def extend(self, moduli: Iterable[int]) -> RingSpec:
        """The ring with extra moduli appended (a super-basis, e.g. Q ∪ P for key switching)."""
        return RingSpec(self.N, self.moduli + tuple(int(q) for q in moduli))

    def sub(self, start: int, stop: int | None = None) -> RingSpec:
        """The ring on the contiguous slice moduli[start:stop]."""
        moduli = self.moduli[start:stop]
        if not moduli:
            raise RingMismatchError(f"sub({start}, {stop}) selects no moduli of {self}")
        return RingSpec(self.N, moduli)

    def select(self, moduli: Sequence[int]) -> RingSpec:
        """The ring on the given moduli, which must all belong to this ring."""
        missing = [q for q in moduli if q not in self.moduli]
        if missing:
            raise RingMismatchError(f"select: moduli {missing} are not in {self}")
        return RingSpec(self.N, tuple(moduli))

    def index(self, q: int) -> int:
        return self.moduli.index(q)

    def is_subring_of(self, other: RingSpec) -> bool:
        """True when every modulus of self is a modulus of `other` (same N)."""
        return self.N == other.N and set(self.moduli) <= set(other.moduli)

    def offset_in(self, other: RingSpec) -> int | None:
        """If self's moduli are a contiguous run of other's moduli (same order), the index of the
        first one; otherwise None."""
        if self.N != other.N or self.limbs > other.limbs:
            return None
        try:
            start = other.moduli.index(self.moduli[0])
        except ValueError:
            return None
        if other.moduli[start : start + self.limbs] == self.moduli:
            return start
        return None

    def short(self) -> str:
        """A compact label, e.g. ``N=16 L=3 [q0=1073741441 ...]``."""
        return f"N={self.N} L={self.limbs} {list(self.moduli)}"

    def __repr__(self) -> str:
        return f"RingSpec(N={self.N}, moduli={self.moduli})"
