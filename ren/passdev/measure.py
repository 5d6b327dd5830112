"""What a pipeline buys: the same program scheduled and run under several pipelines, in one run.

    table = compare("ckks_multiply", {"default": "default", "mine": my_pipeline})
    print(table.text())                  # or table.svg(), or the report's "Pipelines" section
    ablate("ckks_multiply")              # the default with each optional pass removed in turn
    pass_timing("ckks_multiply")         # wall time of each pass (MLIR's --mlir-timing)

Per pipeline (`Measurement`): nodes after each pass, kernels, NTT/INTT kernels and the rows
(limbs) they transform, basis-conversion kernels, the bytes the kernels read and write (a static
cost: each compute kernel reads its input buffers and writes its output once), arena bytes,
schedule time, the median replay time of the compiled template on the device, and for a CKKS
example the precision the meter measures. Every pipeline must compute the same words: `compare`
checks the outputs against the first pipeline's and refuses a table that would compare a
pipeline which changed the result.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from ren import random as ren_random
from ren.errors import ParameterError, PipelineError, check_int_range
from ren.kernel import LIGHT_KINDS
from ren.node import Node, toposort
from ren.passes.pipeline import Pipeline, default_pipeline, using
from ren.realization import compile_template, parameterize, sample_random_leaves
from ren.replay import structure_key
from ren.schedule import ScheduleContext, as_sink, linearize, run_passes
from ren.viz.compare import Comparison, Measurement
from ren.viz.programs import Program, load_program

#: kernel kinds counted as transforms and as basis conversions
TRANSFORMS = ("ntt", "intt")
BASIS_CONVERSIONS = ("basis_convert",)


def as_program(program: str | Program) -> Program:
    """A `Program` (a built-in example name, a file path or a Program)."""
    return program if isinstance(program, Program) else load_program(program)


@contextlib.contextmanager
def on_device(device: str) -> Iterator[None]:
    """Run the programs (built on the "python" device) on `device`: "python" (NumPy) or "cpu"
    (compiled C, `ren.backend.cpu`)."""
    if device == "python":
        yield
        return
    if device != "cpu":
        raise ParameterError(f"device must be 'python' or 'cpu', got {device!r}")
    from ren.backend import backend_override
    from ren.backend.cpu import open_device

    with backend_override("python", open_device):
        yield


def measure(program: str | Program, pipeline: Pipeline | str = "default", *,
            device: str = "python", repeat: int = 5, precision: bool = True) -> Measurement:
    """One program under one pipeline (see the module docstring)."""
    prog = as_program(program)
    pipe = Pipeline.parse(pipeline)
    repeat = check_int_range(repeat, "measure: repeat", 1, 1000)
    with ren_random.seeded(prog.seed or f"inspect:{prog.name}"):
        outputs = prog.outputs()
    nodes = [p.node for p in outputs]
    m = Measurement(name="", pipeline=_text(pipe))
    m.pass_seconds, m.nodes = _timed_passes(nodes, pipe)
    # the schedule as realization makes it (fused rows), timed
    todo = sample_random_leaves(nodes)
    todo_nodes = [todo.get(n, n) for n in nodes]
    found = structure_key(todo_nodes)
    inputs = found[1] if found is not None else []
    t0 = time.perf_counter()
    items = linearize(run_passes(as_sink(*todo_nodes), pipeline=pipe).sink)
    m.schedule_seconds = time.perf_counter() - t0
    compute = [k for k in items if k.kind not in LIGHT_KINDS]
    m.kernels = len(compute)
    m.transforms = sum(k.kind in TRANSFORMS for k in compute)
    m.transform_rows = sum(k.outputs[0].shape[0] for k in compute if k.kind in TRANSFORMS)
    m.basis_conversions = sum(k.kind in BASIS_CONVERSIONS for k in compute)
    m.bytes_read = sum(b.nbytes for k in compute for b in k.inputs)
    m.bytes_written = sum(b.nbytes for k in compute for b in k.outputs)
    with on_device(device), using(pipe):
        template = compile_template(*parameterize(todo_nodes, inputs))
        m.arena_bytes = sum(template.plan.arenas.values()) if template.plan is not None else 0
        results = template.run(inputs)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            template.run(inputs)
            times.append(time.perf_counter() - t0)
        m.replay_seconds = statistics.median(times)
        m.words = [_words(r) for r in results]
        if precision and prog.ckks is not None:
            from ren.viz.precision import precision_of

            report = precision_of(prog)
            bits = [s.bits for s in report.steps if s.bits == s.bits]
            m.precision_bits = min(bits) if bits else None
    m.device = device
    return m


def _words(n: Node) -> np.ndarray:
    from ren.realization import host_residues

    return host_residues(n)


def _text(p: Pipeline) -> str:
    try:
        return str(p)
    except PipelineError:
        return ",".join(p.names)


def compare(program: str | Program, pipelines: Mapping[str, Pipeline | str], *,
            device: str = "python", repeat: int = 5) -> Comparison:
    """`measure` the program under each named pipeline, in this run, on `device`.  The outputs
    must be the same words under every pipeline (a pass that changes them is a bug `check`
    finds): a difference raises `PipelineError` naming the pipeline."""
    if not isinstance(pipelines, Mapping) or not pipelines:
        raise ParameterError("compare: pipelines must be a non-empty dict name -> pipeline (or "
                             "its text form), e.g. {'default': 'default', 'mine': p}")
    prog = as_program(program)
    rows = []
    for name, pipe in pipelines.items():
        m = measure(prog, pipe, device=device, repeat=repeat)
        m.name = str(name)
        rows.append(m)
    first = rows[0]
    for m in rows[1:]:
        same = len(m.words) == len(first.words) and all(
            np.array_equal(a, b) for a, b in zip(m.words, first.words))
        if not same:
            raise PipelineError(f"compare {prog.name}: pipeline {m.name!r} ({m.pipeline}) "
                                f"computes other words than {first.name!r}; check its passes "
                                "with ren.passdev.check")
    return Comparison(prog.name, device, rows)


def ablate(program: str | Program, pipeline: Pipeline | str | None = None, *,
           device: str = "python", repeat: int = 5) -> Comparison:
    """The pipeline (default: the default one) and, for each of its optional passes, the same
    pipeline without it: what each optional pass is for."""
    base = Pipeline.parse(pipeline) if pipeline is not None else default_pipeline()
    variants: dict[str, Pipeline] = {"all passes": base}
    for p in base:
        if p.optional:
            variants[f"-{p.name}"] = base.without(p.name)
    return compare(program, variants, device=device, repeat=repeat)


@dataclass
class PassTiming:
    """Wall time of each pass of one run, pass by pass (fusion off, so each is separate)."""

    program: str
    pipeline: str
    seconds: dict[str, float] = field(default_factory=dict)
    nodes: dict[str, int] = field(default_factory=dict)

    def text(self) -> str:
        total = sum(self.seconds.values()) or 1.0
        lines = [f"pass timing of {self.program} under {self.pipeline} (each pass on its own)",
                 f"{'pass':<28} {'ms':>9} {'share':>6} {'nodes':>7}"]
        for name, s in self.seconds.items():
            lines.append(f"{name:<28} {s * 1e3:>9.3f} {s / total:>6.1%} {self.nodes[name]:>7}")
        lines.append(f"{'total':<28} {total * 1e3:>9.3f}")
        return "\n".join(lines)


def pass_timing(program: str | Program, pipeline: Pipeline | str = "default") -> PassTiming:
    """`measure`'s per-pass wall times and node counts, without running anything."""
    prog = as_program(program)
    pipe = Pipeline.parse(pipeline)
    with ren_random.seeded(prog.seed or f"inspect:{prog.name}"):
        outputs = prog.outputs()
    seconds, nodes = _timed_passes([p.node for p in outputs], pipe)
    return PassTiming(prog.name, _text(pipe), seconds, nodes)


def _timed_passes(nodes: list[Node], pipe: Pipeline) -> tuple[dict[str, float], dict[str, int]]:
    """Each pass's wall time and the graph's node count after it (stage names as keys), one
    pass at a time (no fused rows, so each pass's time is its own)."""
    ctx = ScheduleContext(outputs=tuple(nodes), pipeline=pipe, fuse=False)
    graph = as_sink(*nodes)
    seconds: dict[str, float] = {}
    counts: dict[str, int] = {}
    for num, p in enumerate(pipe, 1):
        t0 = time.perf_counter()
        graph = run_passes(graph, start=num, upto=num, ctx=ctx).sink
        seconds[f"{num:02d}_{p.name}"] = time.perf_counter() - t0
        counts[f"{num:02d}_{p.name}"] = len(toposort(graph))
    return seconds, counts


__all__ = ["BASIS_CONVERSIONS", "TRANSFORMS", "PassTiming", "ablate", "as_program", "compare",
           "measure", "on_device", "pass_timing"]
