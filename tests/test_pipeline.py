"""A pipeline is a value (`ren.passes.Pipeline`): editing, the text form, required passes, every
entry point taking it, user passes in the fused and unfused scheduler, and caches keyed by it."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from pipeline_user_passes import (
    canonical_mul,
    canonical_mul_alone,
    count_nodes,
    drop_double_neg,
    kernelize_again,
)

import ren
from ren import corpus, settings
from ren.dump import dump
from ren.errors import PipelineError
from ren.passes import PASS_NAMES, Pass, Pipeline, default_pipeline
from ren.schedule import ScheduleContext, run_passes

OPTIONAL = ["simplify", "simplify_domains"]
REQUIRED = ["lower_ring_ops", "inject_domains", "materialize", "lower_bufferize", "becomes_map",
            "lower_automorphisms", "lower_constants", "buffer_views", "indexify", "kernelize"]


def test_the_default_pipeline_is_the_twelve_passes():
    p = default_pipeline()
    assert p.stage_names == PASS_NAMES and len(p) == 12
    assert str(p) == "default" and Pipeline.parse("default") == p
    assert [q.name for q in p if q.optional] == OPTIONAL
    assert all(q.builtin and q.number == i for i, q in enumerate(p, 1))


def test_editing_returns_new_pipelines():
    p = default_pipeline()
    q = p.insert(canonical_mul, after="lower_ring_ops")
    assert q.names[2] == "canonical_mul" and len(q) == 13 and len(p) == 12
    assert q.insert(count_nodes, before="simplify").names[0] == "count_nodes"
    assert p.without("simplify").names == p.names[1:]
    r = p.replace("simplify_domains", canonical_mul_alone)
    assert r.names[3] == "canonical_mul_alone" and "simplify_domains" not in r.names
    assert p.replace("kernelize", kernelize_again).names[-1] == "kernelize_again"
    assert p == default_pipeline() and q != p and hash(q) != hash(p)


@pytest.mark.parametrize("spec", [
    "default",
    "default,-simplify_domains",
    "default,-simplify,-simplify_domains",
    "default,+pipeline_user_passes:canonical_mul@after=lower_ring_ops",
    "default,+pipeline_user_passes:count_nodes@before=simplify,-simplify",
    "default,-simplify_domains,+pipeline_user_passes:canonical_mul_alone@after=inject_domains",
])
def test_the_text_form_round_trips(spec):
    p = Pipeline.parse(spec)
    assert Pipeline.parse(str(p)) == p
    assert pickle.loads(pickle.dumps(p)) == p


def test_replacing_by_text():
    p = Pipeline.parse("default,simplify_domains=pipeline_user_passes:canonical_mul")
    assert p.names[3] == "canonical_mul" and Pipeline.parse(str(p)) == p


@pytest.mark.parametrize("spec, says", [
    ("", "non-empty"),
    ("twelve", "start with 'default'"),
    ("default,-no_such_pass", "no pass 'no_such_pass'"),
    ("default,+pipeline_user_passes:canonical_mul@after=nowhere", "no pass 'nowhere'"),
    ("default,+pipeline_user_passes:canonical_mul@around=simplify", "@after=NAME"),
    ("default,+no_such_module_xyz:p@after=simplify", "cannot import"),
    ("default,+pipeline_user_passes:missing@after=simplify", "has no 'missing'"),
    ("default,+pipeline_user_passes:_ordered@after=simplify", "expected a ren.passes.Pass"),
    ("default,?simplify", "cannot read"),
    ("default,+simplify@after=kernelize", "two passes named 'simplify'"),
])
def test_a_bad_spec_is_a_pipeline_error_that_lists_the_passes(spec, says):
    with pytest.raises(PipelineError, match=None) as e:
        Pipeline.parse(spec)
    assert says in str(e.value)


def test_a_bad_spec_names_the_passes():
    with pytest.raises(PipelineError) as e:
        Pipeline.parse("default,-no_such_pass")
    assert all(name in str(e.value) for name in default_pipeline().names)


@pytest.mark.parametrize("name", REQUIRED)
def test_removing_a_required_pass_names_the_pass_that_needs_it(name):
    with pytest.raises(PipelineError) as e:
        default_pipeline().without(name)
    msg = str(e.value)
    assert f"cannot remove {name!r}" in msg and "required" in msg
    later = default_pipeline().names[default_pipeline().index(name) + 1:]
    assert any(q in msg for q in later) or "realization" in msg or "backends" in msg, msg


def test_lowering_passes_name_the_contract_that_breaks():
    with pytest.raises(PipelineError,
                       match="inject_domains's contract allows no CONJUGATE, ROTATE"):
        default_pipeline().without("lower_ring_ops")
    with pytest.raises(PipelineError, match="allows no BUFFERIZE"):
        default_pipeline().without("lower_bufferize")


def test_a_required_pass_is_replaced_only_by_a_required_one():
    with pytest.raises(PipelineError, match="required pass"):
        default_pipeline().replace("kernelize", count_nodes)


@pytest.mark.parametrize("bad", [
    dict(name="has space", run=lambda s, c: s),
    dict(name="x"),
    dict(name="x", run=lambda s, c: s, rules=[]),
    dict(name="x", run=5),
    dict(name="x", run=lambda s, c: s, fusable=True),
    dict(name="x", run=lambda s, c: s, contract="no"),
])
def test_a_malformed_pass_is_refused(bad):
    with pytest.raises(PipelineError):
        Pass(**bad)


def test_insert_needs_exactly_one_anchor():
    with pytest.raises(PipelineError, match="exactly one of after= and before="):
        default_pipeline().insert(count_nodes)
    with pytest.raises(PipelineError, match="two passes named"):
        default_pipeline().insert(count_nodes, after="simplify").insert(count_nodes,
                                                                        after="kernelize")


def test_a_user_pass_defined_in_place_has_no_text_form():
    local = Pass("local_pass", run=lambda sink, ctx: sink)
    p = default_pipeline().insert(local, after="simplify")
    with pytest.raises(PipelineError, match="no text form"):
        str(p)
    assert "local_pass" in repr(p)


# -- the pipeline changes what runs, and the values stay -----------------------------------------
def _values(outs):
    return [np.array(o.tolist()) for o in outs]


@pytest.mark.parametrize("program", sorted(corpus.PROGRAMS))
def test_every_optional_pass_can_go_and_values_stay(program):
    expected = _values(corpus.build(program))
    for spec in ["default," + ",".join(f"-{n}" for n in OPTIONAL),
                 "default,+pipeline_user_passes:canonical_mul@after=inject_domains"]:
        with ren.pipeline(spec):
            got = _values(corpus.build(program))
        assert all(np.array_equal(a, b) for a, b in zip(expected, got)), (program, spec)


def test_a_pass_removed_is_not_run():
    outs = corpus.build("ntt_product")
    ctx = ScheduleContext(outputs=tuple(o.node for o in outs))
    run_passes(*outs, ctx=ctx, pipeline="default,-simplify_domains")
    assert "simplify_domains" not in ctx.stats and "inject_domains" in ctx.stats
    assert len(ctx.pipeline) == 11


def test_schedule_and_run_passes_take_a_pipeline():
    outs = corpus.build("ntt_product")
    spec = "default,+pipeline_user_passes:canonical_mul@after=lower_ring_ops"
    trace = run_passes(*outs, pipeline=spec, trace=True)
    assert [name for name, _ in trace.graphs][3] == "03_canonical_mul"
    assert len(ren.schedule(*outs, pipeline=spec)) == len(ren.schedule(*outs))


def _double_negations():
    a, b = corpus.poly(31), corpus.poly(32, domain=ren.Domain.NTT)
    c = -(-(a * a))  # noqa: B002 - a double negation on purpose
    return (-(-(c + b)), (-(-b)) * b, c.rotate(1), -(-(a.ntt() * b)),  # noqa: B002
            -(-a) + a)  # noqa: B002


@pytest.mark.parametrize("where", ["lower_bufferize", "lower_automorphisms", "lower_constants"])
@pytest.mark.parametrize("user_pass", [drop_double_neg, canonical_mul])
def test_a_user_pass_gives_the_same_graph_fused_or_alone(where, user_pass):
    """The fused scheduler runs a fusable user pass inside its row (and a pass that is not
    fusable on its own, between rows); run pass by pass, the final graph is node for node the
    same, with the same rule counts."""
    # (simplify and simplify_domains would fold the double negations first)
    p = default_pipeline().without("simplify", "simplify_domains").insert(user_pass, after=where)
    outs = _double_negations()
    sinks, stats = [], []
    for fuse in (True, False):
        ctx = ScheduleContext(outputs=tuple(o.node for o in outs), fuse=fuse, pipeline=p)
        sinks.append(dump(run_passes(*outs, ctx=ctx).sink))  # (new buffers each run)
        stats.append({k: dict(v) for k, v in ctx.stats.items() if sum(v.values())})
    assert sinks[0] == sinks[1]
    assert stats[0] == stats[1]
    assert stats[0][user_pass.name]  # it fired


def test_a_fusable_user_pass_runs_inside_its_row():
    from ren.schedule import _rows

    p = default_pipeline().insert(drop_double_neg, after="lower_automorphisms")
    rows = _rows(p, 1, len(p), fuse=True)
    assert [q.name for _, q in rows[-1]] == ["lower_bufferize", "becomes_map",
                                             "lower_automorphisms", "drop_double_neg",
                                             "lower_constants", "buffer_views", "indexify",
                                             "kernelize"]
    alone = default_pipeline().insert(canonical_mul, after="lower_automorphisms")
    assert [len(r) for r in _rows(alone, 1, len(alone), fuse=True)][-3:] == [3, 1, 4]


def test_double_negation_values_stay():
    expected = _values(_double_negations())
    with ren.pipeline(default_pipeline().without("simplify", "simplify_domains").insert(
            drop_double_neg, after="lower_bufferize")):
        got = _values(_double_negations())
    assert all(np.array_equal(a, b) for a, b in zip(expected, got))


def test_a_user_pass_shows_in_the_trace_with_its_rules():
    from ren.viz.trace import trace_passes

    outs = corpus.build("elementwise_chain")
    p = default_pipeline().insert(canonical_mul_alone, after="inject_domains")
    trace = trace_passes(*outs, pipeline=p)
    stage = trace.stages[4]
    assert stage.name == "04_canonical_mul_alone"
    assert stage.doc == "canonical_mul, by another name."
    assert stage.rules["mul_operand_order_alone"] == 1
    assert sum(s == "rewritten" for s in stage.status.values()) >= 1
    assert trace.stages[-1].name == "13_kernelize"


# -- caches are keyed by the pipeline -------------------------------------------------------------
def test_the_template_cache_separates_pipelines():
    """The same graph realized under two pipelines is scheduled under each: the second does not
    replay the first's template (it would, were the pipeline not in the key)."""
    from ren import realization

    runs = []
    real = realization.compile_template

    def spy(*a, **kw):
        runs.append(ren.passes.current_pipeline())
        return real(*a, **kw)

    mp = pytest.MonkeyPatch()
    mp.setattr(realization, "compile_template", spy)
    try:
        for spec in ("default", "default,-simplify_domains", "default"):
            with ren.pipeline(spec):
                a = corpus.poly(11)
                b = corpus.poly(12)
                ((a * b).rotate(1)).realize()
    finally:
        mp.undo()
    assert [str(p) for p in runs] == ["default", "default,-simplify_domains"]


