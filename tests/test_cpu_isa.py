"""Vector paths of the compiled "cpu" device chosen at run time (REN_CPU_ISA: auto, avx512, avx2,
scalar).

* Every path this machine runs gives `ren.ring`'s words exactly: NTT/INTT (every stage shape of
  the vector code: single and paired stages, inside and above the 16 KiB blocks, 30- and
  31-bit moduli, edge residues), basis conversion and rescale, and elementwise kernels and a
  CKKS multiply / relinearize / rescale / rotate on a device opened for that path.  A path the
  machine does not run is skipped with the reason.
* Detection and forcing: auto takes the best path; a path the CPU lacks is a DeviceError naming
  what it has; /proc/cpuinfo and the compiled __builtin_cpu_supports probe agree.
* The path is part of the cache key: each path's sources and libraries differ, and a forced
  path really compiles that instruction set (no AVX-512 under avx2, no AVX2 under scalar).
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import numpy as np
import pytest
from backend_programs import same_words

import ren
from ren.backend import backend_override, cpu, cpu_calls, cpu_isa
from ren.backend.c_host import cached_library, compile_source, find_cc
from ren.errors import DeviceError
from ren.kernel import RingCall
from ren.ring import RingKernel, RingSpec, divide_round_mont, intt, ntt, ring_convert_mont

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no system C compiler (cc) found")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(ren.__file__)))
#: the NTT's vector width of each path's ring library
BITS = {"avx512": 512, "avx2": 256, "scalar": 0}


def _skip_unless_runs(isa: str) -> None:
    if isa not in cpu.available_isas():
        missing = sorted(cpu_isa.REQUIRES[isa] - cpu_isa.cpu_features())
        why = (f"the CPU lacks {', '.join(missing)}" if missing else
               f"the C compiler does not build with {' '.join(cpu_isa.isa_flags(isa))}")
        pytest.skip(f"this machine does not run the {isa} path: {why}")


@pytest.fixture(params=cpu_isa.ISAS)
def isa(request) -> str:
    _skip_unless_runs(request.param)
    return request.param


def _residues(ring: RingSpec, rng: np.random.Generator) -> np.ndarray:
    q = np.array(ring.moduli, dtype=np.uint64).reshape(-1, 1)
    x = rng.integers(0, 1 << 62, (ring.limbs, ring.N), dtype=np.uint64) % q
    pick = rng.random((ring.limbs, ring.N))  # 0, 1, q-1: the lazy reductions' boundaries
    x = np.where(pick < 0.1, q - 1, np.where(pick < 0.15, 0, np.where(pick < 0.2, 1, x)))
    return x.astype(np.uint32)


def _call(kind: RingKernel, N: int, isa: str, src=(), dst=(), dropped=()) -> cpu.CpuCall:
    fn = cpu.library_call(RingCall(kind, N, tuple(src), tuple(dst), dropped=tuple(dropped)), isa)
    assert fn is not None
    return fn


# -- every path gives ren.ring's words ------------------------------------------------------------
# N: the scalar fallbacks (2, 8), AVX2's smallest (16), AVX-512's smallest (32), then shapes that
# take each single / paired stage inside a block (64, 128, 2048), one whole block (4096) and
# above it (8192, 32768)
@pytest.mark.parametrize("N", [2, 8, 16, 32, 64, 128, 2048, 4096, 8192, 32768])
@pytest.mark.parametrize("bits", [30, 31])
def test_ntt_and_intt_match_ren_ring_on_every_path(isa, N, bits):
    ring = RingSpec.generate(N, 2, bits=bits)
    x = _residues(ring, np.random.default_rng(N * 7 + bits))
    kept = x.copy()
    fwd, inv = np.empty_like(x), np.empty_like(x)
    _call(RingKernel.NTT, N, isa, ring.moduli, ring.moduli)([fwd, x])
    _call(RingKernel.INTT, N, isa, ring.moduli, ring.moduli)([inv, x])
    # the first pass reads the input row directly (no copy first): it must stay untouched
    assert np.array_equal(x, kept), f"{isa}: an out-of-place transform wrote to its input"
    assert np.array_equal(fwd, ntt(x, ring)), f"{isa}: NTT differs from ren.ring.ntt"
    assert np.array_equal(inv, intt(x, ring)), f"{isa}: INTT differs from ren.ring.intt"
    for kind, want in ((RingKernel.NTT, fwd), (RingKernel.INTT, inv)):
        y = x.copy()  # in place (output = input)
        _call(kind, N, isa, ring.moduli, ring.moduli)([y, y])
        assert np.array_equal(y, want), f"{isa}: in-place {kind.name} differs"


@pytest.mark.parametrize(("N", "limbs", "bits", "threads"),
                         [(8192, 1, 30, 2), (8192, 3, 31, 4), (16384, 1, 31, 2),
                          (8192, 3, 30, 2)])
def test_limbs_split_over_threads_give_ren_ring_words_on_every_path(isa, N, limbs, bits,
                                                                    threads):
    """Fewer limbs than threads (or 3 on 2): each limb's basis conversion rows and NTT / INTT
    stages (3 on 2: AVX-512 only) are split over the threads (cpu_ring.c's ren_split,
    ren_split_ntt) — the same words."""
    ring = RingSpec.generate(N, limbs, bits=bits)
    x = _residues(ring, np.random.default_rng(N + limbs + bits))
    kept = x.copy()
    lib = cpu.ring_library(isa)
    extra = RingSpec.generate(N, limbs + 1, bits=bits).moduli[limbs:]
    dst = RingSpec(N, extra)  # a single new limb: every output row converted, none copied
    lib.ren_set_threads(threads)
    try:  # ren_cpu_split: row split + NTT split (2: both)
        split = lib.ren_cpu_split(ctypes.c_longlong(limbs), ctypes.c_longlong(N))
        want = 2 if limbs < threads or isa == "avx512" else 1
        assert split == (want if "-fopenmp" in cpu.cpu_flags() else 0)
        fwd, inv, conv = np.empty_like(x), np.empty_like(x), np.empty((1, N), np.uint32)
        _call(RingKernel.NTT, N, isa, ring.moduli, ring.moduli)([fwd, x])
        _call(RingKernel.INTT, N, isa, ring.moduli, ring.moduli)([inv, x])
        _call(RingKernel.BASIS_CONVERT, N, isa, ring.moduli, dst.moduli)([conv, x])
        y = x.copy()
        _call(RingKernel.NTT, N, isa, ring.moduli, ring.moduli)([y, y])
    finally:
        lib.ren_set_threads(ren.settings.get("REN_CPU_THREADS"))
    assert np.array_equal(x, kept), f"{isa}: a split transform wrote to its input"
    assert np.array_equal(fwd, ntt(x, ring)), f"{isa}: split NTT differs from ren.ring.ntt"
    assert np.array_equal(inv, intt(x, ring)), f"{isa}: split INTT differs from ren.ring.intt"
    assert np.array_equal(y, fwd), f"{isa}: split in-place NTT differs"
    assert np.array_equal(conv, ring_convert_mont(x, ring, dst)), f"{isa}: split conversion"


@pytest.mark.parametrize("bits", [20, 30, 31])
def test_basis_convert_and_rescale_match_ren_ring_on_every_path(isa, bits):
    N, limbs, k = 256, 5, 2
    ring = RingSpec.generate(N, limbs, bits=bits)
    x = _residues(ring, np.random.default_rng(bits))
    kept = ring.drop_last(k)
    out = np.empty((kept.limbs, N), np.uint32)
    _call(RingKernel.RESCALE, N, isa, ring.moduli, kept.moduli, ring.moduli[-k:])([out, x])
    assert np.array_equal(out, divide_round_mont(x, ring, k))
    extra = RingSpec.generate(N, limbs + 2, bits=bits).moduli[limbs:]
    dst = RingSpec(N, (*ring.moduli[1:], *extra))
    out = np.empty((dst.limbs, N), np.uint32)
    _call(RingKernel.BASIS_CONVERT, N, isa, ring.moduli, dst.moduli)([out, x])
    assert np.array_equal(out, ring_convert_mont(x, ring, dst))


def test_elementwise_and_ckks_on_every_path(isa):
    """A device opened for the path runs elementwise kernels (a fused inner product, an
    automorphism) and a CKKS multiply / relinearize / rescale / rotate with NumPy's words."""
    from ckks_helpers import make_params

    from ren.ckks import Encoder, Encryptor, Evaluator, KeyGenerator

    dev = cpu.CpuDevice(f"cpu:{isa}", isa=isa)
    assert dev.isa == isa and all(f in dev.flags for f in cpu_isa.isa_flags(isa))

    def run(kind: str):
        ring = RingSpec.generate(1024, 3, bits=31)
        with ren.random.seeded(3):
            ps = [ren.Poly.uniform(ring, domain="ntt", device=kind) for _ in range(6)]
        dot = ps[0] * ps[1] + ps[2] * ps[3] + ps[4] * ps[5]
        params = make_params(N=64, depth=2, scale_bits=40, first_bits=55, insecure=True,
                             device=kind)
        with ren.random.seeded(5):
            kg = KeyGenerator(params)
            ev = Evaluator(params, kg.relin_key(), kg.rotation_keys([1]))
            ct = Encryptor(params, kg.public_key()).encrypt(
                Encoder(params).encode(np.linspace(-1, 1, 32)))
        out = ev.rotate(ev.rescale(ev.multiply(ct, ct)), 1).realize()
        return [dot.numpy(), (dot - ps[0]).automorph(5).numpy(), *(c.numpy() for c in out.parts)]

    want = run("python")
    with backend_override("cpu", lambda name: dev):
        got = run("cpu")
    assert same_words(got, want), f"the {isa} path differs from NumPy"
    assert dev.entries  # its elementwise kernels were compiled for the path


