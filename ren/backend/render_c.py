"""The C-family renderer: scheduled kernels -> C source text, shared by every C-like dialect.

`render_program(item, dialect)` turns one `ScheduledKernel` into a `Program`: the C functions it
needs (`CKernel`), the launches that run them (grid, block, arguments) and the constant tables
they read.  The function bodies are written once, in a small dialect-neutral vocabulary; each
`Dialect` supplies a prelude that gives that vocabulary its meaning:

    u32 u64 i64          unsigned 32/64-bit and signed 64-bit integer types
    REN_KERNEL           a kernel entry point        CUDA: extern "C" __global__
    REN_FN               a helper function           CUDA: static __device__ __forceinline__
    REN_CONST            a file-scope constant table CUDA: static __constant__ const
    REN_SHARED           per-block scratch memory    CUDA: __shared__
    REN_RESTRICT         a pointer aliasing no other CUDA: __restrict__
    REN_SYNC()           a block-wide barrier        CUDA: __syncthreads()
    REN_PHASE(k)         the code between barriers k-1 and k (CUDA: nothing)
    threadIdx blockIdx blockDim gridDim, __umulhi(a, b), __brev(x)   as in CUDA

Dialects:

* `CUDA` — CUDA C for NVRTC (`ren.backend.cuda`).
* `SHIM` — the *same* CUDA bodies compiled for the host by the system C compiler under a shim
  header (`ren.backend.c_host`): kernel qualifiers defined away, ``__umulhi``/``__brev`` in C,
  ``threadIdx`` & co. as globals set by a loop over grid and block indices, shared memory as a
  static array.  A kernel with barriers is written as phases (``REN_PHASE(k) { ... }``
  separated by ``REN_SYNC()``); the shim runs phase k for every thread of a block before phase
  k + 1, which is exactly what the barriers guarantee on a GPU, so ``REN_SYNC()`` is a no-op
  there.  Bodies keep no per-thread state across a barrier except in shared memory.
* `C` — plain C for the compiled ``"cpu"`` backend (`ren.backend.cpu`): an elementwise kernel is
  one loop nest, limbs outside (``REN_PARALLEL_LIMBS(words)``: an OpenMP pragma there, taken
  when the loop touches enough words; nothing under
  the shim) and coefficients inside, so its indices are affine and the C compiler vectorizes
  it; the library kernels that backend takes from `ren.backend.ring_c` (TO_RNS, RANDOM) reuse
  the SHIM prelude and host wrappers.

Elementwise kernels (`ren.backend.elementwise_c`): one thread per element of ``space = (L, N)``
(a 1-D grid of 256-thread blocks, bounds-checked), every AST node one SSA variable, index values as
i64 (the ALU table's int64 semantics, `ren.alu`), residues as u32 with 32-bit Montgomery
multiplication through ``__umulhi``.  Moduli, per-limb constants and index tables of the AST are
baked into the source as constant tables.  Library kernels (one per `ren.ring.RingKernel`) live
in `ren.backend.ring_c`.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ren.errors import RealizeError
from ren.kernel import ELEMENTWISE, ScheduledKernel

#: threads per block of one-thread-per-element kernels
BLOCK = 256


# -- what a renderer produces ----------------------------------------------------------------
@dataclass(frozen=True)
class Param:
    """One kernel parameter: its C name and type (``u32*``, ``const u32*``, ``const i64*``,
    ``int``)."""

    name: str
    ctype: str

    @property
    def is_pointer(self) -> bool:
        return self.ctype.endswith("*")


@dataclass(frozen=True)
class CKernel:
    """One C function (a kernel entry point).  `source` is its text in the dialect-neutral
    vocabulary; `phases` is the number of barrier-separated phases (1: no barrier)."""

    name: str
    source: str
    params: tuple[Param, ...]
    phases: int = 1


#: a launch argument: ("slot", i) | ("table", name) | ("host", name) | ("int", value)
Arg = (tuple[Literal["slot"], int] | tuple[Literal["table"], str] | tuple[Literal["host"], str]
       | tuple[Literal["int"], int])


@dataclass(frozen=True)
class Launch:
    """One kernel launch: which function, its grid and block (x, y, z), its arguments."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple[Arg, ...]


