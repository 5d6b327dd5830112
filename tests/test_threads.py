"""Thread safety: ring kernels, realization and node construction called from several threads.

Every test runs its workers with a tiny GIL switch interval so that threads interleave inside
the kernels (without it a race may hide for many runs), and compares every result with a
single-threaded or big-integer reference.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from conftest import crt, negacyclic_mul

import ren
from ren.node import Node
from ren.ops import DType, Op
from ren.ring import get_tables, intt, ntt
from ren.runtime import record_units

THREADS = 4


@contextlib.contextmanager
def _fast_switching() -> Iterator[None]:
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def _run_threads(work: Callable[[int], object], n: int = THREADS) -> list:
    """work(i) in n threads started together; their results, or the first exception raised."""
    barrier = threading.Barrier(n, timeout=60)  # a stuck worker fails the test, not hangs it
    results: list = [None] * n
    errors: list[BaseException] = []

    def body(i: int) -> None:
        try:
            barrier.wait()
            results[i] = work(i)
        except BaseException as e:  # re-raised in the main thread below
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    with _fast_switching():
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if errors:
        raise errors[0]
    return results


# -- ring kernels -------------------------------------------------------------------------------
@pytest.mark.parametrize("N,limbs,bits", [(1 << 10, 3, 30), (1 << 9, 2, 31)],
                         ids=["lazy", "exact"])
def test_ntt_intt_from_threads_match_single_threaded(N, limbs, bits):
    ring = ren.RingSpec.generate(N, limbs, bits=bits)
    q = get_tables(ring).q64
    rng = np.random.default_rng(N + bits)
    inputs = [(rng.integers(0, 2**32, (limbs, N), dtype=np.uint64) % q).astype(np.uint32)
              for _ in range(THREADS)]
    expected = [ntt(a, ring) for a in inputs]  # single-threaded
    for a, e in zip(inputs, expected, strict=True):
        assert np.array_equal(intt(e, ring), a)

    def work(i: int) -> int:
        wrong = 0
        for _ in range(60):
            fwd = ntt(inputs[i], ring)
            back = intt(fwd, ring)
            wrong += (not np.array_equal(fwd, expected[i])) + (not np.array_equal(back, inputs[i]))
        return wrong

    assert _run_threads(work) == [0] * THREADS


# -- realization ----------------------------------------------------------------------------------
RING = ren.RingSpec.generate(16, 3)


def _coeffs(seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    return [int(x) for x in rng.integers(-(2**40), 2**40, RING.N)]


def _reference_product_plus(a: list[int], b: list[int], c: int) -> list[int]:
    """Coefficients of a·b + c·a in [0, Q): schoolbook per modulus, then CRT."""
    rows = []
    for q in RING.moduli:
        ab = negacyclic_mul([x % q for x in a], [x % q for x in b], q)
        rows.append([(u + c * x) % q for u, x in zip(ab, a, strict=True)])
    return crt(rows, RING.moduli)


def test_concurrent_realization_of_different_polys():
    seeds = [(2 * i, 2 * i + 1, i + 3) for i in range(THREADS * 6)]
    expected = [_reference_product_plus(_coeffs(s), _coeffs(t), c) for s, t, c in seeds]

    def work(i: int) -> list[bool]:
        ok = []
        for k in range(i, len(seeds), THREADS):
            s, t, c = seeds[k]
            a = ren.Poly.from_coefficients(_coeffs(s), RING)
            b = ren.Poly.from_coefficients(_coeffs(t), RING)
            p = (a * b + a.ntt() * c).intt()
            got = crt(p.tolist(), RING.moduli)
            ok.append(got == expected[k])
        return ok

    results = _run_threads(work)
    assert all(all(r) for r in results), results


def test_concurrent_realization_of_overlapping_graphs():
    a = ren.Poly.from_coefficients(_coeffs(100), RING)
    b = ren.Poly.from_coefficients(_coeffs(101), RING)
    shared = a * b  # NTT(a), NTT(b) and the product: computed once, by whichever thread is first
    outs = [(shared + shared * (i + 3)).intt() for i in range(THREADS)]
    ab = _reference_product_plus(_coeffs(100), _coeffs(101), 0)
    expected = [[(x * (i + 4)) % RING.Q for x in ab] for i in range(THREADS)]

    def work(i: int) -> tuple[list[int], int]:
        with record_units() as units:  # this thread's units only
            outs[i].realize(shared)
        got = crt(outs[i].tolist(), RING.moduli)
        return got, sum(u.item.kind == "ntt" for u in units)

    results = _run_threads(work)
    assert [got for got, _ in results] == expected
    assert sum(n for _, n in results) == 2  # NTT(a) and NTT(b), once in all
    assert shared.is_realized
    assert crt(shared.intt().tolist(), RING.moduli) == ab


def test_realizing_one_poly_from_many_threads_runs_it_once(monkeypatch):
    import ren.replay as replay

    calls = []
    lock = threading.Lock()
    run = replay.run_exec_units

    def counting(*args, **kw):
        with lock:
            calls.append(1)
        return run(*args, **kw)

    monkeypatch.setattr(replay, "run_exec_units", counting)
    a = ren.Poly.from_coefficients(_coeffs(7), RING)
    p = a * a + 5
    results = _run_threads(lambda i: p.tolist())
    assert len(calls) == 1
    assert all(r == results[0] for r in results)
    expected = _reference_product_plus(_coeffs(7), _coeffs(7), 0)
    expected[0] = (expected[0] + 5) % RING.Q  # the constant polynomial 5
    assert crt(p.intt().tolist(), RING.moduli) == expected


# -- hash-consing ---------------------------------------------------------------------------------
def test_concurrent_node_construction_gives_one_object():
    rounds, per_round = 40, 30
    leaf = Node(Op.CONST, DType.U32, (), (0, "python"))
    built: list[list[list[Node]]] = [[] for _ in range(THREADS)]
    barrier = threading.Barrier(THREADS, timeout=60)

    def work(i: int) -> None:
        for r in range(rounds):
            barrier.wait()  # every thread builds the same fresh keys at the same time
            built[i].append([Node(Op.ADD, DType.U32, (leaf, leaf), ("threads", r, k))
                             for k in range(per_round)])

    _run_threads(work)
    distinct = sum(len({id(built[t][r][k]) for t in range(THREADS)}) > 1
                   for r in range(rounds) for k in range(per_round))
    assert distinct == 0, f"{distinct} keys got more than one node"


def test_live_poly_registry_while_polys_are_created():
    from ren.poly import live_polys

    anchor = ren.Poly.const(1, RING)
    keep: list[list[ren.Poly]] = [[] for _ in range(THREADS)]

    def work(i: int) -> int:
        if i == 0:  # what apply_becomes_map does while other threads build Polys
            return sum(any(p is anchor for p in live_polys()) for _ in range(300))
        for k in range(3000):
            keep[i].append(ren.Poly.const(k, RING))
        return 0

    assert _run_threads(work)[0] == 300


def test_node_rebuilt_over_a_dead_entry():
    import weakref

    import ren.node as node_mod

    class Gone:
        pass

    arg = ("pending-removal", 1)
    key = (Op.CONST, DType.U32, (), tuple, arg, (str, int))
    obj = Gone()
    dead = weakref.ref(obj)
    del obj
    node_mod._refs[key] = dead  # a dead reference whose callback did not remove it
    m = Node(Op.CONST, DType.U32, (), arg)
    assert node_mod._refs[key]() is m
    assert Node(Op.CONST, DType.U32, (), arg) is m


def test_node_rebuilt_by_a_weakref_callback_of_its_dead_twin():
    import weakref

    arg = ("rebuilt-in-callback", 2)
    rebuilt: list[Node] = []
    n = Node(Op.CONST, DType.U32, (), arg)
    # runs while n dies, before the table has dropped n's entry
    watch = weakref.ref(n, lambda _: rebuilt.append(Node(Op.CONST, DType.U32, (), arg)))
    del n
    assert watch() is None and len(rebuilt) == 1
    assert Node(Op.CONST, DType.U32, (), arg) is rebuilt[0]  # n's late callback kept its entry


def test_dead_nodes_leave_the_table():
    import gc

    import ren.node as node_mod

    gc.collect()  # earlier tests' cyclic garbage must not die (and leave) during the count
    before = len(node_mod._refs)
    n = Node(Op.CONST, DType.U32, (), ("chain-leaf", 0))
    for i in range(1000):  # a chain: each entry's key holds the previous node
        n = Node(Op.NEG, DType.U32, (n,), ("chain", i))
    assert len(node_mod._refs) == before + 1001
    del n
    assert len(node_mod._refs) == before


# -- OpenMP threads of the compiled "cpu" device (REN_CPU_THREADS) ---------------------------------
def _cpu_or_skip():
    from ren.backend.c_host import find_cc

    if find_cc() is None:
        pytest.skip("no system C compiler (cc) found")
    from ren.backend import cpu
    return cpu


@contextlib.contextmanager
def _omp_threads(n: int) -> Iterator[None]:
    """Every loaded 'cpu' library (and those compiled inside the block) on n OpenMP threads."""
    cpu = _cpu_or_skip()
    dev = cpu.CpuDevice("cpu")
    with ren.settings.override(REN_CPU_THREADS=n):
        dev.set_threads(n)
        try:
            yield
        finally:
            dev.set_threads(1)


OMP_COUNTS = (1, 2, 3, 4)


# sizes on both sides of the kernels' work thresholds (a parallel loop and a serial one)
@pytest.mark.parametrize("N,limbs,bits", [(1 << 12, 6, 30), (1 << 10, 5, 31), (64, 3, 30)],
                         ids=["lazy-parallel", "exact-parallel", "small-serial"])
def test_ring_kernels_bit_identical_at_every_thread_count(N, limbs, bits):
    cpu = _cpu_or_skip()
    from ren.kernel import RingCall
    from ren.ring import RingKernel, RingSpec, divide_round_mont, ring_convert_mont

    ring = RingSpec.generate(N, limbs + 3, bits=bits)
    src = RingSpec(N, ring.moduli[:limbs])
    dst = RingSpec(N, (*src.moduli[1:], *ring.moduli[limbs:]))  # copies and new limbs
    kept = src.drop_last(2)
    q = np.array(src.moduli, dtype=np.uint64).reshape(-1, 1)
    x = (np.random.default_rng(N + bits).integers(0, 1 << 62, (limbs, N), dtype=np.uint64)
         % q).astype(np.uint32)
    calls = {
        "ntt": (RingCall(RingKernel.NTT, N, src.moduli, src.moduli), src.limbs),
        "intt": (RingCall(RingKernel.INTT, N, src.moduli, src.moduli), src.limbs),
        "bconv": (RingCall(RingKernel.BASIS_CONVERT, N, src.moduli, dst.moduli), dst.limbs),
        "rescale": (RingCall(RingKernel.RESCALE, N, src.moduli, kept.moduli,
                             dropped=src.moduli[-2:]), kept.limbs),
    }
    expected = {"ntt": ntt(x, src), "intt": intt(x, src), "bconv": ring_convert_mont(x, src, dst),
                "rescale": divide_round_mont(x, src, 2)}
    for n in OMP_COUNTS:
        with _omp_threads(n):
            for name, (call, rows) in calls.items():
                fn = cpu.library_call(call)
                assert fn is not None
                out = np.empty((rows, N), np.uint32)
                fn([out, x])
                assert np.array_equal(out, expected[name]), f"{name} differs at {n} threads"


def test_programs_bit_identical_at_every_thread_count():
    """Elementwise kernels (above and below their 2^16-word threshold), an automorphism, a
    basis conversion and a rescale, realized and JIT-replayed on the 'cpu' device."""
    _cpu_or_skip()
    big = ren.RingSpec.generate(1 << 14, 8)
    little = ren.RingSpec.generate(1 << 8, 5)
    rng = np.random.default_rng(5)

    def poly(r: ren.RingSpec) -> ren.Poly:
        r = ren.RingSpec(r.N, r.moduli[:-2])
        q = np.array(r.moduli, dtype=np.uint64).reshape(-1, 1)
        words = (rng.integers(0, 1 << 62, (r.limbs, r.N), dtype=np.uint64) % q)
        return ren.Poly.from_residues(words.astype(np.uint32), r, device="cpu").realize()

    def program(a: ren.Poly, b: ren.Poly) -> ren.Poly:
        full = big if a.ring.N == big.N else little
        c = (a.ntt() * b.ntt() + a.ntt().automorph(5)).intt()
        moved = c.to_ring(ren.RingSpec(c.ring.N, (*c.ring.moduli[1:], *full.moduli[-2:])))
        return moved.rescale(full.moduli[-1]) * 3 - a.to_ring(
            ren.RingSpec(c.ring.N, (*c.ring.moduli[1:], full.moduli[-2])))

    inputs = {r.N: (poly(r), poly(r)) for r in (big, little)}
    jitted = ren.jit(program)
    words: dict[int, bytes] = {}
    for n in OMP_COUNTS:
        with _omp_threads(n):
            for size, (a, b) in inputs.items():
                eager = program(a, b).numpy().tobytes()
                replay = jitted(a, b).numpy().tobytes()
                assert replay == eager, f"replay differs from eager at {n} threads"
                assert words.setdefault(size, eager) == eager, f"N={size}: {n} threads differ"


def test_cpu_threads_out_of_range_is_a_clear_error(monkeypatch):
    cpu = _cpu_or_skip()
    dev = cpu.CpuDevice("cpu")
    for bad in (0, -1, 257):
        with pytest.raises(ren.errors.SettingsError, match=r"REN_CPU_THREADS.*1\.\.256"):
            dev.set_threads(bad)
    monkeypatch.setenv("REN_CPU_THREADS", "0")
    with pytest.raises(ren.errors.SettingsError, match=r"REN_CPU_THREADS.*1\.\.256"):
        ren.settings._read_env("REN_CPU_THREADS")


def test_openmp_waits_passively_unless_told(monkeypatch):
    cpu = _cpu_or_skip()
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    cpu.omp_environment()
    assert os.environ["OMP_WAIT_POLICY"] == "passive"
    monkeypatch.setenv("OMP_WAIT_POLICY", "active")
    cpu.omp_environment()
    assert os.environ["OMP_WAIT_POLICY"] == "active"
    monkeypatch.delenv("OMP_WAIT_POLICY")
    monkeypatch.setenv("GOMP_SPINCOUNT", "1000")
    cpu.omp_environment()
    assert "OMP_WAIT_POLICY" not in os.environ
