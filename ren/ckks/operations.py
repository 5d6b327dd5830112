"""Which CKKS operation built each part of a lazy graph, and the level and scale of every
ciphertext it returned: what ``ren-inspect`` groups large graphs by and overlays on nodes.

    with record_operations() as log:
        out = fn(ev, ct)                    # any Evaluator / Bootstrapper code
    log.operations                          # Operation per call, nested calls with their parent
    groups = log.node_groups()              # Node -> the innermost operation that built it

Every public `Evaluator` operation (`OPERATIONS`) and the bootstrapping stages are wrapped by
`operation`: while a log is recording (in this thread or task), a call appends an `Operation`
(its name, the caller's file and line, its parent call) and, when it returns, the Ciphertexts it
returned with their level and log2 scale.  Outside a recording the wrapper costs one context
variable lookup.  Nothing here changes what an operation computes.

`node_groups` assigns each node of the recorded graph to the *innermost* operation that built it:
operations are visited in the order they returned (inner before outer), and each claims the
not yet claimed ancestors of its results.  So a key switch's intermediate nodes belong to the
``relinearize`` inside ``multiply``, and that ``multiply`` to the ``eval_mod`` around it.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ren.ckks.ciphertext import Ciphertext
from ren.ckks.params import log2_exact
from ren.node import Node
from ren.poly import Poly
from ren.tree import leaves

#: the public Evaluator operations (the precision meter shadows exactly these)
OPERATIONS = (
    "add", "sub", "add_plain", "sub_plain", "add_scalar", "sub_scalar", "negate", "multiply",
    "square", "multiply_plain", "multiply_scalar", "multiply_int", "relinearize", "rescale",
    "drop_level", "align", "adjust_scale", "rotate", "conjugate", "rotate_sum", "rotate_hoisted",
    "evaluate_polynomial", "linear_transform",
)

@dataclass(frozen=True)
class Result:
    """One ciphertext an operation returned: its parts' nodes, level and log2 scale."""

    nodes: tuple[Node, ...]
    level: int
    log2_scale: float


@dataclass
class Operation:
    """One recorded call."""

    index: int
    name: str
    where: str  # "file:line" of the call
    parent: int | None  # the operation this one ran inside
    depth: int
    results: list[Result] = field(default_factory=list)
    done: int = -1  # completion order (inner operations finish first)
    inputs: frozenset[Node] = frozenset()  # the nodes of its ciphertext/plaintext arguments
    last: int = -1  # the index of the last operation nested in it (itself if none)

    @property
    def label(self) -> str:
        return f"{self.name} #{self.index}"


@dataclass
class OperationLog:
    """The operations recorded by one `record_operations` block."""

    operations: list[Operation] = field(default_factory=list)
    _stack: list[int] = field(default_factory=list)
    _finished: int = 0

    def begin(self, name: str, where: str, args: tuple = ()) -> Operation:
        parent = self._stack[-1] if self._stack else None
        op = Operation(len(self.operations), name, where, parent, len(self._stack),
                       inputs=frozenset(_nodes(args)))
        self.operations.append(op)
        self._stack.append(op.index)
        return op

    def end(self, op: Operation, result: Any) -> None:
        self._stack.pop()
        op.last = len(self.operations) - 1
        op.done = self._finished
        self._finished += 1
        for ct in leaves(result, Ciphertext):
            op.results.append(Result(tuple(p.node for p in ct.parts), ct.level,
                                     log2_exact(ct.scale)))

    def node_groups(self) -> dict[Node, int]:
        """Node -> index of the innermost operation that built it (see the module doc).  An
        operation's walk stops at its arguments' nodes: a tensor product that ``multiply``
        built and handed to ``relinearize`` stays ``multiply``'s."""
        out: dict[Node, int] = {}
        for op in sorted((o for o in self.operations if o.done >= 0), key=lambda o: o.done):
            # from its results, and from where the calls nested in it stopped (their arguments)
            todo = [n for r in op.results for n in r.nodes]
            for inner in self.operations[op.index + 1:op.last + 1]:
                todo.extend(inner.inputs)
            todo = [n for n in todo if n not in out]
            while todo:
                n = todo.pop()
                if n in out or n in op.inputs:
                    continue
                out[n] = op.index
                todo.extend(s for s in n.src if s not in out)
        return out

    def ciphertext_nodes(self) -> dict[Node, tuple[int, int, Result]]:
        """Each node that is a part of a returned ciphertext -> (operation, part, result) of the
        outermost operation that returned it (``multiply`` rather than the ``relinearize`` whose
        result it passes on: the call the user wrote)."""
        out: dict[Node, tuple[int, int, Result]] = {}
        for op in sorted((o for o in self.operations if o.done >= 0),
                         key=lambda o: (o.depth, o.index)):
            for r in op.results:
                for part, n in enumerate(r.nodes):
                    out.setdefault(n, (op.index, part, r))
        return out


def _nodes(args: Any) -> Iterator[Node]:
    """The nodes of the Polys in an operation's arguments (its ciphertexts' and plaintexts')."""
    return (p.node for p in leaves(args, Poly))


_log: ContextVar[OperationLog | None] = ContextVar("ren_ckks_operation_log", default=None)


@contextlib.contextmanager
def record_operations() -> Iterator[OperationLog]:
    """Record the CKKS operations called inside the block (see the module docstring)."""
    log = OperationLog()
    token = _log.set(log)
    try:
        yield log
    finally:
        _log.reset(token)


def _call_site() -> str:
    """file:line of the operation's caller (the user's line, or the line inside Ren that called
    a nested operation: ``bootstrap.py:275`` for a linear transform of CoeffToSlot)."""
    frame = sys._getframe(2)
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


F = TypeVar("F", bound=Callable[..., Any])


def operation(fn: F) -> F:
    """Record calls of `fn` (a CKKS operation) while a log is recording."""
    name = fn.__name__

    @functools.wraps(fn)
    def recorded(*args: Any, **kwargs: Any) -> Any:
        log = _log.get()
        if log is None:
            return fn(*args, **kwargs)
        op = log.begin(name, _call_site(), (args, kwargs))
        result = None
        try:
            result = fn(*args, **kwargs)
            return result
        finally:
            log.end(op, result)

    return recorded  # type: ignore[return-value]


__all__ = ["OPERATIONS", "Operation", "OperationLog", "Result", "operation",
           "record_operations"]
