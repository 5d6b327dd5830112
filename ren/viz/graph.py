"""Graphviz pictures of IR graphs and schedules, laid out by pygraphviz (its wheels bundle
Graphviz: no system ``dot`` needed).

    graph_svg(poly_or_sink, after_pass=4)     an SVG string; graph_dot(...) the DOT source
    stage_agraph(trace, stage)                the pygraphviz AGraph of one stage of a trace
    schedule_agraph(items)                    the top-level schedule: kernels and buffers

A stage's picture is its graph with what the pass changed highlighted: added nodes with a thick
green border, nodes a rule rewrote a thick amber one, nodes rebuilt only because a source changed
a thin amber one, and the removed nodes of the previous stage as dashed red ghosts where they
hung (their edges have class ``ghost``).  Fill colours are op families (`ren.viz.nodes`).  Nodes
are numbered by their lasting numbers (`Stage.ident`: the same node has the same number on every
stage) and rings by the trace's names.  Every node has an ``id`` (``<prefix>n<k>`` for node %k,
``<prefix>r<k>`` for a removed node %k) and a tooltip with its details, so an HTML page can make
it clickable.

Large graphs: kernel bodies are collapsed into their KERNEL node unless ``kernel_bodies=True``;
a graph with more than ``max_nodes`` nodes is not laid out (`TooLarge`): the report shows it
collapsed (`ren.viz.groups`), the CLI as text.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from typing import Any

import pygraphviz as pgv

from ren.dump import _Names
from ren.errors import InspectError
from ren.kernel import LIGHT_KINDS, ScheduledKernel
from ren.node import Node, toposort
from ren.ops import Op
from ren.viz import nodes as nv
from ren.viz.trace import PassTrace, Stage, trace_passes

#: past this many drawn nodes a stage is not laid out by dot (which takes seconds per stage
#: there, ~5 s at 1,800 nodes, and warns that it may take long): the report shows it collapsed
MAX_NODES = 1000
#: past this many drawn nodes, dot's network-simplex placement and spline routing dominate (a
#: 200-node stage: ~1.8 s): cap the simplex iterations and draw straight edges (~0.3 s)
FAST_LAYOUT_NODES = 120
#: past this many, crossing minimisation dominates too (800 nodes: 14 s -> 3.6 s with 0.1)
FASTER_LAYOUT_NODES = 400
MAX_GHOSTS = 60  # more removed nodes than this are listed in the text, not drawn
FONT = "Helvetica,Arial,sans-serif"


class TooLarge(InspectError):
    """A graph has more nodes than the drawing limit."""


def _new_graph(name: str) -> pgv.AGraph:
    g = pgv.AGraph(directed=True, strict=False, name=name)
    g.graph_attr.update(rankdir="TB", nodesep="0.18", ranksep="0.3", fontname=FONT,
                        fontsize="10", bgcolor="white", margin="0.1")
    g.node_attr.update(shape="box", style="rounded,filled", fontname=FONT, fontsize="9",
                       height="0.3", margin="0.06,0.03")
    g.edge_attr.update(arrowsize="0.5", color="#57606a", penwidth="0.8")
    return g


def _add_node(g: pgv.AGraph, name: str, n: Node, number: int, numbers: dict[Node, int],
              names: _Names, status: str, node_id: str, rule: str = "", extra: str = "") -> None:
    border, width, style = nv.STATUS_STYLE[status]
    info = nv.details(n, number, numbers, names, status)
    made = f", {rule}" if rule else ""
    tooltip = (f"{info['node']} {info['op']} {info['dtype']} ({status}{made})\n"
               f"arg: {nv.short(info['arg'], 160)}\nring: {info['ring']}\n"
               f"domain: {info['domain']}  device: {info['device']}")
    text = nv.label(n, number, names) + (f"\n{extra}" if extra else "")
    if extra:
        tooltip += f"\nciphertext: {extra}"
    attrs: dict[str, Any] = dict(label=text, fillcolor=nv.colour(n.op),
                                 color=border, penwidth=width, id=node_id, tooltip=tooltip)
    if style:
        attrs.update(style=f"rounded,filled,{style}", fillcolor="#ffffff", fontcolor="#8c959f")
    if status != "kept":
        attrs["class"] = status
    g.add_node(name, **attrs)


def _add_body(g: pgv.AGraph, kernel_node: str, n: Node, number: int, names: _Names,
              prefix: str) -> int:
    """The AST of a KERNEL node as a cluster under it; returns the number of nodes drawn."""
    order = toposort(n.arg.ast)
    local = {m: j for j, m in enumerate(order)}
    sub = g.add_subgraph(name=f"cluster_{prefix}k{number}", label=n.arg.name, style="dashed",
                         color="#cf9fff", fontsize="9")
    for m in order:
        name = f"n{number}_{local[m]}"
        _add_node(sub, name, m, local[m], local, names, "kept", f"{prefix}n{number}_{local[m]}")
        for s in m.src:
            g.add_edge(f"n{number}_{local[s]}", name)
    g.add_edge(f"n{number}_{local[order[-1]]}", kernel_node, style="dashed", color="#cf9fff",
               arrowhead="none")
    return len(order)


def stage_agraph(trace: PassTrace, which: int | str, *, removed: bool = True,
                 kernel_bodies: bool = False, prefix: str = "",
                 max_nodes: int = MAX_NODES, label_note: bool = True,
                 overlay: dict[int, str] | None = None) -> pgv.AGraph:
    """The graph of one stage (with its changes highlighted) as an AGraph, not yet laid out.
    `label_note`: put `ghost_note` in the picture's title (a page shows it as text instead: a
    title centred over a graph thousands of pixels wide is clipped by the box around it).
    `overlay`: lasting number -> a third label line (a ciphertext part's level and scale,
    `ren.viz.groups`)."""
    overlay = overlay or {}
    stage = trace.stage(which)
    prev = trace.stages[stage.index - 1] if stage.index else None
    drawn = len(stage.order)
    if removed and prev is not None and len(stage.removed) <= MAX_GHOSTS:
        drawn += len(stage.removed)
    if kernel_bodies:
        drawn += sum(len(toposort(n.arg.ast)) for n in stage.order if n.op is Op.KERNEL)
    if drawn > max_nodes:
        raise TooLarge(f"{stage.name} has {drawn} nodes to draw, more than the limit of "
                       f"{max_nodes}; raise it (--max-nodes) or read the text")
    g = _new_graph(stage.name)
    ghosts = removed and prev is not None and 0 < len(stage.removed) <= MAX_GHOSTS
    note = ghost_note(stage, removed)
    if note and label_note:
        g.graph_attr.update(label=note, labelloc="t")
    if drawn > FAST_LAYOUT_NODES:
        g.graph_attr.update(nslimit="0.5", nslimit1="0.5", splines="line")
    if drawn > FASTER_LAYOUT_NODES:
        g.graph_attr.update(mclimit="0.1")
    names = trace.names
    num = stage.ident
    for n in stage.order:
        k = num[n]
        _add_node(g, f"n{k}", n, k, num, names, stage.status[n], f"{prefix}n{k}",
                  stage.rule.get(n, ""), overlay.get(k, ""))
        for s in n.src:
            g.add_edge(f"n{num[s]}", f"n{k}")
        if kernel_bodies and n.op is Op.KERNEL:
            _add_body(g, f"n{k}", n, k, names, prefix)
    if ghosts and prev is not None:
        _add_ghosts(g, stage, prev, prefix, names)
    return g


def ghost_note(stage: Stage, removed: bool = True) -> str:
    """Why a stage's removed nodes are not drawn ("" when they are, or there are none)."""
    if not removed or not stage.index or len(stage.removed) <= MAX_GHOSTS:
        return ""
    return (f"{len(stage.removed)} removed nodes are not drawn (more than {MAX_GHOSTS}): see "
            "the text")


