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


class MissingKeyError(RenError, LookupError):
    """The evaluator lacks the key an operation needs (relinearization, a rotation step,
    conjugation)."""


class InsecureParametersWarning(UserWarning):
    """Parameters below 128-bit security were accepted because ``insecure=True`` was passed."""


def warn_insecure(message: str) -> None:
    warnings.warn(message, InsecureParametersWarning, stacklevel=3)
