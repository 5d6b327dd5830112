"""One call of a jitted function, as `ren.jit` sees it: its arguments flattened and its cache key.

`JitCall` binds the arguments to the function's signature, flattens them into input Polys and
frozen scalars (`ren.tree.flatten`), builds the cache key (structure, each input's spec, the
static arguments, the pipeline in force), and hands the inputs to a capture as Polys over
`parameter` buffers.  `ren.jit` decides what to do with a call (capture, replay, refuse); this
module only says what the call is.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import numpy as np

from ren.device import Buffer
from ren.errors import JitError
from ren.ir import as_ring, is_const, storage_buffer
from ren.node import Node
from ren.ops import DType, Op
from ren.passes.pipeline import Pipeline, current_pipeline
from ren.poly import Poly, realize_polys
from ren.realization import is_realized, parameter
from ren.spec import PolySpec
from ren.tree import flatten, leaf_paths


def freeze(x: Any) -> Any:
    """A scalar argument as a plan keeps it: an array is copied (the caller may change its own)."""
    return x.copy() if isinstance(x, np.ndarray) else x


def same_value(a: Any, b: Any) -> bool:
    """Whether frozen scalar `a` and the call's `b` are the same value (and type)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b))
    try:
        return bool(a == b)
    except Exception:
        return False


def leaf_key(p: Poly) -> tuple:
    """An input Poly's part of the cache key: its spec and dtype (and a constant's value)."""
    n = p.node
    if is_const(n):
        return (p.spec, n.dtype, "const", n.src[0].arg[0])
    return (p.spec, n.dtype)


def describe_leaf(key: tuple) -> str:
    """`leaf_key`'s key in words, for a message that names the input no plan matches."""
    s: PolySpec = key[0]
    const = f" constant {key[3]}" if len(key) > 2 else ""
    return f"{s.ring.short()} {s.domain.name} on {s.device}{const}"


class JitCall:
    """A call's arguments, flattened: input Polys, frozen scalars, structure and cache key."""

    __slots__ = ("bound", "key", "leaves", "name", "scalars", "structure")

    def __init__(self, name: str, signature: inspect.Signature, static: tuple[str, ...],
                 args: tuple, kwargs: dict, pipeline: Pipeline | None = None):
        self.name = name
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as e:
            raise JitError(f"{name}: {e}") from None
        bound.apply_defaults()
        self.bound = bound
        arguments = bound.arguments
        statics = []
        if static:
            for s in static:
                value = arguments.get(s)
                try:
                    hash(value)
                except TypeError:
                    raise JitError(f"{name}: static argument `{s}` must be hashable (it is part "
                                   f"of the cache key), got {type(value).__name__}") from None
                statics.append((s, value))
            arguments = {k: (None if k in static else v) for k, v in arguments.items()}
        leaves: list[Poly] = []
        scalars: list[Any] = []
        seen: set[int] = set()
        children = tuple(flatten(v, leaves, scalars, seen, JitError) for v in arguments.values())
        self.structure = ("args", tuple(arguments), children)
        self.leaves, self.scalars = leaves, scalars
        # the pipeline is in the key: a plan scheduled under one never replays under another
        pipe_key = (pipeline or current_pipeline()).key
        self.key = (self.structure, tuple(leaf_key(p) for p in leaves), tuple(statics),
                    pipe_key)

    def paths(self) -> tuple[list[str], list[str]]:
        return leaf_paths(self.structure)

    def realize_inputs(self) -> None:
        pending = [p for p in self.leaves if not is_realized(p.node)]
        if pending:
            realize_polys(pending)

    def check_distinct(self) -> None:
        """One buffer passed as two inputs is refused (each input has its own plan slot)."""
        where: dict[tuple, int] = {}
        for i, p in enumerate(self.leaves):
            n = p.node
            if is_const(n):
                continue
            b = storage_buffer(n)
            k = (id(b), 0, b.shape) if b.base is None else (id(b.base), b.offset, b.shape)
            j = where.setdefault(k, i)
            if j != i:
                paths = self.paths()[0]
                raise JitError(
                    f"{self.name}: arguments `{paths[j]}` and `{paths[i]}` are the same buffer; "
                    "a captured plan binds every input to a slot of its own.  Use one argument "
                    "for both (def f(x): ... x ... x), or pass a copy")

    def buffers(self, leaf_of_param: Sequence[int]) -> list[Buffer]:
        leaves = self.leaves
        return [storage_buffer(leaves[j].node) for j in leaf_of_param]

    def parameters(self) -> tuple[list[Buffer], list[int], list[Poly]]:
        """The inputs as the function sees them while it is captured: (a `parameter` buffer per
        non-constant input, the input leaf of each, every leaf as a Poly over its parameter)."""
        params: list[Buffer] = []
        leaf_of_param: list[int] = []
        polys = []
        for j, p in enumerate(self.leaves):
            n = p.node
            if not is_const(n):
                params.append(parameter(storage_buffer(n)))
                leaf_of_param.append(j)
                n = as_ring(Node(Op.BUFFER, DType.U32, (), params[-1]), *n.arg)
            polys.append(Poly(n))
        return params, leaf_of_param, polys
