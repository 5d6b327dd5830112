"""The cpu plan runner's team (issue 42 §4): on more than one thread a JIT replay runs each
stretch of NTT / INTT / basis conversion / rescale *and elementwise* kernels inside one OpenMP
team that meets at Ren's own barrier between kernels (cpu_ring_team.c, cpu_ring_plan.c), and
kernels with fewer rows than threads share their rows' coefficients out.  The words must be the
"python" device's at every thread count; the counters show the team and the split are used."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from backend_programs import row_step
from conftest import cpu_or_skip
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ren


def _words(ring: ren.RingSpec, seed: int) -> np.ndarray:
    q = np.array(ring.moduli, dtype=np.uint64).reshape(-1, 1)
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 1 << 62, (ring.limbs, ring.N), dtype=np.uint64) % q).astype(np.uint32)


def _program(a: ren.Poly, b: ren.Poly, extra: ren.RingSpec, steps: tuple[int, ...]) -> ren.Poly:
    """A chain of elementwise and ring kernels on a's ring (`steps` picks them), ending with a
    basis conversion onto `extra`'s moduli and a rescale back (one-row kernels when a has one)."""
    x, y = a.ntt(), b.ntt()
    for s in steps:
        x = row_step(x, y, s)
    c = x.intt()
    wide = c.to_ring(ren.RingSpec(c.ring.N, (*c.ring.moduli, *extra.moduli)))
    return wide.rescale(extra.moduli[-1]) * 7 + a.to_ring(
        ren.RingSpec(c.ring.N, (*c.ring.moduli, *extra.moduli[:-1])))


def _counters(cpu) -> tuple[int, int]:
    lib = cpu.ring_library()
    lib.ren_cpu_teams_opened.restype = ctypes.c_longlong
    lib.ren_cpu_team_barriers.restype = ctypes.c_longlong
    return lib.ren_cpu_teams_opened(), lib.ren_cpu_team_barriers()


def _check(limbs: int, N: int, steps: tuple[int, ...], counts=(1, 2, 3)) -> None:
    cpu = cpu_or_skip()
    ring = ren.RingSpec.generate(N, limbs + 2)
    base, extra = ren.RingSpec(N, ring.moduli[:limbs]), ren.RingSpec(N, ring.moduli[limbs:])
    wa, wb = _words(base, limbs), _words(base, limbs + 1)
    ref_a, ref_b = (ren.Poly.from_residues(w, base, device="python") for w in (wa, wb))
    want = _program(ref_a, ref_b, extra, steps).numpy()
    a, b = (ren.Poly.from_residues(w, base, device="cpu").realize() for w in (wa, wb))
    jitted = ren.jit(lambda u, v: _program(u, v, extra, steps))
    dev = cpu.CpuDevice("cpu")
    try:
        for t in counts:
            dev.set_threads(t)
            jitted(a, b).numpy()  # capture (or the plan of another count)
            teams0, _ = _counters(cpu)
            got = jitted(a, b).numpy()
            teams1, _ = _counters(cpu)
            assert np.array_equal(got, want), f"{limbs} limbs, N={N}, {t} threads"
            assert (teams1 > teams0) == (t > 1), (t, teams1 - teams0)
    finally:
        dev.set_threads(None)


def test_replay_in_plan_teams_gives_the_python_words_at_1_2_3_threads():
    """One, two, three and five rows at N = 2^12 (below every old threshold: fewer rows than
    threads, rows split into pieces) and at N = 2^13 (the NTT's own split; four and five rows:
    the rows that do not share out evenly over 2 or 3 threads split, the rest go whole)."""
    for limbs, N in ((1, 1 << 12), (2, 1 << 12), (3, 1 << 13), (5, 1 << 12), (5, 1 << 13),
                     (4, 1 << 13)):
        _check(limbs, N, (0, 1, 2, 3))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(limbs=st.integers(1, 4), log_n=st.integers(11, 13),
       steps=st.lists(st.integers(0, 3), min_size=1, max_size=4))
def test_plan_teams_words_hypothesis(limbs, log_n, steps):
    _check(limbs, 1 << log_n, tuple(steps), counts=(1, 2, 3))