def test_staged_automorphisms_on_every_path(isa):
    """The loop dialect's staged automorphism reads (`ren_permute`: a vector load and a lane
    permute per block of 16 on avx512, of 8 on avx2, a plain loop on scalar) give NumPy's words
    for rotations, the conjugation and a rotation of concatenated rows."""
    dev = cpu.CpuDevice(f"cpu:{isa}", isa=isa)
    N = 256
    big = RingSpec.generate(N, 5, bits=31)

    def run(kind: str):
        with ren.random.seeded(7):
            a = ren.Poly.uniform(big.sub(0, 3), domain="ntt", device=kind)
            k = ren.Poly.uniform(big, domain="ntt", device=kind)
        outs = [a.automorph(g) * a + a.automorph(g * g % (2 * N)) for g in (5, 3, 2 * N - 1)]
        outs.append(a.intt().to_ring(big).ntt().automorph(25) * k)
        return [o.numpy() for o in outs]

    want = run("python")
    with backend_override("cpu", lambda name: dev):
        got = run("cpu")
    assert same_words(got, want), f"the {isa} path's staged reads differ from NumPy"


def test_a_wrong_ntt_is_caught_on_every_path(isa):
    """The comparisons above can fail: each path's forward NTT without its final reduction
    gives other words."""
    source = cpu.ring_source(isa)
    cut = ("*X = z_min(s, z_sub(s, m.q));", "*X = s;") if isa == "avx512" else \
        ("x[j] = umin(v, v - q);", "x[j] = v;")
    broken = source.replace(*cut)
    assert broken != source
    # at -O1: the same words as at the library's -O3 (the C has one meaning), built in a third
    # of the compiler time (~1.2 s instead of ~3.5 s per path)
    flags = tuple("-O1" if f in ("-O2", "-O3") else f for f in cpu.isa_flags(isa))
    lib = compile_source(broken, flags, None)
    ring = RingSpec.generate(1024, 2)
    x = _residues(ring, np.random.default_rng(1))
    call = RingCall(RingKernel.NTT, 1024, ring.moduli, ring.moduli)
    rows, companions = call.twiddle_rows()
    out = np.empty_like(x)
    fn = cpu.CpuCall("broken", ctypes.cast(lib.ren_cpu_ntt, ctypes.c_void_p).value, 2,
                     [np.array([1024, 2], np.int64), call.tables()["q"],
                      cpu_calls.row_pointers(rows), cpu_calls.row_pointers(companions)],
                     keep=(rows, companions))
    fn([out, x])
    assert not np.array_equal(out, ntt(x, ring))


