"""One name per buffer across a report, and the links between its sections.

The passes, the arena and the kernels sections read one schedule: the final stage of the trace
(`plan_trace`), so a buffer is the same `Buffer` object everywhere and is named once, by the
trace's names (``PassTrace.names``: ``buf3`` is ``buf3`` in the text dump of every stage).  The
JIT plan is captured by another realization (its own buffers, its inputs already realized), so
its units are matched to the schedule's items (`match_units`): a unit runs the same kernel (the
same hash-consed AST, kind and ring) as an item whose buffers agree with every buffer matched so
far; the unit's buffers then take that item's names.  A JIT buffer no item explains keeps a new
name from the same counter, so no two buffers share a name.

    view = plan_trace(trace)                       # ArenaView over the trace's final stage
    unit_item = name_jit(jit_view, view, trace.names)
    links = link_data(trace, view, unit_item)      # JSON for the page's linked highlighting
"""

from __future__ import annotations

from typing import Any

from ren.dump import _lines, _Names
from ren.ir import storage_buffer
from ren.kernel import ScheduledKernel
from ren.memory import plan_memory
from ren.ops import Op
from ren.schedule import linearize
from ren.viz.arena import ArenaView, same_value
from ren.viz.jitplan import JitView
from ren.viz.trace import PassTrace


def plan_trace(trace: PassTrace, policy: str = "auto") -> ArenaView:
    """The schedule of the trace's final stage and its memory plan, buffers named as in the
    trace (nothing runs, no pass runs again)."""
    final = trace.stages[-1].graph
    items = linearize(final)
    out_bufs = {storage_buffer(v) for v in trace.ctx.becomes_map.values()
                if v.src[0].op is Op.BUFFER}
    plan = plan_memory(items, outputs=out_bufs, policy=policy)
    names = trace.names
    for item in items:
        for b in item.bufs:
            if id(same_value(b)) in names.buffers:  # a value linearize computed again
                names.buffers[id(b)] = names.buffers[id(same_value(b))]
            else:
                names.buffer(b)
    return ArenaView(items, plan, names.buffers, out_bufs)


def _key(item: ScheduledKernel | None) -> tuple[Any, ...] | None:
    if item is None:
        return None
    return (item.kind, item.ast, item.ring, len(item.bufs), item.bufs[0].shape)


def match_units(units: list[Any], items: list[ScheduledKernel]) -> dict[int, int]:
    """unit index -> the index of the schedule item it runs (see the module docstring)."""
    by_key: dict[Any, list[int]] = {}
    for i, item in enumerate(items):
        by_key.setdefault(_key(item), []).append(i)
    taken: set[int] = set()
    to_item: dict[int, int] = {}  # id(JIT buffer) -> id(schedule buffer)
    from_item: dict[int, int] = {}
    out: dict[int, int] = {}
    for u, unit in enumerate(units):
        key = _key(getattr(unit, "item", None))
        bufs = tuple(getattr(unit, "bufs", ()))
        for i in by_key.get(key, ()) if key is not None else ():
            if i in taken:
                continue
            pairs = list(zip(bufs, items[i].bufs, strict=False))
            if all(to_item.get(id(a), id(b)) == id(b) and from_item.get(id(b), id(a)) == id(a)
                   for a, b in pairs):
                taken.add(i)
                out[u] = i
                for a, b in pairs:
                    to_item[id(a)], from_item[id(b)] = id(b), id(a)
                break
    return out


def name_jit(jit: JitView, view: ArenaView, names: _Names) -> dict[int, int]:
    """Rename the JIT view's buffers after the schedule's (`match_units`); the rest get fresh
    names from `names`.  Returns unit index -> item index."""
    unit_item = match_units(jit.units, view.items)
    old = dict(jit.names)
    new: dict[int, str] = {}
    for u, i in unit_item.items():
        for a, b in zip(jit.units[u].bufs, view.items[i].bufs, strict=False):
            new[id(a)] = names.buffer(b)
    for unit in jit.units:
        for b in getattr(unit, "bufs", ()):
            if id(b) not in new:
                new[id(b)] = names.buffer(b)
    by_old = {old[k]: v for k, v in new.items() if k in old}
    for e in jit.inputs:
        e["buffer"] = by_old.get(e["buffer"], e["buffer"])
    jit.names = new
    return unit_item


def kernel_body(node: Any, names: _Names) -> str:
    """The AST of a KERNEL node in the dump format."""
    return "\n".join(_lines(node.arg.ast, names, ""))


def link_data(trace: PassTrace, view: ArenaView,
              unit_item: dict[int, int] | None = None) -> dict[str, Any]:
    """What the page links: each schedule item's buffers and its node in the final stage, each
    final-stage BUFFER node's buffer, and each JIT unit's item."""
    stage = trace.stages[-1]
    prefix = f"s{stage.index:02d}"
    node_of: dict[str, dict[str, Any]] = {}
    for n in stage.order:
        if n.op is Op.BUFFER:
            node_of[f"{prefix}n{stage.ident[n]}"] = {"buf": view.name(n.arg)}
    items = []
    for i, item in enumerate(view.items):
        node = f"{prefix}n{stage.ident[item.node]}" if item.node in stage.ident else ""
        if node:
            node_of[node] = {"item": i}
        items.append({"node": node, "bufs": [view.name(b) for b in item.bufs]})
    return {"items": items, "nodes": node_of,
            "units": {str(u): i for u, i in (unit_item or {}).items()}}


__all__ = ["kernel_body", "link_data", "match_units", "name_jit", "plan_trace"]
