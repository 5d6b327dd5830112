"""Who is who from one stage to the next: what a pass did to each node, which rule did it, and a
number for each node that survives the passes.

    ch = compare(prev_order, order, provenance)   # provenance: ren.rewrite.Provenance or None
    ch.status[n]        "kept" | "rebuilt" | "rewritten" | "added"
    ch.rule[n]          the rule that produced n (rewritten nodes and the new nodes of a rule's
                        replacement)
    ch.replaces[n]      the node of the previous stage that rule replaced
    ch.partner[old]     a vanished node -> the node that carries its identity on
    ch.removed          the vanished nodes nobody carries on

**Statuses.**  Nodes are hash-consed, so a node the pass left alone is the very same object:
*kept*.  The rewrite driver's provenance (recorded while tracing) says the rest: the final form
of a rule's product is *rewritten* by that rule, and the other new nodes of that product are
*added* by it; a node that only stands in for an old one because its sources changed (an entry
in ``became``, no firing) is *rebuilt*.  Work a pass does outside the rewrite driver leaves no
provenance: there a new node with the op, dtype and arg of a vanished one is *rebuilt* (pairs
matched sources first, preferring the one whose sources correspond), the rest *added*.

**Identity.**  A rebuilt node carries on the identity of the node it rebuilds, and so does a
rewritten node with the op, dtype and arg of the node its rule replaced (the MUL that pass 3 puts
on NTT inputs is the same MUL).  `numbering` gives every node the number it had where it was
first seen; a new node gets a number after all the numbers used so far, so a removed node and
an added one never share a number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ren.node import Node
from ren.rewrite import Firing, Provenance

STATUSES = ("kept", "rebuilt", "rewritten", "added")


@dataclass
class Changes:
    """What one pass did to the graph (see the module docstring)."""

    status: dict[Node, str]
    removed: list[Node] = field(default_factory=list)
    partner: dict[Node, Node] = field(default_factory=dict)  # vanished node -> its successor
    rule: dict[Node, str] = field(default_factory=dict)
    replaces: dict[Node, Node] = field(default_factory=dict)
    replaced_by: dict[Node, Node] = field(default_factory=dict)  # removed node -> its product


def _key(n: Node) -> tuple[Any, ...]:
    try:
        hash(n.arg)
        arg: object = n.arg
    except TypeError:
        arg = id(n.arg)
    return (n.op, n.dtype, arg)


def rule_label(f: Firing, pass_name: str) -> str:
    """A firing's rule as a pass trace names it: ``rule``, or ``ruleset.rule`` when the rule set
    is not the pass's own."""
    return f.rule if f.rules == pass_name else f"{f.rules}.{f.rule}"


def compare(before: list[Node], after: list[Node], prov: Provenance | None = None,
            pass_name: str = "") -> Changes:
    """The changes from the graph `before` to `after` (both in toposort order)."""
    old = set(before)
    new_set = {n for n in after if n not in old}
    ch = Changes({n: "kept" for n in after if n in old})
    if prov is not None:
        _from_provenance(ch, before, old, new_set, prov, pass_name)
    _pair_the_rest(ch, before, after, old)
    for n in after:
        ch.status.setdefault(n, "added")
    ch.status = {n: ch.status[n] for n in after}  # in graph order
    ch.removed = [g for g in before if g not in ch.status and g not in ch.partner]
    gone = set(ch.removed)
    ch.replaced_by = {o: n for n, o in ch.replaces.items() if o in gone}
    return ch


def _from_provenance(ch: Changes, before: list[Node], old: set[Node], new_set: set[Node],
                     prov: Provenance, pass_name: str) -> None:
    came_from: dict[Node, Node] = {}
    owner: dict[Node, Firing] = {}  # the final form of a product -> the firing that made it
    for f in prov.firings:
        came_from.setdefault(f.product, f.replaced)
        fin = prov.final(f.product)
        if fin in new_set and (fin not in owner or f.product is fin):
            owner[fin] = f

    def origin(x: Node) -> Node | None:
        seen: set[Node] = set()
        while x not in old and x in came_from and x not in seen:
            seen.add(x)
            x = came_from[x]
        return x if x in old else None

    for fin, f in owner.items():  # the rewritten nodes, and who carries the replaced one on
        label = rule_label(f, pass_name)
        o = origin(f.replaced)
        heir = fin
        if o is not None and o not in ch.partner:
            heir = _same_node(fin, o, new_set, ch) or fin
            if _key(heir) == _key(o):
                ch.partner[o] = heir
        ch.status[heir] = "rewritten"
        ch.rule[heir] = label
        if o is not None:
            ch.replaces[heir] = o
        if heir is not fin and fin not in ch.status:
            ch.status[fin] = "added"
            ch.rule[fin] = label
    for p in before:  # rebuilt only because a source changed
        if p in ch.status or p in ch.partner:
            continue
        fin = prov.final(p)
        if fin in new_set and fin not in ch.status and _key(fin) == _key(p):
            ch.status[fin] = "rebuilt"
            ch.partner[p] = fin
    for fin, f in owner.items():  # the other new nodes of each rule's replacement
        label = rule_label(f, pass_name)
        stack, seen = [fin], set()
        while stack:
            x = stack.pop()
            if x in seen or x not in new_set:
                continue
            seen.add(x)
            if x not in ch.status:
                ch.status[x] = "added"
                ch.rule[x] = label
            elif ch.rule.get(x) != label:
                continue  # another rule's (or a rebuilt node): not part of this replacement
            stack.extend(x.src)


def _same_node(fin: Node, o: Node, new_set: set[Node], ch: Changes) -> Node | None:
    """The node of `fin`'s new subgraph (nearest the top) with `o`'s op, dtype and arg."""
    want, stack, seen = _key(o), [fin], set()
    while stack:
        x = stack.pop(0)
        if x in seen or x not in new_set or (x in ch.status and x is not fin):
            continue
        seen.add(x)
        if _key(x) == want:
            return x
        stack.extend(x.src)
    return None


def _pair_the_rest(ch: Changes, before: list[Node], after: list[Node], old: set[Node]) -> None:
    """Without provenance: a new node with a vanished one's op, dtype and arg rebuilds it."""
    by_key: dict[tuple, list[Node]] = {}
    for n in after:
        if n not in old and n not in ch.status:
            by_key.setdefault(_key(n), []).append(n)
    if not by_key:
        return
    taken: set[Node] = set()
    now = set(after)
    for g in before:  # sources first (toposort order)
        if g in now or g in ch.partner:
            continue
        candidates = [n for n in by_key.get(_key(g), ()) if n not in taken]
        if not candidates:
            continue
        mapped = tuple(ch.partner.get(s, s) for s in g.src)
        best = next((n for n in candidates if n.src == mapped), candidates[0])
        ch.partner[g] = best
        ch.status[best] = "rebuilt"
        taken.add(best)


def numbering(prev: dict[Node, int] | None, order: list[Node], ch: Changes | None,
              next_number: int) -> tuple[dict[Node, int], int]:
    """Each node's lasting number (see the module docstring) and the next unused number."""
    if prev is None or ch is None:
        return {n: i for i, n in enumerate(order)}, len(order)
    heir = {n: o for o, n in ch.partner.items()}
    out: dict[Node, int] = {}
    for n in order:
        if n in prev:
            out[n] = prev[n]
        elif n in heir and heir[n] in prev:
            out[n] = prev[heir[n]]
        else:
            out[n] = next_number
            next_number += 1
    return out, next_number


__all__ = ["STATUSES", "Changes", "compare", "numbering", "rule_label"]
