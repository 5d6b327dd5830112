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
template keeps no reference to any user buffer.  The cache is a small LRU (``MAX_TEMPLATES``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from ren.device import Buffer
from ren.ir import as_ring, is_const
from ren.kernel import ScheduledKernel
from ren.memory import MemoryPlan
from ren.node import Node, toposort
from ren.ops import DType, Op
from ren.runtime import ExecUnit, run_exec_units

MAX_TEMPLATES = 256

_PARAM, _KEEP, _VIEW, _FRESH = range(4)


def structure_key(nodes: Sequence[Node]) -> tuple[tuple, list[Buffer]] | None:
    """(a hashable key of the graph's structure, its input buffers in key order), or None
    when the graph cannot be replayed with other buffers (RANDOM or BUFFER_VIEW leaves)."""
    order = toposort(*nodes)
    index: dict[Node, int] = {}
    params: list[Buffer] = []
    key: list[tuple] = []
    for i, n in enumerate(order):
        index[n] = i
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
        key.append((op, n.dtype, arg, tuple(index[s] for s in n.src)))
    key.append(tuple(index[n] for n in nodes))
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
                bind[t] = Buffer(t.device, t.shape, no_opt=t.no_opt)
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
    """A small thread-safe LRU of templates by structure key."""

    def __init__(self, size: int = MAX_TEMPLATES):
        self.size = size
        self._items: OrderedDict[tuple, Template] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: tuple) -> Template | None:
        with self._lock:
            t = self._items.get(key)
            if t is None:
                self.misses += 1
            else:
                self.hits += 1
                self._items.move_to_end(key)
            return t

    def put(self, key: tuple, template: Template) -> None:
        with self._lock:
            self._items[key] = template
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._items)


templates = TemplateCache()