# -- detection, forcing, flags -------------------------------------------------------------------
def test_auto_takes_the_best_path_and_each_library_says_its_width():
    paths = cpu.available_isas()
    assert paths[-1] == "scalar" and list(paths) == [i for i in cpu_isa.ISAS if i in paths]
    with ren.settings.override(REN_CPU_ISA="auto"):
        assert cpu.resolve_isa() == paths[0]
    for isa in paths:
        with ren.settings.override(REN_CPU_ISA=isa):
            assert cpu.resolve_isa() == isa
        assert cpu.ring_library(isa).ren_cpu_vector_bits() == BITS[isa]


def test_a_path_the_cpu_lacks_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(cpu_isa, "cpu_features", lambda: frozenset({"sse4_2", "avx2"}))
    with pytest.raises(DeviceError, match=r"REN_CPU_ISA=avx512.*lacks avx512bw, avx512dq, "
                                          r"avx512f, avx512vl.*features: avx2\).*runs "
                                          r"(avx2, )?scalar"):
        cpu.resolve_isa("avx512")
    with ren.settings.override(REN_CPU_ISA="avx512"), pytest.raises(DeviceError, match="lacks"):
        cpu.CpuDevice("cpu:no-avx512")
    assert cpu.resolve_isa("auto") in ("avx2", "scalar")
    monkeypatch.setattr(cpu_isa, "cpu_features", lambda: frozenset())
    assert cpu.resolve_isa("auto") == "scalar" == cpu.resolve_isa("scalar")
    with pytest.raises(DeviceError, match=r"lacks avx2 \(its vector features: none\)"):
        cpu.resolve_isa("avx2")


