"""ren-inspect on the built-in BFV/BGV examples (`ren.viz.programs.BFV_EXAMPLES`): listed, all
twelve passes shown on the scale-invariant multiplication's graph (its basis extension and
rescale by Q are in it, on the auxiliary ring B|m_sk|Q), the HTML report, ren.jit capture, the
noise-budget meter of the example and clear errors for parameters and the precision meter.  The
examples use tiny insecure parameters (N = 256): seconds."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from ren_cli.main import cli

from ren.passes import PASS_NAMES
from ren.viz import programs


def run(*args: str, code: int = 0):
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == code, (args, result.output, result.exception)
    return result


def has_bgv() -> bool:
    return "bgv_multiply" in programs.examples()


def test_examples_list_bfv_and_bgv():
    listed = json.loads(run("examples", "--format", "json").stdout)
    assert listed["bfv_multiply"]["kind"] == "bfv"
    assert "basis extension" in listed["bfv_multiply"]["description"]
    if has_bgv():
        assert listed["bgv_multiply"]["kind"] == "bgv"
    assert "bfv_multiply" in run("examples").output


def _stage(out: str, name: str) -> str:
    """The text of one stage of `passes` output."""
    start = out.index(f"== {name}")
    end = out.find("\n== ", start + 1)
    return out[start:] if end < 0 else out[start:end]


def test_passes_show_the_twelve_passes_on_the_basis_extension():
    out = run("passes", "bfv_multiply").output
    assert out.count("\n== ") == 13 and all(f"== {s}" in out for s in PASS_NAMES)
    params = programs.bfv_params("small")
    first = _stage(out, "00_input")
    # the tensor is computed on B | m_sk | Q, reached by TO_RING and left by RESCALE (by Q)
    aux = ", ".join(str(q) for q in params.ring_aux_q.moduli)
    assert f"moduli=({aux}))" in first
    ops = set(re.findall(r"= ([A-Z_]+) ", first))
    assert {"TO_RING", "RESCALE", "MUL", "NTT", "INTT"} <= ops, ops
    assert "KERNEL" in _stage(out, "12_kernelize")


def test_report_and_jit(tmp_path):
    out = tmp_path / "r.html"
    res = run("report", "bfv_multiply", "-o", str(out))
    assert "wrote" in res.output
    html = out.read_text(encoding="utf-8")
    assert "bfv_multiply" in html and "BFV parameters" in html
    assert "TO_RING" in html and "RESCALE" in html
    assert "ren.jit plan" in run("jit", "bfv_multiply").output


@pytest.mark.skipif(not has_bgv(), reason="ren.bfv.bgv is not in this build")
def test_bgv_example_switches_modulus():
    out = run("passes", "bgv_multiply").output
    assert out.count("\n== ") == 13
    prog = programs.load_program("bgv_multiply")
    (x, y) = prog.example_inputs()
    z = prog.function(x, y)
    assert z.level == x.level - 1  # auto mode: the product is switched down a level


def test_budget_meter_of_the_example_is_exact():
    prog = programs.load_program("bfv_multiply")
    report = programs.budget_of(prog)
    t = prog.bfv.evaluator.params.t
    x, y = prog.bfv.values
    n = len(report.steps[-1].expected)
    xs, ys = x + [0] * (n - len(x)), y + [0] * (n - len(y))
    assert report.steps[-1].expected.tolist() == [a * b % t for a, b in zip(xs, ys, strict=True)]
    assert report.ok and [s.op for s in report.steps] == ["input", "input", "multiply"]
    assert report.worst is report.steps[-1] and report.worst.used > 0


def test_errors_name_what_to_use():
    out = run("passes", "bfv_multiply", "--ckks-params", "N16", code=2).output
    assert "no parameters 'N16'" in out and "N13" in out
    out = run("precision", "bfv_multiply", code=2).output
    assert "BFV/BGV program" in out and "ren-inspect budget bfv_multiply" in out
    out = run("keys", "bfv_multiply", code=2).output
    assert "ren-inspect budget bfv_multiply" in out
    with pytest.raises(Exception, match="budget meter needs a BFV/BGV program"):
        programs.budget_of(programs.load_program("ckks_multiply"))


@pytest.mark.parametrize("name", ["bfv_multiply", "bgv_multiply"])
def test_budget_command_shows_the_noise_budget_per_operation(name):
    """`ren-inspect budget` of a BFV/BGV example: the meter's table (budget and bits used per
    operation, the product using the most) instead of CKKS's levels and scales."""
    if name == "bgv_multiply" and not has_bgv():
        pytest.skip("ren.bfv.bgv is not there")
    out = run("budget", name).output
    meter = programs.budget_of(programs.load_program(name))
    assert f"noise budget of {name}" in out and "budget (bits)" in out and "level" not in out
    for step in meter.steps:
        assert re.search(rf"{step.index}\s*│\s*{step.op}\s*│\s*{step.budget}\b", out), step
    assert f"noise budget left {meter.final_budget} bits" in out and "every slot exact" in out
