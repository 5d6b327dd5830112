"""Large graphs, collapsed: every node of every stage in a group, and the CKKS overlays.

A bootstrapping's stages have 6,000–38,000 nodes: too many for one Graphviz picture or for a
reader.  A stage past the drawing limit is shown collapsed instead (``templates/collapse.js``):
its groups as boxes, a click on a group opens it (its sub-groups and its own nodes, laid out in
the page), a breadcrumb leads back, and a search box finds a node by ``%k``, an op, or a group.

**The groups** are the CKKS operations that built the graph (`ren.ckks.operations`): a node
belongs to the innermost Evaluator or bootstrapping call that made it (``relinearize`` inside
``multiply`` inside ``eval_mod`` inside ``bootstrap``), named by the operation and its count
among the program's calls of that operation (``relinearize #0`` is the first relinearize).  A
node a pass adds belongs to the group of the node it replaced, else of its first grouped
source.  A graph no CKKS operation built (a Poly program) is grouped in blocks of `BLOCK` nodes
in program order instead.

**The overlays**: every node that is a part of a ciphertext an operation returned carries that
ciphertext's level and log2 scale (in its label and its details), and, when the precision meter
ran (the built-in CKKS examples), the bits of precision measured there; a toggle colours those
nodes by their bits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ren.ckks.debug import Report
from ren.ckks.operations import OperationLog
from ren.node import Node
from ren.viz.trace import PassTrace, Stage

#: nodes per block when no CKKS operation built the graph
BLOCK = 200
#: one character per diff status in the page's compact node arrays
STATUS_CODE = {"kept": "k", "rebuilt": "c", "rewritten": "w", "added": "a"}


@dataclass
class Overlay:
    """What a ciphertext part shows: its operation, part, level, log2 scale and bits."""

    operation: str
    part: int
    level: int
    log2_scale: float
    bits: float = math.nan

    def label(self) -> str:
        bits = "" if math.isnan(self.bits) else f" · {self.bits:.1f} b"
        return f"L{self.level} · 2^{self.log2_scale:.1f}{bits}"

    def text(self) -> str:
        bits = "" if math.isnan(self.bits) else f", {self.bits:.1f} bits of precision"
        return (f"part {self.part} of {self.operation}: level {self.level}, scale "
                f"2^{self.log2_scale:.2f}{bits}")


@dataclass
class Groups:
    """The groups of a trace (one table for every stage), each stage's node -> group, and the
    overlays by lasting node number."""

    table: list[dict[str, Any]] = field(default_factory=list)  # name, parent, where, level…
    of_stage: list[dict[Node, int]] = field(default_factory=list)
    overlay: dict[int, Overlay] = field(default_factory=dict)  # lasting number -> overlay
    kind: str = "blocks"  # "operations" or "blocks"

    def path(self, g: int) -> list[str]:
        out = []
        while g >= 0:
            out.append(self.table[g]["name"])
            g = self.table[g]["parent"]
        return out[::-1]


def _short(where: str) -> str:
    file, _, line = where.rpartition(":")
    return f"{Path(file).name}:{line}"


def operation_groups(trace: PassTrace, log: OperationLog | None,
                     precision: Report | None = None) -> Groups:
    """The `Groups` of `trace`, from the operations recorded while its graph was built (None or
    an empty log: blocks of program order)."""
    if log is None or not log.operations:
        return _blocks(trace)
    out = Groups(kind="operations")
    seen: dict[str, int] = {}  # "relinearize #0" is the program's first relinearize
    for op in log.operations:
        last = op.results[-1] if op.results else None
        seen[op.name] = seen.get(op.name, -1) + 1
        out.table.append({"name": f"{op.name} #{seen[op.name]}",
                          "parent": -1 if op.parent is None else op.parent,
                          "where": _short(op.where),
                          "level": last.level if last else None,
                          "scale": round(last.log2_scale, 2) if last else None})
    first = trace.stages[0]
    built = log.node_groups()
    groups = {n: built.get(n, -1) for n in first.order}
    _to_consumers(first.order, groups)
    out.of_stage.append(groups)
    bits = _bits_of(log, precision)
    for n, (index, part, result) in log.ciphertext_nodes().items():
        if n in first.ident:
            out.overlay[first.ident[n]] = Overlay(out.table[index]["name"], part,
                                                  result.level, result.log2_scale,
                                                  bits.get(id(result), math.nan))
    by_number = {first.ident[n]: g for n, g in groups.items()}
    for stage in trace.stages[1:]:
        prev = out.of_stage[-1]
        out.of_stage.append(_carry(stage, prev, by_number))
    return out


def _carry(stage: Stage, prev: dict[Node, int], by_number: dict[int, int]) -> dict[Node, int]:
    """A later stage's groups: a lasting number keeps its group; a new node takes the group of
    the node it replaced, else of its first grouped source (stage order is topological), else
    of its first grouped consumer (`_to_consumers`).  `by_number` remembers them for later
    stages."""
    groups: dict[Node, int] = {}
    for n in stage.order:
        k = stage.ident[n]
        g = by_number.get(k, -1)
        if g < 0:
            replaced = stage.replaces.get(n)
            g = prev.get(replaced, -1) if replaced is not None else -1
            if g < 0:
                g = next((groups[s] for s in n.src if groups.get(s, -1) >= 0), -1)
            by_number[k] = g
        groups[n] = g
    _to_consumers(stage.order, groups)
    for n in stage.order:
        if by_number.get(stage.ident[n], -1) < 0:
            by_number[stage.ident[n]] = groups[n]
    return groups


def _to_consumers(order: list[Node], groups: dict[Node, int]) -> None:
    """Nodes no operation built and no grouped source explains (constants, buffers, a pass's
    new leaves) join the group of their first grouped consumer."""
    for n in reversed(order):
        g = groups[n]
        if g >= 0:
            for s in n.src:
                if groups.get(s, -1) < 0:
                    groups[s] = g


def _bits_of(log: OperationLog, precision: Report | None) -> dict[int, float]:
    """id(Result) -> bits, matching the meter's steps (its top-level calls, in order, without
    the inputs) to the log's top-level operations; {} when they do not line up."""
    if precision is None:
        return {}
    steps = [s for s in precision.steps if s.op != "input"]
    out: dict[int, float] = {}
    i = 0
    for op in log.operations:
        if op.depth:
            continue
        for r in op.results:
            if i >= len(steps) or steps[i].op.split("[")[0] != op.name:
                return {}
            out[id(r)] = steps[i].bits
            i += 1
    return out if i == len(steps) else {}


def _blocks(trace: PassTrace) -> Groups:
    out = Groups(kind="blocks")
    most = max(len(s.order) for s in trace.stages)
    for b in range(math.ceil(most / BLOCK)):
        out.table.append({"name": f"nodes {b * BLOCK}–{(b + 1) * BLOCK - 1}", "parent": -1,
                          "where": "program order", "level": None, "scale": None})
    for stage in trace.stages:
        out.of_stage.append({n: i // BLOCK for i, n in enumerate(stage.order)})
    return out


def collapsed_stage(stage: Stage, groups: dict[Node, int]) -> list[list[Any]]:
    """A stage for the page's collapsed view: one row per node, in order:
    [lasting number, op, status code, group, [source numbers]]."""
    num = stage.ident
    return [[num[n], n.op.name, STATUS_CODE[stage.status[n]], groups.get(n, -1),
             [num[s] for s in n.src]] for n in stage.order]


__all__ = ["BLOCK", "Groups", "Overlay", "collapsed_stage", "operation_groups"]
