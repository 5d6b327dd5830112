"""The C-family renderer without a GPU (issue 11).

* Semantics: the CUDA kernel bodies, compiled for the host by the system C compiler under the
  shim header and run through ctypes, give exactly the NumPy backend's words on every corpus
  program, on CKKS multiply + relinearize + rescale, rotate and conjugate at small N, and on the
  ckks_basics example (also in the plain C dialect and with the NTT's global-stage path forced
  at small N).  Helpers are checked against Python big ints; NTTs against `ren.ring.ntt`.
* Compilation: every kernel those programs schedule compiles to an sm_90 cubin with NVRTC
  (``cupy.cuda.nvrtc``, no GPU needed); a kernel that does not compile fails with NVRTC's log.

Skipped with a reason when cc (semantics) or CuPy/NVRTC (compilation) is missing.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from backend_programs import (
    PROGRAMS_UNDER_TEST,
    ckks_basics_example,
    run_recording,
    same_words,
)

import ren
from ren.backend import backend_override, copy_fn, get_device
from ren.backend.c_host import HostRunner, HostShimDevice, compile_host, find_cc, host_function
from ren.backend.numpy_backend import HOST, HostAllocator, NumpyDevice
from ren.backend.render_c import (
    BLOCK,
    CUDA,
    SHIM,
    C,
    Launch,
    Param,
    Program,
    finish_kernel,
    render_program,
    signature,
    translation_unit,
)
from ren.backend.ring_c import RENDERED_KINDS, render_ring_call
from ren.device import register_device, unregister_device
from ren.errors import DeviceError, KernelCompileError, RealizeError
from ren.kernel import RingCall
from ren.ring import RingKernel, RingSpec, intt, ntt

needs_cc = pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")


def _nvrtc_missing() -> str | None:
    try:
        from cupy.cuda import nvrtc
        nvrtc.getVersion()
    except Exception as exc:  # ImportError, or NVRTC's shared library not found
        return f"CuPy's NVRTC is not usable ({type(exc).__name__}: {exc}); pip install -e '.[cuda]'"
    return None


NVRTC_MISSING = _nvrtc_missing()
needs_nvrtc = pytest.mark.skipif(NVRTC_MISSING is not None, reason=NVRTC_MISSING or "")


# -- the programs, run once on NumPy ------------------------------------------------------------
@pytest.fixture(scope="module", autouse=True)
def device_sampling():
    """These tests compare the devices' kernels, their RANDOM kernels included: random
    polynomials are sampled by the device, not on the host before the template lookup."""
    with ren.settings.override(REN_DEVICE_SAMPLING=1):
        yield


@pytest.fixture(scope="module")
def numpy_runs() -> dict[str, tuple[list[np.ndarray], list]]:
    ren.random.seed(None)
    return {name: run_recording(fn) for name, fn in PROGRAMS_UNDER_TEST.items()}


@pytest.fixture(scope="module")
def example_run():
    return run_recording(ckks_basics_example)


def _shim_results(runs, **options) -> tuple[dict[str, list[np.ndarray]], list[HostShimDevice]]:
    """Every program again with every "python" device replaced by the host shim; all kernels
    compiled up front in one compiler run per device."""
    devices: list[HostShimDevice] = []

    def open_shim(name: str) -> HostShimDevice:
        dev = HostShimDevice(name, HOST, **options)
        dev.prepare(item for _, items in runs.values() for item in items)
        devices.append(dev)
        return dev

    with backend_override("python", open_shim):
        got = {name: PROGRAMS_UNDER_TEST[name]() if name in PROGRAMS_UNDER_TEST
               else ckks_basics_example() for name in runs}
    return got, devices


# -- semantics on the host ----------------------------------------------------------------------
@needs_cc
def test_every_program_matches_numpy_through_the_shim(numpy_runs):
    got, devices = _shim_results(numpy_runs)
    bad = [n for n, (want, _) in numpy_runs.items() if not same_words(got[n], want)]
    assert not bad, f"the shim differs from NumPy on {bad}"
    assert devices and all(isinstance(d, HostShimDevice) for d in devices)
    # everything was compiled up front (python:1 of device_copy opens its own device)
    assert all(d.compiler_runs == 1 for d in devices), [d.compiler_runs for d in devices]


@needs_cc
def test_ckks_basics_example_matches_numpy_through_the_shim(example_run):
    got, _ = _shim_results({"example": example_run})
    assert same_words(got["example"], example_run[0])


@needs_cc
def test_plain_c_dialect_and_global_ntt_stages(numpy_runs):
    """The plain C dialect (loop elementwise kernels), with a 4-coefficient NTT chunk so every
    NTT runs global-memory stages before (forward) or after (inverse) the shared kernel."""
    subset = {n: numpy_runs[n] for n in ("corpus:ntt_product", "corpus:rotations",
                                         "corpus:keyswitch", "ckks:ops")}
    got, _ = _shim_results(subset, dialect=C, shared_chunk=4)
    assert [n for n, (want, _) in subset.items() if not same_words(got[n], want)] == []


@needs_cc
def test_a_wrong_kernel_is_caught(numpy_runs, monkeypatch):
    """The differential check can fail: a Montgomery product without its carry differs."""
    import ren.backend.render_c as rc

    monkeypatch.setattr(rc, "CORE_HELPERS", rc.CORE_HELPERS.replace(" + (lo != 0u);", ";"))
    subset = {"corpus:elementwise_chain": numpy_runs["corpus:elementwise_chain"]}
    got, _ = _shim_results(subset)
    assert not same_words(got["corpus:elementwise_chain"], subset["corpus:elementwise_chain"][0])


@needs_cc
def test_helpers_match_big_int_reference():
    """ren_modadd/modsub/modneg/montmul/shoup/brev against Python ints on edge and random
    values, for 30- and 31-bit NTT primes and an arbitrary odd modulus."""
    params = tuple(Param(n, "u32*" if n == "out" else "const u32*")
                   for n in ("out", "a", "b", "q", "qn", "x", "w", "wp"))
    n = 4096
    text = f"""REN_KERNEL void @K({signature(params)}) {{
  const i64 gid = (i64)blockIdx.x * blockDim.x + threadIdx.x;
  if (gid >= {n}LL) return;
  const u32 A = a[gid], B = b[gid], Q = q[gid], X = x[gid], W = w[gid], WP = wp[gid];
  u32* o = out + gid * 7;
  o[0] = ren_modadd(A, B, Q); o[1] = ren_modsub(A, B, Q); o[2] = ren_modneg(A, Q);
  o[3] = ren_montmul(A, B, Q, qn[gid]); o[4] = ren_shoup(X, W, WP, Q);
  o[5] = ren_shoup_exact(X, W, WP, Q); o[6] = (u32)ren_brev((i64)A, (int)(B % 33u));
}}
"""
    k = finish_kernel("test_helpers", text, params)
    program = Program("helpers", (k,), (Launch(k.name, (n // BLOCK, 1, 1), (BLOCK, 1, 1), (
        ("slot", 0), *(("slot", i) for i in range(1, 8)))),))
    lib = compile_host([program])
    fns = {k.name: host_function(lib, k.name)}
    rng = np.random.default_rng(5)
    moduli = [RingSpec.generate(16, 1, bits=30).moduli[0], RingSpec.generate(16, 1, bits=31)
              .moduli[0], (1 << 31) - 1, 3]
    qs = np.array([moduli[i % len(moduli)] for i in range(n)], dtype=np.uint64)

    def residues() -> np.ndarray:
        edge = np.array([[0, 1, q - 2, q - 1][i % 4] for i, q in enumerate(qs)], np.uint64)
        rand = (rng.integers(0, 1 << 62, n).astype(np.uint64) % qs)
        return np.where(rng.random(n) < 0.3, edge % qs, rand).astype(np.uint32)

    a, b = residues(), residues()
    x = np.where(rng.random(n) < 0.2, np.uint32(0xFFFFFFFF),
                 rng.integers(0, 1 << 32, n).astype(np.uint32)).astype(np.uint32)
    w = residues()
    wp = ((w.astype(object) << 32) // qs.astype(object)).astype(np.uint64).astype(np.uint32)
    qn = np.array([(-pow(int(q), -1, 1 << 32)) % (1 << 32) for q in qs], np.uint32)
    out = np.zeros(n * 7, np.uint32)
    HostRunner(program, fns)([out, a, b, qs.astype(np.uint32), qn, x, w, wp])
    out = out.reshape(n, 7)
    for i in range(n):
        A, B, Q, X, W = int(a[i]), int(b[i]), int(qs[i]), int(x[i]), int(w[i])
        bits = B % 33
        brv = int(f"{A & ((1 << bits) - 1):0{bits}b}"[::-1], 2) if bits else 0
        want = [(A + B) % Q, (A - B) % Q, (-A) % Q, A * B * pow(1 << 32, -1, Q) % Q, None,
                X * W % Q, brv]
        got = [int(v) for v in out[i]]
        assert got[4] % Q == X * W % Q and got[4] < 2 * Q, (i, Q, X, W, got[4])
        got[4] = None
        assert got == want, (i, A, B, Q, X, W, got, want)


@needs_cc
@pytest.mark.parametrize("N,limbs,bits,chunk", [(2, 1, 30, 4096), (16, 3, 30, 4096),
                                                 (64, 2, 31, 8), (256, 2, 30, 2),
                                                 (8192, 1, 31, 4096)])
def test_ntt_programs_match_numpy(N, limbs, bits, chunk):
    """Forward and inverse NTT programs (shared-memory kernel, plus global stages when N is
    above the chunk) against `ren.ring.ntt` / `intt` on random residues."""
    ring = RingSpec.generate(N, limbs, bits=bits)
    rng = np.random.default_rng(N + limbs)
    x = np.stack([rng.integers(0, q, N, dtype=np.int64) for q in ring.moduli]).astype(np.uint32)
    x[:, :2] = np.array(ring.moduli, np.uint32)[:, None] - 1  # edge values
    for kind, ref in ((RingKernel.NTT, ntt), (RingKernel.INTT, intt)):
        call = RingCall(kind, N, ring.moduli, ring.moduli)
        program = render_ring_call(call, f"{kind.value}-test", shared_chunk=chunk)
        global_stages = max(0, (N // min(N, chunk)).bit_length() - 1)
        assert len(program.launches) == 1 + global_stages
        lib = compile_host([program])
        runner = HostRunner(program, {k.name: host_function(lib, k.name) for k in program.kernels})
        out = np.zeros_like(x)
        runner([out, x.copy()])
        assert np.array_equal(out, ref(x, ring)), kind


def test_every_ring_kernel_is_rendered():
    assert set(RingKernel) == RENDERED_KINDS


def test_launch_specs_come_from_the_iteration_space(numpy_runs):
    items = {i.kind: i for _, (_, its) in numpy_runs.items() for i in its}
    ew = items["elementwise"]
    total = ew.space[0] * ew.space[1]
    (launch,) = render_program(ew, CUDA).launches
    assert launch.block == (BLOCK, 1, 1) and launch.grid[1:] == (1, 1)
    assert (launch.grid[0] - 1) * BLOCK < total <= launch.grid[0] * BLOCK
    (loop,) = render_program(ew, C).launches
    assert loop.grid == loop.block == (1, 1, 1)
    call = items["ntt"].ast.src[1].arg
    (shared,) = render_program(items["ntt"], CUDA).launches
    assert shared.grid == (1, len(call.src), 1) and shared.block == (call.n // 2, 1, 1)
    q = RingSpec.generate(1 << 14, 1).moduli
    big = render_ring_call(RingCall(RingKernel.NTT, 1 << 14, q, q), "big")
    assert [launch.grid for launch in big.launches] == [(32, 1, 1), (32, 1, 1), (4, 1, 1)]


def test_bad_programs_raise_specific_errors(numpy_runs):
    items = [i for _, (_, its) in numpy_runs.items() for i in its]
    ntt_item = next(i for i in items if i.kind == "ntt")
    with pytest.raises(RealizeError, match="power of two"):
        render_program(ntt_item, CUDA, shared_chunk=3)
    copy_like = type(ntt_item)("copy", "c", None, ntt_item.bufs)
    with pytest.raises(RealizeError, match="cannot render"):
        render_program(copy_like, CUDA)


@needs_cc
def test_host_compiler_errors_carry_the_log():
    k = finish_kernel("broken", "REN_KERNEL void @K(u32* out) { out[0] = missing_fn(1); }\n",
                      (Param("out", "u32*"),))
    with pytest.raises(KernelCompileError, match="missing_fn"):
        compile_host([Program("broken", (k,), ())])


# -- compilation for the GPU ------------------------------------------------------------------
def _big_ntt_programs() -> list[Program]:
    """The NTT programs of the benchmark's shape (N = 2^16: global stages + shared chunks)."""
    ring = RingSpec.generate(1 << 16, 2, bits=30)
    return [render_ring_call(RingCall(k, ring.N, ring.moduli, ring.moduli), k.value)
            for k in (RingKernel.NTT, RingKernel.INTT)]


