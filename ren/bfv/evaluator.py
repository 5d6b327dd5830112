"""BFV ciphertexts, encryption, decryption and evaluation, on the RLWE layer's keys.

A `Ciphertext` (c0, c1[, c2]) on all of Q (NTT domain) encrypts m when
c0 + c1·s (+ c2·s²) = Δ·m + v·Q/t (mod Q), Δ·m = round(Q·m/t), with |v| < 1/2 (the invariant
noise, SEAL's definition).  Encryption is the RLWE layer's (`ren.rlwe.Encryptor`) with
round(Q·m/t) added to c0; decryption computes round(t·(c0 + c1·s)/Q) mod t exactly on the host
(big integers); `Decryptor.noise_budget` is −log2(2·‖v‖∞) in bits.

**Multiplication** (scale-invariant, in RNS, written as Poly ops; textbook BFV word for word):

1. extend each part c from Q to ``B | m_sk | Q`` exactly (BEHZ's small Montgomery reduction):
   the fast basis conversion (`Poly.to_ring`) of c·m̃ to ``m̃ | B | m_sk`` gives
   [c·m̃]_Q + u·Q (0 <= u < L); on the extra prime m̃, r = [−(c·m̃ + u·Q)·Q⁻¹]_m̃ shifted into
   [−m̃/2, m̃/2) (the shift by floor(m̃/2) is a broadcast constant, `ren.ir.broadcast_const`);
   one prime converts exactly, and (c·m̃ + u·Q + r·Q)·m̃⁻¹ on B | m_sk is the representative
   of c in [−Q/2, Q/2 + (L + 1)·Q/m̃): the centred one except, rarely, c near ±Q/2.  The fast
   conversion alone leaves c + u·Q, and u·Q times the other operand's overflow cost 2–6 bits
   of noise per product;
2. tensor: (a0·b0, a0·b1 + a1·b0, a1·b1), exact in the larger ring;
3. times t, divided by Q and rounded: `Poly.rescale` by Q's primes (exact), leaving
   y = round(t·d/Q) on ``B | m_sk``;
4. back to Q exactly: fast basis conversion from B gives y + k·B on Q and m_sk, with
   0 <= k <= |B| (the conversion's own 0 <= u < |B| of the standard representative, plus 1
   when y < 0); m_sk recovers k = ((y + k·B) − y)·B⁻¹ mod m_sk (Shenoy–Kumaresan: m_sk > |B|),
   and y = (y + k·B) − k·B on Q;
5. relinearize with the RLWE layer's key switch (`ren.rlwe.relinearize`).

Rotations: the Galois element 3^k rotates both rows left by k columns, 2N−1 swaps the rows
(`ren.bfv.encoder`); `galois_keys` makes the keys with the RLWE key generator and
`ren.rlwe.automorphism` applies them.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

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
from ren.bfv.encoder import COLUMN_GENERATOR, Plaintext
from ren.bfv.params import BFVParams
from ren.errors import (
    ParameterError,
    check_bool,
    check_instance,
    check_int,
    check_int_range,
    is_int,
)
from ren.ir import broadcast_const
from ren.poly import Poly
from ren.ring import RingSpec
from ren.rlwe import Decryptor as RLWEDecryptor
from ren.rlwe import Encryptor as RLWEEncryptor
from ren.rlwe import (
    GaloisKeys,
    KeyGenerator,
    PublicKey,
    RelinKey,
    SecretKey,
    automorphism,
    relinearize,
)
from ren.rlwe.ciphertext import Parts, check_ntt_polys, check_parts


@dataclass(eq=False)
class Ciphertext(Parts):
    """A BFV ciphertext: 2 parts (3 between a multiplication and relinearization) on Q."""

    parts: tuple[Poly, ...]
    params: BFVParams

    def __post_init__(self) -> None:
        self.parts = check_parts("Ciphertext", self.parts)
        check_instance(self.params, BFVParams, "Ciphertext: params")
        check_ntt_polys(self.parts, lambda i: f"Ciphertext: part {i}", self.params.ring(0),
                        "the ciphertext ring Q", "use params.ring()", self.params)

    def __repr__(self) -> str:
        return f"<BFV Ciphertext size {self.size} N={self.params.N} t={self.params.t}>"


#: how a BFV mismatch names the other parameters (`ren.bfv.common.check_same`)
_UNDER = "other BFVParams than this one's"


def _check_same(params: BFVParams, obj: Any, what: str) -> None:
    check_same(params, obj, what, _UNDER)


def _check_pt(params: BFVParams, pt: Any, who: str) -> Plaintext:
    return check_plaintext(pt, params, who, "encode values with Encoder.encode", _UNDER)


def scaled_poly(pt: Plaintext) -> Poly:
    """round(Q·m/t) on Q (NTT domain): the plaintext as c0 carries it."""
    p = pt.params
    Q, t = p.Q, p.t
    if t >= 1 << 31:  # (Q mod t)·m would overflow int64: big integers on the host
        coeffs = [(Q * m + t // 2) // t for m in pt.coeffs.tolist()]
        return Poly.from_coefficients(coeffs, p.ring(0), device=p.device).ntt()
    # round(Q·m/t) = floor(Q/t)·m + round((Q mod t)·m/t), m in [0, t): the second term < t
    m = pt.coeffs.astype(np.int64)
    r = ((Q % t) * m + t // 2) // t
    ring = p.ring(0)
    return (Poly.from_coefficients(m, ring, device=p.device) * p.delta
            + Poly.from_coefficients(r, ring, device=p.device)).ntt()


def lifted_poly(pt: Plaintext) -> Poly:
    """The plaintext's centred coefficients on Q (NTT domain): a multiplier."""
    p = pt.params
    return Poly.from_coefficients(np.array(pt.centred(), np.int64), p.ring(0),
                                  device=p.device).ntt()


