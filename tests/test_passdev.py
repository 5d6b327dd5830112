"""Pass development: `ren.passdev.check` finds a user pass's semantic and contract bugs with a
shrunk counterexample; `compare`, `ablate` and `pass_timing` measure pipelines; the `ren_golden`
fixture snapshots a user's pipeline in a throwaway project."""

from __future__ import annotations

import textwrap

import pytest
from pipeline_user_passes import canonical_mul, drop_double_neg

from ren.errors import PipelineError
from ren.ir import is_const, pnode
from ren.ops import Op
from ren.passdev import ablate, check, compare, pass_timing
from ren.passes import P, Pass, X, default_pipeline

pytest_plugins = ["pytester"]

#: wrong on purpose: x·c -> x
drop_const_mul = Pass("drop_const_mul", doc="Wrong: x·c -> x.", rules=[
    (P(Op.MUL, X("x"), X("c", where=is_const)), lambda x, c: x, "mul_by_const_is_x")])

#: wrong on purpose: rotate(rotate(x, a), b) -> rotate(x, a - b) (the sign of b flipped)
merge_rotations_wrong_sign = Pass("merge_rotations_wrong_sign", doc="Wrong sign.", rules=[
    (P(Op.ROTATE, P(Op.ROTATE, X("x"), name="inner"), name="outer"),
     lambda x, inner, outer: pnode(Op.ROTATE, x, arg=inner.arg - outer.arg), "merge")])

#: the same merge, right: values stay
merge_rotations = Pass("merge_rotations", doc="rotate(rotate(x, a), b) -> rotate(x, a + b).",
                       rules=[
    (P(Op.ROTATE, P(Op.ROTATE, X("x"), name="inner"), name="outer"),
     lambda x, inner, outer: pnode(Op.ROTATE, x, arg=inner.arg + outer.arg), "merge")])

#: values kept, contract broken: after lower_ring_ops no ROTATE may be left, and this makes one
automorph_back_to_rotate = Pass("automorph_back_to_rotate", doc="AUTOMORPH(x, 5) -> ROTATE(x, 1).",
                                rules=[(P(Op.AUTOMORPH, X("x"), arg=5),
                                        lambda x: pnode(Op.ROTATE, x, arg=1), "back")])


def _rotations():
    from ren import corpus

    a = corpus.poly(41)
    return (a.rotate(2).rotate(3) + a, a.rotate(1))


def test_check_finds_a_semantic_bug_with_a_small_counterexample():
    report = check(drop_const_mul, after="lower_ring_ops", random=0)
    assert not report.ok
    f = report.failure
    assert f.kind == "semantics" and f.nodes <= 7, str(f)
    assert "MUL" in f.before and "MUL" not in f.after and "CONST" in f.before
    assert "FAILED" in str(report) and f.program in report.checked


def test_check_finds_a_wrong_rotation_merge():
    report = check(merge_rotations_wrong_sign, before="lower_ring_ops",
                   programs=[_rotations], random=0)
    assert report.failure is not None and report.failure.kind == "semantics"
    assert report.failure.before.count("ROTATE") == 2  # shrunk to the two rotations
    assert report.failure.nodes <= 5, str(report.failure)


def test_check_passes_a_right_pass():
    report = check(merge_rotations, before="lower_ring_ops", programs=[_rotations], random=3)
    assert report.ok, str(report)
    assert report.programs == 4 and "all passed" in str(report)


def test_check_finds_a_contract_violation():
    report = check(automorph_back_to_rotate, after="lower_ring_ops", programs=["rotations"],
                   random=0)
    assert report.failure is not None and report.failure.kind == "contract"
    assert "ROTATE may not appear after pass 2" in report.failure.message


def test_check_runs_the_corpus_ckks_and_random_programs():
    report = check(drop_double_neg, after="lower_bufferize", random=2)
    assert report.ok, str(report)
    assert {"keyswitch", "ckks_multiply", "random program 0"} <= set(report.checked)


