"""Where the user's code is: the call site outside a module, and where a function is defined.

The debugging meters (`ren.ckks.debug`'s precision meter and level budget, `ren.bfv.debug`'s
noise-budget meter) name the user's line for every operation they record; both need the same
look-ups and the same way of writing them, so they live here, below both schemes.
"""

from __future__ import annotations

import linecache
import sys
from collections.abc import Callable
from typing import Any

from ren.errors import RenError


def call_site(skip: str) -> tuple[str, str]:
    """("file:line", the source line) of the nearest caller whose code is not in the file
    `skip` (the module asking): the user's call into it."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == skip:
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return "?", ""
    file, line = frame.f_code.co_filename, frame.f_lineno
    return f"{file}:{line}", linecache.getline(file, line).strip()


def defined_at(fn: Callable[..., Any]) -> tuple[str, str] | None:
    """("file:line", the source line) of the ``def`` of `fn` (None: no Python code, e.g. a
    partial or a builtin)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    return (f"{code.co_filename}:{code.co_firstlineno}",
            linecache.getline(code.co_filename, code.co_firstlineno).strip())


def located(e: RenError, where: tuple[str, str]) -> RenError:
    """An error of the same class as `e` with the user's line (`call_site`) in front."""
    return type(e)(f"{where[0]}: `{where[1]}`: {e}")


def short_where(where: str) -> str:
    """A "file:line" as the file's base name and the line (for a table)."""
    file, _, line = where.rpartition(":")
    return f"{file.rsplit('/', 1)[-1]}:{line}"