class ExactExtension:
    """The exact extension of a polynomial from Q to ``B | m_sk | Q`` (step 1 of the module
    docstring), its rings and constants; one per parameter set (`exact_extension`)."""

    def __init__(self, params: BFVParams) -> None:
        p = params
        self._mt = mt = p.tilde_modulus
        self._Q = p.Q
        self.ring = p.ring_aux_q
        self._t_ring = RingSpec(p.N, (mt,))
        self._ext_ring = RingSpec(p.N, (mt, *self.ring.moduli))
        self._neg_q_inv_t = -pow(p.Q, -1, mt) % mt
        # h = floor(m̃/2) on every coefficient (a constant int would add to X^0 only): a
        # broadcast constant, which pass 9 lowers to a VCONST inside the elementwise kernels
        self._half_t = Poly(broadcast_const(mt // 2, self._t_ring, p.device))
        self._half_aux = Poly(broadcast_const(mt // 2, self.ring, p.device))
        self._t_inv = pow(mt, -1, self.ring.Q)

    def extend(self, c: Poly) -> Poly:
        """c (coefficient domain, on Q) on B | m_sk | Q: on B | m_sk the representative z ≡ c
        (mod Q) with |z| < Q/2 + (L + 1)·Q/m̃ (a Montgomery reduction by m̃)."""
        x = (c * self._mt).to_ring(self._ext_ring)  # c·m̃ + u·Q, 0 <= u < L
        # r = [-(c·m̃ + u·Q)·Q⁻¹]_m̃, shifted by h into [0, m̃) (one prime: exact below)
        r = x.to_ring(self._t_ring) * self._neg_q_inv_t + self._half_t
        z = x.to_ring(self.ring) + (r.to_ring(self.ring) - self._half_aux) * self._Q
        return z * self._t_inv  # (c·m̃ + u·Q − u·Q)/m̃ = c; on Q: c·m̃·m̃⁻¹


_EXTENSIONS: weakref.WeakKeyDictionary[BFVParams, dict[str, ExactExtension]] = (
    weakref.WeakKeyDictionary())


def exact_extension(params: BFVParams) -> ExactExtension:
    """The `ExactExtension` of `params` on its device (made once per parameter set and device:
    equal parameters on two devices are equal, their constants are not)."""
    per_device = _EXTENSIONS.setdefault(params, {})
    ext = per_device.get(params.device)
    if ext is None:
        ext = per_device[params.device] = ExactExtension(params)
    return ext


def _bfv_params(params: Any, who: str) -> BFVParams:
    """`params` as BFV parameters: BGV's (levels above 0) would leave BFV working on the first
    level only, so they are refused with the class to use instead."""
    check_instance(params, BFVParams, f"{who}: params")
    if params.depth != 0:
        raise ParameterError(
            f"{who}: these are BGV parameters ({type(params).__name__}, {params.depth + 1} "
            f"levels); BFV has one level: use BGV{who} for them, or BFVParams for BFV")
    return params


class Encryptor:
    """Encrypts plaintexts under a public key or a secret key (the RLWE layer's encryption)."""

    def __init__(self, params: BFVParams, key: PublicKey | SecretKey) -> None:
        self.params = _bfv_params(params, "Encryptor")
        self._rlwe = RLWEEncryptor(params, key)

    def encrypt(self, pt: Plaintext) -> Ciphertext:
        pt = _check_pt(self.params, pt, "encrypt")
        return Ciphertext(self._rlwe.encrypt_parts(scaled_poly(pt), 0), self.params)

    def encrypt_zero(self) -> Ciphertext:
        return Ciphertext(self._rlwe.encrypt_parts(None, 0), self.params)


class Decryptor:
    """Decrypts (exactly, on the host) and measures the noise budget."""

    def __init__(self, params: BFVParams, secret_key: SecretKey) -> None:
        self.params = _bfv_params(params, "Decryptor")
        self._rlwe = RLWEDecryptor(params, secret_key)

    def _phase(self, ct: Ciphertext) -> list[int]:
        check_instance(ct, Ciphertext, "decrypt: ct", hint="a BFV Ciphertext")
        _check_same(self.params, ct, "the ciphertext")
        return self._rlwe.decrypt_parts(ct.parts, 0).coefficients()

    def decrypt(self, ct: Ciphertext) -> Plaintext:
        """round(t·(c0 + c1·s)/Q) mod t, exactly, in RNS: the phase extended exactly to
        B | m_sk | Q, times t, divided by Q and rounded (`Poly.rescale`), which leaves |y| <=
        t/2 + 1, read from the few primes of B whose product exceeds 4·t."""
        check_instance(ct, Ciphertext, "decrypt: ct", hint="a BFV Ciphertext")
        _check_same(self.params, ct, "the ciphertext")
        p = self.params
        phase = self._rlwe.decrypt_parts(ct.parts, 0).intt()
        y = (exact_extension(p).extend(phase) * p.t).rescale(p.chain)
        m = np.array(y.to_ring(self._read_ring).coefficients(), dtype=object) % p.t
        return Plaintext(m.astype(np.int64), p)

    @cached_property
    def _read_ring(self) -> RingSpec:
        p, moduli = self.params, []
        for q in p.aux_moduli:
            moduli.append(q)
            if math.prod(moduli) > 4 * p.t:
                break
        return RingSpec(p.N, tuple(moduli))

    def noise_budget(self, ct: Ciphertext) -> int:
        """SEAL's invariant noise budget in bits, −log2(2·‖v‖∞) with v = (t/Q)·(c0 + c1·s) − m
        reduced mod t, counted as SEAL does: bits(Q) − bits(‖[t·(c0 + c1·s)]_Q‖∞) − 1, at least
        0 (bits(x): x's bit length).  Decryption is exact while it is positive; a ciphertext
        whose noise wrapped around looks uniform, ‖v‖∞ near 1/2, and has 0."""
        Q, t = self.params.Q, self.params.t
        half = Q // 2
        norm = max(abs((t * x + half) % Q - half) for x in self._phase(ct))
        return max(0, Q.bit_length() - norm.bit_length() - 1)


def galois_keys(keygen: KeyGenerator, steps: Iterable[int] | None = None,
                rows: bool = True) -> GaloisKeys:
    """Keys for column rotations by each of `steps` (left; negative: right; default: the powers
    of two below N/2) and, if `rows`, for the row swap."""
    check_instance(keygen, KeyGenerator, "galois_keys: keygen", hint="a ren.rlwe.KeyGenerator")
    params = check_instance(keygen.params, BFVParams, "galois_keys: keygen.params")
    rows = check_bool(rows, "galois_keys: rows")
    half = params.N // 2
    if steps is None:
        steps = [1 << i for i in range(half.bit_length() - 1)]
    elif isinstance(steps, str | bytes) or not isinstance(steps, Iterable):
        raise ParameterError(f"galois_keys: steps must be an iterable of ints (column rotation "
                             f"steps), got {type(steps).__name__} {steps!r}"[:300])
    elements: list[int] = []
    for k in steps:
        if not is_int(k):
            raise ParameterError(f"galois_keys: steps must be ints, got {type(k).__name__} {k!r}")
        g = column_element(params.N, int(k))
        if g != 1 and g not in elements:
            elements.append(g)
    if rows:
        elements.append(2 * params.N - 1)
    return GaloisKeys({g: keygen.galois_key(g) for g in elements}, params)


def column_element(N: int, k: int) -> int:
    """The Galois element 3^k mod 2N of a left column rotation by k (k mod N/2)."""
    N = check_int_range(N, "column_element: N", 4, hint="the ring degree, a power of two")
    if N & (N - 1):
        raise ParameterError(f"column_element: N must be a power of two, got {N}")
    k = check_int(k, "column_element: k")
    return pow(COLUMN_GENERATOR, k % (N // 2), 2 * N)


class Evaluator:
    """Homomorphic operations on BFV ciphertexts (lazy: Poly graphs until decrypted)."""

    def __init__(self, params: BFVParams, relin_key: RelinKey | None = None,
                 galois_keys: GaloisKeys | None = None) -> None:
        self.params = _bfv_params(params, "Evaluator")
        self.relin_key, self.galois_keys = check_keys(params, relin_key, galois_keys,
                                                      "Evaluator", _UNDER)
        p = params
        self._q_ring = p.ring(0)
        self._b_ring = RingSpec(p.N, p.aux_moduli)
        self._m_ring = RingSpec(p.N, (p.sk_modulus,))
        self._bm_ring = RingSpec(p.N, (*p.aux_moduli, p.sk_modulus))
        self._qm_ring = RingSpec(p.N, (*p.chain, p.sk_modulus))
        self._B = math.prod(p.aux_moduli)
        self._B_inv_m = pow(self._B, -1, p.sk_modulus)
        self._exact = exact_extension(p)

    # -- checks -----------------------------------------------------------------------------------
    def _ct(self, ct: Any, who: str, size: int | None = 2) -> Ciphertext:
        return check_ciphertext(ct, Ciphertext, "a BFV Ciphertext", self.params, _UNDER, who,
                                size)

    # -- linear operations ------------------------------------------------------------------------
    def add(self, a: Ciphertext, b: Ciphertext) -> Ciphertext:
        a, b = self._ct(a, "add", None), self._ct(b, "add", None)
        n = max(a.size, b.size)
        parts = [_sum(a.parts[i] if i < a.size else None, b.parts[i] if i < b.size else None)
                 for i in range(n)]
        return Ciphertext(tuple(parts), self.params)

    def negate(self, a: Ciphertext) -> Ciphertext:
        a = self._ct(a, "negate", None)
        return Ciphertext(tuple(-c for c in a.parts), self.params)

    def sub(self, a: Ciphertext, b: Ciphertext) -> Ciphertext:
        return self.add(a, self.negate(b))

    def add_plain(self, a: Ciphertext, pt: Plaintext) -> Ciphertext:
        a = self._ct(a, "add_plain", None)
        pt = _check_pt(self.params, pt, "add_plain")
        return Ciphertext((a.parts[0] + scaled_poly(pt), *a.parts[1:]), self.params)

    def sub_plain(self, a: Ciphertext, pt: Plaintext) -> Ciphertext:
        a = self._ct(a, "sub_plain", None)
        pt = _check_pt(self.params, pt, "sub_plain")
        return Ciphertext((a.parts[0] - scaled_poly(pt), *a.parts[1:]), self.params)

    def multiply_plain(self, a: Ciphertext, pt: Plaintext) -> Ciphertext:
        a = self._ct(a, "multiply_plain", None)
        m = lifted_poly(_check_pt(self.params, pt, "multiply_plain"))
        return Ciphertext(tuple(c * m for c in a.parts), self.params)

    def multiply_scalar(self, a: Ciphertext, k: int) -> Ciphertext:
        a = self._ct(a, "multiply_scalar", None)
        k = centred(check_int(k, "multiply_scalar: k"), self.params.t)
        return Ciphertext(tuple(c * k for c in a.parts), self.params)

    # -- multiplication ---------------------------------------------------------------------------
    def _extend(self, c: Poly) -> Poly:
        return self._exact.extend(c.intt()).ntt()

    def _scale_down(self, d: Poly) -> Poly:
        """round(t·d/Q) mod Q for d on B | m_sk | Q (steps 3 and 4 of the module docstring)."""
        p = self.params
        y = (d * p.t).rescale(p.chain).intt()  # exact round(t·d/Q) on B | m_sk
        y_conv = y.to_ring(self._b_ring).to_ring(self._qm_ring)  # y + k·B, 0 <= k <= |B|
        k = (y_conv.to_ring(self._m_ring) - y.to_ring(self._m_ring)) * self._B_inv_m
        # k < m_sk: its one residue is k itself, and the conversion of one prime is exact
        return (y_conv.to_ring(self._q_ring) - k.to_ring(self._q_ring) * self._B).ntt()

    def multiply_no_relin(self, a: Ciphertext, b: Ciphertext) -> Ciphertext:
        """The 3-part product (under 1, s, s²)."""
        a, b = self._ct(a, "multiply"), self._ct(b, "multiply")
        d = tensor(tuple(self._extend(c) for c in a.parts),
                   None if a is b else tuple(self._extend(c) for c in b.parts))
        return Ciphertext(tuple(self._scale_down(x) for x in d), self.params)

    def relinearize(self, a: Ciphertext) -> Ciphertext:
        a = self._ct(a, "relinearize", 3)
        if self.relin_key is None:
            raise missing_relin_key("Evaluator")
        return Ciphertext(relinearize(a.parts, self.relin_key, 0), self.params)

    def multiply(self, a: Ciphertext, b: Ciphertext, relin: bool = True) -> Ciphertext:
        """a·b, relinearized unless ``relin=False``."""
        relin = check_bool(relin, "multiply: relin")
        out = self.multiply_no_relin(a, b)
        return self.relinearize(out) if relin else out

    def square(self, a: Ciphertext, relin: bool = True) -> Ciphertext:
        return self.multiply(a, a, relin)

    # -- rotations --------------------------------------------------------------------------------
    def _galois(self, a: Ciphertext, g: int, what: str) -> Ciphertext:
        a = self._ct(a, what)
        if self.galois_keys is None or g not in self.galois_keys:
            raise missing_galois_key(what, g, "Evaluator")
        key = self.galois_keys.keys[g]
        return Ciphertext(automorphism(a.parts, key, 0), self.params)

    def rotate_columns(self, a: Ciphertext, k: int) -> Ciphertext:
        """Rotate both rows left by k columns (right for negative k)."""
        k = check_int(k, "rotate_columns: k")
        if k % (self.params.N // 2) == 0:
            return self._ct(a, "rotate_columns")
        return self._galois(a, column_element(self.params.N, k), f"column rotation by {k}")

    def rotate_rows(self, a: Ciphertext) -> Ciphertext:
        """Swap the two rows."""
        return self._galois(a, 2 * self.params.N - 1, "the row swap")


def _sum(x: Poly | None, y: Poly | None) -> Poly:
    if x is None:
        assert y is not None
        return y
    return x if y is None else x + y


__all__ = ["Ciphertext", "Decryptor", "Encryptor", "Evaluator", "column_element",
           "galois_keys", "lifted_poly", "scaled_poly"]
