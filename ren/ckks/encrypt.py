"""`Encryptor` (public-key or secret-key mode) and `Decryptor`.

Every encryption draws fresh RANDOM nodes (seeds from the OS CSPRNG, or the insecure test stream
of `ren.random.seed`).  Decryption is a realization boundary: it computes the ciphertext's
whole lazy graph.
"""

from __future__ import annotations

from ren.ckks.ciphertext import Ciphertext, Plaintext
from ren.ckks.errors import ParamsMismatchError
from ren.ckks.keys import PublicKey, SecretKey
from ren.ckks.params import CKKSParams
from ren.errors import ParameterError
from ren.poly import Poly


def _check(params: CKKSParams, obj, what: str) -> None:
    if getattr(obj, "params", None) != params:
        raise ParamsMismatchError(f"{what} was made under other CKKSParams than this one's; use "
                                  "objects from one parameter set")


class Encryptor:
    """Encrypts Plaintexts under a public key (``PublicKey``) or a secret key (``SecretKey``)."""

    def __init__(self, params: CKKSParams, key: PublicKey | SecretKey) -> None:
        if not isinstance(key, PublicKey | SecretKey):
            raise ParameterError(f"Encryptor needs a PublicKey or SecretKey, got "
                                 f"{type(key).__name__}")
        _check(params, key, "the key")
        self.params, self.key = params, key

    def encrypt(self, pt: Plaintext) -> Ciphertext:
        """A fresh encryption of `pt` at its level and scale (lazy)."""
        if not isinstance(pt, Plaintext):
            raise ParameterError(f"encrypt expects a Plaintext, got {type(pt).__name__}; encode "
                                 "values with Encoder.encode first")
        _check(self.params, pt, "the plaintext")
        p = self.params
        ring = p.ring(pt.level)
        if isinstance(self.key, PublicKey):
            # Encrypt zero over Q_l·P, then divide by P (a RESCALE by the special primes): the
            # noise v·e + e0 + e1·s shrinks by P to rounding noise (as SEAL does), and the
            # message is added afterwards in Q_l.
            qp = p.ring_qp(pt.level)
            b, a = self.key.b.to_ring(qp), self.key.a.to_ring(qp)
            v = Poly.ternary(qp, device=p.device)
            special = p.special_moduli
            e0, e1 = (Poly.gaussian(qp, p.sigma, device=p.device).ntt() for _ in range(2))
            c0 = (v * b + e0).rescale(special) + pt.poly
            c1 = (v * a + e1).rescale(special)
        else:
            s = self.key.poly.to_ring(ring)
            c1 = Poly.uniform(ring, device=p.device, domain="NTT")
            c0 = Poly.gaussian(ring, p.sigma, device=p.device).ntt() - c1 * s + pt.poly
        return Ciphertext((c0, c1), pt.scale, pt.level, p)


class Decryptor:
    """Decrypts Ciphertexts with the secret key."""

    def __init__(self, params: CKKSParams, secret_key: SecretKey) -> None:
        if not isinstance(secret_key, SecretKey):
            raise ParameterError(f"Decryptor needs a SecretKey, got {type(secret_key).__name__}")
        _check(params, secret_key, "the secret key")
        self.params, self.secret_key = params, secret_key

    def decrypt(self, ct: Ciphertext) -> Plaintext:
        """The Plaintext c0 + c1·s (+ c2·s²), realized (this computes the ciphertext's graph)."""
        if not isinstance(ct, Ciphertext):
            raise ParameterError(f"decrypt expects a Ciphertext, got {type(ct).__name__}")
        _check(self.params, ct, "the ciphertext")
        s = self.secret_key.poly.to_ring(self.params.ring(ct.level))
        m, power = ct.parts[0], s
        for i, c in enumerate(ct.parts[1:]):
            m = m + c * power
            if i + 2 < ct.size:
                power = power * s
        return Plaintext(m.realize(), ct.scale, ct.level, self.params)
