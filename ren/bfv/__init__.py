"""BFV on Ren's lazy polynomials: exact integer arithmetic mod t, on the RLWE layer's keys.

    from ren.bfv import BFVParams, Encoder, Encryptor, Decryptor, Evaluator, galois_keys
    from ren.rlwe import KeyGenerator
    params = BFVParams.preset("N13")                 # t = 65537, 128-bit secure
    kg = KeyGenerator(params)
    enc, ev = Encoder(params), Evaluator(params, kg.relin_key(), galois_keys(kg, [1]))
    ct = Encryptor(params, kg.public_key()).encrypt(enc.encode([1, 2, 3]))
    ct = ev.rotate_columns(ev.multiply(ct, ct), 1)
    Encoder(params).decode(Decryptor(params, kg.secret_key()).decrypt(ct))[:2]   # [4, 9]

Layout: one package for the integer schemes (`params`, `encoder`, `evaluator`); BGV is
`bgv_params` (`BGVParams`, a `BFVParams` with levels) and `bgv` (`BGVEncryptor`, `BGVDecryptor`,
`BGVEvaluator`, modulus switching with the t-correction), sharing the plaintexts, the encoder
and `galois_keys`.  See
`ren.bfv.evaluator` for the scale-invariant multiplication in RNS.
"""

from ren.bfv import debug
from ren.bfv.bgv import BGVCiphertext, BGVDecryptor, BGVEncryptor, BGVEvaluator
from ren.bfv.bgv_params import PRESETS as BGV_PRESETS
from ren.bfv.bgv_params import BGVLevelError, BGVParams, DepthExhaustedError
from ren.bfv.encoder import COLUMN_GENERATOR, Encoder, Plaintext
from ren.bfv.errors import (
    BatchingError,
    ChainSecurityError,
    CorruptedDataError,
    FingerprintMismatchError,
    InsecureParametersWarning,
    KindMismatchError,
    MissingKeyError,
    ParamsMismatchError,
    PlaintextModulusError,
    TruncatedDataError,
    WrongResultError,
)
from ren.bfv.evaluator import (
    Ciphertext,
    Decryptor,
    Encryptor,
    Evaluator,
    column_element,
    galois_keys,
)
from ren.bfv.params import PRESETS, BFVParams, batches
from ren.bfv.serialize import dumps, loads, serialized_size

__all__ = [
    "BGV_PRESETS",
    "COLUMN_GENERATOR",
    "PRESETS",
    "BFVParams",
    "BGVCiphertext",
    "BGVDecryptor",
    "BGVEncryptor",
    "BGVEvaluator",
    "BGVLevelError",
    "BGVParams",
    "BatchingError",
    "ChainSecurityError",
    "Ciphertext",
    "CorruptedDataError",
    "Decryptor",
    "DepthExhaustedError",
    "Encoder",
    "Encryptor",
    "Evaluator",
    "FingerprintMismatchError",
    "InsecureParametersWarning",
    "KindMismatchError",
    "MissingKeyError",
    "ParamsMismatchError",
    "Plaintext",
    "PlaintextModulusError",
    "TruncatedDataError",
    "WrongResultError",
    "batches",
    "column_element",
    "debug",
    "dumps",
    "galois_keys",
    "loads",
    "serialized_size",
]
