"""ren.viz: pass traces and their diffs, Graphviz pictures, the arena picture, plan and kernel
views, golden diffs, program loading and the HTML report — each checked against the engine's own
records (run_passes, dump, plan_memory, the schedule), not against itself."""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

import ren
from ren.corpus import PROGRAMS, build
from ren.dump import dump
from ren.errors import InspectError
from ren.node import toposort
from ren.ops import Op
from ren.passes import PASS_NAMES
from ren.schedule import linearize, run_passes
from ren.viz import arena as av
from ren.viz import golden as gd
from ren.viz import graph as gv
from ren.viz import jitplan, kernels, nodes, programs, report, trace

GOLDEN = Path(__file__).parent / "golden"


@cache
def traced(name: str) -> trace.PassTrace:
    return trace.trace_passes(*programs.load_program(name).outputs())


# -- traces --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["rotations", "keyswitch", "constants", "device_copy"])
def test_stage_by_stage_run_matches_the_goldens(name):
    """Running the passes one at a time gives exactly the graphs of one run (the goldens)."""
    texts = traced(name).golden_texts()
    assert list(texts) == ["00_input", *PASS_NAMES]
    for stage, text in texts.items():
        assert text == (GOLDEN / name / f"{stage}.txt").read_text(), stage


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_statuses_partition_the_graphs(name):
    t = traced(name)
    for prev, stage in zip(t.stages, t.stages[1:]):
        before, after = set(prev.order), set(stage.order)
        assert set(stage.status) == after
        assert {n for n, s in stage.status.items() if s == "kept"} == before & after
        gone = before - after
        assert set(stage.removed) | set(stage.partner) == gone
        assert not set(stage.removed) & set(stage.partner)
        for old, new in stage.partner.items():  # a successor keeps op, dtype and arg
            assert (old.op, old.dtype, old.arg) == (new.op, new.dtype, new.arg)
            assert stage.status[new] in ("rebuilt", "rewritten")
            assert stage.ident[new] == prev.ident[old]
        assert Counter(stage.status.values())["rebuilt"] <= len(stage.partner)
        assert set(stage.status.values()) <= {"kept", "rebuilt", "rewritten", "added"}


def test_what_pass_2_changes_in_rotations():
    stage = traced("rotations").stage("lower_ring_ops")
    assert {n.op for n in stage.removed} == {Op.ROTATE, Op.CONJUGATE}
    rewritten = [n for n, s in stage.status.items() if s == "rewritten"]
    assert {n.op for n in rewritten} == {Op.AUTOMORPH}  # each one a rule's product ...
    assert {stage.replaces[n].op for n in rewritten} == {Op.ROTATE, Op.CONJUGATE}
    assert {stage.replaced_by[r].op for r in stage.removed if r in stage.replaced_by} == {
        Op.AUTOMORPH}  # ... for these
    assert all(stage.ident[n] > max(stage.ident[m] for m in stage.order if m not in rewritten)
               for n in rewritten)  # numbered after every existing node
    # rotate(3).rotate(-3) composes to the identity: ADD(a', a) is rebuilt as ADD(x, x)
    assert Op.ADD in {n.op for n, s in stage.status.items() if s == "rebuilt"}
    s6, s7 = traced("rotations").stage(6), traced("rotations").stage(7)
    assert s7.graph is s6.graph  # pass 7 only records the becomes_map
    assert s7.counts() == {"nodes": len(s6.order), "added": 0, "rewritten": 0, "rebuilt": 0,
                           "removed": 0}


@pytest.mark.parametrize("name", ["rotations", "constants", "keyswitch"])
def test_rules_fired_per_pass_match_one_scheduling_run(name):
    ctx = run_passes(*build(name)).ctx
    for stage in traced(name).stages[1:]:
        own = {r: k for r, k in stage.rules.items() if "." not in r}
        assert own == dict(ctx.stats.get(stage.name[3:], {})), stage.name


def test_marked_text_is_the_dump_with_marks():
    t = traced("keyswitch")
    for stage in t.stages:
        text = trace.stage_text(stage, t.stages[stage.index - 1] if stage.index else None)
        body = [line[2:] for line in text.splitlines()
                if line[:2] in ("  ", "+ ", "~ ", "* ") and line[2:].startswith(("%", "    | "))]
        want = [line for line in dump(stage.graph).splitlines() if not line.startswith(("rings",
                                                                                         "  r"))]

        def shape(line):  # the dump line without its numbers and names (the dump's own)
            line = line.split("  # ")[0].rstrip()
            return re.sub(r"[%$]\d+|\b(r|buf)\d+\b", "#", line)  # $k: a kernel body's own

        assert [shape(b) for b in body] == [shape(w) for w in want], stage.name
        assert sum(line.startswith("- %") for line in text.splitlines()) == len(stage.removed)


