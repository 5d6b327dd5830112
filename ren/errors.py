"""Ren's error hierarchy.

Every error Ren raises on bad input is a :class:`RenError` subclass.  Messages say what was
expected, what was found, and how to fix it.  Where a built-in exception type fits too
(``ValueError``, ``TypeError``) the class also derives from it, so generic handlers still work.
"""

from __future__ import annotations

import math
import numbers
from typing import Any


class RenError(Exception):
    """Base class of every error Ren raises on purpose."""


class ParameterError(RenError, ValueError):
    """Invalid parameters: a ring dimension that is not a power of two, a modulus that is not an
    NTT-friendly prime, a bad sampler argument, an unknown option."""


class SettingsError(ParameterError):
    """A debug switch (`ren.settings`) has a value of the wrong kind or outside its allowed
    range, from the environment or from `settings.override`; the message names the range."""


class TruthValueError(RenError, TypeError):
    """A lazy value was used where Python needs a bool (``if p:``, ``p and q``): it has no value
    until it is realized, so it has no truth value either."""


class OperandError(RenError, TypeError):
    """An operator Ren does not define for these operands: ``poly + 1.5``, ``poly / 2``,
    ``poly ** 2``, ``poly < q``, ``np.array(...) * poly``.  The message says what is supported."""


class ShapeError(ParameterError):
    """Data of the wrong size or shape, e.g. a coefficient list whose length is not N."""


class RingMismatchError(RenError, ValueError):
    """Operands live in different rings, or a ring conversion is not possible."""


class DomainError(RenError, ValueError):
    """Operands are in different domains (coefficient vs NTT) where one domain is required."""


class DeviceError(RenError, ValueError):
    """Operands live on different devices, or a device name is unknown."""


class LevelError(RenError, ValueError):
    """A level or scale problem: rescaling by moduli the ring does not end with, dropping
    more moduli than exist, mismatched CKKS levels or scales."""


class SerializationError(RenError, ValueError):
    """Serialized data is truncated, corrupted, of an unknown version, or inconsistent."""


class ScheduleError(RenError, RuntimeError):
    """The scheduler could not lower a graph: a rewrite did not reach a fixed point, a pass
    invariant does not hold, or the graph contains an op a pass cannot handle."""


class ContractError(ScheduleError):
    """A pass left a graph its contract (`ren.contracts`) forbids: a bug in that pass, or a graph
    that skipped an earlier pass.  The message names the pass, the condition and the node."""


class MemoryPlanError(RenError, RuntimeError):
    """The memory planner found an inconsistent schedule (e.g. a buffer used before it is
    written)."""


class RealizeError(RenError, RuntimeError):
    """Execution of a schedule failed, e.g. a buffer view out of bounds of its base."""


class KernelCompileError(RealizeError):
    """A rendered kernel did not compile (NVRTC or the host C compiler); the message carries the
    compiler's log."""


class JitError(RenError, RuntimeError):
    """JIT capture or replay was misused: a changed frozen scalar, an explicit realize() or
    random generation inside the jitted body, or inputs that do not match the captured plan."""


class InspectError(RenError, ValueError):
    """`ren-inspect` / `ren.viz` could not do what was asked: a program that does not exist,
    does not define what is needed or raised while building, an unknown pass, a missing golden
    directory."""


# -- argument checks shared by every layer (this module imports nothing from Ren) --------------
def is_int(value: Any) -> bool:
    """True for Python and NumPy integers.  bool is a flag, not a number, here: False."""
    # (type(value) is int first: the ABC check costs a microsecond on every call)
    return type(value) is int or (isinstance(value, numbers.Integral)
                                  and not isinstance(value, bool))


def check_int(value: Any, what: str, error: type[RenError] = ParameterError,
              hint: str = "") -> int:
    """`value` as a Python int, or `error` saying that `what` must be an int (never coerces a
    float, str or bool, which would silently change the caller's value)."""
    if not is_int(value):
        raise error(f"{what} must be an int, got {type(value).__name__} {value!r}"
                    + (f"; {hint}" if hint else ""))
    return int(value)


def check_real(value: Any, what: str, error: type[RenError] = ParameterError) -> float:
    """`value` as a finite float; ints and floats only (no str, complex, bool, nan or inf)."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not math.isfinite(value):
        raise error(f"{what} must be a finite real number (int or float), got "
                    f"{type(value).__name__} {value!r}")
    return float(value)
