"""Rich displays in Jupyter: a `Poly` shows its graph, a pass trace the table of its passes (and
the pictures of the passes that changed something), a `MemoryPlan` the arena picture, a
`JitPlan` its tables.

The engine never imports `ren.viz` (tests/test_layers.py: not even inside a function), so these
objects cannot draw themselves; instead ``ren.viz`` registers the pictures with IPython's HTML
formatter.  Importing ``ren.viz`` inside IPython does it, and so do

    %load_ext ren.viz                          # an IPython extension
    ren.viz.notebook.enable()                  # or by hand (disable() undoes it)

The objects of ``ren.viz`` itself (`PassTrace`, `ArenaView`, `JitView`, `Picture`) have their own
``_repr_html_`` / ``_repr_svg_``.  Every function here also works outside IPython: it returns
the HTML text (``poly_html(p)``, ``trace_html(t)``, ``memory_html(plan)``, ``jit_html(plan)``).

Large graphs are not laid out: past `REPR_MAX_NODES` nodes a Poly shows a table of its ops, and
a trace draws pictures only while their nodes add up to at most `TRACE_PICTURE_BUDGET`.  Long
tables stop at `REPR_MAX_ROWS` rows.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ren.ir import is_realized
from ren.jit import JitPlan, Jitted
from ren.memory import MemoryPlan
from ren.node import Node, toposort
from ren.poly import Poly
from ren.schedule import ScheduleTrace, as_sink
from ren.viz import arena as av
from ren.viz import jitplan
from ren.viz.graph import TooLarge, graph_svg, render_svg, stage_agraph
from ren.viz.templating import render
from ren.viz.trace import PassTrace, input_trace

REPR_MAX_NODES = 300  # a repr lays out no graph with more nodes than this: a table instead
TRACE_PICTURE_BUDGET = 250  # the pictures of one trace's repr draw at most this many nodes
REPR_MAX_ROWS = 200  # rows of a repr's table


@dataclass
class Picture:
    """An SVG picture that shows itself in a notebook (``_repr_svg_``)."""

    svg: str

    def _repr_svg_(self) -> str:
        return self.svg

    def __str__(self) -> str:
        return self.svg

    def __repr__(self) -> str:
        return f"<Picture: SVG, {len(self.svg)} characters>"


def picture(obj: Any, after_pass: int | str = 0, **options: Any) -> Picture:
    """`ren.viz.graph_svg` as a displayable `Picture` (a Poly, Node, list, Program or trace)."""
    return Picture(graph_svg(obj, after_pass, **options))


def _op_rows(nodes: list[Node]) -> list[tuple[str, int]]:
    return sorted(Counter(n.op.name for n in nodes).items(), key=lambda x: (-x[1], x[0]))


def poly_svg(p: Poly | Node, max_nodes: int = REPR_MAX_NODES) -> str | None:
    """The picture of a Poly's graph as built (numbered as ``ren-inspect passes`` numbers stage
    0), or None when it has more than `max_nodes` nodes."""
    node = p.node if isinstance(p, Poly) else p
    t = input_trace(node)
    if len(t.stages[0].order) > max_nodes:
        return None
    return render_svg(stage_agraph(t, 0, max_nodes=max_nodes))


def poly_html(p: Poly, max_nodes: int = REPR_MAX_NODES) -> str:
    """A Poly: its ring, domain and device, and its graph (a table of ops past `max_nodes`)."""
    node = p.node
    order = toposort(as_sink(node))[:-1]  # without the SINK
    svg = poly_svg(p, max_nodes) if len(order) <= max_nodes else None
    state = ("realized (a buffer)" if is_realized(node)
             else f"lazy, {len(order)} nodes")
    return render("notebook.html.j2", kind="poly", ring=p.ring.short(), domain=p.domain.name,
                  device=p.device, state=state, svg=svg, ops=_op_rows(order),
                  limit=REPR_MAX_ROWS,
                  note=f"{len(order)} nodes: more than {max_nodes}, so no picture "
                       "(ren.viz.graph_svg(p, max_nodes=...) draws it)")


def _trace_pictures(trace: PassTrace, budget: int) -> list[dict[str, Any]]:
    out = []
    for s in trace.stages:
        changed = s.index == 0 or any(v for k, v in s.counts().items() if k != "nodes")
        if not changed:
            continue
        size = len(s.order) + len(s.removed)
        pic: dict[str, Any] = {"name": s.name, "summary": s.summary(), "svg": None, "note": ""}
        if size > REPR_MAX_NODES:
            pic["note"] = (f"{size} nodes: more than {REPR_MAX_NODES}, not drawn here "
                           f"(ren.viz.picture(trace, {s.index}, max_nodes=...) draws it)")
        elif size > budget:
            pic["note"] = (f"not drawn: this display's pictures are spent "
                           f"(ren.viz.picture(trace, {s.index}) draws it)")
        else:
            try:
                pic["svg"] = render_svg(stage_agraph(trace, s.index, prefix=f"s{s.index}_",
                                                     max_nodes=REPR_MAX_NODES))
                budget -= size
            except TooLarge as e:
                pic["note"] = str(e)
        out.append(pic)
    return out


def trace_html(trace: PassTrace | ScheduleTrace) -> str:
    """A pass trace: one row per stage (nodes, what changed, rules fired) and, for a
    `ren.viz.PassTrace`, the pictures of the stages that changed (within the budget)."""
    if isinstance(trace, ScheduleTrace):
        return _schedule_trace_html(trace)
    rows = [(s.index, s.name, *s.counts().values(), s.rules_text() if s.index else "")
            for s in trace.stages]
    return render("notebook.html.j2", kind="trace", title="PassTrace", stages=rows,
                  columns=["#", "stage", "nodes", "added", "rewritten", "rebuilt", "removed",
                           "rules fired"],
                  first_nodes=len(trace.stages[0].order), last_nodes=len(trace.stages[-1].order),
                  pictures=_trace_pictures(trace, TRACE_PICTURE_BUDGET), limit=REPR_MAX_ROWS)


def _schedule_trace_html(trace: ScheduleTrace) -> str:
    firings = {name: Counter(f.rule for f in prov.firings) for name, prov in trace.provenance}
    rows = []
    for i, (name, graph) in enumerate(trace.graphs):
        order = toposort(graph)
        ops = ", ".join(f"{op} {k}" for op, k in _op_rows(order)[:5])
        fired = firings.get(name, Counter())
        rules = ", ".join(f"{r} ×{k}" for r, k in fired.most_common(4))
        rows.append((i, name, len(order), ops, rules))
    if not rows:
        rows = [(0, "final", len(toposort(trace.sink)), "", "")]
    return render("notebook.html.j2", kind="trace", title="ScheduleTrace", stages=rows,
                  columns=["#", "stage", "nodes", "most frequent ops", "rules fired"],
                  first_nodes=rows[0][2], last_nodes=rows[-1][2], pictures=[],
                  limit=REPR_MAX_ROWS)


def _bare_view(plan: MemoryPlan) -> av.ArenaView:
    """An ArenaView of a plan alone: buffers named buf<k> by first use, steps by number."""
    names = {id(b): f"buf{i}" for i, b in enumerate(plan.planned)}
    return av.ArenaView([], plan, names)


def memory_html(plan: MemoryPlan | av.ArenaView) -> str:
    """A memory plan: the per-device table, the arena picture, the planned buffers."""
    view = plan if isinstance(plan, av.ArenaView) else _bare_view(plan)
    summary = [(r["device"], r["buffers"], av.fmt_bytes(r["planned"]), av.fmt_bytes(r["peak"]),
                av.fmt_bytes(r["arena"]), f"{r['ratio']:.3f}", r["policy"])
               for r in av.summary_rows(view)]
    rows = [tuple(r.values()) for r in av.arena_rows(view)]
    svgs = av.arena_svgs(view) if view.plan.planned else []
    return render("notebook.html.j2", kind="memory", steps=view.plan.steps,
                  planned=len(view.plan.planned), kept=av.kept_text(view), summary=summary,
                  svgs=svgs, rows=rows, limit=REPR_MAX_ROWS)


def jit_html(plan: JitPlan | jitplan.JitView | Jitted) -> str:
    """A captured plan: the input replacement table, the arena, the exec units; a jitted
    function shows each of its plans."""
    if isinstance(plan, Jitted):
        plans = plan.plans
        head = (f"<div class=\"ren-repr ren-jitted\"><p><b>ren.jit {_esc(plan.name)}</b> · "
                f"{len(plans)} plan(s) · {plan.hits} replays, {plan.misses} captures</p>")
        return head + "".join(jit_html(p) for p in plans) + "</div>"
    view = plan if isinstance(plan, jitplan.JitView) else jitplan.from_plan(plan)
    title = f"JitPlan {plan.name}" if isinstance(plan, JitPlan) else "JitView"
    inputs = [(e["input"], e["buffer"], ", ".join(e["uses"])) for e in view.inputs]
    memory = [(r["device"], r["arena"], r["peak"], r["planned"], r["policy"])
              for r in view.memory_rows()]
    units = [tuple(r.values()) for r in view.unit_rows()]
    return render("notebook.html.j2", kind="jit", title=title, source=view.source,
                  runner=view.runner, seconds=view.capture_seconds, notes=view.notes,
                  inputs=inputs, memory=memory, units=units, limit=REPR_MAX_ROWS)


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


#: the engine's classes and their HTML pictures, registered by `enable`
HTML: dict[type, Callable[[Any], str]] = {
    Poly: poly_html,
    ScheduleTrace: trace_html,
    MemoryPlan: memory_html,
    JitPlan: jit_html,
    Jitted: jit_html,
}


def _shell(shell: Any = None) -> Any:
    if shell is not None:
        return shell
    ipython = sys.modules.get("IPython")  # never import IPython: only a running shell counts
    return ipython.get_ipython() if ipython is not None else None


def enable(shell: Any = None) -> bool:
    """Register the HTML pictures of `HTML` with IPython's formatter (the running shell, or
    `shell`); False outside IPython."""
    shell = _shell(shell)
    if shell is None:
        return False
    formatter = shell.display_formatter.formatters["text/html"]
    for cls, fn in HTML.items():
        formatter.for_type(cls, fn)
    return True


def disable(shell: Any = None) -> bool:
    """Undo `enable`: the engine's objects show their plain repr again."""
    shell = _shell(shell)
    if shell is None:
        return False
    formatter = shell.display_formatter.formatters["text/html"]
    for cls in HTML:
        formatter.pop(cls, None)
    return True


__all__ = ["HTML", "REPR_MAX_NODES", "REPR_MAX_ROWS", "TRACE_PICTURE_BUDGET", "Picture",
           "disable", "enable", "jit_html", "memory_html", "picture", "poly_html", "poly_svg",
           "trace_html"]
