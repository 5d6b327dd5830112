"""`Node`: the immutable, hash-consed vertex of Ren's IR, and graph utilities.

Structurally equal nodes are the same object: ``Node(op, dtype, src, arg)`` looks the tuple up in
a weak table first, so a shared subexpression is always a single node and identity comparison is
structural comparison.  ``arg`` must be hashable.

Thread safety: nodes are immutable, and construction is safe from several threads: a new node is
published with one atomic ``dict.setdefault``, so two threads building the same key get the
same object, without taking a lock on the hot path.
"""

from __future__ import annotations

import hashlib
import threading
import warnings
import weakref
from _weakref import _remove_dead_weakref  # type: ignore[attr-defined]  # private: not in typeshed
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ren import settings
from ren.ops import DType, Op

if TYPE_CHECKING:  # for the annotation only: ren.spec imports this module
    from ren.spec import PolySpec

#: key -> weak reference to the node (what a WeakValueDictionary keeps, without its
#: Python-level KeyedRef construction, which cost ~5% of scheduling time).  When a node dies its
#: reference's callback drops the entry, since the key holds the node's sources.
_refs: dict[tuple, weakref.ref] = {}
_replace_lock = threading.Lock()


class _Ref(weakref.ref):
    """The table's weak reference to a node, carrying the node's key for `_drop` (a slot set
    after construction: no Python-level __init__, and no `functools.partial` per node)."""

    __slots__ = ("key",)
    key: tuple


def _drop(wr: _Ref, _table: dict = _refs, _remove: Callable = _remove_dead_weakref) -> None:
    # only if the entry is still dead (it may have been replaced); the table and the remover are
    # bound as defaults so that nodes dying at interpreter exit, after module globals are
    # cleared, still work.  `_remove_dead_weakref` is what WeakValueDictionary uses (atomic, in C)
    _remove(_table, wr.key)


def _replace_dead(key: tuple, node: Node) -> Node:
    """Rare path: the entry for `key` holds a dead node whose callback has not run yet (e.g. a
    Python weakref callback of that node is building the same key again).  Replace it, unless
    another thread has just put a live node there."""
    with _replace_lock:
        cur = _refs.get(key)
        other = cur() if cur is not None else None
        if other is not None:
            return other
        ref = _Ref(node, _drop)
        ref.key = key
        _refs[key] = ref
        return node


def _compiled() -> Any:
    """`ren._node` (Node's constructor and the rewrite walk in C), or None: not built, built from
    other sources than ren/_*.c and ren/_*.h are now, or turned off with ``REN_PY_CORE=1``."""
    if settings.get("REN_PY_CORE"):
        return None
    try:
        from ren import _node  # type: ignore[attr-defined]  # (compiled, when built)
    except ModuleNotFoundError:
        return None  # not built (no C compiler at install): the Python core, silently
    except ImportError as e:  # built, but it does not load (a symbol this Python lacks, say)
        warnings.warn(f"ren._node does not load ({e}): the IR core runs in Python (slower); "
                      "run `pip install -e .` again", RuntimeWarning, stacklevel=2)
        return None
    digest = _source_digest()  # (None in a wheel, which ships no sources: only the ABI counts)
    if getattr(_node, "ABI", None) != _C_ABI or (
            digest is not None and getattr(_node, "SOURCE", "") != digest):
        warnings.warn("ren/_*.c or ren/_*.h changed since ren._node was built: the IR core runs "
                      "in Python (slower) until you run `pip install -e .` again", RuntimeWarning,
                      stacklevel=2)
        return None
    return _node


def _source_digest() -> str | None:
    """SHA-256 of the extension's files (ren/_*.c and ren/_*.h in name order, as setup.py hashes
    them), or None where there are none (a wheel ships no sources)."""
    files = sorted(Path(__file__).parent.glob("_*.[ch]"), key=lambda p: p.name)
    if not files:
        return None
    digest = hashlib.sha256()
    for f in files:
        digest.update(f.read_bytes())
    return digest.hexdigest()


#: the ABI of ren._node that this module and `ren.rewrite` drive (`setup`'s arguments,
#: `rewrite_walk`'s, `apply_rules`')
_C_ABI = 4
_node = _compiled()
_Base: type = object if _node is None else _node.NodeBase
#: a bare instance of a Node class (slots unset): what `_py_new` fills in
_new_object: Callable[[type], Any] = object.__new__ if _node is None else _node.alloc