def test_check_raises_when_asked_and_needs_a_place():
    with pytest.raises(PipelineError, match="FAILED"):
        check(drop_const_mul, after="lower_ring_ops", random=0, raise_on_failure=True)
    with pytest.raises(PipelineError, match="say where"):
        check(drop_const_mul)
    with pytest.raises(PipelineError, match="cannot import"):
        check("no_such_module_q:p", after="simplify")
    assert check(canonical_mul, pipeline=default_pipeline().insert(canonical_mul, after="simplify"),
                 programs=["elementwise_chain"], random=0).ok


def test_compare_measures_each_pipeline_and_keeps_the_words():
    c = compare("ckks_multiply", {"default": "default", "no elision": "default,-simplify_domains"},
                repeat=2)
    default, other = c.rows
    assert default.transforms > 0 and default.kernels > 0 and default.bytes_moved > 0
    assert default.arena_bytes > 0 and default.replay_seconds > 0
    assert default.precision_bits is not None and default.precision_bits > 20
    assert default.nodes["12_kernelize"] > 0 and other.nodes["11_kernelize"] > 0
    assert (default.kernels, default.basis_conversions) != (other.kernels,
                                                            other.basis_conversions)
    # the elision transforms fewer limbs: a rescale's dropped rows, a mod-up's new ones
    assert 0 < default.transform_rows < other.transform_rows
    text = c.text()
    assert "no elision" in text and "default,-simplify_domains" in text
    assert c.svg().startswith("<svg") and "<table" in c.html()


def test_compare_refuses_a_pipeline_that_changes_the_words():
    bad = default_pipeline().insert(drop_const_mul, after="lower_ring_ops")
    with pytest.raises(PipelineError, match="computes other words"):
        compare("elementwise_chain", {"default": "default", "bad": bad}, repeat=1)


def test_ablate_and_pass_timing():
    a = ablate("ckks_multiply", repeat=1)
    assert [m.name for m in a.rows] == ["all passes", "-simplify", "-simplify_domains"]
    t = pass_timing("ckks_multiply")
    assert list(t.seconds) == default_pipeline().stage_names
    assert "total" in t.text()


def test_the_ren_golden_fixture_in_a_user_project(pytester):
    pytester.makepyfile(my_passes=textwrap.dedent("""
        from ren.ops import Op
        from ren.passes import P, Pass, X
        drop_double_neg = Pass("drop_double_neg", fusable=True, doc="-(-x) -> x",
                               rules=[(P(Op.NEG, P(Op.NEG, X("x"))), lambda x: x, "double_neg")])
    """))
    pytester.makepyfile(test_mine=textwrap.dedent("""
        import ren
        from ren import corpus
        SPEC = "default,-simplify,-simplify_domains,+my_passes:drop_double_neg@after=inject_domains"

        def test_snapshots(ren_golden):
            a = corpus.poly(3)
            ren_golden.check((-(-a) + a,), pipeline=SPEC, name="double_neg")
    """))
    pytester.syspathinsert()
    first = pytester.runpytest("-p", "no:cacheprovider")
    first.assert_outcomes(failed=1)  # new snapshots: written, and the test fails once
    assert "wrote 12 snapshot(s)" in first.stdout.str()
    folder = pytester.path / "golden" / "double_neg"
    assert sorted(p.name for p in folder.iterdir())[:2] == ["00_input.txt", "01_lower_ring_ops.txt"]
    assert "drop_double_neg" in " ".join(p.name for p in folder.iterdir())
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    stage = folder / "03_drop_double_neg.txt"
    stage.write_text(stage.read_text().replace("ADD", "SUB", 1))
    changed = pytester.runpytest("-p", "no:cacheprovider")
    changed.assert_outcomes(failed=1)
    assert "1 stage(s) differ" in changed.stdout.str() and "+%" in changed.stdout.str()
    pytester.runpytest("-p", "no:cacheprovider", "--force-regen").assert_outcomes(failed=1)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
