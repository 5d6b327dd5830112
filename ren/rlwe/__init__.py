"""Ring-LWE on Ren's lazy polynomials: the scheme-independent layer under CKKS.

Parameters (ring degree, modulus chain and levels, special primes, key-switching digits, secret
and error distributions), keys (secret, public, relinearization, Galois), encryption and
decryption of a polynomial, gadget decomposition, hybrid key switching and automorphisms, as in
Lattigo's ``core/rlwe``.  Nothing here knows about scales or encoding: `ren.ckks` builds on this
layer (and a BFV/BGV or bootstrapping would reuse it); this layer never imports `ren.ckks`.

    from ren.rlwe import RLWEParams, KeyGenerator, Encryptor, Decryptor, key_switch
    params = RLWEParams(32, moduli, special_moduli, insecure=True)
    kg = KeyGenerator(params)
    ct = Encryptor(params, kg.public_key()).encrypt(m)          # m: NTT domain, params.ring()
    m_noisy = Decryptor(params, kg.secret_key()).decrypt(ct)    # m + small noise (lazy)
"""

from ren.rlwe.automorphism import automorphism, hoisted_automorphisms
from ren.rlwe.ciphertext import Ciphertext, check_ntt_polys
from ren.rlwe.encrypt import Decryptor, Encryptor
from ren.rlwe.errors import InsecureParametersWarning, MissingKeyError, ParamsMismatchError
from ren.rlwe.gadget import balanced_digits, gadget_constants
from ren.rlwe.keygen import KeyGenerator, normalize_steps
from ren.rlwe.keys import (
    GaloisKey,
    GaloisKeys,
    PublicKey,
    RelinKey,
    SecretKey,
    SwitchingKey,
)
from ren.rlwe.keyswitch import decompose, key_switch, relinearize, switch_decomposed
from ren.rlwe.params import HE_STANDARD_128, RLWEParams, estimated_security, max_log_qp

__all__ = [
    "HE_STANDARD_128",
    "Ciphertext",
    "Decryptor",
    "Encryptor",
    "GaloisKey",
    "GaloisKeys",
    "InsecureParametersWarning",
    "KeyGenerator",
    "MissingKeyError",
    "ParamsMismatchError",
    "PublicKey",
    "RLWEParams",
    "RelinKey",
    "SecretKey",
    "SwitchingKey",
    "automorphism",
    "balanced_digits",
    "check_ntt_polys",
    "decompose",
    "estimated_security",
    "gadget_constants",
    "hoisted_automorphisms",
    "key_switch",
    "max_log_qp",
    "normalize_steps",
    "relinearize",
    "switch_decomposed",
]
