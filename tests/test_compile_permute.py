"""The ``"cpu"`` device's compile-time shape of staged automorphism reads: `ren_permute` is one
out-of-line function per library (the C compiler's time, issue 41), and the kernel index of the
compile cache is keyed by the C prelude the kernels were compiled with."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import ren
from ren.backend.c_host import find_cc
from ren.ring import RingSpec

pytestmark = pytest.mark.skipif(find_cc() is None, reason="needs a C compiler")


def _rotations(a: ren.Poly, k: ren.Poly) -> ren.Poly:
    ring = a.ring
    b = a * k.to_ring(ring)
    return a.automorph(5) * b.automorph(5) + a.automorph(5) + a.automorph(2 * ring.N - 1)


def _staged_kernels(N: int):
    """(the C programs of the elementwise kernels of `_rotations` at ring degree N on "cpu", the
    cpu words, NumPy's words)."""
    from ren.backend.render_c import C, render_program
    from ren.schedule import schedule

    big = RingSpec.generate(N, 5)
    with ren.random.seeded(3):
        a = ren.Poly.uniform(big.sub(0, 3), device="cpu", domain="ntt").realize()
        k = ren.Poly.uniform(big, device="cpu", domain="ntt").realize()
    out = _rotations(a, k)
    items = [i for i in schedule([out.node]) if i.kind == "elementwise"]
    return ([render_program(i, C) for i in items], out.numpy(),
            _rotations(a.to("python"), k.to("python")).numpy())


def _functions(so: str) -> list[str]:
    """The names of the functions (text symbols, local ones too) of the shared library `so`."""
    listing = subprocess.run(["nm", so], capture_output=True, text=True, check=True).stdout
    return [parts[2] for parts in (ln.split() for ln in listing.splitlines())
            if len(parts) == 3 and parts[1] in "tT"]


@pytest.mark.skipif(shutil.which("nm") is None, reason="needs nm (binutils)")
def test_ren_permute_is_one_out_of_line_function(tmp_path):
    """Every staged read calls one `ren_permute` compiled once per library (specialized for the
    tile, so a constprop clone may carry the name): inlined, GCC unrolled a copy per call, and a
    hoisted transform's kernel (~120 calls a tile) took seconds to compile.  The words stay
    NumPy's."""
    from ren.backend.c_host import build_library, compiler
    from ren.backend.cpu_build import kernel_flags, resolve_isa, source_head
    from ren.backend.cpu_libs import LIBRARY_HEADER
    from ren.backend.elementwise_c import STAGE_TILE
    from ren.backend.render_c import C, translation_unit

    progs, got, want = _staged_kernels(2 * STAGE_TILE)
    assert np.array_equal(got, want)
    staged = [p for p in progs if "ren_permute(" in p.kernels[0].source]
    assert staged and sum(p.kernels[0].source.count("ren_permute(") for p in staged) >= 3
    isa = resolve_isa()
    # the kernels made callable from outside (as the device's entry points make them)
    source = (source_head(isa) + LIBRARY_HEADER + translation_unit(staged, C)
              + "".join(f"\nvoid *keep_{p.kernels[0].name} = (void*){p.kernels[0].name};"
                        for p in staged))
    so = str(tmp_path / "k.so")
    build_library(compiler(), source, kernel_flags(isa), so)
    permutes = [f for f in _functions(so) if f.split(".")[0] == "ren_permute"]
    assert len(permutes) == 1, permutes


def test_kernel_index_context_covers_the_c_prelude(monkeypatch):
    """A kernel's cached library is found through the index only under the C prelude it was
    compiled with: kernel names hash the kernel's own text, not the helpers it calls, so a
    changed helper (say `ren_permute`) must not load libraries built with the old one."""
    from ren.backend import cpu, render_c

    before = cpu.CpuDevice("cpu")._index_context
    monkeypatch.setattr(cpu, "C", render_c.Dialect("c", render_c.C.prelude + "/* changed */\n",
                                                   host=True, elementwise_loop=True))
    assert cpu.CpuDevice("cpu")._index_context != before
    monkeypatch.setattr(cpu, "CORE_HELPERS", render_c.CORE_HELPERS + "/* changed */\n")
    monkeypatch.setattr(cpu, "C", render_c.C)
    assert cpu.CpuDevice("cpu")._index_context != before
