"""ren-inspect through click's CliRunner: every command and format on three programs (two from
the scheduler corpus, one CKKS with tiny insecure parameters), the golden text of `passes`, a
real golden diff when a rule is taken away, and one-line errors for user mistakes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from ren_cli.main import cli

from ren.passes import PASS_NAMES, p02_lower_ring_ops
from ren.rewrite import RuleSet

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
PROGRAMS = ["rotations", "keyswitch", "ckks_multiply"]


def run(*args: str, code: int = 0):
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == code, (args, result.output, result.exception)
    return result


def test_help_and_examples():
    assert "ren-inspect report" in run("--help").output
    out = run("examples").output
    for name in ["rotations", "keyswitch", "ckks_multiply", "ckks_logreg"]:
        assert name in out
    listed = json.loads(run("examples", "--format", "json").stdout)
    assert listed["ckks_rotate"]["kind"] == "ckks"
    assert "def program()" in run("examples", "--help").output


@pytest.mark.parametrize("program", PROGRAMS)
def test_passes_text(program):
    out = run("passes", program).stdout
    assert out.count("\n== ") == 13 and all(f"== {s}" in out for s in PASS_NAMES)
    one = run("passes", program, "--pass", "kernelize").stdout
    assert "== before: 11_indexify" in one and "== 12_kernelize" in one
    assert "rules: kernelize ×" in one


@pytest.mark.parametrize("program", PROGRAMS)
def test_passes_dot_and_svg(program, tmp_path):
    dot = run("passes", program, "--format", "dot").stdout
    assert dot.count("digraph ") == 13
    one = run("passes", program, "--pass", "6", "--format", "dot").stdout
    assert one.count("digraph ") == 1 and '"06_lower_bufferize"' in one
    run("passes", program, "--format", "svg", "-o", str(tmp_path / "svg"))
    files = sorted(p.name for p in (tmp_path / "svg").iterdir())
    assert files == [f"{s}.svg" for s in ["00_input", *PASS_NAMES]]
    for f in (tmp_path / "svg").iterdir():
        assert f.read_text().startswith("<svg") and 'class="node' in f.read_text()
    svg = run("passes", program, "--pass", "3", "--format", "svg").stdout
    assert svg.startswith("<svg") and svg.count("<svg") == 1


@pytest.mark.parametrize("program", PROGRAMS)
def test_passes_html(program, tmp_path):
    out = tmp_path / "p.html"
    res = run("passes", program, "--format", "html", "-o", str(out))
    assert f"wrote {out}" in res.stderr
    html = out.read_text()
    assert html.count('<article class="stage"') == 13 and "<svg" in html


@pytest.mark.parametrize("program", PROGRAMS)
def test_arena(program, tmp_path):
    text = run("arena", program).stdout
    assert "peak-live bytes" in text and "arena bytes" in text and "key: a=buf" in text
    assert re.search(r"python\s+│\s+\d+", text)
    svg = run("arena", program, "--format", "svg", "--policy", "tlsf").stdout
    assert svg.startswith("<svg") and 'class="buffer"' in svg and "policy tlsf" in svg
    run("arena", program, "--format", "html", "-o", str(tmp_path / "a.html"))
    assert '<section id="arena"' in (tmp_path / "a.html").read_text()


@pytest.mark.parametrize("program", PROGRAMS)
def test_jit(program, tmp_path):
    text = run("jit", program).stdout
    assert "graph runner:" in text and "exec units" in text and "input replacement" in text
    assert "capture:" in text
    run("jit", program, "--format", "html", "-o", str(tmp_path / "j.html"))
    assert '<section id="jit"' in (tmp_path / "j.html").read_text()


@pytest.mark.parametrize("program", PROGRAMS)
def test_kernels(program, tmp_path):
    text = run("kernels", program).stdout
    assert "scheduled items" in text and "STORE void" in text
    assert "REN_KERNEL void" in text and "CUDA C from ren.backend.render_c" in text
    svg = run("kernels", program, "--format", "svg").stdout
    assert svg.startswith("<svg") and "k0_" in svg
    run("kernels", program, "--format", "html", "-o", str(tmp_path / "k.html"))
    assert '<section id="kernels"' in (tmp_path / "k.html").read_text()


def test_kernels_on_the_cpu_device_show_its_c():
    """--device cpu printed CUDA C labelled "device 'cpu' itself interprets the AST": it shows
    the C the compiled device builds (and names the library function of a ring kernel)."""
    text = run("kernels", "elementwise_chain", "--device", "cpu").stdout
    assert "rendered for cpu" in text and "interprets the AST" not in text
    assert "for (" in text  # the C dialect's loop nest, not a CUDA grid
    ntt = run("kernels", "ntt_product", "--device", "cpu").stdout
    assert "cpu_ring.c" in ntt


@pytest.mark.parametrize("program", ["rotations", "keyswitch"])
def test_diff_against_unchanged_goldens(program, tmp_path):
    out = run("diff", program, "--golden", str(GOLDEN)).stdout
    assert "every stage matches its golden snapshot" in out
    run("diff", program, "--golden", str(GOLDEN), "--format", "html", "-o",
        str(tmp_path / "d.html"))
    assert "same" in (tmp_path / "d.html").read_text()


def test_diff_of_a_program_without_snapshots_is_a_clear_error():
    res = run("diff", "ckks_multiply", "--golden", str(GOLDEN), code=2)
    assert "no golden snapshots for 'ckks_multiply'" in res.stderr
    assert "Traceback" not in res.output


def test_diff_shows_a_rule_taken_away(monkeypatch):
    """Without the rule that composes automorphisms, pass 2 leaves AUTOMORPH(AUTOMORPH(x))."""
    rules = RuleSet(r for r in p02_lower_ring_ops.rules.rules
                    if r.name != "compose_automorphisms")
    monkeypatch.setattr(p02_lower_ring_ops, "rules", rules)
    res = run("diff", "rotations", "--golden", str(GOLDEN), code=1)
    out = res.stdout
    assert "differs  02_lower_ring_ops" in out and "same     01_simplify" in out
    assert "--- golden/rotations/02_lower_ring_ops.txt" in out
    added = [line for line in out.splitlines() if line.startswith("+%")]
    assert any("AUTOMORPH" in line for line in added)
    assert any(line.startswith("-%") for line in out.splitlines())


@pytest.mark.parametrize("program", PROGRAMS)
def test_report(program, tmp_path):
    out = tmp_path / "r.html"
    res = run("report", program, "-o", str(out), "--golden", str(GOLDEN))
    assert "open it in a browser" in res.stderr
    html = out.read_text()
    for section in ["passes", "arena", "jit", "kernels", "precision", "diff"]:
        assert f'<section id="{section}"' in html
    if program.startswith("ckks_"):  # the precision meter's plot and table
        assert '<svg xmlns="http://www.w3.org/2000/svg" width="720"' in html
        assert "largest loss" in html
    else:
        assert "not a CKKS example" in html


def test_budget_keys_and_ckks_memory():
    """The level budget and the key plan of a CKKS example, traced; the arena's CKKS memory
    table (keys, ciphertexts, arena)."""
    out = run("budget", "ckks_logreg").stdout
    assert "3 of 3 level(s) used" in out and "rotate_sum" in out and "yes" in out
    out = run("keys", "ckks_logreg").stdout
    assert "2 Galois key(s)" in out and "steps [1, 2]" in out
    out = run("arena", "ckks_logreg").stdout
    assert "evaluation keys" in out and "RelinKey + GaloisKeys" in out
    assert "arena (intermediates)" in out
    assert "CKKS memory" not in run("arena", "rotations").stdout
    for cmd in ("budget", "keys"):
        assert "needs a CKKS program" in run(cmd, "rotations", code=2).stderr


def test_precision():
    """The meter's table, with the largest loss named, and its plot; CKKS examples only."""
    out = run("precision", "ckks_logreg").stdout
    assert "largest loss: step" in out and "rotate_sum" in out and "log2 scale" in out
    svg = run("precision", "ckks_multiply", "--format", "svg").stdout
    assert svg.startswith("<svg") and svg.count("<circle") == 4  # 2 inputs, multiply, rescale
    assert 'fill="#cc0000"' in svg  # the largest loss, marked
    res = run("precision", "rotations", code=2)
    assert "needs a CKKS program" in res.stderr


