"""CKKS-specific errors: each is a subclass of the `ren.errors` class it refines, so a handler for
the general class still catches it.  The scheme-independent ones (parameters mismatch, missing
key, insecure parameters) are the RLWE layer's, re-exported here."""

from __future__ import annotations

from ren.errors import LevelError, ParameterError, RenError
from ren.rlwe.errors import InsecureParametersWarning, MissingKeyError, ParamsMismatchError


class ScaleMismatchError(LevelError):
    """Two operands of an addition carry different scales that cannot be reconciled without
    spending a level."""


class OutOfLevelsError(LevelError):
    """A ciphertext at level 0 was asked to rescale (or an operation needs a level it does not
    have)."""


class ScaleOutOfBoundsError(LevelError, ParameterError):
    """A scale the modulus at its level cannot hold: below 1 (values round away), or so large
    that a message of magnitude 1 (times the operation's constant) reaches Q_level/2 and wraps
    around.  Also a ParameterError, since a scale is usually an argument."""


class DecodeOverflowError(RenError, OverflowError):
    """Decoding produced values beyond float64's range: the plaintext is no encoding under its
    scale (typically a ciphertext decrypted with another secret key, or a message that overflowed
    the modulus)."""


class KeyPlanError(RenError):
    """The rotation-key planner (`ren.ckks.keyplan`) could not trace a function: it read a value
    (planning runs no kernels) or got inputs that are not ciphertexts or levels."""


__all__ = [
    "DecodeOverflowError",
    "InsecureParametersWarning",
    "KeyPlanError",
    "MissingKeyError",
    "OutOfLevelsError",
    "ParamsMismatchError",
    "ScaleMismatchError",
    "ScaleOutOfBoundsError",
]
