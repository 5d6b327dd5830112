"""``ren-inspect``: look inside Ren — the IR after every pass, the rewrites, arena layouts,
captured plans and kernels, as text, Graphviz or one self-contained HTML report.

A thin click + rich shell over `ren.viz`.  User mistakes (an unknown program, command or device,
a bad option value, a file that does not define what is needed, raises, exits or returns no
Poly, a bad pass name, an output in a directory that does not exist or lets no file be created)
print one line and exit with status 2; internal errors (a bug) exit with 3.
``--debug`` (or REN_INSPECT_DEBUG=1) shows the traceback instead; the one-line message points at
it where a traceback helps (a bug, or an error raised by the program being inspected).  ``diff``
exits with 1 when a stage differs from its golden snapshot.  An output file's directory must
exist (a typo must not create directories); only ``passes --format dot|svg -o DIR``, which
writes a directory of files by design, creates DIR itself.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.text import Text

from ren import passdev as pd
from ren import settings
from ren.device import canonical_device
from ren.errors import RenError
from ren.passes.pipeline import Pipeline, current_pipeline
from ren.passes.pipeline import using as using_pipeline
from ren.viz import arena as av
from ren.viz import golden as gd
from ren.viz import graph as gv
from ren.viz import precision as pv
from ren.viz import programs as pg
from ren.viz import report as rp
from ren.viz import trace as tr
from ren.viz.kernels import kernel_infos

from .output import (
    check_output_dir,
    check_output_file,
    console,
    emit,
    os_errors,
    print_marked,
    table,
    write_file,
    write_text,
)

EXIT_USER, EXIT_INTERNAL = 2, 3


def _debug_flag(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    if value:
        ctx.find_root().meta["ren_inspect.debug"] = True
    return value


def debug_option(f: Callable) -> Callable:
    return click.option("--debug", is_flag=True, expose_value=False, is_eager=True,
                        callback=_debug_flag,
                        help="Show the Python traceback of an error.")(f)


class UsageLine(click.ClickException):
    """A usage mistake (a bad option value, a missing argument, an unknown command) as one line
    on stderr, exit status 2 — click prints three (usage, a hint, the error)."""

    exit_code = EXIT_USER

    def show(self, file: Any = None) -> None:
        click.echo(f"ren-inspect: error: {self.format_message()}", err=True)


def _one_line(e: click.UsageError) -> click.ClickException:
    """`e` as a UsageLine naming the help to read; no arguments at all still show the help."""
    if isinstance(e, getattr(click.exceptions, "NoArgsIsHelpError", ())):
        return e
    text = " ".join(e.format_message().split()).rstrip(".")
    where = e.ctx.command_path if e.ctx is not None else "ren-inspect"
    return UsageLine(f"{text} (see '{where} --help')")


class InspectGroup(click.Group):
    """Turns errors into one line on stderr and a non-zero exit (unless --debug)."""

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as e:  # an option of ren-inspect itself
            raise _one_line(e) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as e:  # an unknown command, a command's options and arguments
            raise _one_line(e) from None
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as e:
            debug = ctx.meta.get("ren_inspect.debug") or settings.get("REN_INSPECT_DEBUG")
            if debug:
                raise
            user = isinstance(e, RenError | OSError)
            kind = "error" if user else f"internal error ({type(e).__name__}, a bug)"
            if isinstance(e, OSError) and e.strerror:  # not the raw "[Errno 17] ..." form
                text = f"{e.filename}: {e.strerror}" if e.filename else e.strerror
            else:
                text = str(e).strip()
            msg = text.splitlines()[0] if text else type(e).__name__
            # a traceback helps with a bug or an error raised inside the inspected program (the
            # cause), not with a plain usage mistake such as an unknown program name
            if not user or e.__cause__ is not None:
                msg += " (--debug shows the traceback)"
            click.echo(f"ren-inspect: {kind}: {msg}", err=True)
            ctx.exit(EXIT_USER if user else EXIT_INTERNAL)


@click.group(cls=InspectGroup, context_settings={"help_option_names": ["-h", "--help"]})
@debug_option
def cli() -> None:
    """Look inside Ren: the IR after each of the twelve passes, the rules that fired, the arena,
    the captured plan, the kernels and golden diffs.

    PROGRAM is a built-in example (`ren-inspect examples` lists them) or a Python file defining
    program() (see `ren-inspect examples --help`).  Start with:

        ren-inspect report ckks_multiply -o report.html
    """


def program_argument(f: Callable) -> Callable:
    f = click.option("--ckks-params", type=click.Choice(pg.CKKS_PARAMS),
                     default=pg.DEFAULT_CKKS_PARAMS, show_default=True,
                     help="Parameters of the built-in CKKS examples (small: tiny, insecure).")(f)
    f = click.argument("program")(f)
    return debug_option(f)


def _pipeline_of(spec: str | None) -> Any:
    """The `Pipeline` named by a --pipeline spec (the working directory is importable, as
    for pytest, so ``+mymodule:my_pass@after=NAME`` finds a module beside you)."""
    import os

    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    return Pipeline.parse(spec or "default")


def pipeline_option(f: Callable) -> Callable:
    """--pipeline SPEC: run the command's realizations and traces under that pipeline."""

    @functools.wraps(f)
    def run(*args: Any, pipeline: str | None, **kwargs: Any) -> Any:
        with using_pipeline(_pipeline_of(pipeline)):
            return f(*args, **kwargs)

    return click.option("--pipeline", metavar="SPEC", default=None,
                        help="The scheduling pipeline, e.g. 'default,-simplify_domains' or "
                             "'default,+mymodule:my_pass@after=lower_ring_ops' (ren.passes."
                             "Pipeline's text form) [default: default].")(run)


