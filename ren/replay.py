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
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ren.backend import copy_fn
from ren.device import Buffer, get_device
from ren.errors import RealizeError
from ren.ir import as_ring, is_const
from ren.kernel import ScheduledKernel
from ren.memory import MemoryPlan
from ren.node import Node
from ren.ops import DType, Op
from ren.runtime import ExecUnit, _check_view, make_exec_units, note_units, run_exec_units

MAX_TEMPLATES = 256
#: eager replays of a template use the backend's graph runner (which keeps the template's arena
#: and intermediates allocated between replays) when they retain at most this many bytes ...
GRAPH_BYTES_PER_TEMPLATE = 64 << 20
#: ... and all templates' runners together retain at most this many (first come, first served;
#: a template's share returns when it is dropped from the cache and collected)
GRAPH_BYTES_TOTAL = 256 << 20
_retained = [0]
_retained_lock = threading.Lock()


def _release(nbytes: int) -> None:
    with _retained_lock:
        _retained[0] -= nbytes


def _reserve(template: Template) -> weakref.finalize | None:
    """Take `template`'s retained bytes from the graph-runner budget, if they fit; the returned
    finalizer gives them back (when the template is collected, or when called)."""
    n = template.retained_bytes()
    with _retained_lock:
        if n > GRAPH_BYTES_PER_TEMPLATE or _retained[0] + n > GRAPH_BYTES_TOTAL:
            return None
        _retained[0] += n
    return weakref.finalize(template, _release, n)


def retained_graph_bytes() -> int:
    """Bytes the eager templates' graph runners hold now (for tests and diagnostics)."""
    return _retained[0]

_PARAM, _KEEP, _VIEW, _FRESH = range(4)


def structure_key(nodes: Sequence[Node]) -> tuple[tuple, list[Buffer]] | None:
    """(a hashable key of the graph's structure, its input buffers in key order), or None
    when the graph cannot be replayed with other buffers (RANDOM or BUFFER_VIEW leaves).

    Nodes are numbered in depth-first post-order (sources left to right), so two graphs get the
    same key exactly when they are the same DAG up to which buffers the BUFFER leaves hold."""
    try:  # small graphs (the common case of an eager realize): a plain recursive walk
        return _structure_key(nodes, recursive=True)
    except RecursionError:  # a deep chain: the same numbering with an explicit stack
        return _structure_key(nodes, recursive=False)


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
            if buf.base is not None:
                raise _NotReplayable
            params.append(buf)
            arg: object = ("param", buf.shape, buf.device, buf.no_opt, buf.is_allocated)
        elif op is Op.RANDOM or op is Op.BUFFER_VIEW:
            raise _NotReplayable
        else:
            arg = (type(n.arg), n.arg)
        i = index[n] = len(key)
        key.append((op, n.dtype, arg, src))
        return i

    def visit(n: Node) -> int:
        i = index.get(n)
        if i is None:
            i = number(n, tuple([visit(s) for s in n.src]))
        return i

    try:
        if recursive:
            roots = [visit(n) for n in nodes]
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


