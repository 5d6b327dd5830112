"""TO_RNS as the first kernel of a plan tile (cpu_ring_plan.c ren_tile_row -> cpu_ring_to_rns.c
torns_row; ren/backend/cpu_plan.py tile_entry/team_flags): on more than one thread a TO_RNS
and the row-local kernels after it (an encryption's e0 + P'·m, an NTT) run row by row, each
row of residues still in the thread's L2 when the next kernel reads it.  A TO_RNS row reads
every input word, so it may start a tile but never join one.  The words must be the one-thread
words (no tiles) for any word count W, at 2 and 3 threads, tiles of any height or none."""

from __future__ import annotations

import ctypes
import random

import numpy as np
import pytest
from conftest import cpu_or_skip

import ren
import ren.random
from ren import replay
from ren.poly import Poly, realize_polys


def _to_rns_call(out, words, L: int, W: int):
    from ren.backend.cpu_calls import CpuCall, sizes

    lib = cpu_or_skip().ring_library()
    addr = ctypes.cast(lib["ren_cpu_to_rns"], ctypes.c_void_p).value
    return CpuCall("to_rns", addr, 2, [sizes(out.shape[1], L, W)], lib), [out, words]


def _ntt_call(out, src):
    from ren.backend.cpu_calls import CpuCall, sizes

    lib = cpu_or_skip().ring_library()
    addr = ctypes.cast(lib["ren_cpu_ntt"], ctypes.c_void_p).value
    return CpuCall("ntt", addr, 2, [sizes(out.shape[1], out.shape[0])], lib), [out, src]


def test_a_to_rns_starts_a_tile_and_never_joins_one():
    """TO_RNS then an NTT of its rows: one tile.  An NTT then a TO_RNS reading the NTT's
    output as its words (same address): the TO_RNS stays out of the tile (its row r reads
    every word, not row r), and the team meets before it."""
    from ren.backend.cpu_plan import BARRIER, TILE, team_flags, tile_entry

    N = 1 << 12
    rows, other = np.zeros((4, N), np.uint32), np.zeros((4, N), np.uint32)
    words = np.zeros((N, 2), np.uint32)
    run = [_to_rns_call(rows, words, 4, 2), _ntt_call(other, rows)]
    flags = team_flags(run, [{}, {}], [tile_entry(c) for c, _ in run])
    assert flags[1] & TILE
    back = [_ntt_call(rows, other), _to_rns_call(other, rows, 4, 1)]
    flags = team_flags(back, [{}, {}], [tile_entry(c) for c, _ in back])
    assert not flags[1] & TILE and flags[1] & BARRIER


def _tiles(cpu):
    lib = cpu.ring_library()
    lib.ren_cpu_tiles_run.restype = ctypes.c_longlong
    return lib


@pytest.mark.parametrize("bits", [20, 62, 130, 250])  # W = 1 (small), 2, 5 and 8 words
def test_to_rns_tiles_give_the_one_thread_words(bits):
    """Integers of up to `bits` bits (both signs) to residues over 8 limbs, then an NTT and a
    product: at 2 and 3 threads with tiles of any height (1, the default) or none, the words
    of one thread and of the python device; the template's plan has a tile started by its
    TO_RNS and tiles ran."""
    cpu = cpu_or_skip()
    from ren.backend.cpu_plan import TILE

    lib = _tiles(cpu)
    ring = ren.RingSpec.generate(1 << 11, 8)
    rng = random.Random(bits)

    def compute(device: str, seed: int) -> np.ndarray:
        # new integers every run: a row the tile fails to write keeps another run's words
        rng.seed(bits * 1000 + seed)
        coeffs = [rng.getrandbits(bits) * (-1 if k % 3 == 0 else 1) for k in range(ring.N)]
        return (Poly.from_coefficients(coeffs, ring, device=device).ntt() * 12345).numpy()

    seen: list[replay.Template] = []
    run = replay.Template.run

    def spy(self, params):
        seen.append(self)
        return run(self, params)

    dev = cpu.CpuDevice("cpu")
    default = lib.ren_cpu_plan_tiles()
    replay.Template.run = spy
    try:
        dev.set_threads(1)
        for seed in range(3):  # the eager template gets its runner
            assert np.array_equal(compute("cpu", seed), compute("python", seed))
        runner = next(t.runner for t in reversed(seen) if t.runner_kind == "cpu-compiled")
        flags = [f for seg in runner.segments if seg[0] == "c" for f in seg[5]]
        calls = [fn.name for fn in runner._calls]
        k = calls.index("to_rns")
        assert k + 1 < len(flags) and flags[k + 1] & TILE, (calls, flags)
        ran, seed = 0, 3
        for t in (2, 3):
            dev.set_threads(t)
            for on in (1, default, 0):
                lib.ren_set_plan_tiles(on)
                before = lib.ren_cpu_tiles_run()
                seed += 1
                assert np.array_equal(compute("cpu", seed), compute("python", seed)), (t, on)
                ran += lib.ren_cpu_tiles_run() - before
        assert ran > 0
    finally:
        replay.Template.run = run
        lib.ren_set_plan_tiles(default)
        dev.set_threads(None)


def test_an_encryption_with_a_to_rns_tile_keeps_its_words():
    """Seeded CKKS public-key encryptions (N = 2^11): the words at 2 and 3 threads, tiles of
    one row per thread and none, are the one-thread words."""
    cpu = cpu_or_skip()
    from ren.backend import backend_override
    from ren.ckks import CKKSParams, Encoder, Encryptor, KeyGenerator

    lib = _tiles(cpu)
    p = CKKSParams.fastest_key_switching(N=1 << 11, depth=3, scale_bits=30, first_bits=40,
                                         insecure=True)
    x = np.linspace(-1, 1, p.slots)

    def words() -> list[np.ndarray]:
        with ren.random.seeded(9):
            kg = KeyGenerator(p)
            pk = kg.public_key()
            out = []
            for _ in range(3):
                ct = Encryptor(p, pk).encrypt(Encoder(p).encode(x))
                realize_polys([ct.c0, ct.c1])
                out += [ct.c0.numpy(), ct.c1.numpy()]
        return out

    default = lib.ren_cpu_plan_tiles()
    with backend_override("python", cpu.open_device):
        dev = cpu.CpuDevice("cpu")
        try:
            dev.set_threads(1)
            want = words()
            for t in (2, 3):
                dev.set_threads(t)
                for on in (1, 0):
                    lib.ren_set_plan_tiles(on)
                    got = words()
                    assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
        finally:
            lib.ren_set_plan_tiles(default)
            dev.set_threads(None)