def output_option(f: Callable) -> Callable:
    return click.option("-o", "--output", type=click.Path(path_type=Path),
                        help="Write here instead of stdout.")(f)


# -- examples --------------------------------------------------------------------------------------
@cli.command()
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
@debug_option
def examples(fmt: str) -> None:
    """List the built-in example programs (the scheduler corpus and the CKKS examples).

    \b
    A PROGRAM may also be the path of a Python file that defines
      def program():        -> Polys or CKKS ciphertexts/plaintexts (lists, tuples,
                               dicts and dataclasses of them), lazy
    or
      def function(*args):  -> the computation (plain or wrapped by ren.jit)
      def example_inputs(): -> a tuple of arguments for it
    The module docstring's first line describes it.  Randomness is seeded (insecure).
    """
    items = pg.examples()
    if fmt == "json":
        click.echo(json.dumps({k: {"kind": o, "description": d} for k, (o, d) in items.items()},
                              indent=2))
        return
    console().print(table("built-in programs", ["name", "kind", "description"],
                          [[k, o, d] for k, (o, d) in items.items()]))


# -- passes ----------------------------------------------------------------------------------------
def graph_options(f: Callable) -> Callable:
    f = click.option("--max-nodes", type=click.IntRange(1), default=gv.MAX_NODES,
                     show_default=True, help="Do not lay out larger graphs (show text).")(f)
    f = click.option("--removed/--no-removed", default=True, show_default=True,
                     help="Draw the nodes a pass removed as dashed ghosts.")(f)
    return click.option("--kernel-bodies/--no-kernel-bodies", default=False, show_default=True,
                        help="Draw each kernel's AST under it (collapsed by default).")(f)


@cli.command()
@program_argument
@click.option("--pass", "which", metavar="N|NAME",
              help="One pass (its number in the pipeline, 0 for the input, or its name, e.g. 3 "
                   "or inject_domains): before and after.")
@click.option("--format", "fmt", type=click.Choice(["text", "dot", "svg", "html"]),
              default="text", show_default=True)
@click.option("--timing", is_flag=True,
              help="Only the wall time of each pass and the nodes after it (MLIR's "
                   "--mlir-timing).")