@dataclass
class Template:
    """A captured realization: exec units over placeholder buffers, and how to bind them.

    `actions` says, per placeholder buffer, how a replay binds it: to parameter ``i``
    (``_PARAM``), to itself (``_KEEP``: an arena-planned intermediate, or a *constant* — a leaf
    buffer that is neither a parameter nor written by any unit, e.g. key material a jitted
    function closes over, baked into the template), to a new view of its bound base
    (``_VIEW``), or to a new buffer (``_FRESH``: outputs and unplanned intermediates).
    `outputs` holds, per requested node, a constant node or (placeholder, AS_RING arg).
    """

    units: list[ExecUnit]
    plan: MemoryPlan | None
    actions: list[tuple[Buffer, int, int]]  # (template buffer, action, param index)
    outputs: list[tuple[Buffer, tuple] | Node]  # per requested node: (buffer, AS_RING arg) | node
    lock: threading.Lock
    #: the backend graph runner (`graph()`), and the per-replay bindings it needs
    runner: Any = field(default=None, repr=False, compare=False)
    _dyn: list[tuple[Buffer, int, int]] = field(default_factory=list, repr=False, compare=False)
    _out_pos: list[int] = field(default_factory=list, repr=False, compare=False)
    replays: int = field(default=0, repr=False, compare=False)

    @classmethod
    def capture(cls, params: list[Buffer], todo: Sequence[Node], becomes_map: dict[Node, Node],
                units: list[ExecUnit], plan: MemoryPlan | None, *,
                fresh_outputs: bool = False) -> Template | None:
        """The template of a realization that just ran, or None if it cannot be replayed.

        With `fresh_outputs`, an output that is a view, a parameter or a constant gets a copy
        unit into a new buffer (appended to the units), so no output of a replay aliases an
        input, a constant or another replay's output; otherwise such view outputs are refused.
        """
        placeholder: dict[Buffer, Buffer] = {}
        param_of = {b: i for i, b in enumerate(params)}
        written = {u.bufs[0] for u in units if u.kind != "view"}
        outputs: list[tuple[Buffer, tuple] | Node] = []
        for o in todo:
            v = becomes_map[o]
            if is_const(v):
                outputs.append(v)
            elif v.op is Op.AS_RING and (v.src[0].op is Op.BUFFER or (
                    fresh_outputs and v.src[0].op is Op.BUFFER_VIEW)):
                outputs.append((v.src[0].arg, v.arg))  # a new buffer, or an input (a no-op)
            else:
                return None
        planned = set(plan.planned) if plan is not None else set()

        def stand_in(b: Buffer) -> Buffer:
            t = placeholder.get(b)
            if t is None:
                if b.base is not None:
                    t = Buffer(b.device, b.shape, base=stand_in(b.base), offset=b.offset)
                elif b in planned or (b not in written and b not in param_of):
                    t = b  # in the arena (the plan knows it by identity), or a constant
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
        outs: list[tuple[Buffer, tuple] | Node] = []
        copies: dict[Buffer, Buffer] = {}
        for o in outputs:
            if isinstance(o, Node):
                outs.append(o)
                continue
            t = stand_in(o[0])
            if fresh_outputs and (t.base is not None or o[0] in param_of or t is o[0]) and \
                    t not in planned:
                if t not in copies:  # copy it into a buffer of its own
                    dst = Buffer(t.device, t.shape)
                    placeholder[dst] = copies[t] = dst
                    item = ScheduledKernel("copy", "copy_output", None, (dst, t), None, None,
                                           t.shape)
                    t_units.append(ExecUnit("copy", item.name, item.bufs,
                                            copy_fn(dst.device, t.device), item))
                t = copies[t]
            outs.append((t, o[1]))
        actions = []
        for b, t in placeholder.items():
            if t.base is not None:
                actions.append((t, _VIEW, -1))
            elif b in param_of:
                actions.append((t, _PARAM, param_of[b]))
            else:
                actions.append((t, _KEEP if t is b and b not in copies.values() else _FRESH, -1))
        actions.sort(key=lambda a: _depth(a[0]))  # bases before their views
        return cls(t_units, _rekey(plan, placeholder), actions, outs, threading.Lock())

    def param_of(self) -> dict[Buffer, int]:
        """placeholder -> parameter index, for the placeholders that stand for parameters."""
        return {t: i for t, action, i in self.actions if action == _PARAM}

    def bind(self, params: Sequence[Buffer]) -> dict[Buffer, Buffer]:
        """The buffer each placeholder stands for in a replay on `params`."""
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
        return bind

    def replay(self, params: list[Buffer], todo: Sequence[Node]) -> dict[Node, Node]:
        """Run the template on new input buffers; returns the becomes_map for `todo`.

        From the second replay on, a template whose retained memory fits the budget
        (``GRAPH_BYTES_PER_TEMPLATE``, ``GRAPH_BYTES_TOTAL``) builds the backend's graph runner
        and keeps its arena between replays: an eager realize then costs little more than its
        kernels, with no fresh arena to allocate and fault in.
        """
        self.replays += 1
        if self.runner is None and self.replays == 2:
            share = _reserve(self)
            if share is not None and self.graph() == "exec-units":
                share()  # no runner after all: nothing is retained
        if self.runner is not None:
            bound = self._run_graph(params)
        else:
            bind = self.bind(params)
            units = [ExecUnit(u.kind, u.name, tuple(bind[b] for b in u.bufs), u.fn, u.item)
                     for u in self.units]
            with self.lock:  # the planned intermediates are shared by every replay
                run_exec_units(units, self.plan)
            bound = [o if isinstance(o, Node) else bind[o[0]] for o in self.outputs]
        becomes: dict[Node, Node] = {}
        for o, out, b in zip(todo, self.outputs, bound, strict=True):
            if isinstance(out, Node):
                becomes[o] = out
            else:
                ring, domain = out[1]
                becomes[o] = as_ring(Node(Op.BUFFER, DType.U32, (), b), ring, domain)
        return becomes

    def retained_bytes(self) -> int:
        """Bytes a graph runner keeps allocated between replays: the arenas and the unplanned
        intermediates."""
        outs = {o[0] for o in self.outputs if not isinstance(o, Node)}
        planned = set(self.plan.planned) if self.plan is not None else set()
        loose = sum(t.nbytes for t, action, _ in self.actions
                    if action == _FRESH and t not in outs and t not in planned)
        return (self.plan.arena_bytes if self.plan is not None else 0) + loose

    def execute(self, params: Sequence[Buffer]) -> list[Buffer | Node]:
        """Run on `params` (Buffers: bases or views); returns each output's new Buffer (or its
        constant node).  Uses the backend graph runner once `graph()` has built one."""
        if self.runner is not None:
            return self._run_graph(params)
        bind = self.bind(params)
        units = [ExecUnit(u.kind, u.name, tuple(bind[b] for b in u.bufs), u.fn, u.item)
                 for u in self.units]
        with self.lock:
            run_exec_units(units, self.plan)
        return [o if isinstance(o, Node) else bind[o[0]] for o in self.outputs]

    # -- the backend graph runner ----------------------------------------------------------------
    def graph(self) -> str:
        """Build the backend's graph runner if it has one (`ren.backend.Device.graph`); returns
        its kind, or ``"exec-units"`` (the generic loop over ExecUnits).

        The graph prebinds every array that is the same in every replay: constants, and the
        intermediates — in arenas (planned ones) or buffers of their own, allocated once here and
        kept between replays (so a lock serializes replays).  A replay binds only parameters,
        new output buffers and their views.
        """
        if self.runner is not None:
            return self.runner.kind
        devices = {b.device for u in self.units for b in u.bufs}
        if not devices or len({type(get_device(d)) for d in devices}) != 1:
            return "exec-units"  # a graph spans one backend
        device = get_device(min(devices))
        planned = set(self.plan.planned) if self.plan is not None else set()
        fixed: dict[Buffer, Any] = {}
        if self.plan is not None:
            arenas = {dev: get_device(dev).allocator.arena(max(n, 4) // 4)
                      for dev, n in self.plan.arenas.items()}
            for b in self.plan.planned:
                fixed[b] = b.allocator.view(arenas[b.device], self.plan.offset(b) // 4, b.shape)
        dyn: list[tuple[Buffer, int, int]] = []
        pos: dict[Buffer, int] = {}
        outs = {o[0] for o in self.outputs if not isinstance(o, Node)}
        for t, action, i in self.actions:
            if t.base is not None:
                _check_view(t)
            if t in fixed:
                continue
            if action == _KEEP and t not in planned:
                fixed[t] = t.array()  # a constant
            elif action == _FRESH and t not in outs:  # an unplanned intermediate: kept too
                fixed[t] = t.allocator.alloc(t.shape)
            elif action == _VIEW and t.base in fixed:
                fixed[t] = t.allocator.view(fixed[t.base], t.offset, t.shape)
            else:
                pos[t] = len(dyn)
                dyn.append((t, action, pos[t.base] if action == _VIEW else i))
        if any(not isinstance(o, Node) and o[0] not in pos for o in self.outputs):
            return "exec-units"  # an output bound to fixed storage would alias across replays
        calls: list[tuple[Any, list]] = []
        patches: list[tuple[int, int, int]] = []
        for u in self.units:
            if u.kind == "view":  # validation only, done above
                continue
            args = [fixed.get(b) for b in u.bufs]
            patches += [(len(calls), slot, pos[b]) for slot, b in enumerate(u.bufs)
                        if b not in fixed]
            calls.append((u.fn, args))
        runner = device.graph(calls, patches)
        if runner is None:
            return "exec-units"
        self.runner, self._dyn = runner, dyn
        self._out_pos = [-1 if isinstance(o, Node) else pos[o[0]] for o in self.outputs]
        return runner.kind

    def _bind_dynamic(self, params: Sequence[Buffer]) -> list[Buffer]:
        bufs: list[Buffer] = []
        for t, action, i in self._dyn:
            if action == _PARAM:
                b = params[i]
            elif action == _FRESH:
                b = t.fresh_like().allocate()
            else:
                b = Buffer(t.device, t.shape, base=bufs[i], offset=t.offset)
            bufs.append(b)
        return bufs

    def _run_graph(self, params: Sequence[Buffer]) -> list[Buffer | Node]:
        bufs = self._bind_dynamic(params)
        arrays = [b.array() for b in bufs]
        with self.lock:
            self.runner(arrays)
        note_units(self.units)
        return [o if i < 0 else bufs[i] for o, i in zip(self.outputs, self._out_pos)]

    def profile(self, params: Sequence[Buffer]) -> list[float]:
        """Seconds of each call of the graph runner (one replay on `params`, each kernel timed
        on its own: the raw kernel times, without the replay's binding and dispatch)."""
        if self.runner is None:
            raise RealizeError("Template.profile needs a graph runner; call graph() first")
        arrays = [b.array() for b in self._bind_dynamic(params)]
        with self.lock:
            return self.runner.profile(arrays)

    # -- pickling: compiled kernels are closures, so a template pickles its scheduled items
    # (ASTs and parameters) and compiles them again when loaded
    def __getstate__(self) -> dict:
        state = {f: getattr(self, f) for f in ("plan", "actions", "outputs")}
        state["items"] = [u.item for u in self.units]
        return state

    def __setstate__(self, state: dict) -> None:
        self.units = make_exec_units(state["items"])
        self.plan, self.actions, self.outputs = state["plan"], state["actions"], state["outputs"]
        self.lock = threading.Lock()
        self.runner, self._dyn, self._out_pos = None, [], []
        self.replays = 0


def _depth(b: Buffer) -> int:
    d = 0
    while b.base is not None:
        b, d = b.base, d + 1
    return d


def _rekey(plan: MemoryPlan | None, placeholder: dict[Buffer, Buffer]) -> MemoryPlan | None:
    """The plan over the template's own buffers (no references to input or output buffers)."""
    if plan is None:
        return None
    return replace(plan, live={placeholder[b]: r for b, r in plan.live.items()
                               if b in placeholder},
                   excluded={placeholder[b]: why for b, why in plan.excluded.items()
                             if b in placeholder},
                   offsets=dict(plan.offsets), sizes=dict(plan.sizes),
                   arenas=dict(plan.arenas), peaks=dict(plan.peaks),
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
