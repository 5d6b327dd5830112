"""Elementwise kernels of the "cpu" device stay vectorized under OpenMP (issue 41 §3, time).

The cpu device compiles every library with ``-fopenmp``; the limb loop of an elementwise kernel
is an OpenMP parallel loop, whose body the compiler outlines into a function that reads the
kernel's pointers from a struct.  GCC 12 then lost their ``restrict`` and left a wide inner
product (the key switch's, a dozen slots) unvectorized: ~4x slower than the same loop built
without ``-fopenmp``.  The renderer keeps each limb's loops in a function of their own
(``REN_ROW``), called from the parallel loop.  Checked here: the rendered shape, the compiler's
own vectorization report on the device's translation unit and flags (GCC only), and the words
against the NumPy backend on 1 and 2 threads, on the plain limb loop and the (limb, piece) one.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile

import numpy as np
import pytest

import ren
from ren.backend import get_device
from ren.backend.c_host import find_cc
from ren.backend.render_c import C, render_program
from ren.ring import RingSpec
from ren.schedule import schedule

needs_cc = pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")

#: products of the inner product: 12 input slots, past GCC's runtime alias checks
TERMS = 6


def _inner_product(ring: RingSpec, device: str) -> ren.Poly:
    with ren.random.seeded(7):
        ps = [ren.Poly.uniform(ring, domain="ntt", device=device) for _ in range(2 * TERMS)]
    out = ps[0] * ps[1]
    for i in range(1, TERMS):
        out = out + ps[2 * i] * ps[2 * i + 1]
    return out


def _program(ring: RingSpec):
    out = _inner_product(ring, "cpu")
    (item,) = [i for i in schedule([out.node]) if i.kind == "elementwise"]
    return render_program(item, C)


def _function(source: str, name: str) -> str:
    """The text of C function `name` in `source` (from its head to its closing brace)."""
    start = source.index(f" {name}(")
    end = source.index("\n}\n", start)
    return source[start:end]


@pytest.mark.parametrize("limbs", [2, 5])
def test_the_limb_loop_calls_an_out_of_line_row_function(limbs):
    """The kernel's body is the limb (or task) loop and one call; the coefficient loop and the
    fused 64-bit product sum are in the ``REN_ROW`` function, whose pointers are restrict."""
    prog = _program(RingSpec.generate(64, limbs))
    (k,) = prog.kernels
    body = _function(k.source, k.name)
    row = _function(k.source, f"{k.name}_row")
    assert f"REN_ROW void {k.name}_row(" in k.source
    assert "for (i64 g1" not in body and f"{k.name}_row(g0" in body
    assert "for (i64 g1" in row and "(u64)" in row and "REN_RESTRICT s1" in row
    assert ("REN_PIECES" in body) == (limbs <= 3)  # few limbs: (limb, piece) tasks
    assert "noinline" in C.prelude


def _vectorized_lines(source: str, flags: tuple[str, ...]) -> set[int]:
    """The source lines GCC reports a vectorized loop at, compiling `source` with `flags`."""
    with tempfile.TemporaryDirectory(prefix="ren-vec-") as d:
        path = os.path.join(d, "k.c")
        with open(path, "w") as f:
            f.write(source)
        cc = find_cc()
        assert cc is not None
        args = [*cc, *(f for f in flags if f not in ("-shared",)), "-c", path,
                "-o", os.path.join(d, "k.o"), "-fopt-info-vec-optimized"]
        done = subprocess.run(args, capture_output=True, text=True, check=True)
    return {int(m.group(1)) for m in re.finditer(r"k\.c:(\d+):\d+: optimized: loop vectorized",
                                                 done.stderr)}


@needs_cc
def test_gcc_vectorizes_the_row_loop_under_openmp():
    """The device's own translation unit and flags (``-fopenmp`` among them): GCC reports the
    coefficient loop of the row function vectorized."""
    cc = find_cc()
    assert cc is not None
    version = subprocess.run([*cc, "--version"], capture_output=True, text=True).stdout
    if "gcc" not in version.lower() and "free software foundation" not in version.lower():
        pytest.skip(f"the vectorization report is GCC's; the compiler is {version.splitlines()[0]}")
    dev = get_device("cpu")
    prog = _program(RingSpec.generate(1 << 12, 8))
    (k,) = prog.kernels
    source = dev._unit_source([prog], {k.name: k})
    if "-fopenmp" not in dev.flags:
        pytest.skip("the compiler builds no OpenMP code")
    lines = source.splitlines()
    # the kernel's code: from its first function (the row function, or the kernel itself) to
    # the device's entry-point wrapper
    first = next(i for i, ln in enumerate(lines, 1) if re.search(rf"void {k.name}(_row)?\(", ln))
    wrapper = next(i for i, ln in enumerate(lines, 1) if f"void ren_cpu_{k.name}(" in ln)
    vectorized = _vectorized_lines(source, dev.flags)
    assert any(first < n < wrapper for n in vectorized), (
        f"no vectorized loop in the kernel (lines {first}-{wrapper}); GCC reported {vectorized}")


def _same_words_on_one_and_two_threads(ring: RingSpec) -> None:
    """The cpu device's inner product over `ring` has the NumPy backend's words on 1 and 2
    threads."""
    want = _inner_product(ring, "python").numpy()
    dev = get_device("cpu")
    for t in (1, 2):
        try:
            with ren.settings.override(REN_CPU_THREADS=t):
                dev.set_threads(t)
                got = _inner_product(ring, "cpu").numpy()
        finally:
            dev.set_threads(None)
        assert np.array_equal(got, want), f"{t} threads"


@needs_cc
@pytest.mark.parametrize("limbs,N", [(3, 1 << 15), (6, 1 << 14)])
def test_inner_product_words_match_numpy_on_one_and_two_threads(limbs, N):
    """(limb, piece) tasks (3 limbs) and the plain limb loop (6), above the OpenMP threshold:
    the cpu device's words are the NumPy backend's on 1 and 2 threads."""
    ring = RingSpec.generate(N, limbs)
    _same_words_on_one_and_two_threads(ring)


def _mixed_ring(N: int) -> RingSpec:
    """Two 31-bit moduli (the special primes' size) before three 29-bit ones."""
    big, small = RingSpec.generate(N, 2, bits=31), RingSpec.generate(N, 3, bits=29)
    return RingSpec(N, big.moduli + small.moduli)


def test_rows_whose_sums_differ_get_classes_of_their_own():
    """A 6-product inner product over 31-bit and 29-bit moduli: the 31-bit rows sum 4 products
    before a 64-bit reduction (4·q² < 2^64), the 29-bit rows all 6 in one sum below q·2^32 and
    one REDC — one row class each (the whole kernel took the 31-bit plan before); equal moduli
    sizes keep one class."""
    from ren.backend.elementwise_c import _Elementwise

    assert _Elementwise._sum_plan(2**31 - 1, 6) == (4,)
    assert _Elementwise._sum_plan(2**29 + 11, 6) == ()  # 6·q < 2^32: one REDC
    assert _Elementwise._sum_plan(2**29 + 11, 8) == (8,)
    assert _Elementwise._sum_plan(2**29 + 11, 40) == (32,)
    (k,) = _program(_mixed_ring(64)).kernels
    cases = k.source.split("case ")[1:]
    assert len(cases) == 2, k.source
    sums = sorted((case.count("ren_redc64("), case.count("ren_redc(")) for case in cases)
    assert sums == [(0, 1), (2, 0)]  # 29-bit rows: one REDC; 31-bit rows: 4 + 2 products
    (plain,) = _program(RingSpec.generate(64, 5, bits=29)).kernels
    assert "switch" not in plain.source and plain.source.count("ren_redc(") == 1


@needs_cc
@pytest.mark.parametrize("N", [64, 1 << 14])
def test_mixed_moduli_inner_product_words_match_numpy(N):
    """The classes of `test_rows_whose_sums_differ_get_classes_of_their_own` give NumPy's words
    (1 and 2 threads at N = 2^14)."""
    ring = _mixed_ring(N)
    _same_words_on_one_and_two_threads(ring)
