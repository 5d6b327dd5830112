"""Pictures of what the engine does: the graph after every pass (with what each pass changed and
the rules that fired), the memory plan, captured plans, the kernels, golden diffs, and one
self-contained HTML report.  Usable from Python and notebooks; ``ren-inspect`` (cli/ren_cli) is
a thin shell over it.

    import ren.viz as viz
    svg = viz.graph_svg(poly_or_sink, after_pass=4)        # pygraphviz layout, SVG text
    trace = viz.trace_passes(*polys)                        # every stage, diffs, rules fired
    print(viz.trace_text(trace, "inject_domains"))          # before/after one pass, as text
    view = viz.plan_program(polys); viz.arena_svg(view)     # the memory plan as a picture
    html = viz.report_html(viz.load_program("ckks_multiply"))

Modules: `programs` (built-in examples and program files), `trace` (stages and diffs), `nodes`
(op families, labels, details), `graph` (Graphviz), `arena`, `jitplan`, `kernels`, `golden`,
`report` (jinja2 templates in ``templates/``), `notebook` (rich displays in Jupyter: importing
``ren.viz`` in IPython, or ``%load_ext ren.viz``, makes a Poly, a pass trace, a MemoryPlan and a
JitPlan show their pictures).
"""

try:  # the viz extra: a clear error instead of a bare ModuleNotFoundError deep in a module
    import jinja2  # noqa: F401
    import pygraphviz  # noqa: F401
except ModuleNotFoundError as _e:
    raise ImportError(f"ren.viz needs {_e.name}, which comes with the viz extra of ren: "
                      "pip install -e '.[viz]' (or '.[test]')", name=_e.name) from None

from ren.viz import notebook
from ren.viz.arena import ArenaView, arena_ascii, arena_svg, plan_program
from ren.viz.golden import DEFAULT_GOLDEN, diff_text, golden_diff
from ren.viz.graph import TooLarge, graph_dot, graph_svg, render_svg, schedule_agraph, stage_agraph
from ren.viz.jitplan import JitView, capture_jit, capture_template, from_plan, from_template
from ren.viz.kernels import KernelInfo, kernel_infos
from ren.viz.notebook import Picture, picture
from ren.viz.programs import Program, examples, load_program
from ren.viz.report import SECTIONS, ReportOptions, jit_view, report_html
from ren.viz.trace import PassTrace, Stage, stage_text, trace_passes, trace_text

notebook.enable()  # inside IPython: Poly, MemoryPlan, JitPlan … show their pictures


def load_ipython_extension(shell: object) -> None:
    """``%load_ext ren.viz``: register the rich displays (`ren.viz.notebook`)."""
    notebook.enable(shell)


def unload_ipython_extension(shell: object) -> None:
    notebook.disable(shell)


__all__ = [
    "DEFAULT_GOLDEN",
    "SECTIONS",
    "ArenaView",
    "JitView",
    "KernelInfo",
    "PassTrace",
    "Picture",
    "Program",
    "ReportOptions",
    "Stage",
    "TooLarge",
    "arena_ascii",
    "arena_svg",
    "capture_jit",
    "capture_template",
    "diff_text",
    "examples",
    "from_plan",
    "from_template",
    "golden_diff",
    "graph_dot",
    "graph_svg",
    "jit_view",
    "kernel_infos",
    "load_program",
    "notebook",
    "picture",
    "plan_program",
    "render_svg",
    "report_html",
    "schedule_agraph",
    "stage_agraph",
    "stage_text",
    "trace_passes",
    "trace_text",
]
