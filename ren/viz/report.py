"""One self-contained HTML file about a program: the passes (step through them with ←/→), the
arena, the captured plan, the kernels and the golden diff.

    html = report_html(load_program("ckks_multiply"))
    html = report_html(program, sections=("passes",))      # one part only

Self-contained: graphs are inline SVG (pygraphviz), the CSS and the script are inlined from
``ren/viz/templates/``; nothing is fetched from the network.  Every graph node has an id
(``s<stage>n<k>``, k its lasting number: the same node has the same k on every stage), and the
node details (op, dtype, arg, ring, domain, device, sources, status, the rule that produced it
and the node it replaced) travel as JSON in the page, so a click or hover on a node shows them
and a rule's button can highlight its nodes.  One ring legend serves every stage.
"""

from __future__ import annotations

import html
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ren.ckks.debug import Report
from ren.ckks.operations import record_operations
from ren.errors import InspectError
from ren.node import Node, toposort
from ren.ops import Op
from ren.viz import arena as av
from ren.viz import jitplan
from ren.viz.compare import Comparison
from ren.viz.golden import default_golden, golden_diff
from ren.viz.graph import (
    MAX_GHOSTS,
    MAX_NODES,
    TooLarge,
    ghost_note,
    render_svg,
    schedule_agraph,
    stage_agraph,
)
from ren.viz.groups import BLOCK, Groups, collapsed_stage, operation_groups
from ren.viz.kernels import kernel_infos
from ren.viz.links import link_data, name_jit, plan_trace
from ren.viz.nodes import FAMILIES, STATUS_STYLE, details
from ren.viz.precision import attainable_bits, precision_of, precision_svg
from ren.viz.programs import Program, as_program
from ren.viz.templating import read, render
from ren.viz.trace import PassTrace, Stage, kernel_lines, stage_text, trace_passes

SECTIONS = ("passes", "arena", "jit", "kernels", "precision", "diff")


@dataclass
class ReportOptions:
    sections: tuple[str, ...] = SECTIONS
    kernel_bodies: bool = False  # draw kernel ASTs as clusters (collapsed by default)
    removed: bool = True  # draw removed nodes as ghosts
    max_nodes: int = MAX_NODES
    golden: Path | None = field(default_factory=default_golden)
    policy: str = "auto"
    device: str | None = None  # renderer for the kernels section
    timings: dict[str, float] = field(default_factory=dict)
    #: a measured comparison of pipelines (`ren.passdev.compare`), shown as its own section
    comparison: Comparison | None = None


def _timed(options: ReportOptions, what: str, fn, *args, **kw):
    t0 = time.perf_counter()
    try:
        return fn(*args, **kw)
    finally:
        options.timings[what] = options.timings.get(what, 0.0) + time.perf_counter() - t0