def test_report_options(tmp_path):
    out = tmp_path / "r.html"
    run("report", "rotations", "-o", str(out), "--sections", "passes", "--kernel-bodies",
        "--no-removed")
    html = out.read_text()
    assert "<title>cluster_s12k" in html  # each kernel body is a cluster
    assert re.search(r'<g id="s12n\d+_\d+" class="node', html)  # kernel bodies are drawn
    assert '<section id="arena"' not in html
    run("report", "keyswitch", "-o", str(out), "--sections", "passes", "--max-nodes", "30")
    assert "more than the limit of 30" in out.read_text()


def test_golden_text_of_passes(file_regression):
    """The full text of `ren-inspect passes rotations` (regenerate with --force-regen)."""
    out = run("passes", "rotations").stdout
    file_regression.check(out, fullpath=ROOT / "tests" / "golden_cli" / "passes_rotations.txt")


def test_program_file(tmp_path):
    f = tmp_path / "mine.py"
    f.write_text('"""Squares."""\nimport ren\n\ndef program():\n'
                 '    r = ren.RingSpec.generate(N=16, count=2)\n'
                 '    a = ren.Poly.from_coefficients(range(16), r)\n    return a * a\n')
    out = run("passes", str(f), "--pass", "3").stdout
    assert "# mine: Squares." in out and "NTT" in out
    run("report", str(f), "-o", str(tmp_path / "m.html"))


