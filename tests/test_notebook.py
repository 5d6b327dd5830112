"""Rich displays in Jupyter (ren.viz.notebook): each repr is well-formed HTML/SVG naming what the
engine's own records hold, large graphs are summarised instead of laid out, the IPython
registration works, and examples/tour.ipynb runs in a real kernel with the rich reprs in its
outputs."""

from __future__ import annotations

import os
import re
import sys
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

import ren
import ren.jit
import ren.viz as viz
from ren.node import toposort
from ren.schedule import as_sink, run_passes
from ren.viz import graph as gv
from ren.viz import notebook as nb

ROOT = Path(__file__).resolve().parent.parent
TOUR = ROOT / "examples" / "tour.ipynb"
RING = ren.RingSpec.generate(N=16, count=3)


def _xml(html: str) -> ET.Element:
    """Parse as XML: the reprs are well-formed (inline SVG included)."""
    return ET.fromstring(html)


def _poly() -> ren.Poly:
    a = ren.Poly.from_coefficients(range(-8, 8), RING)
    b = ren.Poly.from_coefficients([3] * 16, RING)
    return a * b.rotate(1) + 3


def _node_ids(svg: str) -> list[str]:
    return re.findall(r'<g id="([^"]+)" class="node', svg)


def test_poly_shows_its_graph_as_built():
    d = _poly()
    html = nb.poly_html(d)
    root = _xml(html)
    assert root.get("class") == "ren-repr ren-poly"
    svgs = [e for e in root.iter() if e.tag.endswith("svg")]
    assert len(svgs) == 1
    order = toposort(as_sink(d.node))
    assert len(_node_ids(html)) == len(order) == 10  # one box per node, as `passes` draws it
    for op in ("MUL", "ROTATE", "ADD", "TO_RNS"):
        assert op in html
    assert RING.short() in html and "NTT" in html and "lazy, 9 nodes" in html
    assert nb.poly_svg(d).startswith("<svg")
    d.realize()
    assert "realized (a buffer)" in nb.poly_html(d)


def test_a_large_poly_is_a_table_not_a_layout(monkeypatch):
    def no_layout(_g):
        raise AssertionError("a large graph was laid out")

    monkeypatch.setattr(nb, "render_svg", no_layout)
    p = ren.Poly.from_coefficients(range(16), RING)
    for k in range(160):  # > REPR_MAX_NODES nodes
        p = p.rotate(1) + k
    n = len(toposort(as_sink(p.node))) - 1
    assert n > nb.REPR_MAX_NODES
    t0 = time.perf_counter()
    html = nb.poly_html(p)
    assert time.perf_counter() - t0 < 5
    root = _xml(html)
    assert not [e for e in root.iter() if e.tag.endswith("svg")]
    assert f"{n} nodes: more than {nb.REPR_MAX_NODES}" in html
    cells = {tds[0].text: int(tds[1].text) for tds in
             ([td for td in tr if td.tag == "td"] for tr in root.iter("tr")) if len(tds) == 2}
    counts = Counter(m.op.name for m in toposort(as_sink(p.node))[:-1])
    assert cells == dict(counts)
    assert nb.poly_svg(p) is None


def test_pass_trace_table_and_pictures():
    trace = viz.trace_passes(_poly())
    html = trace._repr_html_()
    root = _xml(html)
    rows = [tr for tr in root.iter("tr") if tr.find("td") is not None]
    assert [tr[1].text for tr in rows] == [s.name for s in trace.stages]
    for tr, s in zip(rows, trace.stages):
        assert [int(td.text) for td in tr[2:7]] == list(s.counts().values())
    assert "03_inject_domains" in html and "AUTOMORPH" in html
    drawn = [d for d in html.split("<details>")[1:] if "<svg" in d]
    total = sum(len(_node_ids(d)) for d in drawn)
    assert drawn and total <= nb.TRACE_PICTURE_BUDGET
    assert drawn[0].startswith("<summary>00_input")
    assert len(_node_ids(drawn[0])) == len(trace.stages[0].order)
    assert len(root.findall("details")) == sum(1 for s in trace.stages if s.index == 0 or any(
        v for k, v in s.counts().items() if k != "nodes"))  # one per stage that changed
    assert repr(trace).startswith("<PassTrace 13 stages")


def test_schedule_trace_table():
    d = _poly()
    st = run_passes(d, trace=True)
    root = _xml(nb.trace_html(st))
    rows = [tr for tr in root.iter("tr") if tr.find("td") is not None]
    assert [tr[1].text for tr in rows] == [name for name, _ in st.graphs]
    assert [int(tr[2].text) for tr in rows] == [len(toposort(g)) for _, g in st.graphs]
    assert "KERNEL" in ET.tostring(rows[-1], encoding="unicode")
    assert repr(st).startswith("<ScheduleTrace 13 graphs")


