"""Library kernels for the ring calls (`ren.ring.RingKernel`), in the C-family vocabulary of
`ren.backend.render_c`: one `Program` per `RingCall`, written for this project.

Every kernel reads its constants from the call's tables (`RingCall.tables()`, uploaded once per
call) and has the call's sizes (N, limb counts, words) baked in as literals, so one compiled
function serves every call of the same shape.  All storage is Montgomery form; every result is
fully reduced, so it is the same word as the NumPy backend's (`ren.backend.numpy_backend`).

* NTT / INTT — the convention of `ren.ring.ntt` (slot j holds a(psi^(2·brv(j)+1))):
  Cooley–Tukey forward, Gentleman–Sande inverse, Shoup multiplication by the tables' twiddles,
  fully reduced butterflies (so any modulus below 2^31 works).  Stages whose butterflies stay
  inside a chunk of C = min(N, 2^12) coefficients run in one *shared-memory* kernel (a block per
  chunk and limb, the chunk held in shared memory, one phase per stage); the stages above it
  (N > C) run as one global-memory kernel launch per stage, a thread per butterfly.  The inverse
  scales by N^-1 in its last step.
* TO_RNS — a thread per output residue: Horner over the packed words (u64 remainder), the
  two's-complement wrap for negative coefficients, then Montgomery form.
* BASIS_CONVERT — a thread per output residue: a copy (a shared modulus) or
  sum_i [x_i·qhat_i^-1]_{q_i}·(Q/q_i) mod p_j.
* RESCALE — a thread per output residue: the exact divide-and-round of `ren.ring.rns`, one
  dropped modulus at a time, in registers.
* RANDOM — the value of a RANDOM node is defined by `ren.sampling`, which expands the node's
  seed with SHAKE-256 and shapes it with Box–Muller (float64) and a stable argsort: each SHAKE
  stream (a uniform limb, a 1024-coefficient part of a small distribution) is a sequential
  sponge and float64 libm results need not match a GPU's to the last bit, so no
  device-side generator can reproduce it exactly.  The program therefore expands on the host
  (`Program.prepare`, run on every call — the seed is in the call) into the smallest exact form:
  standard residues for ``uniform``, N signed coefficients for the small distributions; the
  device kernel reduces them mod each q_i and converts to Montgomery form.  RANDOM runs at key
  generation and encryption, never inside a replayed evaluation plan, so the upload is off the
  hot path; CUDA and NumPy realizations of a RANDOM node are identical by construction.
"""

from __future__ import annotations

import numpy as np

from ren.backend.render_c import (
    BLOCK,
    Arg,
    CKernel,
    Launch,
    Param,
    Program,
    finish_kernel,
    signature,
)
from ren.device import get_device
from ren.errors import RealizeError
from ren.kernel import RingCall
from ren.ring import RingKernel
from ren.sampling import sample_signed, validate

#: the largest chunk an NTT block keeps in shared memory (4096 u32 = 16 KiB)
SHARED_CHUNK = 1 << 12
#: threads per block of the shared-memory NTT (each thread runs C/2/threads butterflies a stage)
SHARED_THREADS = 512

OUT = Param("out", "u32*")
IN = Param("in", "const u32*")


def _ctype(arr: np.ndarray) -> str:
    if arr.dtype == np.uint32:
        return "const u32*"
    if arr.dtype == np.int64:
        return "const i64*"
    raise RealizeError(f"ring_c: no C type for a {arr.dtype} table")


def _table_params(tables: dict[str, np.ndarray], names: tuple[str, ...]) -> tuple[Param, ...]:
    """Parameters for the call's tables `names` (C names ``t_<name>``)."""
    return tuple(Param(f"t_{n}", _ctype(tables[n])) for n in names)


