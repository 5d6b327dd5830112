"""The ``"cpu"`` device compiles each kind of generated kernel at its own level
(`ren.backend.cpu_build.KERNEL_OPT`, `kernel_kind`; issue 41: a cold first call is mostly
compiler time):

* elementwise kernels (``ren_ew_*``) at ``-O1`` with the loop vectorizer — about half ``-O2``'s
  compiler CPU, and their loops must still come out as vector code (``-O1`` alone leaves them
  scalar, ~5x slower);
* hosted kernels (rendered ring programs: RANDOM) at ``-O2`` with ``-O3``'s loop flags — at
  ``-O1`` their grid loop calls the kernel once per element (the lean mode's replay, which
  regenerates key halves by RANDOM, ran those kernels 2x as long).

Each kind is built in its own libraries with its own flags, keyed (library cache and kernel
index) by them; a compiler that rejects a kind's flags gets the path's plain flags; and either
level computes the same words.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import replace

import numpy as np
import pytest

import ren
from ren import settings
from ren.backend import backend_override, cpu, cpu_build
from ren.backend.c_host import cached_library, find_cc
from ren.ring import RingSpec

pytestmark = pytest.mark.skipif(find_cc() is None, reason="needs a C compiler")


def _opt_level(flags: tuple[str, ...]) -> str:
    return [f for f in flags if f.startswith("-O")][-1]


def _product_sum(a: ren.Poly, b: ren.Poly, c: ren.Poly) -> ren.Poly:
    return a * b + b * c + a


def _kernels(N: int):
    """(the C programs of the elementwise kernels of `_product_sum` on "cpu", the cpu words,
    NumPy's words)."""
    from ren.backend.render_c import C, render_program
    from ren.schedule import schedule

    ring = RingSpec.generate(N, 3)
    with ren.random.seeded(5):
        a, b, c = (ren.Poly.uniform(ring, device="cpu", domain="ntt").realize() for _ in range(3))
    out = _product_sum(a, b, c)
    items = [i for i in schedule([out.node]) if i.kind == "elementwise"]
    want = _product_sum(a.to("python"), b.to("python"), c.to("python")).numpy()
    return [render_program(i, C) for i in items], out.numpy(), want


def _flags_or_skip(isa: str, kind: str) -> tuple[str, ...]:
    flags = cpu_build.kernel_flags(isa, kind)
    if "-O3" in flags:
        pytest.skip("this compiler rejects the kernel flags (-O3 fallback)")
    return flags


def test_each_kind_has_its_level():
    """Elementwise kernels: -O1 + vectorizer; hosted ones: -O2 (+ -O3's loop flags); both are
    the path's flags otherwise, with no -O3 left."""
    isa = cpu_build.resolve_isa()
    ew, hosted = (_flags_or_skip(isa, k) for k in ("elementwise", "hosted"))
    assert _opt_level(ew) == "-O1" and "-ftree-vectorize" in ew
    assert _opt_level(hosted) == "-O2" and "-funswitch-loops" in hosted
    base = [f for f in cpu_build.isa_flags(isa) if f != "-O3"]
    for kind, flags in (("elementwise", ew), ("hosted", hosted)):
        assert [f for f in flags if f not in cpu_build.KERNEL_OPT[kind]] == base
    assert set(cpu_build.KERNEL_KINDS) == {"elementwise", "hosted"}
    assert cpu_build.kernel_kind("ren_ew_0123456789abcdef") == "elementwise"
    assert cpu_build.kernel_kind("ren_random_0123456789abcdef") == "hosted"


def test_a_compiler_that_rejects_a_kinds_flags_gets_the_plain_flags(monkeypatch):
    isa = cpu_build.resolve_isa()
    full = cpu_build.isa_flags(isa)
    rejected = cpu_build.KERNEL_OPT["hosted"][1]
    monkeypatch.setattr(cpu_build, "_flags_build", lambda cc, flags: rejected not in flags)
    assert cpu_build.kernel_flags(isa, "hosted") == full
    assert _opt_level(cpu_build.kernel_flags(isa, "elementwise")) == "-O1"


def test_the_device_builds_each_kind_with_its_flags(tmp_path):
    """A cold build of elementwise kernels and a RANDOM program: each library's source holds one
    kind of kernel and was compiled with that kind's flags; the kernel index keeps the kinds
    apart (an entry's context is its kind's flags), and a second device loads both from it."""
    dev = cpu.CpuDevice("cpu:kinds")
    if any("-O3" in f for f in dev.kind_flags.values()):
        pytest.skip("this compiler rejects the kernel flags (-O3 fallback)")
    assert dev.kind_flags["elementwise"] != dev.kind_flags["hosted"]
    assert dev._index_context("elementwise") != dev._index_context("hosted")
    built: list[tuple[str, tuple[str, ...]]] = []

    def counted(source, flags, folder):
        built.append((source, tuple(flags)))
        return cached_library(source, flags, folder)

    ring = RingSpec.generate(64, 2, bits=31)

    def run(device: str) -> np.ndarray:
        """a·b + a with a a public sample (a lean key's row: regenerated in the graph, by the
        RANDOM program) and b a stored one."""
        with ren.random.seeded(3):
            a, b = (ren.Poly.uniform(ring, device=device, domain="ntt") for _ in range(2))
        a = ren.Poly.from_random(replace(a.random_origin(), public=True), ring, "ntt")
        return (a * b + a).numpy()

    with pytest.MonkeyPatch.context() as mp, \
            settings.override(REN_CACHE_DIR=str(tmp_path)):
        mp.setattr(cpu, "cached_library", counted)
        with backend_override("cpu", lambda _: dev):
            got = run("cpu")
        kinds = {}
        for source, flags in built:
            names = set(re.findall(r"void (ren_(?:ew|random)_[0-9a-f]{16})\(", source))
            (kind,) = {cpu_build.kernel_kind(n) for n in names}  # one kind a library
            kinds[kind] = flags
        assert kinds == dev.kind_flags  # both kinds built, each with its own flags
        assert dev.entries and dev.hosted
        again = cpu.CpuDevice("cpu:kinds2")
        built.clear()
        with backend_override("cpu", lambda _: again):
            assert np.array_equal(run("cpu"), got)
        assert built == [] and set(again.entries) == set(dev.entries) \
            and set(again.hosted) == set(dev.hosted)  # all from the index: no compiler run
    assert np.array_equal(run("python"), got)


@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump (binutils)")
def test_elementwise_kernels_built_with_their_flags_are_vector_code(tmp_path):
    """Each generated elementwise kernel's loop, built with its kind's flags, uses the path's
    vector registers (zmm on avx512, ymm on avx2): without the vectorizer, -O1 would leave it
    scalar."""
    from ren.backend.c_host import build_library, compiler
    from ren.backend.cpu_build import kernel_flags, resolve_isa, source_head
    from ren.backend.cpu_libs import LIBRARY_HEADER
    from ren.backend.render_c import C, translation_unit

    isa = resolve_isa()
    register = {"avx512": "%zmm", "avx2": "%ymm"}.get(isa)
    if register is None:
        pytest.skip(f"path {isa} has no vector registers to look for")
    progs, got, want = _kernels(1 << 10)
    assert np.array_equal(got, want)
    assert progs
    source = (source_head(isa) + LIBRARY_HEADER + translation_unit(progs, C)
              + "".join(f"\nvoid *keep_{p.kernels[0].name} = (void*){p.kernels[0].name};"
                        for p in progs))
    so = str(tmp_path / "k.so")
    build_library(compiler(), source, kernel_flags(isa, "elementwise"), so)
    listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", so], capture_output=True,
                             text=True, check=True).stdout
    bodies: dict[str, str] = {}
    for block in listing.split("\n\n"):
        m = re.search(r"<(ren_ew_[0-9a-f]+)(?:_row)?(?:\.[\w.]+)?>:", block)
        if m is not None:
            bodies[m.group(1)] = bodies.get(m.group(1), "") + block
    names = {p.kernels[0].name for p in progs}
    assert names <= bodies.keys(), (names, sorted(bodies))
    scalar = [n for n in names if register not in bodies[n]]
    assert not scalar, f"kernels compiled without {register} vector code: {scalar}"
