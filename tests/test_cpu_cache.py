"""The compiled "cpu" device never crashes the process (issue 16, section 3).

* A damaged library in the disk cache (truncated, flipped bytes, emptied, swapped for another
  library with or without its digest file) is rebuilt, never loaded: each case runs in a
  subprocess, where loading it would be a real SIGBUS/SIGSEGV, on a copy of a cache built once.
* A compiler that exits 0 without writing a library (CC=/bin/true) or writes garbage is a
  DeviceError / KernelCompileError, and leaves nothing in the cache; a failed compile leaves no
  temporary files.  CC is a command line (CC='gcc -O0'); a blank CC means the default compiler.
* An unusable cache folder falls back to a private temporary one with one CacheWarning; cached
  files are 0755 (libraries) and 0644 (digests), so other users of a shared cache can load them.
* Loaded libraries are bounded (REN_CPU_LIBRARIES, plus what live plans and replay templates
  hold), and a JIT plan keeps its library loaded however many others are unloaded.

Every test uses its own cache folder (REN_CACHE_DIR).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import warnings

import pytest

import ren
from ren import settings
from ren.backend import c_host, cpu, get_device
from ren.backend.c_host import CFLAGS, compile_source, find_cc
from ren.errors import DeviceError, KernelCompileError, SettingsError
from ren.ring import RingSpec

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(ren.__file__)))

#: one small program on "cpu": the ring library (NTT/INTT) and one kernel library
SCRIPT = """\
import ren
from ren.backend import c_host
r = ren.RingSpec.generate(32, 2)
a = ren.Poly.from_coefficients(list(range(32)), r, device="cpu")
print(int(((a.ntt() * a.ntt()).intt() + 3).numpy().sum()), c_host.compiler_invocations)
"""


def _want() -> int:
    r = RingSpec.generate(32, 2)
    a = ren.Poly.from_coefficients(list(range(32)), r)
    return int(((a.ntt() * a.ntt()).intt() + 3).numpy().sum())


#: the subprocesses run the scalar path: what they test (the cache folder, digests, the index,
#: loading and unloading) is the same on every path, and its ring library builds in about half
#: the compiler time of AVX-512's (1.7 s vs 3.3 s; ~10 builds in this module).  Each path's
#: own library is built and checked in test_cpu_isa.
ISA = {"REN_CPU_ISA": "scalar"}


def _python(script: str, cache, preexec_fn=None, **env: str) -> subprocess.CompletedProcess:
    """Run `script` in a fresh interpreter on this checkout's `ren` with its own cache."""
    full = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "REN_CACHE_DIR": str(cache), **ISA, **env}
    return subprocess.run([sys.executable, "-c", script], env=full, capture_output=True,
                          text=True, cwd=REPO, timeout=300, preexec_fn=preexec_fn)


def _run_script(cache, **env: str) -> tuple[int, int]:
    """(the program's value, compiler runs) of SCRIPT; any crash or error fails here."""
    res = _python(SCRIPT, cache, **env)
    assert res.returncode == 0, f"exit status {res.returncode} (<0: killed by a signal):\n" \
                                f"{res.stderr[-3000:]}"
    value, runs = res.stdout.split()
    return int(value), int(runs)


def _leftovers(folder) -> list[str]:
    return [n for n in os.listdir(folder) if n.startswith(c_host.TEMP_PREFIX)]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A cache folder holding SCRIPT's two libraries, built once for the module."""
    root = tmp_path_factory.mktemp("pristine")
    value, runs = _run_script(root)
    assert value == _want() and runs == 2
    return root


@pytest.fixture
def cache(pristine, tmp_path):
    """A private copy of the pristine cache."""
    root = tmp_path / "cache"
    shutil.copytree(pristine, root)
    return root


def _libraries(root) -> list:
    libs = sorted((root / "cpu").glob("*.so"))
    assert len(libs) == 2, libs
    return libs