def test_one_row_elementwise_kernels_are_shared_out_in_a_team():
    """A replay of one-row kernels (N = 2^14, below the old 2^16-word threshold) on 2 threads:
    its elementwise kernels run in a team (their libraries count the tasks per team thread:
    8 pieces of the row per call), the second thread takes some of them (it spins long at the
    barriers here, so that it is there when a kernel starts: the pieces go to whichever thread
    asks first), and the team threads meet at the runner's barrier."""
    cpu = cpu_or_skip()
    from ren.backend.cpu_plan import TEAM, team_kernel

    N = 1 << 14
    base = ren.RingSpec.generate(N, 1)
    a, b = (ren.Poly.from_residues(_words(base, s), base, device="cpu").realize()
            for s in (1, 2))

    def one_row(u: ren.Poly, v: ren.Poly) -> ren.Poly:
        x, y = u.ntt(), v.ntt()
        for _ in range(3):
            x = (x * y + x).intt().ntt() - y * 3
        return x.intt()

    jitted = ren.jit(one_row)
    dev = cpu.CpuDevice("cpu")
    try:
        dev.set_threads(2)
        jitted(a, b).numpy()
        runner = jitted.plans[0].template.runner
        team_ew = []  # (library, calls) of the elementwise kernels that run in teams
        team_ew = []  # the elementwise calls in stretches of two or more team kernels
        calls = iter(runner._calls)
        for seg in runner.segments:
            if seg[0] != "c":
                next(calls)
                continue
            run = [next(calls) for _ in range(seg[1])]
            flags = [f & TEAM for f in seg[5]]
            assert flags == [team_kernel(c) for c in run]
            k = 0
            while k < len(run):
                e = k
                while e < len(run) and flags[e]:
                    e += 1
                if e - k >= 2:
                    team_ew.extend(c for c in run[k:e] if c.name.startswith("ren_ew_"))
                k = max(e, k + 1)
        assert team_ew, "no elementwise kernel runs in a team"
        libs = {id(c.owner): c.owner for c in team_ew}.values()
        for lib in libs:
            lib.ren_team_tasks.restype = ctypes.c_longlong

        def tasks(t: int) -> int:
            return sum(lib.ren_team_tasks(t) for lib in libs)

        before = [tasks(t) for t in range(3)]
        teams0, bars0 = _counters(cpu)
        lib = cpu.ring_library()
        spin = lib.ren_cpu_plan_spin()
        lib.ren_set_plan_spin(1 << 20)
        try:
            reps = 0
            while reps < 20 or (tasks(1) == before[1] and reps < 400):  # a loaded machine
                jitted(a, b)
                reps += 1
        finally:
            lib.ren_set_plan_spin(spin)
        teams1, bars1 = _counters(cpu)
        after = [tasks(t) for t in range(3)]
        done = [x - y for x, y in zip(after, before)]
        assert teams1 - teams0 >= reps
        assert bars1 - bars0 >= reps  # at least one barrier between kernels a replay
        # every one-row elementwise call of a team ran as 8 pieces, on threads 0 and 1 only
        assert done[2] == 0
        assert done[0] + done[1] == 8 * len(team_ew) * reps, (done, len(team_ew))
        assert done[1] > 0, f"the second thread took no piece of a one-row kernel: {done}"
        assert np.array_equal(jitted(a, b).numpy(), one_row(
            *(ren.Poly.from_residues(p.numpy(), base, device="python") for p in (a, b))).numpy())
    finally:
        dev.set_threads(None)