@pytest.mark.skipif(not cpu_isa.is_x86() or cpu_isa.cpuinfo_features() is None,
                    reason="needs Linux /proc/cpuinfo on x86")
def test_cpuinfo_and_the_compiled_probe_agree():
    info = cpu_isa.cpuinfo_features()
    assert info is not None
    assert cpu_isa.probe_features() == info & set(cpu_isa.FEATURES)


def test_each_path_compiles_its_own_instruction_set(isa):
    """Forced paths build what their machines run: -mno-avx512f under avx2, -mno-avx2 under
    scalar (on x86), whatever -march=native allows."""
    probe = ("int ren_probe(void) { int b = 0;\n#ifdef __AVX2__\n b |= 1;\n#endif\n"
             "#ifdef __AVX512F__\n b |= 2;\n#endif\n return b; }\n")
    lib = compile_source(cpu.source_head(isa) + probe, cpu.isa_flags(isa), None)
    assert lib.ren_probe() == {"avx512": 3, "avx2": 1, "scalar": 0}[isa]


def test_the_path_is_part_of_the_cache_key():
    """Each path's source names it, so two paths (or two kinds of machines sharing a cache
    folder) never load each other's library."""
    paths = cpu.available_isas()
    sources = {isa: cpu.ring_source(isa) for isa in paths}
    assert len(set(sources.values())) == len(paths)
    for isa, src in sources.items():
        assert cpu_isa.isa_tag(isa) in src and "#include \"cpu_ring_" not in src
        cpu.ring_library(isa)  # built (or found) in the cache folder, so the lookups below hit
    files = {cached_library(sources[i], cpu.isa_flags(i), cpu.cache_dir()) for i in paths}
    assert len(files) == len(paths)


def test_the_environment_forces_the_path(tmp_path):
    """REN_CPU_ISA in the environment reaches the "cpu" device; a bad value or a path the
    machine does not run stops the program with the reason."""
    script = ("import ren\nfrom ren.backend import get_device\n"
              "r = ren.RingSpec.generate(64, 2)\n"
              "a = ren.Poly.from_coefficients(list(range(64)), r, device='cpu')\n"
              "print(get_device('cpu').isa, int((a.ntt() * a.ntt()).intt().numpy().sum()))\n")
    # this process's cache folder when it is the configured one: its ring libraries are built
    shared = cpu.cache_dir() == cpu.configured_cache_dir()
    base = {**os.environ, "REN_CACHE_DIR": os.path.dirname(cpu.cache_dir()) if shared
            else str(tmp_path),
            "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    sums = set()
    for isa in cpu.available_isas():
        res = subprocess.run([sys.executable, "-c", script], env={**base, "REN_CPU_ISA": isa},
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr[-2000:]
        got, value = res.stdout.split()
        assert got == isa
        sums.add(value)
    assert len(sums) == 1
    res = subprocess.run([sys.executable, "-c", script], env={**base, "REN_CPU_ISA": "avx3"},
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 1 and "REN_CPU_ISA='avx3' is not allowed" in res.stderr