@dataclass
class Program:
    """Everything one scheduled kernel runs: C functions, launches in order, constant tables
    (uploaded once), and `prepare`, the host part of a call computed anew on every run (random
    sampling expands the node's seed on the host; see `ren.backend.ring_c`)."""

    name: str
    kernels: tuple[CKernel, ...]
    launches: tuple[Launch, ...]
    tables: dict[str, np.ndarray] = field(default_factory=dict)
    prepare: Callable[[], dict[str, np.ndarray]] | None = None

    def source(self, dialect: Dialect) -> str:
        return translation_unit([self], dialect)


# -- dialects --------------------------------------------------------------------------------
#: helpers every dialect shares (written once in the neutral vocabulary; they mirror `ren.alu`)
CORE_HELPERS = r"""
REN_FN u32 ren_min(u32 a, u32 b) { return a < b ? a : b; }
/* (a + b) mod q, a, b in [0, q): min(s, s - q) with u32 wrap-around, as ren.ring.mod_add */
REN_FN u32 ren_modadd(u32 a, u32 b, u32 q) { u32 s = a + b; return ren_min(s, s - q); }
REN_FN u32 ren_modsub(u32 a, u32 b, u32 q) { u32 d = a - b; return ren_min(d, d + q); }
REN_FN u32 ren_modneg(u32 a, u32 q) { u32 r = q - a; return ren_min(r, r - q); }
/* Montgomery product a*b*2^-32 mod q (qn = -q^-1 mod 2^32), for a*b < q*2^32.  The 64-bit
   t + m*q of ren.ring.mont_mul_raw is split into 32-bit halves: its low half is 0 mod 2^32,
   so it carries exactly when lo(a*b) != 0. */
REN_FN u32 ren_montmul(u32 a, u32 b, u32 q, u32 qn) {
  u32 lo = a * b, hi = __umulhi(a, b);
  u32 m = lo * qn;
  u32 r = hi + __umulhi(m, q) + (lo != 0u);
  return ren_min(r, r - q);
}
/* Montgomery reduction t*2^-32 mod q of a 64-bit t < q*2^32 (a sum of products, say) */
REN_FN u32 ren_redc(u64 t, u32 q, u32 qn) {
  const u32 lo = (u32)t, m = lo * qn;
  const u32 r = (u32)(t >> 32) + __umulhi(m, q) + (lo != 0u);
  return ren_min(r, r - q);
}
/* t*2^-32 mod q of any 64-bit t (a long sum of products): t = hi*2^32 + lo gives
   hi + lo*2^-32, i.e. REDC(hi * (2^32 mod q)) + REDC(lo) (r = 2^32 mod q) */
REN_FN u32 ren_redc64(u64 t, u32 q, u32 qn, u32 r) {
  return ren_modadd(ren_montmul((u32)(t >> 32), r, q, qn), ren_redc((u64)(u32)t, q, qn), q);
}
/* Shoup: x*w mod q in [0, 2q) for any u32 x (wp = floor(w*2^32/q)) */
REN_FN u32 ren_shoup(u32 x, u32 w, u32 wp, u32 q) { return x * w - __umulhi(x, wp) * q; }
REN_FN u32 ren_shoup_exact(u32 x, u32 w, u32 wp, u32 q) {
  u32 t = ren_shoup(x, w, wp, q); return ren_min(t, t - q);
}
REN_FN i64 ren_brev(i64 x, int bits) {
  return bits == 0 ? 0 : (i64)(__brev((u32)x) >> (32 - bits));
}
"""

