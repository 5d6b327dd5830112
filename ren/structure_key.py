"""`structure_key`: the eager template cache's key (`ren.replay.templates`), and the JIT plan
cache's (`ren.plan_cache`): a graph's structure up to which buffers its leaves hold.

Split out of ren.replay, which re-exports it; it depends on the IR alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ren.device import Buffer
from ren.node import Node
from ren.ops import Op


def structure_key(nodes: Sequence[Node]) -> tuple[tuple, list[Buffer]] | None:
    """(a hashable key of the graph's structure, its input buffers in key order), or None
    when the graph cannot be replayed with other buffers (RANDOM, BUFFER_VIEW or unallocated
    leaves).

    Nodes are numbered in depth-first post-order (sources left to right), so two graphs get the
    same key exactly when they are the same DAG up to which buffers the BUFFER leaves hold."""
    try:  # small graphs (the common case of an eager realize): a plain recursive walk
        return _structure_key(nodes, recursive=True)
    except RecursionError:  # a deep chain: the same numbering with an explicit stack
        return _structure_key(nodes, recursive=False)


def key_devices(key: tuple) -> set[str]:
    """The device names the graph of a `structure_key` key holds: its BUFFER leaves'
    (``("param", shape, device, no_opt)``), its COPYs' targets and its CONST and RANDOM leaves'
    (an argument with a ``device``).  Every value of the graph, a RESCALE's included, lies on
    one of them; the plan cache keys a plan by what their backends can run.  A key of another
    shape (tests) names none."""
    out: set[str] = set()
    for n in key[:-1] if key and isinstance(key[-1], tuple) else ():
        if type(n) is not tuple or len(n) != 4 or type(n[2]) is not tuple or len(n[2]) < 2:
            continue
        op, arg = n[0], n[2]
        device = (arg[2] if op is Op.BUFFER and len(arg) == 4 else
                  arg[1] if op is Op.COPY else getattr(arg[1], "device", None))
        if isinstance(device, str):
            out.add(device)
    return out


class _NotReplayable(Exception):
    pass


def _structure_key(nodes: Sequence[Node], recursive: bool) -> tuple[tuple, list[Buffer]] | None:
    index: dict[Node, int] = {}
    params: list[Buffer] = []
    key: list[tuple] = []

    def number(n: Node, src: tuple[int, ...]) -> int:
        op = n.op
        if op is Op.BUFFER:
            buf = n.arg
            if buf.base is not None or not buf.is_allocated:
                raise _NotReplayable
            params.append(buf)
            arg: object = ("param", buf.shape, buf.device, buf.no_opt)
        elif (op is Op.RANDOM and not n.arg.public) or op is Op.BUFFER_VIEW:
            raise _NotReplayable  # (a public sample, a lean key's row, is keyed by its seed)
        else:
            arg = (type(n.arg), n.arg)
        i = index[n] = len(key)
        key.append((op, n.dtype, arg, src))
        return i

    def visit(n: Node, visit_src: Callable[..., int]) -> int:
        """Number n after its sources; `visit_src` is this function, passed in rather than
        closed over: a self-reference would keep the graph alive until a GC."""
        i = index.get(n)
        if i is None:
            i = number(n, tuple([visit_src(s, visit_src) for s in n.src]))
        return i

    try:
        if recursive:
            roots = [visit(n, visit) for n in nodes]
        else:
            for root in nodes:
                stack = [root]
                while stack:  # post-order: a node is numbered once its sources are
                    n = stack[-1]
                    if n in index:
                        stack.pop()
                        continue
                    pending = [s for s in n.src if s not in index]
                    if pending:
                        stack.extend(reversed(pending))
                        continue
                    stack.pop()
                    number(n, tuple([index[s] for s in n.src]))
            roots = [index[n] for n in nodes]
    except _NotReplayable:
        return None
    key.append(tuple(roots))
    return tuple(key), params
