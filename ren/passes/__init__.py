"""The twelve scheduling passes, in pipeline order, and the pipeline they make.

The passes a scheduling run applies are a value, `Pipeline` (`ren.passes.pipeline`):
`default_pipeline()` is the twelve below; a researcher inserts, replaces or removes passes (a
`Pass` of their own: a name, a docstring, a `Contract` and rules in the pattern DSL — `P`, `X`,
`Rule`, `RuleSet`, `rewrite`, all exported here — or a ``run`` function) and gets a new one.

Each built-in pass module has ``NAME``, a docstring (what it rewrites, the invariant after it,
the ops it may leave), ``CONTRACT`` (that invariant as data, checked: `ren.contracts`) and
``run(sink, ctx) -> sink``.  Each runs on its own on the graph the previous pass made (or on one
rebuilt from networkx).

A pass whose ``run`` is exactly one walk of its module's ``rules`` (``rewrite(sink, rules, ctx,
name=NAME)``) and whose rules look only at a node, its sources and the node as the walk met it
(``orig``, `ren.rewrite`) sets ``FUSABLE = True`` (passes 6 and 8-12); a pass that only records
what it finds, the same on the graphs the later passes of its row make, sets ``RECORDS_ONLY =
True`` (pass 7).  When nothing watches the graphs between them (no trace, no ``REN_CHECK``, no
``REN_DEBUG=3`` dumps), `ren.schedule` runs such a row as one walk with the rules in pass order,
then the recorders: the same final graph, node for node, the same records and the same rule
counts per pass (tested over the corpus, random programs and a bootstrapping), without
rebuilding the whole graph once per pass.  In a fused
row, a `Shortcut` may do the work of several passes' rules at once (`SHORTCUTS`: passes 11 and
12 lower each kernel shape once, `ren.passes.kernel_shapes`).
"""

from collections.abc import Callable
from dataclasses import dataclass

from ren.contracts import Contract, Forbid, Require
from ren.passes import kernel_shapes
from ren.passes.pipeline import (
    Pass,
    Pipeline,
    current_pipeline,
    default_pipeline,
    load_pass,
)
from ren.rewrite import P, Pat, Rule, RuleSet, X, rewrite

#: (number, name, module) of the default pipeline's passes, in order
PASSES = [(p.number, p.name, p.module) for p in default_pipeline() if p.module is not None]

PASS_NAMES = default_pipeline().stage_names


@dataclass(frozen=True)
class Shortcut:
    """Rules that do the work of several fused passes' rules at once, with the same result:
    when a fused row holds every pass of ``stands_for`` ((pass name, rule name) pairs), the
    scheduler puts ``rules()`` where the first of those passes' rules go, and counts each
    firing as one of every rule it stands for."""

    stands_for: tuple[tuple[str, str], ...]
    rules: Callable[[], list]


#: indexify + kernelize once per kernel shape (`ren.passes.kernel_shapes`)
SHORTCUTS = [Shortcut(kernel_shapes.STANDS_FOR, kernel_shapes.rules)]

#: the stage after which the becomes_map is known (dumps show it beside that stage's graph)
BECOMES_MAP_STAGE = next(f"{num:02d}_{name}" for num, name, _ in PASSES if name == "becomes_map")


def get_pass(which: int | str):
    """A built-in pass module by number (1..12) or name ("simplify", "03_inject_domains", …)."""
    for num, name, mod in PASSES:
        if which in (num, name, f"{num:02d}_{name}"):
            return mod
    raise KeyError(f"no pass {which!r}; passes are {PASS_NAMES}")


__all__ = ["BECOMES_MAP_STAGE", "PASSES", "PASS_NAMES", "SHORTCUTS", "Contract", "Forbid", "P",
           "Pass", "Pat", "Pipeline", "Require", "Rule", "RuleSet", "Shortcut", "X",
           "current_pipeline", "default_pipeline", "get_pass", "load_pass",
           "rewrite"]
