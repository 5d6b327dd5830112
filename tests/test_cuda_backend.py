"""The CUDA backend's host-side code without a GPU: `ren.backend.cuda` driven through a stand-in
for CuPy (tests/fake_cupy.py) whose kernels are the host-shim builds of the very same kernels.

This checks the glue a GPU run depends on — CuPy storage, arena views, uploads of attached host
arrays, copies between devices, table uploads, launch arguments, random sampling's host step,
stream capture into a graph and its replay with new inputs — against the NumPy backend, word for
word.  The real GPU runs are tests/test_cuda.py (marked `gpu`).
"""

from __future__ import annotations

import sys

import fake_cupy
import numpy as np
import pytest
from backend_programs import PROGRAMS_UNDER_TEST, lower_plan, run_recording, same_words

import ren
from ren.backend import backend_override, get_device
from ren.backend.c_host import HostShimDevice, find_cc
from ren.backend.cuda import CudaDevice, open_device
from ren.backend.numpy_backend import HOST
from ren.errors import DeviceError
from ren.ir import storage_buffer
from ren.realization import compile_template, parameterize
from ren.replay import structure_key
from ren.ring import RingSpec, from_mont, get_tables, to_mont

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")


@pytest.fixture(scope="module", autouse=True)
def device_sampling():
    """These tests compare the devices' kernels, their RANDOM kernels included: random
    polynomials are sampled by the device, not on the host before the template lookup."""
    with ren.settings.override(REN_DEVICE_SAMPLING=1):
        yield


@pytest.fixture(scope="module")
def numpy_runs():
    ren.random.seed(None)
    runs = {name: run_recording(fn) for name, fn in PROGRAMS_UNDER_TEST.items()}
    shim = HostShimDevice("python", HOST)
    shim.prepare(item for _, items in runs.values() for item in items)
    fake_cupy.FUNCTIONS.update(shim.functions)
    return runs


def _fake_gpu(name: str) -> CudaDevice:
    return CudaDevice(name, fake_cupy, 0)


def test_every_program_runs_through_the_cuda_backend_code(numpy_runs):
    fake_cupy.LAUNCHES.clear()
    with backend_override("python", _fake_gpu):
        got = {name: fn() for name, fn in PROGRAMS_UNDER_TEST.items()}
        dev = get_device("python")
        assert isinstance(dev, CudaDevice) and dev.modules  # compiled by (fake) NVRTC
    bad = [n for n, (want, _) in numpy_runs.items() if not same_words(got[n], want)]
    assert not bad, f"the CUDA backend code differs from NumPy on {bad}"
    names = {name for name, _, _ in fake_cupy.LAUNCHES}
    assert any(n.startswith("ren_ntt_shared") for n in names)
    assert any(n.startswith("ren_random") for n in names)


def test_graph_runner_captures_and_replays(numpy_runs):
    """A template (what realize and ren.jit run) on the CUDA backend code gets a CUDA graph: the
    first run captures it, later runs on new inputs launch only the graph; a template with a
    host step (random sampling) gets none."""
    ring = RingSpec.generate(64, 3)
    rng = np.random.default_rng(8)

    def residues():
        return np.stack([rng.integers(0, q, ring.N) for q in ring.moduli]).astype(np.uint32)

    def program(x, y):
        return ((x * y).intt() + x).rotate(1)

    inputs = [(residues(), residues()) for _ in range(2)]
    expected = [program(*(ren.Poly.from_residues(a, ring) for a in pair)).realize().numpy()
                for pair in inputs]
    with backend_override("python", _fake_gpu):
        polys = [[ren.Poly.from_residues(a, ring) for a in pair] for pair in inputs]
        todo = [program(*polys[0]).node]
        template = compile_template(*parameterize(todo, structure_key(todo)[1]))
        shim = HostShimDevice("shim", HOST)
        shim.prepare(u.item for u in template.units)
        fake_cupy.FUNCTIONS.update(shim.functions)
        runner = template.build_runner()
        assert runner is not None and runner.kind == "cuda-graph"
        tables = get_tables(ring)
        for i, pair in enumerate(polys):
            launches = len(fake_cupy.LAUNCHES)
            (out,) = template.run(structure_key([program(*pair).node])[1])
            if i:  # after the capture, a run launches the graph only
                assert len(fake_cupy.LAUNCHES) == launches
            assert np.array_equal(from_mont(storage_buffer(out).copyout(), tables), expected[i])
        r = ren.Poly.uniform(ring) + polys[0][0]
        assert compile_template([r.node]).build_runner() is None


