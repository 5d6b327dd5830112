"""Sparse-secret encapsulation for bootstrapping (Bossuat, Troncoso-Pastoriza and Hubaux,
"Bootstrapping for approximate homomorphic encryption with negligible failure-probability by
using sparse-secret encapsulation", ePrint 2022/024).

    enc = Encapsulation(params, weight=32)       # the small ring of the dense-to-sparse key
    keys = enc.keys(keygen)                      # EncapsulationKeys: two switching keys
    ct = enc.to_sparse(ct0, keys)                # level 0, under s -> under s'
    ...ModRaise...
    ct = enc.to_dense(raised, keys)              # top level, under s' -> under s

**Why.**  ModRaise reads a level-0 ciphertext modulo the whole chain: it then encrypts
m + Q_0·I with |I| growing as the square root of the secret's Hamming weight h (`bound_K`), and
EvalMod must cover that range: a dense ternary secret (h ≈ 2N/3, what the HE standard's
128-bit table assumes) gives |I| in the hundreds at N = 2^16, a sparse secret (h = 192) about
30, at a security cost (hybrid attacks on sparse secrets).  Encapsulation keeps the dense secret
s for every key and every ciphertext, and draws an *ephemeral* sparse secret s' (weight 32 by
default, as Lattigo's) used only inside bootstrapping: the level-0 ciphertext is switched from
s to s' just before ModRaise (so I is bounded by s''s weight) and from s' back to s right after
it, at the top level.

**Security.**  s' appears in one RLWE sample only, the dense-to-sparse key, whose modulus is
Q_0·P' (P' = as many fresh primes as Q_0 has, about 2^124 in all at N = 2^16): an RLWE instance
with so small a modulus stays hard even for a sparse secret (the paper's analysis; not
re-estimated here).  The sparse-to-dense key lives over the full key ring Q·P and is an
encryption under the dense s, like every other key.  So the parameters' own log2(QP) check
(the HE standard, dense ternary secret) is what bounds the security.

**Cost.**  Two key switches per bootstrapping: one at level 0 over Q_0·P' (tiny), one at the top
level (as a rotation's); two keys, the second as large as a Galois key.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

from ren.ckks.chain import largest_primes
from ren.ckks.ciphertext import Ciphertext
from ren.ckks.errors import InsecureParametersWarning, OutOfLevelsError
from ren.ckks.operations import operation
from ren.ckks.params import CKKSParams
from ren.errors import ParameterError
from ren.poly import Poly
from ren.rlwe.keygen import KeyGenerator
from ren.rlwe.keys import SwitchingKey
from ren.rlwe.keyswitch import key_switch
from ren.rlwe.params import RLWEParams

#: the ephemeral secret's default Hamming weight (Lattigo's default too)
DEFAULT_WEIGHT = 32


@dataclass(eq=False)
class EncapsulationKeys:
    """The two switching keys of an `Encapsulation`: `to_sparse` (s -> s', over Q_0·P') and
    `to_dense` (s' -> s, over the parameters' key ring)."""

    to_sparse: SwitchingKey
    to_dense: SwitchingKey
    weight: int

    @property
    def params(self) -> CKKSParams:
        """The CKKS parameters (the dense-to-sparse key's ring follows from them and the
        weight: `Encapsulation(params, weight).small`)."""
        return self.to_dense.params  # type: ignore[return-value]

    @property
    def nbytes(self) -> int:
        """The bytes the keys hold in memory (a lean key's a rows are seeds)."""
        return self.to_sparse.nbytes + self.to_dense.nbytes

    @property
    def full_nbytes(self) -> int:
        """The bytes of both keys with both halves stored."""
        return self.to_sparse.full_nbytes + self.to_dense.full_nbytes

    @property
    def is_lean(self) -> bool:
        """Whether both keys are lean (`ren.rlwe.keys.SwitchingKey.lean`)."""
        return self.to_sparse.is_lean and self.to_dense.is_lean

    def lean(self) -> EncapsulationKeys:
        """Both keys lean: their a rows kept as seeds, regenerated in each key switch."""
        return EncapsulationKeys(self.to_sparse.lean(), self.to_dense.lean(), self.weight)

    def stored(self) -> EncapsulationKeys:
        """Both keys with their a rows realized and kept."""
        return EncapsulationKeys(self.to_sparse.stored(), self.to_dense.stored(), self.weight)

    def __repr__(self) -> str:
        return (f"<EncapsulationKeys weight {self.weight}: to_sparse {self.to_sparse.nbytes} "
                f"bytes, to_dense {self.to_dense.nbytes} bytes>")


class Encapsulation:
    """The ephemeral sparse secret's ring and key switches for `params` (module doc).

    Args:
        params: the CKKS parameters (any secret; the point is a dense one).
        weight: the ephemeral secret's Hamming weight h' (1 <= h' <= N).
    """

    def __init__(self, params: CKKSParams, weight: int = DEFAULT_WEIGHT) -> None:
        if not isinstance(params, CKKSParams):
            raise ParameterError(f"Encapsulation needs CKKSParams, got {type(params).__name__}")
        self.params = params
        q0 = params.ring(0).moduli
        used = set(params.key_ring.moduli)
        special = largest_primes(params.N, math.log2(max(q0)) + 1, len(q0), used)
        with warnings.catch_warnings():  # a toy N is outside the HE standard's table
            if params.insecure:
                warnings.simplefilter("ignore", InsecureParametersWarning)
            #: Q_0 and its fresh special primes P': the ring of the dense-to-sparse key
            self.small = RLWEParams(params.N, q0, special, levels=(len(q0),), dnum=1,
                                    secret=("sparse", weight), sigma=params.sigma,
                                    insecure=params.insecure, device=params.device)
        #: the ephemeral secret's Hamming weight (checked by the small parameters)
        self.weight: int = weight

    def keys(self, keygen: KeyGenerator) -> EncapsulationKeys:
        """Draw an ephemeral sparse secret s' and make both keys with `keygen`'s secret s (the
        secret s' is not kept); lean keys if `keygen` is lean (``KeyGenerator(..., lean=True)``)."""
        p = self.params
        if not isinstance(keygen, KeyGenerator) or keygen.params != p:
            raise ParameterError("Encapsulation.keys: needs the KeyGenerator of the same "
                                 "parameters (it holds the dense secret s)")
        s_coeffs = keygen.secret_key().poly.coefficients()
        sparse = KeyGenerator(self.small, lean=keygen.lean)  # draws s' of weight h' over Q_0·P'
        s1_coeffs = sparse.secret_key().poly.coefficients()
        s_small = Poly.from_coefficients(s_coeffs, self.small.key_ring, device=p.device).ntt()
        s1_big = Poly.from_coefficients(s1_coeffs, p.key_ring, device=p.device).ntt()
        s_small.realize(s1_big)
        return EncapsulationKeys(sparse.switching_key(s_small), keygen.switching_key(s1_big),
                                 self.weight)

    def _check(self, keys: EncapsulationKeys, ct: Ciphertext) -> Ciphertext:
        if not isinstance(keys, EncapsulationKeys):
            raise ParameterError(f"expected EncapsulationKeys (Encapsulation.keys(keygen)), got "
                                 f"{type(keys).__name__}")
        if keys.to_dense.params != self.params or keys.to_sparse.params != self.small:
            raise ParameterError("the encapsulation keys belong to other parameters (or another "
                                 "Encapsulation); make them with this one's keys(keygen)")
        if not isinstance(ct, Ciphertext) or ct.params != self.params or ct.size != 2:
            raise ParameterError("expects a two-part ciphertext of the encapsulation's "
                                 "parameters")
        return ct

    @operation
    def to_sparse(self, ct: Ciphertext, keys: EncapsulationKeys) -> Ciphertext:
        """The level-0 ciphertext `ct` (under s) switched to the ephemeral secret s' over Q_0
        (the key switch's special primes are P')."""
        ct = self._check(keys, ct)
        if ct.level != 0:
            raise OutOfLevelsError(f"to_sparse: expects a level-0 ciphertext, got level "
                                   f"{ct.level}")
        u0, u1 = key_switch(ct.c1, keys.to_sparse, 0)
        return Ciphertext((ct.c0 + u0, u1), ct.scale, 0, self.params)

    @operation
    def to_dense(self, ct: Ciphertext, keys: EncapsulationKeys) -> Ciphertext:
        """`ct` (under s', any level) switched back to the parameters' secret s."""
        ct = self._check(keys, ct)
        u0, u1 = key_switch(ct.c1, keys.to_dense, ct.level)
        return Ciphertext((ct.c0 + u0, u1), ct.scale, ct.level, self.params)


__all__ = ["DEFAULT_WEIGHT", "Encapsulation", "EncapsulationKeys"]