def stage_contexts(trace: PassTrace, options: ReportOptions, groups: Groups | None = None
                   ) -> tuple[list[dict], dict, dict]:
    """Per stage: title, counts, rules, SVG (or, past the drawing limit, the collapsed view's
    rows) and marked text; the details of every node by id; and the collapsed stages."""
    out, node_data = [], {}
    names = trace.names
    groups = groups or operation_groups(trace, None)
    labels = {k: o.label() for k, o in groups.overlay.items()}
    paths = [" › ".join(groups.path(g)) for g in range(len(groups.table))]  # once per group
    collapsed: dict[str, list] = {}
    # a node kept through the stages keeps its number and sources: its details are made once
    static: dict[tuple[Node, int], dict[str, Any]] = {}
    for stage in trace.stages:
        prev = trace.stages[stage.index - 1] if stage.index else None
        prefix = f"s{stage.index:02d}"
        svg, note = "", ""
        try:
            g = stage_agraph(trace, stage.index, removed=options.removed,
                             kernel_bodies=options.kernel_bodies, prefix=prefix,
                             max_nodes=options.max_nodes, label_note=False, overlay=labels)
            svg = render_svg(g)
        except TooLarge as e:
            note = (f"{e}. Shown collapsed: one box per {_GROUPED_BY[groups.kind]}; click a box "
                    "to open it, search for a node below")
            collapsed[prefix] = collapsed_stage(stage, groups.of_stage[stage.index])
        num = stage.ident
        old = prev.ident if prev is not None else {}
        of = groups.of_stage[stage.index]
        for n in stage.order:
            k = num[n]
            replaced = stage.replaces.get(n)
            was = (f"%{old[replaced]} {replaced.op.name}"
                   if replaced is not None and replaced in old else "")
            base = static.get((n, k))
            if base is None:
                base = static[(n, k)] = details(n, k, num, names)
            info = {**base, "status": stage.status[n], "rule": stage.rule.get(n, "") or "—",
                    "replaces": was or "—"}
            if of.get(n, -1) >= 0:
                info["group"] = paths[of[n]]
                info["gid"] = of[n]  # the page's search finds a group's nodes by it
            if k in groups.overlay:
                info["ciphertext"] = groups.overlay[k].text()
                if not math.isnan(groups.overlay[k].bits):
                    info["bits"] = round(groups.overlay[k].bits, 2)
            node_data[f"{prefix}n{k}"] = info
            if n.op is Op.KERNEL:
                node_data[f"{prefix}n{k}"]["body"] = "\n".join(kernel_lines(n.arg.ast, names))
            if options.kernel_bodies and n.op is Op.KERNEL:
                body = toposort(n.arg.ast)
                local = {m: j for j, m in enumerate(body)}
                for m in body:
                    node_data[f"{prefix}n{k}_{local[m]}"] = details(m, local[m], local, names)
        if prev is not None and options.removed and 0 < len(stage.removed) <= MAX_GHOSTS:
            for n in stage.removed:
                k = old[n]
                by = stage.replaced_by.get(n)
                info = details(n, k, old, names, "removed", stage.rule.get(by, "") if by else "")
                if by is not None:
                    info["replaced by"] = f"%{num[by]} {by.op.name}"
                node_data[f"{prefix}r{k}"] = info
        rule_nodes = stage.rule_nodes()
        contract = trace.ctx.pipeline.contract_at(stage.index - 1) if stage.index else None
        out.append({"index": stage.index, "name": stage.name, "title": stage.title,
                    "counts": stage.counts(), "summary": stage.summary(), "doc": stage.doc,
                    "full_doc": stage.full_doc,
                    "contract": contract.describe() if contract is not None else "",
                    "rules": [(r, k, len(rule_nodes.get(r, ())))
                              for r, k in sorted(stage.rules.items(),
                                                 key=lambda x: (-x[1], x[0]))],
                    "ms": stage.seconds * 1e3, "svg": svg, "note": note,
                    "ghost_note": ghost_note(stage, options.removed),
                    "collapsed": prefix in collapsed,
                    "text": _capped(stage_text(stage, prev, names=names), stage)})
    return out, node_data, collapsed


#: what a collapsed box stands for, by `Groups.kind`
_GROUPED_BY = {"operations": "CKKS operation (the innermost call that built its nodes)",
               "blocks": f"block of {BLOCK} nodes in program order"}
#: a stage's text dump is cut after this many lines (a reader pages the rest with ren-inspect)
MAX_TEXT_LINES = 4000


def _capped(text: str, stage: Stage) -> str:
    lines = text.splitlines()
    if len(lines) <= MAX_TEXT_LINES:
        return text
    return ("\n".join(lines[:MAX_TEXT_LINES])
            + f"\n… {len(lines) - MAX_TEXT_LINES} more lines: `ren-inspect passes PROGRAM "
              f"--pass {stage.index}` prints them all\n")


def compact(node_data: dict[str, dict]) -> dict[str, Any]:
    """Node details as the page carries them (a bootstrapping has 250,000 node ids): per field
    its distinct values once (``values``), each distinct details dict once as a row of value
    indices (``rows``, -1: the field is absent) and every node id -> its row (``ids``)."""
    fields: list[str] = []
    for info in node_data.values():
        fields.extend(f for f in info if f not in fields)
    index: list[dict[Any, int]] = [{} for _ in fields]
    values: list[list[Any]] = [[] for _ in fields]
    rows: list[list[int]] = []
    row_of: dict[tuple, int] = {}
    ids: dict[str, int] = {}
    for node_id, info in node_data.items():
        row = []
        for f, (seen, vals) in enumerate(zip(index, values, strict=True)):
            v = info.get(fields[f], _ABSENT)
            if v is _ABSENT:
                row.append(-1)
                continue
            if v not in seen:
                seen[v] = len(vals)
                vals.append(v)
            row.append(seen[v])
        key = tuple(row)
        if key not in row_of:
            row_of[key] = len(rows)
            rows.append(row)
        ids[node_id] = row_of[key]
    return {"fields": fields, "values": values, "rows": rows, "ids": ids}


