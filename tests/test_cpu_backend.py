"""The compiled "cpu" device (issue 12): C kernels compiled by the system compiler.

* Every program of the differential suite (corpus, CKKS multiply/rotate/conjugate, the
  ckks_basics example) gives NumPy's words exactly when every "python" device is the compiled
  backend; the JIT, CKKS and realize suites themselves run on it with ``--ren-backend cpu``.
* The library kernels (NTT/INTT in their AVX2, scalar-lazy and fully reduced paths, basis
  conversion, exact rescale) against `ren.ring`, on random and edge residues, on the path this
  machine takes by default (tests/test_cpu_isa.py runs every path it has, and checks that a
  wrong NTT is caught on each).
* The graph runner (`CompiledPlan`), the disk cache, OpenMP threads, a missing compiler.

Skipped with a reason when no C compiler is present.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
from backend_programs import PROGRAMS_UNDER_TEST, ckks_basics_example, run_recording, same_words
from hypothesis import given
from hypothesis import strategies as st

import ren
from ren.backend import backend_override, cpu, cpu_build, get_device
from ren.backend import c_host as c_host_mod
from ren.backend.c_host import find_cc
from ren.errors import DeviceError
from ren.kernel import RingCall
from ren.ops import Op
from ren.ring import (
    RingKernel,
    RingSpec,
    divide_round_mont,
    intt,
    ntt,
    ring_convert_mont,
)

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")


def _residues(ring: RingSpec, rng: np.random.Generator, edges: bool = True) -> np.ndarray:
    q = np.array(ring.moduli, dtype=np.uint64).reshape(-1, 1)
    x = rng.integers(0, 1 << 62, (ring.limbs, ring.N), dtype=np.uint64) % q
    if edges:  # 0, 1, q-1 in a few places (the lazy reductions' boundaries)
        pick = rng.random((ring.limbs, ring.N))
        x = np.where(pick < 0.1, q - 1, np.where(pick < 0.15, 0, np.where(pick < 0.2, 1, x)))
    return x.astype(np.uint32)


def _call(kind: RingKernel, N: int, src=(), dst=(), dropped=()) -> cpu.CpuCall:
    fn = cpu.library_call(RingCall(kind, N, tuple(src), tuple(dst), dropped=tuple(dropped)))
    assert fn is not None
    return fn


# -- whole programs against NumPy -----------------------------------------------------------------
@pytest.fixture(scope="module", autouse=True)
def device_sampling():
    """These tests compare the devices' kernels, their RANDOM kernels included: random
    polynomials are sampled by the device, not on the host before the template lookup."""
    with ren.settings.override(REN_DEVICE_SAMPLING=1):
        yield


@pytest.fixture(scope="module")
def numpy_runs():
    ren.random.seed(None)
    return {name: run_recording(fn) for name, fn in PROGRAMS_UNDER_TEST.items()}


def test_every_program_matches_numpy_on_cpu(numpy_runs):
    devices: list[cpu.CpuDevice] = []

    def open_cpu(name: str) -> cpu.CpuDevice:
        dev = cpu.CpuDevice(name)
        dev.prepare(item for _, items in numpy_runs.values() for item in items)
        devices.append(dev)
        return dev

    with backend_override("python", open_cpu):
        got = {name: fn() for name, fn in PROGRAMS_UNDER_TEST.items()}
        runs = [d.compiler_runs for d in devices]
        example = ckks_basics_example()
    bad = [n for n, (want, _) in numpy_runs.items() if not same_words(got[n], want)]
    assert not bad, f"the compiled backend differs from NumPy on {bad}"
    # prepared up front: one compiler run per device (python:1 of device_copy opens its own)
    assert runs and all(r <= 1 for r in runs), runs
    assert same_words(example, ckks_basics_example())


def test_cpu_device_in_the_registry():
    dev = get_device("cpu")
    assert isinstance(dev, cpu.CpuDevice) and dev.allocator is get_device("python").allocator
    ring = RingSpec.generate(64, 3)
    a = ren.Poly.from_coefficients(list(range(64)), ring)
    b = a.to("cpu")
    c = (b.ntt() * b.ntt()).intt()
    assert c.device == "cpu"
    assert np.array_equal(c.numpy(), (a.ntt() * a.ntt()).intt().numpy())
    with pytest.raises(ren.RenError, match="device"):
        (a + b).realize()


# -- library kernels against ren.ring -------------------------------------------------------------
@pytest.mark.parametrize("N", [2, 4, 8, 16, 32, 64, 1024, 16384])
@pytest.mark.parametrize("bits", [30, 31])
def test_ntt_and_intt_match_ren_ring(N, bits):
    """30-bit moduli take the lazy path (AVX2 for N >= 16; above 4096 coefficients the stages
    inside a 16 KiB block run block by block), 31-bit ones the fully reduced one."""
    ring = RingSpec.generate(N, 3, bits=bits)
    x = _residues(ring, np.random.default_rng(N + bits))
    fwd, inv = np.empty_like(x), np.empty_like(x)
    _call(RingKernel.NTT, N, ring.moduli, ring.moduli)([fwd, x])
    _call(RingKernel.INTT, N, ring.moduli, ring.moduli)([inv, x])
    assert np.array_equal(fwd, ntt(x, ring))
    assert np.array_equal(inv, intt(x, ring))
    y = x.copy()  # in place (output = input)
    _call(RingKernel.NTT, N, ring.moduli, ring.moduli)([y, y])
    assert np.array_equal(y, fwd)


def test_ntt_and_intt_on_limb_sets_that_share_moduli_read_each_ones_rows():
    """The library NTT takes a pointer per limb to its modulus' own twiddle row: a limb set that
    is not a prefix (other order, a subset) transforms each limb with its own modulus' rows, and
    a call outlives the caches that made its rows (it keeps them)."""
    from ren.ring.ring_kernels import _power_row

    full = RingSpec.generate(256, 5)
    picked = (full.moduli[4], full.moduli[1], full.moduli[3])
    ring = RingSpec(256, picked)
    x = _residues(ring, np.random.default_rng(7))
    asked = []
    real = RingCall.tables
    with pytest.MonkeyPatch.context() as mp:  # (no stacked (L, N) copies are made for them)
        mp.setattr(RingCall, "tables", lambda self, twiddles=True: asked.append(twiddles) or
                   real(self, twiddles))
        fwd_call = _call(RingKernel.NTT, 256, picked, picked)
        inv_call = _call(RingKernel.INTT, 256, picked, picked)
    assert asked == [False, False]
    _power_row.cache_clear()  # (the calls hold their rows)
    fwd, inv = np.empty_like(x), np.empty_like(x)
    fwd_call([fwd, x])
    inv_call([inv, fwd])
    assert np.array_equal(fwd, ntt(x, ring)) and np.array_equal(inv, x)


@given(st.sampled_from([(8, 2, 30), (16, 4, 30), (64, 3, 31), (32, 5, 30), (16, 6, 20),
                         (8, 5, 31), (256, 4, 30), (512, 10, 31)]),  # (the rescale's blocks:
       st.integers(1, 8), st.integers(0, 2**32 - 1))                  # 128 coefficients)
def test_basis_convert_and_rescale_match_ren_ring(shape, k, seed):
    N, limbs, bits = shape
    k = min(k, limbs - 1)
    ring = RingSpec.generate(N, limbs, bits=bits)
    x = _residues(ring, np.random.default_rng(seed))
    kept = ring.drop_last(k)
    out = np.empty((kept.limbs, N), np.uint32)
    _call(RingKernel.RESCALE, N, ring.moduli, kept.moduli, ring.moduli[-k:])([out, x])
    assert np.array_equal(out, divide_round_mont(x, ring, k))
    # onto a ring sharing some moduli with the source (copies) and adding new ones
    extra = RingSpec.generate(N, limbs + 2, bits=bits).moduli[limbs:]
    dst = RingSpec(N, (*ring.moduli[1:], *extra))
    out = np.empty((dst.limbs, N), np.uint32)
    _call(RingKernel.BASIS_CONVERT, N, ring.moduli, dst.moduli)([out, x])
    assert np.array_equal(out, ring_convert_mont(x, ring, dst))


# -- graph runner, threads, cache, errors ---------------------------------------------------------
def test_jit_plan_runs_as_one_c_loop():
    ring = RingSpec.generate(256, 4)

    @ren.jit
    def f(a, b):
        return ((a * b + a).intt().rescale(ring.moduli[-1:]), (a - b).automorph(5))

    def inputs(seed):
        with ren.random.seeded(seed):
            return (ren.Poly.uniform(ring, device="cpu", domain="ntt").realize(),
                    ren.Poly.uniform(ring, device="cpu", domain="ntt").realize())

    for call in range(3):
        a, b = inputs(call)
        got = [p.numpy() for p in f(a, b)]
        pa, pb = a.to("python"), b.to("python")
        want = [((pa * pb + pa).intt().rescale(ring.moduli[-1:])).numpy(),
                (pa - pb).automorph(5).numpy()]
        assert same_words(got, want)
    (plan,) = f.plans
    assert plan.runner == "cpu-compiled"
    runner = plan.template.runner
    assert isinstance(runner, cpu.CompiledPlan)
    assert [s[0] for s in runner.segments] == ["c"]  # no Python between the kernels
    assert runner.calls == len([u for u in plan.units if u.kind != "view"])


def test_a_host_constant_keeps_the_compiled_runner():
    """A polynomial reduced on "python" and copied to "cpu" (``.to("cpu")``): one memory, so the
    plan still gets the compiled runner (the host calls run between its C loops), and replays
    give the reference words."""
    ring = RingSpec.generate(64, 3)
    coeffs = [(-1) ** i * (i << 40) for i in range(64)]

    @ren.jit
    def f(a):
        return a * ren.Poly.from_coefficients(coeffs, ring).to("cpu").ntt() + 1

    for seed in range(2):
        with ren.random.seeded(seed):
            a = ren.Poly.uniform(ring, device="cpu", domain="ntt").realize()
        want = a.to("python") * ren.Poly.from_coefficients(coeffs, ring).ntt() + 1
        assert same_words([f(a).numpy()], [want.numpy()])
    (plan,) = f.plans
    assert {b.device for b in plan.template.roles} == {"cpu", "python"}
    assert plan.runner == "cpu-compiled"
    assert "py" in [s[0] for s in plan.template.runner.segments]


def test_compiled_plan_segments_and_profile():
    """Python calls (a host copy, say) split the C loop; patches reach both kinds."""
    ring = RingSpec.generate(64, 2)
    dev = get_device("cpu")

    ntt_fn = _call(RingKernel.NTT, 64, ring.moduli, ring.moduli)
    intt_fn = _call(RingKernel.INTT, 64, ring.moduli, ring.moduli)
    mid = np.empty((2, 64), np.uint32)
    copy = np.empty((2, 64), np.uint32)

    def py_copy(arrays):
        np.copyto(arrays[0], arrays[1])

    calls = [(ntt_fn, [mid, None]), (py_copy, [copy, mid]), (intt_fn, [None, copy])]
    runner = dev.graph(calls, [(0, 1, 0), (2, 0, 1)])
    assert isinstance(runner, cpu.CompiledPlan)
    assert [s[0] for s in runner.segments] == ["c", "py", "c"]
    x = _residues(ring, np.random.default_rng(3))
    res = np.empty_like(x)
    runner([x, res])
    assert np.array_equal(mid, ntt(x, ring)) and np.array_equal(res, x)
    # the runner keeps no pointer to or reference of a run's arrays once it returns
    c_vectors = [v for seg in runner.segments if seg[0] == "c" for v in seg[4]]
    assert c_vectors[0][1] is None and c_vectors[1][0] is None
    assert all(seg[2][1] is mid for seg in runner.segments if seg[0] == "py")
    times = runner.profile([x, res])
    assert len(times) == 3 and all(t >= 0 for t in times)


def test_openmp_threads_give_the_same_words():
    ring = RingSpec.generate(1024, 8)
    x = _residues(ring, np.random.default_rng(9))
    one, two = np.empty_like(x), np.empty_like(x)
    fn = _call(RingKernel.NTT, 1024, ring.moduli, ring.moduli)
    dev = get_device("cpu")
    try:
        dev.set_threads(2)
        fn([two, x])
    finally:
        dev.set_threads(None)
    fn([one, x])
    assert np.array_equal(one, two) and np.array_equal(one, ntt(x, ring))


@pytest.mark.parametrize("limbs", [1, 3])
def test_few_limbs_split_over_two_threads_give_the_same_words(limbs):
    """Fewer limbs than threads (or 3 on 2): elementwise kernels loop over (limb, piece) tasks
    and the ring kernels split a limb's stages and rows (TO_RNS its blocks and limb groups),
    and the hosted RANDOM kernel shares its grid's blocks out — NumPy's words, on 1 and 2
    threads, for a fused inner product, an automorphism (staged loads), NTT/INTT round trips,
    device-sampled uniform, ternary and Gaussian polynomials and 2-word coefficients brought
    to RNS."""
    N = 1 << 15 if limbs == 3 else 1 << 16  # >= 2^16 words: above the OpenMP threshold
    ring = RingSpec.generate(N, limbs)

    big = [(-1) ** c * (c * 0x9E3779B97F4A7C15 + 12345) for c in range(N)]  # 2-word TO_RNS

    def run(kind: str) -> list[np.ndarray]:
        with ren.random.seeded(11):
            ps = [ren.Poly.uniform(ring, domain="ntt", device=kind) for _ in range(4)]
            small = ren.Poly.ternary(ring, device=kind) + ren.Poly.gaussian(ring, device=kind)
        dot = ps[0] * ps[1] + ps[2] * ps[3]
        return [dot.numpy(), (dot - ps[0]).automorph(5).numpy(),
                (ps[0].intt() + ps[1].intt()).ntt().numpy(), small.numpy(),
                ren.Poly.from_coefficients(big, ring, device=kind).numpy()]

    want = run("python")
    dev = get_device("cpu")
    got = {}
    for t in (2, 1):  # libraries loaded during the run take the setting, loaded ones set_threads
        try:
            with ren.settings.override(REN_CPU_THREADS=t):
                dev.set_threads(t)
                got[t] = run("cpu")
        finally:
            dev.set_threads(None)
    assert same_words(got[2], want) and same_words(got[1], want)
    assert any(name.startswith("ren_ew_") for name in dev.entries), "no kernel ran on 'cpu'"
    assert dev.hosted and all(fn.__name__.startswith("ren_hostp_") for fn in dev.hosted.values())


def test_disk_cache_skips_the_compiler(tmp_path):
    script = ("import ren, numpy as np\n"
              "from ren.backend import c_host\n"
              "r = ren.RingSpec.generate(32, 2)\n"
              "a = ren.Poly.from_coefficients(list(range(32)), r, device='cpu')\n"
              "print(int(((a.ntt() * a.ntt()).intt() + 3).numpy().sum()), "
              "c_host.compiler_invocations)\n")
    # the cache starts with this process's ring library (and its digest), so the first run
    # compiles only its kernels (~5 s of compiler CPU less); the second loads both from disk
    from ren.backend.cpu_cache import cached_library

    isa = cpu.resolve_isa(None)
    ring = cached_library(cpu.ring_source(isa), cpu.isa_flags(isa), cpu.cache_dir())
    (tmp_path / "cpu").mkdir()
    for path in (ring, os.path.splitext(ring)[0] + ".sha256"):
        shutil.copy2(path, tmp_path / "cpu")
    env = {**os.environ, "REN_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, check=True).stdout.split() for _ in range(2)]
    assert runs[0][0] == runs[1][0]
    assert int(runs[0][1]) == 1 and int(runs[1][1]) == 0, runs  # its kernels, then nothing
    assert list((tmp_path / "cpu").glob("*.so"))


def test_a_large_build_compiles_in_parallel_units(numpy_runs, monkeypatch, tmp_path):
    """Past KERNELS_PER_UNIT new kernels per core, one build becomes one compiler run per core
    side by side (a first bootstrapping compiles ~2,000 kernels): every kernel is taken from
    exactly one unit's library, and the words are NumPy's."""
    from ren.backend import c_host

    monkeypatch.setattr(cpu, "KERNELS_PER_UNIT", 2)
    monkeypatch.setattr(cpu.os, "sched_getaffinity", lambda _: {0, 1, 2})
    monkeypatch.setattr(cpu, "cache_dir", lambda: str(tmp_path))  # cold: every unit compiles
    items = [item for _, its in numpy_runs.values() for item in its]
    dev = cpu.CpuDevice("cpu:split")
    before = c_host.compiler_invocations  # (the ring library may have been built just now)
    compiled = dev.prepare(items)
    # one run per core for each kind of kernel (its own flags: cpu_build.kernel_kind), fewer
    # for a kind with fewer than KERNELS_PER_UNIT new kernels a core
    kinds = Counter(cpu_build.kernel_kind(n) for n in dev.entries.keys() | dev.hosted.keys())
    units = sum(max(1, min(3, n // 2)) for n in kinds.values())
    assert compiled >= 6 and c_host.compiler_invocations - before == units
    assert dev.compiler_runs == 1 and len(dev._libs) == units
    names = [n for _, ns in dev._libs.values() for n in ns]
    assert len(names) == len(set(names)) == compiled
    assert set(names) == dev.entries.keys() | dev.hosted.keys()
    devices = []

    def open_cpu(name: str) -> cpu.CpuDevice:
        d = cpu.CpuDevice(name)
        d.prepare(items)
        devices.append(d)
        return d

    with backend_override("python", open_cpu):
        got = {name: fn() for name, fn in PROGRAMS_UNDER_TEST.items()}
    assert all(same_words(got[n], want) for n, (want, _) in numpy_runs.items())
    assert devices and all(len(d._libs) == units for d in devices if d.compiler_runs)


def test_no_compiler_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(cpu_build, "find_cc", lambda: None)  # where cpu_flags looks it up
    cpu_build.cpu_flags.cache_clear()
    try:
        with pytest.raises(DeviceError, match=r"C compiler.*'python'"):
            cpu.CpuDevice("cpu:7")
    finally:
        monkeypatch.undo()
        cpu_build.cpu_flags.cache_clear()
    assert c_host_mod.find_cc() is not None
    ring = RingSpec.generate(16, 1)
    assert ren.Poly.from_coefficients([1] * 16, ring).ntt().numpy().shape == (1, 16)


def test_automorphism_index_map_is_a_table_in_the_loop_dialect():
    """The C dialect evaluates a non-affine map of the coefficient index (an automorphism's)
    once, into a table; the CUDA dialect keeps computing it per thread.  Both give NumPy's
    words (the differential programs above include rotations)."""
    from ren.backend.render_c import CUDA, C, render_program
    from ren.schedule import schedule

    ring = RingSpec.generate(64, 2)
    a = ren.Poly.from_coefficients(list(range(64)), ring, device="cpu").ntt().realize()
    b = a.automorph(5)
    items = [i for i in schedule([b.node]) if i.kind == "elementwise"]
    (item,) = items
    c_src = render_program(item, C).kernels[0].source
    cuda_src = render_program(item, CUDA).kernels[0].source
    assert "ren_brev" not in c_src and "[g1]" in c_src
    assert "ren_brev" in cuda_src
    assert np.array_equal(b.numpy(), a.to("python").automorph(5).numpy())


def test_large_tables_are_parameters_so_rotations_share_a_kernel():
    """A coefficient map of EXTERNAL_TABLE entries or more is a kernel parameter, not an array
    in the source: two automorphisms render to one source (one compiled function), each call
    carries its own map, and both give the reference words; a smaller ring keeps its map inline."""
    from ren.backend import elementwise_c
    from ren.backend.render_c import C, render_program
    from ren.schedule import schedule

    def render(N: int, k: int):
        ring = RingSpec.generate(N, 2)
        a = ren.Poly.from_coefficients(list(range(N)), ring, device="cpu").ntt().realize()
        b = a.automorph(k)
        (item,) = [i for i in schedule([b.node]) if i.kind == "elementwise"]
        want = a.to("python").automorph(k).numpy()
        return render_program(item, C), b, want

    assert elementwise_c.EXTERNAL_TABLE <= 64
    (p5, b5, want5), (p3, b3, want3) = render(64, 5), render(64, 3)
    assert p5.kernels[0].source == p3.kernels[0].source and p5.kernels[0].name == p3.kernels[0].name
    # (the other parameters are one-entry-per-limb tables: the limb count, moduli ...)
    (t5,), (t3,) = ([t for t in p.tables.values() if len(t) == 64] for p in (p5, p3))
    assert not np.array_equal(t5, t3) and p5.tables["t0"] is t5
    assert ("table", "t0") in p5.launches[0].args
    assert "t0[g1]" in p5.kernels[0].source and "REN_CONST i64" not in p5.kernels[0].source
    assert np.array_equal(b5.numpy(), want5) and np.array_equal(b3.numpy(), want3)
    small, b, want = render(16, 5)
    assert all(len(t) < 16 for t in small.tables.values()) and "[16] = {" in small.kernels[0].source
    assert np.array_equal(b.numpy(), want)


def test_block_preserving_maps_are_the_automorphisms_ntt_maps():
    """`ren_permute`'s vector paths need every aligned block of 16 (and 8) map entries to point
    into one aligned block: true for every NTT-domain automorphism map (rotations and the
    conjugation), false for a shuffled map, for the coefficient-domain map and below a tile."""
    from ren.backend.elementwise_c import STAGE_TILE, _block_preserving
    from ren.ring.automorph import automorph_coeff_map, automorph_ntt_map

    rng = np.random.default_rng(4)
    for N in (STAGE_TILE, 1024, 1 << 16):
        gs = range(1, 2 * N, 2) if N <= 1024 else [int(g) | 1 for g in rng.integers(1, 2 * N, 40)]
        assert all(_block_preserving(automorph_ntt_map(N, g)) for g in gs)
        assert not _block_preserving(rng.permutation(N).astype(np.uint32))
        assert not _block_preserving(automorph_coeff_map(N, 5)[0].astype(np.uint32))
    assert _block_preserving(automorph_ntt_map(STAGE_TILE // 2, 5)) is False
    # not a whole number of tiles (no ring has such a length, but the check must not raise)
    assert _block_preserving(np.arange(STAGE_TILE + 72, dtype=np.uint32)) is False


def _staged_program(build, N: int):
    """(the C program of the one elementwise kernel of build(a, k) on "cpu", its words, the
    words of the same graph on "python")."""
    from ren.backend.render_c import C, render_program
    from ren.schedule import schedule

    big = RingSpec.generate(N, 5)
    with ren.random.seeded(2):
        a = ren.Poly.uniform(big.sub(0, 3), device="cpu", domain="ntt").realize()
        k = ren.Poly.uniform(big, device="cpu", domain="ntt").realize()
    out = build(a, k)
    items = [i for i in schedule([out.node]) if i.kind == "elementwise"]
    return ([render_program(i, C) for i in items], out.numpy(),
            build(a.to("python"), k.to("python")).numpy())


def test_automorphism_reads_are_staged_through_ren_permute():
    """A load through an automorphism's map runs in tiles of STAGE_TILE coefficients, each
    tile's permuted rows first copied to the stack by ren_permute and then read in order: one
    buffer per (row, map) pair (two reads of one rotation share it); the words are NumPy's.
    Below a tile the map is read directly."""
    from ren.backend.elementwise_c import STAGE_TILE

    def two_rotations(a, k):
        ring = a.ring
        b = a * k.to_ring(ring)
        return a.automorph(5) * b.automorph(5) + a.automorph(5) + a.automorph(2 * ring.N - 1)

    (prog,), got, want = _staged_program(two_rotations, 2 * STAGE_TILE)
    src = prog.kernels[0].source
    assert np.array_equal(got, want)
    assert src.count("ren_permute(") == 3  # a at 5, b's buffer at 5, a at 2N - 1
    assert f"g1t += {STAGE_TILE}" in src and "b2[g1 - g1t]" in src and "b3[" not in src
    (small,), got, want = _staged_program(two_rotations, STAGE_TILE // 2)
    assert np.array_equal(got, want) and "ren_permute(" not in small.kernels[0].source


def test_staged_reads_of_concatenated_rows():
    """A rotation of a mod-up (a CONCAT of the kept rows and the converted ones) stages each
    row class's reads from the buffer its rows come from, at the row its limb maps to."""
    from ren.backend.elementwise_c import STAGE_TILE

    def rotated_mod_up(a, k):
        return a.intt().to_ring(k.ring).ntt().automorph(25) * k

    progs, got, want = _staged_program(rotated_mod_up, 2 * STAGE_TILE)
    assert np.array_equal(got, want)
    (src,) = [p.kernels[0].source for p in progs if "ren_permute(" in p.kernels[0].source]
    assert "switch" in src and src.count("ren_permute(") == 2


def test_concat_rows_get_one_inner_loop_per_row_class():
    """A kernel reading a CONCAT (the mod-up's kept and converted rows) is rendered with one
    inner loop per class of limbs, each loading only from the buffer its limbs come from; the
    words are NumPy's (also checked for the whole corpus above)."""
    from ren.backend.render_c import C, render_program
    from ren.corpus import build
    from ren.schedule import schedule

    outs = list(build("keyswitch_ntt"))
    items = [i for i in schedule([o.node for o in outs]) if i.kind == "elementwise"]
    sources = [render_program(i, C).kernels[0].source for i in items]
    switched = [s for s in sources if "switch (" in s]
    assert switched, "no kernel of keyswitch_ntt reads a CONCAT"
    for src in switched:
        for case in src.split("case ")[1:]:  # no select between two loads inside a case
            assert " ? " not in case.split("break;")[0]


@pytest.mark.parametrize("bits", [20, 30, 31])
@pytest.mark.parametrize("terms", [3, 5, 9, 20, 40])
def test_fused_inner_products_match_numpy(bits, terms):
    """Sums of 3+ products under one modulus render as 64-bit sums: one sum and one Montgomery
    reduction while k·q < 2^32 (k = 2 for 31-bit moduli, 4 for 30-bit, 4095 for 20-bit), else
    sums of k terms with k·q² < 2^64 (4 at 31 bits, 16 at 30, at most 32) reduced by
    ren_redc64; the words are NumPy's, with edge residues (q - 1) everywhere too (the largest
    sums)."""
    from ren.backend.render_c import C, render_program
    from ren.schedule import schedule

    ring = RingSpec.generate(256, 3, bits=bits)
    rng = np.random.default_rng(terms * 100 + bits)
    for edge in (False, True):
        xs = []
        for _ in range(2 * terms):
            r = _residues(ring, rng)
            if edge:
                r = np.array(ring.moduli, dtype=np.uint32).reshape(-1, 1) - 1 + 0 * r
            xs.append(r)
        polys = {dev: [ren.Poly.from_residues(x, ring, "ntt", device=dev) for x in xs]
                 for dev in ("python", "cpu")}
        outs = {}
        for dev, ps in polys.items():
            acc = ps[0] * ps[1]
            for i in range(1, terms):
                acc = acc + ps[2 * i] * ps[2 * i + 1]
            outs[dev] = acc
        items = [i for i in schedule([outs["cpu"].node]) if i.kind == "elementwise"]
        text = "".join(render_program(i, C).kernels[0].source for i in items)
        long = terms > ((1 << 32) - 1) // max(ring.moduli)
        assert ("ren_redc64((u64)" in text) == long and ("ren_redc((u64)" in text) != long
        if long:
            per_sum = min(32, ((1 << 64) - 1) // max(ring.moduli) ** 2)
            assert text.count("ren_redc64((u64)") == -(-terms // per_sum)
        assert np.array_equal(outs["cpu"].numpy(), outs["python"].numpy())


@pytest.mark.parametrize("shape", [(16, 2, 31), (16, 3, 31), (16, 4, 30), (16, 5, 30),
                                   (16, 9, 30), (16, 6, 20), (16, 20, 30), (16, 33, 31),
                                   (16, 40, 20), (1024, 18, 30)])
def test_basis_convert_at_the_largest_sums(shape):
    """The conversion's 64-bit chunk sums at their bound: every y_i = q_i - 1 and every table
    entry M = p - 1 (crafted tables: qhat_inv = R mod q_i makes y_i the input), against Python
    ints.  One term too many per chunk would overflow p·2^32 (one-REDC sums of up to 3 terms)
    or 2^64 (the longer sums: 8 terms for 30-bit inputs and 31-bit outputs, at most 32; 40
    limbs of 20 bits make two sums; N = 1024 spans two blocks of coefficients)."""
    N, limbs, bits = shape
    src = RingSpec.generate(N, limbs, bits=bits).moduli
    dst = RingSpec.generate(N, limbs + 2, bits=31).moduli[limbs:]
    R = 1 << 32
    t = RingCall(RingKernel.BASIS_CONVERT, N, src, dst).tables()
    crafted = [np.array([N, limbs, len(dst)], np.int64), t["src_q"], t["src_qneg"],
               np.array([R % q for q in src], np.uint32), t["q"], t["qneg"],
               np.array([[p - 1] * limbs for p in dst], np.uint32),
               np.full(len(dst), -1, np.int64)]
    fn = cpu.CpuCall("bconv", ctypes.cast(cpu.ring_library().ren_cpu_bconv, ctypes.c_void_p).value,
                     2, crafted)
    x = np.repeat(np.array([q - 1 for q in src], np.uint32).reshape(-1, 1), N, axis=1)
    out = np.empty((len(dst), N), np.uint32)
    fn([out, x])
    want = [sum((q - 1) * (p - 1) for q in src) * pow(R, -1, p) % p for p in dst]
    assert out[:, 0].tolist() == want and (out == out[:, :1]).all()


def test_compiler_flags_fall_back(monkeypatch):
    """A compiler that rejects -march=native or has no OpenMP still gets a working flag set."""
    cpu_build.cpu_flags.cache_clear()
    try:
        monkeypatch.setattr(cpu_build, "_builds", lambda cc, flags, src: "-march=native"
                            not in flags and "-fopenmp" not in flags)
        flags = cpu_build.cpu_flags()
        assert "-march=native" not in flags and "-fopenmp" not in flags and "-O3" in flags
        monkeypatch.undo()
        cpu_build.cpu_flags.cache_clear()
        assert "-march=native" in cpu_build.cpu_flags()  # this machine's compiler takes it
    finally:
        cpu_build.cpu_flags.cache_clear()


def test_ckks_on_the_cpu_device_through_params():
    """CKKSParams(device="cpu"): keys, encryptions and results live on "cpu"; with the same
    seeded randomness every word equals the "python" run, and loads() puts data on the
    params' device.  An unknown device is a DeviceError at construction."""
    from ckks_helpers import make_params

    from ren.ckks import Decryptor, Encoder, Encryptor, Evaluator, KeyGenerator
    from ren.ckks.serialize import dumps, loads

    def run(device: str):
        params = make_params(N=64, depth=2, scale_bits=40, first_bits=55, insecure=True,
                             device=device)
        with ren.random.seeded(5):
            kg = KeyGenerator(params)
            ev = Evaluator(params, kg.relin_key(), kg.rotation_keys([1]))
            enc = Encoder(params)
            ct = Encryptor(params, kg.public_key()).encrypt(enc.encode(np.linspace(-1, 1, 32)))
        out = ev.rotate(ev.rescale(ev.multiply(ct, ct)), 1).realize()
        back = loads(dumps(out), params)
        decoded = np.asarray(enc.decode(Decryptor(params, kg.secret_key()).decrypt(back)))
        return params, out, back, decoded

    p_cpu, out_cpu, back_cpu, dec_cpu = run("cpu")
    _, out_py, _, dec_py = run("python")
    assert {c.device for c in out_cpu.parts} == {"cpu"} == {c.device for c in back_cpu.parts}
    for a, b in zip(out_cpu.parts, out_py.parts):
        assert np.array_equal(a.numpy(), b.numpy())
    assert np.array_equal(dec_cpu, dec_py)
    assert np.max(np.abs(dec_cpu.real - np.roll(np.linspace(-1, 1, 32) ** 2, -1))) < 1e-3
    assert p_cpu.device == "cpu"
    with pytest.raises(DeviceError, match="tpu"):
        make_params(N=64, depth=2, scale_bits=40, first_bits=55, insecure=True, device="tpu")


def test_two_memories_get_no_graph_runner():
    """A jitted function copying between two backends of two memories (here a NumPy device
    class with its own allocator) replays unit by unit: no runner spans them.  Devices of one
    memory ("python" and "python:1") share the runner of the device running most kernels."""
    from ren.backend.numpy_backend import HostAllocator, NumpyDevice
    from ren.device import register_device, unregister_device

    class OtherBackend(NumpyDevice):
        pass

    other = HostAllocator()
    register_device("othermem", lambda name: OtherBackend(name, other))
    try:
        ring = RingSpec.generate(16, 2)

        @ren.jit
        def f(a):
            return (a + 1).to("othermem") * 3

        @ren.jit
        def g(a):
            return (a + 1).to("python:1") * 3 + 2

        with ren.random.seeded(3):
            a = ren.Poly.uniform(ring).realize()
        want = ((a + 1) * 3).numpy()
        for _ in range(2):
            assert np.array_equal(f(a).numpy(), want)
            assert np.array_equal(g(a).numpy(), ((a + 1) * 3 + 2).numpy())
        assert f.plans[0].runner == "exec-units"
        (plan,) = g.plans
        assert plan.runner == "numpy-prebound"
        devices = {u.bufs[0].device for u in plan.units if u.kind == "compute"}
        assert devices == {"python", "python:1"}
    finally:
        unregister_device("othermem")


def test_coefficients_for_cpu_are_reduced_by_cpu():
    """`Poly.from_coefficients(..., device="cpu")`: the packed words are a "cpu" buffer (host
    memory, no copy) and TO_RNS is the device's compiled kernel, with the reference's words;
    a device with memory of its own, or not available here, keeps the host reduction and a COPY
    (lazy, as before)."""
    from ren.schedule import schedule

    ring = RingSpec.generate(64, 3)
    coeffs = [(-1) ** i * (i << 50) + i for i in range(64)]
    p = ren.Poly.from_coefficients(coeffs, ring, device="cpu")
    assert p.node.op is Op.TO_RNS and p.node.src[0].arg.device == "cpu"
    plan_kinds = [k.kind for k in schedule(p.ntt())]
    assert "to_rns" in plan_kinds and "copy" not in plan_kinds
    want = ren.Poly.from_coefficients(coeffs, ring).ntt()
    assert same_words([p.ntt().numpy()], [want.numpy()])
    far = ren.Poly.from_coefficients(coeffs, ring, device="cuda")  # own memory, or absent
    assert far.node.op is Op.COPY and far.node.src[0].op is Op.TO_RNS


@given(data=st.data(), words=st.integers(1, 4))
def test_compiled_to_rns_matches_big_integers(data, words):
    """The "cpu" TO_RNS kernel (Horner over the words, the two's-complement wrap) against
    Python's big integers: c mod q_i for signed coefficients of up to 32·words bits, including
    0, ±1, the extremes of the two's-complement range and multiples of q."""
    ring = RingSpec.generate(16, 3)
    top = 1 << (32 * words - 1)
    edge = st.sampled_from([0, 1, -1, top - 1, -top, -top + 1, ring.moduli[0],
                            -ring.moduli[1] * 5, (1 << 31) - 1])
    coeffs = data.draw(st.lists(st.one_of(st.integers(-top, top - 1), edge), min_size=16,
                                max_size=16))
    coeffs[-1] = top - 1 if words > 1 else coeffs[-1]  # the widest value sets the word count
    p = ren.Poly.from_coefficients(coeffs, ring, device="cpu")
    assert p.node.src[0].arg.shape[1] >= words or words == 1
    got = p.numpy()
    assert got.tolist() == [[c % q for c in coeffs] for q in ring.moduli]


def test_set_threads_pins_the_libraries_loaded_later():
    """set_threads(n) reaches the libraries loaded already and those loaded after it (they took
    REN_CPU_THREADS, so a script that only called set_threads ran new kernels on one thread);
    set_threads(None) goes back to the setting."""
    from ren.backend.cpu import _live

    dev = get_device("cpu")
    ring = RingSpec.generate(2048, 7)  # a ring no other test uses: its kernels load now
    try:
        dev.set_threads(3)
        with ren.random.seeded(5):
            a, b = (ren.Poly.uniform(ring, domain="ntt", device="cpu") for _ in range(2))
        (a * b + a * 3).realize()
        assert _live and all(lib["ren_get_threads"]() == 3 for lib in list(_live))
    finally:
        dev.set_threads(None)
    assert all(lib["ren_get_threads"]() == ren.settings.get("REN_CPU_THREADS")
               for lib in list(_live))
