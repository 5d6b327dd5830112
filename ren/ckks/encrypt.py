"""`Encryptor` (public-key or secret-key mode) and `Decryptor` of CKKS Plaintexts.

The RLWE layer (`ren.rlwe.Encryptor`, `ren.rlwe.Decryptor`) encrypts and decrypts the
plaintext's polynomial; this layer checks the CKKS objects and carries the scale and level.
Decryption is a realization boundary: it computes the ciphertext's whole lazy graph.
"""

from __future__ import annotations

from ren.ckks.ciphertext import Ciphertext, Plaintext
from ren.ckks.params import CKKSParams
from ren.errors import ParameterError
from ren.poly import realize_polys
from ren.rlwe import encrypt as rlwe
from ren.rlwe.keys import PublicKey, SecretKey


class Encryptor:
    """Encrypts Plaintexts under a public key (``PublicKey``) or a secret key (``SecretKey``)."""

    def __init__(self, params: CKKSParams, key: PublicKey | SecretKey) -> None:
        self._rlwe = rlwe.Encryptor(params, key)
        self.params, self.key = params, key

    def encrypt(self, pt: Plaintext) -> Ciphertext:
        """A fresh encryption of `pt` at its level and scale (lazy)."""
        if not isinstance(pt, Plaintext):
            raise ParameterError(f"encrypt expects a Plaintext, got {type(pt).__name__}; encode "
                                 "values with Encoder.encode first")
        rlwe.check_same_params(self.params, pt, "the plaintext")
        return Ciphertext.from_rlwe(self._rlwe.encrypt(pt.poly, pt.level), pt.scale)


class Decryptor:
    """Decrypts Ciphertexts with the secret key."""

    def __init__(self, params: CKKSParams, secret_key: SecretKey) -> None:
        self._rlwe = rlwe.Decryptor(params, secret_key)
        self.params, self.secret_key = params, secret_key

    def decrypt(self, ct: Ciphertext) -> Plaintext:
        """The Plaintext c0 + c1·s (+ c2·s²), realized (this computes the ciphertext's graph).
        Its coefficient form, which decoding reads, is realized with it (one realization, not
        two: `Plaintext.coefficient_form`)."""
        if not isinstance(ct, Ciphertext):
            raise ParameterError(f"decrypt expects a Ciphertext, got {type(ct).__name__}")
        rlwe.check_same_params(self.params, ct, "the ciphertext")
        m = self._rlwe.decrypt(ct.as_rlwe())
        coeffs = m.intt()
        realize_polys([m, coeffs])
        return Plaintext(m, ct.scale, ct.level, self.params).keep_coefficient_form(coeffs)


__all__ = ["Decryptor", "Encryptor"]
