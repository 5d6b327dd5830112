"""Debug switches: one registry of documented environment variables.

Each switch is read from the environment when Ren starts and can be changed from Python, for a
block of code, with `settings.override(NAME=value)`::

    with ren.settings.override(REN_CHECK=1):
        p.realize()      # verify every pass while scheduling this realization
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

from ren.errors import ParameterError, check_int


@dataclass(frozen=True)
class Switch:
    name: str
    default: int
    doc: str


SWITCHES = {s.name: s for s in (
    Switch("REN_DEBUG", 0, "1: one line per realize; 2: one line per exec unit; 3: also the graph "
                           "after each pass"),
    Switch("REN_CHECK", 0, "1: verify that every scheduling pass preserves values (slow; uses the "
                           "IR interpreter)"),
    Switch("REN_NO_MEMPLAN", 0, "1: give every intermediate buffer its own allocation instead of "
                                "packing them into an arena"),
    Switch("REN_NO_ELISION", 0, "1: pass 4 keeps the NTT/INTT round trips around NTT-domain "
                                "rescales and mod-ups (no transform elision), for comparisons"),
    Switch("REN_JIT", 1, "0: run jitted functions eagerly (no capture or replay)"),
    Switch("REN_CPU_THREADS", 1, "OpenMP threads of the compiled 'cpu' device's kernels (limbs are "
                                 "split between them; 1: single-threaded)"),
)}

_values: dict[str, int] = {}


def _read_env(name: str) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return SWITCHES[name].default
    try:
        return int(raw)
    except ValueError:
        raise ParameterError(f"{name}={raw!r}: expected an integer") from None


def get(name: str) -> int:
    """The current value of switch `name`."""
    if not isinstance(name, str) or name not in SWITCHES:
        raise ParameterError(f"unknown switch {name!r}; known: {', '.join(SWITCHES)}")
    if name not in _values:
        _values[name] = _read_env(name)
    return _values[name]


def override(**values: int) -> contextlib.AbstractContextManager[None]:
    """Set switches for the duration of a block.

    The names and values are checked here, at the call, so a typo fails on its own line and
    leaves every switch as it was.
    """
    for name, value in values.items():
        get(name)  # rejects unknown names
        check_int(value, f"settings.override: {name}", hint="switches take ints such as 0 or 1")
    return _override({name: int(value) for name, value in values.items()})


@contextlib.contextmanager
def _override(values: dict[str, int]) -> Iterator[None]:
    saved = {name: get(name) for name in values}
    _values.update(values)
    try:
        yield
    finally:
        _values.update(saved)


def describe() -> str:
    """A table of the switches with their current values."""
    return "\n".join(f"{s.name}={get(s.name)}  {s.doc}" for s in SWITCHES.values())