@pytest.mark.parametrize(("args", "message"), [
    (["passes", "nonesuch"], "unknown program 'nonesuch'"),
    (["passes", "missing.py"], "no such program file: missing.py"),
    (["passes", "rotations", "--pass", "13"], "no pass '13'"),
    (["arena", "{dir}/domains.py"], "DomainError: ADD: operands are in different domains"),
])
def test_user_mistakes_are_one_line_errors(args, message, tmp_path):
    (tmp_path / "domains.py").write_text(
        "import ren\n\ndef program():\n    r = ren.RingSpec.generate(N=16, count=2)\n"
        "    a = ren.Poly.from_coefficients(range(16), r)\n    return a + a.ntt()\n")
    res = run(*(a.format(dir=tmp_path) for a in args), code=2)
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ren-inspect: error: ")
    assert re.search(message, lines[0], re.I)


def test_program_that_raises_and_debug(tmp_path):
    f = tmp_path / "broken.py"
    f.write_text("def program():\n    raise RuntimeError('my bug')\n")
    res = run("jit", str(f), code=2)
    assert "raised RuntimeError: my bug" in res.stderr and "Traceback" not in res.output
    res = CliRunner().invoke(cli, ["jit", str(f), "--debug"])
    assert res.exit_code != 0 and res.exception is not None  # the traceback is not swallowed
    assert "raised RuntimeError" in str(res.exception)


def test_svg_of_every_stage_needs_a_directory():
    res = run("passes", "rotations", "--format", "svg", code=2)
    assert "needs -o DIR" in res.output


def test_module_entry_point():
    env = {"PYTHONPATH": f"{ROOT}:{ROOT / 'cli'}", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "ren_cli", "--help"], capture_output=True,
                         text=True, env=env, cwd=ROOT, check=True)
    assert "Usage: ren-inspect" in out.stdout


# -- issue 16: outputs, devices and the --debug hint --------------------------------------------
def one_line_error(res) -> str:
    """The single stderr line of a user error (exit 2, nothing on stdout)."""
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ren-inspect: error: "), res.stderr
    assert "Errno" not in lines[0] and "Traceback" not in res.output
    return lines[0]


OUTPUT_COMMANDS = [
    ["report", "rotations", "-o", "{out}"],
    ["passes", "rotations", "-o", "{out}"],
    ["passes", "rotations", "--pass", "3", "--format", "svg", "-o", "{out}"],
    ["arena", "rotations", "-o", "{out}"],
    ["arena", "rotations", "--format", "svg", "-o", "{out}"],
    ["jit", "rotations", "-o", "{out}"],
    ["kernels", "rotations", "-o", "{out}"],
    ["diff", "rotations", "--golden", str(GOLDEN), "-o", "{out}"],
]


@pytest.mark.parametrize("args", OUTPUT_COMMANDS,
                         ids=["report", "passes", "passes-svg", "arena", "arena-svg", "jit",
                              "kernels", "diff"])
