"""Realization: turn lazy Polys into concrete buffers.

    realize(polys)
      -> SINK(out0, out1, ...)            one root for everything requested together
      -> schedule (run_passes + linearize)
      -> plan_memory
      -> make_exec_units
      -> run_exec_units
      -> apply the becomes_map            every live Poly whose graph overlapped now points at
                                          BUFFER (or CONST) nodes; nothing is recomputed later

Reading values (`host_residues`) realizes first, then converts storage (Montgomery form) to
standard-form residues on the host.

Thread safety: realization may be requested from several threads.  One re-entrant lock covers
the whole critical section — reading the requested Polys' nodes, scheduling, running and applying
the becomes_map — so realizations run one at a time, a graph that overlaps one realized by another
thread reuses its buffers instead of computing them again, and no two runs race on the
becomes_map or on buffer storage.  Building graphs and reading realized values take no lock.
`last_timings` describes the last realization in any thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ren import settings
from ren.device import device_kind
from ren.errors import DeviceError, RealizeError
from ren.node import Node, substitute_many, toposort
from ren.ops import Op
from ren.passes.common import storage_buffer
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
#: Held while a realization reads Poly nodes, schedules, runs and applies the becomes_map.
realize_lock = threading.RLock()


def is_realized(n: Node) -> bool:
    """Backed by storage or a constant: reading it needs no kernel."""
    return n.op is Op.AS_RING and n.src[0].op in (Op.BUFFER, Op.BUFFER_VIEW, Op.CONST)


def apply_becomes_map(mapping: dict[Node, Node]) -> None:
    """Point every live Poly whose graph contains a realized output at the buffer-backed node."""
    from ren.poly import live_polys

    pending = [p for p in live_polys() if not is_realized(p.node)]
    if not pending:
        return
    new_nodes = substitute_many([p.node for p in pending], mapping)
    for p, n in zip(pending, new_nodes, strict=True):
        p._node = n


def realize_nodes(nodes: Sequence[Node]) -> dict[Node, Node]:
    """Schedule and run the given output nodes together; returns the becomes_map."""
    with realize_lock:
        return _realize_nodes(nodes)


def _realize_nodes(nodes: Sequence[Node]) -> dict[Node, Node]:
    from ren.memory import plan_memory

    todo = [n for n in dict.fromkeys(nodes) if not is_realized(n)]
    if not todo:
        return {}
    timings = RealizeTimings()
    t0 = time.perf_counter()
    ctx = ScheduleContext(outputs=tuple(todo), check=bool(settings.get("REN_CHECK")))
    sink = run_passes(as_sink(*todo), ctx=ctx).sink
    items = linearize(sink)
    t1 = time.perf_counter()
    outputs = {storage_buffer(v) for v in ctx.becomes_map.values() if v.src[0].op is Op.BUFFER}
    plan = None if settings.get("REN_NO_MEMPLAN") else plan_memory(items, outputs=outputs)
    t2 = time.perf_counter()
    units = make_exec_units(items, plan)
    t3 = time.perf_counter()
    run_exec_units(units, plan)
    t4 = time.perf_counter()
    timings.schedule, timings.plan, timings.lower, timings.run = t1 - t0, t2 - t1, t3 - t2, t4 - t3
    timings.kernels = len(units)
    global last_timings
    last_timings = timings
    if settings.get("REN_DEBUG") >= 1:
        print(f"[ren] realize {len(todo)} output(s): {len(units)} units, schedule "
              f"{timings.schedule * 1e3:.2f} ms, plan {timings.plan * 1e3:.2f} ms, lower "
              f"{timings.lower * 1e3:.2f} ms, run {timings.run * 1e3:.2f} ms")
    apply_becomes_map(ctx.becomes_map)
    return ctx.becomes_map


def realize_polys(polys: Sequence) -> None:
    """Realize several Polys together (one SINK, shared intermediates computed once)."""
    with realize_lock:  # read the nodes inside: another thread's becomes_map may move them
        _realize_nodes([p.node for p in polys])


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
    buf = storage_buffer(leaf)
    if device_kind(buf.device) != "python":
        raise DeviceError(f"reading {buf.device} storage is not supported in this build")
    return from_mont(buf.array(), get_tables(ring))


__all__ = ["apply_becomes_map", "host_residues", "is_realized", "realize_nodes", "realize_polys",
           "toposort"]
