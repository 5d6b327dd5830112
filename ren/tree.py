"""Trees of Polys: nested lists, tuples, dicts, namedtuples and dataclasses (CKKS `Ciphertext`
and `Plaintext` among them) whose leaves are Polys and other values.

    structure = flatten(x, polys, others)      # appends the leaves, returns a hashable structure
    y = unflatten(structure, iter(polys), iter(others))
    leaf_paths(structure, "ct")      # (["ct.parts[0]", ...], ["ct.scale", ...])

The structure records the container types, dict keys and dataclass field names, with the markers
`POLY` and `OTHER` where the leaves were, so two trees of the same shape have equal structures.
Dataclasses are rebuilt field by field without running ``__init__`` (so their checks do not run
again).  `is_scalar` says whether a non-Poly leaf is a plain value (used by `ren.jit`).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import numbers
from typing import Any

import numpy as np

from ren.device import Buffer
from ren.errors import ParameterError, RenError
from ren.node import Node
from ren.poly import Poly

POLY, OTHER = "P", "S"

__all__ = ["OTHER", "POLY", "flatten", "is_scalar", "leaf_paths", "leaves", "unflatten"]


def leaves(x: Any, types: type | tuple[type, ...]) -> Any:
    """The objects of `types` in a tree of lists, tuples, dicts and dataclasses, in order (an
    object of `types` is yielded whole, not searched further; other leaves are skipped)."""
    if isinstance(x, types):
        yield x
    elif isinstance(x, list | tuple):
        for v in x:
            yield from leaves(v, types)
    elif isinstance(x, dict):
        for v in x.values():
            yield from leaves(v, types)
    elif dataclasses.is_dataclass(x) and not isinstance(x, type):
        for name in _field_names(type(x)):
            yield from leaves(getattr(x, name), types)


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def flatten(x: Any, polys: list[Poly], others: list[Any], seen: set[int] | None = None,
            error: type[RenError] = ParameterError) -> Any:
    """The structure of `x` (hashable); its Polys and other leaves appended in order."""
    if isinstance(x, Poly):
        polys.append(x)
        return POLY
    t: type = type(x)
    if t is list or t is tuple or t is dict or (isinstance(x, tuple) and hasattr(t, "_fields")) \
            or (dataclasses.is_dataclass(x) and not isinstance(x, type)):
        seen = set() if seen is None else seen
        if id(x) in seen:
            raise error(f"a {t.__name__} contains itself: trees of Polys cannot have cycles")
        seen.add(id(x))
        try:
            if t is list or t is tuple:
                return (t.__name__, tuple(flatten(v, polys, others, seen, error) for v in x))
            if t is dict:
                return ("dict", tuple(x), tuple(flatten(v, polys, others, seen, error)
                                                for v in x.values()))
            if isinstance(x, tuple):  # a namedtuple
                return ("ntuple", t, tuple(flatten(v, polys, others, seen, error) for v in x))
            names = _field_names(t)
            return ("dc", t, names, tuple(flatten(getattr(x, n), polys, others, seen, error)
                                          for n in names))
        finally:
            seen.discard(id(x))
    others.append(x)
    return OTHER


def unflatten(tree: Any, polys: Any, others: Any) -> Any:
    """The tree of structure `tree` with leaves taken from the iterators `polys`, `others`."""
    if tree == POLY:
        return next(polys)
    if tree == OTHER:
        return next(others)
    tag = tree[0]
    if tag == "list":
        return [unflatten(c, polys, others) for c in tree[1]]
    if tag == "tuple":
        return tuple(unflatten(c, polys, others) for c in tree[1])
    if tag == "dict":
        return {k: unflatten(c, polys, others) for k, c in zip(tree[1], tree[2])}
    if tag == "ntuple":
        return tree[1](*(unflatten(c, polys, others) for c in tree[2]))
    if tag == "dc":  # set every field, without running __init__ / __post_init__ again
        obj = tree[1].__new__(tree[1])
        for name, c in zip(tree[2], tree[3]):
            object.__setattr__(obj, name, unflatten(c, polys, others))
        return obj
    # ("args", names, children): named roots, e.g. a function's arguments
    return tuple(unflatten(c, polys, others) for c in tree[2])


def _paths(tree: Any, prefix: str, polys: list[str], others: list[str]) -> None:
    if tree == POLY:
        polys.append(prefix)
        return
    if tree == OTHER:
        others.append(prefix)
        return
    tag = tree[0]
    if tag in ("list", "tuple"):
        children = [(f"{prefix}[{i}]", c) for i, c in enumerate(tree[1])]
    elif tag == "dict":
        children = [(f"{prefix}[{k!r}]", c) for k, c in zip(tree[1], tree[2])]
    elif tag == "ntuple":
        children = [(f"{prefix}.{n}", c) for n, c in zip(tree[1]._fields, tree[2])]
    elif tag == "dc":
        children = [(f"{prefix}.{n}", c) for n, c in zip(tree[2], tree[3])]
    else:
        children = list(zip(tree[1], tree[2]))
    for path, c in children:
        _paths(c, path, polys, others)


def leaf_paths(tree: Any, prefix: str = "") -> tuple[list[str], list[str]]:
    """The path of every Poly leaf and every other leaf, as one would write it in Python."""
    polys: list[str] = []
    others: list[str] = []
    _paths(tree, prefix, polys, others)
    return polys, others


def is_scalar(x: Any) -> bool:
    """A plain value: a number, string, enum, None, or an object with value equality and a hash
    (parameter objects such as CKKSParams or RingSpec) — not storage, a node or an array."""
    if x is None or isinstance(x, numbers.Number | str | bytes | enum.Enum):
        return True
    if isinstance(x, Node | Buffer | np.ndarray):
        return False
    t = type(x)
    return t.__eq__ is not object.__eq__ and t.__hash__ is not None