def test_stage_lookup_and_errors():
    t = traced("rotations")
    assert t.stage(3) is t.stage("3") is t.stage("inject_domains") is t.stage("03_inject_domains")
    with pytest.raises(InspectError, match="no pass 'bogus'"):
        t.stage("bogus")
    one = trace.trace_text(t, 2)
    assert "== before: 01_simplify" in one and "== 02_lower_ring_ops" in one


# -- graphs ---------------------------------------------------------------------------------------
def test_every_op_has_a_family_and_colour():
    for op in Op:
        assert nodes.family(op) in nodes.FAMILIES
        assert nodes.colour(op).startswith("#")


def _svg_nodes(svg: str) -> list[str]:
    return re.findall(r'<g id="([^"]+)" class="node', svg)


@pytest.mark.parametrize("index", [0, 2, 6, 12])
def test_stage_svg_has_one_element_per_node(index):
    t = traced("rotations")
    stage = t.stage(index)
    svg = gv.render_svg(gv.stage_agraph(t, index, prefix="p"))
    ids = _svg_nodes(svg)
    ghosts = len(stage.removed) if len(stage.removed) <= gv.MAX_GHOSTS else 0
    assert len(ids) == len(set(ids)) == len(stage.order) + ghosts
    assert {f"pn{stage.ident[n]}" for n in stage.order} <= set(ids)
    assert svg.startswith("<svg") and "<?xml" not in svg
    added = sum(1 for s in stage.status.values() if s == "added")
    assert svg.count('class="node added"') == added


def test_graph_svg_of_a_poly_and_kernel_bodies():
    ring = ren.RingSpec.generate(N=16, count=2)
    p = ren.Poly.from_coefficients(range(16), ring)
    q = (p * p + 1).intt()
    svg = gv.graph_svg(q, after_pass=4)
    assert len(_svg_nodes(svg)) == len(toposort(run_passes(q, upto=4).sink))
    dot = gv.graph_dot([q], after_pass="kernelize", kernel_bodies=True)
    final = run_passes(q).sink
    bodies = sum(len(toposort(n.arg.ast)) for n in toposort(final) if n.op is Op.KERNEL)
    assert dot.count("cluster_") == sum(n.op is Op.KERNEL for n in toposort(final))
    assert bodies > 0 and dot.count("->") > len(toposort(final))


def test_too_large_graphs_are_refused():
    with pytest.raises(gv.TooLarge, match="more than the limit of 5"):
        gv.stage_agraph(traced("keyswitch"), 6, max_nodes=5)


# -- arena ----------------------------------------------------------------------------------------
def _rect_titles(svg: str) -> list[str]:
    return re.findall(r'<g class="buffer"[^>]*><title>([^<]+)</title>', svg)


@pytest.mark.parametrize("name", ["keyswitch", "device_copy", "ckks_multiply"])
def test_arena_picture_shows_every_planned_buffer(name):
    view = av.plan_program(programs.load_program(name).outputs())
    plan = view.plan
    svg = av.arena_svg(view)
    titles = _rect_titles(svg)
    assert len(titles) == len(plan.planned) > 0
    for b, title in zip(plan.planned, titles):
        first, last = plan.live[b]
        assert f"steps {first}..{last}" in title and f"offset {plan.offsets[b]}," in title
        assert f"{plan.sizes[b]} bytes" in title
    for dev in plan.arenas:
        assert f"arena {av.fmt_bytes(plan.arenas[dev])}" in svg
    rows = av.arena_rows(view)
    assert [r["offset"] for r in rows] == [plan.offsets[b] for b in plan.planned]
    names = set(re.findall(r"buf\d+", dump(run_passes(*programs.load_program(name).outputs())
                                              .sink)))
    assert {r["buffer"] for r in rows} <= names  # named as in the final dump