CUDA_PRELUDE = r"""/* Ren kernels: CUDA C (NVRTC) */
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;
#define REN_KERNEL extern "C" __global__
#define REN_FN static __device__ __forceinline__
#define REN_CONST static __constant__ const
#define REN_SHARED __shared__
#define REN_RESTRICT __restrict__
#define REN_SYNC() __syncthreads()
#define REN_PHASE(k)
"""

#: the host shim: CUDA bodies compiled by the system C compiler (see the module docstring)
SHIM_PRELUDE = r"""/* Ren kernels: CUDA bodies on the host (shim header) */
#include <stdint.h>
typedef uint32_t u32;
typedef uint64_t u64;
typedef int64_t i64;
typedef struct { unsigned int x, y, z; } ren_dim3;
#ifdef _OPENMP  /* per thread: the "cpu" device runs a grid's blocks on its OpenMP threads */
#define REN_TLS _Thread_local
#else
#define REN_TLS
#endif
static REN_TLS ren_dim3 threadIdx, blockIdx, blockDim, gridDim;
static REN_TLS int ren_phase;
#ifndef REN_PARALLEL_LIMBS  /* the compiled-CPU backend defines it as an OpenMP loop pragma */
#define REN_PARALLEL_LIMBS(work)
#endif
#define REN_KERNEL static
#define REN_FN static inline
#define REN_CONST static const
#define REN_SHARED static
#define REN_RESTRICT restrict
#define REN_SYNC() ((void)0)
#define REN_PHASE(k) if (ren_phase == (k))
static inline u32 __umulhi(u32 a, u32 b) { return (u32)(((u64)a * b) >> 32); }
static inline u32 __brev(u32 x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
  x = ((x >> 8) & 0x00FF00FFu) | ((x & 0x00FF00FFu) << 8);
  return (x >> 16) | (x << 16);
}
"""


#: the loop dialect's permuted row read (`ren.backend.elementwise_c` stages an automorphism's
#: loads through it): dst[c] = src[t[c]] for c < n, n a multiple of 16, where every aligned
#: block of 16 (and of 8) entries of t points into one aligned block of 16 (8) words of src —
#: an automorphism's NTT-domain map, checked when the kernel is rendered.  One vector load and
#: one lane permute per block instead of 16 (8) scattered loads: the C compiler's gathers of
#: such a map ran at a third of the speed of a stream.  One out-of-line copy per library
#: (``REN_PERMUTE_FN``: noinline; every call passes the tile, so GCC still specializes it for
#: that constant and unrolls it once): inlined, a hoisted transform's kernel held ~120 copies
#: per tile, each unrolled, and its single kernel took 2.9 s of compiler CPU at N = 2^14
#: (0.65 s out of line; the n16-shaped bootstrapping's first call at 2^14: ~9 -> ~3.5 s), and
#: the replay ran no slower (the tile's staging is a call, its body the same loop).
PERMUTE_HELPER = r"""#if (defined(__GNUC__) || defined(__clang__)) && !defined(REN_PERMUTE_INLINE)
#define REN_PERMUTE_FN static __attribute__((noinline))
#else
#define REN_PERMUTE_FN REN_FN
#endif
#if (defined(__AVX512F__) || defined(__AVX2__)) && defined(__GNUC__) && !defined(__clang__)
/* GCC's vector extension: __builtin_shuffle takes each index modulo the lane count and
   becomes vpermd, without <immintrin.h> (~0.11 s of compiler CPU per library) */
#define REN_LANES (sizeof(ren_vec) / 4)
#ifdef __AVX512F__
typedef u32 ren_vec __attribute__((vector_size(64), aligned(4), may_alias));
#else
typedef u32 ren_vec __attribute__((vector_size(32), aligned(4), may_alias));
#endif
REN_PERMUTE_FN void ren_permute(u32* REN_RESTRICT dst, const u32* REN_RESTRICT src,
                               const u32* REN_RESTRICT t, i64 n) {
  for (i64 c = 0; c < n; c += REN_LANES) {
    const ren_vec v = *(const ren_vec*)(src + (t[c] & ~(u32)(REN_LANES - 1)));
    *(ren_vec*)(dst + c) = __builtin_shuffle(v, *(const ren_vec*)(t + c));
  }
}
#elif defined(__AVX512F__)
#include <immintrin.h>
REN_PERMUTE_FN void ren_permute(u32* REN_RESTRICT dst, const u32* REN_RESTRICT src,
                               const u32* REN_RESTRICT t, i64 n) {
  const __m512i low = _mm512_set1_epi32(15);
  for (i64 c = 0; c < n; c += 16) {
    const __m512i ti = _mm512_loadu_si512((const void*)(t + c));
    const __m512i v = _mm512_loadu_si512((const void*)(src + (t[c] & ~15u)));
    _mm512_storeu_si512((void*)(dst + c), _mm512_permutexvar_epi32(_mm512_and_si512(ti, low), v));
  }
}
#elif defined(__AVX2__)
#include <immintrin.h>
REN_PERMUTE_FN void ren_permute(u32* REN_RESTRICT dst, const u32* REN_RESTRICT src,
                               const u32* REN_RESTRICT t, i64 n) {
  const __m256i low = _mm256_set1_epi32(7);
  for (i64 c = 0; c < n; c += 8) {
    const __m256i ti = _mm256_loadu_si256((const __m256i*)(t + c));
    const __m256i v = _mm256_loadu_si256((const __m256i*)(src + (t[c] & ~7u)));
    _mm256_storeu_si256((__m256i*)(dst + c),
                        _mm256_permutevar8x32_epi32(v, _mm256_and_si256(ti, low)));
  }
}
#else
REN_PERMUTE_FN void ren_permute(u32* REN_RESTRICT dst, const u32* REN_RESTRICT src,
                               const u32* REN_RESTRICT t, i64 n) {
  for (i64 c = 0; c < n; ++c) dst[c] = src[t[c]];
}
#endif
"""