@needs_nvrtc
def test_every_kernel_compiles_to_an_sm90_cubin(numpy_runs, example_run):
    from ren.backend.cuda import nvrtc_cubin

    items = [i for _, its in itertools.chain(numpy_runs.values(), [example_run]) for i in its]
    programs = [render_program(i, CUDA) for i in items] + _big_ntt_programs()
    kinds = {i.kind for i in items}
    assert kinds == {"elementwise", *(k.value for k in RingKernel)}, kinds
    source = translation_unit(programs, CUDA)
    try:
        cubin = nvrtc_cubin(source, "sm_90")
    except KernelCompileError as exc:  # pinpoint the kernel for the failure message
        for p in programs:
            try:
                nvrtc_cubin(p.source(CUDA), "sm_90")
            except KernelCompileError as one:
                pytest.fail(f"{p.name} does not compile:\n{one}")
        pytest.fail(str(exc))
    assert cubin[:4] == b"\x7fELF"
    assert all(f"REN_KERNEL void {k.name}(" in source for p in programs for k in p.kernels)


@needs_nvrtc
def test_nvrtc_errors_carry_the_log():
    from ren.backend.cuda import nvrtc_cubin

    source = translation_unit([], CUDA) + "extern \"C\" __global__ void k() { undefined_x(); }\n"
    with pytest.raises(KernelCompileError, match="undefined_x"):
        nvrtc_cubin(source)