def test_memory_plan_shows_the_arena():
    view = viz.plan_program(viz.load_program("keyswitch").outputs())
    for obj in (view, view.plan):
        html = obj._repr_html_() if obj is view else nb.memory_html(obj)
        root = _xml(html)
        assert root.get("class") == "ren-repr ren-memory"
        rects = re.findall(r'<g class="buffer"[^>]*><title>([^<]+)</title>', html)
        assert len(rects) == len(view.plan.planned) > 0
        assert f"{len(view.plan.planned)} planned buffers" in html
    assert re.search(r"<td>step \d+</td>", nb.memory_html(view.plan))  # a bare plan: numbers
    first = view.plan.live[view.plan.planned[0]][0]
    assert f"<td>{view.items[first].name}</td>" in view._repr_html_()  # a view names kernels
    assert repr(view.plan).startswith("<MemoryPlan 17 steps")


def test_jit_plan_tables():
    @ren.jit
    def fma(x, y):
        return (x * y + 1).intt()

    a, b = ren.Poly.from_coefficients(range(16), RING), ren.Poly.from_coefficients([1] * 16, RING)
    fma(a, b)
    plan = fma.plans[0]
    root = _xml(nb.jit_html(plan))
    text = ET.tostring(root, encoding="unicode")
    assert re.search(r"JitPlan \S*fma</b>", text) and plan.runner in text
    assert "input 0: x" in text and "input 1: y" in text
    unit_rows = [tr for tr in list(root.iter("table"))[-1] if tr.find("td") is not None]
    assert [tr[3].text for tr in unit_rows] == [u.name for u in plan.units]
    jitted = _xml(nb.jit_html(fma))
    assert "1 plan(s)" in ET.tostring(jitted, encoding="unicode")
    view = viz.from_plan(plan)
    assert _xml(view._repr_html_()).get("class") == "ren-repr ren-jit"


def test_picture_is_an_svg():
    pic = viz.picture(_poly(), 3)
    root = _xml(pic._repr_svg_())
    assert root.tag.endswith("svg")
    assert len(_node_ids(pic.svg)) == len(toposort(run_passes(_poly(), upto=3).sink))
    with pytest.raises(gv.TooLarge):
        viz.picture(_poly(), 3, max_nodes=3)


def test_enable_registers_with_ipython_formatter():
    formatters = pytest.importorskip("IPython.core.formatters")
    shell = SimpleNamespace(display_formatter=formatters.DisplayFormatter())
    d = _poly()
    assert "text/html" not in shell.display_formatter.format(d)[0]
    assert nb.enable(shell)
    data, _ = shell.display_formatter.format(d)
    assert 'class="ren-repr ren-poly"' in data["text/html"]
    assert data["text/plain"] == repr(d)
    viz.unload_ipython_extension(shell)
    assert "text/html" not in shell.display_formatter.format(d)[0]
    viz.load_ipython_extension(shell)
    assert "text/html" in shell.display_formatter.format(d)[0]
    assert nb.enable() is False or "IPython" in sys.modules  # no shell running: nothing to do


def test_the_tour_notebook_runs(monkeypatch):
    """examples/tour.ipynb in a real kernel: every cell runs, the rich reprs are in the outputs
    and the ren-inspect commands print what their Python equivalents print."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    # the kernel and `!ren-inspect` come from this interpreter's environment
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep
                       + os.environ.get("PATH", ""))
    notebook = nbformat.read(TOUR, as_version=4)
    assert not any(c.get("outputs") for c in notebook.cells if c.cell_type == "code"), \
        "commit the tour without outputs"
    t0 = time.perf_counter()
    nbclient.NotebookClient(notebook, timeout=60, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT / "examples")}}).execute()
    assert time.perf_counter() - t0 < 60
    html = "\n".join(o["data"].get("text/html", "") for c in notebook.cells
                     if c.cell_type == "code" for o in c.outputs if "data" in o)
    svg = [o["data"]["image/svg+xml"] for c in notebook.cells if c.cell_type == "code"
           for o in c.outputs if "image/svg+xml" in o.get("data", {})]
    for cls in ("ren-poly", "ren-trace", "ren-memory", "ren-jit"):
        assert f'class="ren-repr {cls}"' in html, cls
    assert svg and svg[0].startswith("<svg")
    streams = "".join(o.get("text", "") for c in notebook.cells if c.cell_type == "code"
                      for o in c.outputs if o["output_type"] == "stream")
    streams = re.sub(r"\x1b\[[0-9;]*m", "", streams)
    assert streams.count("== before: 02_lower_ring_ops") == 2  # the CLI and trace_text
    assert "keyswitch: memory plan of 17 schedule steps" in streams
    assert "memory plan: 17 items" in streams
    # 6. write your own pass: checked, its wrong twin caught, measured
    assert "check karatsuba in default,+custom_pass:karatsuba" in streams
    assert "all passed" in streams
    assert "karatsuba_wrong" in streams and "FAILED" in streams
    assert 'class="ren-repr ren-compare"' in html and "karatsuba" in html