def test_opening_devices_checks_the_gpu_count(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    assert isinstance(open_device("cuda"), CudaDevice)
    with pytest.raises(DeviceError, match=r"'cuda:1' is not available: this machine has 1 CUDA"):
        open_device("cuda:1")


def test_cuda_allocator_checks_storage():
    dev = _fake_gpu("cuda")
    alloc = dev.allocator
    arena = alloc.arena(40)
    view = alloc.view(arena, 8, (2, 16))
    assert isinstance(view, fake_cupy.ndarray) and view.shape == (2, 16)
    with pytest.raises(DeviceError, match="does not fit"):
        alloc.view(arena, 30, (2, 16))
    host = np.arange(32, dtype=np.uint32).reshape(2, 16)
    up = alloc.adopt(host, (2, 16))  # a host array is uploaded
    assert isinstance(up, fake_cupy.ndarray) and np.array_equal(alloc.copyout(up), host)
    with pytest.raises(DeviceError, match="uint32 CuPy array"):
        alloc.adopt(np.zeros(32, np.int64), (2, 16))


def test_bench_cuda_runs_end_to_end_on_the_stand_in(monkeypatch, capsys):
    """benchmarks/bench_cuda.py's code path at tiny sizes (the figures are meaningless here)."""
    import runpy
    from pathlib import Path

    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    bench = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_cuda.py"
    main = runpy.run_path(str(bench), run_name="bench")["main"]
    assert main(["--small", "--reps", "2"]) == 0
    out = capsys.readouterr().out
    assert "fake GPU" in out and "NTT  N=2^10 x 2 limbs" in out
    assert "mul     eager" in out and "rotate  eager" in out and "nan" not in out


def test_bench_cuda_exits_cleanly_without_a_gpu(monkeypatch, capsys):
    import runpy
    from pathlib import Path

    monkeypatch.setitem(sys.modules, "cupy", None)
    bench = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_cuda.py"
    assert runpy.run_path(str(bench), run_name="bench")["main"]([]) == 0
    assert "skipped: CuPy is not installed" in capsys.readouterr().out


@pytest.mark.slow
def test_the_gpu_tests_pass_on_the_stand_in():
    """tests/test_cuda.py itself (the `gpu` tests) against the stand-in, so the GPU session's
    check is known to be sound before it spends device time."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    code = ("import sys; sys.path.insert(0, 'tests'); import fake_cupy; "
            "sys.modules['cupy'] = fake_cupy; import pytest; "
            "sys.exit(pytest.main(['-o', 'addopts=', '-q', '-p', 'no:cacheprovider', '-m', 'gpu', "
            "'tests/test_cuda.py']))")
    res = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert "4 passed" in res.stdout


def test_jit_graph_runner_is_a_cuda_graph_over_staging_arrays(numpy_runs):
    """Device.graph (the JIT's hook) on the CUDA backend code: captured once, then each run
    copies new per-run arrays in and the results out, with no kernel launched outside the
    graph, and the same words as NumPy."""
    ring = RingSpec.generate(64, 3)
    rng = np.random.default_rng(9)
    tables = get_tables(ring)

    def residues():
        return np.stack([rng.integers(0, q, ring.N) for q in ring.moduli]).astype(np.uint32)

    inputs = [(residues(), residues()) for _ in range(3)]
    expected = []
    for xs, ys in inputs:
        pa, pb = ren.Poly.from_residues(xs, ring), ren.Poly.from_residues(ys, ring)
        r = ((pa * pb).intt() + pa).rotate(1)
        expected.append(r.realize().numpy())
    with backend_override("python", _fake_gpu):
        dev = get_device("python")
        x, y = (ren.Poly.from_residues(a, ring) for a in inputs[0])
        units, _, (out,) = lower_plan([((x * y).intt() + x).rotate(1)])
        shim = HostShimDevice("shim", HOST)
        shim.prepare(u.item for u in units)
        fake_cupy.FUNCTIONS.update(shim.functions)
        xb, yb = x.node.src[0].arg, y.node.src[0].arg
        dyn = [out, xb, yb]  # the per-run buffers; everything else is prebound
        calls, patches = [], []
        for u in units:
            if u.kind == "view":
                continue
            args = [None if b in dyn else b.allocate().array() for b in u.bufs]
            patches += [(len(calls), k, dyn.index(b)) for k, b in enumerate(u.bufs) if b in dyn]
            calls.append((u.fn, args))
        runner = dev.graph(calls, patches)
        assert runner is not None and runner.kind == "cuda-graph"
        for i, (xs, ys) in enumerate(inputs):
            xb.copyin(to_mont(xs, tables))
            yb.copyin(to_mont(ys, tables))
            out.allocate()
            launches = len(fake_cupy.LAUNCHES)
            runner([b.array() for b in dyn])
            if i:  # after the capture, a run launches the graph only
                assert len(fake_cupy.LAUNCHES) == launches
            assert np.array_equal(from_mont(out.copyout(), tables), expected[i])