# -- the cuda device without a GPU -------------------------------------------------------------
def test_cuda_without_gpu_says_what_to_do():
    pytest.importorskip("cupy", reason="needs CuPy, which only the cuda extra installs "
                                       "(pip install -e '.[cuda]'); test_backend covers its "
                                       "absence")
    from ren.backend import cuda

    if cuda.gpu_count() > 0:
        pytest.skip("a GPU is present")
    with pytest.raises(DeviceError, match=r"'cuda' is not available: no CUDA GPU is present"):
        get_device("cuda")


def test_cuda_without_cupy_says_what_to_do(monkeypatch):
    """Runs with or without CuPy: importing it fails as on a machine without the cuda extra."""
    from ren.backend import cuda

    monkeypatch.setitem(__import__("sys").modules, "cupy", None)  # as if CuPy were missing
    with pytest.raises(DeviceError, match=r"needs CuPy, which is not installed.*"
                                          r"pip install -e '\.\[cuda\]'.*device='python'"):
        cuda.open_device("cuda:1")


def test_the_host_shim_has_no_graph_runner():
    assert HostShimDevice("shim", HOST).graph([], []) is None  # templates run exec units


def test_copies_use_an_allocators_peer_copy():
    calls = []

    class Peer(HostAllocator):
        def peer_copy(self, src_allocator):
            def copy(dst, src):
                calls.append("peer")
                np.copyto(dst, src)
            return copy

    a, b = Peer(), HostAllocator()
    register_device("peera", lambda name: NumpyDevice(name, a))
    register_device("peerb", lambda name: NumpyDevice(name, b))
    try:
        src, dst = np.arange(8, dtype=np.uint32).reshape(2, 4), np.zeros((2, 4), np.uint32)
        copy_fn("peera", "peerb")([dst, src])
        assert calls == ["peer"] and np.array_equal(dst, src)
        dst[...] = 0
        copy_fn("peerb", "peera")([dst, src])  # b has no peer copy: through the host
        assert calls == ["peer"] and np.array_equal(dst, src)
    finally:
        unregister_device("peera")
        unregister_device("peerb")


def test_shim_source_is_the_cuda_source_plus_wrappers(numpy_runs):
    items = numpy_runs["corpus:keyswitch"][1]
    programs = [render_program(i, CUDA) for i in items]
    cuda_src, shim_src = translation_unit(programs, CUDA), translation_unit(programs, SHIM)
    bodies = cuda_src.split("__syncthreads()\n#define REN_PHASE(k)\n", 1)[1]
    assert bodies in shim_src and "ren_host_" in shim_src and "ren_host_" not in cuda_src
