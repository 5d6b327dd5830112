"""`CompiledPlan.team_work` (ren/backend/cpu_plan.py, cpu_ring_plan.c): one replay that also
measures the CPU seconds team threads 0 and 1 spend in their own shares of each call, by their
own clocks (where the work is not divided, whatever the load); the words are the replay's."""

from __future__ import annotations

import numpy as np
from conftest import cpu_or_skip

import ren


def test_team_work_measures_each_call_of_a_stretch():
    cpu = cpu_or_skip()
    from ren.jit import _Call

    N = 1 << 12
    ring = ren.RingSpec.generate(N, 4)
    rng = np.random.default_rng(5)
    q = np.array(ring.moduli, dtype=np.uint64).reshape(-1, 1)
    words = [(rng.integers(0, 1 << 62, (ring.limbs, N), dtype=np.uint64) % q).astype(np.uint32)
             for _ in range(2)]
    a, b = (ren.Poly.from_residues(w, ring, device="cpu").realize() for w in words)

    def chain(u: ren.Poly, v: ren.Poly) -> ren.Poly:
        x = (u.ntt() * v.ntt() + u.ntt()).intt()
        return (x.ntt() * 3).intt()

    jitted = ren.jit(chain)
    dev = cpu.CpuDevice("cpu")
    try:
        dev.set_threads(2)
        want = jitted(a, b).numpy()
        plan = jitted.plans[0]
        tmpl, runner = plan.template, plan.template.runner
        assert any(s[0] == "c" and len(s[5]) >= 2 and all(f & 1 for f in s[5])
                   for s in runner.segments), "no team stretch to measure"
        call = _Call(plan.name, plan.signature, plan.static_argnames, (a, b), {})
        call.realize_inputs()
        with tmpl.lock:
            bound = tmpl._bind(call.buffers(plan.leaf_of_param), tmpl._dynamic)
            out = [bound[x].allocate().array() for x in tmpl._dynamic]
            work = runner.team_work(out, cpu.ring_library())
            got = tmpl._results(bound)
        assert len(work) == runner.calls
        assert all(w0 >= 0 and w1 >= 0 for w0, w1 in work)
        assert sum(w0 + w1 for w0, w1 in work) > 0  # the team's threads did the work
        assert np.array_equal(ren.Poly(got[0]).numpy(), want)
        # set back: a plain replay after it measures nothing and gives the same words
        assert np.array_equal(jitted(a, b).numpy(), want)
    finally:
        dev.set_threads(None)
