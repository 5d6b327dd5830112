"""ren.viz.groups and the report's large-graph parts: every node in a group on every stage, the
CKKS overlays (level, scale, bits), the collapsed stages' rows, packed node details, capped
text dumps and repeated kernels shown once."""

from __future__ import annotations

import inspect
import json
import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ren.ckks.debug import Report, Step
from ren.ckks.operations import record_operations
from ren.viz import kernels as kv
from ren.viz import programs, report
from ren.viz.groups import BLOCK, STATUS_CODE, collapsed_stage, operation_groups
from ren.viz.links import plan_trace
from ren.viz.precision import precision_of
from ren.viz.trace import trace_passes


@pytest.fixture(scope="module")
def multiply():
    prog = programs.load_program("ckks_multiply")
    with record_operations() as log:
        outputs = prog.outputs()
    trace = trace_passes(*outputs)
    return prog, log, trace, outputs


def test_every_node_of_every_stage_is_in_a_group(multiply):
    _, log, trace, _ = multiply
    groups = operation_groups(trace, log)
    assert groups.kind == "operations" and len(groups.of_stage) == len(trace.stages)
    for stage, of in zip(trace.stages, groups.of_stage, strict=True):
        assert set(of) == set(stage.order)
        assert {n.op.name for n in stage.order if of[n] < 0} <= {"SINK"}, stage.name
    built = log.node_groups()
    first = groups.of_stage[0]
    assert all(first[n] == g for n, g in built.items() if n in first)
    names = {groups.table[g]["name"].split(" #")[0] for g in groups.of_stage[-1].values() if g >= 0}
    assert {"relinearize", "rescale"} <= names  # the kernels of stage 12 keep their operations
    assert all(t["parent"] < i for i, t in enumerate(groups.table))  # parents come first
    roots = [t for t in groups.table if t["parent"] < 0]
    assert [t["name"] for t in roots] == ["multiply #0", "rescale #0"]  # numbered per operation
    lines, first_line = inspect.getsourcelines(programs._ckks_multiply)
    call = first_line + next(i for i, line in enumerate(lines) if "ev.rescale(ev.multiply" in line)
    assert all(t["parent"] == -1 for t in roots) and roots[0]["where"] == f"programs.py:{call}"
    for g in range(len(groups.table)):  # a group's path: its ancestors' names, then its own
        chain, j = [], g
        while j >= 0:
            chain.append(groups.table[j]["name"])
            j = groups.table[j]["parent"]
        assert groups.path(g) == chain[::-1]
    assert max(len(groups.path(g)) for g in range(len(groups.table))) == 2  # relinearize
    # the INTT/NTT pairs pass 3 puts around each RESCALE join the rescale's operation
    st3, of3 = trace.stages[3], groups.of_stage[3]
    added = [n for n in st3.order if st3.status[n] == "added"]
    rescales = {of3[n] for n in st3.order if n.op.name == "RESCALE"}
    assert added and {of3[n] for n in added} <= rescales


def test_ciphertext_parts_carry_level_scale_and_bits(multiply):
    prog, log, trace, outputs = multiply
    meter = precision_of(prog)
    groups = operation_groups(trace, log, meter)
    first = trace.stages[0]
    rescaled = [first.ident[p.node] for p in outputs]  # fn returns the rescaled product
    want = next(s for s in meter.steps if s.op == "rescale")
    for k in rescaled:
        o = groups.overlay[k]
        assert o.operation.startswith("rescale #") and o.level == want.level
        assert o.log2_scale == pytest.approx(want.log2_scale) and o.bits == want.bits
        assert o.label() == f"L{want.level} · 2^{want.log2_scale:.1f} · {want.bits:.1f} b"
        assert o.text() == (f"part {o.part} of {o.operation}: level {want.level}, scale "
                            f"2^{want.log2_scale:.2f}, {want.bits:.1f} bits of precision")
    assert {o.part for k, o in groups.overlay.items() if k in rescaled} == {0, 1}
    # a meter whose steps do not line up with the operations gives no bits (never wrong ones)
    wrong = Report([Step(0, "negate", "x:1", "", 1, 40.0, False, None)], meter.params, True)
    assert all(math.isnan(o.bits) for o in operation_groups(trace, log, wrong).overlay.values())


