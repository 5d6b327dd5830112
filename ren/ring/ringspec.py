"""`RingSpec` (the ring Z_Q[X]/(X^N + 1) in RNS form) and `Domain`, with validation.

A ring is a power-of-two dimension N and a tuple of distinct NTT-friendly primes
q ≡ 1 (mod 2N), q < 2^31.  The bound keeps a residue in a u32 limb and makes Montgomery
multiplication with R = 2^32 exact in u64 arithmetic (a·b + m·q < 2^62 + 2^63).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import numpy as np

from ren.errors import ParameterError, RingMismatchError, check_int, is_int

MAX_LOG_N = 17
MAX_MODULUS_BITS = 31
#: The most moduli `RingSpec.generate` makes: far more than any CKKS parameter set needs, and
#: small enough that even a hopeless search (too few primes exist) ends in well under a second.
MAX_GENERATED_MODULI = 8192

_MR_BASES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
_MR_BASES_32 = (2, 3, 5, 7)  # deterministic below 3,215,031,751 > 2^31


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
    for a in _MR_BASES_32 if n < 3_215_031_751 else _MR_BASES:
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


def _int_tuple(values: object, what: str) -> tuple[int, ...]:
    """`values` (a list, tuple or 1-D array of ints) as a tuple of Python ints; never coerces
    floats or strings, which would silently change a modulus."""
    if type(values) is tuple and all(type(q) is int for q in values):
        return values  # (the common case, on every rewrite that selects rows: nothing to check)
    # sets and dicts have no reliable order, and the order of the moduli is the RNS basis
    unordered = isinstance(values, str | bytes | AbstractSet | Mapping)
    try:
        if unordered or not isinstance(values, Iterable):
            raise TypeError
        values = tuple(values)
    except TypeError:  # also a 0-d array
        raise ParameterError(f"{what} must be a sequence of ints (list, tuple or 1-D array), "
                             f"got {type(values).__name__} {values!r}") from None
    for q in values:
        if not is_int(q):
            raise ParameterError(f"{what} must be ints, found {type(q).__name__} {q!r}")
    return tuple(int(q) for q in values)


@lru_cache(maxsize=4)
def _odd_primes_upto(limit: int) -> np.ndarray:
    """The odd primes <= limit (sieve of Eratosthenes)."""
    is_p = np.ones(limit + 1, dtype=bool)
    is_p[:3] = False
    is_p[4::2] = False
    for p in range(3, math.isqrt(limit) + 1, 2):
        if is_p[p]:
            is_p[p * p :: 2 * p] = False
    return np.flatnonzero(is_p)


_SEGMENT = 1 << 16


def ntt_primes(N: int, bits: int, count: int) -> list[int]:
    """The `count` largest primes q ≡ 1 (mod 2N) with 2N < q < 2^bits, largest first (fewer
    when fewer exist).

    A segmented sieve over the progression q = 1 + k·2N, top down: every composite q < 2^bits
    has a prime factor p <= sqrt(2^bits), so striking the k with q ≡ 0 (mod p) for those p
    leaves exactly the primes.  About 100x faster than testing each candidate, so even a search
    that exhausts the progression stays quick.
    """
    step = 2 * N
    k_hi = ((1 << bits) - 2) // step  # the largest k with 1 + k·step < 2^bits
    small = _odd_primes_upto(math.isqrt((1 << bits) - 1))  # 2 never divides q = 1 + k·2N
    roots = [(-pow(step, -1, p)) % p for p in small.tolist()]  # q ≡ 0 (mod p) <=> k ≡ root
    primes: list[int] = []
    hi = k_hi
    while hi >= 1 and len(primes) < count:
        lo = max(1, hi - _SEGMENT + 1)
        alive = np.ones(hi - lo + 1, dtype=bool)  # alive[i] <-> k = lo + i
        for p, r in zip(small.tolist(), roots, strict=True):
            alive[(r - lo) % p :: p] = False
        for p in small[(small - 1) % step == 0].tolist():  # a small prime struck itself out
            if lo <= (p - 1) // step <= hi:
                alive[(p - 1) // step - lo] = True
        ks = np.flatnonzero(alive)[::-1] + lo
        primes.extend(1 + int(k) * step for k in ks[: count - len(primes)])
        hi = lo - 1
    return primes


def _approx_prime_count(N: int, bits: int) -> int:
    """About how many primes q ≡ 1 (mod 2N) lie below 2^bits: li(x)/phi(2N) with phi(2N) = N
    (prime number theorem for arithmetic progressions; an estimate for messages only)."""
    lx = bits * math.log(2)
    li = 2.0**bits / lx * (1 + 1 / lx + 2 / lx**2)
    return int(li / N)


class Domain(enum.Enum):
    """How a polynomial is stored: its coefficients, or its evaluations at the odd powers of a
    primitive 2N-th root of unity (bit-reversed order; see `ren.ring.ntt`)."""

    COEFF = "COEFF"
    NTT = "NTT"

    __hash__ = object.__hash__  # members are singletons; Enum's default hashes the name in Python

    def other(self) -> Domain:
        return Domain.NTT if self is Domain.COEFF else Domain.COEFF

    def __repr__(self) -> str:
        return f"Domain.{self.name}"


@lru_cache(maxsize=1 << 16)
def _known_prime(q: int) -> bool:
    """is_prime, remembered: every ring built on the way (drop_last, sub, …) re-validates its
    moduli, and CKKS code builds many rings over the same few dozen primes."""
    return is_prime(q)


@dataclass(frozen=True, eq=True)
class RingSpec:
    """The RNS ring Z_Q[X]/(X^N + 1) with Q the product of `moduli` (in this order).

    Immutable and hashable; validated on construction.
    """

    N: int
    moduli: tuple[int, ...]
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        N = check_int(self.N, "RingSpec: N", hint="pick N = 2^k, e.g. 1024")
        if N < 2 or N > (1 << MAX_LOG_N) or N & (N - 1):
            raise ParameterError(
                f"RingSpec: N must be a power of two between 2 and 2^{MAX_LOG_N}, got N={N}. "
                "Pick N = 2^k, e.g. 1024 or 16384."
            )
        moduli = _int_tuple(self.moduli, "RingSpec: moduli")
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
            if not _known_prime(q):
                raise ParameterError(
                    f"RingSpec: modulus {q} is not prime. Use RingSpec.generate(N, count) to get "
                    "NTT-friendly primes."
                )
            if (q - 1) % (2 * N):
                raise ParameterError(
                    f"RingSpec: modulus {q} is not NTT-friendly for N={N}: need q ≡ 1 (mod 2N="
                    f"{2 * N}), but q mod 2N = {q % (2 * N)}. Use RingSpec.generate(N, count)."
                )
        object.__setattr__(self, "N", N)
        object.__setattr__(self, "moduli", moduli)
        object.__setattr__(self, "_hash", hash((N, moduli)))

    def __hash__(self) -> int:
        return self._hash

    # -- construction helpers -------------------------------------------------------------
    @classmethod
    def generate(cls, N: int, count: int, bits: int = 30) -> RingSpec:
        """A deterministic ring of `count` distinct NTT-friendly primes just below 2^bits,
        largest first (at most `MAX_GENERATED_MODULI` of them, so the search stays fast)."""
        N = check_int(N, "RingSpec.generate: N")
        count = check_int(count, "RingSpec.generate: count")
        bits = check_int(bits, "RingSpec.generate: bits")
        if N < 2 or N > (1 << MAX_LOG_N) or N & (N - 1):
            raise ParameterError(
                f"RingSpec.generate: N must be a power of two between 2 and 2^{MAX_LOG_N}, "
                f"got {N}")
        if not 3 <= bits <= MAX_MODULUS_BITS:
            raise ParameterError(
                f"RingSpec.generate: bits must be between 3 and {MAX_MODULUS_BITS}, got {bits}")
        if count < 1:
            raise ParameterError(f"RingSpec.generate: count must be a positive int, got {count}")
        if count > MAX_GENERATED_MODULI:
            # Checked before searching: scanning for 10^9 primes would run for many minutes.
            about = _approx_prime_count(N, bits)
            why = (f"; besides, only about {about} primes q ≡ 1 mod {2 * N} exist below 2^{bits}"
                   if about < count else "")
            raise ParameterError(
                f"RingSpec.generate: count={count} is too many; it makes at most "
                f"{MAX_GENERATED_MODULI} moduli{why}. Ask for fewer moduli, or build "
                "RingSpec(N, moduli) from your own primes."
            )
        step = 2 * N
        primes = ntt_primes(N, bits, count)
        if len(primes) < count:
            raise ParameterError(
                f"RingSpec.generate: only {len(primes)} primes q ≡ 1 mod {step} exist below "
                f"2^{bits}; asked for {count}. Use fewer moduli, a smaller N or more bits (at "
                f"most {MAX_MODULUS_BITS})."
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
        k = check_int(k, "drop_last: k")
        if k < 0 or k >= self.limbs:
            raise RingMismatchError(
                f"drop_last({k}): the ring has {self.limbs} moduli; can drop 0..{self.limbs - 1}"
            )
        return derived_ring(self.N, self.moduli[: self.limbs - k]) if k else self

    def extend(self, moduli: Iterable[int]) -> RingSpec:
        """The ring with extra moduli appended (a super-basis, e.g. Q ∪ P for key switching)."""
        return derived_ring(self.N, self.moduli + _int_tuple(moduli, "extend: moduli"))

    def sub(self, start: int, stop: int | None = None) -> RingSpec:
        """The ring on the contiguous slice moduli[start:stop]."""
        start = check_int(start, "sub: start")
        stop = None if stop is None else check_int(stop, "sub: stop")
        moduli = self.moduli[start:stop]
        if not moduli:
            raise RingMismatchError(f"sub({start}, {stop}) selects no moduli of {self}")
        return derived_ring(self.N, moduli)

    def select(self, moduli: Sequence[int]) -> RingSpec:
        """The ring on the given moduli, which must all belong to this ring."""
        moduli = _int_tuple(moduli, "select: moduli")
        missing = [q for q in moduli if q not in self.moduli]
        if missing:
            raise RingMismatchError(f"select: moduli {missing} are not in {self}")
        return derived_ring(self.N, moduli)

    def index(self, q: int) -> int:
        """The position of modulus `q` in this ring."""
        q = check_int(q, "index: q")
        if q not in self.moduli:
            raise RingMismatchError(f"index: modulus {q} is not in {self}")
        return self.moduli.index(q)

    def is_subring_of(self, other: RingSpec) -> bool:
        """True when every modulus of self is a modulus of `other` (same N)."""
        other = _check_other(other, "is_subring_of")
        return self is other or (self.N == other.N and self._moduli_set <= other._moduli_set)

    @cached_property
    def _moduli_set(self) -> frozenset[int]:
        return frozenset(self.moduli)

    def offset_in(self, other: RingSpec) -> int | None:
        """If self's moduli are a contiguous run of other's moduli (same order), the index of the
        first one; otherwise None."""
        other = _check_other(other, "offset_in")
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


@lru_cache(maxsize=1 << 12)
def derived_ring(N: int, moduli: tuple[int, ...]) -> RingSpec:
    """`RingSpec(N, moduli)`, built and validated once per (N, moduli): the rings a program
    derives (a level's, Q·P, a rescale's target) recur thousands of times while scheduling,
    and each construction checks every modulus.  The same object comes back each time."""
    return RingSpec(N, moduli)


def _check_other(other: object, what: str) -> RingSpec:
    if not isinstance(other, RingSpec):
        raise ParameterError(f"{what}: expected a RingSpec, got {type(other).__name__}")
    return other
