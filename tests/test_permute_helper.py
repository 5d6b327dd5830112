"""`ren_permute`'s vector loops are not unrolled (issue 41: a cold first call's compile time).

A hoisted linear transform's kernel stages ~120 permuted rows per tile, each an inlined
`ren_permute` of a 128-word tile; GCC unrolled every copy of the loop fully, and the largest
kernel of the n16-shaped bootstrapping at N = 2^14 took 2.7-2.9 s of compiler CPU instead of
1.6 s.  Checked here: every vector loop of the helper carries ``REN_NO_UNROLL``, which GCC's
preprocessor turns into ``#pragma GCC unroll 1``; the staged kernels' words are checked by
tests/test_cpu_backend.py's staging tests.
"""

from __future__ import annotations

import subprocess

import pytest

from ren.backend.c_host import find_cc
from ren.backend.render_c import PERMUTE_HELPER


def test_every_vector_loop_of_the_helper_is_marked():
    lines = PERMUTE_HELPER.splitlines()
    head = "for (i64 c = 0; c < n; c +="
    loops = [i for i, ln in enumerate(lines) if ln.strip().startswith(head)]
    assert len(loops) == 2  # the AVX-512 and AVX2 paths (the scalar loop stays as it is)
    assert all(lines[i - 1].strip() == "REN_NO_UNROLL" for i in loops)


@pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")
@pytest.mark.parametrize("isa", ["-mavx512f", "-mavx2"])
def test_gcc_sees_the_unroll_pragma(isa):
    cc = list(find_cc())
    macros = subprocess.run([*cc, "-dM", "-E", "-x", "c", "-"], input="", capture_output=True,
                            text=True, check=True).stdout
    if "__GNUC__" not in macros or "__clang__" in macros:
        pytest.skip("the pragma is GCC's (other compilers get an empty REN_NO_UNROLL)")
    source = ("typedef unsigned int u32; typedef long long i64;\n#define REN_FN static inline\n"
              "#define REN_RESTRICT __restrict\n" + PERMUTE_HELPER)
    out = subprocess.run([*cc, isa, "-E", "-P", "-x", "c", "-"], input=source,
                         capture_output=True, text=True, check=True).stdout
    body = out[out.index("ren_permute("):]
    loop = body.index("for (i64 c = 0; c < n; c +=")
    assert "#pragma GCC unroll 1" in body[:loop]