@output_option
@graph_options
@pipeline_option
def passes(program: str, ckks_params: str, which: str | None, fmt: str, timing: bool,
           output: Path | None, kernel_bodies: bool, removed: bool, max_nodes: int) -> None:
    """The graph before and after each pass of the pipeline: what each pass added (+),
    rebuilt (~) and removed (-), and the rules that fired.

    dot/svg: one graph per stage; without --pass, -o names a directory (one file per stage).
    """
    if fmt in ("dot", "svg") and which is None and output is not None:  # a file per stage
        check_output_dir(output)
    else:
        check_output_file(output)
    prog = pg.load_program(program, ckks_params)
    if timing:
        emit(pd.pass_timing(prog, current_pipeline()).text(), output)
        return
    if fmt == "html":
        opts = rp.ReportOptions(sections=("passes",), kernel_bodies=kernel_bodies,
                                removed=removed, max_nodes=max_nodes)
        emit(rp.report_html(prog, opts), output)
        return
    trace = tr.trace_passes(*prog.outputs())
    if which is not None:
        trace.stage(which)  # an unknown pass fails before anything is drawn
    if fmt == "text":
        text = (f"# {prog.name}: {prog.description}\n"
                + tr.trace_text(trace, which))
        if output is None:
            print_marked(text)
        else:
            emit(text, output)
        return
    stages = [trace.stage(which)] if which is not None else trace.stages
    rendered = []
    for stage in stages:
        g = gv.stage_agraph(trace, stage.index, prefix=f"s{stage.index:02d}",
                            kernel_bodies=kernel_bodies, removed=removed, max_nodes=max_nodes)
        rendered.append((stage, g.string() if fmt == "dot" else gv.render_svg(g)))
    if which is not None or (output is None and fmt == "dot"):
        emit("\n".join(text for _, text in rendered), output)
        return
    if output is None:
        raise click.UsageError("svg of every stage needs -o DIR (one file per stage) or "
                               "--pass N for one stage")
    with os_errors(output):
        output.mkdir(exist_ok=True)  # the one directory -o may create: its parent was checked
    for stage, text in rendered:
        write_text(output / f"{stage.name}.{fmt}", text)
    click.echo(f"wrote {len(rendered)} {fmt} files to {output}/", err=True)


# -- arena -----------------------------------------------------------------------------------------
@cli.command()
@program_argument
@click.option("--format", "fmt", type=click.Choice(["text", "svg", "html"]), default="text",
              show_default=True)
@click.option("--policy", type=click.Choice(["auto", "tlsf", "by_size"]), default="auto",
              show_default=True, help="Placement policy of the memory planner.")
@output_option
@pipeline_option
def arena(program: str, ckks_params: str, fmt: str, policy: str, output: Path | None) -> None:
    """The memory plan as a picture: each planned buffer a rectangle over (schedule step ×
    arena offset), with arena, planned and peak-live bytes and the policy chosen."""
    check_output_file(output)
    prog = pg.load_program(program, ckks_params)
    if fmt == "html":
        emit(rp.report_html(prog, rp.ReportOptions(sections=("arena",), policy=policy)), output)
        return
    view = av.plan_program(prog.outputs(), policy)
    if fmt == "svg":
        emit(av.arena_svg(view), output)
        return
    memory = av.ckks_memory_rows(prog, view)
    show([f"{prog.name}: memory plan of {view.plan.steps} schedule steps",
          *([table("CKKS memory: keys, ciphertexts and the arena", ["what", "bytes", "", "note"],
                   [[r["what"], r["bytes"], av.fmt_bytes(r["bytes"]), r["note"]]
                    for r in memory])] if memory else []),
          table("arenas", ["device", "planned buffers", "planned bytes", "peak-live bytes",
                           "arena bytes", "arena/peak", "policy"],
                [[r["device"], r["buffers"], r["planned"], r["peak"], r["arena"],
                  f"{r['ratio']:.3f}", r["policy"]] for r in av.summary_rows(view)]),
          f"kept outside the arena: {av.kept_text(view)}",
          av.arena_ascii(view).rstrip("\n"),
          table("planned buffers", ["buffer", "shape", "steps", "offset", "bytes", "written by"],
                [[r["buffer"], r["shape"], f"{r['first']}..{r['last']}", r["offset"], r["size"],
                  r["written_by"]] for r in av.arena_rows(view)])], output)


# -- jit -------------------------------------------------------------------------------------------
@cli.command()
@program_argument
@click.option("--format", "fmt", type=click.Choice(["text", "html"]), default="text",
              show_default=True)
@output_option
@pipeline_option
def jit(program: str, ckks_params: str, fmt: str, output: Path | None) -> None:
    """The captured plan: exec units in order (kind, kernel, buffers), the input replacement
    table, the arena, the graph runner kind and the capture time."""
    check_output_file(output)
    prog = pg.load_program(program, ckks_params)
    if fmt == "html":
        emit(rp.report_html(prog, rp.ReportOptions(sections=("jit",))), output)
        return
    view = rp.jit_view(prog)
    lines = [f"{prog.name}: {view.source}", f"graph runner: {view.runner}"]
    if view.capture_seconds is not None:
        lines.append(f"capture: {view.capture_seconds * 1e3:.1f} ms")
    lines += [f"note: {n}" for n in view.notes]
    show(lines + [
        table("input replacement table", ["input", "buffer", "replaces"],
              [[e["input"], e["buffer"], ", ".join(e["uses"])] for e in view.inputs]),
        table("arena", ["device", "arena bytes", "peak-live bytes", "planned bytes", "policy"],
              [[r["device"], r["arena"], r["peak"], r["planned"], r["policy"]]
               for r in view.memory_rows()]),
        table("exec units", ["#", "unit", "kernel kind", "name", "writes", "reads"],
              [[r["index"], r["kind"], r["kernel"], r["name"], r["writes"], r["reads"]]
               for r in view.unit_rows()]),
    ], output)


