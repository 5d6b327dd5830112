"""RNS-CKKS on Ren's lazy polynomials.

A client of the frontend only: every operation builds `Poly` graphs, so a CKKS program runs
through the scheduler, the memory planner and the backends like any other program.  Built on the
RLWE layer (`ren.rlwe`: keys, encryption, key switching, automorphisms), as Lattigo's
``schemes/ckks`` on ``core/rlwe``; this package adds encoding, scales, levels and the evaluator,
and re-exports the RLWE names a CKKS user needs.  The circuits built on the evaluator
(polynomials, linear transforms, bootstrapping) are `ren.ckks.circuits`.

    from ren.ckks import CKKSParams, KeyGenerator, Encoder, Encryptor, Decryptor, Evaluator
    params = CKKSParams.preset("N14")
    keygen = KeyGenerator(params)
    sk, pk, rlk = keygen.secret_key(), keygen.public_key(), keygen.relin_key()
    gk = keygen.rotation_keys([1, -1], conjugate=True)
    enc, ev = Encoder(params), Evaluator(params, relin_key=rlk, rotation_keys=gk)
    ct = Encryptor(params, pk).encrypt(enc.encode([0.5, -0.25]))
    ct = ev.rescale(ev.multiply(ct, ct))
    print(enc.decode(Decryptor(params, sk).decrypt(ct))[:2])
"""

from ren.ckks import circuits, debug
from ren.ckks.ciphertext import Ciphertext, Plaintext
from ren.ckks.circuits.lintrans import LinearTransform
from ren.ckks.circuits.polyeval import chebyshev_coefficients
from ren.ckks.encoder import Encoder
from ren.ckks.encrypt import Decryptor, Encryptor
from ren.ckks.errors import (
    DecodeOverflowError,
    InsecureParametersWarning,
    KeyPlanError,
    MissingKeyError,
    OutOfLevelsError,
    ParamsMismatchError,
    ScaleMismatchError,
    ScaleOutOfBoundsError,
)
from ren.ckks.evaluator import Evaluator
from ren.ckks.keyplan import KeyPlan, plan_rotation_keys
from ren.ckks.keys import (
    GaloisKey,
    GaloisKeys,
    KeyGenerator,
    PublicKey,
    RelinKey,
    SecretKey,
    SwitchingKey,
)
from ren.ckks.params import PRESETS, CKKSParams
from ren.ckks.serialize import dumps, loads
from ren.rlwe.keyswitch import key_switch

__all__ = [
    "PRESETS",
    "CKKSParams",
    "Ciphertext",
    "DecodeOverflowError",
    "Decryptor",
    "Encoder",
    "Encryptor",
    "Evaluator",
    "GaloisKey",
    "GaloisKeys",
    "InsecureParametersWarning",
    "KeyGenerator",
    "KeyPlan",
    "KeyPlanError",
    "LinearTransform",
    "MissingKeyError",
    "OutOfLevelsError",
    "ParamsMismatchError",
    "Plaintext",
    "PublicKey",
    "RelinKey",
    "ScaleMismatchError",
    "ScaleOutOfBoundsError",
    "SecretKey",
    "SwitchingKey",
    "chebyshev_coefficients",
    "circuits",
    "debug",
    "dumps",
    "key_switch",
    "loads",
    "plan_rotation_keys",
]