_ABSENT = object()


def expand(packed: dict[str, Any]) -> dict[str, dict]:
    """The node details `compact` packed, as {node id: details} again (what the page's script
    rebuilds)."""
    fields, values = packed["fields"], packed["values"]
    rows = [{f: values[i][v] for i, (f, v) in enumerate(zip(fields, row, strict=True)) if v >= 0}
            for row in packed["rows"]]
    return {node_id: rows[r] for node_id, r in packed["ids"].items()}


def ring_legend(trace: PassTrace) -> list[dict[str, Any]]:
    """One row per ring of the trace: its name (the same on every stage), N, limbs, moduli."""
    return [{"name": name, "N": ring.N, "limbs": ring.limbs,
             "moduli": ", ".join(str(q) for q in ring.moduli)} for name, ring in trace.rings()]


#: the colour by precision: a ciphertext part that holds all the bits its parameters attain is
#: green, one that lost `BITS_SPAN` bits or more is red (yellow half way)
BITS_SPAN = 20.0


def _passes(trace: PassTrace, options: ReportOptions, groups: Groups,
            meter: Report | None = None) -> dict[str, Any]:
    stages, node_data, collapsed = _timed(options, "layout", stage_contexts, trace, options,
                                          groups)
    # the groups travel whenever CKKS operations built the graph: the search finds them in
    # drawn stages too; the collapsed view's rows only for the stages past the drawing limit
    view = ({"kind": groups.kind, "groups": groups.table, "stages": collapsed,
             "colours": {f: c for f, (c, _) in FAMILIES.items()}}
            if collapsed or groups.kind == "operations" else {})
    bits = sorted({o.bits for o in groups.overlay.values() if not math.isnan(o.bits)})
    return {"stages": stages, "node_data": node_data, "trace": trace,
            "rings": ring_legend(trace), "collapse": view, "bits": bits,
            "bits_top": round(attainable_bits(meter), 1) if bits and meter else None,
            "bits_span": BITS_SPAN}


def _arena(view: av.ArenaView) -> dict[str, Any]:
    return {"svgs": av.arena_svgs(view), "summary": av.summary_rows(view),
            "rows": av.arena_rows(view), "kept": av.kept_text(view), "steps": view.plan.steps,
            "fmt": av.fmt_bytes}


def jit_view(program: Program, outputs: tuple | None = None) -> jitplan.JitView:
    """The real ``ren.jit`` plan when the program has a function and the JIT is available, else
    the replay template of one realization of `outputs` (default: a fresh build; realizing
    them here does not touch any live Poly)."""
    call = program.call()
    if call is not None:
        view = jitplan.capture_jit(*call)
        if view is not None:
            return view
    view = jitplan.capture_template(outputs if outputs is not None else program.outputs())
    if call is not None:
        view.notes.insert(0, "ren.jit is not available in this build: showing the replay "
                             "template that realization captures for this graph")
    else:
        view.notes.insert(0, "the program has no function to jit (no function + "
                             "example_inputs): showing the replay template that realization "
                             "captures for its graph")
    return view


def _kernels(view: av.ArenaView, options: ReportOptions) -> dict[str, Any]:
    infos = kernel_infos(view, options.device)
    svg, note = "", ""
    if len(view.items) <= options.max_nodes:
        svg = render_svg(schedule_agraph(view.items, view.names))
    else:
        note = (f"the schedule has {len(view.items)} items, more than the drawing limit of "
                f"{options.max_nodes}")
    return {"infos": infos, "svg": svg, "note": note}


def _diff(program: Program, outputs: tuple, trace: PassTrace | None,
          options: ReportOptions) -> dict[str, Any]:
    if options.golden is None:
        return {"note": "no golden directory given", "diffs": []}
    if not (options.golden / program.name).is_dir():  # not an error: say how to make them
        return {"missing": True, "note": "", "diffs": [], "golden": str(options.golden),
                "program": program.name,
                "spec": program.origin if program.origin not in ("corpus", "ckks")
                else program.name}
    try:
        trace = trace or trace_passes(*outputs)
        diffs = golden_diff(trace, program.name, options.golden)
    except InspectError as e:
        return {"note": str(e), "diffs": []}
    return {"note": "", "diffs": diffs, "golden": str(options.golden)}