@cli.command()
@program_argument
@click.option("--format", "fmt", type=click.Choice(["text", "svg"]), default="text",
              show_default=True)
@output_option
def precision(program: str, ckks_params: str, fmt: str, output: Path | None) -> None:
    """The precision meter of a CKKS example: the program run once beside a plaintext shadow,
    every intermediate decrypted (inspection only: it uses the secret key).  Per operation: its
    level, log2 scale, bits of precision, bits lost and the line of the program; the largest
    loss is named.  --format svg plots bits per operation."""
    check_output_file(output)
    report = pv.precision_of(pg.load_program(program, ckks_params))
    if fmt == "svg":
        emit(pv.precision_svg(report), output)
        return
    rows = [[s.index, s.op, s.level, f"{s.log2_scale:.2f}", f"{s.bits:.1f}",
             "" if s.lost != s.lost else f"{s.lost:.1f}",
             f"{Path(s.where).name}: {s.code}"] for s in report.steps]
    show([table(f"precision of {program}", ["#", "op", "level", "log2 scale", "bits", "lost",
                                            "where"], rows), report.summary()], output)


@cli.command()
@program_argument
@output_option
def budget(program: str, ckks_params: str, output: Path | None) -> None:
    """The level and scale budget of a CKKS example, traced without running a kernel: the level
    and log2 scale after every operation, where rescales happen, and the levels used.  A program
    that needs more levels than its parameters have fails here, naming its line.  For a BFV/BGV
    example (bfv_multiply, bgv_multiply): the noise budget after every operation, run beside the
    exact result (`ren.bfv.debug.budget_meter`), with the line that used the most."""
    check_output_file(output)
    prog = pg.load_program(program, ckks_params)
    if prog.bfv is not None:
        meter = pg.budget_of(prog)
        rows = [[s.index, s.op, s.budget, "" if s.used is None else s.used, s.wrong or "",
                 f"{Path(s.where).name}: {s.code}"] for s in meter.steps]
        show([table(f"noise budget of {program}", ["#", "op", "budget (bits)", "used", "wrong",
                                                   "where"], rows), meter.summary()], output)
        return
    report = pv.budget_of(prog)
    rows = [[s.index, s.op, s.level, f"{s.log2_scale:.2f}", "yes" if s.rescaled else "",
             f"{Path(s.where).name}: {s.code}"] for s in report.steps]
    show([table(f"level budget of {program}", ["#", "op", "level", "log2 scale", "rescaled",
                                               "where"], rows), report.summary()], output)


@cli.command()
@program_argument
@output_option
def keys(program: str, ckks_params: str, output: Path | None) -> None:
    """The Galois keys a CKKS example needs (traced, no kernel): rotation steps, conjugation,
    their count and bytes, and the power-of-two alternative when it needs fewer keys."""
    check_output_file(output)
    plan = pv.keys_of(pg.load_program(program, ckks_params))
    rows = [[k, plan.uses.get(k, 0)] for k in plan.steps]
    show([table(f"rotation keys of {program}", ["step", "rotations"], rows), plan.summary()],
         output)


def show(items: list[Any], output: Path | None) -> None:
    """Print strings (unwrapped) and rich renderables to stdout, or to the file `output`."""

    def put(out: Console) -> None:
        for item in items:
            if isinstance(item, str):
                out.print(Text(item), soft_wrap=True)
            else:
                out.print(item)

    if output is None:
        put(console())
        return
    check_output_file(output)
    write_file(output, lambda f: put(Console(file=f, width=120, highlight=False)))
    click.echo(f"wrote {output}", err=True)


# -- kernels ---------------------------------------------------------------------------------------
@cli.command()
@program_argument
@click.option("--format", "fmt", type=click.Choice(["text", "svg", "html"]), default="text",
              show_default=True, help="svg: the top-level schedule (kernels and buffers).")
