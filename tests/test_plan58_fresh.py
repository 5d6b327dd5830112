"""New outputs in the cpu plan runner's dependence analysis (ren/backend/cpu_plan.py team_flags,
ren.replay.Patches / fresh_arrays): a template's new output is storage of its run alone, so a
row-local kernel that reads a parameter may join a tile that writes an output (a public-key
encryption: c0 = u·pk0 + ..., then u·pk1 in the same tile, rows still in L2), while an output
and a view of the same output, or two parameters, still count as one array.  The words must be
the one-thread run's; an output provider's arrays must not overlap the run's inputs."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from conftest import cpu_or_skip

import ren
from ren.errors import RealizeError


def _ring_call(name: str, out, src):
    """A stand-in CpuCall of ring kernel `name` (team_flags reads its name, slots, sizes)."""
    from ren.backend.cpu_calls import CpuCall, sizes

    lib = cpu_or_skip().ring_library()
    entry = {"ntt": "ren_cpu_ntt", "intt": "ren_cpu_intt"}[name]
    addr = ctypes.cast(lib[entry], ctypes.c_void_p).value
    N = 1 << 12
    return CpuCall(name, addr, 2, [sizes(N, 4)], lib), [out, src]


def _flags(fresh, reads_index: int, second_writes_index: int | None = None):
    """Flags of [ntt writing run array 0 from a static array, intt reading run array
    `reads_index` and writing a static array (or run array `second_writes_index`)]."""
    from ren.backend.cpu_plan import team_flags, tile_entry

    N = 1 << 12
    a, b = np.zeros((4, N), np.uint32), np.zeros((4, N), np.uint32)
    first, _ = _ring_call("ntt", None, a)
    second, _ = _ring_call("intt", b, None)
    run = [(first, [None, a]), (second, [b if second_writes_index is None else None, None])]
    slots = [{0: 0}, {1: reads_index}]
    if second_writes_index is not None:
        slots[1][0] = second_writes_index
    return team_flags(run, slots, [tile_entry(c) for c, _ in run], fresh)


def test_a_new_output_is_apart_from_the_parameters():
    """A kernel reading a parameter (run array 1) after one writing a new output (run array
    0) needs no barrier and joins its tile; without `fresh`, or with array 1 a view of that
    output, the two may alias and the team meets first."""
    from ren.backend.cpu_plan import BARRIER, TILE

    apart = _flags({0: 0}, reads_index=1)
    assert apart[1] & TILE and not apart[1] & BARRIER
    for fresh in (None, {}, {0: 0, 1: 0}):  # unknown; nothing new; 1 a view of output 0
        flags = _flags(fresh, reads_index=1)
        assert flags[1] & BARRIER and not flags[1] & TILE, fresh


def test_an_output_and_its_views_are_one_array():
    """Run array 2 a view of output 0 (fresh {0: 0, 2: 0}): it may start elsewhere in the
    output, so a kernel reading it meets the team and stays out of the tile; two outputs are
    apart; the output itself read back (index 0) may join (row r is the same row)."""
    from ren.backend.cpu_plan import BARRIER, TILE

    view = _flags({0: 0, 2: 0}, reads_index=2)
    assert view[1] & BARRIER and not view[1] & TILE
    other = _flags({0: 0, 2: 2}, reads_index=2)
    assert not other[1] & BARRIER and other[1] & TILE
    same = _flags({0: 0}, reads_index=0)
    assert same[1] & BARRIER and same[1] & TILE
    # writing a parameter (array 1) after a new output was written: apart, no barrier
    wp = _flags({0: 0}, reads_index=3, second_writes_index=1)
    assert not wp[1] & BARRIER


def _words(ring: ren.RingSpec, seed: int) -> np.ndarray:
    q = np.array(ring.moduli, dtype=np.uint64).reshape(-1, 1)
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 1 << 62, (ring.limbs, ring.N), dtype=np.uint64) % q).astype(np.uint32)


def _encryption_like(u: ren.Poly, p0: ren.Poly, p1: ren.Poly):
    """u·p0 and u·p1 + u·p0 in the NTT domain: an NTT, then two outputs each read beside a
    parameter (the public-key encryption's c0/c1 kernels)."""
    x = u.ntt()
    c0 = x * p0
    return c0, x * p1 + x * 3


def test_a_tile_writing_an_output_takes_the_kernel_after_it():
    """A jitted encryption-like chain at N = 2^12 over 8 rows: every kernel after the NTT is
    in its tile (the second output's kernel reads p1 beside the first output), the run arrays
    that are outputs are `fresh`, tiles run at 2 threads, and the words at 2 and 3 threads
    (tiles on and off) are the one-thread words and the python device's."""
    cpu = cpu_or_skip()
    from ren.backend.cpu_plan import TILE
    from ren.replay import fresh_arrays

    lib = cpu.ring_library()
    lib.ren_cpu_tiles_run.restype = ctypes.c_longlong
    ring = ren.RingSpec.generate(1 << 12, 8)
    args = [ren.Poly.from_residues(_words(ring, s), ring, device="cpu").realize()
            for s in (1, 2, 3)]
    ref = [o.numpy() for o in _encryption_like(
        *(ren.Poly.from_residues(a.numpy(), ring, device="python") for a in args))]
    jitted = ren.jit(_encryption_like)
    dev = cpu.CpuDevice("cpu")
    default = lib.ren_cpu_plan_tiles()
    try:
        dev.set_threads(1)
        want = [o.numpy() for o in jitted(*args)]
        assert all(np.array_equal(w, r) for w, r in zip(want, ref, strict=True))
        template = jitted.plans[0].template
        runner = template.runner
        assert runner is not None
        fresh = fresh_arrays(template._dynamic, template.roles)
        outs = {i for i, b in enumerate(template._dynamic) if template.roles[b] == "output"}
        assert outs and set(fresh) >= outs and all(fresh[i] == i for i in outs)
        assert not any(template.roles[b] == "param" for i, b in enumerate(template._dynamic)
                       if i in fresh)
        flags = [f for seg in runner.segments if seg[0] == "c" for f in seg[5]]
        assert len(flags) >= 3 and all(f & TILE for f in flags[1:]), flags
        for t in (2, 3):
            dev.set_threads(t)
            for on in (default, 0):
                lib.ren_set_plan_tiles(on)
                before = lib.ren_cpu_tiles_run()
                got = [o.numpy() for o in jitted(*args)]
                assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True)), (t, on)
                if t == 2 and on:
                    assert lib.ren_cpu_tiles_run() > before
    finally:
        lib.ren_set_plan_tiles(default)
        dev.set_threads(None)


