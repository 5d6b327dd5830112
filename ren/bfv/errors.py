"""BFV errors: each is a subclass of the `ren.errors` class it refines, so a handler for the
general class still catches it.  The scheme-independent ones (parameters mismatch, missing key,
insecure parameters) are the RLWE layer's, re-exported here, and so are the serialization
errors of `ren.rlwe.serialize` (all `ren.errors.SerializationError` subclasses) that
`ren.bfv.serialize.loads` raises."""

from __future__ import annotations

from ren.errors import ParameterError, RenError
from ren.rlwe.errors import InsecureParametersWarning, MissingKeyError, ParamsMismatchError
from ren.rlwe.serialize import (
    CorruptedDataError,
    FingerprintMismatchError,
    KindMismatchError,
    TruncatedDataError,
)


class PlaintextModulusError(ParameterError):
    """The plaintext modulus t is unusable: below 2, or so large for the chain Q that a fresh
    ciphertext would have (almost) no noise budget."""


class BatchingError(PlaintextModulusError):
    """Batch (slot) encoding was asked for with a t that does not batch: t must be a prime
    ≡ 1 (mod 2N) below 2^31 (Ren's u32 rings)."""


class ChainSecurityError(ParameterError):
    """The modulus Q·P is too large for 128-bit security at this N (HE standard)."""


class WrongResultError(RenError, ArithmeticError):
    """A decryption differs from the exact plaintext result (`ren.bfv.debug`): the noise
    outgrew the budget somewhere; the message names the first wrong line."""


__all__ = [
    "BatchingError",
    "ChainSecurityError",
    "CorruptedDataError",
    "FingerprintMismatchError",
    "InsecureParametersWarning",
    "KindMismatchError",
    "MissingKeyError",
    "ParamsMismatchError",
    "PlaintextModulusError",
    "TruncatedDataError",
    "WrongResultError",
]