def test_arena_ascii_places_buffers_by_offset_and_step():
    view = av.plan_program(build("keyswitch"))
    text = av.arena_ascii(view, width=80, height=10)
    grid = [line[3:-1] for line in text.splitlines() if line.startswith("  |")]
    plan = view.plan
    arena = plan.arenas["python"]
    for i, b in enumerate(plan.planned):
        ch = "abcdefghijklmnopqrstuvwxyz"[i]
        first, _ = plan.live[b]
        row = plan.offsets[b] * 10 // arena
        assert grid[row][first] == ch, (ch, row, first)


# -- plans and kernels ----------------------------------------------------------------------------
def test_template_view_replacement_table_points_at_the_units():
    view = jitplan.capture_template(build("rotations"))
    assert view.source.startswith("replay template")
    items = linearize(run_passes(*build("rotations")).sink)
    assert [u.name for u in view.units] == [i.name for i in items]
    assert view.inputs and view.memory is not None
    for entry in view.inputs:
        for use in entry["uses"]:
            unit, slot = map(int, re.findall(r"\d+", use)[:2])
            assert view.name(view.units[unit].bufs[slot]) in (entry["buffer"],) or "view" in use


def test_random_leaves_are_not_replayable_but_shown():
    view = jitplan.capture_template(build("random_inputs"))
    assert view.inputs == [] and "RANDOM" in view.notes[0] and view.units


class FakeUnit:
    def __init__(self, kind, name, bufs):
        self.kind, self.name, self.bufs = kind, name, bufs


class FakePlan:
    """A plan as the JIT protocol (ren.viz.jitplan) describes it: tuples in the table."""

    def __init__(self):
        a, b, c = (ren.Buffer("python", (2, 16)) for _ in range(3))
        self.units = [FakeUnit("compute", "k0", (b, a)), FakeUnit("compute", "k1", (c, b, a))]
        self.replacements = [("args[0]", 0, 1), ("args[0]", 1, 2)]
        self.memory_plan = None
        self.runner = type("Prebound", (), {})()
        self.capture_time = 0.25


class Row:
    def __init__(self, unit, slot, input, offset=None):
        self.unit, self.slot, self.input, self.offset = unit, slot, input, offset


class FakePlanWithRows:
    """The protocol with row objects, named inputs and a view of an input."""

    def __init__(self):
        x, y, out = (ren.Buffer("python", (2, 16)) for _ in range(3))
        low = ren.Buffer("python", (1, 16), base=y, offset=16)
        self.units = [FakeUnit("view", "v", (low, y)), FakeUnit("compute", "k", (out, x, low))]
        self.inputs = [("args[0]", None), ("args[1]", None)]
        self.input_table = [Row(0, 1, 1), Row(1, 1, 0), Row(1, 2, 1, 16)]
        self.scalars = [("k", 3)]
        self.memory = None
        self.runner = "numpy-prebound"
        self.capture_seconds = 0.5


def test_jit_protocol_reader():
    view = jitplan.from_plan(FakePlan())
    assert view.runner == "Prebound" and view.capture_seconds == 0.25
    assert len(view.inputs) == 1 and view.inputs[0]["input"] == "args[0]"
    assert view.inputs[0]["uses"] == ["unit 0 slot 1", "unit 1 slot 2"]
    assert view.inputs[0]["buffer"] == "in0"
    assert [r["writes"] for r in view.unit_rows()] == ["buf0", "buf1"]
    rows = jitplan.from_plan(FakePlanWithRows())
    assert [e["input"] for e in rows.inputs] == ["input 0: args[0]", "input 1: args[1]"]
    assert rows.inputs[1]["uses"] == ["unit 0 slot 1", "unit 1 slot 2 (view at +16)"]
    assert [e["buffer"] for e in rows.inputs] == ["in0", "in1"]
    assert rows.unit_rows()[1]["reads"] == "in0, view0"
    assert rows.notes == ["frozen scalar k = 3"]


JIT_FILE = '''
import ren
import ren.jit

RING = ren.RingSpec.generate(N=16, count=2)


@ren.jit
def function(x, y):
    return (x * y + 1).intt()


def example_inputs():
    return (ren.Poly.from_coefficients(range(16), RING),
            ren.Poly.from_coefficients([1] * 16, RING))
'''


