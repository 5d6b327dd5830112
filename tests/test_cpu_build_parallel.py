"""How the "cpu" device builds its kernel libraries when the compile cache is cold (issue 41:
the first call of a bootstrapping is mostly compiler time).

* A build split into several compiler runs side by side (`ren.backend.cpu._split`, one unit per
  core) gives the same kernels, and the same words, as one run; the generated kernels' cheaper
  flags (`ren.backend.cpu_build.kernel_flags`: ``-O1`` with the vectorizer for elementwise
  kernels, ``-O2`` with ``-O3``'s loop flags for hosted ones), either of them on every kernel,
  give the same words as ``-O3``.
* The cache key follows the source and the flags: a changed source or flag is a new library,
  the same ones are the cached library (no compiler run).
* A failing compile is a `KernelCompileError` that names the kernel (``ren_ew_<hash>``).
* Builders in several processes writing the same library into one folder at once all load a
  working library, and the folder ends with one verified library and no leftovers.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ren
from ren import settings
from ren.backend import backend_override, c_host, cpu, cpu_build
from ren.backend.c_host import CFLAGS, cached_library, compile_source, failing_kernels, find_cc
from ren.errors import KernelCompileError
from ren.ring import RingSpec

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(ren.__file__)))


def _program(kind: str) -> list[np.ndarray]:
    """Six distinct elementwise kernels (sums, products, a negation, an automorphism)."""
    ring = RingSpec.generate(64, 3, bits=31)
    with ren.random.seeded(11):
        a, b, c = (ren.Poly.uniform(ring, domain="ntt", device=kind) for _ in range(3))
    outs = [a * b + c, a - b * 7, (a + 5) * (b - c), -(a * c), a.automorph(5) * b, a * a * a + 1]
    ren.realize(outs)
    return [o.numpy() for o in outs]


def _build(tmp_path, name: str, per_unit: int, flags=None) -> tuple[list, cpu.CpuDevice, int]:
    """Run `_program` on a fresh device with its own cache folder; per_unit kernels a compiler
    run; returns (its words, the device, how many libraries one build wrote)."""
    dev = cpu.CpuDevice(f"cpu:{name}")
    if flags is not None:  # every kind of kernel built with `flags`
        dev.kind_flags = dict.fromkeys(dev.kind_flags, flags)
    calls = []

    def counted(source, flags, folder):
        calls.append(source)
        return cached_library(source, flags, folder)

    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(cpu, "KERNELS_PER_UNIT", per_unit)
        mp.setattr(cpu.os, "sched_getaffinity", lambda _: {0, 1, 2})
        mp.setattr(cpu, "cached_library", counted)
        with settings.override(REN_CACHE_DIR=str(tmp_path / name)), \
                backend_override("cpu", lambda _: dev):
            got = _program("cpu")
    finally:
        mp.undo()
    return got, dev, len(calls)


def test_parallel_units_build_the_same_kernels_as_one_run(tmp_path):
    want = _program("python")
    serial, one, runs1 = _build(tmp_path, "serial", 10 ** 6)
    parallel, many, runs3 = _build(tmp_path, "parallel", 1)
    assert runs1 == 1 and runs3 == 3  # one library, then one per (mocked) core
    assert len(one.entries) >= 6 and set(many.entries) == set(one.entries)
    assert len({id(lib) for lib, _ in many._libs.values()}) == 3
    for got in (serial, parallel):
        assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))


@pytest.mark.parametrize("kind", ["elementwise", "hosted", "-O3"])
def test_the_kernel_flags_give_the_same_words(tmp_path, kind):
    """The generated kernels built with either kind's `kernel_flags` (not -O3), or -O3, compute
    the same words (integer C: the level changes the code, never the result)."""
    isa = cpu_build.resolve_isa()
    flags = cpu_build.isa_flags(isa) if kind == "-O3" else cpu_build.kernel_flags(isa, kind)
    got, dev, _ = _build(tmp_path, "kflags", 10 ** 6, flags)
    assert all(np.array_equal(g, w) for g, w in zip(got, _program("python"), strict=True))
    assert dev.entries


def test_the_cache_key_follows_source_and_flags(tmp_path):
    folder = str(tmp_path)
    src = "int ren_one(void) { return 1; }\n"
    first = cached_library(src, CFLAGS, folder)
    runs = c_host.compiler_invocations
    assert cached_library(src, CFLAGS, folder) == first  # a hit: no compiler run
    assert c_host.compiler_invocations == runs
    other_source = cached_library(src.replace("1;", "2;"), CFLAGS, folder)
    other_flags = cached_library(src, (*CFLAGS, "-DREN_SOMETHING=1"), folder)
    assert len({first, other_source, other_flags}) == 3
    assert c_host.compiler_invocations == runs + 2


def test_a_failing_compile_names_its_kernel(tmp_path):
    bad = ("static int fine(void) { return 0; }\n"
           "static void ren_ew_0123456789abcdef_row(int x) { (void)undeclared_thing(x); }\n"
           "void ren_cpu_ren_ew_0123456789abcdef(void** a) { ren_ew_0123456789abcdef_row(0); }\n")
    with pytest.raises(KernelCompileError, match=r"in kernel ren_ew_0123456789abcdef on the"):
        compile_source(bad, CFLAGS, str(tmp_path))
    assert list(tmp_path.iterdir()) == []
    # a compiler that prints no "In function" line: the definition above the error's line
    log = "x/kernels.c:3:41: error: use of undeclared identifier 'y'"
    assert failing_kernels(log, "int a;\nREN_ROW void ren_ew_00000000000000ff_row(int x) {\n"
                                "  y;\n}\n") == ["ren_ew_00000000000000ff"]


_BUILDER = textwrap.dedent("""\
    import ctypes, os, sys, time
    from ren.backend import c_host
    folder, go = sys.argv[1], sys.argv[2]
    while not os.path.exists(go):
        time.sleep(0.002)
    src = "int ren_answer(void) { return 42; }\\n" + "/* %s */\\n" % ("x" * 20000)
    path = c_host.cached_library(src, c_host.CFLAGS, folder)
    print(ctypes.CDLL(path).ren_answer(), c_host.compiler_invocations)
    """)


def test_concurrent_builders_do_not_corrupt_the_cache(tmp_path):
    folder, go = tmp_path / "cpu", tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    procs = [subprocess.Popen([sys.executable, "-c", _BUILDER, str(folder), str(go)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    go.touch()  # all start compiling the same library at once
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e[-2000:] for _, e in outs]
    assert [o.split()[0] for o, _ in outs] == ["42"] * 4
    assert sum(int(o.split()[1]) for o, _ in outs) >= 1
    libs = sorted(folder.glob("*.so"))
    assert len(libs) == 1 and {p.name for p in folder.iterdir()} == \
        {libs[0].name, libs[0].with_suffix(".sha256").name}  # no build folders left
    key = c_host.library_key(str(libs[0]))
    assert key is not None and c_host.library_verifies(str(libs[0]), key)


def test_loop_dialect_units_leave_out_the_elementwise_grid_wrappers(tmp_path):
    """The "cpu" device calls an elementwise kernel through ``ren_cpu_<name>``; its shim grid
    wrapper ``ren_host_<name>`` was dead code that GCC compiled too (~30 % of a bootstrapping's
    compiler time).  The host shim still gets it through `compile_host`, and still runs."""
    from ren.backend.c_host import compile_host, host_function
    from ren.backend.render_c import SHIM, C, render_program, translation_unit
    from ren.schedule import schedule

    ring = RingSpec.generate(64, 2, bits=31)
    with ren.random.seeded(4):
        a, b = (ren.Poly.uniform(ring, domain="ntt") for _ in range(2))
    (item,) = [i for i in schedule([(a * b + 3).node]) if i.kind == "elementwise"]
    loop, shim = render_program(item, C), render_program(item, SHIM)
    name = loop.kernels[0].name
    assert name.startswith("ren_ew_")
    assert f"ren_host_{name}" not in translation_unit([loop], C)
    assert f"ren_host_{shim.kernels[0].name}" in translation_unit([shim], SHIM)
    lib = compile_host([loop], C, cache_dir=str(tmp_path))
    assert host_function(lib, name) is not None