def _add_ghosts(g: pgv.AGraph, stage: Stage, prev: Stage, prefix: str, names: _Names) -> None:
    """The removed nodes of `prev`, dashed, with edges to where they hung."""
    gone = set(stage.removed)
    old, num = prev.ident, stage.ident

    def where(s: Node) -> str | None:
        if s in gone:
            return f"r{old[s]}"
        if s in num:
            return f"n{num[s]}"
        if s in stage.partner:
            return f"n{num[stage.partner[s]]}"
        return None

    for r in stage.removed:
        k = old[r]
        _add_node(g, f"r{k}", r, k, old, names, "removed", f"{prefix}r{k}")
    ghost = {"style": "dashed", "color": "#cf222e", "class": "ghost"}
    for r in stage.removed:
        for s in r.src:
            u = where(s)
            if u is not None:
                g.add_edge(u, f"r{old[r]}", **ghost)
    for c in prev.order:  # removed sources of nodes that were rebuilt
        if c in stage.partner:
            for s in c.src:
                if s in gone:
                    g.add_edge(f"r{old[s]}", f"n{num[stage.partner[c]]}", **ghost)


def schedule_agraph(items: Sequence[ScheduledKernel], buffer_names: dict[int, str],
                    prefix: str = "sched") -> pgv.AGraph:
    """The top-level schedule: one box per item (in order) and one ellipse per buffer; an edge
    buffer -> item is a read, item -> buffer the write."""
    g = _new_graph("schedule")
    seen: set[int] = set()
    for i, item in enumerate(items):
        fam = "kernel" if item.kind not in LIGHT_KINDS else "schedule"
        g.add_node(f"i{i}", label=f"[{i}] {item.name}\n{item.kind}",
                   fillcolor=nv.FAMILIES[fam][0], id=f"{prefix}i{i}",
                   tooltip=f"step {i}: {item.name} ({item.kind})")
        for j, b in enumerate(item.bufs):
            bname = f"b{id(b)}"
            if id(b) not in seen:
                seen.add(id(b))
                label = f"{buffer_names.get(id(b), '?')}\n{b.shape[0]}x{b.shape[1]}"
                g.add_node(bname, label=label, shape="ellipse", style="filled",
                           fillcolor=nv.FAMILIES["storage"][0], id=f"{prefix}b{len(seen)}",
                           tooltip=f"{buffer_names.get(id(b), '?')} {b.device} "
                                   f"{b.shape[0]}x{b.shape[1]}")
            if j == 0:
                g.add_edge(f"i{i}", bname, color="#1a7f37")
            else:
                g.add_edge(bname, f"i{i}")
    return g


