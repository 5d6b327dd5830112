"""RLWE encryption of a polynomial (public-key or secret-key mode) and decryption.

`Encryptor.encrypt(m, level)` returns a `Ciphertext` (c0, c1) with c0 + c1·s = m + e mod Q_level:

- public key (b, a) over Q·P: encrypt zero over Q_level·P as (v·b + e0, v·a + e1), divide by P (a
  RESCALE by the special primes: the noise v·e + e0 + e1·s shrinks to rounding noise, as SEAL
  does), then add m in Q_level — an encoded message not yet realized (NTT of a TO_RNS of
  integer words) is added before the division instead, as P'·m over Q·P' beside e0: the same
  words, with m transformed together with the division's correction (one NTT fewer);
- secret key: c1 uniform, c0 = e − c1·s + m.

Every encryption draws fresh RANDOM nodes (seeds from the OS CSPRNG, or the insecure test stream
of `ren.random.seed`).  `Decryptor.decrypt` returns the lazy Poly c0 + c1·s (+ c2·s²).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from ren.errors import ParameterError, check_instance, check_sequence
from ren.node import Node
from ren.ops import Op
from ren.poly import Poly
from ren.ring import RingSpec
from ren.rlwe.ciphertext import Ciphertext, check_ntt_polys
from ren.rlwe.errors import ParamsMismatchError
from ren.rlwe.keys import PublicKey, SecretKey
from ren.rlwe.params import RLWEParams


def check_same_params(params: RLWEParams, obj: object, what: str) -> None:
    """`obj` was made under `params` (ParamsMismatchError naming `what` otherwise)."""
    if getattr(obj, "params", None) != params:
        name = type(params).__name__
        raise ParamsMismatchError(f"{what} was made under other {name} than this one's; use "
                                  "objects from one parameter set")


class Encryptor:
    """Encrypts polynomials under a public key (``PublicKey``) or a secret key (``SecretKey``)."""

    def __init__(self, params: RLWEParams, key: PublicKey | SecretKey) -> None:
        check_instance(params, RLWEParams, "Encryptor: params")
        if not isinstance(key, PublicKey | SecretKey):
            raise ParameterError(f"Encryptor needs a PublicKey or SecretKey, got "
                                 f"{type(key).__name__}")
        check_same_params(params, key, "the key")
        self.params, self.key = params, key

    def encrypt(self, m: Poly | None = None, level: int | None = None) -> Ciphertext:
        """A fresh encryption (lazy) of `m` (NTT domain, the ring of `level`; None: of zero) at
        `level` (default: the level of m's ring, or the top level for zero)."""
        p = self.params
        if m is not None and not isinstance(m, Poly):
            raise ParameterError(f"encrypt expects a Poly (or None for zero), got "
                                 f"{type(m).__name__}")
        if level is None:
            level = p.depth if m is None else p.level_of(m.ring)
        p.check_level(level)
        if m is not None:
            check_ntt_polys((m,), lambda _: "encrypt: the message", p.ring(level),
                            f"the ring of level {level}", f"use params.ring({level})", p)
        return Ciphertext(self.encrypt_parts(m, level), level, p)

    def encrypt_parts(self, m: Poly | None, level: int) -> tuple[Poly, Poly]:
        """(c0, c1) of `encrypt`, without checks (`m` already in the ring of `level`)."""
        p = self.params
        if isinstance(self.key, PublicKey):
            # over Q·P' and divided by P' (P' a few of the special primes: enough to make the
            # noise v·e + e0 + e1·s vanish in the division, `encryption_special_moduli`)
            ring = p.ring_encryption(level)
            b, a = self.key.b.to_ring(ring), self.key.a.to_ring(ring)
            v = Poly.ternary(ring, device=p.device)
            special = p.encryption_special_moduli
            e0, e1 = (Poly.gaussian(ring, p.sigma, device=p.device) for _ in range(2))
            lifted = _lifted_message(m, ring) if LIFT_MESSAGE else None
            if lifted is not None:  # m joins e0: added before the division (one NTT fewer)
                e0, m = e0 + lifted * prod(special), None
            c0 = (v * b + e0.ntt()).rescale(special)
            c1 = (v * a + e1.ntt()).rescale(special)
        else:
            s = self.key.poly.to_ring(p.ring(level))
            c1 = Poly.uniform(p.ring(level), device=p.device, domain="NTT")
            c0 = Poly.gaussian(p.ring(level), p.sigma, device=p.device).ntt() - c1 * s
        return (c0 if m is None else c0 + m), c1


#: add an encoded message before the division by P' (`_lifted_message`); False: after it, in
#: the NTT domain (the same words; for measurements)
LIFT_MESSAGE = True


def _lifted_message(m: Poly | None, ring: RingSpec) -> Poly | None:
    """m's integer coefficients as residues over `ring` (Q·P'), coefficient domain, where m is
    the NTT of a TO_RNS of integer words (an encoded plaintext not yet realized), else None.
    P'·m then rides in e0's place: (y + P'·m).rescale(P') = y.rescale(P') + m mod Q exactly
    (P'·m is 0 mod P', so the rounding sees the same residues), and the message is added in
    the coefficient domain, where the division's correction is already transformed: one NTT
    of 42 limbs fewer at N = 2^16, the same words."""
    # (anything else, a wrong argument included, takes the old path: its add names the error)
    if not isinstance(m, Poly) or m.node.op is not Op.NTT or m.node.src[0].op is not Op.TO_RNS:
        return None
    to_rns = m.node.src[0]
    return Poly(Node(Op.TO_RNS, to_rns.dtype, to_rns.src, (ring, *to_rns.arg[1:])))


class Decryptor:
    """Decrypts ciphertexts with the secret key."""

    def __init__(self, params: RLWEParams, secret_key: SecretKey) -> None:
        check_instance(params, RLWEParams, "Decryptor: params")
        if not isinstance(secret_key, SecretKey):
            raise ParameterError(f"Decryptor needs a SecretKey, got {type(secret_key).__name__}")
        check_same_params(params, secret_key, "the secret key")
        self.params, self.secret_key = params, secret_key

    def decrypt(self, ct: Ciphertext) -> Poly:
        """The lazy Poly c0 + c1·s (+ c2·s²) in the ring of ct's level."""
        if not isinstance(ct, Ciphertext):
            raise ParameterError(f"decrypt expects an RLWE Ciphertext, got {type(ct).__name__}")
        check_same_params(self.params, ct, "the ciphertext")
        return self._decrypt_parts(ct.parts, ct.level)

    def decrypt_parts(self, parts: Sequence[Poly], level: int) -> Poly:
        """c0 + c1·s (+ c2·s² …) for `parts` (two or more Polys, NTT domain) in the ring of
        `level`."""
        p = self.params
        level = p.check_level(level)
        items = tuple(check_sequence(parts, "decrypt_parts: parts", 2, hint=(
            "the parts (c0, c1[, c2, ...]) of a ciphertext, e.g. ct.parts")))
        check_ntt_polys(items, lambda i: f"decrypt_parts: part {i}", p.ring(level),
                        f"the ring of level {level}", f"use params.ring({level})", p)
        return self._decrypt_parts(items, level)

    def _decrypt_parts(self, parts: Sequence[Poly], level: int) -> Poly:
        s = self.secret_key.poly.to_ring(self.params.ring(level))
        m, power = parts[0], s
        for i, c in enumerate(parts[1:]):
            m = m + c * power
            if i + 2 < len(parts):
                power = power * s
        return m


__all__ = ["Decryptor", "Encryptor", "check_same_params"]
