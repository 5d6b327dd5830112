"""ren.viz.links: one schedule and one name per buffer for the passes, arena, kernels and JIT
sections of a report."""

from __future__ import annotations

import re

from ren.viz import arena as av
from ren.viz import programs
from ren.viz.links import link_data, match_units, name_jit, plan_trace
from ren.viz.report import jit_view
from ren.viz.trace import stage_text, trace_passes


def test_the_arena_and_the_jit_plan_use_the_trace_names():
    program = programs.load_program("keyswitch")
    outputs = program.outputs()
    trace = trace_passes(*outputs)
    view = plan_trace(trace)
    final = stage_text(trace.stages[-1], trace.stages[-2], names=trace.names)
    in_dump = set(re.findall(r"\bbuf\d+\b", final))
    assert {r["buffer"] for r in av.arena_rows(view)} <= in_dump
    jit = jit_view(program, outputs)
    unit_item = name_jit(jit, view, trace.names)
    assert unit_item == match_units(jit.units, view.items)
    assert len(unit_item) == len(jit.units)  # the same graph: every unit is an item
    for u, i in unit_item.items():
        want = [view.name(b) for b in view.items[i].bufs]
        assert [jit.name(b) for b in jit.units[u].bufs] == want
    links = link_data(trace, view, unit_item)
    assert len(links["items"]) == len(view.items)
    assert all(it["node"].startswith("s12n") for it in links["items"])