def _py_new(cls: type[Node], op: Op, dtype: DType = DType.U32, src: Iterable[Node] = (),
            arg: Any = None) -> Node:
    """Node's constructor in Python: the reference for the compiled one (ren/_node.c, which does
    the same), and what runs when that is not built."""
    src = tuple(src)
    # types are part of the key (1 == True == 1.0 in Python), one level into tuple args too
    key = (op, dtype, src, type(arg), arg,
           tuple(map(type, arg)) if type(arg) is tuple else None)
    ref = _refs.get(key)
    if ref is not None:
        node = ref()
        if node is not None:
            return node
    node = _new_object(cls)
    # the slots' own setters (__setattr__ refuses): ~25 % faster than object.__setattr__
    _set_op(node, op)
    _set_dtype(node, dtype)
    _set_src(node, src)
    _set_arg(node, arg)
    _set_spec(node, None)
    # one atomic setdefault: when two threads build the same key, both get the node of
    # whichever inserted first
    ref = _Ref(node, _drop)
    ref.key = key
    first = _refs.setdefault(key, ref)
    if first is ref:
        return node
    other = first()
    return other if other is not None else _replace_dead(key, node)


class Node(_Base):  # type: ignore[misc,valid-type]
    """An IR node: ``op``, ``dtype``, ``src`` (a tuple of Nodes) and hashable ``arg``."""

    __slots__ = ("__weakref__", "_spec", "arg", "dtype", "op", "src")
    op: Op
    dtype: DType
    src: tuple[Node, ...]
    arg: Any
    _spec: PolySpec | None  # set once by `ren.spec.spec_of` (its cache)

    if _Base is object:  # (compiled: NodeBase's constructor, the same in C)
        __new__ = _py_new  # type: ignore[assignment]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Node is immutable; build a new node instead")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Node is immutable; build a new node instead")

    def __reduce__(self):
        return (Node, (self.op, self.dtype, self.src, self.arg))

    def replace(self, **kw: Any) -> Node:
        """A node like this one with some of op/dtype/src/arg changed."""
        return Node(kw.get("op", self.op), kw.get("dtype", self.dtype),
                    kw.get("src", self.src), kw.get("arg", self.arg))

    def toposort(self) -> list[Node]:
        return toposort(self)

    def __repr__(self) -> str:
        return f"<Node {self.op.name} {self.dtype.value} src={len(self.src)} arg={self.arg!r}>"


_set_op, _set_dtype, _set_src, _set_arg, _set_spec = (
    getattr(Node, name).__set__ for name in ("op", "dtype", "src", "arg", "_spec"))
if _node is not None:
    _node.setup(_refs, _Ref, _node.drop, _replace_dead, Node.op, Node.dtype, Node.src, Node.arg,
                Node._spec, _Ref.key, DType.U32, _remove_dead_weakref)

#: whether the IR's core runs compiled (ren/_*.c, built when the package is installed;
#: ``REN_PY_CORE=1`` turns it off): nodes made by its constructor rather than `_py_new`, and
#: `ren.rewrite`'s walk by its `rewrite_walk`; both give the same nodes
C_CORE = _node is not None


def toposort(*roots: Node) -> list[Node]:
    """Every node reachable from `roots`, sources before users, in a deterministic order
    (iterative depth-first post-order visiting sources left to right)."""
    order: list[Node] = []
    seen: set[int] = set()
    for root in roots:
        if id(root) in seen:
            continue
        stack: list[tuple[Node, Iterator[Node]]] = [(root, iter(root.src))]
        seen.add(id(root))
        while stack:
            node, children = stack[-1]
            for child in children:
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, iter(child.src)))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


def consumers(order: list[Node]) -> dict[Node, list[Node]]:
    """For each node of a toposorted list, the nodes that use it (each user once)."""
    users: dict[Node, list[Node]] = {n: [] for n in order}
    for n in order:
        for s in dict.fromkeys(n.src):
            users[s].append(n)
    return users


def substitute_many(roots: list[Node], mapping: dict[Node, Node]) -> list[Node]:
    """Each root with every occurrence of a key of `mapping` replaced by its value (one sweep,
    bottom-up, one memo shared by all roots; the walk does not enter keys, and replacements are
    not searched again)."""
    done: dict[Node, Node] = dict(mapping)
    out = []
    for root in roots:
        stack: list[tuple[Node, bool]] = [(root, False)]
        while stack:
            n, ready = stack.pop()
            if n in done:
                continue
            if not ready:
                stack.append((n, True))
                stack.extend((s, False) for s in reversed(n.src) if s not in done)
                continue
            src = tuple(done[s] for s in n.src)
            done[n] = n if src == n.src else n.replace(src=src)
        out.append(done[root])
    return out


def substitute(root: Node, mapping: dict[Node, Node]) -> Node:
    """`root` with every occurrence of a key of `mapping` replaced by its value."""
    return substitute_many([root], mapping)[0] if mapping else root