@click.option("--device", help="Render the kernels with this device's renderer, if it has one.")
@output_option
@pipeline_option
def kernels(program: str, ckks_params: str, fmt: str, device: str | None,
            output: Path | None) -> None:
    """Each scheduled kernel's AST and, where a backend renders kernels, its source."""
    if device is not None:
        device = canonical_device(device)  # DeviceError for an unknown name, before any work
    check_output_file(output)
    prog = pg.load_program(program, ckks_params)
    if fmt == "html":
        emit(rp.report_html(prog, rp.ReportOptions(sections=("kernels",), device=device)),
             output)
        return
    view = av.plan_program(prog.outputs())
    if fmt == "svg":
        emit(gv.render_svg(gv.schedule_agraph(view.items, view.names)), output)
        return
    lines: list[str] = [f"{prog.name}: {len(view.items)} scheduled items"]
    for k in kernel_infos(view, device):
        lines.append("")
        lines.append(f"== {k.title}: writes {k.writes}, reads {k.reads}, space {k.space}, "
                     f"ring {k.ring}")
        lines.extend("   " + line for line in k.ast_text.splitlines())
        if k.source:
            lines.append(f"   -- {k.source_note} --")
            lines.extend("   " + line for line in k.source.splitlines())
        else:
            lines.append(f"   source: {k.source_note}")
    text = "\n".join(lines) + "\n"
    if output is None:
        print_marked(text)
    else:
        emit(text, output)


# -- diff ------------------------------------------------------------------------------------------
@cli.command()
@program_argument
@click.option("--golden", type=click.Path(path_type=Path), default=None,
              help="Directory of snapshots, <DIR>/<program>/<NN>_<pass>.txt [default: "
                   "tests/golden of the current directory or of this checkout].")
@click.option("--format", "fmt", type=click.Choice(["text", "html"]), default="text",
              show_default=True)
@output_option
@pipeline_option
def diff(program: str, ckks_params: str, golden: Path | None, fmt: str,
         output: Path | None) -> None:
    """The current output of every pass against the golden snapshots, as unified diffs.
    Exit status 1 when a stage differs."""
    golden = golden or gd.default_golden()
    check_output_file(output)
    prog = pg.load_program(program, ckks_params)
    trace = tr.trace_passes(*prog.outputs())
    diffs = gd.golden_diff(trace, prog.name, golden)
    if fmt == "html":
        opts = rp.ReportOptions(sections=("diff",), golden=golden)
        emit(rp.report_html(prog, opts), output)
    elif output is None:
        print_marked(gd.diff_text(diffs))
    else:
        emit(gd.diff_text(diffs), output)
    if any(d.changed for d in diffs):
        sys.exit(1)


# -- report ----------------------------------------------------------------------------------------
@cli.command()
@program_argument
@click.option("-o", "--output", type=click.Path(path_type=Path), default=Path("report.html"),
              show_default=True, help="The HTML file to write.")
@click.option("--sections", default=",".join(rp.SECTIONS), show_default=True,
              help="Comma-separated parts to include.")
@click.option("--golden", type=click.Path(path_type=Path), default=None,
              help="Snapshots for the diff section [default: as for diff].")
@click.option("--policy", type=click.Choice(["auto", "tlsf", "by_size"]), default="auto",
              show_default=True)
@click.option("--compare", "compare_with", metavar="SPEC", multiple=True,
              help="Add a 'pipelines' section: this program under the report's pipeline and "
                   "under SPEC (repeat; NAME=SPEC names a row), measured in this run.")
@graph_options
@pipeline_option
def report(program: str, ckks_params: str, output: Path, sections: str, golden: Path | None,
           policy: str, compare_with: tuple[str, ...], kernel_bodies: bool, removed: bool,
           max_nodes: int) -> None:
    """Everything in one self-contained HTML file (inline SVG, no network): step through the
    passes with ← and →, click a node for its op, dtype, arg, ring and domain."""
    check_output_file(output)
    prog = pg.load_program(program, ckks_params)
    chosen = tuple(s.strip() for s in sections.split(",") if s.strip())
    comparison = None
    if compare_with:
        named = {"this report": current_pipeline(), **_named(compare_with)}
        comparison = pd.compare(prog, named, repeat=3)
    opts = rp.ReportOptions(sections=chosen, kernel_bodies=kernel_bodies, removed=removed,
                            max_nodes=max_nodes, golden=golden or gd.default_golden(),
                            policy=policy, comparison=comparison)
    html = rp.report_html(prog, opts)
    emit(html, output, f" in {sum(opts.timings.values()):.1f} s: open it in a browser")


