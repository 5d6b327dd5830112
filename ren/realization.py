"""Realization: turn lazy Polys into concrete buffers.

    realize(polys)
      -> SINK(out0, out1, ...)            one root for everything requested together
      -> schedule (run_passes + linearize)
      -> plan_memory
      -> make_exec_units
      -> run_exec_units
      -> the becomes_map                  returned to the caller: the frontend (`ren.poly`)
                                          points every live Poly whose graph overlapped at the
                                          BUFFER (or CONST) nodes, so nothing is recomputed

Reading values (`host_residues`) realizes first, then converts storage (Montgomery form) to
standard-form residues on the host.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ren import settings
from ren.errors import RealizeError
from ren.ir import storage_buffer
from ren.memory import plan_memory
from ren.node import Node
from ren.ops import Op
from ren.replay import Template, structure_key, templates
from ren.ring import Domain, from_mont, get_tables
from ren.runtime import make_exec_units, run_exec_units
from ren.schedule import ScheduleContext, as_sink, linearize, run_passes


@dataclass
class RealizeTimings:
    """Seconds spent in each stage of the last realization (for benchmarks and REN_DEBUG)."""

    schedule: float = 0.0
    plan: float = 0.0
    lower: float = 0.0
    run: float = 0.0
    kernels: int = 0
    extra: dict = field(default_factory=dict)


last_timings = RealizeTimings()


def is_realized(n: Node) -> bool:
    """Backed by storage or a constant: reading it needs no kernel."""
    return n.op is Op.AS_RING and n.src[0].op in (Op.BUFFER, Op.BUFFER_VIEW, Op.CONST)


def realize_nodes(nodes: Sequence[Node]) -> dict[Node, Node]:
    """Schedule and run the given output nodes together; returns the becomes_map (each
    requested node -> the buffer-backed node that now holds its value).

    A graph whose structure was realized before replays the captured template with the new
    input buffers instead of scheduling again (`ren.replay`); REN_CHECK and REN_DEBUG=3 always
    schedule, so their checks and dumps happen.
    """
    todo = [n for n in dict.fromkeys(nodes) if not is_realized(n)]
    if not todo:
        return {}
    t0 = time.perf_counter()
    check, debug = bool(settings.get("REN_CHECK")), settings.get("REN_DEBUG")
    no_memplan = bool(settings.get("REN_NO_MEMPLAN"))
    found = None if check or debug >= 3 else structure_key(todo)
    key = (found[0], no_memplan) if found is not None else None
    template = templates.get(key) if key is not None else None
    if template is not None:
        becomes_map = template.replay(found[1], todo)
        _record(RealizeTimings(run=time.perf_counter() - t0, kernels=len(template.units),
                               extra={"replayed": True}), len(todo))
        return becomes_map
    timings = RealizeTimings()
    ctx = ScheduleContext(outputs=tuple(todo), check=check)
    sink = run_passes(as_sink(*todo), ctx=ctx).sink
    items = linearize(sink)
    t1 = time.perf_counter()
    outputs = {storage_buffer(v) for v in ctx.becomes_map.values() if v.src[0].op is Op.BUFFER}
    plan = None if no_memplan else plan_memory(items, outputs=outputs)
    t2 = time.perf_counter()
    units = make_exec_units(items)
    t3 = time.perf_counter()
    run_exec_units(units, plan)
    t4 = time.perf_counter()
    timings.schedule, timings.plan, timings.lower, timings.run = t1 - t0, t2 - t1, t3 - t2, t4 - t3
    timings.kernels = len(units)
    if key is not None:
        template = Template.capture(found[1], todo, ctx.becomes_map, units, plan)
        if template is not None:
            templates.put(key, template)
    _record(timings, len(todo))
    return ctx.becomes_map


def _record(timings: RealizeTimings, outputs: int) -> None:
    global last_timings
    last_timings = timings
    if settings.get("REN_DEBUG") >= 1:
        how = "replayed" if timings.extra.get("replayed") else (
            f"schedule {timings.schedule * 1e3:.2f} ms, plan {timings.plan * 1e3:.2f} ms, "
            f"lower {timings.lower * 1e3:.2f} ms")
        print(f"[ren] realize {outputs} output(s): {timings.kernels} units, {how}, run "
              f"{timings.run * 1e3:.2f} ms")


def host_residues(n: Node) -> np.ndarray:
    """Standard-form residues (limbs × N, u32) of a realized node, copied to the host."""
    if not is_realized(n):
        raise RealizeError("host_residues: the node is not realized; call realize() first")
    ring, domain = n.arg
    leaf = n.src[0]
    if leaf.op is Op.CONST:
        c = np.array([leaf.arg[0] % q for q in ring.moduli], dtype=np.uint32).reshape(-1, 1)
        if domain is Domain.NTT:
            return np.repeat(c, ring.N, axis=1)
        out = np.zeros((ring.limbs, ring.N), dtype=np.uint32)
        out[:, :1] = c
        return out
    return from_mont(storage_buffer(leaf).copyout(), get_tables(ring))


__all__ = ["host_residues", "is_realized", "realize_nodes"]
