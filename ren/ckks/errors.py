"""CKKS-specific errors: each is a subclass of the `ren.errors` class it refines, so a handler for
the general class still catches it."""

from __future__ import annotations

import warnings

from ren.errors import LevelError, ParameterError, RenError


class ParamsMismatchError(ParameterError):
    """Two CKKS objects were made under different `CKKSParams` (or an object does not belong to
    the evaluator's parameters)."""


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


class MissingKeyError(RenError, LookupError):
    """The evaluator lacks the key an operation needs (relinearization, a rotation step,
    conjugation)."""


class InsecureParametersWarning(UserWarning):
    """Parameters below 128-bit security were accepted because ``insecure=True`` was passed."""


def warn_insecure(message: str) -> None:
    warnings.warn(message, InsecureParametersWarning, stacklevel=3)
