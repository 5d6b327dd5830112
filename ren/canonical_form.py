"""Canonical forms: a value as a text that is the same in every process exactly when the values
are equal.

The plan cache names an entry by the digest of its graph's structure key
(`ren.replay.structure_key`) and the settings it was scheduled under.  Pickle's bytes cannot serve
(they depend on which equal objects are shared and on caches kept in an object), so `canonical`
writes a value as nested tuples of atoms and `structure_text` writes a structure key compactly.
Nothing here knows about plans or files; `ren.plan_cache` is the one user.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
from typing import Any

import numpy as np


class NoCanonicalForm(Exception):
    """A value of a type `canonical` has no form for (its graph is compiled every time)."""


def canonical(x: Any, memo: dict[int, tuple[Any, Any]] | None = None) -> Any:
    """`x` as nested tuples of numbers, strings, None and bools whose repr is the same in every
    process exactly when the values are equal (pickle's bytes are not: they depend on which
    equal objects are shared and on caches kept in an object).  Raises NoCanonicalForm for a
    type it does not know (that graph is then compiled every time).  `memo` (by id, holding
    each object so that no id is reused meanwhile) shares the forms of repeated objects."""
    if x is None or type(x) in _ATOMS:
        return x
    if memo is not None:
        got = memo.get(id(x))
        if got is not None and got[0] is x:
            return got[1]
    form = _form(x, memo)
    if memo is not None:
        memo[id(x)] = (x, form)
    return form


_ATOM_ORDER = (bool, int, float, str)  # bool before int: a bool subclass is an int too
_ATOMS = frozenset(_ATOM_ORDER)


def _form(x: Any, memo: dict[int, tuple[Any, Any]] | None) -> Any:
    if isinstance(x, _ATOM_ORDER) and not isinstance(x, enum.Enum):
        base = next(b for b in _ATOM_ORDER if isinstance(x, b))  # a subclass: type and value
        return (_qualname(type(x)), base(x))
    if isinstance(x, (tuple, list)):  # a named tuple keeps its type
        name = type(x).__name__ if type(x) in (tuple, list) else _qualname(type(x))
        # (atoms inline: a graph's key is mostly tuples of small ints)
        return (name, tuple([v if v is None or type(v) in _ATOMS else canonical(v, memo)
                             for v in x]))
    if isinstance(x, (set, frozenset)):
        return ("set", tuple(sorted(repr(canonical(v, memo)) for v in x)))
    if isinstance(x, dict):
        return ("dict", tuple(sorted((repr(canonical(k, memo)), canonical(v, memo))
                                     for k, v in x.items())))
    if isinstance(x, enum.Enum):
        return ("enum", _qualname(type(x)), x.name)
    if isinstance(x, type):
        return ("type", _qualname(x))
    if isinstance(x, np.ndarray):
        return ("ndarray", x.dtype.str, x.shape, hashlib.sha256(x.tobytes()).hexdigest())
    if isinstance(x, np.generic):
        return ("scalar", x.dtype.str, x.item())
    if dataclasses.is_dataclass(x):  # the fields equality compares: equal means the same form
        return (_qualname(type(x)), tuple((f.name, canonical(getattr(x, f.name), memo))
                                          for f in dataclasses.fields(x) if f.compare))
    raise NoCanonicalForm(type(x))


def _qualname(t: type) -> str:
    return f"{t.__module__}.{t.__qualname__}"


def structure_text(key: tuple) -> str:
    """A text of `ren.replay.structure_key`'s key that is the same in every process exactly
    when the keys are equal, as ``repr(canonical(key))`` is, in a fraction of its time and
    length: a node's op, dtype and argument are written as the repr of their canonical forms,
    and each such text written before is written again as ``@k`` (the k-th distinct text), so
    the ring of ~1,500 nodes is spelled out once.  The text decodes back to the key (a back
    reference names a text written earlier in it), so equal texts mean equal keys.  A key not
    of the structure key's shape is written as ``repr(canonical(key))``."""
    if not (key and isinstance(key[-1], tuple) and all(
            type(n) is tuple and len(n) == 4 and type(n[3]) is tuple for n in key[:-1])):
        return repr(canonical(key, {}))
    memo: dict[int, tuple[Any, str]] = {}  # id -> (object, the repr of its canonical form)
    forms: dict[int, tuple[Any, Any]] = {}  # canonical's memo, shared
    numbers: dict[str, str] = {}  # a text written already -> its back reference

    def piece(x: Any) -> str:
        if x is None or type(x) in _ATOMS:
            return repr(x)
        got = memo.get(id(x))
        if got is not None and got[0] is x:
            text = got[1]
        else:
            text = repr(canonical(x, forms))
            memo[id(x)] = (x, text)
        ref = numbers.get(text)
        if ref is None:  # first time: spelled out, and numbered for later back references
            numbers[text] = f"@{len(numbers)}"
            return text
        return ref

    parts = []
    for op, dtype, arg, src in key[:-1]:
        if not all(type(i) is int for i in src):
            return repr(canonical(key, {}))
        if type(arg) is tuple and len(arg) == 2:  # (type of the argument, the argument)
            a = f"({piece(arg[0])}, {piece(arg[1])})"
        else:
            a = f"[{piece(arg)}]"
        parts.append(f"{piece(op)} {piece(dtype)} {a} {src!r}")
    parts.append(repr(canonical(key[-1], forms)))
    return "\n".join(parts)
