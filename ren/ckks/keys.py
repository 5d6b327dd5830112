"""CKKS keys: the RLWE layer's key objects (`ren.rlwe.keys`) and its `KeyGenerator`, narrowed to
`CKKSParams`.

    keygen = KeyGenerator(params)                 # params: CKKSParams
    sk, pk, rlk = keygen.secret_key(), keygen.public_key(), keygen.relin_key()
    gk = keygen.rotation_keys([1, -1], conjugate=True)

Lean keys (half the memory: the switching keys' uniform halves kept as seeds and regenerated
inside each key switch, the same results word for word):

    keygen = KeyGenerator(params, lean=True)     # or: rlk.lean(), gk.lean(), enc_keys.lean()
"""

from __future__ import annotations

from typing import ClassVar

from ren.ckks.params import CKKSParams
from ren.rlwe import keygen as rlwe_keygen
from ren.rlwe.keys import GaloisKey, GaloisKeys, PublicKey, RelinKey, SecretKey, SwitchingKey


class KeyGenerator(rlwe_keygen.KeyGenerator):
    """Draws a secret key (fresh OS randomness unless `ren.random.seed` is set) and derives the
    public, relinearization, rotation and conjugation keys from it (see
    `ren.rlwe.KeyGenerator`)."""

    params_type: ClassVar[type[CKKSParams]] = CKKSParams
    params: CKKSParams


__all__ = ["GaloisKey", "GaloisKeys", "KeyGenerator", "PublicKey", "RelinKey", "SecretKey",
           "SwitchingKey"]