def _grid(total: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    return (max(1, -(-total // BLOCK)), 1, 1), (BLOCK, 1, 1)


def _thread_head(total: int) -> str:
    return (f"const i64 gid = (i64)blockIdx.x * blockDim.x + threadIdx.x;\n"
            f"  if (gid >= {total}LL) return;")


def _launch(k: CKernel, grid, block, ints: tuple[int, ...] = (),
            in_place: bool = False) -> Launch:
    """A launch binding k's parameters in order: ``out`` slot 0, ``in``/``words`` slot 1 (slot
    0 when `in_place`), ``t_<name>`` the call's table <name>, ``values``/``coeffs`` the host
    arrays of `Program.prepare`, scalars from `ints`."""
    args: list[Arg] = []
    ints_left = list(ints)
    for p in k.params:
        if p.name == "out":
            args.append(("slot", 0))
        elif p.name in ("in", "words"):
            args.append(("slot", 0 if in_place else 1))
        elif p.name in ("values", "coeffs"):
            args.append(("host", p.name))
        elif p.name.startswith("t_"):
            args.append(("table", p.name[2:]))
        else:
            args.append(("int", ints_left.pop(0)))
    return Launch(k.name, grid, block, tuple(args))


# -- NTT / INTT ---------------------------------------------------------------------------------
def _u32_tables(names: tuple[str, ...]) -> tuple[Param, ...]:
    return tuple(Param(f"t_{n}", "const u32*") for n in names)


def _stage_kernel(N: int, L: int, inverse: bool) -> CKernel:
    """One global-memory butterfly stage (a launch per stage with m = 2^logm blocks)."""
    logn = N.bit_length() - 1
    half = N // 2
    tabs: tuple[str, ...]
    ints: tuple[Param, ...]
    if inverse:
        tabs = ("inv_twiddles", "inv_twiddles_shoup", "q", "n_inv", "n_inv_shoup")
        fly = """const u32 X = in[x], Y = in[y];
  u32 sum = ren_modadd(X, Y, q);
  u32 dif = ren_shoup_exact(ren_modsub(X, Y, q), t_inv_twiddles[w], t_inv_twiddles_shoup[w], q);
  if (scale) {  /* the last inverse stage also multiplies by N^-1 */
    sum = ren_shoup_exact(sum, t_n_inv[l], t_n_inv_shoup[l], q);
    dif = ren_shoup_exact(dif, t_n_inv[l], t_n_inv_shoup[l], q);
  }
  out[x] = sum; out[y] = dif;"""
        ints = (Param("logm", "int"), Param("scale", "int"))
    else:
        tabs = ("twiddles", "twiddles_shoup", "q")
        fly = """const u32 X = in[x];
  const u32 T = ren_shoup_exact(in[y], t_twiddles[w], t_twiddles_shoup[w], q);
  out[x] = ren_modadd(X, T, q); out[y] = ren_modsub(X, T, q);"""
        ints = (Param("logm", "int"),)
    params = (OUT, IN, *_u32_tables(tabs), *ints)
    text = f"""REN_KERNEL void @K({signature(params)}) {{
  {_thread_head(L * half)}
  const int l = (int)(gid >> {logn - 1}), b = (int)(gid & {half - 1});
  const int logt = {logn - 1} - logm;
  const int i = b >> logt, k = b & ((1 << logt) - 1);
  const i64 base = (i64)l * {N}LL;
  const i64 x = base + ((i64)i << (logt + 1)) + k, y = x + (1 << logt);
  const i64 w = base + (1 << logm) + i;
  const u32 q = t_q[l];
  {fly}
}}
"""
    return finish_kernel("ren_intt_stage" if inverse else "ren_ntt_stage", text, params)


def _shared_kernel(N: int, L: int, C: int, inverse: bool, scale: bool) -> CKernel:
    """The stages whose butterflies stay inside a chunk of C coefficients: a block per (chunk,
    limb) holds its chunk in shared memory; phase 0 loads, one phase per stage, a last phase
    stores (scaling by N^-1 when the inverse transform ends here)."""
    logn, logc = N.bit_length() - 1, C.bit_length() - 1
    if inverse:
        tabs = ("inv_twiddles", "inv_twiddles_shoup", "q") + (
            ("n_inv", "n_inv_shoup") if scale else ())
        stages = range(logc)  # logt = 0, 1, …: Gentleman–Sande from the smallest butterflies
    else:
        tabs = ("twiddles", "twiddles_shoup", "q")
        stages = range(logc - 1, -1, -1)  # Cooley–Tukey from the largest butterflies
    params = (OUT, IN, *_u32_tables(tabs))
    phases = [f"REN_PHASE(0) {{\n    for (int e = threadIdx.x; e < {C}; e += blockDim.x) "
              f"s[e] = in[off + e];\n  }}"]
    for p, logt in enumerate(stages, start=1):
        t, logm = 1 << logt, logn - 1 - logt
        if inverse:
            fly = ("const u32 X = s[x], Y = s[y];\n"
                   "      s[x] = ren_modadd(X, Y, q);\n"
                   "      s[y] = ren_shoup_exact(ren_modsub(X, Y, q), t_inv_twiddles[w], "
                   "t_inv_twiddles_shoup[w], q);")
        else:
            fly = ("const u32 X = s[x];\n"
                   "      const u32 T = ren_shoup_exact(s[y], t_twiddles[w], "
                   "t_twiddles_shoup[w], q);\n"
                   "      s[x] = ren_modadd(X, T, q); s[y] = ren_modsub(X, T, q);")
        phases.append(
            f"REN_PHASE({p}) {{ /* t = {t}, m = {1 << logm} */\n"
            f"    for (int b = threadIdx.x; b < {C // 2}; b += blockDim.x) {{\n"
            f"      const int i = b >> {logt}, x = (i << {logt + 1}) + (b & {t - 1}), "
            f"y = x + {t};\n"
            f"      const i64 w = base + {1 << logm} + (i64)blockIdx.x * {C >> (logt + 1)} + i;\n"
            f"      {fly}\n    }}\n  }}")
    store = "ren_shoup_exact(s[e], t_n_inv[l], t_n_inv_shoup[l], q)" if scale else "s[e]"
    phases.append(f"REN_PHASE({len(phases)}) {{\n    for (int e = threadIdx.x; e < {C}; "
                  f"e += blockDim.x) out[off + e] = {store};\n  }}")
    body = "\n  REN_SYNC();\n  ".join(phases)
    text = f"""REN_KERNEL void @K({signature(params)}) {{
  REN_SHARED u32 s[{C}];
  const int l = (int)blockIdx.y;
  const i64 base = (i64)l * {N}LL, off = base + (i64)blockIdx.x * {C};
  const u32 q = t_q[l];
  {body}
}}
"""
    prefix = "ren_intt_shared" if inverse else "ren_ntt_shared"
    return finish_kernel(prefix, text, params, phases=len(phases))


def _ntt_program(call: RingCall, name: str, shared_chunk: int) -> Program:
    """Forward: the global stages (t >= C) read the input then work in place on the output,
    then the shared kernel finishes in place.  Inverse: the shared kernel first, then the
    global stages in place, the last one scaling by N^-1."""
    N, L = call.n, len(call.src)
    inverse = call.kind is RingKernel.INTT
    C = min(N, shared_chunk)
    threads = max(1, min(C // 2, SHARED_THREADS))
    shared = _shared_kernel(N, L, C, inverse, scale=inverse and C == N)
    sgrid, sblock = (N // C, L, 1), (threads, 1, 1)
    big = list(range((N // C).bit_length() - 1))  # logm of the global stages (t >= C)
    kernels: list[CKernel] = [shared]
    launches: list[Launch] = []
    if big:
        stage = _stage_kernel(N, L, inverse)
        kernels.append(stage)
        grid, block = _grid(L * N // 2)
    if inverse:
        launches.append(_launch(shared, sgrid, sblock))
        launches += [_launch(stage, grid, block, ints=(logm, int(logm == 0)), in_place=True)
                     for logm in reversed(big)]
    else:
        launches += [_launch(stage, grid, block, ints=(logm,), in_place=i > 0)
                     for i, logm in enumerate(big)]
        launches.append(_launch(shared, sgrid, sblock, in_place=bool(big)))
    tables = call.tables()
    used = {p.name[2:] for k in kernels for p in k.params if p.name.startswith("t_")}
    return Program(name, tuple(kernels), tuple(launches),
                   {k: v for k, v in tables.items() if k in used})


# -- TO_RNS, basis conversion, rescale, random --------------------------------------------------
def _to_rns_program(call: RingCall, name: str) -> Program:
    N, L, W = call.n, len(call.dst), call.words
    tables = call.tables()
    params = (OUT, Param("words", "const u32*"),
              *_table_params(tables, ("q", "qneg", "r2", "wrap")))
    text = f"""REN_KERNEL void @K({signature(params)}) {{
  {_thread_head(L * N)}
  const int l = (int)(gid / {N}LL);
  const u32 q = t_q[l];
  const u32* w = words + (gid % {N}LL) * {W};
  u64 acc = 0;
  for (int k = {W - 1}; k >= 0; --k) acc = ((acc << 32) | w[k]) % q;
  if (w[{W - 1}] >> 31) acc = (acc + q - t_wrap[l]) % q;  /* two's complement: minus 2^(32W) */
  out[gid] = ren_montmul((u32)acc, t_r2[l], q, t_qneg[l]);
}}
"""
    k = finish_kernel("ren_to_rns", text, params)
    return Program(name, (k,), (_launch(k, *_grid(L * N)),), _used(tables, params))


def _used(tables: dict[str, np.ndarray], params: tuple[Param, ...]) -> dict[str, np.ndarray]:
    return {p.name[2:]: tables[p.name[2:]] for p in params if p.name.startswith("t_")}


def _basis_convert_program(call: RingCall, name: str) -> Program:
    """A thread per output residue (destination limb d, coefficient c): a copy when p_d is a
    source modulus, else sum_i [x_i * qhat_i^-1]_(q_i) * (Q/q_i) mod p_d.  The y_i are
    recomputed per destination limb: L_src more products buy L_dst times more threads."""
    N, LS, LD = call.n, len(call.src), len(call.dst)
    tables = call.tables()
    params = (OUT, IN, *_table_params(tables, ("src_q", "src_qneg", "qhat_inv", "q", "qneg",
                                               "bconv", "copy_from")))
    text = f"""REN_KERNEL void @K({signature(params)}) {{
  {_thread_head(LD * N)}
  const int d = (int)(gid / {N}LL);
  const i64 c = gid % {N}LL, from = t_copy_from[d];
  if (from >= 0) {{ out[gid] = in[from * {N}LL + c]; return; }}
  const u32 p = t_q[d], pn = t_qneg[d];
  u32 acc = 0;
  for (int i = 0; i < {LS}; ++i) {{
    /* y_i = [x_i * qhat_i^-1]_(q_i), standard form; then y_i * (Q/q_i) mod p */
    const u32 y = ren_montmul(in[(i64)i * {N}LL + c], t_qhat_inv[i], t_src_q[i], t_src_qneg[i]);
    acc = ren_modadd(acc, ren_montmul(y, t_bconv[d * {LS} + i], p, pn), p);
  }}
  out[gid] = acc;
}}
"""
    k = finish_kernel("ren_bconv", text, params)
    return Program(name, (k,), (_launch(k, *_grid(LD * N)),), _used(tables, params))


def _rescale_program(call: RingCall, name: str) -> Program:
    """A thread per output residue (kept limb i, coefficient c): the K dropped limbs' chain
    (each division updates the dropped limbs below it) is recomputed per thread in registers,
    then applied to limb i — the same words as `ren.ring.divide_round_mont`."""
    call.check_rescale("ring_c")
    N, LS, K = call.n, len(call.src), len(call.dropped)
    tables = call.tables()
    LD = LS - K
    params = (OUT, IN, *_table_params(tables, ("src_q", "src_qneg", "src_r2", "half", "p_inv")))
    text = f"""REN_KERNEL void @K({signature(params)}) {{
  {_thread_head(LD * N)}
  const int i = (int)(gid / {N}LL);
  const i64 c = gid % {N}LL;
  u32 zd[{K}];  /* the dropped limbs {LD}..{LS - 1} */
  for (int k = 0; k < {K}; ++k)
    zd[k] = ren_modadd(in[(i64)({LD} + k) * {N}LL + c], t_half[{LD} + k], t_src_q[{LD} + k]);
  const u32 qi = t_src_q[i], qni = t_src_qneg[i];
  u32 z = ren_modadd(in[gid], t_half[i], qi);
  for (int s = 0; s < {K}; ++s) {{  /* divide by p = q_j, the last modulus first */
    const int j = {LS - 1} - s;
    const u32 r = ren_montmul(zd[j - {LD}], 1u, t_src_q[j], t_src_qneg[j]);  /* [z]_p */
    for (int k = 0; k < j - {LD}; ++k) {{  /* dropped limbs still to divide out */
      const int m = {LD} + k;
      const u32 qm = t_src_q[m], qnm = t_src_qneg[m];
      const u32 rm = ren_montmul(r % qm, t_src_r2[m], qm, qnm);
      zd[k] = ren_montmul(ren_modsub(zd[k], rm, qm), t_p_inv[s * {LS} + m], qm, qnm);
    }}
    const u32 ri = ren_montmul(r % qi, t_src_r2[i], qi, qni);
    z = ren_montmul(ren_modsub(z, ri, qi), t_p_inv[s * {LS} + i], qi, qni);
  }}
  out[gid] = z;
}}
"""
    k = finish_kernel("ren_rescale", text, params)
    return Program(name, (k,), (_launch(k, *_grid(LD * N)),), _used(tables, params))


def _random_program(call: RingCall, name: str) -> Program:
    N, L = call.n, len(call.dst)
    spec = call.need_random()
    uniform = spec.kind == "uniform"
    tables = call.tables()
    source = Param("values", "const u32*") if uniform else Param("coeffs", "const i64*")
    params = (OUT, source, *_table_params(tables, ("q", "qneg", "r2")))
    if uniform:  # standard residues (L, N) from ren.sampling
        value = "const u32 v = values[gid];"
    else:  # N signed coefficients, reduced into [0, q) (C's % keeps the sign)
        value = (f"const i64 c = coeffs[gid % {N}LL] % (i64)q;\n"
                 f"  const u32 v = (u32)(c < 0 ? c + (i64)q : c);")
    text = f"""REN_KERNEL void @K({signature(params)}) {{
  {_thread_head(L * N)}
  const int l = (int)(gid / {N}LL);
  const u32 q = t_q[l];
  {value}
  out[gid] = ren_montmul(v, t_r2[l], q, t_qneg[l]);
}}
"""
    k = finish_kernel("ren_random", text, params)

    def prepare() -> dict[str, np.ndarray]:
        ring = call.dst_ring()
        validate(spec.kind, spec.params, ring)
        if uniform:  # the device's sampler: the "cpu" device's runs in C on its threads
            values = get_device(spec.device).sample(spec, ring)
            return {"values": np.ascontiguousarray(values, dtype=np.uint32)}
        return {"coeffs": np.ascontiguousarray(sample_signed(spec, N), dtype=np.int64)}

    return Program(name, (k,), (_launch(k, *_grid(L * N)),), _used(tables, params), prepare)


_BUILDERS = {RingKernel.TO_RNS: _to_rns_program,
             RingKernel.BASIS_CONVERT: _basis_convert_program,
             RingKernel.RESCALE: _rescale_program,
             RingKernel.RANDOM: _random_program}

#: every ring kernel this module renders (tests check it covers `RingKernel`)
RENDERED_KINDS = frozenset(_BUILDERS) | {RingKernel.NTT, RingKernel.INTT}


def render_ring_call(call: RingCall, name: str, shared_chunk: int = SHARED_CHUNK) -> Program:
    """The program of one ring call.  `shared_chunk` (a power of two) caps the NTT's
    shared-memory chunk; tests lower it to exercise the global-stage path at small N."""
    if shared_chunk < 2 or shared_chunk & (shared_chunk - 1):
        raise RealizeError(f"ring_c: shared_chunk must be a power of two >= 2, got {shared_chunk}")
    if call.kind in (RingKernel.NTT, RingKernel.INTT):
        return _ntt_program(call, name, shared_chunk)
    return _BUILDERS[call.kind](call, name)


__all__ = ["RENDERED_KINDS", "SHARED_CHUNK", "SHARED_THREADS", "render_ring_call"]