def _precision(program: Program, report: Report | None) -> dict[str, Any]:
    if report is None:
        return {"note": "not a CKKS example: the precision meter needs an evaluator and a secret "
                        "key (ren.ckks.debug.precision from Python)", "steps": []}
    return {"note": "", "svg": precision_svg(report), "summary": report.summary(),
            "steps": [{"index": st.index, "op": st.op, "level": st.level,
                       "scale": f"{st.log2_scale:.2f}", "bits": f"{st.bits:.1f}",
                       "lost": "" if math.isnan(st.lost) else f"{st.lost:.1f}",
                       "where": f"{Path(st.where).name}: {st.code}"} for st in report.steps]}


def report_context(program: Program, options: ReportOptions | None = None) -> dict[str, Any]:
    options = options or ReportOptions()
    unknown = set(options.sections) - set(SECTIONS)
    if unknown:
        raise InspectError(f"unknown report section(s) {sorted(unknown)}; sections are "
                           + ", ".join(SECTIONS))
    t0 = time.perf_counter()
    ctx: dict[str, Any] = {"program": program, "sections": options.sections,
                           "families": [(f, c) for f, (c, _) in FAMILIES.items()],
                           "statuses": STATUS_STYLE, "node_data": compact({})}
    trace: PassTrace | None = None
    with record_operations() as log:  # the CKKS operations: groups and overlays
        outputs = _timed(options, "build", program.outputs)  # one build serves every section
    meter = None
    if program.ckks is not None and {"precision", "passes"} & set(options.sections):
        meter = _timed(options, "precision", precision_of, program)
    linked = {"passes", "arena", "kernels", "jit"} & set(options.sections)
    if linked:  # one trace, one schedule, one name per buffer for all four (ren.viz.links)
        trace = _timed(options, "passes", trace_passes, *outputs)
        view = _timed(options, "plan", plan_trace, trace, options.policy)
    if "passes" in options.sections and trace is not None:
        passes = _passes(trace, options, operation_groups(trace, log, meter), meter)
        passes.pop("trace")
        ctx["node_data"] = compact(passes.pop("node_data"))
        ctx["passes"] = passes
    if "arena" in options.sections or "kernels" in options.sections:
        ctx["arena"] = _arena(view)
        if "kernels" in options.sections:
            ctx["kernels"] = _timed(options, "kernels", _kernels, view, options)
    unit_item: dict[int, int] = {}
    if "jit" in options.sections and trace is not None:
        ctx["jit"] = _timed(options, "jit", jit_view, program, outputs)
        unit_item = name_jit(ctx["jit"], view, trace.names)
    if linked and trace is not None:
        ctx["links"] = link_data(trace, view, unit_item)
    if "precision" in options.sections:
        ctx["precision"] = _precision(program, meter)
    if "diff" in options.sections:
        ctx["diff"] = _timed(options, "diff", _diff, program, outputs, trace, options)
    if options.comparison is not None:
        ctx["pipelines"] = {"device": options.comparison.device,
                            "html": options.comparison.html()}
    ctx["seconds"] = time.perf_counter() - t0
    return ctx


def report_html(program: Program | Any, options: ReportOptions | None = None, *,
                sections: tuple[str, ...] | None = None) -> str:
    """The HTML report of `program` (all sections unless `sections` narrows them): a Program,
    or a Poly / CKKS ciphertext / tree of them built in Python (`as_program`)."""
    program = as_program(program)
    options = options or ReportOptions()
    if sections is not None:
        options.sections = tuple(sections)
    ctx = report_context(program, options)
    return render("report.html.j2", css=read("report.css"),
                  script="\n".join(read(f) for f in ("report.js", "collapse.js",
                                                      "links.js")),
                  title=f"ren-inspect: {html.escape(program.name)}", **ctx)


__all__ = ["SECTIONS", "ReportOptions", "compact", "expand", "jit_view", "report_context",
           "report_html", "ring_legend", "stage_contexts"]
