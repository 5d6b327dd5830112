"""The pass-development tutorial (`examples/custom_pass.py`) runs, its pass checks out, its
wrong twin is caught, and its stages are snapshotted with the ren_golden fixture."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
sys.path.insert(0, str(EXAMPLES))

import custom_pass  # noqa: E402

import ren  # noqa: E402
from ren.passdev import check  # noqa: E402
from ren.passes import Pipeline  # noqa: E402
from ren.schedule import as_sink  # noqa: E402


def test_the_spec_names_the_pass():
    p = Pipeline.parse(custom_pass.SPEC)
    assert p.names[2] == "karatsuba" and str(p) == custom_pass.SPEC


def test_karatsuba_saves_a_product_and_keeps_the_words():
    outs = custom_pass.tensor_program()
    before = sum(n.op is ren.Op.MUL for n in ren.toposort(as_sink(*outs)))
    trace = ren.run_passes(*outs, upto=3, pipeline=custom_pass.SPEC, trace=True)
    after = sum(n.op is ren.Op.MUL for n in ren.toposort(trace.sink))
    assert (before, after) == (4, 3)
    expected = [np.array(o.tolist()) for o in custom_pass.tensor_program()]
    with ren.pipeline(custom_pass.SPEC):
        got = [np.array(o.tolist()) for o in custom_pass.tensor_program()]
    assert all(np.array_equal(a, b) for a, b in zip(expected, got))


def test_check_passes_it_and_catches_its_wrong_twin():
    assert check(custom_pass.karatsuba, after="lower_ring_ops",
                 programs=[custom_pass.tensor_program, "ckks_multiply"], random=2).ok
    wrong = check(custom_pass.karatsuba_wrong, after="lower_ring_ops",
                  programs=[custom_pass.tensor_program], random=0)
    assert wrong.failure is not None and wrong.failure.kind == "semantics"
    # (already minimal: the pass rewrites only where all three products exist)
    unshrunk = len(ren.toposort(as_sink(*custom_pass.tensor_program())))
    assert wrong.failure.nodes <= unshrunk and wrong.failure.after.count("MUL") == 3


def test_the_tutorial_runs(capsys):
    custom_pass.main()
    out = capsys.readouterr().out
    assert "check karatsuba in default,+custom_pass:karatsuba" in out and "all passed" in out
    assert "karatsuba_wrong" in out and "FAILED" in out
    assert "ckks_multiply on python: the same words under every pipeline" in out


def test_golden_snapshots_of_the_tutorial_pass(ren_golden):
    """tests/golden/custom_pass_karatsuba/: every stage of the tutorial's pipeline (regenerate
    with --force-regen and read the diff)."""
    texts = ren_golden.check(custom_pass.tensor_program(), pipeline=custom_pass.SPEC,
                             name="custom_pass_karatsuba")
    assert list(texts) == ["00_input", *Pipeline.parse(custom_pass.SPEC).stage_names]
    assert texts["03_karatsuba"].count("MUL") == 3 and texts["02_lower_ring_ops"].count("MUL") == 4
