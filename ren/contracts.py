"""Stage contracts: what the graph may hold after each scheduling pass, as data, and the check.

Every pass module declares ``CONTRACT = Contract(...)``, its post-condition (the docstring's
"After:" and "Leaves:" lines, made checkable; tinygrad's ``uop/spec.py`` is the model):

  ops      the ops that may appear in the graph after the pass.  Not written by hand: the op
           table says which pass first makes each op and which pass lowers it
           (``OpInfo.introduced_by``, ``OpInfo.lowered_by``; `ren.ops.ops_after`).  Kernel
           bodies (the ASTs inside KERNEL args) are not the graph.
  forbid   shapes that must match no node, each a named `ren.rewrite.Pat`: "an NTT of an INTT",
           "a MUL whose sources are not in the NTT domain".
  checks   whole-graph conditions a pattern cannot state, each a named function returning the
           offending node (or None).

`check(sink, stage, ctx)` raises `ContractError`, naming the pass, the condition broken and the
node (``%k`` is its number in `ren.dump.dump` of that graph).  REN_CHECK=1 checks every pass's
contract as it runs (beside the semantic check); the golden and corpus tests check every stage;
``ren-inspect passes --pass N`` prints `Contract.describe`.

A contract states what holds right after its own pass, not what every later stage keeps: pass 4
turns INTT(AUTOMORPH(NTT(x))) into a COEFF-domain AUTOMORPH, which pass 3's contract forbids.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ren.errors import ContractError
from ren.ir import is_const
from ren.node import Node, consumers, toposort
from ren.ops import Op, ops_after
from ren.rewrite import Pat, RuleSet


@dataclass(frozen=True)
class Forbid:
    """A node shape that must not occur after the pass."""

    what: str  # "an NTT whose source is an INTT"
    pat: Pat


#: what a whole-graph check finds: nothing, the offending node, or (detail, node)
Finding = Node | tuple[str, Node] | None


@dataclass(frozen=True)
class Require:
    """A whole-graph condition: `find(sink, ctx)` returns a node that breaks it (with a detail,
    optionally), or None."""

    what: str  # "every requested output has a becomes_map entry"
    find: Callable[[Node, Any], Finding]


@dataclass(frozen=True)
class Contract:
    """The post-condition of pass `stage` (1..12).  A user pass may leave ``stage`` None: its
    pipeline then checks it at the built-in stage the pass follows (`ren.passes.Pipeline`)."""

    stage: int | None = None
    forbid: tuple[Forbid, ...] = ()
    checks: tuple[Require, ...] = ()

    @cached_property
    def ops(self) -> frozenset[Op]:
        """The ops the graph may hold after this pass (from the op table; every op when the
        stage is not known yet)."""
        return frozenset(Op) if self.stage is None else ops_after(self.stage)

    def violations(self, sink: Node, ctx: Any = None) -> Iterator[tuple[str, Node]]:
        """Each broken condition with the node that breaks it (every node of a forbidden op
        or shape; the first offender of each whole-graph check)."""
        allowed = self.ops
        order = toposort(sink)
        _orders[sink] = order  # the checks walk the same graph (`graph_order`)
        try:
            yield from self._violations(sink, order, allowed, ctx)
        finally:
            _orders.pop(sink, None)

    def _violations(self, sink: Node, order: list[Node], allowed: frozenset[Op],
                    ctx: Any) -> Iterator[tuple[str, Node]]:
        for n in order:
            if n.op not in allowed:
                yield (f"{n.op.name} may not appear after pass {self.stage} (op table: made by "
                       f"pass {n.op.info.introduced_by}, lowered by pass {n.op.info.lowered_by})",
                       n)
                continue
            for f in self.forbid:
                if f.pat.match(n, {}):
                    yield f.what, n
        for req in self.checks:
            bad = req.find(sink, ctx)
            if isinstance(bad, tuple):
                yield f"{req.what} ({bad[0]})", bad[1]
            elif bad is not None:
                yield req.what, bad

    def describe(self) -> str:
        """The contract as text (for ``ren-inspect passes --pass N``)."""
        ops = textwrap.wrap(" ".join(sorted(op.name for op in self.ops)), 80,
                            initial_indent="  ops allowed: ", subsequent_indent="    ")
        lines = [f"contract after pass {self.stage} (checked with REN_CHECK=1):", *ops]
        lines += [f"  never: {f.what}" for f in self.forbid]
        lines += [f"  always: {r.what}" for r in self.checks]
        return "\n".join(lines)


#: the graphs being checked now -> their toposort (a whole-graph check walks the same order)
_orders: dict[Node, list[Node]] = {}


def graph_order(sink: Node) -> list[Node]:
    """`toposort(sink)`, shared with the contract check in progress on `sink` (do not change
    the list)."""
    order = _orders.get(sink)
    return order if order is not None else toposort(sink)


# -- conditions several passes state -----------------------------------------------------------
def fixed_point(rules: RuleSet, what: str = "") -> Require:
    """No rule of `rules` rewrites any node: the pass ran its rules to a fixed point.  (The
    rules are the contract: a shape one of them matches and rewrites may not be left.)"""
    names = ", ".join(dict.fromkeys(r.name for r in rules.rules))

    def find(sink: Node, ctx: Any) -> Finding:
        for n in graph_order(sink):
            if rules.has_rules(n.op):
                hit = rules.apply(n, ctx)
                if hit is not None:
                    return f"rule {hit[1].name} still applies", n
        return None

    return Require(what or f"no rule applies ({names})", find)


def _stray_const(sink: Node, ctx: Any) -> Finding:
    users = consumers(graph_order(sink))
    for n, us in users.items():
        if n.op is Op.CONST and any(u.op is not Op.AS_RING for u in us):
            return n
    return None


#: a constant polynomial is the leaf AS_RING(CONST): a bare CONST has no ring or domain
CONST_UNDER_AS_RING = Require("every CONST sits under an AS_RING", _stray_const)

#: what constant folding leaves: no op computes on constants only
ALL_CONSTANT_OPERANDS = Forbid(
    "an op whose operands are all constants (folding makes it one constant)",
    Pat(where=lambda n: n.op is not Op.SINK and n.op is not Op.AS_RING and bool(n.src)
        and all(map(is_const, n.src))))


def describe_node(n: Node, sink: Node) -> str:
    """``%k = OP (%i, %j)``, numbered as `ren.dump.dump(sink)` numbers it."""
    number = {m: f"%{i}" for i, m in enumerate(toposort(sink))}
    srcs = ", ".join(f"{number.get(s, '?')} {s.op.name}" for s in n.src)
    arg = "" if n.arg is None else f" arg={n.arg!r}"[:80]
    where = "" if n in number else " (not in this graph: e.g. a requested output)"
    return f"{number.get(n, '?')} = {n.op.name}({srcs}){arg}{where}"


def check(sink: Node, contract: Contract, name: str, ctx: Any = None) -> None:
    """Raise `ContractError` if the graph after pass `name` breaks `contract`."""
    found = list(contract.violations(sink, ctx))
    if not found:
        return
    what, node = found[0]
    others = list(dict.fromkeys(w for w, _ in found if w != what))
    also = f"; also: {'; '.join(others[:6])}" if others else ""
    count = f" ({len(found)} offending nodes)" if len(found) > 1 else ""
    raise ContractError(f"pass {name} broke its contract: {what}, at node "
                        f"{describe_node(node, sink)}{also}{count}; ren.dump.dump(graph) "
                        "numbers the nodes; a pass must leave only what its contract allows")


__all__ = ["ALL_CONSTANT_OPERANDS", "CONST_UNDER_AS_RING", "Contract", "ContractError", "Forbid",
           "Require", "check", "describe_node", "fixed_point"]
