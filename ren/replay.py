"""Realizations with their buffers as parameters: schedule a graph *shape* once, replay it.

Eager realization spends most of a small realize in Python (twelve passes, planning, lowering).
But the schedule of a graph depends only on its structure: the ops, their args, the rings and
domains, and the shape and device of each input buffer — not on which buffers hold the inputs.
So `realize_nodes` looks the requested graph up by `structure_key` and, on a hit, replays the
`Template` captured the first time with the new input buffers:

* input buffers (the graph's BUFFER leaves, in a deterministic order) are parameters;
* outputs (and intermediates that the memory plan does not place) get fresh Buffers on every
  replay, so outputs of two realizations never alias;
* arena-planned intermediates are the template's own Buffers, bound to a new arena each run;
* views are rebuilt over whatever their base became.

Graphs with RANDOM leaves (a new seed every time) or BUFFER_VIEW leaves are not cached.  The
template keeps no reference to any user buffer.  The cache is small (``MAX_TEMPLATES``,
oldest out first).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from ren.device import Buffer
from ren.ir import as_ring, is_const
from ren.kernel import ScheduledKernel
from ren.memory import MemoryPlan
from ren.node import Node
from ren.ops import DType, Op
from ren.runtime import ExecUnit, run_exec_units

MAX_TEMPLATES = 256

_PARAM, _KEEP, _VIEW, _FRESH = range(4)


def structure_key(nodes: Sequence[Node]) -> tuple[tuple, list[Buffer]] | None:
    """(a hashable key of the graph's structure, its input buffers in key order), or None
    when the graph cannot be replayed with other buffers (RANDOM or BUFFER_VIEW leaves).

    Nodes are numbered in depth-first post-order (sources left to right), so two graphs get the
    same key exactly when they are the same DAG up to which buffers the BUFFER leaves hold."""
    index: dict[Node, int] = {}
    params: list[Buffer] = []
    key: list[tuple] = []
    for root in nodes:
        stack = [root]
        while stack:  # post-order without iterators: a node is numbered once its sources are
            n = stack[-1]
            if n in index:
                stack.pop()
                continue
            pending = [s for s in n.src if s not in index]
            if pending:
                stack.extend(reversed(pending))
                continue
            stack.pop()
            op = n.op
            if op is Op.BUFFER:
                buf = n.arg
                if buf.base is not None:
                    return None
                params.append(buf)
                arg: object = ("param", buf.shape, buf.device, buf.no_opt, buf.is_allocated)
            elif op is Op.RANDOM or op is Op.BUFFER_VIEW:
                return None
            else:
                arg = (type(n.arg), n.arg)
            index[n] = len(key)
            key.append((op, n.dtype, arg, tuple([index[s] for s in n.src])))
    key.append(tuple([index[n] for n in nodes]))
    return tuple(key), params


@dataclass
class Template:
    """A captured realization: exec units over placeholder buffers, and how to bind them."""

    units: list[ExecUnit]
    plan: MemoryPlan | None
    actions: list[tuple[Buffer, int, int]]  # (template buffer, action, param index)
    outputs: list[tuple[Buffer, tuple] | Node]  # per requested node: (buffer, AS_RING arg) | node
    lock: threading.Lock

    @classmethod
    def capture(cls, params: list[Buffer], todo: Sequence[Node], becomes_map: dict[Node, Node],
                units: list[ExecUnit], plan: MemoryPlan | None) -> Template | None:
        """The template of a realization that just ran, or None if it cannot be replayed."""
        placeholder: dict[Buffer, Buffer] = {}
        param_of = {b: i for i, b in enumerate(params)}
        outputs: list[tuple[Buffer, tuple] | Node] = []
        for o in todo:
            v = becomes_map[o]
            if is_const(v):
                outputs.append(v)
            elif v.op is Op.AS_RING and v.src[0].op is Op.BUFFER:
                outputs.append((v.src[0].arg, v.arg))  # a new buffer, or an input (a no-op)
            else:
                return None
        planned = set(plan.planned) if plan is not None else set()

        def stand_in(b: Buffer) -> Buffer:
            t = placeholder.get(b)
            if t is None:
                if b.base is not None:
                    t = Buffer(b.device, b.shape, base=stand_in(b.base), offset=b.offset)
                elif b in planned:
                    t = b  # lives in the arena: the plan knows it by identity
                else:
                    t = Buffer(b.device, b.shape, no_opt=b.no_opt)
                placeholder[b] = t
            return t

        t_units = []
        for u in units:
            bufs = tuple(stand_in(b) for b in u.bufs)
            item = u.item
            light = ScheduledKernel(item.kind, item.name, item.ast, bufs, item.ring, None,
                                    item.space)
            t_units.append(ExecUnit(u.kind, u.name, bufs, u.fn, light))
        for b in params:
            stand_in(b)
        actions = []
        for b, t in placeholder.items():
            if t.base is not None:
                actions.append((t, _VIEW, -1))
            elif b in param_of:
                actions.append((t, _PARAM, param_of[b]))
            else:
                actions.append((t, _KEEP if t is b else _FRESH, -1))
        actions.sort(key=lambda a: a[1] == _VIEW)  # bases before their views
        outs = [o if isinstance(o, Node) else (placeholder[o[0]], o[1]) for o in outputs]
        return cls(t_units, _trim(plan), actions, outs, threading.Lock())

    def replay(self, params: list[Buffer], todo: Sequence[Node]) -> dict[Node, Node]:
        """Run the template on new input buffers; returns the becomes_map for `todo`."""
        bind: dict[Buffer, Buffer] = {}
        for t, action, i in self.actions:
            if action == _PARAM:
                bind[t] = params[i]
            elif action == _KEEP:
                bind[t] = t
            elif action == _VIEW:
                bind[t] = Buffer(t.device, t.shape, base=bind[t.base], offset=t.offset)
            else:
                bind[t] = t.fresh_like()
        units = [ExecUnit(u.kind, u.name, tuple(bind[b] for b in u.bufs), u.fn, u.item)
                 for u in self.units]
        with self.lock:  # the planned intermediates are shared by every replay of this template
            run_exec_units(units, self.plan)
        becomes: dict[Node, Node] = {}
        for o, out in zip(todo, self.outputs, strict=True):
            if isinstance(out, Node):
                becomes[o] = out
            else:
                t, (ring, domain) = out
                becomes[o] = as_ring(Node(Op.BUFFER, DType.U32, (), bind[t]), ring, domain)
        return becomes


def _trim(plan: MemoryPlan | None) -> MemoryPlan | None:
    """The part of a plan a replay needs (no references to input or output buffers)."""
    if plan is None:
        return None
    keep = set(plan.planned)
    return MemoryPlan(steps=plan.steps, live={b: r for b, r in plan.live.items() if b in keep},
                      offsets=dict(plan.offsets), sizes=dict(plan.sizes), planned=plan.planned,
                      excluded={}, arenas=dict(plan.arenas), peaks=dict(plan.peaks),
                      policies=dict(plan.policies))


class TemplateCache:
    """A small thread-safe cache of templates by structure key; when full, the oldest entry
    goes (first in, first out: a hit costs one hash of the key and no reordering)."""

    def __init__(self, size: int = MAX_TEMPLATES):
        self.size = size
        self._items: dict[tuple, Template] = {}
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: tuple) -> Template | None:
        t = self._items.get(key)  # a dict lookup is atomic under the GIL
        if t is None:
            self.misses += 1
        else:
            self.hits += 1
        return t

    def put(self, key: tuple, template: Template) -> None:
        with self._lock:
            self._items.pop(key, None)
            self._items[key] = template
            while len(self._items) > self.size:
                del self._items[next(iter(self._items))]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._items)


templates = TemplateCache()
