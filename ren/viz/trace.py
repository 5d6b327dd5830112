"""The graph before and after each of the twelve passes, what each pass changed, and the rules
that fired.

    trace = trace_passes(*polys)              # runs the passes one at a time on one context
    stage = trace.stage(3)                    # or trace.stage("inject_domains")
    stage.status[node]                        # "kept" | "rebuilt" | "rewritten" | "added"
    stage.rule[node], stage.replaces[node]    # the rule that made it, the node it replaced
    stage.ident[node]                         # its number, the same on every stage
    stage.removed                             # nodes of the previous stage that are gone
    stage.rules                               # Counter of the rules fired by this pass
    trace.names                               # ring and buffer names, one for the whole trace
    trace.golden_texts()                      # the tests/golden dumps, stage by stage

**What changed** is `ren.viz.identity.compare` of the stage with the previous one, read from the
rewrite driver's provenance (`ren.schedule.run_passes` records it while tracing): *rewritten* by
a rule, *added* (by a rule, or by a pass's own code), *rebuilt* only because a source changed,
*kept*, *removed*.  **Numbers**: a node keeps the number it had where it was first seen (a
rebuilt node, and a rewritten one that is the same op on new sources, carry on the number of
the node they stand in for); new nodes are numbered after every number used before, so a
number means one node in the whole trace.  The text and pictures use these numbers (a kernel's
body, indented under its KERNEL node, numbers its own nodes ``$0``, ``$1``, …); the golden dumps
(`golden_text`) keep `ren.dump`'s own canonical numbering (`stage.number`).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from ren.dump import _Names, dump, format_arg
from ren.errors import InspectError
from ren.node import Node, toposort
from ren.passes import BECOMES_MAP_STAGE
from ren.passes.pipeline import Pipeline
from ren.rewrite import Provenance
from ren.ring import RingSpec
from ren.schedule import ScheduleContext, as_sink, run_passes
from ren.viz.identity import Changes, compare, numbering
from ren.viz.templating import first_sentence

MARKS = {"kept": " ", "rebuilt": "~", "rewritten": "*", "added": "+", "removed": "-"}


@dataclass
class Stage:
    """The graph after pass `index` (0: the input), compared with the previous stage."""

    index: int
    name: str  # "00_input", "03_inject_domains", …
    graph: Node
    order: list[Node]
    number: dict[Node, int]  # ren.dump's numbering of this graph (the goldens')
    status: dict[Node, str]
    removed: list[Node] = field(default_factory=list)
    partner: dict[Node, Node] = field(default_factory=dict)  # vanished node -> its successor
    ident: dict[Node, int] = field(default_factory=dict)  # the lasting number of each node
    rule: dict[Node, str] = field(default_factory=dict)  # the rule that produced a node
    replaces: dict[Node, Node] = field(default_factory=dict)  # node -> the node its rule replaced
    replaced_by: dict[Node, Node] = field(default_factory=dict)  # removed node -> its product
    rules: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    doc: str = ""  # the pass docstring's first sentence
    full_doc: str = ""  # the whole docstring

    @property
    def title(self) -> str:
        return self.name[3:].replace("_", " ") if self.index else "input"

    def counts(self) -> dict[str, int]:
        c = Counter(self.status.values())
        return {"nodes": len(self.order), "added": c["added"], "rewritten": c["rewritten"],
                "rebuilt": c["rebuilt"], "removed": len(self.removed)}

    def summary(self) -> str:
        c = self.counts()
        if not self.index:
            return f"{c['nodes']} nodes"
        return (f"{c['nodes']} nodes: +{c['added']} added, *{c['rewritten']} rewritten, "
                f"~{c['rebuilt']} rebuilt, -{c['removed']} removed")

    def rule_nodes(self) -> dict[str, list[Node]]:
        """Each rule that fired -> the nodes of this stage it produced."""
        out: dict[str, list[Node]] = {}
        for n in self.order:
            if n in self.rule:
                out.setdefault(self.rule[n], []).append(n)
        return out

    def rules_text(self) -> str:
        if not self.rules:
            return "no rule fired"
        return ", ".join(f"{r} ×{k}" for r, k in sorted(self.rules.items(),
                                                          key=lambda x: (-x[1], x[0])))


@dataclass
class PassTrace:
    """Every stage of one scheduling run (`trace_passes`)."""

    stages: list[Stage]
    ctx: ScheduleContext
    names: _Names = field(default_factory=_Names)  # ring/buffer names shared by every stage

    def rings(self) -> list[tuple[str, RingSpec]]:
        """The ring legend: (name, ring) in order of first appearance."""
        return [(name, ring) for ring, name in self.names.rings.items()]

    def stage(self, which: int | str) -> Stage:
        """A stage by pass number (0 = input), or by name ("simplify", "03_inject_domains")."""
        for s in self.stages:
            if which in (s.index, s.name, s.name[3:]) or (isinstance(which, str)
                                                         and which.isdigit()
                                                         and int(which) == s.index):
                return s
        names = ", ".join(s.name for s in self.stages)
        raise InspectError(f"no pass {which!r}; give a number 0..{len(self.stages) - 1} or a "
                           f"name: {names}")

    def golden_text(self, stage: Stage) -> str:
        """The stage's canonical dump, exactly as in tests/golden (the becomes_map goes with
        pass 7)."""
        becomes = self.ctx.becomes_map if stage.name[3:] == BECOMES_MAP_STAGE[3:] else None
        return dump(stage.graph, becomes)

    def golden_texts(self) -> dict[str, str]:
        return {s.name: self.golden_text(s) for s in self.stages}

    def __repr__(self) -> str:
        return (f"<PassTrace {len(self.stages)} stages: {len(self.stages[0].order)} nodes in, "
                f"{len(self.stages[-1].order)} out>")

    def _repr_html_(self) -> str:  # Jupyter: the table of passes and the changed stages
        from ren.viz.notebook import trace_html

        return trace_html(self)


def classify(before: list[Node], after: list[Node], prov: Provenance | None = None,
             pass_name: str = "") -> tuple[dict[Node, str], list[Node], dict[Node, Node]]:
    """(status of each node of `after`, removed nodes of `before`, vanished -> successor)."""
    ch = compare(before, after, prov, pass_name)
    return ch.status, ch.removed, ch.partner


def _stage(index: int, name: str, graph: Node, prev: Stage | None, prov: Provenance | None,
           next_number: int) -> tuple[Stage, int]:
    order = toposort(graph)
    number = {n: i for i, n in enumerate(order)}
    if prev is None:
        ident, next_number = numbering(None, order, None, next_number)
        return Stage(index, name, graph, order, number, dict.fromkeys(order, "kept"),
                     ident=ident), next_number
    ch: Changes = compare(prev.order, order, prov, name[3:])
    ident, next_number = numbering(prev.ident, order, ch, next_number)
    return Stage(index, name, graph, order, number, ch.status, ch.removed, ch.partner, ident,
                 ch.rule, ch.replaces, ch.replaced_by), next_number


def trace_passes(*outputs: object, pipeline: Pipeline | str | None = None) -> PassTrace:
    """Run the passes of `pipeline` (default: the one in force) one at a time on the outputs
    (Polys, Nodes or a SINK), keeping the graph after each and the rules each fired (with their
    rule-set name when it is not the pass's own)."""
    sink = as_sink(*outputs)
    ctx = ScheduleContext()
    if pipeline is not None:
        ctx.pipeline = Pipeline.parse(pipeline)
    first, next_number = _stage(0, "00_input", sink, None, None, 0)
    stages = [first]
    for num, mod in enumerate(ctx.pipeline, 1):
        name = mod.name
        before = {k: Counter(v) for k, v in ctx.stats.items()}
        t0 = time.perf_counter()
        run = run_passes(sink, start=num, upto=num, ctx=ctx, trace=True)
        seconds = time.perf_counter() - t0
        sink = run.sink
        prov = run.provenance[0][1] if run.provenance else None
        stage, next_number = _stage(num, f"{num:02d}_{name}", sink, stages[-1], prov,
                                    next_number)
        stage.seconds = seconds
        stage.doc = first_sentence(mod.doc)
        stage.full_doc = mod.doc
        for key, counts in ctx.stats.items():
            for rule, k in (counts - before.get(key, Counter())).items():
                stage.rules[rule if key == name else f"{key}.{rule}"] += k
        stages.append(stage)
    trace = PassTrace(stages, ctx)
    for stage in stages:  # name rings and buffers once, by first appearance in the trace
        marked_lines(stage, trace.names)
    return trace


def input_trace(*outputs: object) -> PassTrace:
    """A trace of the input stage alone (no pass runs): enough to draw the graph as built."""
    sink = as_sink(*outputs)
    stage, _ = _stage(0, "00_input", sink, None, None, 0)
    trace = PassTrace([stage], ScheduleContext())
    marked_lines(stage, trace.names)
    return trace


# -- text ------------------------------------------------------------------------------------------
def _numbers(stage: Stage) -> dict[Node, int]:
    return stage.ident or stage.number


def note(stage: Stage, n: Node, numbers: dict[Node, int] | None = None) -> str:
    """Where a node of the stage came from: ``mul_in_ntt``, ``to_automorph, replaces %3``."""
    rule = stage.rule.get(n)
    if rule is None:
        return ""
    replaced = stage.replaces.get(n)
    numbers = numbers or {}
    if replaced is None or stage.partner.get(replaced) is n or replaced not in numbers:
        return rule
    return f"{rule}, replaces %{numbers[replaced]}"


def marked_lines(stage: Stage, names: _Names | None = None, notes: bool = False,
                 prev: Stage | None = None) -> list[tuple[str, str]]:
    """(status, line) for the stage's graph: one line per node in `ren.dump`'s order and format
    (its kernel body indented under it, with the node's status), numbered by the nodes' lasting
    numbers; with `notes`, each node a rule produced ends with ``# rule``."""
    names = names or _Names()
    num = _numbers(stage)
    old = _numbers(prev) if prev is not None else {}
    out = []
    for n in stage.order:
        srcs = "(" + ", ".join(f"%{num[s]}" for s in n.src) + ")" if n.src else ""
        arg = format_arg(n.arg, names)
        parts = [f"%{num[n]} = {n.op.name} {n.dtype.value}", srcs, arg]
        if notes and n in stage.rule:
            parts.append(f"  # {note(stage, n, old)}")
        st = stage.status[n]
        out.append((st, " ".join(p for p in parts if p)))
        body = getattr(n.arg, "ast", None) if n.op.name == "KERNEL" else None
        if body is not None:
            out.extend((st, line) for line in kernel_lines(body, names, "    | "))
    return out


def kernel_lines(root: Node, names: _Names, indent: str = "") -> list[str]:
    """A kernel's body in `ren.dump`'s format but numbered ``$0``, ``$1``, … (local to the
    body: a graph node is ``%k`` on every stage, so the two never read alike)."""
    order = toposort(root)
    local = {n: i for i, n in enumerate(order)}
    out = []
    for n in order:
        srcs = "(" + ", ".join(f"${local[s]}" for s in n.src) + ")" if n.src else ""
        parts = [f"{indent}${local[n]} = {n.op.name} {n.dtype.value}", srcs,
                 format_arg(n.arg, names)]
        out.append(" ".join(p for p in parts if p))
        body = getattr(n.arg, "ast", None) if n.op.name == "KERNEL" else None
        if body is not None:
            out.extend(kernel_lines(body, names, indent + "    | "))
    return out


class _Seen(_Names):
    """`shared` names, noting the rings asked for (in order): a stage's ring header."""

    def __init__(self, shared: _Names) -> None:
        super().__init__(shared.rings, shared.buffers)
        self.shared = shared
        self.used: dict[RingSpec, str] = {}

    def ring(self, r: RingSpec) -> str:
        name = self.shared.ring(r)
        self.used.setdefault(r, name)
        return name


def stage_text(stage: Stage, prev: Stage | None = None, marks: bool = True,
               names: _Names | None = None) -> str:
    """The stage as marked text: a header, the rules fired, the graph with a status column
    (``+`` added, ``*`` rewritten by a rule, ``~`` rebuilt on new sources; a rule's nodes end
    with ``# rule``) and the removed nodes.  ``marks=False``: the plain graph (a "before" view).
    `names`: the trace's ring and buffer names (`PassTrace.names`), else the stage's own."""
    given = names is not None
    seen = _Seen(names or _Names())  # one pass: the lines, and the rings this stage uses
    body = marked_lines(stage, seen, notes=marks, prev=prev)
    names, used = seen.shared, seen.used
    if not marks:
        body = [("kept", line) for _, line in body]
        head = [f"== before: {stage.name}: {len(stage.order)} nodes =="]
    else:
        head = [f"== {stage.name}: {stage.summary()} =="]
    if stage.index and marks:
        head.append(f"   {stage.doc}" if stage.doc else "")
        head.append(f"   rules: {stage.rules_text()}")
        head = [h for h in head if h]
    rings = [f"  rings: {name} = {ring!r}" for ring, name in used.items()]
    lines = head + rings + [f"{MARKS[st]} {line}" for st, line in body]
    if stage.removed and prev is not None:
        if not given:
            names = _Names()
            marked_lines(prev, names)  # name rings and buffers as the previous stage does
        old = _numbers(prev)
        lines.append("  removed:")
        for n in stage.removed:
            srcs = ("(" + ", ".join(f"%{old[s]}" for s in n.src) + ")") if n.src else ""
            parts = [f"%{old[n]} = {n.op.name} {n.dtype.value}", srcs, format_arg(n.arg, names)]
            by = stage.replaced_by.get(n)
            if by is not None:
                parts.append(f"  # replaced by %{_numbers(stage)[by]} ({stage.rule[by]})")
            lines.append("- " + " ".join(p for p in parts if p))
    return "\n".join(lines) + "\n"


def trace_text(trace: PassTrace, which: int | str | None = None) -> str:
    """Every stage as marked text, or (with `which`) one pass: the graph before it and after."""
    names = trace.names
    if which is None:
        return "\n".join(stage_text(s, trace.stages[s.index - 1] if s.index else None,
                                    names=names) for s in trace.stages)
    stage = trace.stage(which)
    if stage.index == 0:
        return stage_text(stage, names=names)
    prev = trace.stages[stage.index - 1]
    before = stage_text(prev, marks=False, names=names)
    found = trace.ctx.pipeline.contract_at(stage.index - 1)
    contract = "" if found is None else \
        "# " + found.describe().replace("\n", "\n# ") + "\n"
    return before + "\n" + stage_text(stage, prev, names=names) + contract


__all__ = ["MARKS", "PassTrace", "Stage", "classify", "input_trace", "kernel_lines",
           "marked_lines", "note", "stage_text", "trace_passes", "trace_text"]
