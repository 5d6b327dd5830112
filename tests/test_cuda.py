"""The ``"cuda"`` backend on a GPU (issue 11): every corpus program and CKKS operation is
bit-identical to the NumPy backend; device copies; CUDA-graph replay of a ren.jit plan.

Marked `gpu`: skipped (tests/conftest.py) where CuPy sees no GPU.  A GPU session runs them with
``bash benchmarks/gpu_check.sh``.
"""

from __future__ import annotations

import numpy as np
import pytest
from backend_programs import (
    PROGRAMS_UNDER_TEST,
    ckks_basics_example,
    run_recording,
    same_words,
)

import ren
from ren.backend import backend_override, get_device
from ren.ring import RingSpec

pytestmark = pytest.mark.gpu


_ITEMS: list = []  # every kernel the NumPy runs scheduled: compiled in one NVRTC run


def _on_gpu(name: str):
    """Every "python" device as a CUDA device on GPU 0 (CKKS names only "python")."""
    import cupy

    from ren.backend.cuda import CudaDevice

    dev = CudaDevice(name, cupy, 0)
    dev.prepare(_ITEMS)
    return dev


@pytest.fixture(scope="module", autouse=True)
def device_sampling():
    """These tests compare the devices' kernels, their RANDOM kernels included: random
    polynomials are sampled by the device, not on the host before the template lookup."""
    with ren.settings.override(REN_DEVICE_SAMPLING=1):
        yield


@pytest.fixture(scope="module")
def numpy_runs():
    ren.random.seed(None)
    runs = {}
    for name, fn in [*PROGRAMS_UNDER_TEST.items(), ("example", ckks_basics_example)]:
        runs[name], items = run_recording(fn)
        _ITEMS.extend(items)
    return runs


def test_every_program_is_bit_identical_on_the_gpu(numpy_runs):
    with backend_override("python", _on_gpu):
        got = {name: PROGRAMS_UNDER_TEST.get(name, ckks_basics_example)()
               for name in numpy_runs}
        assert type(get_device("python")).__name__ == "CudaDevice"
    bad = [n for n, want in numpy_runs.items() if not same_words(got[n], want)]
    assert not bad, f"the GPU differs from NumPy on {bad}"


def test_polys_move_to_the_gpu_and_back():
    ring = RingSpec.generate(1 << 12, 3)
    rng = np.random.default_rng(3)
    coeffs = [int(c) for c in rng.integers(-(1 << 40), 1 << 40, ring.N)]

    def program(device: str):
        a = ren.Poly.from_coefficients(coeffs, ring, device=device)
        b = ren.Poly.from_coefficients(coeffs[::-1], ring).to(device)
        c = ((a * b).intt() + a.rotate(3) - 7).rescale(ring.moduli[-1:])
        assert c.device == device
        back = c.to("python")
        back.realize()
        return back.numpy()

    assert np.array_equal(program("cuda"), program("python"))
    if get_device("cuda").cp.cuda.runtime.getDeviceCount() > 1:
        assert np.array_equal(program("cuda:1"), program("python"))


def test_graph_runner_replays_a_plan_with_new_inputs():
    """ren.jit on the GPU: the plan's runner is a CUDA graph, and replays on new inputs give
    the NumPy backend's words."""
    ring = RingSpec.generate(1 << 12, 4)
    rng = np.random.default_rng(4)

    def residues():
        return np.stack([rng.integers(0, q, ring.N) for q in ring.moduli]).astype(np.uint32)

    def program(x, y):
        return ((x * y).intt() + x).rotate(1)

    f = ren.jit(program)
    ys = residues()
    y = ren.Poly.from_residues(ys, ring, device="cuda")
    for _ in range(3):
        xs = residues()
        got = f(ren.Poly.from_residues(xs, ring, device="cuda"), y).numpy()
        want = program(ren.Poly.from_residues(xs, ring), ren.Poly.from_residues(ys, ring))
        assert np.array_equal(got, want.realize().numpy())
    assert f.plans[0].runner == "cuda-graph" and f.hits == 2


def test_kernels_and_modules_are_cached():
    dev = get_device("cuda")
    ring = RingSpec.generate(1 << 10, 2)
    a = ren.Poly.from_coefficients(list(range(ring.N)), ring, device="cuda")
    (a * a).realize()
    modules = len(dev.modules)
    b = ren.Poly.from_coefficients(list(range(1, ring.N + 1)), ring, device="cuda")
    (b * b).realize()
    assert len(dev.modules) == modules  # same shapes: same sources, no new NVRTC run