def test_real_jit_plan(tmp_path):
    """With ren.jit in the build, `jit` shows its plan; the graph commands see the lazy graph
    of the unwrapped function."""
    pytest.importorskip("ren.jit", reason="ren.jit is not in this build yet")
    f = tmp_path / "jitted.py"
    f.write_text(JIT_FILE)
    prog = programs.load_program(f)
    assert {n.op for n in toposort(prog.outputs()[0].node)} >= {Op.MUL, Op.INTT}
    view = report.jit_view(prog)
    assert view.source == "ren.jit plan" and view.capture_seconds > 0 and view.runner != "—"
    assert [e["input"] for e in view.inputs] == ["input 0: x", "input 1: y"]
    assert [e["buffer"] for e in view.inputs] == ["in0", "in1"]
    for e in view.inputs:
        assert e["uses"]
        for use in e["uses"]:
            unit, slot = map(int, re.findall(r"\d+", use)[:2])
            b = view.units[unit].bufs[slot]
            assert e["buffer"] in (view.name(b), view.name(b.base) if b.base else None)
    assert view.memory is None or view.memory_rows()


def test_kernel_infos_follow_the_schedule(monkeypatch):
    view = av.plan_program(build("ring_views"))
    infos = kernels.kernel_infos(view)
    assert [k.name for k in infos] == [i.name for i in view.items]
    for k, item in zip(infos, view.items):
        if item.ast is not None:
            assert k.ast_text.count("\n") + 1 == len(toposort(item.ast))
        if k.kind in ("view", "copy"):
            assert k.source is None and k.source_note
        else:  # NumPy interprets the AST: the CUDA C renderer's text is shown instead
            assert "REN_KERNEL void" in k.source and "CUDA C" in k.source_note
    device = type(ren.backend.get_device("python"))
    monkeypatch.setattr(device, "render", lambda self, item: f"// {item.name}", raising=False)
    rendered = kernels.kernel_infos(view)
    assert next(k.source for k in rendered if k.kind not in ("view", "copy")) == "// k0_to_rns"


# -- golden diff ----------------------------------------------------------------------------------
def test_golden_diff_is_empty_for_an_unchanged_pass_and_explains_missing_snapshots(tmp_path):
    diffs = gd.golden_diff(traced("rotations"), "rotations", GOLDEN)
    assert len(diffs) == 13 and not any(d.changed for d in diffs)
    assert "every stage matches" in gd.diff_text(diffs)
    with pytest.raises(InspectError, match="no golden snapshots for 'ckks_multiply'"):
        gd.golden_diff(traced("rotations"), "ckks_multiply", GOLDEN)
    (tmp_path / "rotations").mkdir()
    (tmp_path / "rotations" / "00_input.txt").write_text("something else\n")
    diffs = gd.golden_diff(traced("rotations"), "rotations", tmp_path)
    assert diffs[0].changed and "-something else" in diffs[0].diff
    assert diffs[1].changed and diffs[1].expected is None


# -- programs -------------------------------------------------------------------------------------
def test_examples_list_the_corpus_and_ckks():
    ex = programs.examples()
    assert set(PROGRAMS) <= set(ex) and {"ckks_multiply", "ckks_rotate", "ckks_logreg"} <= set(ex)
    assert all(desc for _, desc in ex.values())


def test_ckks_programs_build_ciphertext_graphs():
    p = programs.load_program("ckks_rotate")
    outs = p.outputs()
    assert len(outs) == 4  # two ciphertexts of two parts
    ops = {n.op for o in outs for n in toposort(o.node)}
    assert {Op.ROTATE, Op.CONJUGATE, Op.RESCALE, Op.TO_RING} <= ops
    again = programs.load_program("ckks_rotate").outputs()
    assert [o.node for o in outs] != [o.node for o in again]  # fresh inputs each build


PROGRAM_FILE = '''"""A file program for the tests."""
import ren

def program():
    ring = ren.RingSpec.generate(N=16, count=2)
    a = ren.Poly.from_coefficients(range(16), ring)
    return {"square": a * a, "pair": (a + 1, [a - 1])}
'''

FUNCTION_FILE = '''
import ren
RING = ren.RingSpec.generate(N=16, count=2)

def function(x, y):
    return x * y + 1

def example_inputs():
    return (ren.Poly.from_coefficients(range(16), RING),
            ren.Poly.from_coefficients([1] * 16, RING))
'''


def test_program_files(tmp_path):
    f = tmp_path / "prog.py"
    f.write_text(PROGRAM_FILE)
    p = programs.load_program(str(f))
    assert p.name == "prog" and p.description == "A file program for the tests."
    assert len(p.outputs()) == 3 and p.call() is None
    g = tmp_path / "fn.py"
    g.write_text(FUNCTION_FILE)
    q = programs.load_program(g)
    assert len(q.outputs()) == 1 and q.call() is not None