def test_output_in_a_missing_directory_is_an_error(args, tmp_path):
    """Before: the directories were created silently (a typo in -o made a tree)."""
    out = tmp_path / "nonexistent_dir" / "r.html"
    line = one_line_error(run(*(a.format(out=out) for a in args), code=2))
    assert f"the directory {out.parent} does not exist; create it first" in line
    assert not out.parent.exists()


def test_output_under_a_file_is_an_error(tmp_path):
    """Before: the raw errno, "[Errno 17] File exists: '/etc/passwd'"."""
    (tmp_path / "afile").write_text("x")
    line = one_line_error(run("report", "rotations", "-o", str(tmp_path / "afile" / "r.html"),
                              code=2))
    assert f"{tmp_path / 'afile'} is a file, not a directory" in line
    if Path("/etc/passwd").is_file():  # the issue's own example
        line = one_line_error(run("report", "rotations", "-o", "/etc/passwd/r.html", code=2))
        assert line == ("ren-inspect: error: cannot write /etc/passwd/r.html: /etc/passwd is a "
                        "file, not a directory")


def test_output_that_is_a_directory_or_cannot_be_written(tmp_path):
    line = one_line_error(run("arena", "rotations", "-o", str(tmp_path), code=2))
    assert "it is a directory; give a file name" in line
    long_name = tmp_path / ("x" * 300 + ".html")  # too long for the file system, even as root
    line = one_line_error(run("jit", "rotations", "-o", str(long_name), code=2))
    assert "cannot write" in line and "name too long" in line


def test_per_stage_directory_is_still_created_but_not_its_parents(tmp_path):
    run("passes", "rotations", "--format", "dot", "-o", str(tmp_path / "dot"))
    assert len(list((tmp_path / "dot").glob("*.dot"))) == 13
    run("passes", "rotations", "--format", "dot", "-o", str(tmp_path / "dot"))  # it exists now
    line = one_line_error(run("passes", "rotations", "--format", "svg", "-o",
                              str(tmp_path / "missing" / "svg"), code=2))
    assert f"the directory {tmp_path / 'missing'} does not exist" in line
    (tmp_path / "afile").write_text("x")
    line = one_line_error(run("passes", "rotations", "--format", "svg", "-o",
                              str(tmp_path / "afile"), code=2))
    assert "it is a file, not a directory" in line


@pytest.mark.parametrize("fmt", ["text", "html"])
def test_unknown_device_is_an_error(fmt, tmp_path):
    """Before: exit 0, with "no renderer" notes in the output."""
    line = one_line_error(run("kernels", "rotations", "--device", "nosuchdevice", "--format", fmt,
                              "-o", str(tmp_path / "k.out"), code=2))
    assert "unknown device 'nosuchdevice'; known devices are python" in line
    assert not (tmp_path / "k.out").exists()
    assert "rendered for cpu --" in run("kernels", "rotations", "--device", "CPU:0").stdout


@pytest.mark.parametrize("args", [["passes", "nonesuch"], ["passes", "rotations", "--pass", "13"],
                                  ["kernels", "rotations", "--device", "nosuchdevice"],
                                  ["report", "rotations", "-o", "{tmp}/nonexistent_dir/r.html"]],
                         ids=["program", "pass", "device", "output"])
def test_usage_errors_do_not_point_at_debug(args, tmp_path):
    """Before: "(--debug shows the traceback)" was appended to plain usage mistakes too."""
    res = run(*(a.format(tmp=tmp_path) for a in args), code=2)
    assert "--debug" not in one_line_error(res)


def test_internal_errors_and_program_errors_point_at_debug(monkeypatch, tmp_path):
    def broken(*_args, **_kwargs):
        raise ZeroDivisionError("oops")

    monkeypatch.setattr("ren_cli.main.tr.trace_passes", broken)
    res = run("passes", "rotations", code=3)
    assert res.stderr.strip() == ("ren-inspect: internal error (ZeroDivisionError, a bug): oops "
                                  "(--debug shows the traceback)")
    f = tmp_path / "broken.py"
    f.write_text("def program():\n    raise RuntimeError('my bug')\n")
    assert one_line_error(run("jit", str(f), code=2)).endswith("(--debug shows the traceback)")
