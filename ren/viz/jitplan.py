"""A captured execution plan, readable: the exec units in order (kind, kernel, buffers), the input
replacement table, the arena, the graph runner kind and the capture time.

Two sources give a `JitView`:

* a plan of ``ren.jit`` (`from_plan`), read through this small duck-typed protocol, so the
  drawing does not depend on the JIT's classes:

      plan.units                  exec units in order; each has .kind ("compute", "copy",
                                  "view"), .name, .bufs (Buffers, bufs[0] written) and
                                  optionally .item (a ScheduledKernel: .kind is the kernel kind)
      plan.input_table | .replacements | .bindings
                                  the input replacement table: rows with attributes .unit,
                                  .slot, .input (and optionally .offset: the slot takes a view
                                  of the input at that element offset), or tuples
                                  (input, unit, slot)
      plan.inputs                 optional: (path, spec) of input k, e.g. ("args[0].parts[1]",
                                  PolySpec), to name the inputs of the table
      plan.scalars                optional: (path, value) of each frozen scalar
      plan.memory | .memory_plan  the MemoryPlan (or None)
      plan.runner | .runner_kind  a str, or an object (its .kind or class name is shown)
      plan.capture_seconds | .capture_time   seconds

* a replay template of `ren.replay` (`capture_template`): what realization itself compiles and
  runs for graphs of the same shape — exec units over the template's own buffers, which of them
  the inputs (its parameters) replace, and the memory plan.  It is used when the program has no
  function to JIT.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass, field
from typing import Any

from ren.device import Buffer
from ren.errors import InspectError, RenError
from ren.kernel import VIEW
from ren.memory import MemoryPlan
from ren.node import Node
from ren.realization import compile_template, is_realized, parameterize
from ren.replay import Template, structure_key


@dataclass
class JitView:
    """What `ren-inspect jit` shows."""

    source: str
    units: list[Any]
    inputs: list[dict[str, Any]]  # {"input", "buffer", "uses": ["unit 3 slot 1", ...]}
    memory: MemoryPlan | None
    runner: str
    capture_seconds: float | None
    notes: list[str] = field(default_factory=list)
    names: dict[int, str] = field(default_factory=dict)  # id(Buffer) -> display name

    def name(self, b: Buffer) -> str:
        return self.names.get(id(b), f"#{b.uid}")

    def unit_rows(self) -> list[dict[str, Any]]:
        rows = []
        for i, u in enumerate(self.units):
            item = getattr(u, "item", None)
            bufs = tuple(getattr(u, "bufs", ()))
            rows.append({"index": i, "kind": getattr(u, "kind", "?"),
                         "kernel": getattr(item, "kind", "—") if item is not None else "—",
                         "name": getattr(u, "name", "?"),
                         "writes": self.name(bufs[0]) if bufs else "—",
                         "reads": ", ".join(self.name(b) for b in bufs[1:]) or "—"})
        return rows

    def __repr__(self) -> str:
        return f"<JitView {self.source}: {len(self.units)} units, runner {self.runner}>"

    def _repr_html_(self) -> str:  # Jupyter: the plan's tables
        from ren.viz.notebook import jit_html

        return jit_html(self)

    def memory_rows(self) -> list[dict[str, Any]]:
        plan = self.memory
        if plan is None:
            return []
        return [{"device": dev, "arena": arena, "peak": plan.peaks.get(dev, 0),
                 "planned": sum(plan.sizes[b] for b in plan.planned if b.device == dev),
                 "policy": plan.policies.get(dev, "—")} for dev, arena in plan.arenas.items()]


def _first(obj: Any, *names: str) -> Any:
    for n in names:
        value = getattr(obj, n, None)
        if value is not None:
            return value
    return None


def _name_buffers(units: list[Any], memory: MemoryPlan | None,
                  inputs: dict[int, int]) -> dict[int, str]:
    """Display names by role: in<k> (input k), arena<j> (planned), view<j>, buf<j>."""
    planned = set(memory.planned) if memory is not None else set()
    names: dict[int, str] = {}
    counts = {"arena": 0, "view": 0, "buf": 0}
    for u in units:
        for b in getattr(u, "bufs", ()):
            if id(b) in names:
                continue
            if id(b) in inputs:
                names[id(b)] = f"in{inputs[id(b)]}"
                continue
            role = "arena" if b in planned else "view" if b.base is not None else "buf"
            names[id(b)] = f"{role}{counts[role]}"
            counts[role] += 1
    return names


def _uses(units: list[Any], buf: Buffer) -> list[str]:
    out = []
    for i, u in enumerate(units):
        for j, b in enumerate(getattr(u, "bufs", ())):
            if b is buf or b.base is buf:
                out.append(f"unit {i} slot {j}" + (" (view)" if b is not buf else ""))
    return out


def _row(entry: Any) -> tuple[Any, Any, Any, Any]:
    """(input, unit, slot, offset) of one replacement-table row."""
    if isinstance(entry, tuple):
        what, unit, slot = (list(entry) + [None, None])[:3]
        return what, unit, slot, None
    return (_first(entry, "input", "path", "index"), _first(entry, "unit"),
            _first(entry, "slot"), getattr(entry, "offset", None))


def from_plan(plan: Any) -> JitView:
    """A JitView of a ``ren.jit`` plan (the protocol of the module doc)."""
    units = list(_first(plan, "units") or [])
    table = _first(plan, "input_table", "replacements", "bindings") or []
    if isinstance(table, dict):
        table = [(k, *v) if isinstance(v, tuple) else (k, v, None) for k, v in table.items()]
    paths = [entry[0] if isinstance(entry, tuple) else str(entry)
             for entry in (_first(plan, "inputs") or [])]
    memory = _first(plan, "memory", "memory_plan")
    memory = memory if isinstance(memory, MemoryPlan) else None
    runner = _first(plan, "runner", "runner_kind")
    if runner is not None and not isinstance(runner, str):
        runner = getattr(runner, "kind", None) or type(runner).__name__
    seconds = _first(plan, "capture_seconds", "capture_time")
    by_input: dict[Any, dict[str, Any]] = {}
    for entry in table:
        what, unit, slot, offset = _row(entry)
        row = by_input.setdefault(what, {"input": _input_label(what, paths), "buffer": None,
                                          "uses": []})
        if unit is None:
            continue
        row["uses"].append(f"unit {unit} slot {slot}"
                           + (f" (view at +{offset})" if offset is not None else ""))
        if row["buffer"] is None and isinstance(unit, int) and isinstance(slot, int) \
                and unit < len(units) and slot < len(units[unit].bufs):
            b = units[unit].bufs[slot]
            row["buffer"] = b.base if offset is not None and b.base is not None else b
    if all(isinstance(k, int) for k in by_input):  # input order, buffers named in<k>
        by_input = dict(sorted(by_input.items()))
    inputs = list(by_input.values())
    names = _name_buffers(units, memory, {
        id(e["buffer"]): k if isinstance(k, int) else i
        for i, (k, e) in enumerate(by_input.items()) if e["buffer"] is not None})
    for e in inputs:
        e["buffer"] = names.get(id(e["buffer"]), "—") if e["buffer"] is not None else "—"
    notes = [f"frozen scalar {path} = {value!r}" for path, value in
             (_first(plan, "scalars") or [])]
    return JitView("ren.jit plan", units, inputs, memory, runner or "—",
                   float(seconds) if seconds is not None else None, notes, names)


def _input_label(what: Any, paths: list[str]) -> str:
    if isinstance(what, int) and 0 <= what < len(paths):
        return f"input {what}: {paths[what]}"
    return str(what)


def from_template(template: Template, seconds: float | None = None,
                  notes: list[str] | None = None) -> JitView:
    """A JitView of a `ren.replay.Template`."""
    inputs_by_id = {id(t): i for i, t in enumerate(template.params)}
    names = _name_buffers(template.units, template.plan, inputs_by_id)
    inputs = [{"input": f"input buffer {i} ({t.shape[0]}x{t.shape[1]} {t.device})",
               "buffer": names.get(id(t), f"in{i}"), "uses": _uses(template.units, t)}
              for i, t in enumerate(template.params)]
    views = sum(1 for role in template.roles.values() if role == VIEW)
    notes = list(notes or [])
    if views:
        notes.append(f"{views} view(s) are rebuilt over their bases at every replay")
    return JitView("replay template (ren.replay)", template.units, inputs, template.plan,
                   "sequential exec units (no graph runner)", seconds, notes, names)


def capture_template(outputs: tuple[Any, ...]) -> JitView:
    """Compile the template realization keeps for graphs of this shape (no live Poly is
    touched, nothing runs); a graph that cannot be replayed (RANDOM or view leaves) still shows
    its units and plan."""
    nodes: list[Node] = [o.node if hasattr(o, "node") else o for o in outputs]
    todo = list(dict.fromkeys(n for n in nodes if not is_realized(n)))
    if not todo:
        raise InspectError("every output is already realized: there is nothing to capture")
    found = structure_key(todo)
    t0 = time.perf_counter()
    template = compile_template(*parameterize(todo, found[1] if found is not None else []))
    seconds = time.perf_counter() - t0
    if not template.units:
        raise InspectError("the realization runs no kernel: there is nothing to capture")
    if found is not None:
        return from_template(template, seconds)
    names = _name_buffers(template.units, template.plan, {})
    return JitView("one realization (not replayable)", template.units, [], template.plan,
                   "none: the graph cannot be replayed", seconds,
                   ["the graph has RANDOM or BUFFER_VIEW leaves (a new seed or base every time), "
                    "so realization keeps no replay template for it"], names)


def capture_jit(function: Any, args: tuple) -> JitView | None:
    """Call `function` through ``ren.jit`` once and read the plan it captured; None when
    ``ren.jit`` is not available in this build."""
    try:
        module = importlib.import_module("ren.jit")
    except ImportError:
        return None
    jit = getattr(module, "jit", None)
    if jit is None:
        return None
    jitted = function if hasattr(function, "plans") else jit(function)
    try:
        jitted(*args)
    except RenError as e:
        raise InspectError(f"ren.jit capture failed: {type(e).__name__}: {e}") from e
    plans = getattr(jitted, "plans", None)
    if callable(plans):
        plans = plans()
    if isinstance(plans, dict):
        plans = list(plans.values())
    if not plans:
        raise InspectError("ren.jit captured no plan for the example inputs")
    return from_plan(list(plans)[-1])


__all__ = ["JitView", "capture_jit", "capture_template", "from_plan", "from_template"]