@pytest.mark.parametrize(("source", "message"), [
    (None, "no such program file"),
    ("x = 1\n", "defines neither program"),
    ("def function(x):\n    return x\n", "but not example_inputs"),
    ("raise ValueError('boom')\n", "loading .* raised ValueError: boom"),
    ("program = 3\n", "program must be a function"),
])
def test_program_file_errors(tmp_path, source, message):
    f = tmp_path / "bad.py"
    if source is not None:
        f.write_text(source)
    with pytest.raises(InspectError, match=message):
        programs.load_program(str(f))


def test_program_errors_at_build_time(tmp_path):
    f = tmp_path / "bad.py"
    f.write_text("def program():\n    return 1 / 0\n")
    with pytest.raises(InspectError, match="raised ZeroDivisionError"):
        programs.load_program(str(f)).outputs()
    f.write_text("def program():\n    return [1, 'x']\n")
    with pytest.raises(InspectError, match="no Poly in it"):
        programs.load_program(str(f)).outputs()
    with pytest.raises(InspectError, match="did you mean rotations"):
        programs.load_program("rotatons")
    with pytest.raises(InspectError, match="unknown CKKS parameters"):
        programs.load_program("ckks_multiply", ckks="N99")


# -- the report -----------------------------------------------------------------------------------
def test_report_is_self_contained_and_complete():
    html = report.report_html(programs.load_program("keyswitch"))
    assert html.count('<article class="stage"') == 13
    assert all(f'data-name="{s}"' in html for s in ["00_input", *PASS_NAMES])
    for section in report.SECTIONS:
        assert f'<section id="{section}"' in html
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=\"(?!data:)", html)
    assert "url(http" not in html and "@import" not in html
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", html))
    assert urls <= {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}
    data = re.search(r'<script type="application/json" id="node-data">(.*?)</script>', html, re.S)
    ids = set(re.findall(r'<g id="(s\d\dn\d+)" class="node', html))
    details = report.expand(json.loads(data.group(1))) if data else {}
    assert ids and ids <= set(details)
    assert all(details[i]["node"] == f"%{i.split('n')[-1]}" for i in ids)


def test_report_sections_can_be_chosen():
    html = report.report_html(programs.load_program("rotations"), sections=("arena",))
    assert '<section id="arena"' in html and '<section id="passes"' not in html
    with pytest.raises(InspectError, match="unknown report section"):
        report.report_html(programs.load_program("rotations"), sections=("bogus",))


def test_report_html_of_polys_built_in_python():
    """report_html takes what graph_svg takes: a Poly, or a tree of Polys (it raised
    AttributeError: 'Poly' object has no attribute 'outputs')."""
    import ren.viz
    from ren import Poly, RingSpec
    from ren.errors import InspectError

    r = RingSpec.generate(8, 2)
    a = Poly.from_coefficients(list(range(8)), r)
    html = ren.viz.report_html(a * a + 1, sections=("passes",))
    assert '<section id="passes"' in html and "a lazy graph built in Python" in html
    assert "MUL" in html
    tree = ren.viz.report_html([a * a, {"x": a + 1}], sections=("passes",))
    assert tree.count("AS_RING") >= html.count("AS_RING")
    with pytest.raises(InspectError, match="a Poly or a tree"):
        ren.viz.report_html(3)


def test_descriptions_are_whole_first_sentences():
    """The first docstring line cut pass 5's job and four examples' descriptions mid-sentence;
    the report offers the whole docstring too."""
    from ren.viz.templating import first_sentence

    assert first_sentence("A b\n  c d. More.\n\nNext") == "A b c d."
    assert first_sentence("no period\nat all") == "no period at all"
    assert first_sentence("Keep ren.ring and 2.5 inside. Then") == "Keep ren.ring and 2.5 inside."
    assert first_sentence(None) == ""
    described = ren.viz.examples()
    for name in ("ntt_rescales", "ring_views", "keyswitch", "keyswitch_ntt"):
        assert described[name][1].endswith("."), (name, described[name][1])
    html = ren.viz.report_html(ren.viz.load_program("rotations"), sections=("passes",))
    assert "buffer of its own." in html and "the whole docstring" in html
