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

**Recorders.**  ``with recording(r): ...`` makes `r` (a `Recorder`) watch every realization in
the block (per thread / context): `Recorder.on_realize` sees the requested nodes before anything
is scheduled (it may raise to forbid the realization), `Recorder.on_realized` receives a
`RealizeRecord` (the schedule, memory plan and exec units that ran).  The frontend consults the
same recorder when it creates a random polynomial (`Recorder.on_random`).  A generic hook: the
JIT (`ren.jit`) captures with one; tests and tools may use others.

Thread safety: realization may be requested from several threads.  One re-entrant lock covers
the whole critical section — reading the requested Polys' nodes, scheduling, running and applying
the becomes_map — so realizations run one at a time, a graph that overlaps one realized by another
thread reuses its buffers instead of computing them again, and no two runs race on the
becomes_map or on buffer storage.  Building graphs and reading realized values take no lock.
`last_timings` describes the last realization in any thread.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field

import numpy as np

from ren import settings
from ren.errors import RealizeError
from ren.ir import storage_buffer
from ren.kernel import ScheduledKernel
from ren.memory import plan_memory
from ren.node import Node
from ren.ops import Op
from ren.replay import Template, structure_key, templates
from ren.ring import Domain, from_mont, get_tables
from ren.runtime import ExecUnit, make_exec_units, run_exec_units
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


@dataclass
class RealizeRecord:
    """What one realization did: the requested (unrealized) nodes, their becomes_map, the
    schedule, the memory plan (None under REN_NO_MEMPLAN) and the exec units that ran."""

    nodes: tuple[Node, ...]
    becomes_map: dict[Node, Node]
    schedule: list[ScheduledKernel]
    plan: object
    units: list[ExecUnit]
    timings: RealizeTimings


class Recorder:
    """Watches the realizations of a `recording` block.  Every hook does nothing by default;
    a hook may raise (a RenError) to refuse what is about to happen."""

    def on_realize(self, nodes: Sequence[Node]) -> None:
        """Before realizing `nodes` (all requested ones, realized or not)."""

    def on_realized(self, record: RealizeRecord) -> None:
        """After a realization ran (it always schedules while recording: no template replay)."""

    def on_random(self, kind: str) -> None:
        """Before the frontend creates a random polynomial of sampler `kind`."""


_recorder: ContextVar[Recorder | None] = ContextVar("ren_recorder", default=None)


def current_recorder() -> Recorder | None:
    """The recorder of the innermost `recording` block of this context, if any."""
    return _recorder.get()


@contextlib.contextmanager
def recording(recorder: Recorder) -> Iterator[Recorder]:
    """Let `recorder` watch every realization (and random creation) inside the block."""
    token = _recorder.set(recorder)
    try:
        yield recorder
    finally:
        _recorder.reset(token)


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
    with realize_lock:
        return _realize_nodes(nodes)


def _realize_nodes(nodes: Sequence[Node]) -> dict[Node, Node]:
    recorder = _recorder.get()
    if recorder is not None:
        recorder.on_realize(nodes)
    todo = [n for n in dict.fromkeys(nodes) if not is_realized(n)]
    if not todo:
        return {}
    t0 = time.perf_counter()
    check, debug = bool(settings.get("REN_CHECK")), settings.get("REN_DEBUG")
    no_memplan = bool(settings.get("REN_NO_MEMPLAN"))
    found = None if check or debug >= 3 or recorder is not None else structure_key(todo)
    # the switches that change the schedule are part of the template key
    key = (found[0], no_memplan, bool(settings.get("REN_NO_ELISION"))) \
        if found is not None else None
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
    if recorder is not None:
        recorder.on_realized(RealizeRecord(tuple(todo), ctx.becomes_map, items, plan, units,
                                           timings))
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


__all__ = ["RealizeRecord", "Recorder", "current_recorder", "host_residues", "is_realized",
           "realize_nodes", "recording"]
