"""The ``"cpu"`` device's generated kernels are compiled at ``-O1`` with the loop vectorizer
(`ren.backend.cpu_build.KERNEL_OPT`): about half the compiler CPU of ``-O2`` in a cold first call
(issue 41), and their loops must still come out as vector code (``-O1`` alone leaves them scalar,
~5x slower) and compute NumPy's words."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

import ren
from ren.backend.c_host import find_cc
from ren.ring import RingSpec

pytestmark = pytest.mark.skipif(find_cc() is None, reason="needs a C compiler")


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


def test_kernel_flags_are_O1_with_the_vectorizer():
    """The last -O of the kernel flags is -O1 and the vectorizer is on (the compile-time choice;
    a compiler that rejects the flags gets the path's -O3 flags, `kernel_flags`)."""
    from ren.backend import cpu_build

    flags = cpu_build.kernel_flags(cpu_build.resolve_isa())
    if "-O3" in flags:
        pytest.skip("this compiler rejects the kernel flags (-O3 fallback)")
    assert [f for f in flags if f.startswith("-O")][-1] == "-O1"
    assert "-ftree-vectorize" in flags


@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump (binutils)")
def test_kernels_built_with_the_kernel_flags_are_vector_code(tmp_path):
    """Each generated kernel's loop, built with `kernel_flags`, uses the path's vector registers
    (zmm on avx512, ymm on avx2): without the vectorizer, -O1 would leave it scalar."""
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
    build_library(compiler(), source, kernel_flags(isa), so)
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