# -- rendering -------------------------------------------------------------------------------------
_warmed = threading.Event()


def _warm_up() -> None:
    """Initialise Graphviz once with stderr silenced: the fontconfig bundled in the pygraphviz
    wheel is older than some systems' config files and warns about them on every first use
    (``unknown element "reset-dirs"``), which is noise for a user."""
    if _warmed.is_set():
        return
    _warmed.set()
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        g = pgv.AGraph()
        g.add_node("warm-up", label="warm-up")
        g.draw(format="svg", prog="dot")
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


_PROLOG = re.compile(r"^.*?(?=<svg)", re.S)
_COMMENT = re.compile(r"<!--.*?-->", re.S)


def render_svg(g: pgv.AGraph) -> str:
    """Lay out with dot and return the SVG, ready to inline in HTML (no XML prolog, doctype
    or comments)."""
    _warm_up()
    svg = g.draw(format="svg", prog="dot").decode("utf-8")
    return _COMMENT.sub("", _PROLOG.sub("", svg, count=1)).strip()


def _trace_of(obj: Any) -> PassTrace:
    if isinstance(obj, PassTrace):
        return obj
    if hasattr(obj, "outputs") and callable(obj.outputs):  # a ren.viz.programs.Program
        return trace_passes(*obj.outputs())
    if isinstance(obj, list | tuple):
        return trace_passes(*obj)
    return trace_passes(obj)


def graph_agraph(obj: Any, after_pass: int | str = 0, **options: Any) -> pgv.AGraph:
    """The AGraph of `obj` (a Poly, Node, SINK, a list of them, a Program or a PassTrace)
    after pass `after_pass` (0: as built)."""
    return stage_agraph(_trace_of(obj), after_pass, **options)


def graph_dot(obj: Any, after_pass: int | str = 0, **options: Any) -> str:
    """The DOT source of `obj`'s graph after pass `after_pass` (see `graph_agraph`)."""
    return graph_agraph(obj, after_pass, **options).string()


def graph_svg(obj: Any, after_pass: int | str = 0, **options: Any) -> str:
    """An SVG picture of `obj`'s graph after pass `after_pass` (see `graph_agraph`)."""
    return render_svg(graph_agraph(obj, after_pass, **options))


__all__ = ["MAX_NODES", "TooLarge", "ghost_note", "graph_agraph", "graph_dot", "graph_svg",
           "render_svg", "schedule_agraph", "stage_agraph"]