# -- damaged libraries are rebuilt, never loaded --------------------------------------------------
def _damage(how: str, libs: list) -> None:
    if how == "truncate":  # the old code: SIGBUS
        for p in libs:
            p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    elif how == "flip":  # the old code: SIGSEGV
        for p in libs:
            data = bytearray(p.read_bytes())
            for i in range(len(data) // 4, 3 * len(data) // 4):
                data[i] ^= 0xFF
            p.write_bytes(bytes(data))
    elif how == "empty":  # the old code: OSError: file too short
        for p in libs:
            p.write_bytes(b"")
    elif how in ("swap", "swap-with-digests"):  # the old code: AttributeError: undefined symbol
        pairs = [libs] + ([[p.with_suffix(".sha256") for p in libs]]
                          if how == "swap-with-digests" else [])
        for a, b in pairs:
            da, db = a.read_bytes(), b.read_bytes()
            a.write_bytes(db)
            b.write_bytes(da)
    else:  # pragma: no cover
        raise AssertionError(how)


@pytest.mark.parametrize("how", ["truncate", "flip", "empty", "swap", "swap-with-digests"])
def test_a_damaged_library_is_rebuilt_not_loaded(cache, how):
    libs = _libraries(cache)
    _damage(how, libs)
    value, runs = _run_script(cache)
    assert value == _want()
    assert runs == 2  # both libraries failed verification and were built again
    assert not _leftovers(cache / "cpu")
    if how == "truncate":  # the rebuilt entries verify: the next process compiles nothing
        assert _run_script(cache) == (value, 0)


def test_a_library_without_its_digest_is_rebuilt(cache):
    """A cache written before digests existed (or a build killed before its digest file was
    written) is not trusted."""
    for p in _libraries(cache):
        p.with_suffix(".sha256").unlink()
    assert _run_script(cache) == (_want(), 2)


def test_each_library_has_its_digest_and_shareable_modes(pristine):
    """Written after a complete build: 'ren-library 1 <key> <sha256 of the file>'; modes 0755
    and 0644 (the old code left 0711, so another user got 'Permission denied')."""
    for p in _libraries(pristine):
        digest = p.with_suffix(".sha256")
        fields = digest.read_text().split()
        assert fields[:2] == ["ren-library", "1"] and fields[2].startswith(p.stem)
        assert fields[3] == hashlib.sha256(p.read_bytes()).hexdigest()
        assert stat.S_IMODE(p.stat().st_mode) == 0o755
        assert stat.S_IMODE(digest.stat().st_mode) == 0o644
    assert not _leftovers(pristine / "cpu")


# -- the kernel index: a kernel is found wherever an earlier process compiled it ---------------
HISTORY = """\
import sys
import ren
from ren.backend import c_host
r = ren.RingSpec.generate(32, 2)
a = ren.Poly.from_coefficients(list(range(32)), r, device="cpu")
b = ren.Poly.from_coefficients(list(range(5, 37)), r, device="cpu")
first, second = (a * 7 + b * 3) * 5, (a - b) * 11 + 2
if sys.argv[1] == "both":  # one compiler run for both kernels
    ren.realize([first, second])
print(int(second.numpy().sum()), c_host.compiler_invocations)
"""


def _history(cache, which: str) -> tuple[int, int]:
    res = subprocess.run([sys.executable, "-c", HISTORY, which], capture_output=True, text=True,
                         cwd=REPO, timeout=300, env={
                             **os.environ, "REN_CACHE_DIR": str(cache), **ISA,
                             "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")})
    assert res.returncode == 0, res.stderr[-3000:]
    value, runs = res.stdout.split()
    return int(value), int(runs)


@pytest.fixture(scope="module")
def ring_only(pristine, tmp_path_factory):
    """The pristine cache less its kernel library and index: the ring library alone.  A HISTORY
    run in an empty folder compiled the ring library first (~5 s of compiler CPU per test); the
    kernel-index tests start from this copy instead and compile only their kernels."""
    root = tmp_path_factory.mktemp("ring-only")
    shutil.copytree(pristine, root, dirs_exist_ok=True)
    kernels = {p.read_text().split()[3][:24] for p in (root / "cpu" / "index").iterdir()}
    shutil.rmtree(root / "cpu" / "index")
    for stem in kernels:
        for suffix in (".so", ".sha256"):
            (root / "cpu" / (stem + suffix)).unlink()
    assert len(list((root / "cpu").glob("*.so"))) == 1  # the ring library: no entry names it
    return root