# -- pass development ------------------------------------------------------------------------------
def _named(specs: tuple[str, ...]) -> dict[str, Any]:
    """Row name -> pipeline for each ``SPEC`` or ``NAME=SPEC`` (a name is a word before '=' in
    the first item; a spec's own '=' edits come after a comma)."""
    named: dict[str, Any] = {}
    for i, spec in enumerate(specs):
        head = spec.split(",")[0]
        name, text = (head.split("=", 1)[0], spec.split("=", 1)[1]) if "=" in head and \
            head.split("=", 1)[0].isidentifier() and head.split("=", 1)[0] not in (
                "default", "none") else ("", spec)
        named[name or (text if len(text) <= 40 else f"pipeline {i + 1}")] = _pipeline_of(text)
    return named


@cli.command()
@program_argument
@click.option("--pipeline", "pipelines", metavar="SPEC", multiple=True, required=True,
              help="A pipeline to compare (repeat: the first is the reference); NAME=SPEC names "
                   "its row.")
@click.option("--device", type=click.Choice(["python", "cpu"]), default="python",
              show_default=True, help="Where the replays run.")
@click.option("--repeat", type=click.IntRange(1, 1000), default=5, show_default=True,
              help="Replays timed per pipeline (the median is shown).")
@click.option("--format", "fmt", type=click.Choice(["text", "svg", "html"]), default="text",
              show_default=True)
@output_option
def compare(program: str, ckks_params: str, pipelines: tuple[str, ...], device: str,
            repeat: int, fmt: str, output: Path | None) -> None:
    """The same program under several pipelines, in one run: kernels, NTT/INTT, basis
    conversions, bytes moved, arena, schedule and replay time, precision (CKKS)."""
    check_output_file(output)
    result = pd.compare(pg.load_program(program, ckks_params), _named(pipelines),
                        device=device, repeat=repeat)
    emit({"text": result.text, "svg": result.svg, "html": result.html}[fmt](), output)


@cli.command()
@program_argument
@click.option("--pipeline", metavar="SPEC", default=None,
              help="The pipeline to ablate [default: default].")
@click.option("--device", type=click.Choice(["python", "cpu"]), default="python",
              show_default=True)
@click.option("--repeat", type=click.IntRange(1, 1000), default=5, show_default=True)
@click.option("--format", "fmt", type=click.Choice(["text", "svg", "html"]), default="text",
              show_default=True)
@output_option
def ablate(program: str, ckks_params: str, pipeline: str | None, device: str, repeat: int,
           fmt: str, output: Path | None) -> None:
    """The pipeline, then the same with each optional pass removed in turn: what each optional
    pass buys on this program."""
    check_output_file(output)
    result = pd.ablate(pg.load_program(program, ckks_params), _pipeline_of(pipeline),
                       device=device, repeat=repeat)
    emit({"text": result.text, "svg": result.svg, "html": result.html}[fmt](), output)


@cli.command("check-pass")
@click.argument("pass_ref", metavar="MODULE:PASS")
@click.option("--after", metavar="NAME", help="Insert it after this pass.")
@click.option("--before", metavar="NAME", help="Insert it before this pass.")
@click.option("--pipeline", metavar="SPEC", default=None,
              help="The pipeline to insert it into (or one that holds it) [default: default].")
@click.option("--program", "programs", metavar="PROGRAM", multiple=True,
              help="Check on these programs only (repeat) [default: the corpus and the CKKS "
                   "examples].")
@click.option("--random", "random_count", type=click.IntRange(0, 100000), default=20,
              show_default=True, help="Seeded random programs besides them.")
@click.option("--seed", type=click.IntRange(0), default=0, show_default=True)
@debug_option
def check_pass(pass_ref: str, after: str | None, before: str | None, pipeline: str | None,
               programs: tuple[str, ...], random_count: int, seed: int) -> None:
    """Check a pass of your own (importable as MODULE:PASS, the working directory included):
    its contract, the later passes' contracts, its semantics against the reference
    interpreter and the result, on many programs; the first failure is shrunk to a small
    graph and shown before and after the pass.  Exit status 1 when it fails."""
    base = _pipeline_of(pipeline)
    report = pd.check(pass_ref, pipeline=base, after=after, before=before,
                      programs=list(programs) or None, random=random_count, seed=seed)
    print_marked(str(report) + "\n")
    if not report.ok:
        sys.exit(1)


def main() -> None:
    """The console script."""
    cli(prog_name="ren-inspect")


__all__ = ["cli", "main"]
