"""Check a pass: its contract, the later passes' contracts, and its semantics, on many programs.

    report = check(my_pass, after="lower_ring_ops")    # or pipeline=p that already holds it
    report.ok, str(report)                             # raise_on_failure=True raises instead

For each program (the scheduler corpus, the CKKS examples and `random` seeded random programs of
`ren.random_programs`, or the ones given), the pipeline runs pass by pass and, at the pass:
  1. the graph after it must keep its contract (`Pipeline.contract_at`: its own, or what held
     before it when it declares none);
  2. the graph before and after it must evaluate to the same words under the reference
     interpreter (`ren.interpret`: every stage of the IR, kernel bodies included);
  3. every later pass must still run and keep its own contract;
  4. the final, kernelized graph must compute what the input graph computes.
The first program that fails is *shrunk* (as hypothesis shrinks): an output whose sub-expression
still fails the same way replaces it, the smallest first, until no smaller graph fails; the
report shows that graph before and after the pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ren import random as ren_random
from ren.dump import dump
from ren.errors import ParameterError, PipelineError, RenError, check_int_range
from ren.interpret import evaluate_sink
from ren.node import Node, substitute, toposort
from ren.ops import DType, Op
from ren.passes.pipeline import Pass, Pipeline, as_pass, default_pipeline, load_pass
from ren.schedule import ScheduleContext, run_passes
from ren.spec import spec_of

#: the CKKS examples a check runs besides the corpus (small, insecure parameters)
CKKS_PROGRAMS = ("ckks_multiply", "ckks_rotate", "ckks_logreg")


@dataclass
class CheckFailure:
    """The first (shrunk) program a pass breaks."""

    program: str
    kind: str  # "contract", "semantics", "later contract", "raised", "result"
    message: str
    before: str = ""  # the shrunk graph before the pass (`ren.dump.dump`)
    after: str = ""  # ... and after it ("" when the pass raised)
    nodes: int = 0  # nodes of the shrunk input graph

    def __str__(self) -> str:
        out = [f"{self.kind} failure on {self.program} (shrunk to {self.nodes} nodes): "
               f"{self.message}"]
        if self.before:
            out += ["-- before the pass:", self.before]
        if self.after:
            out += ["-- after the pass:", self.after]
        return "\n".join(out)


@dataclass
class CheckReport:
    """What `check` ran and what it found."""

    pass_name: str
    pipeline: str
    programs: int = 0
    failure: CheckFailure | None = None
    checked: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failure is None

    def __str__(self) -> str:
        head = (f"check {self.pass_name} in {self.pipeline}: {self.programs} programs, "
                "contracts, semantics and results")
        if self.failure is None:
            return head + ": all passed"
        return head + ": FAILED\n" + str(self.failure)


def check(p: Pass | str, *, pipeline: Pipeline | str | None = None, after: str | None = None,
          before: str | None = None, programs: Iterable[Any] | None = None, random: int = 20,
          seed: int = 0, raise_on_failure: bool = False) -> CheckReport:
    """Check pass `p` (a `Pass`, a pass module or ``"MODULE:ATTR"``) inside a pipeline: the
    given one when it holds `p`, else the given (or default) one with `p` inserted `after` /
    `before` the named pass.  `programs`: names of built-in examples, `ren.viz.programs.Program`
    values or functions returning Polys (default: the corpus and the CKKS examples); `random`
    seeded random programs are added.  See the module docstring for what is checked."""
    the_pass = load_pass(p) if isinstance(p, str) else as_pass(p)
    pipe = _pipeline_with(the_pass, pipeline, after, before)
    random = check_int_range(random, "check: random", 0, 100_000)
    seed = check_int_range(seed, "check: seed", 0, 2**63)
    index = pipe.names.index(the_pass.name)
    report = CheckReport(the_pass.name, _spec(pipe))
    for name, build in _programs(programs, random, seed):
        outputs = build()
        report.programs += 1
        report.checked.append(name)
        failure = _failure(as_sink_of(outputs), pipe, index)
        if failure is not None:
            report.failure = _shrunk(name, as_sink_of(outputs), pipe, index, failure)
            break
    if raise_on_failure and report.failure is not None:
        raise PipelineError(str(report))
    return report


def _pipeline_with(p: Pass, pipeline: Pipeline | str | None, after: str | None,
                   before: str | None) -> Pipeline:
    base = Pipeline.parse(pipeline) if pipeline is not None else default_pipeline()
    if p.name in base.names and after is None and before is None:
        if base[p.name].digest != p.digest:
            raise PipelineError(f"check: the pipeline holds another pass named {p.name!r}")
        return base
    if after is None and before is None:
        raise PipelineError(f"check: say where {p.name!r} runs: after= or before= a pass of "
                            f"the pipeline ({', '.join(base.names)}), or give a pipeline "
                            "that holds it")
    return base.insert(p, after=after, before=before)


def _spec(p: Pipeline) -> str:
    try:
        return str(p)
    except PipelineError:
        return ",".join(p.names)


def as_sink_of(outputs: Any) -> Node:
    """A SINK over a Poly, a Node or a sequence of them."""
    items = outputs if isinstance(outputs, list | tuple) else (outputs,)
    nodes = tuple(o.node if hasattr(o, "node") else o for o in items)
    if not nodes or not all(isinstance(n, Node) for n in nodes):
        raise ParameterError("check: a program must give Polys (or Nodes)")
    return Node(Op.SINK, DType.VOID, nodes)


def _programs(programs: Iterable[Any] | None, random: int,
              seed: int) -> Iterable[tuple[str, Callable[[], Any]]]:
    from ren.viz.programs import Program, load_program

    if programs is None:
        from ren import corpus

        programs = [*corpus.PROGRAMS, *CKKS_PROGRAMS]
    for item in programs:
        if isinstance(item, str):
            prog = load_program(item)
            yield item, prog.outputs
        elif isinstance(item, Program):
            yield item.name, item.outputs
        elif callable(item):
            yield getattr(item, "__name__", "program"), _seeded(item)
        else:
            raise ParameterError(f"check: a program is a built-in example name, a Program or a "
                                 f"function returning Polys, got {type(item).__name__}")

    for s in range(seed, seed + random):
        yield f"random program {s}", _random_program(s)


def _seeded(fn: Callable[[], Any]) -> Callable[[], Any]:
    def build() -> Any:
        with ren_random.seeded(f"check:{getattr(fn, '__name__', 'program')}"):
            return fn()
    return build


def _random_program(s: int) -> Callable[[], Any]:
    def build() -> Any:
        from ren import random_programs

        with ren_random.seeded(f"check:random:{s}"):
            return random_programs.build(random_programs.RandomChooser(s)).outputs
    return build


# -- one graph ------------------------------------------------------------------------------------
def _failure(sink: Node, pipe: Pipeline, index: int) -> tuple[str, str, Node | None,
                                                                 Node | None] | None:
    """(kind, message, graph before the pass, graph after it) of the first broken check, or
    None when the pipeline passes every check on this graph."""
    from ren.contracts import check as check_contract

    ctx = ScheduleContext(outputs=sink.src, pipeline=pipe, fuse=False)
    graph = sink
    try:
        for num in range(1, index + 1):
            graph = run_passes(graph, start=num, upto=num, ctx=ctx).sink
    except RenError as e:
        return "earlier pass", f"a pass before it failed: {e}", None, None
    before = graph
    stage = f"{index + 1:02d}_{pipe.passes[index].name}"
    try:
        after = pipe.passes[index].run(before, ctx)
    except Exception as e:  # a user's pass may raise anything: that is a finding
        return "raised", f"{type(e).__name__}: {e}", before, None
    contract = pipe.contract_at(index)
    try:
        if contract is not None:
            check_contract(after, contract, stage, ctx)
    except RenError as e:
        return "contract", str(e), before, after
    if not _same(evaluate_sink(before), evaluate_sink(after)):
        return "semantics", (f"the graph after {stage} computes other words than the graph "
                             "before it (reference interpreter)"), before, after
    graph = after
    for num in range(index + 2, len(pipe) + 1):
        try:
            graph = run_passes(graph, start=num, upto=num, ctx=ctx).sink
            later = pipe.contract_at(num - 1)
            if later is not None:
                check_contract(graph, later, f"{num:02d}_{pipe.passes[num - 1].name}", ctx)
        except Exception as e:
            return "later contract", f"a later pass failed: {type(e).__name__}: {e}", before, \
                after
    if not _same(evaluate_sink(sink), evaluate_sink(graph)):
        return "result", ("the scheduled graph computes other words than the program (reference "
                          "interpreter)"), before, after
    return None


def _same(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> bool:
    return len(a) == len(b) and all(x.shape == y.shape and np.array_equal(x, y)
                                    for x, y in zip(a, b))


# -- shrinking ------------------------------------------------------------------------------------
def _shrunk(name: str, sink: Node, pipe: Pipeline, index: int,
            found: tuple[str, str, Node | None, Node | None]) -> CheckFailure:
    """The smallest graph (greedily) that fails the same way: one output at a time, then each
    output replaced by a polynomial-valued sub-expression, smallest first."""
    kind = found[0]
    best, best_found = sink, found
    improved = True
    while improved:
        improved = False
        for candidate in _smaller(best):
            got = _failure(candidate, pipe, index)
            if got is not None and got[0] == kind:
                best, best_found, improved = candidate, got, True
                break
    _, message, before, after = best_found
    return CheckFailure(name, kind, message, "" if before is None else dump(before),
                        "" if after is None else dump(after), len(toposort(best)))


def _smaller(sink: Node) -> Iterable[Node]:
    """Graphs smaller than `sink`, smallest first: fewer outputs, an output replaced by one of
    its polynomial-valued sub-expressions, or an inner node bypassed (replaced by a source of
    the same ring, domain and device)."""
    size = len(toposort(sink))
    outs = sink.src
    candidates: list[tuple[int, Node]] = []
    if len(outs) > 1:
        for o in outs:
            one = Node(Op.SINK, DType.VOID, (o,))
            candidates.append((len(toposort(one)), one))
    for i, o in enumerate(outs):
        for n in toposort(o):
            if n is o or not _is_poly(n):
                continue
            g = Node(Op.SINK, DType.VOID, (*outs[:i], n, *outs[i + 1:]))
            candidates.append((len(toposort(g)), g))
    for n in toposort(sink):
        if n.op is Op.SINK or not _is_poly(n):
            continue
        for src in dict.fromkeys(n.src):
            if _is_poly(src) and spec_of(src) == spec_of(n):
                try:
                    g = substitute(sink, {n: src})
                except RenError:
                    continue
                candidates.append((len(toposort(g)), g))
    candidates.sort(key=lambda c: c[0])
    for n_nodes, g in candidates:
        if n_nodes < size:
            yield g


def _is_poly(n: Node) -> bool:
    """Whether a node is a polynomial value a program could request (computed: leaves are no
    smaller program)."""
    if n.op is Op.SINK or not n.src:
        return False
    try:
        return spec_of(n) is not None
    except RenError:
        return False


__all__ = ["CKKS_PROGRAMS", "CheckFailure", "CheckReport", "as_sink_of", "check"]
