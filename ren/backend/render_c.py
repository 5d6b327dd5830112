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
  one loop nest, limbs outside (``REN_PARALLEL_LIMBS``: an OpenMP pragma there, nothing under
  the shim) and coefficients inside, so its indices are affine and the C compiler vectorizes
  it; the library kernels that backend takes from `ren.backend.ring_c` (TO_RNS, RANDOM) reuse
  the SHIM prelude and host wrappers.

Elementwise kernels (`render_elementwise`): one thread per element of ``space = (L, N)`` (a 1-D
grid of 256-thread blocks, bounds-checked), every AST node one SSA variable, index values as
i64 (the ALU table's int64 semantics, `ren.alu`), residues as u32 with 32-bit Montgomery
multiplication through ``__umulhi``.  Moduli, per-limb constants and index tables of the AST are
baked into the source as constant tables.  Library kernels (one per `ren.ring.RingKernel`) live
in `ren.backend.ring_c`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ren.alu import alu, neg_inv32
from ren.errors import RealizeError
from ren.ir import gidx
from ren.kernel import ScheduledKernel
from ren.node import Node, toposort
from ren.ops import DType, Op

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
Arg = tuple[str, object]


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
static ren_dim3 threadIdx, blockIdx, blockDim, gridDim;
static int ren_phase;
#ifndef REN_PARALLEL_LIMBS  /* the compiled-CPU backend defines it as an OpenMP loop pragma */
#define REN_PARALLEL_LIMBS
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
C = Dialect("c", SHIM_PRELUDE, host=True, elementwise_loop=True)
DIALECTS = {d.name: d for d in (CUDA, SHIM, C)}


def translation_unit(programs: list[Program], dialect: Dialect) -> str:
    """One source file holding every distinct kernel of `programs` (kernel names are hashes of
    their text, so equal names are equal functions), with the dialect's prelude."""
    seen: dict[str, CKernel] = {}
    for p in programs:
        for k in p.kernels:
            seen.setdefault(k.name, k)
    parts = [dialect.prelude, CORE_HELPERS]
    parts += [k.source for k in seen.values()]
    if dialect.host:
        parts += [host_wrapper(k) for k in seen.values()]
    return "\n".join(parts)


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


# -- elementwise kernels ---------------------------------------------------------------------
def _array(ctype: str, name: str, values) -> str:
    body = ", ".join(str(int(v)) + ("LL" if ctype == "i64" else "u") for v in values)
    return f"REN_CONST {ctype} {name}[{len(values)}] = {{{body}}};"


#: index ops that keep an index expression from being affine in GIDX1 (a C compiler cannot
#: vectorize a load through them, and they cost several operations per element)
_NONAFFINE = frozenset({Op.BITREV, Op.TABLE, Op.IAND, Op.ISHR, Op.ISHL, Op.CMPEQ, Op.WHERE})


class _Elementwise:
    """Renders one elementwise AST (see `render_elementwise`).  With `fold_tables` (the loop
    dialects), a non-affine index expression of the coefficient index alone — an automorphism's
    map, say — is evaluated once here into a table of N entries, so the loop reads one table
    entry instead of recomputing it for every limb; and a WHERE whose condition depends on the
    limb alone (a CONCAT of rows from two buffers) is resolved per limb: limbs taking the same
    branches share one inner loop that loads only from the taken branch."""

    def __init__(self, ast: Node, space: tuple[int, int], fold_tables: bool = False):
        self.space = space
        self.fold_tables = fold_tables
        self.tables: list[str] = []
        self._table_names: dict[tuple, str] = {}
        self.lines: list[str] = []
        self.var: dict[Node, str] = {}
        self.slots: dict[int, object] = {}
        self._render(ast)

    def _foldable(self, order: list[Node]) -> dict[Node, bool]:
        """Nodes to evaluate at render time: non-affine index expressions of GIDX1 only."""
        coeff_only: dict[Node, bool] = {}
        nonaffine: dict[Node, bool] = {}
        for n in order:
            if n.dtype is not DType.INDEX or n.op in (Op.LOAD, Op.INDEX, Op.SLOT):
                coeff_only[n], nonaffine[n] = False, False
                continue
            if n.op is Op.GIDX:
                coeff_only[n] = n.arg == 1
            else:
                coeff_only[n] = all(coeff_only.get(x, False) for x in n.src)
            nonaffine[n] = n.op in _NONAFFINE or any(nonaffine.get(x, False) for x in n.src)
        return {n: coeff_only[n] and nonaffine[n] for n in order}

    def _index_values(self, n: Node, memo: dict[Node, np.ndarray]) -> np.ndarray:
        """The value of an index expression of GIDX1 at every coefficient (int64)."""
        if n not in memo:
            if n.op is Op.GIDX:
                memo[n] = np.arange(self.space[1], dtype=np.int64)
            elif n.op is Op.ICONST:
                memo[n] = np.int64(n.arg)
            else:
                memo[n] = alu(n.op, n.arg)(*(self._index_values(x, memo) for x in n.src))
        return memo[n]

    def _table(self, ctype: str, values) -> str:
        key = (ctype, tuple(values))
        name = self._table_names.get(key)
        if name is None:  # one table per distinct contents (row classes share them)
            name = self._table_names[key] = f"@K_t{len(self.tables)}"
            self.tables.append(_array(ctype, name, values))
        return name

    def _expr(self, n: Node) -> str:
        v = self.var
        s = [v[x] for x in n.src] if n.op is not Op.LOAD else []
        op = n.op
        if op is Op.GIDX:
            return ("g0", "g1")[n.arg]
        if op is Op.ICONST:
            return f"((i64){int(n.arg)}LL)"
        binary = {Op.IADD: "+", Op.IMUL: "*", Op.IAND: "&", Op.ISHR: ">>", Op.ISHL: "<<"}
        if op in binary:
            return f"({s[0]} {binary[op]} {s[1]})"
        if op is Op.CMPEQ:
            return f"((i64)({s[0]} == {s[1]}))"
        if op is Op.BITREV:
            return f"ren_brev({s[0]}, {int(n.arg)})"
        if op is Op.TABLE:
            return f"{self._table('i64', n.arg)}[{s[0]}]"
        if op is Op.WHERE:
            return f"({s[0]} != 0 ? {s[1]} : {s[2]})"
        if op is Op.VCONST:
            return f"{self._table('u32', n.arg)}[{s[0]}]"
        if op is Op.LOAD:
            index = n.src[0]
            slot = index.src[0].arg
            self.slots[slot.index] = slot
            li, ci = (v[x] for x in index.src[1:])
            return f"s{slot.index}[{li} * {slot.strides[0]}LL + {ci} * {slot.strides[1]}LL]"
        if op is Op.MODADD:
            return f"ren_modadd({s[0]}, {s[1]}, {s[2]})"
        if op is Op.MODSUB:
            return f"ren_modsub({s[0]}, {s[1]}, {s[2]})"
        if op is Op.MODNEG:
            return f"ren_modneg({s[0]}, {s[1]})"
        if op is Op.MONTMUL:
            q = s[2]
            return f"ren_montmul({s[0]}, {s[1]}, {q}, {q}n)"
        raise RealizeError(f"render_c: {op.name} cannot appear in an elementwise kernel")

    def _row_values(self, n: Node, memo: dict[Node, np.ndarray]) -> np.ndarray:
        """The value of an index expression of GIDX0 at every limb (int64)."""
        if n not in memo:
            if n.op is Op.GIDX:
                memo[n] = np.arange(self.space[0], dtype=np.int64)
            elif n.op is Op.ICONST:
                memo[n] = np.int64(n.arg)
            else:
                memo[n] = alu(n.op, n.arg)(*(self._row_values(x, memo) for x in n.src))
        return memo[n]

    def _row_classes(self, order: list[Node]) -> list[tuple[list[int], dict[Node, Node]]]:
        """Rows grouped by the branch every limb-only WHERE takes there (a CONCAT's source
        buffer, say): per group, its rows and the branch chosen at each such WHERE."""
        row_only: dict[Node, bool] = {}
        for n in order:
            if n.op is Op.GIDX:
                row_only[n] = n.arg == 0
            elif n.op is Op.ICONST:
                row_only[n] = True
            else:
                row_only[n] = n.dtype is DType.INDEX and n.op not in (Op.LOAD, Op.INDEX) and \
                    all(row_only.get(x, False) for x in n.src)
        wheres = [n for n in order if n.op is Op.WHERE and row_only.get(n.src[0])]
        L = self.space[0]
        if not wheres:
            return [(list(range(L)), {})]
        memo: dict[Node, np.ndarray] = {}
        conds = [np.broadcast_to(self._row_values(w.src[0], memo) != 0, (L,)) for w in wheres]
        groups: dict[tuple[bool, ...], list[int]] = {}
        for row in range(L):
            groups.setdefault(tuple(bool(c[row]) for c in conds), []).append(row)
        return [(rows, {w: w.src[1] if taken else w.src[2] for w, taken in zip(wheres, sig)})
                for sig, rows in groups.items()]

    def _dot_products(self, order: list[Node], live: set[Node],
                      users: dict[Node, list[Node]]) -> tuple[dict[Node, list[Node]], set[Node]]:
        """Sums of Montgomery products under one modulus (the key-switching inner product):
        root MODADD -> its MONTMUL terms, and the nodes the fused sum replaces."""
        def one_user_in_chain(x: Node, modulus: Node) -> bool:
            us = users.get(x, [])
            return len(us) == 1 and us[0].op is Op.MODADD and us[0].src[2] is modulus

        dots: dict[Node, list[Node]] = {}
        skip: set[Node] = set()
        for n in order:
            if n not in live or n.op is not Op.MODADD or n.src[2].op is not Op.MODULUS:
                continue
            modulus = n.src[2]
            if one_user_in_chain(n, modulus):
                continue  # not a root: part of a longer sum
            terms, inner, stack = [], [], [n.src[0], n.src[1]]
            while stack:
                x = stack.pop()
                if x.op is Op.MODADD and x.src[2] is modulus and one_user_in_chain(x, modulus):
                    inner.append(x)
                    stack += [x.src[0], x.src[1]]
                else:
                    terms.append(x)
            if len(terms) < 3 or any(t.op is not Op.MONTMUL or t.src[2] is not modulus
                                     for t in terms):
                continue
            dots[n] = terms
            skip.update(inner)
            skip.update(t for t in terms if len(users.get(t, [])) == 1)
        return dots, skip

    def _dot(self, root: Node, terms: list[Node]) -> str:
        """A fused sum of Montgomery products: 64-bit products summed in chunks that stay below
        q·2^32 (k·q < 2^32 for the largest modulus), one Montgomery reduction per chunk."""
        modulus = root.src[2]
        q = self.var[modulus]
        k = max(1, ((1 << 32) - 1) // max(modulus.arg))
        sums = []
        for i in range(0, len(terms), k):
            chunk = terms[i : i + k]
            prods = " + ".join(f"(u64){self.var[t.src[0]]} * {self.var[t.src[1]]}" for t in chunk)
            sums.append(f"ren_redc({prods}, {q}, {q}n)")
        expr = sums[0]
        for other in sums[1:]:
            expr = f"ren_modadd({expr}, {other}, {q})"
        return expr

    def _render(self, store: Node) -> None:
        if store.op is not Op.STORE or store.src[0].op is not Op.INDEX:
            raise RealizeError("render_c: an elementwise kernel must be STORE(INDEX(...), value)")
        target, value = store.src
        out = target.src[0].arg
        if out.index != 0 or target.src[1:] != (gidx(0), gidx(1)):
            raise RealizeError("render_c: elementwise kernels store to slot 0 at (GIDX0, GIDX1)")
        self.slots[0] = out
        order = toposort(value)
        for n in order:  # every slot is a parameter, even one that no row class reads
            if n.op is Op.SLOT:
                self.slots[n.arg.index] = n.arg
        fold = self._foldable(order) if self.fold_tables else {}
        classes = self._row_classes(order) if self.fold_tables else \
            [(list(range(self.space[0])), {})]
        memo: dict[Node, np.ndarray] = {}
        self.groups: list[tuple[list[int], list[str]]] = []
        for rows, choose in classes:
            self.var, self.lines = {}, []
            self._emit(order, value, fold, choose, memo)
            self.lines.append(f"s0[g0 * {out.strides[0]}LL + g1 * {out.strides[1]}LL] = "
                              f"{self.var[value]};")
            self.groups.append((rows, self.lines))

    def _emit(self, order: list[Node], value: Node, fold: dict[Node, bool],
              choose: dict[Node, Node], memo: dict[Node, np.ndarray]) -> None:
        """The lines computing `value` where each WHERE of `choose` takes its chosen branch
        (the other branch's loads are not emitted)."""
        live: set[Node] = set()
        stack = [value]
        while stack:
            n = stack.pop()
            if n not in live:
                live.add(n)
                stack.extend((choose[n],) if n in choose else n.src)
        users: dict[Node, list[Node]] = {}
        for n in live:
            for x in (choose[n],) if n in choose else n.src:
                users.setdefault(x, []).append(n)
        dots, skip = self._dot_products(order, live, users) if self.fold_tables else ({}, set())
        for n in order:
            if n not in live or n.op in (Op.SLOT, Op.INDEX) or n in skip:
                continue
            if n in choose:
                self.var[n] = self.var[choose[n]]
                continue
            if n in dots:
                self.var[n] = name = f"v{len(self.var)}"
                self.lines.append(f"const u32 {name} = {self._dot(n, dots[n])};")
                continue
            if fold.get(n) and all(fold.get(u) for u in users.get(n, ())):
                continue  # only feeds other folded expressions: never emitted
            name = f"v{len(self.var)}"
            self.var[n] = name
            if fold.get(n):
                values = np.broadcast_to(self._index_values(n, memo), (self.space[1],))
                ctype = "u32" if values.min() >= 0 and values.max() < (1 << 32) else "i64"
                table = self._table(ctype, values.tolist())
                self.lines.append(f"const i64 {name} = (i64){table}[g1];")
                continue
            if n.op is Op.MODULUS:  # the modulus and its Montgomery constant, per limb
                q = self._table("u32", n.arg)
                qn = self._table("u32", neg_inv32(np.array(n.arg, dtype=np.uint64)).tolist())
                limb = self.var[n.src[0]]
                self.lines.append(f"const u32 {name} = {q}[{limb}], {name}n = {qn}[{limb}];")
                continue
            ctype = "i64" if n.dtype is DType.INDEX else "u32"
            self.lines.append(f"const {ctype} {name} = {self._expr(n)};")

    def params(self) -> tuple[Param, ...]:
        n = max(self.slots) + 1
        if sorted(self.slots) != list(range(n)):
            raise RealizeError(f"render_c: kernel slots {sorted(self.slots)} are not 0..{n - 1}")
        return tuple(Param(f"s{i}", "u32*" if i == 0 else "const u32*") for i in range(n))

    def template(self, loop: bool) -> str:
        L, N = self.space
        total = L * N
        params = signature(self.params(), restrict=True)
        if loop:  # limbs outside, coefficients inside: affine indices the C compiler vectorizes
            if len(self.groups) == 1:
                body = "\n    ".join(self.groups[0][1])
                inner = (f"  for (i64 g0 = 0; g0 < {L}LL; ++g0)\n"
                         f"  for (i64 g1 = 0; g1 < {N}LL; ++g1) {{\n    {body}\n  }}\n")
            else:  # one inner loop per row class, chosen per limb
                classes = [0] * L
                cases = []
                for k, (rows, lines) in enumerate(self.groups):
                    for r in rows:
                        classes[r] = k
                    body = "\n        ".join(lines)
                    cases.append(f"    case {k}:\n      for (i64 g1 = 0; g1 < {N}LL; ++g1) {{\n"
                                 f"        {body}\n      }}\n      break;")
                rc = self._table("u32", classes)
                inner = (f"  for (i64 g0 = 0; g0 < {L}LL; ++g0) {{\n    switch ({rc}[g0]) {{\n"
                         + "\n".join(cases) + "\n    }\n  }\n")
            tables = "\n".join(self.tables)
            return f"{tables}\nREN_KERNEL void @K({params}) {{\n  REN_PARALLEL_LIMBS\n{inner}}}\n"
        (_, lines), = self.groups
        body = "\n    ".join(lines)
        tables = "\n".join(self.tables)
        walk = (f"const i64 gid = (i64)blockIdx.x * blockDim.x + threadIdx.x;\n"
                f"  if (gid >= {total}LL) return;\n  {{")
        return (f"{tables}\nREN_KERNEL void @K({params}) {{\n  {walk}\n"
                f"    const i64 g0 = gid / {N}LL, g1 = gid % {N}LL;\n    {body}\n  }}\n}}\n")


def render_elementwise(item: ScheduledKernel, dialect: Dialect) -> Program:
    """The program of an elementwise kernel: one function, one launch over ``item.space``."""
    r = _Elementwise(item.ast, item.space, fold_tables=dialect.elementwise_loop)
    params = r.params()
    kernel = finish_kernel("ren_ew", r.template(dialect.elementwise_loop), params)
    grid, block = dialect.elementwise_launch(item.space[0] * item.space[1])
    launch = Launch(kernel.name, grid, block, tuple(("slot", i) for i in range(len(params))))
    return Program(item.name, (kernel,), (launch,))


def render_program(item: ScheduledKernel, dialect: Dialect, **options) -> Program:
    """The program of any compute kernel (elementwise or a ring kernel) in `dialect`.
    `options` tune library kernels (e.g. ``shared_chunk`` of the NTT; see `ren.backend.ring_c`)."""
    if item.kind == "elementwise":
        return render_elementwise(item, dialect)
    from ren.backend.ring_c import render_ring_call

    call = item.ast.src[1] if item.ast is not None and item.ast.op is Op.STORE else None
    if call is None or call.op is not Op.RING_CALL:
        raise RealizeError(f"render_c: cannot render a {item.kind} item ({item.name})")
    return render_ring_call(call.arg, item.name, **options)


__all__ = [
    "BLOCK",
    "CUDA",
    "DIALECTS",
    "SHIM",
    "Arg",
    "C",
    "CKernel",
    "Dialect",
    "Launch",
    "Param",
    "Program",
    "render_elementwise",
    "render_program",
    "translation_unit",
]