def test_jit_plans_are_keyed_by_the_pipeline():
    @ren.jit
    def f(a, b):
        return (a * b).rotate(1) + a.ntt()

    x, y = corpus.poly(21), corpus.poly(22)
    x.realize(), y.realize()
    r0 = f(x, y).tolist()
    with ren.pipeline("default,-simplify_domains"):
        r1 = f(x, y).tolist()
    r2 = f(x, y).tolist()
    assert r0 == r1 == r2
    assert len(f.plans) == 2 and f.misses == 2 and f.hits == 1

    g = ren.jit(lambda a, b: a * b, pipeline="default,-simplify")
    assert g(x, y).tolist() == (x * y).tolist()
    with ren.pipeline("default"):  # its own pipeline wins over the one in force
        g(x, y)
    assert len(g.plans) == 1 and g.hits == 1
    assert str(g.pipeline) == "default,-simplify"


def test_the_setting_chooses_the_pipeline():
    with settings.override(REN_PIPELINE="default,-simplify"):
        assert "simplify" not in ren.passes.current_pipeline().names
        assert ScheduleContext().pipeline.names[0] == "lower_ring_ops"
    assert ren.passes.current_pipeline() == default_pipeline()
    with settings.override(REN_PIPELINE="default,-nothing"), pytest.raises(PipelineError):
        ren.passes.current_pipeline()
    with ren.pipeline("default,-simplify"), settings.override(REN_PIPELINE="default"):
        assert "simplify" not in ren.passes.current_pipeline().names  # the block wins


