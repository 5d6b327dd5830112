"""ren-inspect for pass development: --pipeline on the graph commands, passes --timing, compare,
ablate and check-pass (exit 1 on a failing pass), one-line errors for bad specs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from ren_cli.main import cli

TESTS = Path(__file__).resolve().parent
USER = "default,+pipeline_user_passes:canonical_mul_alone@after=inject_domains"


def run(*args: str, code: int = 0):
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == code, (args, result.output, result.exception)
    return result


def test_passes_under_a_user_pipeline_shows_its_stage():
    out = run("passes", "elementwise_chain", "--pipeline", USER).stdout
    assert "== 04_canonical_mul_alone" in out and "== 13_kernelize" in out
    assert "mul_operand_order_alone" in out  # its rule, with its count
    one = run("passes", "elementwise_chain", "--pipeline", USER, "--pass",
              "canonical_mul_alone").stdout
    assert "contract after pass 3" in one  # it keeps what held after inject_domains


def test_a_removed_pass_is_no_stage():
    out = run("passes", "rotations", "--pipeline", "default,-simplify_domains").stdout
    assert "simplify_domains" not in out and "== 11_kernelize" in out


def test_report_under_a_user_pipeline(tmp_path):
    out = tmp_path / "r.html"
    run("report", "elementwise_chain", "--pipeline", USER, "-o", str(out), "--sections",
        "passes")
    html = out.read_text()
    assert 'data-name="04_canonical_mul_alone"' in html and "mul_operand_order_alone" in html
    # every stage shows its contract; the user pass's is the one it inherits (after pass 3)
    assert html.count('<details class="contract">') == 13
    assert "contract after pass 3 (checked with REN_CHECK=1)" in html


def test_passes_timing():
    out = run("passes", "ckks_multiply", "--timing").stdout
    assert "pass timing of ckks_multiply under default" in out
    assert re.search(r"05_materialize\s+\d+\.\d+\s+\d+\.\d%\s+\d+", out) and "total" in out


def test_compare_and_ablate():
    out = run("compare", "ckks_multiply", "--pipeline", "default", "--pipeline",
              "noelide=default,-simplify_domains", "--repeat", "1").stdout
    assert "noelide" in out and "default,-simplify_domains" in out and "NTT/INTT" in out
    out = run("ablate", "ckks_multiply", "--repeat", "1").stdout
    assert "-simplify_domains" in out and "-simplify " in out and "all passes" in out
    svg = run("ablate", "ckks_multiply", "--repeat", "1", "--format", "svg").stdout
    assert svg.startswith("<svg")


def test_check_pass_exit_status(monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))
    ok = run("check-pass", "pipeline_user_passes:drop_double_neg", "--after", "lower_bufferize",
             "--program", "rotations", "--random", "1")
    assert "all passed" in ok.stdout
    bad = run("check-pass", "test_passdev:drop_const_mul", "--after", "lower_ring_ops",
              "--program", "elementwise_chain", "--random", "0", code=1)
    assert "FAILED" in bad.stdout and "semantics failure" in bad.stdout


@pytest.mark.parametrize("args, says", [
    (("passes", "rotations", "--pipeline", "default,-nothing"), "no pass 'nothing'"),
    (("passes", "rotations", "--pipeline", "default,-kernelize"), "cannot remove 'kernelize'"),
    (("compare", "rotations", "--pipeline", "twelve"), "start with 'default'"),
    (("check-pass", "no_module_here:p", "--after", "simplify"), "cannot import"),
    (("check-pass", "pipeline_user_passes:count_nodes"), "say where"),
])
def test_bad_pipelines_are_one_line_errors(args, says, monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))
    result = run(*args, code=2)
    assert says in result.output and len(result.output.strip().splitlines()) == 1


def test_report_with_a_pipelines_section(tmp_path):
    out = tmp_path / "r.html"
    run("report", "ckks_multiply", "-o", str(out), "--sections", "passes", "--compare",
        "noelide=default,-simplify_domains")
    html = out.read_text()
    assert '<section id="pipelines"' in html and "noelide" in html and "<svg" in html
    assert 'href="#pipelines"' in html
