"""The graph before and after each of the twelve passes, what each pass changed, and the rules
that fired.

    trace = trace_passes(*polys)              # runs the passes one at a time on one context
    stage = trace.stage(3)                    # or trace.stage("inject_domains")
    stage.status[node]                        # "added" | "changed" | "kept"
    stage.removed                             # nodes of the previous stage that are gone
    stage.rules                               # Counter of the rules fired by this pass
    trace.golden_texts()                      # the tests/golden dumps, stage by stage

**What changed.**  Nodes are hash-consed, so a node that a pass leaves alone is the very same
object before and after it: *kept*.  Of the rest, a new node with the same op, dtype and arg as
a vanished one is *changed* (rebuilt on new sources: the usual effect of a rewrite below it);
pairs are matched sources-first, preferring the one whose sources correspond.  Unpaired new
nodes are *added*, unpaired vanished ones *removed*.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from ren.dump import _lines, _Names, dump, format_arg
from ren.errors import InspectError
from ren.node import Node, toposort
from ren.passes import BECOMES_MAP_STAGE, PASSES, get_pass
from ren.schedule import ScheduleContext, as_sink, run_passes
from ren.viz.templating import first_sentence

MARKS = {"kept": " ", "changed": "~", "added": "+", "removed": "-"}


@dataclass
class Stage:
    """The graph after pass `index` (0: the input), compared with the previous stage."""

    index: int
    name: str  # "00_input", "03_inject_domains", …
    graph: Node
    order: list[Node]
    number: dict[Node, int]
    status: dict[Node, str]
    removed: list[Node] = field(default_factory=list)
    partner: dict[Node, Node] = field(default_factory=dict)  # vanished node -> its rebuild
    rules: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    doc: str = ""  # the pass docstring's first sentence
    full_doc: str = ""  # the whole docstring

    @property
    def title(self) -> str:
        return self.name[3:].replace("_", " ") if self.index else "input"

    def counts(self) -> dict[str, int]:
        c = Counter(self.status.values())
        return {"nodes": len(self.order), "added": c["added"], "changed": c["changed"],
                "removed": len(self.removed)}

    def summary(self) -> str:
        c = self.counts()
        if not self.index:
            return f"{c['nodes']} nodes"
        return (f"{c['nodes']} nodes: +{c['added']} added, ~{c['changed']} changed, "
                f"-{c['removed']} removed")

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
        becomes = self.ctx.becomes_map if stage.name == BECOMES_MAP_STAGE else None
        return dump(stage.graph, becomes)

    def golden_texts(self) -> dict[str, str]:
        return {s.name: self.golden_text(s) for s in self.stages}


def classify(before: list[Node], after: list[Node]) -> tuple[dict[Node, str], list[Node],
                                                             dict[Node, Node]]:
    """(status of each node of `after`, removed nodes of `before`, vanished -> rebuilt)."""
    old = set(before)
    new_nodes = [n for n in after if n not in old]
    kept = set(after)
    gone = [n for n in before if n not in kept]
    by_key: dict[tuple, list[Node]] = {}
    for n in new_nodes:
        by_key.setdefault((n.op, n.dtype, _key(n.arg)), []).append(n)
    partner: dict[Node, Node] = {}
    taken: set[Node] = set()
    for g in gone:  # sources first (toposort order)
        candidates = [n for n in by_key.get((g.op, g.dtype, _key(g.arg)), ()) if n not in taken]
        if not candidates:
            continue
        mapped = tuple(partner.get(s, s) for s in g.src)
        best = next((n for n in candidates if n.src == mapped), candidates[0])
        partner[g] = best
        taken.add(best)
    status = {n: "kept" if n in old else ("changed" if n in taken else "added") for n in after}
    removed = [g for g in gone if g not in partner]
    return status, removed, partner


def _key(arg: object) -> object:
    try:
        hash(arg)
        return arg
    except TypeError:
        return id(arg)


def _stage(index: int, name: str, graph: Node, prev: Stage | None) -> Stage:
    order = toposort(graph)
    number = {n: i for i, n in enumerate(order)}
    if prev is None:
        return Stage(index, name, graph, order, number, dict.fromkeys(order, "kept"))
    status, removed, partner = classify(prev.order, order)
    return Stage(index, name, graph, order, number, status, removed, partner)


def trace_passes(*outputs: object) -> PassTrace:
    """Run the twelve passes one at a time on the outputs (Polys, Nodes or a SINK), keeping the
    graph after each and the rules each fired (with their rule-set name when it is not the
    pass's own)."""
    sink = as_sink(*outputs)
    ctx = ScheduleContext()
    stages = [_stage(0, "00_input", sink, None)]
    for num, name, mod in PASSES:
        before = {k: Counter(v) for k, v in ctx.stats.items()}
        t0 = time.perf_counter()
        sink = run_passes(sink, start=num, upto=num, ctx=ctx).sink
        seconds = time.perf_counter() - t0
        stage = _stage(num, f"{num:02d}_{name}", sink, stages[-1])
        stage.seconds = seconds
        stage.doc = first_sentence(mod.__doc__)
        stage.full_doc = (mod.__doc__ or "").strip()
        for key, counts in ctx.stats.items():
            for rule, k in (counts - before.get(key, Counter())).items():
                stage.rules[rule if key == name else f"{key}.{rule}"] += k
        stages.append(stage)
    return PassTrace(stages, ctx)


# -- text ------------------------------------------------------------------------------------------
def marked_lines(stage: Stage, names: _Names | None = None) -> list[tuple[str, str]]:
    """(status, line) for the stage's dump: one line per node (its kernel body indented under
    it, with the node's status), in the numbering of `ren.dump`."""
    names = names or _Names()
    out = []
    for n in stage.order:
        srcs = "(" + ", ".join(f"%{stage.number[s]}" for s in n.src) + ")" if n.src else ""
        arg = format_arg(n.arg, names)
        parts = [f"%{stage.number[n]} = {n.op.name} {n.dtype.value}", srcs, arg]
        st = stage.status[n]
        out.append((st, " ".join(p for p in parts if p)))
        body = getattr(n.arg, "ast", None) if n.op.name == "KERNEL" else None
        if body is not None:
            out.extend((st, line) for line in _lines(body, names, "    | "))
    return out


def stage_text(stage: Stage, prev: Stage | None = None, marks: bool = True) -> str:
    """The stage as marked text: a header, the rules fired, the graph with a status column
    (``+`` added, ``~`` changed) and the removed nodes (numbered as in the previous stage).
    ``marks=False``: the plain graph (a "before" view)."""
    names = _Names()
    body = marked_lines(stage, names)
    if not marks:
        body = [("kept", line) for _, line in body]
        head = [f"== before: {stage.name}: {len(stage.order)} nodes =="]
    else:
        head = [f"== {stage.name}: {stage.summary()} =="]
    if stage.index and marks:
        head.append(f"   {stage.doc}" if stage.doc else "")
        head.append(f"   rules: {stage.rules_text()}")
        head = [h for h in head if h]
    rings = [f"  rings: {nm} = {ring!r}" for ring, nm in names.rings.items()]
    lines = head + rings + [f"{MARKS[st]} {line}" for st, line in body]
    if stage.removed and prev is not None:
        old_names = _Names()
        marked_lines(prev, old_names)  # name rings and buffers as the previous stage does
        lines.append(f"  removed (numbered as in {prev.name}):")
        for n in stage.removed:
            srcs = ("(" + ", ".join(f"%{prev.number[s]}" for s in n.src) + ")") if n.src else ""
            parts = [f"%{prev.number[n]} = {n.op.name} {n.dtype.value}", srcs,
                     format_arg(n.arg, old_names)]
            lines.append("- " + " ".join(p for p in parts if p))
    return "\n".join(lines) + "\n"


def trace_text(trace: PassTrace, which: int | str | None = None) -> str:
    """Every stage as marked text, or (with `which`) one pass: the graph before it and after."""
    if which is None:
        return "\n".join(stage_text(s, trace.stages[s.index - 1] if s.index else None)
                         for s in trace.stages)
    stage = trace.stage(which)
    if stage.index == 0:
        return stage_text(stage)
    prev = trace.stages[stage.index - 1]
    before = stage_text(prev, marks=False)
    contract = "# " + get_pass(stage.index).CONTRACT.describe().replace("\n", "\n# ") + "\n"
    return before + "\n" + stage_text(stage, prev) + contract


__all__ = ["MARKS", "PassTrace", "Stage", "classify", "marked_lines", "stage_text",
           "trace_passes", "trace_text"]