def _kernel_libraries(cache) -> list:
    """The libraries the kernel index names (not the ring library)."""
    stems = {p.read_text().split()[3][:24] for p in (cache / "cpu" / "index").iterdir()}
    assert stems
    return [cache / "cpu" / (stem + ".so") for stem in sorted(stems)]


def _want_second() -> int:
    r = RingSpec.generate(32, 2)
    a = ren.Poly.from_coefficients(list(range(32)), r)
    b = ren.Poly.from_coefficients(list(range(5, 37)), r)
    return int(((a - b) * 11 + 2).numpy().sum())


def test_a_kernel_compiled_with_others_is_found_by_another_history(tmp_path, ring_only):
    """Process 1 compiles two kernels in one library; process 2 needs only one of them (its
    compiler run would have another source): the kernel index finds it, nothing compiles."""
    shutil.copytree(ring_only, tmp_path, dirs_exist_ok=True)
    value, runs = _history(tmp_path, "both")
    assert value == _want_second() and runs == 1  # one library for both kernels
    assert _history(tmp_path, "second") == (value, 0)
    assert list((tmp_path / "cpu" / "index").iterdir())  # the entries the first run wrote


def _rewrite_entries(cache, field: int, value: str) -> None:
    for p in (cache / "cpu" / "index").iterdir():
        parts = p.read_text().split()
        parts[field] = value
        p.write_text(" ".join(parts) + "\n")


