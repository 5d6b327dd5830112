"""TO_RNS inside a plan team (cpu_ring_plan.c's ren_team_to_rns, cpu_ring_to_rns.c's
torns_team): the team shares out coefficient blocks x limb groups, so a call of one limb (an
encoding at level 0) is split over its coefficients, not run by one thread; the words are the
"python" device's at 1, 2 and 3 threads."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from conftest import cpu_or_skip

import ren

TORNS_BLOCK = 1024  # cpu_ring_to_rns.c



def _tasks(cpu) -> int:
    lib = cpu.ring_library()
    lib.ren_cpu_to_rns_team_tasks.restype = ctypes.c_longlong
    return lib.ren_cpu_to_rns_team_tasks()


@pytest.mark.parametrize("limbs", [1, 3])
def test_a_team_shares_to_rns_out_by_coefficient_blocks(limbs):
    cpu = cpu_or_skip()
    N = 1 << 12
    ring = ren.RingSpec.generate(N, limbs)
    rng = np.random.default_rng(10 + limbs)
    coeffs = rng.integers(-(1 << 62), 1 << 62, N, dtype=np.int64)
    q = np.array(ring.moduli, dtype=np.uint64).reshape(-1, 1)
    wa, wb = ((rng.integers(0, 1 << 62, (limbs, N), dtype=np.uint64) % q).astype(np.uint32)
              for _ in range(2))

    def program(u: ren.Poly, v: ren.Poly, device: str) -> ren.Poly:
        x = (u.ntt() * v.ntt()).intt().ntt()
        pt = ren.Poly.from_coefficients(coeffs, ring, device=device).ntt()
        return (x + pt * v.ntt()).intt()

    want = program(*(ren.Poly.from_residues(w, ring, device="python") for w in (wa, wb)),
                   "python").numpy()
    a, b = (ren.Poly.from_residues(w, ring, device="cpu").realize() for w in (wa, wb))
    jitted = ren.jit(lambda u, v: program(u, v, "cpu"))
    dev = cpu.CpuDevice("cpu")
    blocks = N // TORNS_BLOCK
    try:
        for t in (1, 2, 3):
            dev.set_threads(t)
            jitted(a, b).numpy()  # capture (or the plan of another count)
            before = _tasks(cpu)
            got = jitted(a, b).numpy()
            tasks = _tasks(cpu) - before
            assert np.array_equal(got, want), f"{limbs} limbs, {t} threads"
            if t == 1:
                assert tasks == 0  # no team: the plain call
            else:  # blocks x groups (about 4 tasks a thread), every one run once in the team
                groups = min(limbs, -(-4 * t // blocks)) if blocks < 4 * t else 1
                assert tasks == blocks * groups >= blocks > 1, (t, tasks)
    finally:
        dev.set_threads(None)
