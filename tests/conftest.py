"""Shared fixtures, hypothesis strategies and plain big-integer helpers for Ren's tests.

The helpers here are deliberately independent of `ren`: they compute with Python ints only, so
the tests compare Ren against arithmetic that does not share its code.
"""

from __future__ import annotations

import os
from functools import cache

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import ren
from ren.ring import RingSpec

_COMMON = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile("ci", max_examples=50, **_COMMON)
settings.register_profile("thorough", max_examples=1000, **_COMMON)
# "ci" unless HYPOTHESIS_PROFILE names another (e.g. HYPOTHESIS_PROFILE=thorough for a long run)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

SMALL_NS = (2, 4, 8, 16, 32, 64)
BITS = (30, 31)


# -- rings --------------------------------------------------------------------------------------
@cache
def ring(N: int, limbs: int, bits: int = 30) -> RingSpec:
    """A cached deterministic ring (RingSpec.generate)."""
    return RingSpec.generate(N, limbs, bits=bits)


def rings(ns=SMALL_NS, limbs=(1, 2, 3, 4), bits=BITS) -> st.SearchStrategy[RingSpec]:
    """Small rings: N from `ns`, 1..4 limbs, 30- or 31-bit primes."""
    return st.builds(ring, st.sampled_from(ns), st.sampled_from(limbs), st.sampled_from(bits))


@pytest.fixture(params=[(16, 1, 30), (16, 3, 30), (8, 2, 31), (32, 4, 31)],
                ids=lambda p: f"N{p[0]}-L{p[1]}-b{p[2]}")
def small_ring(request) -> RingSpec:
    return ring(*request.param)


def pytest_collection_modifyitems(config, items):
    """Tests marked `gpu` run only where CuPy sees a CUDA GPU (cupy.is_available())."""
    gpu = [item for item in items if "gpu" in item.keywords]
    if not gpu:
        return
    from ren.backend.cuda import gpu_count

    if gpu_count() == 0:
        skip = pytest.mark.skip(reason="needs a CUDA GPU: cupy.is_available() is False or CuPy "
                                       "is not installed (pip install -e '.[cuda]')")
        for item in gpu:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _own_plan_cache(tmp_path_factory, monkeypatch):
    """Every test has a plan cache folder of its own: a capture in one test never loads what
    another test (or an earlier run) stored, while captures inside a test use it as a user's do."""
    from ren import plan_cache

    monkeypatch.setattr(plan_cache, "folder", tmp_path_factory.mktemp("plans"))


@pytest.fixture(autouse=True, scope="module")
def _templates_of_this_module_only():
    """Every module ends with an empty replay template cache (`ren.replay.templates`, up to 256
    realized schedules with their graphs and units).  Kept across modules, a bootstrapping
    module's templates held ~800,000 objects that every later garbage collection walked again
    (a test's gc.collect() took 3 s by test_ckks_coeff_diagonals); no module relies on another
    module's templates."""
    yield
    from ren.replay import templates

    templates.clear()


@pytest.fixture(autouse=True)
def _restore_random_mode():
    """Every test starts and ends with OS randomness (no insecure seed stream left on)."""
    ren.random.seed(None)
    yield
    ren.random.seed(None)


def cpu_or_skip():
    """The compiled "cpu" backend module, or skip the test where it cannot build its ring
    library (no C compiler)."""
    from ren.backend import cpu

    try:
        cpu.ring_library()
    except Exception as e:  # no C compiler
        pytest.skip(f"cpu device unavailable: {e}")
    return cpu


# -- value strategies -----------------------------------------------------------------------------
def residue(q: int) -> st.SearchStrategy[int]:
    """A residue mod q, with the edge values 0, 1, q-2, q-1 drawn often."""
    return st.one_of(st.sampled_from((0, 1, q - 2, q - 1)), st.integers(0, q - 1))


def residue_rows(data: st.DataObject, ring_: RingSpec) -> list[list[int]]:
    """(limbs × N) residues as Python lists, one row per modulus."""
    return [data.draw(st.lists(residue(q), min_size=ring_.N, max_size=ring_.N))
            for q in ring_.moduli]


def big_int(bits: int = 300) -> st.SearchStrategy[int]:
    """Signed integers of up to `bits` bits, with the 32/64-bit word edges drawn often."""
    edges = []
    for e in (0, 31, 32, 62, 63, 64, 95, 96, 128, bits - 1):
        edges += [(1 << e) - 1, 1 << e, -(1 << e), -(1 << e) - 1]
    bound = (1 << bits) - 1
    return st.one_of(
        st.sampled_from(tuple(x for x in edges if -bound - 1 <= x <= bound)),
        st.integers(-bound - 1, bound),
        st.integers(-(1 << 40), 1 << 40),
    )


# -- independent big-integer math ---------------------------------------------------------------
def brv(j: int, bits: int) -> int:
    """j with its `bits` low bits reversed."""
    out = 0
    for _ in range(bits):
        out = (out << 1) | (j & 1)
        j >>= 1
    return out


def negacyclic_mul(a: list[int], b: list[int], m: int) -> list[int]:
    """Schoolbook product in Z_m[X]/(X^N + 1), Python ints."""
    N = len(a)
    out = [0] * N
    for i, ai in enumerate(a):
        if ai == 0:
            continue
        for j, bj in enumerate(b):
            k = i + j
            if k < N:
                out[k] += ai * bj
            else:
                out[k - N] -= ai * bj
    return [c % m for c in out]


def substitute(a: list[int], g: int, m: int) -> list[int]:
    """a(X^g) mod (X^N + 1, m) by direct substitution, Python ints."""
    N = len(a)
    out = [0] * N
    for i, c in enumerate(a):
        e = (i * g) % (2 * N)
        if e < N:
            out[e] += c
        else:
            out[e - N] -= c
    return [c % m for c in out]


def crt(rows, moduli) -> list[int]:
    """Residue rows (one per modulus) → integers in [0, Q), by the textbook CRT formula."""
    Q = 1
    for q in moduli:
        Q *= q
    rows = [[int(v) for v in row] for row in rows]
    out = []
    for c in range(len(rows[0])):
        x = 0
        for row, q in zip(rows, moduli, strict=True):
            qh = Q // q
            x += row[c] * pow(qh, -1, q) * qh
        out.append(x % Q)
    return out


def centred(x: int, Q: int) -> int:
    """The representative of x mod Q in (-Q/2, Q/2]."""
    x %= Q
    return x - Q if x > Q // 2 else x


# -- running the suite on another backend ---------------------------------------------------------
def pytest_addoption(parser):
    parser.addoption("--ren-backend", default="python", choices=("python", "cpu"),
                     help="run everything that uses the 'python' device on this backend instead "
                          "(cpu: the compiled C backend), e.g. the JIT and CKKS tests")


@pytest.fixture(autouse=True, scope="session")
def _ren_backend(request):
    kind = request.config.getoption("--ren-backend")
    if kind == "python":
        yield
        return
    from ren.backend import backend_override
    from ren.backend.cpu import open_device

    with backend_override("python", open_device):
        yield
