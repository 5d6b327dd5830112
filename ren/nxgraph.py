"""networkx views of the IR: take the graph between any two passes out, analyse or edit it, and
feed it back.

`to_networkx(root)` gives an ``nx.DiGraph`` whose vertices are the dump numbers of the nodes,
with attributes ``op``, ``dtype``, ``arg`` (the Python object), ``label`` (its text),
and ``ring`` / ``domain`` / ``device`` for polynomial-valued nodes.  An edge s -> n means s is a
source of n; its ``slots`` attribute lists the source positions (so ADD(x, x) is one edge with
slots (0, 1)).  ``g.graph["root"]`` names the root.  `from_networkx(g)` rebuilds the Node DAG
from those attributes, so edits to ops, args or edges take effect.
"""

from __future__ import annotations

import networkx as nx

from ren.dump import _Names, format_arg
from ren.errors import ScheduleError
from ren.node import Node, toposort
from ren.spec import spec_of


def to_networkx(root: Node) -> nx.DiGraph:
    g = nx.DiGraph()
    order = toposort(root)
    number = {n: i for i, n in enumerate(order)}
    names = _Names()
    for n in order:
        attrs = {"op": n.op, "dtype": n.dtype, "arg": n.arg,
                 "label": f"{n.op.name} {format_arg(n.arg, names)}".strip()}
        s = spec_of(n)
        if s is not None:
            attrs.update(ring=s.ring, domain=s.domain, device=s.device)
        g.add_node(number[n], **attrs)
        for pos, src in enumerate(n.src):
            u = number[src]
            if g.has_edge(u, number[n]):
                g.edges[u, number[n]]["slots"] += (pos,)
            else:
                g.add_edge(u, number[n], slots=(pos,))
    g.graph["root"] = number[root]
    return g


def from_networkx(g: nx.DiGraph) -> Node:
    """Rebuild the Node DAG described by `g` (as made by `to_networkx`, possibly edited)."""
    if not nx.is_directed_acyclic_graph(g):
        raise ScheduleError("from_networkx: the graph has a cycle; an IR graph must be a DAG")
    built: dict = {}
    for v in nx.lexicographical_topological_sort(g, key=str):
        data = g.nodes[v]
        try:
            op, dtype, arg = data["op"], data["dtype"], data.get("arg")
        except KeyError as e:
            raise ScheduleError(f"from_networkx: vertex {v} lacks attribute {e}") from None
        slots: dict[int, Node] = {}
        for u in g.predecessors(v):
            for pos in g.edges[u, v].get("slots", (len(slots),)):
                if pos in slots:
                    raise ScheduleError(f"from_networkx: vertex {v} has two sources in slot {pos}")
                slots[pos] = built[u]
        if sorted(slots) != list(range(len(slots))):
            raise ScheduleError(f"from_networkx: vertex {v} has source slots {sorted(slots)}; "
                                "slots must be 0..k-1")
        built[v] = Node(op, dtype, tuple(slots[i] for i in range(len(slots))), arg)
    root = g.graph.get("root")
    if root is None:
        sinks = [v for v in g if g.out_degree(v) == 0]
        if len(sinks) != 1:
            raise ScheduleError("from_networkx: set g.graph['root'] (the graph has several sinks)")
        root = sinks[0]
    return built[root]


def roundtrip(root: Node) -> Node:
    """to_networkx then from_networkx: identity on any graph (hash-consing makes it `is`)."""
    out = from_networkx(to_networkx(root))
    assert out is root or toposort(out)
    return out


__all__ = ["from_networkx", "roundtrip", "to_networkx"]