@dataclass(frozen=True)
class Dialect:
    """A C dialect: its prelude, whether kernels get host launch wrappers (`ren.backend.c_host`)
    and how an elementwise kernel walks its iteration space (`elementwise_loop`: one loop in the
    function instead of one thread per element)."""

    name: str
    prelude: str
    host: bool
    elementwise_loop: bool = False

    def elementwise_launch(self, total: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(grid, block) of an elementwise kernel over `total` elements."""
        if self.elementwise_loop:
            return (1, 1, 1), (1, 1, 1)
        return (max(1, -(-total // BLOCK)), 1, 1), (BLOCK, 1, 1)


CUDA = Dialect("cuda", CUDA_PRELUDE, host=False)
SHIM = Dialect("shim", SHIM_PRELUDE, host=True)
#: the loop dialect's per-limb function of an elementwise kernel (`ren.backend.elementwise_c`):
#: kept out of line, so its pointer parameters stay `restrict` when OpenMP outlines the limb loop
ROW_HELPER = r"""#if defined(__GNUC__) || defined(__clang__)
#define REN_ROW static __attribute__((noinline))
#else
#define REN_ROW static
#endif
"""
C = Dialect("c", SHIM_PRELUDE + PERMUTE_HELPER + ROW_HELPER, host=True, elementwise_loop=True)


def translation_unit(programs: list[Program], dialect: Dialect) -> str:
    """One source file holding every distinct kernel of `programs` (kernel names are hashes of
    their text, so equal names are equal functions), with the dialect's prelude and, in a host
    dialect, each kernel's grid wrapper (`host_wrapper`) — except the elementwise loop nests of
    a loop dialect (`needs_host_wrapper`)."""
    seen: dict[str, CKernel] = {}
    for p in programs:
        for k in p.kernels:
            seen.setdefault(k.name, k)
    parts = [dialect.prelude, CORE_HELPERS]
    parts += [k.source for k in seen.values()]
    if dialect.host:
        parts += [host_wrapper(k) for k in seen.values() if needs_host_wrapper(k, dialect)]
    return "\n".join(parts)


#: the name prefix of every elementwise kernel (`ren.backend.elementwise_c`)
ELEMENTWISE_PREFIX = "ren_ew_"


def needs_host_wrapper(k: CKernel, dialect: Dialect) -> bool:
    """Whether kernel `k` gets a ``ren_host_`` grid wrapper in `dialect`'s translation units:
    every kernel of a host dialect but the elementwise kernels of a loop dialect (`C`), which
    the ``"cpu"`` device calls through its own ``ren_cpu_`` entry points.  Such a wrapper was
    dead code that doubled where GCC inlined the kernel: leaving it out cut a bootstrapping's
    compiler CPU by ~30 % (N = 2^14, 150 kernels: 8.1 -> 5.6 s at -O2)."""
    return dialect.host and not (dialect.elementwise_loop
                                 and k.name.startswith(ELEMENTWISE_PREFIX))


def host_wrapper(k: CKernel) -> str:
    """``ren_host_<name>(dims, args)``: run kernel `k` over a grid on the host (shim dialects).
    dims = (grid x, y, z, block x, y, z); args[i] is the pointer of pointer parameter i, or
    points at the value of a scalar one.  Every phase runs for all threads of a block before
    the next phase starts (see the module docstring)."""
    call = ", ".join(f"({p.ctype})args[{i}]" if p.is_pointer else f"*(const {p.ctype}*)args[{i}]"
                     for i, p in enumerate(k.params))
    return f"""
void ren_host_{k.name}(const long long* dims, void** args) {{
  gridDim.x = (unsigned)dims[0]; gridDim.y = (unsigned)dims[1]; gridDim.z = (unsigned)dims[2];
  blockDim.x = (unsigned)dims[3]; blockDim.y = (unsigned)dims[4]; blockDim.z = (unsigned)dims[5];
  for (blockIdx.z = 0; blockIdx.z < gridDim.z; ++blockIdx.z)
  for (blockIdx.y = 0; blockIdx.y < gridDim.y; ++blockIdx.y)
  for (blockIdx.x = 0; blockIdx.x < gridDim.x; ++blockIdx.x)
    for (ren_phase = 0; ren_phase < {k.phases}; ++ren_phase)
      for (threadIdx.z = 0; threadIdx.z < blockDim.z; ++threadIdx.z)
      for (threadIdx.y = 0; threadIdx.y < blockDim.y; ++threadIdx.y)
      for (threadIdx.x = 0; threadIdx.x < blockDim.x; ++threadIdx.x)
        {k.name}({call});
}}
"""


# -- the loop dialect's shared pieces of elementwise kernels (`ren.backend.elementwise_c`) --
#: heads every kernel that loops over (limb, piece) tasks: REN_PIECES(L, N, align), the pieces
#: per limb — 1 unless OpenMP runs it on more threads (``ren_threads``, the ``"cpu"`` library's)
#: than 4/5 of what whole limbs would keep busy (cpu_ring.c's ren_split: L < T, or 3 limbs on
#: 2 threads); at most 8, each a multiple of `align` words.  Defined once per translation unit.
PIECES_PRELUDE = r"""#ifndef REN_PIECES
#ifdef _OPENMP
static inline i64 ren_pieces(i64 L, i64 N, i64 align) {
  const i64 T = ren_threads;
  if (T < 2 || 5 * L >= 4 * T * ((L + T - 1) / T)) return 1;
  i64 p = 8;
  while (p > 1 && N % (p * align) != 0) p >>= 1;
  return p;
}
#define REN_PIECES(L, N, align) ren_pieces(L, N, align)
#else
#define REN_PIECES(L, N, align) 1LL
#endif
#endif
"""


def team_path(loop: str, body: str) -> str:
    """The kernel's path inside a plan team (``ren_run_plan_teams``, cpu_ring_plan.c): when the
    library defines ``REN_TEAM_FOR`` (the ``"cpu"`` device's, under OpenMP) and the kernel is
    called by every thread of an open team, the tasks of `loop` (each runs `body`) are shared
    out by orphaned worksharing without a barrier (the plan runner's own barrier follows the
    kernel), whatever the kernel's size; ``REN_TEAM_TASK()`` counts each task per thread."""
    return (f"#ifdef REN_TEAM_FOR\n  if (REN_TEAM()) {{\n    REN_TEAM_FOR\n    {loop} {{\n"
            f"      REN_TEAM_TASK();\n      {body}\n    }}\n    return;\n  }}\n#endif\n")


def finish_kernel(prefix: str, template: str, params: tuple[Param, ...],
                  phases: int = 1) -> CKernel:
    """A CKernel from a body template whose name placeholder is ``@K``: the name is `prefix`
    plus a hash of the text, so equal kernels share a name (and a compiled function)."""
    digest = hashlib.sha1(template.encode()).hexdigest()[:16]
    name = f"{prefix}_{digest}"
    return CKernel(name, template.replace("@K", name), params, phases)


def signature(params: tuple[Param, ...], restrict: bool = False) -> str:
    """C parameter list; `restrict` marks pointers as not aliasing each other (elementwise
    kernels: a schedule never writes a buffer that the same kernel reads)."""
    qual = " REN_RESTRICT" if restrict else ""
    return ", ".join(f"{p.ctype}{qual if p.is_pointer else ''} {p.name}" for p in params)


#: elementwise programs by item key, then dialect name (`render_program`, `remember`)
_programs: dict[tuple, dict[str, Program]] = {}
_programs_lock = threading.Lock()
#: distinct kernels kept; past it the memo starts again (a bootstrapping has ~360)
PROGRAMS_KEPT = 4096


def render_program(item: ScheduledKernel, dialect: Dialect, **options) -> Program:
    """The program of any compute kernel (elementwise or a ring kernel) in `dialect`.
    `options` tune library kernels (e.g. ``shared_chunk`` of the NTT; see `ren.backend.ring_c`).

    An elementwise program is a function of the item's key and the dialect alone (the kernel
    cache of every device relies on it), so it is rendered once per process and kept
    (`rendered` reads it back; `remember` puts in programs rendered elsewhere, as a plan
    cache entry carries them)."""
    if item.kind == ELEMENTWISE:
        from ren.backend.elementwise_c import render_elementwise

        key = item.key
        known = _programs.get(key)
        program = known.get(dialect.name) if known is not None else None
        if program is None:
            program = render_elementwise(item, dialect)
            remember(key, dialect.name, program)
        return program
    from ren.backend.ring_c import render_ring_call

    call = item.ring_call
    if call is None:
        raise RealizeError(f"render_c: cannot render a {item.kind} item ({item.name})")
    return render_ring_call(call, item.name, **options)


def remember(key: tuple, dialect: str, program: Program) -> None:
    """Keep `program` as the `dialect` rendering of the elementwise kernel of item key `key`
    (the caller vouches that `render_program` renders exactly it)."""
    with _programs_lock:
        if len(_programs) >= PROGRAMS_KEPT and key not in _programs:
            _programs.clear()
        _programs.setdefault(key, {})[dialect] = program


def rendered(key: tuple) -> dict[str, Program]:
    """The programs kept for item key `key`, by dialect name (empty: none rendered)."""
    return dict(_programs.get(key, {}))


def forget_programs() -> None:
    """Drop every kept program (tests; `render_program` renders again)."""
    with _programs_lock:
        _programs.clear()


__all__ = [
    "BLOCK",
    "CUDA",
    "ELEMENTWISE_PREFIX",
    "SHIM",
    "Arg",
    "C",
    "CKernel",
    "Dialect",
    "Launch",
    "Param",
    "Program",
    "forget_programs",
    "needs_host_wrapper",
    "remember",
    "render_program",
    "rendered",
    "translation_unit",
]
