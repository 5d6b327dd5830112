"""Issue 38, the shared cache and ren-inspect's program loading and outputs.

* A plan cache that cannot be written (another user's, read-only) still loads its entries: the
  "use" touch of an entry is best effort (it was a bare PermissionError from ``os.utime``).
* A directory where a cached compiled library goes: the library is built in a private folder
  with one CacheWarning (every later run was a DeviceError).
* ren-inspect: a program file that exits (``sys.exit`` at import, ``SystemExit`` from
  ``program()``), a cyclic or very deep result, a function that raises or returns no Poly, a bad
  option value, ``-o`` where no file can be created: each is one ``ren-inspect: error:`` line,
  exit 2 (they were exit 0 with nothing printed, "internal error (RecursionError, a bug)" exit 3,
  click's three-line usage text or "No such file or directory").
* The README's commands leave nothing untracked in the checkout: each file they write is ignored.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from ren_cli.main import cli

import ren
from ren import plan_cache, realization
from ren.backend.c_host import find_cc
from ren.plan_cache import LOADED, SCHEDULED

ROOT = Path(__file__).resolve().parent.parent
#: the cache tests' subprocesses run the scalar path: the cache handling is the same on every
#: path and its ring library builds in about half of AVX-512's compiler time (~5 builds here)
ISA = {"REN_CPU_ISA": "scalar"}
RING = ren.RingSpec.generate(16, 2)


# -- the plan cache: a read-only shared cache loads ----------------------------------------------
def _poly(seed: int) -> ren.Poly:
    rng = np.random.default_rng(seed)
    res = np.stack([rng.integers(0, q, RING.N) for q in RING.moduli])
    return ren.Poly.from_residues(res, RING, "COEFF", "python").realize()


def test_a_plan_cache_entry_that_cannot_be_touched_still_loads(monkeypatch):
    """Before: ``os.utime`` (the entry's "use" stamp) raised PermissionError out of ren.jit."""
    c, x = _poly(1), _poly(2)
    want = ren.jit(lambda x: (x * c).intt() + x)(x).numpy()

    def denied(*_a, **_k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(plan_cache.os, "utime", denied)
    monkeypatch.setattr(realization, "run_passes", lambda *a, **k: pytest.fail("scheduled"))
    f = ren.jit(lambda x: (x * c).intt() + x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a read-only cache that loads is not worth a warning
        got = f(x)
    assert f.plans[0].compiled_by == LOADED
    assert np.array_equal(got.numpy(), want)


SHARED = """
import numpy as np, ren
ring = ren.RingSpec.generate(16, 2)
x = ren.Poly.from_residues(np.ones((2, 16), dtype=np.uint32), ring, "COEFF", "cpu").realize()
f = ren.jit(lambda x: (x.ntt() * x.ntt()).intt() + 3)
out = f(x)
from ren.backend import c_host
print(f.plans[0].compiled_by.replace(" ", "_"), int(out.numpy().sum()),
      ren.plan_cache.source_fingerprint(), c_host.compiler_invocations)
"""


def _without_dac_override() -> None:
    """In the child: root ignores file modes and owners; without these capabilities it does
    not."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2, 3):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")
def test_a_read_only_shared_cache_loads_plans_and_libraries(tmp_path, filled):
    """End to end: one process fills a cache (plans and compiled libraries), another that may
    not write it (read-only, another user's: file modes and owners enforced, even for root)
    loads both and computes the same.  Before: PermissionError from ``os.utime``, and every
    library compiled again in a private folder.  (The cache starts with `filled`'s ring
    library, so the first process compiles only its kernels.)"""
    root = tmp_path / "shared"
    shutil.copytree(filled[0] / "cpu", root / "cpu")  # (filled[0] itself is mode 0700)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "REN_CACHE_DIR": str(root), **ISA}

    def run(preexec_fn=None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", SHARED], capture_output=True, text=True,
                              cwd=ROOT, env=env, timeout=300, preexec_fn=preexec_fn)

    first = run()
    assert first.returncode == 0, first.stderr[-3000:]
    assert first.stdout.split()[0] == SCHEDULED
    drop = _without_dac_override if os.geteuid() == 0 else None
    modes = {}
    for p in [root, *root.rglob("*")]:
        modes[p] = p.stat().st_mode
        p.chmod(modes[p] & ~0o222)
        if os.geteuid() == 0:
            os.chown(p, 65534, 65534)  # nobody's
    try:
        try:
            probe = subprocess.run([sys.executable, "-c", f"open({str(root / 'x')!r}, 'w')"],
                                   capture_output=True, preexec_fn=drop)
        except (OSError, subprocess.SubprocessError) as e:
            pytest.skip(f"cannot make a folder unwritable here: {e}")
        if probe.returncode == 0:
            pytest.skip("cannot make a folder unwritable here (file modes are not enforced)")
        second = run(drop)
    finally:
        for p, mode in modes.items():
            p.chmod(mode)
    assert second.returncode == 0, second.stderr[-3000:]
    if second.stdout.split()[2] != first.stdout.split()[2]:  # (a shared checkout, edited)
        pytest.skip("Ren's sources changed between the two runs: the plan is another key")
    # the plan loaded, the same value, no compiler run: the libraries loaded from the cache too
    assert second.stdout.split() == ["plan_cache", *first.stdout.split()[1:3], "0"]
    assert "Error" not in second.stderr


# -- a directory where a cached library goes ------------------------------------------------------
CPU_SCRIPT = """\
import ren
from ren.backend import c_host
r = ren.RingSpec.generate(32, 2)
a = ren.Poly.from_coefficients(list(range(32)), r, device="cpu")
print(int(((a.ntt() * a.ntt()).intt() + 3).numpy().sum()), c_host.compiler_invocations)
"""


def _cpu_script(cache) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "REN_CACHE_DIR": str(cache), **ISA}
    return subprocess.run([sys.executable, "-c", CPU_SCRIPT], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=300)


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    """(a cache folder CPU_SCRIPT filled from empty: its ring and kernel libraries, the value it
    printed), built once for the module: each test copies it (one compile of the ring library,
    ~5 s of compiler CPU, instead of one per test)."""
    root = tmp_path_factory.mktemp("filled")
    first = _cpu_script(root)
    assert first.returncode == 0, first.stderr[-3000:]
    value, runs = first.stdout.split()
    assert runs == "2"  # the ring library and one kernel library
    return root, value


@pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")
@pytest.mark.parametrize("blocked", ["library", "digest"])
def test_a_directory_where_a_cached_library_goes_is_built_privately(tmp_path, blocked, filled):
    """Before: every later run was a DeviceError ("cannot be written to the cache folder")."""
    shutil.copytree(filled[0], tmp_path, dirs_exist_ok=True)
    value = filled[1]

    def run() -> subprocess.CompletedProcess:
        return _cpu_script(tmp_path)

    suffix = ".so" if blocked == "library" else ".sha256"
    blockers = sorted((tmp_path / "cpu").glob(f"*{suffix}"))
    assert len(blockers) == 2
    for p in blockers:
        p.unlink()
        p.mkdir()
        (p / "keep").write_text("someone's folder")
    for _ in range(2):  # and again: the blockers stay, each run still works
        res = run()
        assert res.returncode == 0, res.stderr[-3000:]
        assert res.stdout.split() == [value, "2"]
        assert res.stderr.count("CacheWarning") == 1, res.stderr
        assert "cannot write a compiled library" in res.stderr and "IsADirectoryError" in res.stderr
    assert all((p / "keep").read_text() == "someone's folder" for p in blockers)


# -- ren-inspect: one line and exit 2 for what a user gets wrong ----------------------------------
def _one_line_error(args: list[str]) -> str:
    res = CliRunner().invoke(cli, args, prog_name="ren-inspect")
    assert res.exit_code == 2, (args, res.exit_code, res.output, res.exception)
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ren-inspect: error: "), res.stderr
    assert "internal error" not in lines[0] and "Traceback" not in res.output
    return lines[0]


RING_FILE = ("import ren\n"
             "def _ring():\n"
             "    return ren.RingSpec.generate(N=16, count=2)\n"
             "def example_inputs():\n"
             "    return (ren.Poly.from_coefficients(range(16), _ring()),)\n")

PROGRAM_FILES = {  # name: (source, command, what the line says)
    "exit-in-program": ("def program():\n    raise SystemExit(0)\n", "passes",
                        r"building prog exited \(SystemExit\(0\)\)"),
    "exit-at-import": ("import sys\nsys.exit(0)\n", "passes",
                       r"loading .*prog\.py exited \(SystemExit\(0\)\)"),
    "exit-with-text": ("import sys\nsys.exit('bye')\n", "arena",
                       r"exited \(SystemExit\('bye'\)\)"),
    "cycle": ("def program():\n    a = []\n    a.append(a)\n    return a\n", "passes",
              "a list in it contains itself"),
    "deep": ("def program():\n    a = []\n    for _ in range(5000):\n        a = [a]\n"
             "    return a\n", "passes", r"nested 50\d\d containers deep"),
    "syntax": ("def program(:\n    pass\n", "passes", "raised SyntaxError"),
    "not-a-poly": ("def program():\n    return 42\n", "passes", "returned int with no Poly"),
    "function-raises": ("def function(a):\n    raise RuntimeError('boom')\n" + RING_FILE, "jit",
                        "function raised RuntimeError: boom"),
    "function-exits": ("import sys\ndef function(a):\n    sys.exit(0)\n" + RING_FILE, "jit",
                       r"function exited \(SystemExit\(0\)\)"),
    "function-not-a-poly": ("def function(a):\n    return 42\n" + RING_FILE, "jit",
                            "function returned int with no Poly"),
    "function-deep": ("def function(a):\n    for _ in range(5000):\n        a = [a]\n"
                      "    return a\n" + RING_FILE, "jit", r"nested 50\d\d containers deep"),
}


@pytest.mark.parametrize("case", sorted(PROGRAM_FILES))
def test_a_bad_program_file_is_one_line_and_exit_2(case, tmp_path):
    """Before: exit 0 with nothing printed (SystemExit), "internal error (RecursionError, a
    bug)" exit 3 (cyclic or deep results, a function that raises), exit 0 with an empty plan
    (a function returning no Poly)."""
    source, command, message = PROGRAM_FILES[case]
    f = tmp_path / "prog.py"
    f.write_text(source)
    line = _one_line_error([command, str(f)])
    assert re.search(message, line), line


@pytest.mark.parametrize(("args", "message"), [
    (["passes", "rotations", "--format", "nope"],
     r"Invalid value for '--format': 'nope' is not one of .*ren-inspect passes --help"),
    (["passes"], r"Missing argument 'PROGRAM'.*ren-inspect passes --help"),
    (["--bogus"], r"No such option.*--bogus.*ren-inspect --help"),
    (["nosuchcommand"], r"No such command 'nosuchcommand'"),
    (["report", "rotations", "--max-nodes", "0"], r"Invalid value for '--max-nodes'"),
    (["passes", "rotations", "--pass", "nope"], r"no pass 'nope'"),
    (["passes", "nosuch"], r"unknown program 'nosuch'"),
    (["passes", ""], r"unknown program ''"),
    (["passes", "{tmp}"], r"is a directory, not a program file"),
    (["passes", "{tmp}/missing.py"], r"no such program file: .*missing\.py"),
    (["arena", "rotations", "-o", "{tmp}"], r"it is a directory; give a file name"),
    (["report", "rotations", "--sections", "bogus", "-o", "{tmp}/r.html"],
     r"unknown report section"),
])
def test_other_bad_arguments_are_one_line_and_exit_2(args, message, tmp_path):
    """Before: click's usage errors were three lines (usage, a hint, the error)."""
    line = _one_line_error([a.format(tmp=tmp_path) for a in args])
    assert re.search(message, line), line


def test_no_arguments_still_shows_the_help():
    res = CliRunner().invoke(cli, [], prog_name="ren-inspect")
    assert "Usage: ren-inspect" in res.output and "Commands:" in res.output


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="no /proc file system here")
def test_an_output_where_no_file_can_be_created_says_why():
    """Before: "cannot write /proc/r.html: No such file or directory" (after all the work)."""
    line = _one_line_error(["report", "rotations", "-o", "/proc/r.html"])
    assert line == ("ren-inspect: error: cannot write /proc/r.html: the directory /proc does not "
                    "let files be created in it (No such file or directory); pick another -o")


def test_an_output_check_leaves_no_file_behind(tmp_path, monkeypatch):
    """The early check that -o can be created does not leave an empty file when the command
    fails afterwards."""
    out = tmp_path / "r.html"
    monkeypatch.setattr("ren_cli.main.pg.load_program",
                        lambda *a: (_ for _ in ()).throw(ren.errors.InspectError("nope")))
    _one_line_error(["report", "rotations", "-o", str(out)])
    assert not out.exists()
    out.write_text("kept")
    _one_line_error(["report", "rotations", "-o", str(out)])
    assert out.read_text() == "kept"


# -- the README's outputs are ignored by git ------------------------------------------------------
def _readme_outputs() -> list[str]:
    """Every file a command in a bash block of README.md (or a docs/*.md) writes into the
    current folder: ``-o PATH``/``--output PATH``/``--json PATH``, and ``report.html`` for a
    ``ren-inspect report`` without -o."""
    out: list[str] = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for block in re.findall(r"```bash\n(.*?)```", doc.read_text(), re.S):
            for line in block.splitlines():
                command = line.split("#", 1)[0]
                found = re.findall(r"(?:^|\s)(?:-o|--output|--json)[\s=]+(\S+)", command)
                if not found and re.search(r"\bren-inspect\s+report\b", command):
                    found = ["report.html"]
                out += found
    return out


def test_the_readme_outputs_are_found():
    outputs = _readme_outputs()
    for name in ["report.html", "svg/", "q.html", "report_n14.html", "bootstrap.html"]:
        assert name in outputs


def test_every_file_the_readme_commands_write_is_ignored_by_git():
    """Before: q.html, report_n14.html, bootstrap.html and svg/ were left untracked."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    paths = []
    for name in _readme_outputs():
        paths.append(name + "00_input.svg" if name.endswith("/") else name)
    paths += ["gpu_out/gpu.txt", "figures.json"]  # gpu_check.sh's default $OUT, bench_cuda --json
    res = subprocess.run(["git", "check-ignore", "--no-index", "--stdin", "-v", "-n"],
                         input="\n".join(paths) + "\n", capture_output=True, text=True, cwd=ROOT)
    not_ignored = [line.split("\t")[1] for line in res.stdout.splitlines()
                   if line.startswith("::")]
    assert not_ignored == [], f"not ignored by .gitignore: {not_ignored}"
    # and the pattern hides no source: every tracked file stays tracked and visible
    tracked = subprocess.run(["git", "ls-files", "-ci", "--exclude-standard"], capture_output=True,
                             text=True, cwd=ROOT).stdout.split()
    sources = [t for t in tracked if t.endswith((".py", ".c", ".h", ".html", ".j2", ".js"))]
    assert sources == [], f"tracked sources that .gitignore would hide: {sources}"