def test_team_flags_put_barriers_only_between_dependent_kernels():
    """`team_flags`' dependence analysis on ring calls over views of one arena: a barrier
    before a kernel that reads what an earlier kernel of the interval wrote (RAW), writes what
    one read (WAR) or wrote (WAW), overlapping views included; none between independent
    neighbours; two basis conversions never in one interval; per-run arrays alias each other."""
    from types import SimpleNamespace

    from ren.backend.cpu_plan import BARRIER, TEAM, team_flags

    arena = np.zeros((16, 64), np.uint32)
    A, B, C, X, Y = (arena[2 * i: 2 * i + 2] for i in range(5))

    def ntt(out, inp, name="ntt"):
        return (SimpleNamespace(name=name, nslots=2, owner=None), [out, inp])

    def flags(*calls, patched=None):
        return team_flags(list(calls), patched or [{} for _ in calls])

    T, TB = TEAM, TEAM | BARRIER
    assert flags(ntt(A, X), ntt(B, Y)) == [T, T]  # independent
    assert flags(ntt(A, X), ntt(B, A)) == [T, TB]  # reads what the first wrote
    assert flags(ntt(A, X), ntt(X, Y)) == [T, TB]  # writes what the first read
    assert flags(ntt(A, X), ntt(A, Y)) == [T, TB]  # writes what the first wrote
    assert flags(ntt(arena[0:2], X), ntt(B, arena[1:3])) == [T, TB]  # overlapping views
    assert flags(ntt(arena[0:2], X), ntt(B, arena[2:4])) == [T, T]  # adjacent views
    # the interval since the last barrier: the third touches only the first's input
    assert flags(ntt(A, X), ntt(B, A), ntt(C, X)) == [T, TB, T]
    assert flags(ntt(A, X), ntt(B, Y), ntt(C, A)) == [T, T, TB]  # two back
    bconv = "basis_convert"
    assert flags(ntt(A, X, bconv), ntt(B, Y, bconv)) == [T, TB]  # the team's scratch
    assert flags(ntt(A, X, "hosted"), ntt(B, Y), ntt(C, Y)) == [0, T, T]  # not a team kernel
    assert flags(ntt(A, X), ntt(B, Y, "hosted"), ntt(C, A)) == [T, 0, T]  # a new stretch
    # TO_RNS runs in the team (the runner splits its rows): a barrier only where it depends
    assert flags(ntt(A, X), ntt(B, Y, "to_rns"), ntt(C, A)) == [T, T, TB]
    assert flags(ntt(A, X), ntt(B, Y, "to_rns"), ntt(C, B)) == [T, T, TB]
    # per-run arrays (None until patched): written ones conflict with any other per-run one
    assert flags(ntt(None, X), ntt(None, Y), patched=[{0: 0}, {0: 1}]) == [T, TB]
    assert flags(ntt(A, None), ntt(B, None), patched=[{1: 0}, {1: 1}]) == [T, T]


def test_a_replay_meets_at_the_barriers_its_flags_ask_for():
    """Two independent one-row chains at N = 2^12 on 2 threads: some neighbours run without a
    barrier, and the runner meets exactly at the flagged ones (no kernel here has a barrier
    of its own); the words are the python device's."""
    cpu = cpu_or_skip()
    from ren.backend.cpu_plan import BARRIER, TEAM

    N = 1 << 12
    base = ren.RingSpec.generate(N, 1)
    words = [_words(base, s) for s in (3, 4)]
    a, b = (ren.Poly.from_residues(w, base, device="cpu").realize() for w in words)

    def two_chains(u: ren.Poly, v: ren.Poly) -> ren.Poly:
        x, y = u.ntt(), v.ntt()
        for k in range(3):
            x, y = (x * (k + 3)).intt().ntt(), (y * (k + 5)).intt().ntt()
        return (x * y).intt()

    want = two_chains(*(ren.Poly.from_residues(w, base, device="python") for w in words))
    jitted = ren.jit(two_chains)
    dev = cpu.CpuDevice("cpu")
    try:
        dev.set_threads(2)
        jitted(a, b).numpy()
        runner = jitted.plans[0].template.runner
        expected = 0
        elided = 0
        for seg in runner.segments:
            if seg[0] != "c":
                continue
            flags = list(seg[5])
            for k in range(1, len(flags)):
                if flags[k] & TEAM and flags[k - 1] & TEAM:  # inside a stretch
                    expected += bool(flags[k] & BARRIER)
                    elided += not flags[k] & BARRIER
        assert elided > 0, "every neighbour has a barrier"
        _, bars0 = _counters(cpu)
        reps = 10
        for _ in range(reps):
            got = jitted(a, b).numpy()
        _, bars1 = _counters(cpu)
        assert bars1 - bars0 == reps * expected
        assert np.array_equal(got, want.numpy())
        # the waits per call (CompiledPlan.team_waits): only where the team meets after a call
        from ren.jit import _Call

        plan = jitted.plans[0]
        tmpl = plan.template
        call = _Call(plan.name, plan.signature, plan.static_argnames, (a, b), {})
        call.realize_inputs()
        with tmpl.lock:
            bound = tmpl._bind(call.buffers(plan.leaf_of_param), tmpl._dynamic)
            waits = runner.team_waits([bound[x].allocate().array() for x in tmpl._dynamic],
                                      cpu.ring_library())
        assert len(waits) == runner.calls
        met = []  # per call: whether the team meets after it
        for seg in runner.segments:
            if seg[0] != "c":
                met.append(False)
                continue
            f = list(seg[5])
            met += [k + 1 < len(f) and bool(f[k] & TEAM and f[k + 1] & TEAM and f[k + 1] & BARRIER)
                    for k in range(len(f))]
        assert all(w0 >= 0 and w1 >= 0 for w0, w1 in waits)
        assert all(w == (0.0, 0.0) for w, m in zip(waits, met) if not m)
        assert sum(w0 + w1 for (w0, w1), m in zip(waits, met) if m) > 0
    finally:
        dev.set_threads(None)


