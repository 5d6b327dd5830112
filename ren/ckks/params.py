"""`CKKSParams`: the RLWE parameters (`ren.rlwe.RLWEParams`) of a CKKS modulus chain built for a
scale, plus the scales, the presets and the security check in CKKS terms.

The chain (ring order) is ``base primes | level 1 | level 2 | … | level L``; the ring of level l
is the prefix ending with level l's primes, so dropping a level is a view and a rescale divides
by the trailing group.  Special primes P (for key switching) are kept apart: the key ring is
``chain | P``.  Rings, digits and security estimates are the RLWE layer's; this module chooses
the primes and owns everything about scales.
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import math
import numbers
import warnings
from collections.abc import Callable
from fractions import Fraction
from functools import cached_property, lru_cache
from typing import Any, ClassVar

from ren.ckks import chain as ch
from ren.ckks.errors import InsecureParametersWarning, ScaleOutOfBoundsError
from ren.device import canonical_device
from ren.errors import (
    ParameterError,
    check_int_range,
    check_real,
    check_real_range,
    check_sequence,
    is_int,
)
from ren.ring.ringspec import MAX_GENERATED_MODULI, MAX_LOG_N
from ren.rlwe.cost import (
    MAX_NOISE_BITS,
    KeySwitchCost,
    key_switch_cost,
    key_switch_noise_bits,
)
from ren.rlwe.params import (
    HE_STANDARD_128,
    RLWEParams,
    check_insecure,
    check_sigma,
    estimated_security,
    max_log_qp,
    parse_secret,
)

#: A chain holds at most MAX_GENERATED_MODULI primes (as `RingSpec.generate` does); a level
#: holds one or two.
MAX_DEPTH = MAX_GENERATED_MODULI // 2
#: A scale whose numerator or denominator grows past this many bits (only long chains of
#: squarings without fresh operands get there) keeps SCALE_KEEP_BITS significant bits.
SCALE_CAP_BITS = 1024
SCALE_KEEP_BITS = 512
#: The smallest scale a ciphertext or plaintext may carry: below 1, encoding rounds every value
#: smaller than 1/(2·scale) > 1/2 to zero, so not even the integer part survives.
MIN_SCALE = 1
#: The base modulus Q_0 holds at most 8 primes of 31 bits.
MAX_FIRST_BITS = 31 * 8

PRESETS: dict[str, dict[str, Any]] = {
    "N12": dict(N=1 << 12, depth=1, scale_bits=30, first_bits=40, special_primes=1),
    "N13": dict(N=1 << 13, depth=3, scale_bits=40, first_bits=50, special_primes=1),
    "N14": dict(N=1 << 14, depth=7, scale_bits=40, first_bits=58, special_primes=3),
    "N15": dict(N=1 << 15, depth=14, scale_bits=45, first_bits=60, special_primes=6),
    "N16": dict(N=1 << 16, depth=24, scale_bits=50, first_bits=60, special_primes=10),
}


def normalize_scale(x: Fraction | int) -> Fraction:
    """`x` as a positive Fraction, exact unless it outgrew SCALE_CAP_BITS (then rounded to
    SCALE_KEEP_BITS significant bits: a relative change below 2^-500)."""
    if type(x) is not Fraction:
        return scale_arg(x)  # checked: a positive finite number (never a str or bool)
    if x <= 0:
        raise ParameterError(f"a scale must be positive, got {x}")
    num, den = x.numerator, x.denominator
    if max(num.bit_length(), den.bit_length()) <= SCALE_CAP_BITS:
        return x
    e = num.bit_length() - den.bit_length() - SCALE_KEEP_BITS
    m = (num << max(-e, 0)) // (den << max(e, 0))
    return Fraction(m) * (Fraction(2) ** e)


#: Advice for an error message: a string, or a function that builds it only when it is needed.
Advice = str | Callable[[], str]


def _advice(a: Advice) -> str:
    return a() if callable(a) else a


def scale_arg(value: object, what: str = "scale") -> Fraction:
    """`value` (an int, Fraction or finite float; never a bool) as a positive exact Fraction, or
    a ParameterError naming `what`."""
    if type(value) is Fraction and value.numerator > 0:  # the common case, kept cheap
        return normalize_scale(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(f"{what} must be a positive number (int, Fraction or float), got "
                             f"{type(value).__name__} {value!r}")
    if not isinstance(value, numbers.Rational):
        value = float(value)  # e.g. numpy.float32, which Fraction does not take
        if not math.isfinite(value):
            raise ParameterError(f"{what} must be finite, got {value!r}")
    if value <= 0:
        raise ParameterError(f"{what} must be positive, got {value!r}")
    if isinstance(value, numbers.Rational) and type(value) not in (int, Fraction):
        value = Fraction(int(value.numerator), int(value.denominator))  # NumPy's: Python ints
    return normalize_scale(Fraction(value))


def log2_exact(x: Fraction) -> float:
    """log2 of a positive Fraction of any size (math.log2 would first convert it to a float,
    which overflows past 2^1024)."""
    if type(x) is not Fraction:
        x = scale_arg(x, "log2_exact: x")
    elif x <= 0:
        raise ParameterError(f"log2_exact: x must be positive, got {x}")
    return math.log2(x.numerator) - math.log2(x.denominator)


def scale_difference(a: Fraction, b: Fraction) -> str:
    """Two unequal scales, written so the difference shows (both print as 2^30.000000 when they
    differ in the 12th digit): exactly when short, else in as many significant digits as it
    takes to tell them apart (up to 100), and their ratio.  For error messages of scale
    mismatches."""
    a, b = normalize_scale(a), normalize_scale(b)
    digits = max(len(str(v)) for v in (a.numerator, a.denominator, b.numerator, b.denominator))
    if digits <= 60:
        both = f"{a} vs {b}"
    else:
        k = next((k for k in range(7, 101) if _significant(a, k) != _significant(b, k)), 100)
        both = f"{_significant(a, k)} vs {_significant(b, k)}"
    ratio = a / b
    if abs(ratio - 1) < Fraction(1, 1000):
        d = ratio - 1
        rel = f"the first is the second × (1 {'+' if d > 0 else '−'} {float(abs(d)):.3e})"
    else:
        rel = f"the first is 2^{log2_exact(ratio):.4f} × the second"
    return f"{both} ({rel})"


def _significant(x: Fraction, k: int) -> str:
    """Positive `x` in scientific notation with `k` significant digits, rounded exactly."""
    e = math.floor(log2_exact(x) * math.log10(2))
    m = round(x * Fraction(10) ** (k - 1 - e))
    if m >= 10 ** k:  # the estimate of the exponent was one short
        e += 1
        m = round(x * Fraction(10) ** (k - 1 - e))
    elif m < 10 ** (k - 1):
        e -= 1
        m = round(x * Fraction(10) ** (k - 1 - e))
    text = str(m)
    return f"{text[0]}.{text[1:]}e{e}"


def rescaled(scale: Fraction, moduli: tuple[int, ...]) -> Fraction:
    """The exact scale after dividing by the product of `moduli`."""
    divisor = math.prod(check_int_range(q, "rescaled: a modulus", 2)
                        for q in check_sequence(moduli, "rescaled: moduli"))
    return normalize_scale(normalize_scale(scale) / divisor)


@lru_cache(maxsize=64)
def _build_chain(N: int, depth: int, scale_bits: int, first_bits: int, special: int
                 ) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...], tuple[int, ...]]:
    """(base primes, level groups bottom-up, special primes)."""
    used: set[int] = set()
    per_level = 1 if scale_bits <= 31 else 2
    # a prime count first: a hopeless depth fails in milliseconds, not after a long search
    bound = ch.max_level_groups(N, scale_bits, depth)
    if bound < depth:
        raise ParameterError(_chain_advice(N, depth, scale_bits, bound, per_level, False))
    groups: list[tuple[int, ...]]
    if per_level == 1:
        singles = ch.single_primes(N, scale_bits, depth, used)
        groups = [(q,) for q in singles]
    else:
        groups = [tuple(sorted(p, reverse=True))
                  for p in ch.prime_pairs(N, scale_bits, depth, used)]
    if len(groups) < depth:
        raise ParameterError(_chain_advice(N, depth, scale_bits, len(groups), per_level, True))
    groups = ch.order_levels(groups, scale_bits)
    for g in groups:
        used.update(g)
    k0 = max(1, math.ceil(first_bits / 31))
    base = tuple(ch.largest_primes(N, first_bits / k0, k0, used))
    used.update(base)
    spec = tuple(ch.largest_primes(N, 31, special, used))
    return base, tuple(groups), spec


def _chain_advice(N: int, depth: int, scale_bits: int, found: int, per_level: int,
                  searched: bool) -> str:
    """The message for a chain that cannot be built.  `searched`: `found` is what the search
    found (the hint is verified by searching too); otherwise `found` is the prime-count bound of
    `ch.max_level_groups` and the hint uses that bound only (a necessary condition, and fast)."""
    what = "primes" if per_level == 1 else "prime pairs"
    tol = ch.PAIR_TOLERANCE_BITS
    hint = []
    for sb in range(scale_bits + 1, 63):
        if ch.max_level_groups(N, sb, depth) < depth:
            continue  # cannot work: no need to search
        if searched:
            n = len(ch.single_primes(N, sb, depth, set()) if sb <= 31
                    else ch.prime_pairs(N, sb, depth, set()))
            if n < depth:
                continue
        hint.append(f"scale_bits >= {sb}")
        break
    hint.append(f"depth <= {found}" if found else "a smaller N")
    if searched:
        why = f"give only {found} {what} within {tol} bits of 2^{scale_bits}"
    elif per_level == 1:
        why = f"have only {found} primes within {tol} bits of 2^{scale_bits}, one per level"
    else:
        why = (f"have only {found} primes up to 2^{(scale_bits + tol) / 2:g}, and each level "
               f"needs one (a pair whose product is within {tol} bits of 2^{scale_bits} has a "
               "factor that small)")
    return (f"cannot build a modulus chain of depth {depth} with a {scale_bits}-bit scale at "
            f"N={N}: NTT-friendly primes (q ≡ 1 mod 2N={2 * N}, q < 2^31) {why}. Use "
            + " or ".join(hint) + (f" (or N={N // 2})" if N > 1024 else ""))


class CKKSParams(RLWEParams):
    """RNS-CKKS parameters.  Read-only after construction; equal when their fingerprints are.

    The RLWE side (rings of the levels, key ring, digits, secret, security estimate) is
    `RLWEParams`'s; this class builds the chain for a scale and adds the scales.

    Args:
        N: ring degree (power of two); N/2 complex slots.
        depth: multiplicative depth L (number of rescales a fresh ciphertext allows).
        scale_bits: log2 of the scale Δ.  Above 31 bits each level owns two primes whose product
            is within 1.5 bits of 2^scale_bits (a composite scale).
        first_bits: bits of the base modulus Q_0 (what level 0 holds; > scale_bits + message bits).
        special_primes: number of ~31-bit special primes P for hybrid key switching.
        dnum: key-switching digits (None: the fewest whose every digit is at most P).
        secret: ``"ternary"`` or ``("sparse", h)`` (h nonzero ±1 coefficients).
        sigma: error standard deviation.
        insecure: accept parameters below 128-bit security (with a warning).
        device: where keys, encryptions and results live and run ("python", "cpu", "cuda", ...);
            not part of the fingerprint (a ciphertext means the same on every device).
    """

    scheme: ClassVar[str] = "CKKS"
    _security_advice: ClassVar[str] = (
        "Lower depth, scale_bits, first_bits or special_primes, raise N, or pass insecure=True "
        "for tests and experiments")

    def __init__(self, N: int, depth: int, scale_bits: int = 40, first_bits: int | None = None,
                 special_primes: int | None = None, dnum: int | None = None,
                 secret: str | tuple[str, int] = "ternary", sigma: float = 3.2,
                 insecure: bool = False, device: str = "python") -> None:
        N = check_int_range(N, "CKKSParams: N", 2)
        depth = check_int_range(depth, "CKKSParams: depth", 0)
        scale_bits = check_int_range(scale_bits, "CKKSParams: scale_bits", 8)
        if N & (N - 1) or N < 4 or N > 1 << MAX_LOG_N:
            raise ParameterError(f"CKKSParams: N must be a power of two in [4, 2^{MAX_LOG_N}] "
                                 f"(Ren's rings stop at 2^{MAX_LOG_N}), got {N}")
        if depth > MAX_DEPTH:
            raise ParameterError(f"CKKSParams: depth={depth} is too deep: a chain holds at most "
                                 f"{MAX_GENERATED_MODULI} primes, one or two per level; use depth "
                                 f"<= {MAX_DEPTH} (bootstrapping refreshes levels)")
        if scale_bits > 62:
            raise ParameterError(f"CKKSParams: scale_bits={scale_bits} is too large; a level holds"
                                 " at most two u32 primes, so use scale_bits <= 62")
        # level 0 holds Q_0 ≈ 2^first_bits and its default scale ≈ 2^scale_bits: a message of
        # magnitude 1 needs scale < Q_0/2, so first_bits = scale_bits + 1 leaves level 0 unusable
        first_bits = scale_bits + 20 if first_bits is None else first_bits
        first_bits = check_int_range(
            first_bits, "CKKSParams: first_bits", scale_bits + 2, MAX_FIRST_BITS,
            hint=f"Q_0 needs 2 bits above the scale (2^{scale_bits}) so that level 0 holds a "
                 "message of magnitude 1 below Q_0/2; the base modulus is at most 8 primes")
        if special_primes is None:
            special_primes = math.ceil(max(first_bits, scale_bits) / 31) + 1
        # bounded before the prime search (10^6 special primes searched for over a minute, 8192
        # take 0.4 s): with one digit (about as many special primes as the chain has, plus one)
        # key switching is as cheap as it gets, and a larger P only adds to log2 QP
        special_primes = check_int_range(
            special_primes, "CKKSParams: special_primes", 1, MAX_GENERATED_MODULI,
            hint="a P larger than the chain's Q (one digit) brings nothing")
        chain_primes = max(1, math.ceil(first_bits / 31)) + depth * (1 if scale_bits <= 31 else 2)
        if dnum is not None:
            check_int_range(dnum, "CKKSParams: dnum", 1, chain_primes,
                            hint=f"the chain has {chain_primes} primes; None picks the fewest "
                                 "digits the special primes allow")
        check_sigma("CKKSParams", sigma)
        if not check_insecure("CKKSParams", insecure):
            _check_security_early(N, depth, scale_bits)
        self.scale_bits, self.first_bits = scale_bits, first_bits
        device = canonical_device(device)  # the remaining arguments, checked before the search
        parse_secret("CKKSParams", secret, N)
        self.base_moduli, self.level_moduli, special = _build_chain(
            N, depth, scale_bits, first_bits, special_primes)
        self.top_scale = Fraction(ch.top_scale(list(self.level_moduli), scale_bits))
        sizes = itertools.accumulate((len(g) for g in self.level_moduli),
                                     initial=len(self.base_moduli))
        super().__init__(N, self.base_moduli + tuple(q for g in self.level_moduli for q in g),
                         special, levels=tuple(sizes), dnum=dnum, secret=secret, sigma=sigma,
                         insecure=insecure, device=device)
        self._check_level_0()

    def _check_level_0(self) -> None:
        """first_bits is a request: where NTT-friendly primes of first_bits/k bits are scarce
        (q ≡ 1 mod 2N, large N) the base modulus comes out smaller, and may leave level 0 unable
        to hold its default scale with a message of magnitude 1 (2·scale < Q_0)."""
        q0, s0 = self._level_Q[0], self.scale(0)
        if 2 * s0 < q0:
            return
        used = {q for g in self.level_moduli for q in g}
        fix = ""
        for fb in range(self.first_bits + 1, MAX_FIRST_BITS + 1):
            k = max(1, math.ceil(fb / 31))
            try:
                if 2 * s0 < math.prod(ch.largest_primes(self.N, fb / k, k, used)):
                    fix = f"use first_bits >= {fb}"
                    break
            except ParameterError:
                continue
        k0 = len(self.base_moduli)
        raise ParameterError(
            f"CKKSParams: the base modulus Q_0 came out at 2^{math.log2(q0):.2f}: first_bits="
            f"{self.first_bits} asks for {k0} NTT-friendly prime(s) (q ≡ 1 mod 2N={2 * self.N}) "
            f"of about {self.first_bits / k0:.1f} bits, and those are scarce at N={self.N}; "
            f"level 0 cannot hold its default scale 2^{log2_exact(s0):.2f} (a message of "
            f"magnitude 1 needs Q_0 > 2·scale); {fix or 'use a smaller N or scale_bits'}")

    @classmethod
    def key_switching_options(cls, N: int, depth: int, scale_bits: int = 40,
                              first_bits: int | None = None,
                              max_noise_bits: float | None = MAX_NOISE_BITS, **kwargs: Any
                              ) -> list[tuple[KeySwitchCost, CKKSParams]]:
        """Every key-switching shape for this chain that keeps its security (with
        ``insecure=True``: up to one digit) and its precision: for each digit count, the fewest
        special primes that fit it, cheapest first by `ren.rlwe.cost.key_switch_cost` at the
        top level.  Fewer, larger digits need a larger P: fewer transforms and inner-product
        terms, more conversion work, a larger log2 QP.

        Precision: a shape is proposed only if its key switch adds no more noise than a rescale
        (`ren.rlwe.cost.key_switch_noise_bits` at most `max_noise_bits`, default 0; the module
        docstring there says how it is estimated and measured): for each count of special
        primes, the fewest digits that keep the noise within the bound (P about k·D·σ·sqrt(N)
        above a digit D of k primes, where `RLWEParams`' default only asks for P >= D).  A
        positive `max_noise_bits` trades that many bits of a rotation's precision for speed;
        None drops the bound (the fewest digits at most P each, the default of `dnum=None`)."""
        if "special_primes" in kwargs or "dnum" in kwargs:
            raise ParameterError("CKKSParams.key_switching_options chooses special_primes and "
                                 "dnum itself; pass the chain's other arguments only")
        cls._check_fields("CKKSParams.key_switching_options", kwargs)
        if max_noise_bits is not None:
            max_noise_bits = check_real_range(
                max_noise_bits, "CKKSParams.key_switching_options: max_noise_bits (the most "
                "noise a key switch may add, in bits against a rescale's)", -MAX_NOISE_RANGE,
                MAX_NOISE_RANGE, hint="0 (the default) adds no more than a rescale; None drops "
                "the bound")
        out: list[tuple[KeySwitchCost, CKKSParams]] = []
        built = False  # a chain was built: a later refusal is the security bound
        for alpha in range(1, MAX_GENERATED_MODULI + 1):
            try:
                params = cls(N, depth, scale_bits, first_bits, special_primes=alpha, **kwargs)
            except ParameterError:
                if built:
                    break  # past the security bound: a larger P only adds to log2 QP
                continue
            built = True
            quiet = _quiet_enough(params, max_noise_bits)
            if quiet is None:
                continue  # no digit count keeps the noise within the bound: a larger P
            params = quiet
            if not out or params.dnum < out[-1][1].dnum:  # a larger P for as many digits: no
                out.append((key_switch_cost(params), params))
            if params.dnum == 1:
                break  # one digit already: a larger P cannot make fewer
        if not out:
            bound = ("" if max_noise_bits is None else
                     f" whose key switch adds at most 2^{max_noise_bits:g} of a rescale's noise "
                     "(max_noise_bits)")
            raise ParameterError(f"CKKSParams.key_switching_options: no special-prime count "
                                 f"gives secure parameters{bound} for N={N}, depth={depth}, "
                                 f"scale_bits={scale_bits}; {cls._security_advice}"
                                 + ("" if max_noise_bits is None else
                                    ", or allow more noise (a larger max_noise_bits, or None)"))
        return sorted(out, key=lambda o: (o[0].work, o[1].log2_QP))

    @classmethod
    def fastest_key_switching(cls, N: int, depth: int, scale_bits: int = 40,
                              first_bits: int | None = None,
                              max_noise_bits: float | None = MAX_NOISE_BITS,
                              **kwargs: Any) -> CKKSParams:
        """The parameters of `key_switching_options` whose key switch is cheapest (among those
        that add no more noise than a rescale, unless `max_noise_bits` says otherwise)."""
        return cls.key_switching_options(N, depth, scale_bits, first_bits, max_noise_bits,
                                         **kwargs)[0][1]

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> CKKSParams:
        """A named parameter set ("N12" … "N16"); keyword arguments override its fields."""
        if not isinstance(name, str) or name not in PRESETS:
            raise ParameterError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
        cls._check_fields(f"CKKSParams.preset({name!r})", overrides)
        return cls(**{**PRESETS[name], **overrides})

    @classmethod
    def _check_fields(cls, where: str, fields: dict[str, Any]) -> None:
        """ParameterError naming the keyword arguments the constructor does not take."""
        known = set(inspect.signature(cls.__init__).parameters) - {"self"}
        unknown = sorted(map(str, set(fields) - known))
        if unknown:
            raise ParameterError(f"{where}: unknown field(s) {unknown}; the fields are "
                                 f"{sorted(known)}")

    # -- derived quantities -----------------------------------------------------------------------
    @property
    def slots(self) -> int:
        return self.N // 2

    @property
    def primes_per_level(self) -> int:
        return len(self.level_moduli[0]) if self.level_moduli else (1 if self.scale_bits <= 31
                                                                    else 2)

    def rescale_moduli(self, level: int) -> tuple[int, ...]:
        """The primes a rescale at `level` divides by (level's own group)."""
        if self.check_level(level) == 0:
            raise ParameterError("level 0 has no primes to rescale by")
        return self.level_moduli[level - 1]

    def scale(self, level: int | None = None) -> Fraction:
        """The default (encoding) scale of `level`: Δ_L at the top, and Δ_{l-1} = Δ_l² / P_l, so
        a product of two default-scale operands, rescaled, has exactly the next default scale."""
        level = self.depth if level is None else self.check_level(level)
        if ("scale", level) not in self._cache:
            s = self.top_scale
            for lv in range(self.depth, level, -1):
                s = rescaled(normalize_scale(s * s), self.level_moduli[lv - 1])  # as Evaluator
            self._cache["scale", level] = s
        return self._cache["scale", level]

    def check_scale(self, scale: Fraction, level: int, op: str, message: float | Fraction = 1,
                    fix: Advice = "", fix_small: Advice = "") -> Fraction:
        """`scale` if it fits level `level`, else a ScaleOutOfBoundsError naming `op`.

        The rule: ``1 <= scale`` and ``scale · max(1, |message|) < Q_level / 2``.  Decryption
        recovers Δ·m as a centred residue mod Q_level, in (−Q/2, Q/2]: a scaled value at or past
        Q/2 wraps around to garbage, and below scale 1 encoding rounds every value under 1/2 to
        0.  A ciphertext does not reveal its message, so the rule takes |m| <= 1 (the encoding's
        unit) and `message` is the magnitude an operation's own constant gives it (|c| for a
        product by c, 1 + |c| for a sum); a larger encrypted message can still wrap, so keep
        |m|·scale below Q_level/2.  This is SEAL's "scale out of bounds" rule (log2(scale) below
        the bits of Q_level), at most one bit stricter.

        `fix` and `fix_small` (a string, or a function giving one, called only on failure)
        replace the default advice for a scale too large or too small.
        """
        if type(scale) is not Fraction:
            scale = scale_arg(scale, f"{op}: scale")
        n, d = scale.numerator, scale.denominator  # integer comparisons: this runs per result
        if n < d * MIN_SCALE:
            raise ScaleOutOfBoundsError(
                f"{op}: scale 2^{log2_exact(scale):.2f} is below 1, where encoding rounds every "
                f"value under 1/2 to 0 (no bits of precision remain); "
                + (_advice(fix_small) or f"use a larger scale (the default at level {level} is "
                   f"params.scale({level}) = 2^{log2_exact(self.scale(level)):.2f})"))
        if is_int(message):
            message = int(message)  # exact (NumPy's too), however large
        elif not isinstance(message, Fraction):
            message = check_real(message, f"{op}: the message bound")  # not NaN, inf or an array
        if message == 1:
            bn = bd = 1
        else:
            bound = max(Fraction(1), abs(Fraction(message)))
            bn, bd = bound.numerator, bound.denominator
        q = self._level_Q[self.check_level(level)]
        if 2 * n * bn >= q * d * bd:
            bound = Fraction(bn, bd)
            what = (f"scale 2^{log2_exact(scale):.2f}" if bound == 1 else
                    f"scale 2^{log2_exact(scale):.2f} times the constant's magnitude "
                    f"{float(bound):.4g}")
            raise ScaleOutOfBoundsError(
                f"{op}: {what} needs {log2_exact(scale * bound) + 1:.1f} bits, but level {level} "
                f"has log2 Q_{level} = {math.log2(q):.1f} (a message of magnitude 1 must stay "
                f"below Q_{level}/2, or it wraps around); "
                + (_advice(fix) or "rescale before this operation (each rescale divides the scale "
                   f"by about 2^{self.scale_bits}), spend fewer levels before it (or use "
                   "parameters with more depth or a larger first_bits), or use a smaller scale"))
        return scale

    @cached_property
    def _level_Q(self) -> tuple[int, ...]:
        """Q_level (the product of the level's chain primes) for every level."""
        return tuple(math.prod(self.chain[: self.limbs(lv)]) for lv in range(self.depth + 1))

    @cached_property
    def fingerprint(self) -> bytes:
        """16 bytes identifying everything that decides the meaning of a ciphertext or key."""
        desc = repr(("ren.ckks/1", self.N, self.chain, tuple(map(len, self.level_moduli)),
                     self.special_moduli, self.digits, self.secret, self.hamming_weight,
                     self.sigma, self.scale_bits, self.top_scale))
        return hashlib.sha256(desc.encode()).digest()[:16]

    def __repr__(self) -> str:
        return (f"CKKSParams(N={self.N}, depth={self.depth}, scale_bits={self.scale_bits}, "
                f"log2(QP)={self.log2_QP:.1f}, dnum={self.dnum}, ~{self.security_bits:.0f}-bit"
                f"{', INSECURE' if self.security_bits < 128 else ''})")

    def describe(self) -> str:
        """A multi-line summary: the modulus chain, scales, key switching and security."""
        def bits(qs: tuple[int, ...]) -> str:
            return f"{sum(math.log2(q) for q in qs):6.2f}"
        secret = ("uniform ternary" if self.secret == "ternary"
                  else f"sparse ternary, h={self.hamming_weight}")
        lines = [
            f"CKKS parameters {self.fingerprint.hex()}",
            f"  N = {self.N} ({self.slots} slots), depth {self.depth}, scale 2^{self.scale_bits}"
            f" ({self.primes_per_level} prime{'s' if self.primes_per_level > 1 else ''} per level)",
            f"  secret: {secret}; error sigma {self.sigma}",
            "  modulus chain (a rescale at level l drops level l's primes):",
            f"    base     {bits(self.base_moduli)} bits  {list(self.base_moduli)}",
        ]
        for lv, g in enumerate(self.level_moduli, start=1):
            lines.append(f"    level {lv:<2} {bits(g)} bits  {list(g)}  scale 2^"
                         f"{math.log2(self.scale(lv)):.3f}")
        lines += [
            f"    special  {bits(self.special_moduli)} bits  {list(self.special_moduli)}",
            f"  key switching: dnum = {self.dnum}, digits (bits) "
            + ", ".join(f"[{a}:{b}] {bits(self.chain[a:b]).strip()}" for a, b in self.digits),
            f"    one key switch at the top: {key_switch_cost(self)}",
            f"  log2 Q = {self.log2_Q:.1f}, log2 P = {self.log2_P:.1f}, log2 QP = "
            f"{self.log2_QP:.1f} (HE-standard max for N={self.N}: {max_log_qp(self.N):.0f})",
            f"  estimated security ≈ {self.security_bits:.0f} bits classical"
            + (" (INSECURE)" if self.security_bits < 128 else "")
            + ("; sparse secrets are weaker than this estimate" if self.secret != "ternary"
               else ""),
        ]
        return "\n".join(lines)


#: `key_switching_options`' max_noise_bits lies in ±this: 2^-64 of a rescale's noise is nothing
#: (and asks for 64 bits more of P), 2^64 of it is no precision at all.
MAX_NOISE_RANGE = 64


def _quiet_enough(params: CKKSParams, max_noise_bits: float | None) -> CKKSParams | None:
    """`params` with the fewest digits (at least its own) whose key switch adds at most
    `max_noise_bits` (`key_switch_noise_bits`; None: `params` as they are), or None when even
    one prime per digit adds more."""
    if max_noise_bits is None or key_switch_noise_bits(params) <= max_noise_bits:
        return params
    with warnings.catch_warnings():  # the same chain and P as `params`: warned once already
        warnings.simplefilter("ignore", InsecureParametersWarning)
        for dnum in range(params.dnum + 1, len(params.chain) + 1):
            more = type(params)(params.N, params.depth, params.scale_bits, params.first_bits,
                                special_primes=len(params.special_moduli), dnum=dnum,
                                secret=params.secret if params.hamming_weight is None
                                else (params.secret, params.hamming_weight),
                                sigma=params.sigma, insecure=params.insecure,
                                device=params.device)
            if key_switch_noise_bits(more) <= max_noise_bits:
                return more
    return None


def _check_security_early(N: int, depth: int, scale_bits: int) -> None:
    """Reject from sizes alone (before any prime search) a chain that cannot be secure: each of
    the `depth` levels holds at least 2^(scale_bits − tolerance)."""
    if N not in HE_STANDARD_128:
        return  # the full check after building the chain says why
    least = depth * (scale_bits - ch.PAIR_TOLERANCE_BITS)
    if least > HE_STANDARD_128[N]:
        raise ParameterError(
            f"CKKSParams: log2(QP) would be at least {least:.1f} (the {depth} levels alone, each "
            f"at least {scale_bits - ch.PAIR_TOLERANCE_BITS:g} bits), which exceeds "
            f"{HE_STANDARD_128[N]}, the HE-standard maximum for 128-bit security at N={N}. Lower "
            "depth or scale_bits, raise N, or pass insecure=True for tests and experiments")


__all__ = ["HE_STANDARD_128", "MIN_SCALE", "PRESETS", "CKKSParams", "InsecureParametersWarning",
           "estimated_security", "log2_exact", "max_log_qp", "normalize_scale", "rescaled",
           "scale_arg", "scale_difference"]
