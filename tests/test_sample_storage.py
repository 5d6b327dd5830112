"""The C samplers' storage form (r·2^32 mod q, written in the pass that writes each row) on both
sides of q = 2^31: below it the product runs in 32-bit lanes (`to_storage_narrow`, every Ren
modulus), from it up in 64 bits (`to_storage`).  Both must give the words of the standard form
times 2^32 mod q, for the uniform rows (`reduce_row`) and for the residues of signed
coefficients (`residues_limb`, its small-|c| and division cases), on every vector path."""

from __future__ import annotations

import numpy as np
import pytest

from tests.sampling_helpers import on_threads, ring_paths

#: moduli across the 32-bit product's edge (q < 2^31) and the Barrett step's (q = 1, 2, 2^32 - 5)
MODULI = [2**31 - 1, 2**31, 2**31 + 11, 2**32 - 5, 2**30 + 3, 12289, 3, 2, 1]


def _times_r(rows: np.ndarray, moduli: list[int]) -> np.ndarray:
    """rows (standard form) · 2^32 mod q, row by row, in Python integers (no shortcut)."""
    out = np.empty_like(rows)
    for i, q in enumerate(moduli):
        out[i] = [(int(r) << 32) % q for r in rows[i]]
    return out


@pytest.mark.parametrize("n", [1, 17, 300])
def test_uniform_rows_in_storage_form_on_both_sides_of_2_to_the_31(n: int) -> None:
    from ren.backend.cpu_sampling import UNIFORM_PREFIX, _bind

    moduli = np.array(MODULI, dtype=np.uint32)
    seed = b"storage"
    for isa, lib in ring_paths():
        _bind(lib)
        rows = {}
        for stored in (0, 1):
            out = np.zeros((len(MODULI), n), dtype=np.uint32)
            status = lib.ren_cpu_sample_uniform_form(
                UNIFORM_PREFIX, len(UNIFORM_PREFIX), seed, len(seed), moduli.ctypes.data,
                len(MODULI), n, out.ctypes.data, 0, stored)
            assert status == 0, isa
            rows[stored] = out
        assert np.array_equal(rows[1], _times_r(rows[0], MODULI)), isa


@pytest.mark.parametrize("most,n,offset", [(1, 333, 0), (20, 333, 0), (2**40, 333, 0),
                                            (1, 2048, 0), (20, 3072, 0), (20, 2048, 1)])
def test_signed_residues_in_storage_form_on_both_sides_of_2_to_the_31(most: int, n: int,
                                                                       offset: int) -> None:
    """Coefficients up to `most` in magnitude (1 and 20: the small case for every modulus above
    them; 2^40: the division case), 0 and ±most included, at 1-3 threads.  Rows of whole
    1024-word tiles on a vector-aligned buffer take the streamed tiles (`stream_tiles`); 333
    words, or the rows a word off the alignment (`offset`), the plain loop."""
    from ren.backend.cpu_sampling import _bind

    rng = np.random.default_rng(most + n + offset)
    c = rng.integers(-most, most + 1, n, dtype=np.int64)
    c[:3] = (0, most, -most)
    moduli = np.array(MODULI, dtype=np.uint32)
    want = np.array([[(int(x) % q << 32) % q for x in c] for q in MODULI], dtype=np.uint32)
    plain = np.array([[int(x) % q for x in c] for q in MODULI], dtype=np.uint32)
    for isa, lib in ring_paths():
        _bind(lib)
        for threads in (1, 2, 3):
            for stored, expect in ((1, want), (0, plain)):
                space = np.zeros(len(MODULI) * n + 32, dtype=np.uint32)
                start = (-space.ctypes.data // 4) % 16 + offset  # 64-byte aligned, + offset
                out = space[start:start + len(MODULI) * n].reshape(len(MODULI), n)

                def run(out=out, stored=stored, lib=lib) -> None:
                    lib.ren_cpu_signed_residues_form(c.ctypes.data, moduli.ctypes.data,
                                                     len(MODULI), n, out.ctypes.data, stored)

                on_threads(lib, threads, run)
                assert np.array_equal(out, expect), (isa, threads, stored)
                assert not space[:start].any() and not space[start + out.size:].any()