def test_basis_conversions_in_a_team_meet_only_between_their_two_loops():
    """The runner gives a stretch's team the largest scratch its basis conversions ask for
    before it opens the team (cpu_ring_plan.c, ren_plan_scratch), so a conversion meets the team
    once (its y rows before the sums read them), not also to grow the scratch: a replay meets
    exactly at the flagged barriers plus one per conversion in a team; the words are the python
    device's (conversions of 1 and 3 rows onto 2 and 4 more moduli, so the scratch sizes differ
    within one stretch)."""
    cpu = cpu_or_skip()
    from ren.backend.cpu_plan import BARRIER, TEAM

    N = 1 << 12
    ring = ren.RingSpec.generate(N, 7)
    small, big = ren.RingSpec(N, ring.moduli[:1]), ren.RingSpec(N, ring.moduli[:3])
    words = [_words(small, 5), _words(big, 6)]

    def convert(u: ren.Poly, v: ren.Poly) -> ren.Poly:
        x = (u * 3).intt().to_ring(ren.RingSpec(N, ring.moduli[:3]))  # 1 row -> 3 rows
        y = (v.intt() * 5).to_ring(ring)  # 3 rows -> 7 rows
        z = (x.ntt() * v).intt().to_ring(ring)
        return ((y + z).rescale(ring.moduli[-1]) * 7).ntt()

    want = convert(ren.Poly.from_residues(words[0], small, device="python").ntt(),
                   ren.Poly.from_residues(words[1], big, device="python").ntt()).numpy()
    a = ren.Poly.from_residues(words[0], small, device="cpu").ntt().realize()
    b = ren.Poly.from_residues(words[1], big, device="cpu").ntt().realize()
    jitted = ren.jit(convert)
    dev = cpu.CpuDevice("cpu")
    try:
        dev.set_threads(2)
        jitted(a, b).numpy()
        runner = jitted.plans[0].template.runner
        expected = conversions = 0
        calls = iter(runner._calls)
        for seg in runner.segments:
            if seg[0] != "c":
                next(calls)
                continue
            flags = list(seg[5])
            names = [next(calls).name for _ in flags]
            for k, f in enumerate(flags):
                if not f & TEAM:
                    continue
                before = k > 0 and bool(flags[k - 1] & TEAM)
                after = k + 1 < len(flags) and bool(flags[k + 1] & TEAM)
                expected += before and bool(f & BARRIER)
                if names[k] == "basis_convert" and (before or after):
                    conversions += 1
        assert conversions >= 3, "the conversions are not in a team"
        expected += conversions
        _, bars0 = _counters(cpu)
        reps = 8
        for _ in range(reps):
            got = jitted(a, b).numpy()
        _, bars1 = _counters(cpu)
        assert bars1 - bars0 == reps * expected, (bars1 - bars0, reps, expected)
        assert np.array_equal(got, want)
    finally:
        dev.set_threads(None)


