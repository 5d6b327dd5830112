"""BGV on Ren's lazy polynomials: exact integer arithmetic mod t on a modulus chain with levels,
beside BFV, sharing its parameters' plaintext side (`BGVParams` is a `BFVParams`), its
`Plaintext`, batch `Encoder` and `galois_keys`, and the RLWE layer's keys.

**The invariant.**  A `BGVCiphertext` (c0, c1[, c2]) at level l (NTT domain, on Q_l) with
factor f encrypts m when ``[c0 + c1·s (+ c2·s²)]_{Q_l} = f·m + t·v`` with the whole phase
inside (−Q_l/2, Q_l/2): decryption is ``f⁻¹·[c0 + c1·s]_{Q_l} mod t``.  The factor f (a unit
mod t, 1 for a fresh ciphertext) is tracked exactly, like a CKKS scale but mod t.

**Encryption**: the RLWE layer's encryption of zero (public key: over Q·P' then divided by P')
gives (z0, z1) with z0 + z1·s = e small; ``(t·z0 + m, t·z1)`` has phase m + t·e.

**Key switching** (relinearization, rotations): the RLWE layer's keys have errors that are not
multiples of t.  Switching ``t⁻¹·d`` (t⁻¹ mod Q_l) and multiplying the result by t gives
``t·u0 + t·u1·s = d·s' + t·E``: the switching noise becomes a multiple of t, with the same keys
as BFV and CKKS (no keys with t·e needed).

**Modulus switching** (dropping a prime q of Q_l): ``c' = (c + δ)/q`` with
``δ = t·[−c·t⁻¹]_q`` (centred), so δ ≡ −c (mod q) and δ ≡ 0 (mod t).  The division is exact,
the new phase is ``(f·m + t·v + δ0 + δ1·s)/q``, so the factor becomes f·q⁻¹ mod t and the noise
v/q plus the *switching floor* ``(δ0 + δ1·s)/q`` (at most t/2·‖1 + s‖).  As Poly ops: the
residue of c mod q (an exact view), times −t⁻¹ mod q, centred by an offset, converted exactly
(one prime) to Q_{l−1}, times t, added, times q⁻¹ mod Q_{l−1}.

**Multiplication**: the tensor (a0·b0, a0·b1 + a1·b0, a1·b1) directly on Q_l in the NTT domain
(no basis extension: the phases multiply, factor f_a·f_b), relinearization, then (auto mode)
a switch to level l − 1 which divides the product's noise by the level's primes.

**Auto mode** (``BGVEvaluator(..., auto=True)``, the default): operands at different levels
meet at the lower one: the higher is multiplied by the scalar that makes it arrive with the lower
one's factor and then switched down (`switch_to`: the scalar's noise is divided by the dropped
primes with the rest, so this is free); every product (ciphertext × ciphertext or
× plaintext) is followed by a switch to the next level, so a chain of ``params.mult_depth``
products goes from the top level to level 0, and one more raises `DepthExhaustedError` before
anything is computed.  Explicit mode (``auto=False``) switches nothing by itself: operands must
share a level (`BGVLevelError`), ``mod_switch``/``mod_switch_to`` are the caller's, and a product
at level 0 is allowed (the noise budget tells whether it still decrypts; it does not at the
tests' parameters).  In both modes two operands at one level with different factors are
brought to a common one by multiplying each by a small constant (k_a, k_b) with
f_a·k_a ≡ f_b·k_b (mod t), found by the extended Euclidean algorithm (|k_a|, |k_b| about √t
instead of t: the noise grows by about log2(t)/2 bits).

**Noise budget** (`BGVDecryptor.noise_budget`): ``bits(Q_l) − bits(‖[c0 + c1·s]_{Q_l}‖∞) − 1``
(at least 0), the bits by which the phase f·m + t·v can still grow before it leaves
(−Q_l/2, Q_l/2) — SEAL's definition for BGV.  Decryption is exact while it is positive.  It is
BFV's budget in disguise: BFV measures ‖t·(noise)‖ against Q, BGV the phase t·v (+ m) against
Q_l; both count the bits left before a multiple of t in the error reaches half the modulus.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ren.bfv.bgv_params import BGVLevelError, BGVParams, DepthExhaustedError
from ren.bfv.common import (
    centred,
    check_ciphertext,
    check_keys,
    check_plaintext,
    check_same,
    missing_galois_key,
    missing_relin_key,
    tensor,
)
from ren.bfv.encoder import Plaintext
from ren.bfv.evaluator import column_element
from ren.errors import ParameterError, check_bool, check_instance, check_int
from ren.ir import broadcast_const
from ren.poly import Poly
from ren.rlwe import Decryptor as RLWEDecryptor
from ren.rlwe import Encryptor as RLWEEncryptor
from ren.rlwe import GaloisKeys, PublicKey, RelinKey, SecretKey, SwitchingKey, key_switch
from ren.rlwe.ciphertext import Parts, check_ntt_polys, check_parts


@dataclass(eq=False)
class BGVCiphertext(Parts):
    """A BGV ciphertext: 2 parts (3 between a product and relinearization) on Q_level, and the
    factor f (mod t) its phase carries the message with."""

    parts: tuple[Poly, ...]
    level: int
    factor: int
    params: BGVParams

    def __post_init__(self) -> None:
        self.parts = check_parts("BGVCiphertext", self.parts)
        p = check_instance(self.params, BGVParams, "BGVCiphertext: params")
        self.level = p.check_level(self.level)
        f = check_int(self.factor, "BGVCiphertext: factor")
        if not 0 < f < p.t or math.gcd(f, p.t) != 1:
            raise ParameterError(f"BGVCiphertext: factor must be a unit mod t = {p.t} in "
                                 f"[1, t), got {f}")
        self.factor = f
        check_ntt_polys(self.parts, lambda i: f"BGVCiphertext: part {i}", p.ring(self.level),
                        f"the ring of level {self.level}", f"use params.ring({self.level})", p)

    def __repr__(self) -> str:
        return (f"<BGV Ciphertext size {self.size} level {self.level} factor {self.factor} "
                f"N={self.params.N} t={self.params.t}>")


def _check_params(params: Any, who: str) -> BGVParams:
    return check_instance(params, BGVParams, f"{who}: params",
                          hint="BGVParams.preset(...) or BGVParams.generate(...)")


#: how a BGV mismatch names the other parameters (`ren.bfv.common.check_same`)
_UNDER = "other parameters than this one's BGVParams"


def _check_same(params: BGVParams, obj: Any, what: str) -> None:
    check_same(params, obj, what, _UNDER)


def _check_pt(params: BGVParams, pt: Any, who: str) -> Plaintext:
    return check_plaintext(pt, params, who, "encode values with Encoder(params).encode", _UNDER)


def lifted(pt: Plaintext, level: int, k: int = 1) -> Poly:
    """k·m (mod t, centred) on Q_level (NTT domain)."""
    p = pt.params
    t = p.t
    vals = pt.coeffs if k == 1 else (pt.coeffs.astype(object) * k) % t
    arr = np.asarray(vals, np.int64)
    arr = np.where(arr > t // 2, arr - t, arr)
    return Poly.from_coefficients(arr, p.ring(level), device=p.device).ntt()


def balance(fa: int, fb: int, t: int) -> tuple[int, int]:
    """Small (k_a, k_b) with fa·k_a ≡ fb·k_b (mod t), both units mod t: the extended Euclidean
    algorithm on (t, fa·fb⁻¹ mod t), the pair whose larger entry is smallest."""
    r = fa * pow(fb, -1, t) % t  # k_b ≡ r·k_a
    best = (1, centred(r, t))
    r0, r1, s0, s1 = t, r, 0, 1
    while r1:
        for kb, ka in ((r1, s1), (r1 - r0, s1 - s0)):
            if kb and math.gcd(ka, t) == 1 and math.gcd(kb, t) == 1 \
                    and max(abs(ka), abs(kb)) < max(abs(best[0]), abs(best[1])):
                best = (ka, kb)
        q = r0 // r1
        r0, r1, s0, s1 = r1, r0 - q * r1, s1, s0 - q * s1
    return best


class BGVEncryptor:
    """Encrypts plaintexts under a public or a secret key at the top level (or `level`)."""

    def __init__(self, params: BGVParams, key: PublicKey | SecretKey) -> None:
        self.params = _check_params(params, "BGVEncryptor")
        self._rlwe = RLWEEncryptor(params, key)

    def encrypt(self, pt: Plaintext, level: int | None = None) -> BGVCiphertext:
        """(t·z0 + m, t·z1) for an encryption (z0, z1) of zero: phase m + t·e."""
        pt = _check_pt(self.params, pt, "encrypt")
        return self._encrypt(pt, level)

    def encrypt_zero(self, level: int | None = None) -> BGVCiphertext:
        return self._encrypt(None, level)

    def _encrypt(self, pt: Plaintext | None, level: int | None) -> BGVCiphertext:
        p = self.params
        level = p.depth if level is None else p.check_level(level)
        z0, z1 = self._rlwe.encrypt_parts(None, level)
        c0 = z0 * p.t if pt is None else z0 * p.t + lifted(pt, level)
        return BGVCiphertext((c0, z1 * p.t), level, 1, p)


class BGVDecryptor:
    """Decrypts (exactly, on the host) and measures the noise budget."""

    def __init__(self, params: BGVParams, secret_key: SecretKey) -> None:
        self.params = _check_params(params, "BGVDecryptor")
        self._rlwe = RLWEDecryptor(params, secret_key)

    def phase(self, ct: BGVCiphertext) -> list[int]:
        """[c0 + c1·s (+ c2·s²)]_{Q_l}, centred in (−Q_l/2, Q_l/2]."""
        check_instance(ct, BGVCiphertext, "decrypt: ct", hint="a BGVCiphertext")
        _check_same(self.params, ct, "the ciphertext")
        # Poly.coefficients is already the centred lift on the level's ring Q_l
        return self._rlwe.decrypt_parts(ct.parts, ct.level).coefficients()

    def decrypt(self, ct: BGVCiphertext) -> Plaintext:
        """f⁻¹·[c0 + c1·s]_{Q_l} mod t, exactly."""
        t = self.params.t
        finv = pow(ct.factor, -1, t) if isinstance(ct, BGVCiphertext) else 1
        m = [(x * finv) % t for x in self.phase(ct)]
        return Plaintext(np.array(m, np.int64), self.params)

    def noise_budget(self, ct: BGVCiphertext) -> int:
        """bits(Q_l) − bits(‖[c0 + c1·s]_{Q_l}‖∞) − 1, at least 0 (see the module docstring):
        decryption is exact while it is positive."""
        norm = max(abs(x) for x in self.phase(ct))
        return max(0, self.params.Q_at(ct.level).bit_length() - norm.bit_length() - 1)


class BGVEvaluator:
    """Homomorphic operations on BGV ciphertexts (lazy: Poly graphs until decrypted).

    ``auto=True`` (default) meets levels and switches after every product; ``auto=False``
    leaves levels to the caller (see the module docstring)."""

    def __init__(self, params: BGVParams, relin_key: RelinKey | None = None,
                 galois_keys: GaloisKeys | None = None, auto: bool = True) -> None:
        self.params = _check_params(params, "BGVEvaluator")
        self.relin_key, self.galois_keys = check_keys(params, relin_key, galois_keys,
                                                      "BGVEvaluator", _UNDER)
        self.auto = check_bool(auto, "BGVEvaluator: auto")

    # -- checks and meeting -----------------------------------------------------------------------
    def _ct(self, ct: Any, who: str, size: int | None = 2) -> BGVCiphertext:
        return check_ciphertext(ct, BGVCiphertext, "a BGVCiphertext", self.params, _UNDER, who,
                                size)

    def _meet(self, a: BGVCiphertext, b: BGVCiphertext, who: str, factors: bool = True
              ) -> tuple[BGVCiphertext, BGVCiphertext]:
        """a and b on one level (auto: the lower; explicit: BGVLevelError) and, if `factors`,
        with one factor."""
        if a.level != b.level:
            if not self.auto:
                raise BGVLevelError(f"{who}: the operands are at levels {a.level} and {b.level}; "
                                    "switch the higher one down with mod_switch_to, or use "
                                    "BGVEvaluator(..., auto=True)")
            if a.level > b.level:
                a = self.switch_to(a, b.level, b.factor if factors else None)
            else:
                b = self.switch_to(b, a.level, a.factor if factors else None)
        if factors and a.factor != b.factor:
            ka, kb = balance(a.factor, b.factor, self.params.t)
            a, b = self._scaled(a, ka), self._scaled(b, kb)
        return a, b

    def _scaled(self, a: BGVCiphertext, k: int) -> BGVCiphertext:
        """The same message with factor k·f (k·phase)."""
        if k == 1:
            return a
        t = self.params.t
        return BGVCiphertext(tuple(c * k for c in a.parts), a.level, a.factor * k % t,
                             self.params)

    # -- linear operations ------------------------------------------------------------------------
    def add(self, a: BGVCiphertext, b: BGVCiphertext) -> BGVCiphertext:
        a, b = self._meet(self._ct(a, "add", None), self._ct(b, "add", None), "add")
        n = max(a.size, b.size)
        parts = tuple(a.parts[i] + b.parts[i] if i < a.size and i < b.size
                      else (a.parts[i] if i < a.size else b.parts[i]) for i in range(n))
        return BGVCiphertext(parts, a.level, a.factor, self.params)

    def negate(self, a: BGVCiphertext) -> BGVCiphertext:
        a = self._ct(a, "negate", None)
        return BGVCiphertext(tuple(-c for c in a.parts), a.level, a.factor, self.params)

    def sub(self, a: BGVCiphertext, b: BGVCiphertext) -> BGVCiphertext:
        return self.add(a, self.negate(self._ct(b, "sub", None)))

    def add_plain(self, a: BGVCiphertext, pt: Plaintext) -> BGVCiphertext:
        """ct + pt: the plaintext enters times the ciphertext's factor (free)."""
        a = self._ct(a, "add_plain", None)
        m = lifted(_check_pt(self.params, pt, "add_plain"), a.level, a.factor)
        return BGVCiphertext((a.parts[0] + m, *a.parts[1:]), a.level, a.factor, self.params)

    def sub_plain(self, a: BGVCiphertext, pt: Plaintext) -> BGVCiphertext:
        a = self._ct(a, "sub_plain", None)
        m = lifted(_check_pt(self.params, pt, "sub_plain"), a.level, a.factor)
        return BGVCiphertext((a.parts[0] - m, *a.parts[1:]), a.level, a.factor, self.params)

    def multiply_scalar(self, a: BGVCiphertext, k: int) -> BGVCiphertext:
        """k·ct (k reduced mod t and centred: the noise grows by log2|k| bits); no level."""
        a = self._ct(a, "multiply_scalar", None)
        k = centred(check_int(k, "multiply_scalar: k"), self.params.t)
        return BGVCiphertext(tuple(c * k for c in a.parts), a.level, a.factor, self.params)

    # -- products ---------------------------------------------------------------------------------
    def _check_depth(self, level: int, who: str) -> None:
        if self.auto and level == 0:
            raise DepthExhaustedError(
                f"{who}: the operands are at level 0; a product there cannot be switched down "
                f"and its noise would not fit Q_0 (these parameters' depth, "
                f"{self.params.mult_depth}, is spent). Decrypt first, or use BGVParams with "
                "more levels (BGVParams.generate(..., depth=...))")

    def multiply_plain(self, a: BGVCiphertext, pt: Plaintext) -> BGVCiphertext:
        """ct·pt (the plaintext's centred coefficients); auto mode then switches one level."""
        a = self._ct(a, "multiply_plain", None)
        self._check_depth(a.level, "multiply_plain")
        m = lifted(_check_pt(self.params, pt, "multiply_plain"), a.level)
        out = BGVCiphertext(tuple(c * m for c in a.parts), a.level, a.factor, self.params)
        return self.mod_switch(out) if self.auto else out

    def multiply_no_relin(self, a: BGVCiphertext, b: BGVCiphertext) -> BGVCiphertext:
        """The 3-part tensor (under 1, s, s²) on the operands' common level, not switched."""
        same = a is b
        a, b = self._meet(self._ct(a, "multiply"), self._ct(b, "multiply"), "multiply",
                          factors=False)
        d = tensor(a.parts, None if same else b.parts)
        return BGVCiphertext(d, a.level, a.factor * b.factor % self.params.t, self.params)

    def multiply(self, a: BGVCiphertext, b: BGVCiphertext, relin: bool = True) -> BGVCiphertext:
        """a·b, relinearized unless ``relin=False``; auto mode then switches one level."""
        relin = check_bool(relin, "multiply: relin")
        self._check_depth(min(self._ct(a, "multiply").level, self._ct(b, "multiply").level),
                          "multiply")
        out = self.multiply_no_relin(a, b)
        if relin:
            out = self.relinearize(out)
        return self.mod_switch(out) if self.auto else out

    def square(self, a: BGVCiphertext, relin: bool = True) -> BGVCiphertext:
        return self.multiply(a, a, relin)

    def _switch_back(self, d: Poly, key: SwitchingKey, level: int) -> tuple[Poly, Poly]:
        """t·key_switch(t⁻¹·d): (u0, u1) with u0 + u1·s = d·s' + t·E (module docstring)."""
        t = self.params.t
        u0, u1 = key_switch(d * pow(t, -1, self.params.Q_at(level)), key, level)
        return u0 * t, u1 * t

    def relinearize(self, a: BGVCiphertext) -> BGVCiphertext:
        a = self._ct(a, "relinearize", 3)
        if self.relin_key is None:
            raise missing_relin_key("BGVEvaluator")
        u0, u1 = self._switch_back(a.parts[2], self.relin_key, a.level)
        return BGVCiphertext((a.parts[0] + u0, a.parts[1] + u1), a.level, a.factor, self.params)

    # -- rotations --------------------------------------------------------------------------------
    def _galois(self, a: BGVCiphertext, g: int, what: str) -> BGVCiphertext:
        a = self._ct(a, what)
        if self.galois_keys is None or g not in self.galois_keys:
            raise missing_galois_key(what, g, "BGVEvaluator")
        c0, c1 = (c.automorph(g) for c in a.parts)
        u0, u1 = self._switch_back(c1, self.galois_keys.keys[g], a.level)
        return BGVCiphertext((c0 + u0, u1), a.level, a.factor, self.params)

    def rotate_columns(self, a: BGVCiphertext, k: int) -> BGVCiphertext:
        """Rotate both rows left by k columns (right for negative k)."""
        k = check_int(k, "rotate_columns: k")
        if k % (self.params.N // 2) == 0:
            return self._ct(a, "rotate_columns")
        return self._galois(a, column_element(self.params.N, k), f"column rotation by {k}")

    def rotate_rows(self, a: BGVCiphertext) -> BGVCiphertext:
        """Swap the two rows."""
        return self._galois(a, 2 * self.params.N - 1, "the row swap")

    # -- modulus switching ------------------------------------------------------------------------
    def mod_switch(self, a: BGVCiphertext) -> BGVCiphertext:
        """The same message one level down: each dropped prime q divides (c + δ) exactly,
        δ = t·[−c·t⁻¹]_q; the factor becomes f·q⁻¹ mod t (module docstring)."""
        a = self._ct(a, "mod_switch", None)
        p = self.params
        if a.level == 0:
            raise BGVLevelError("mod_switch: the ciphertext is at level 0, the lowest; there is "
                                "no prime left to drop")
        parts, factor = a.parts, a.factor
        for q in p.dropped(a.level):
            parts = tuple(_drop_prime(c, p.t) for c in parts)
            factor = factor * pow(q, -1, p.t) % p.t
        return BGVCiphertext(parts, a.level - 1, factor, p)

    def mod_switch_to(self, a: BGVCiphertext, level: int) -> BGVCiphertext:
        """Switched down to `level` (unchanged when it is at or below it)."""
        a = self._ct(a, "mod_switch_to", None)
        level = self.params.check_level(level)
        while a.level > level:
            a = self.mod_switch(a)
        return a

    def switch_to(self, a: BGVCiphertext, level: int, factor: int | None = None
                  ) -> BGVCiphertext:
        """Switched down to `level` (below a's) arriving with `factor` (None: whatever the
        switch gives).  The scalar that sets the factor multiplies a *before* the switch, so its
        noise (up to log2(t/2) bits) is divided by the dropped primes with the rest: free
        when the first switch brings the noise back to the floor (how auto mode meets a lower
        operand: `add` of ciphertexts at different levels costs no extra noise)."""
        a = self._ct(a, "switch_to", None)
        p = self.params
        level = p.check_level(level)
        if level >= a.level:
            raise BGVLevelError(f"switch_to: level {level} is not below the ciphertext's "
                                f"level {a.level}")
        if factor is not None:
            t = p.t
            f = check_int(factor, "switch_to: factor") % t
            if math.gcd(f, t) != 1:
                raise ParameterError(f"switch_to: factor must be a unit mod t = {t}, got "
                                     f"{factor}")
            arrives = a.factor * pow(p.Q_at(a.level) // p.Q_at(level), -1, t) % t
            a = self._scaled(a, centred(f * pow(arrives, -1, t), t))
        return self.mod_switch_to(a, level)

    def match_factor(self, a: BGVCiphertext, factor: int) -> BGVCiphertext:
        """The same message with the given factor (a unit mod t): a scalar product by
        factor·f⁻¹ mod t (noise up to log2(t/2) bits; `add` uses smaller pairs)."""
        a = self._ct(a, "match_factor", None)
        t = self.params.t
        f = check_int(factor, "match_factor: factor") % t
        if math.gcd(f, t) != 1:
            raise ParameterError(f"match_factor: factor must be a unit mod t = {t}, got {factor}")
        k = centred(f * pow(a.factor, -1, t), t)
        return BGVCiphertext(tuple(c * k for c in a.parts), a.level, f, self.params)


def _drop_prime(c: Poly, t: int) -> Poly:
    """(c + δ)/q on the ring without its last prime q, δ = t·[−c·t⁻¹]_q centred (exact)."""
    ring = c.ring
    n, device = ring.limbs, c.device
    q = ring.moduli[-1]
    lower, last = ring.sub(0, n - 1), ring.sub(n - 1, n)
    h = q // 2
    # w + h in [0, q) on q alone (h in every coefficient), w = [−c·t⁻¹]_q centred in
    # [−h, q − 1 − h]; converted from one prime exactly, then h taken off again
    v = c.to_ring(last).intt() * (-pow(t, -1, q) % q) + Poly(broadcast_const(h, last, device))
    w = v.to_ring(lower) - Poly(broadcast_const(h, lower, device))
    return (c.to_ring(lower) + (w * t).ntt()) * pow(q, -1, math.prod(lower.moduli))


__all__ = ["BGVCiphertext", "BGVDecryptor", "BGVEncryptor", "BGVEvaluator", "balance",
           "lifted"]