@pytest.mark.parametrize("damage", ["entry", "library", "another context", "another kernel"])
def test_a_bad_index_entry_or_library_is_compiled_again(tmp_path, ring_only, damage):
    """An entry is used only when it names this kernel under this context (prelude, flags,
    compiler) and its library verifies; anything else compiles the kernel again."""
    shutil.copytree(ring_only, tmp_path, dirs_exist_ok=True)
    value, runs = _history(tmp_path, "both")
    assert runs == 1
    if damage == "entry":
        for p in (tmp_path / "cpu" / "index").iterdir():
            p.write_text("ren-kernel 1 not a valid entry\n")
    elif damage == "another context":  # e.g. a library built with another prelude or flags
        _rewrite_entries(tmp_path, 4, "0" * 64)
    elif damage == "another kernel":
        _rewrite_entries(tmp_path, 2, "ren_ew_0000000000000000")
    else:  # every kernel library truncated: the index points at libraries that do not verify
        for so in _kernel_libraries(tmp_path):
            so.write_bytes(so.read_bytes()[: so.stat().st_size // 2])
    got, runs = _history(tmp_path, "second")
    assert got == value and runs == 1  # the kernel again (the ring library loads as it is)
    assert _history(tmp_path, "second") == (value, 0)  # and the rebuilt one is indexed


# -- compilers that do not build ------------------------------------------------------------------
def test_a_compiler_that_writes_nothing_is_an_error_and_leaves_nothing(tmp_path):
    """CC=/bin/true exits 0 and writes nothing: the old code cached an empty library and failed
    on loading it (OSError: file too short)."""
    true = shutil.which("true")
    if true is None:
        pytest.skip("no 'true' program")
    script = ("from ren.backend import get_device\n"
              "from ren.errors import DeviceError\n"
              "try:\n"
              "    get_device('cpu')\n"
              "except DeviceError as e:\n"
              "    print('DeviceError:', e)\n")
    res = _python(script, tmp_path, CC=true)
    assert res.returncode == 0, (res.returncode, res.stderr[-3000:])
    assert "DeviceError:" in res.stdout and f"CC='{true}'" in res.stdout
    assert "exited 0 but wrote no file" in res.stdout and "set CC to" in res.stdout
    assert [p for p in tmp_path.rglob("*") if not p.is_dir()] == []


def test_a_compiler_that_writes_garbage_is_an_error(monkeypatch, tmp_path):
    fake = tmp_path / "fake-cc"
    fake.write_text('#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = -o ] && echo junk > "$2"; '
                    "shift; done\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CC", str(fake))
    folder = tmp_path / "cache"
    with pytest.raises(KernelCompileError, match="not a shared library"):
        compile_source("int ren_x(void) { return 1; }\n", CFLAGS, str(folder))
    assert list(folder.iterdir()) == []


def test_a_failed_compile_leaves_no_files(tmp_path):
    """The old code kept its temporary .so and .c in the cache folder on every failure."""
    with pytest.raises(KernelCompileError, match="no_such_function"):
        compile_source("int f(void) { return no_such_function(); }\n", CFLAGS, str(tmp_path))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("blank", ["", "  "])
def test_a_blank_cc_means_the_default_compiler(monkeypatch, blank):
    monkeypatch.setenv("CC", blank)
    command = find_cc()
    assert command is not None and os.path.basename(command[0]) in c_host.DEFAULT_CCS
    lib = compile_source("int ren_seven(void) { return 7; }\n")
    assert lib["ren_seven"]() == 7


def test_cc_is_a_command_line(monkeypatch):
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc")
    monkeypatch.setenv("CC", "gcc -O0 -DREN_SEVEN='3 + 4'")
    assert find_cc() == (gcc, "-O0", "-DREN_SEVEN=3 + 4")
    lib = compile_source("int ren_seven(void) { return REN_SEVEN; }\n")  # the words reach gcc
    assert lib["ren_seven"]() == 7
    cpu.cpu_flags.cache_clear()
    try:
        assert "-O3" in cpu.cpu_flags()
    finally:
        cpu.cpu_flags.cache_clear()


@pytest.mark.parametrize("cc, phrase", [
    ("no-such-compiler-ren", r"CC='no-such-compiler-ren': the compiler 'no-such-compiler-ren' "
                             r"is not on PATH"),
    ("/nonexistent/cc -O2", r"'/nonexistent/cc' is not an executable file"),
    ('gcc "-O2', r"is not a valid command line"),
    ("false", r"\(CC='false'\).*/false failed \(exit status 1\) and printed nothing; set CC to"),
])
def test_an_unusable_cc_says_what_was_tried_and_why(monkeypatch, cc, phrase):
    monkeypatch.setenv("CC", cc)
    cpu.cpu_flags.cache_clear()
    try:
        with pytest.raises(DeviceError, match=phrase):
            cpu.cpu_flags()
    finally:
        monkeypatch.undo()
        cpu.cpu_flags.cache_clear()


# -- unusable cache folders -----------------------------------------------------------------------
def _fallback(path) -> tuple[str, list]:
    with settings.override(REN_CACHE_DIR=str(path)), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        first = cpu.cache_dir()
        assert cpu.cache_dir() == first  # the same folder, and no second warning
    return first, seen


@pytest.mark.parametrize("kind", ["a regular file", "under a regular file"])
def test_an_unusable_cache_dir_falls_back_with_one_warning(tmp_path, kind):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    path = blocker if kind == "a regular file" else blocker / "ren"
    got, seen = _fallback(path)
    assert [w.category for w in seen] == [cpu.CacheWarning]
    message = str(seen[0].message)
    assert f"REN_CACHE_DIR='{path}'" in message and "NotADirectoryError" in message
    assert "Set REN_CACHE_DIR to a folder you can write" in message and got in message
    assert os.path.isdir(got) and not got.startswith(str(tmp_path))
    assert os.access(got, os.W_OK)


def test_the_configured_cache_dir_is_used_when_it_works(tmp_path):
    got, seen = _fallback(tmp_path / "deep" / "er")
    assert got == str(tmp_path / "deep" / "er" / "cpu") and not seen


def test_a_cache_dir_under_dev_null_still_runs(tmp_path):
    """End to end: the old code raised a bare NotADirectoryError."""
    res = _python(SCRIPT, "/dev/null/ren")
    assert res.returncode == 0, (res.returncode, res.stderr[-3000:])
    assert int(res.stdout.split()[0]) == _want()
    assert res.stderr.count("CacheWarning") == 1 and "/dev/null/ren" in res.stderr


def _without_dac_override() -> None:
    """In the child: root ignores file modes; without these capabilities it does not."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@pytest.mark.parametrize("where", ["the root", "its cpu folder"])
def test_an_unwritable_cache_dir_still_runs(tmp_path, where):
    """The old code raised a bare PermissionError."""
    root = tmp_path / "shared"
    (root / "cpu").mkdir(parents=True)
    locked = root if where == "the root" else root / "cpu"
    if where == "the root":
        (root / "cpu").rmdir()
    locked.chmod(0o555)
    drop = _without_dac_override if os.geteuid() == 0 else None
    try:
        probe = subprocess.run([sys.executable, "-c", f"open({str(locked / 'x')!r}, 'w')"],
                               capture_output=True, preexec_fn=drop)
    except (OSError, subprocess.SubprocessError) as e:
        pytest.skip(f"cannot make a folder unwritable here: {e}")
    if probe.returncode == 0:
        pytest.skip("cannot make a folder unwritable here (file modes are not enforced)")
    try:
        res = _python(SCRIPT, root, preexec_fn=drop)
    finally:
        locked.chmod(0o755)
    assert res.returncode == 0, (res.returncode, res.stderr[-3000:])
    assert int(res.stdout.split()[0]) == _want()
    assert res.stderr.count("CacheWarning") == 1 and "PermissionError" in res.stderr


def test_set_threads_checks_the_range():
    dev = get_device("cpu")
    with pytest.raises(SettingsError, match=r"REN_CPU_THREADS.*1\.\.256"):
        dev.set_threads(100000)


# -- a bounded number of loaded libraries ---------------------------------------------------------
def _mapped(folder) -> int:
    """Distinct files under `folder` mapped into this process (dlopened and not closed)."""
    with open("/proc/self/maps") as f:
        return len({line.split()[-1] for line in f if str(folder) in line})


needs_maps = pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs /proc")


BOUND_SCRIPT = """\
import gc, os
import numpy as np
import ren
from ren.backend import cpu, get_device
from ren.replay import templates

templates.size = 2  # replay templates hold their kernels' libraries too
folder = os.path.join(os.environ["REN_CACHE_DIR"], "cpu")
def mapped():
    with open("/proc/self/maps") as f:
        return len({l.split()[-1] for l in f if folder in l})

ring = ren.RingSpec.generate(64, 2)
a = ren.Poly.from_coefficients(list(range(64)), ring, device="cpu").realize()
ref = a.to("python")
prog = lambda x, i: x * (i + 7) + (3 * i + 1)  # constants are rendered: a library per i
dev = get_device("cpu")
counts = []
for i in range(30):
    assert np.array_equal(prog(a, i).numpy(), prog(ref, i).numpy()), i
    gc.collect()
    assert dev.libraries() <= 3
    counts.append(mapped())
# an unloaded kernel is loaded again when a program needs it
assert np.array_equal(prog(a, 0).numpy(), prog(ref, 0).numpy())
print(max(counts), cpu.loaded_libraries())
"""


@needs_maps
def test_loaded_libraries_stay_bounded(cache):
    """REN_CPU_LIBRARIES=3 and 2 replay templates: 30 distinct programs leave at most 3 + 2
    kernel libraries and the ring library mapped (the old code: all 30).  In a subprocess: a
    library closed while still in use would be a SIGSEGV."""
    res = _python(BOUND_SCRIPT, cache, REN_CPU_LIBRARIES="3")
    assert res.returncode == 0, f"exit status {res.returncode} (<0: killed by a signal):\n" \
                                f"{res.stderr[-3000:]}"
    most_mapped, live = map(int, res.stdout.split())
    assert most_mapped <= 3 + 2 + 1 and live <= 3 + 2, res.stdout


JIT_SCRIPT = """\
import gc, weakref
import numpy as np
import ren
from ren.backend import cpu, get_device
from ren.replay import templates

templates.size = 1
ring = ren.RingSpec.generate(64, 2)
a = ren.Poly.from_coefficients(list(range(64)), ring, device="cpu").realize()

@ren.jit
def f(x):
    return (x * 12345 + 678).ntt() * x.ntt()

def want(x):
    p = x.to("python")
    return ((p * 12345 + 678).ntt() * p.ntt()).numpy()

assert np.array_equal(f(a).numpy(), want(a))
(plan,) = f.plans
assert isinstance(plan.template.runner, cpu.CompiledPlan)
refs = [weakref.ref(o) for u in plan.units for o in cpu._owners(u.fn)]
assert refs
dev = get_device("cpu")
for i in range(40):  # 40 kernel shapes (kernels differing only in constants share one)
    x = a
    for _ in range(i + 1):
        x = x * 7 + a
    x.realize()
gc.collect()
assert all(id(r()) not in dev._libs for r in refs), "the device still holds the plan's library"
assert all(r() is not None for r in refs), "the plan's library was closed under it"
for seed in range(3):
    with ren.random.seeded(seed):
        x = ren.Poly.uniform(ring, device="cpu").realize()
    assert np.array_equal(f(x).numpy(), want(x))
del f, plan
templates.clear()
gc.collect()
assert all(r() is None for r in refs), "the library outlived its last plan"
print("ok")
"""


def test_a_jit_plan_keeps_its_library_loaded(cache):
    """A plan captured first still replays (on its C loop of raw entry points) after its
    library left the device's LRU and 40 others were loaded and unloaded (REN_CPU_LIBRARIES=2,
    one replay template); once the plan is gone its library is closed.  In a subprocess: a
    use-after-dlclose would be a SIGSEGV."""
    res = _python(JIT_SCRIPT, cache, REN_CPU_LIBRARIES="2")
    assert res.returncode == 0, f"exit status {res.returncode} (<0: killed by a signal):\n" \
                                f"{res.stderr[-3000:]}"
    assert res.stdout.split() == ["ok"]


RSS_SCRIPT = """\
import gc, os, sys
import numpy as np
import ren
from ren.backend import cpu

folder = os.path.join(os.environ["REN_CACHE_DIR"], "cpu")
def rss_kib():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
def mapped():
    with open("/proc/self/maps") as f:
        return len({l.split()[-1] for l in f if folder in l})

r = ren.RingSpec.generate(64, 2)
a = ren.Poly.from_coefficients(list(range(64)), r, device="cpu").realize()
f = ren.jit(lambda x: (x * 12345 + 678).ntt() * x.ntt())
want = lambda x: ((x.to("python") * 12345 + 678).ntt() * x.to("python").ntt()).numpy()
assert np.array_equal(f(a).numpy(), want(a))
N, every = int(sys.argv[1]), int(sys.argv[2])
for i in range(N):
    (a * (i + 7) + (3 * i + 1)).realize()
    if (i + 1) % every == 0:
        gc.collect()
        print(i + 1, rss_kib(), mapped(), cpu.loaded_libraries(), flush=True)
assert np.array_equal(f(a).numpy(), want(a)), "the early JIT plan replays wrong words"
print("replayed")
"""


@pytest.mark.slow
@needs_maps
def test_rss_is_flat_over_2000_distinct_programs(tmp_path):
    """After warm-up (the device's 256 libraries and the 256 replay templates filled), 1,000
    more distinct programs add no loaded libraries and no RSS to speak of (the old code: +13.5
    MiB per 500 programs, 912 libraries loaded after 1,000); the JIT plan captured before them
    all still replays.  Several minutes: one compiler run per program."""
    script = RSS_SCRIPT
    res = subprocess.run([sys.executable, "-c", script, "2000", "250"],
                         env={**os.environ, "REN_CACHE_DIR": str(tmp_path),
                              "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")},
                         capture_output=True, text=True, cwd=REPO, timeout=3600)
    assert res.returncode == 0, (res.returncode, res.stderr[-3000:])
    print(res.stdout)  # programs, RSS KiB, mapped libraries, loaded kernel libraries
    lines = res.stdout.split("\n")
    assert "replayed" in lines
    rows = {int(n): (int(kib), int(m), int(live))
            for n, kib, m, live in (ln.split() for ln in lines if ln and ln[0].isdigit())}
    assert max(m for _, m, _ in rows.values()) <= 256 + 256 + 2  # + the ring library, + f's
    assert rows[2000][1] <= rows[1000][1] + 2
    assert rows[2000][0] - rows[1000][0] < 4 * 1024, rows  # KiB; the old code grew ~27 MiB