def test_the_barrier_spins_longer_after_long_kernels_within_its_cap():
    """After its pauses, a waiter at the runner's barrier spins for a share of the seconds it
    worked since the last barrier, at most the cap (cpu_ring_team.c): a multiply at N = 2^16
    waits ~0.1 ms at a barrier (a row of work) and no longer sleeps there, while the
    microsecond kernels of N = 2^12 add next to nothing; share 0 is the pauses alone."""
    cpu = cpu_or_skip()
    lib = cpu.ring_library()
    lib.ren_set_plan_spin_share.argtypes = [ctypes.c_double, ctypes.c_double]
    lib.ren_cpu_plan_spin_share.restype = ctypes.c_double
    lib.ren_cpu_plan_extra_spin.restype = ctypes.c_double
    lib.ren_cpu_plan_extra_spin.argtypes = [ctypes.c_double]
    share = lib.ren_cpu_plan_spin_share()
    try:
        lib.ren_set_plan_spin_share(0.25, 0.5e-3)
        assert lib.ren_cpu_plan_extra_spin(20e-6) == pytest.approx(5e-6)
        assert lib.ren_cpu_plan_extra_spin(1e-3) == pytest.approx(0.25e-3)
        assert lib.ren_cpu_plan_extra_spin(4e-3) == pytest.approx(0.5e-3)  # the cap
        assert lib.ren_cpu_plan_extra_spin(-1.0) == 0.0
        lib.ren_set_plan_spin_share(0.0, 0.5e-3)
        assert lib.ren_cpu_plan_extra_spin(1e-3) == 0.0
        # a replay at 2 threads still gives the python words with a long spin after every kernel
        lib.ren_set_plan_spin_share(4.0, 2e-3)
        _check(3, 1 << 12, (0, 1), counts=(2,))
    finally:
        lib.ren_set_plan_spin_share(share, 0.5e-3)


@pytest.mark.parametrize("limbs", [1, 3, 6])
def test_to_rns_runs_inside_the_team_row_chunks_with_the_python_words(limbs):
    """An encryption's plaintext (TO_RNS of int64 coefficients) between team kernels: on 2 and
    3 threads the runner gives each thread chunks of its rows inside the stretch's team (one
    team a run, not two around a fork of its own), and the words are the "python" device's at
    1, 2 and 3 threads (coefficients near ±2^62, so every word of the packing matters)."""
    cpu = cpu_or_skip()
    N = 1 << 12
    ring = ren.RingSpec.generate(N, limbs)
    rng = np.random.default_rng(limbs)
    coeffs = rng.integers(-(1 << 62), 1 << 62, N, dtype=np.int64)
    wa, wb = _words(ring, 1), _words(ring, 2)

    def program(u: ren.Poly, v: ren.Poly, device: str) -> ren.Poly:
        x = (u.ntt() * v.ntt()).intt().ntt()
        pt = ren.Poly.from_coefficients(coeffs, ring, device=device).ntt()
        return (x + pt * v.ntt()).intt()

    ref = [ren.Poly.from_residues(w, ring, device="python") for w in (wa, wb)]
    want = program(*ref, "python").numpy()
    a, b = (ren.Poly.from_residues(w, ring, device="cpu").realize() for w in (wa, wb))
    jitted = ren.jit(lambda u, v: program(u, v, "cpu"))
    dev = cpu.CpuDevice("cpu")
    try:
        for t in (1, 2, 3):
            dev.set_threads(t)
            jitted(a, b).numpy()  # capture (or the plan of another count)
            teams0, _ = _counters(cpu)
            got = jitted(a, b).numpy()
            teams1, _ = _counters(cpu)
            assert np.array_equal(got, want), f"{limbs} limbs, {t} threads"
            assert teams1 - teams0 == (t > 1), (t, teams1 - teams0)
    finally:
        dev.set_threads(None)