def test_a_poly_program_is_grouped_in_blocks():
    trace = trace_passes(*programs.load_program("keyswitch").outputs())
    groups = operation_groups(trace, None)
    assert groups.kind == "blocks"
    for stage, of in zip(trace.stages, groups.of_stage, strict=True):
        assert [of[n] for n in stage.order] == [i // BLOCK for i in range(len(stage.order))]
    assert len(groups.table) == math.ceil(max(len(s.order) for s in trace.stages) / BLOCK)


def test_collapsed_rows_name_their_sources_by_lasting_number(multiply):
    _, log, trace, _ = multiply
    groups = operation_groups(trace, log)
    for stage in (trace.stages[0], trace.stages[6], trace.stages[-1]):
        rows = collapsed_stage(stage, groups.of_stage[stage.index])
        numbers = [r[0] for r in rows]
        assert numbers == [stage.ident[n] for n in stage.order]
        position = {k: i for i, k in enumerate(numbers)}
        for i, (_k, op, status, g, srcs) in enumerate(rows):
            assert op == stage.order[i].op.name and status in STATUS_CODE.values()
            assert all(position[s] < i for s in srcs)  # sources come first, in this stage
            assert g == groups.of_stage[stage.index][stage.order[i]]


def test_a_stage_past_the_limit_is_shown_collapsed(multiply):
    prog = multiply[0]
    ctx = report.report_context(prog, report.ReportOptions(max_nodes=100, golden=None))
    passes = ctx["passes"]
    collapsed = [s for s in passes["stages"] if s["collapsed"]]
    assert collapsed and all(not s["svg"] and "Shown collapsed" in s["note"] for s in collapsed)
    assert set(passes["collapse"]["stages"]) == {f"s{s['index']:02d}" for s in collapsed}
    html = report.report_html(prog, report.ReportOptions(max_nodes=100, golden=None))
    view = json.loads(re.search(r'<script type="application/json" id="collapse">(.*?)</script>',
                                html, re.S).group(1))
    assert view["kind"] == "operations" and view["groups"][0]["name"] == "multiply #0"
    details = report.expand(json.loads(re.search(
        r'<script type="application/json" id="node-data">(.*?)</script>', html, re.S).group(1)))
    for prefix, rows in view["stages"].items():  # every collapsed node has its details
        assert all(f"{prefix}n{r[0]}" in details for r in rows)
    assert html.count('class="graph collapsed"') == len(collapsed)


def test_long_text_dumps_are_cut(multiply, monkeypatch):
    monkeypatch.setattr(report, "MAX_TEXT_LINES", 50)
    ctx = report.report_context(multiply[0], report.ReportOptions(sections=("passes",),
                                                                  golden=None))
    last = ctx["passes"]["stages"][-1]["text"]
    assert len(last.splitlines()) == 51
    assert re.search(r"… \d+ more lines: `ren-inspect passes PROGRAM --pass 12`", last)


_values = st.one_of(st.text(max_size=5), st.integers(-3, 3), st.floats(allow_nan=False))


@given(st.dictionaries(st.text(min_size=1, max_size=4),
                       st.dictionaries(st.sampled_from("abcde"), _values, max_size=4),
                       max_size=12))
def test_packed_details_round_trip(node_data):
    packed = report.compact(node_data)
    assert report.expand(packed) == node_data
    assert len(packed["rows"]) == len({json.dumps(d, sort_keys=True) for d in node_data.values()})


def test_repeated_kernels_are_shown_once(multiply):
    _, _, trace, _ = multiply
    infos = kv.kernel_infos(plan_trace(trace))
    repeats = [k for k in infos if k.same_as is not None]
    assert repeats  # a multiply has several NTTs of one shape
    for k in repeats:
        first = infos[k.same_as]
        assert first.same_as is None and first.index < k.index
        assert (first.kind, first.ast_text, first.ring) == (k.kind, k.ast_text, k.ring)
