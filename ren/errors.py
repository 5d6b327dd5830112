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


class PipelineError(ParameterError):
    """A pipeline (`ren.passes.Pipeline`) that cannot be built or read: an unknown pass name, a
    required pass removed (the message names the later pass that needs it), a bad text spec, two
    passes of one name, a user pass that is not a `ren.passes.Pass`."""


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


# Every public function of ren.ckks, ren.rlwe, ren.distributed and the circuits checks its
# arguments with these few functions, so that a wrong type, NaN, a negative count or a size that
# would run for hours is one clear ParameterError (or the subclass the caller names), never a bare
# TypeError from deep inside NumPy.  tests/test_api_fuzz.py walks the public API to keep it so.
def _fail(error: type[RenError], what: str, expected: str, value: Any, hint: str) -> RenError:
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return error(f"{what} must be {expected}, got {type(value).__name__} {shown}"
                 + (f"; {hint}" if hint else ""))


def check_int_range(value: Any, what: str, lo: int | None = None, hi: int | None = None,
                    error: type[RenError] = ParameterError, hint: str = "") -> int:
    """`check_int`, then lo <= value <= hi (either bound may be None).  The bounds are part of
    the message, so a caller learns the allowed range from the error alone."""
    if lo is not None and hi is not None:
        expected = f"an int in [{lo}, {hi}]"
    elif lo is not None:
        expected = f"an int >= {lo}"
    elif hi is not None:
        expected = f"an int <= {hi}"
    else:
        expected = "an int"
    if not is_int(value) or (lo is not None and value < lo) or (hi is not None and value > hi):
        raise _fail(error, what, expected, value, hint)
    return int(value)


def check_real_range(value: Any, what: str, lo: float | None = None, hi: float | None = None,
                     error: type[RenError] = ParameterError, hint: str = "",
                     lo_open: bool = False) -> float:
    """`check_real`, then lo <= value <= hi (lo < value with `lo_open`)."""
    low = "" if lo is None else (f"> {lo}" if lo_open else f">= {lo}")
    high = "" if hi is None else f"<= {hi}"
    expected = "a finite real number" + (f" {low}" if low else "") + (
        f"{' and' if low and high else ''} {high}" if high else "")
    ok = (isinstance(value, numbers.Real) and not isinstance(value, bool)
          and math.isfinite(value))
    if ok and lo is not None:
        ok = value > lo if lo_open else value >= lo
    if ok and hi is not None:
        ok = value <= hi
    if not ok:
        raise _fail(error, what, expected, value, hint)
    return float(value)


def check_number(value: Any, what: str, error: type[RenError] = ParameterError,
                 hint: str = "") -> complex:
    """A finite int, float or complex (NumPy scalars included) as a Python complex.  One rule for
    every coefficient and value Ren takes: bool is a flag and str is text, so both are refused,
    like NaN and infinity."""
    if isinstance(value, (bool, str, bytes)) or not isinstance(value, numbers.Number):
        raise _fail(error, what, "a finite int, float or complex number", value, hint)
    try:
        z = complex(value)  # type: ignore[call-overload]  # any Number; failures caught
    except (TypeError, ValueError, OverflowError):
        raise _fail(error, what, "a finite int, float or complex number", value, hint) from None
    if not (math.isfinite(z.real) and math.isfinite(z.imag)):
        raise _fail(error, what, "a finite int, float or complex number", value, hint)
    return z


def check_bool(value: Any, what: str, error: type[RenError] = ParameterError) -> bool:
    """A real bool (NumPy's too); 0/1 or a string are refused rather than read as a flag."""
    if not isinstance(value, bool) and type(value).__name__ != "bool_":
        raise _fail(error, what, "True or False", value, "")
    return bool(value)


def check_choice(value: Any, what: str, choices: Any,
                 error: type[RenError] = ParameterError) -> Any:
    """`value` if it is one of `choices` (compared with ==, unhashable values refused)."""
    try:
        ok = any(type(value) is type(c) and value == c for c in choices)
    except Exception:  # an odd __eq__ is a wrong value, not a crash
        ok = False
    if not ok:
        listed = ", ".join(repr(c) for c in choices)
        raise _fail(error, what, f"one of {listed}", value, "")
    return value


def check_callable(value: Any, what: str, error: type[RenError] = ParameterError,
                   hint: str = "") -> Any:
    """`value` if it can be called."""
    if not callable(value):
        raise _fail(error, what, "callable", value, hint)
    return value


def check_instance(value: Any, cls: type | tuple[type, ...], what: str,
                   error: type[RenError] = ParameterError, hint: str = "") -> Any:
    """`value` if it is an instance of `cls` (a class or a tuple of classes)."""
    if not isinstance(value, cls):
        names = (" or ".join(c.__name__ for c in cls) if isinstance(cls, tuple)
                 else cls.__name__)
        raise _fail(error, what, f"a {names}", value, hint)
    return value


def check_interval(value: Any, what: str, error: type[RenError] = ParameterError) -> tuple[
        float, float]:
    """A pair (a, b) of finite reals with a < b, as floats."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)) or len(value) != 2:
        raise _fail(error, what, "a pair (a, b) of finite reals with a < b", value, "")
    a = check_real(value[0], f"{what}[0]", error)
    b = check_real(value[1], f"{what}[1]", error)
    if not a < b:
        raise _fail(error, what, "a pair (a, b) of finite reals with a < b", value, "")
    return a, b


def check_sequence(value: Any, what: str, min_len: int = 0, max_len: int | None = None,
                   error: type[RenError] = ParameterError, hint: str = "") -> list[Any]:
    """`value` as a list: any sized iterable except str/bytes/dict (a string is not a list of
    characters here), with min_len <= len <= max_len."""
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__len__") or not hasattr(
            value, "__iter__"):
        raise _fail(error, what, "a list or tuple", value, hint)
    items = list(value)
    if len(items) < min_len or (max_len is not None and len(items) > max_len):
        size = (f"at least {min_len}" if max_len is None else
                f"between {min_len} and {max_len}")
        raise _fail(error, what, f"a sequence of {size} items (has {len(items)})", value, hint)
    return items