def test_ckks_evaluators_run_under_the_pipeline_in_force(monkeypatch):
    """The CKKS layer only builds Poly graphs: a `with ren.pipeline(...)` block schedules its
    work too, and exact pipelines (no transform elision; a MUL operand reordering) leave every
    word of the result unchanged."""
    from ckks_helpers import context

    from ren import realization

    used = []
    real = realization.run_passes

    def spy(*a, **kw):
        used.append(kw["ctx"].pipeline.names)
        return real(*a, **kw)

    monkeypatch.setattr(realization, "run_passes", spy)
    c = context(N=64, depth=3)
    x, y = c.encrypt([0.5, -0.25]), c.encrypt([0.75, 0.5])
    want = c.ev.rescale(c.ev.multiply(x, y))
    words = [p.numpy() for p in (want.c0, want.c1)]
    for spec in ("default,-simplify_domains",
                 "default,+pipeline_user_passes:canonical_mul@after=inject_domains"):
        with ren.pipeline(spec):
            got = c.ev.rescale(c.ev.multiply(x, y))
            assert [np.array_equal(a, p.numpy()) for a, p in zip(words, (got.c0, got.c1))] == \
                [True, True]
        assert used[-1] == ren.passes.Pipeline.parse(spec).names


def test_a_user_rule_runs_the_same_on_the_compiled_and_the_python_walk():
    """Traced runs take the Python walk (it records provenance), others the compiled one
    (where it is built): a user's rules give the same graph and counts on both."""
    p = default_pipeline().without("simplify", "simplify_domains").insert(
        canonical_mul, after="inject_domains").insert(drop_double_neg, after="lower_bufferize")
    outs = _double_negations()
    runs = []
    for trace in (False, True):
        ctx = ScheduleContext(outputs=tuple(o.node for o in outs), pipeline=p, fuse=False)
        runs.append((dump(run_passes(*outs, ctx=ctx, trace=trace).sink),
                     {k: dict(v) for k, v in ctx.stats.items() if sum(v.values())}))
    assert runs[0] == runs[1]
    assert runs[0][1]["drop_double_neg"] and runs[0][1]["canonical_mul"]


def test_a_user_pass_module_is_no_builtin_and_has_a_text_form(monkeypatch):
    """A pass module of the user's (NAME, run) is keyed by its code, not its name alone."""
    import pipeline_user_pass_module as mod

    p = Pipeline.parse("default,+pipeline_user_pass_module@after=simplify")
    user = p["looks_only"]
    assert not user.builtin and user.optional
    assert str(p) == "default,+pipeline_user_pass_module@after=simplify"
    before = user.digest
    monkeypatch.setattr(mod, "run", lambda sink, ctx=None: sink.replace())
    assert Pipeline.parse(str(p))["looks_only"].digest != before
