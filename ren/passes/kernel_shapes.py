"""Indexify and kernelize each kernel shape once: a shortcut for passes 11 and 12 run fused.

A bootstrapping has ~1,800 elementwise kernels but a few hundred shapes: the same body over
other buffers (every key switch at one level, every rotation by one automorphism).  Passes 11
and 12 lower a body without asking which buffers it reads: only their shapes, the offsets of
views, and which reads are the same storage node.  So, when the two passes run as one walk
(`ren.passes`, `ren.schedule`), an elementwise STORE is

1. renamed: each storage node it reads (and its target) becomes a stand-in BUFFER, numbered in
   order of first use; a view becomes the same view (shape, offset) of its base's stand-in;
2. lowered and kernelized once per distinct renamed STORE (nodes are hash-consed, so the renamed
   STORE is the memo key): pass 11's `indexify_store`, then pass 12's `kernel_body`;
3. renamed back: the KERNEL's sources are the real storage nodes, its name takes the context's
   kernel count, as pass 12 names it.

The result is the KERNEL node that the two passes make one after the other (tested node for
node over the corpus, random programs and a bootstrapping).  Ring kernels (NTT, basis
conversion, ...) are cheap to kernelize and take the passes' own rules.
"""

from __future__ import annotations

from ren.device import Buffer
from ren.ir import is_ring_kernel, storage_buffer
from ren.node import Node
from ren.ops import DType, GroupOp, Op
from ren.passes.p11_indexify import indexify_store
from ren.passes.p12_kernelize import kernel_body, kernel_node
from ren.rewrite import P, Rule, rule

#: what one firing of the shortcut stands for: (pass name, rule name) of each rule it replaces
STANDS_FOR = (("indexify", "indexify_store"), ("kernelize", "kernelize"))
NAME = "indexify_store+kernelize"

#: (index, device, shape, no_opt) -> a stand-in BUFFER node; (index, base stand-in, shape,
#: offset) -> a stand-in view.  Distinct storage nodes get distinct stand-ins (the index), and
#: stand-ins are never allocated: their kernels only borrow their shapes.
_stand_ins: dict[tuple, Node] = {}
#: renamed STORE -> (kind, AST, renamed storage): bounded, cleared when full
_shapes: dict[Node, tuple[str, Node, tuple[Node, ...]]] = {}
SHAPES_KEPT = 1 << 12


def _is_elementwise(store: Node) -> bool:
    """What `indexify_store` lowers: a STORE into a BUFFER of a value that is no ring kernel."""
    return store.src[0].op is Op.BUFFER and not is_ring_kernel(store.src[1])


def _stand_in(index: int, buf: Buffer) -> Node:
    key = (index, buf.device, buf.shape, buf.no_opt)
    node = _stand_ins.get(key)
    if node is None:
        node = _stand_ins[key] = Node(Op.BUFFER, DType.U32, (), Buffer(
            buf.device, buf.shape, no_opt=buf.no_opt))
    return node


def _stand_in_view(index: int, base: Node, view: Buffer) -> Node:
    key = (index, base, view.shape, view.offset)
    node = _stand_ins.get(key)
    if node is None:
        node = _stand_ins[key] = Node(Op.BUFFER_VIEW, DType.U32, (base,), Buffer(
            view.device, view.shape, base=base.arg, offset=view.offset))
    return node


def rename(store: Node) -> tuple[Node, dict[Node, Node]]:
    """`store` with the storage it touches renamed to stand-ins, and stand-in -> storage node.

    One walk, depth first: storage is numbered in order of first use, the STORE's value before
    its target (the value's reads come first), and each node is rebuilt once its sources are."""
    back: dict[Node, Node] = {}
    done: dict[Node, Node] = {}  # node -> renamed
    storage = GroupOp.STORAGE

    def base(s: Node) -> Node:
        stand = done.get(s)
        if stand is None:
            done[s] = stand = _stand_in(len(back), storage_buffer(s))
            back[stand] = s
        return stand

    stack: list[tuple[Node, bool]] = [(store, True), (store.src[0], False), (store.src[1], False)]
    while stack:
        n, ready = stack.pop()
        if n in done:
            continue
        if n.op is Op.BUFFER_VIEW:
            stand = _stand_in_view(len(back), base(n.src[0]), n.arg)
            done[n], back[stand] = stand, n
        elif n.op in storage:
            base(n)
        elif not ready:
            stack.append((n, True))
            stack.extend((s, False) for s in reversed(n.src) if s not in done)
        else:
            src = tuple(done[s] for s in n.src)
            done[n] = n if src == n.src else n.replace(src=src)
    return done[store], back


def _indexify_and_kernelize(store: Node, ctx=None) -> Node:
    renamed, back = rename(store)
    shape = _shapes.get(renamed)
    if shape is None:
        lowered = indexify_store(renamed)
        assert lowered is not None  # (the rule's pattern admits only what pass 11 lowers)
        shape = kernel_body(lowered)
        if len(_shapes) >= SHAPES_KEPT:
            _shapes.clear()
        _shapes[renamed] = shape
    kind, ast, storage = shape
    return kernel_node(store, kind, ast, tuple(back[s] for s in storage), ctx)


def rules() -> list[Rule]:
    """The shortcut's rule: it takes the place of pass 11's and pass 12's in a fused walk."""
    return [rule(P(Op.STORE, name="store", where=_is_elementwise), _indexify_and_kernelize,
                 NAME)]