@pytest.mark.parametrize("overlap", ["input", "each other"])
def test_an_output_provider_may_not_overlap_the_inputs(overlap):
    """`outputs_into` arrays that overlap a run's input or one another: RealizeError (a
    runner that takes outputs for storage of their own could write one before it reads an
    input's last row); arrays apart are used."""
    cpu_or_skip()
    from ren.replay import outputs_into

    ring = ren.RingSpec.generate(1 << 10, 2)
    a, b = (ren.Poly.from_residues(_words(ring, s), ring, device="cpu").realize() for s in (4, 5))
    jitted = ren.jit(lambda u, v: (u + v * 3, u - v))
    want = [o.numpy() for o in jitted(a, b)]

    def bad(shapes):
        if overlap == "input":
            return [_storage(a)] + [np.zeros(s, np.uint32) for s in shapes[1:]]
        one = np.zeros(shapes[0], np.uint32)
        return [one, one]

    with pytest.raises(RealizeError, match="overlaps"), outputs_into(bad):
        jitted(a, b)
    mine = [np.zeros(s, np.uint32) for s in ((2, 1 << 10), (2, 1 << 10))]
    with outputs_into(lambda shapes: mine):
        polys = jitted(a, b)
    assert all(np.array_equal(p.numpy(), w) for p, w in zip(polys, want, strict=True))
    assert all(np.shares_memory(_storage(p), m) for p, m in zip(polys, mine, strict=True))


def _storage(p: ren.Poly) -> np.ndarray:
    """The host array holding a realized cpu Poly's words (not a copy)."""
    from ren.ir import storage_buffer

    return storage_buffer(p.node).array()
