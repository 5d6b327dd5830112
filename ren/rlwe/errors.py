"""Errors and warnings of the RLWE layer that every scheme above it shares (CKKS re-exports them).

Each error is a subclass of the `ren.errors` class it refines, so a handler for the general class
still catches it.
"""

from __future__ import annotations

import warnings

from ren.errors import ParameterError, RenError


class ParamsMismatchError(ParameterError):
    """Two objects were made under different parameters (or an object does not belong to the
    parameters of the key generator, encryptor or evaluator it is given to)."""


class MissingKeyError(RenError, LookupError):
    """The evaluator lacks the key an operation needs (relinearization, a rotation step,
    conjugation)."""


class InsecureParametersWarning(UserWarning):
    """Parameters below 128-bit security were accepted because ``insecure=True`` was passed."""


def warn_insecure(message: str, stacklevel: int = 3) -> None:
    """Warn with an `InsecureParametersWarning` (`stacklevel` counts from this function)."""
    warnings.warn(message, InsecureParametersWarning, stacklevel=stacklevel)


__all__ = ["InsecureParametersWarning", "MissingKeyError", "ParamsMismatchError", "warn_insecure"]
