"""Negacyclic NTT and inverse NTT over all limbs at once.

Convention (the definition of `Domain.NTT`): for a polynomial a(X) in Z_q[X]/(X^N + 1) and the
canonical primitive 2N-th root psi (`primitive_root_2n`), slot j of the NTT holds
a(psi^(2·brv(j) + 1)), where brv reverses log2(N) bits.  This is the output order of the
in-place Cooley–Tukey transform, so no bit-reversal pass is needed.

Both transforms are linear with plain (non-Montgomery) twiddles, so they map Montgomery form to
Montgomery form and standard form to standard form.

Implementation: Shoup multiplication by precomputed twiddles; Harvey's lazy butterflies (values
kept below 4q) when every modulus is below 2^30, fully reduced butterflies otherwise.  Stages
with a half-size t <= T0 ≈ sqrt(N) run on a transposed copy (L, 2·T0, N/(2·T0)) so every NumPy
inner loop stays long.  The only Python loop is over the log2(N) stages.

Thread safety: `ntt` and `intt` may be called from several threads at once.  Their u64 work
arrays are reused between calls for speed, so each thread keeps its own (`threading.local`).
"""

from __future__ import annotations

import threading

import numpy as np

from ren.ring.ringspec import RingSpec
from ren.ring.tables import get_tables

U32 = np.uint32
U64 = np.uint64
_S32 = U64(32)


class _Scratch(threading.local):
    """Per-thread work arrays: one thread's transform never writes into another's."""

    def __init__(self) -> None:
        self.by_shape: dict[tuple[int, int], tuple[np.ndarray, ...]] = {}


_scratch = _Scratch()


def _buffers(L: int, N: int) -> tuple[np.ndarray, ...]:
    """Reused u64 work arrays for one shape (this thread's): x, y, z of shape (L, N), and T, S,
    the two halves of z, each holding L·N/2 values (reshaped per stage)."""
    key = (L, N)
    scratch = _scratch.by_shape
    bufs = scratch.get(key)
    if bufs is None:
        if len(scratch) > 8:
            scratch.clear()
        x, y, z = (np.empty((L, N), U64) for _ in range(3))
        flat = z.reshape(-1)
        half = L * N // 2
        bufs = (x, y, z, flat[:half], flat[half:])
        scratch[key] = bufs
    return bufs


def _shoup(Y, w, wp, q, T, S):
    """T = Y·w mod q, lazily in [0, 2q) (Y < 2^32).  Clobbers S."""
    np.multiply(Y, wp, out=S)
    np.right_shift(S, _S32, out=S)
    np.multiply(Y, w, out=T)
    np.multiply(S, q, out=S)
    np.subtract(T, S, out=T)


def _ct_lazy(X, Y, w, wp, q, q2, T, S):
    """Cooley–Tukey butterfly; X, Y in [0, 4q) -> [0, 4q)."""
    _shoup(Y, w, wp, q, T, S)
    np.subtract(X, q2, out=S)
    np.minimum(X, S, out=X)  # X in [0, 2q)
    np.subtract(X, T, out=S)
    np.add(S, q2, out=Y)  # X - T + 2q
    np.add(X, T, out=X)


def _ct_exact(X, Y, w, wp, q, q2, T, S):
    """Cooley–Tukey butterfly; X, Y in [0, q) -> [0, q)."""
    _shoup(Y, w, wp, q, T, S)
    np.subtract(T, q, out=S)
    np.minimum(T, S, out=T)
    np.subtract(X, T, out=S)  # wraps when X < T
    np.add(S, q, out=Y)
    np.minimum(S, Y, out=Y)
    np.add(X, T, out=S)
    np.subtract(S, q, out=T)
    np.minimum(S, T, out=X)


def _gs_lazy(X, Y, w, wp, q, q2, T, S):
    """Gentleman–Sande butterfly; X, Y in [0, 2q) -> [0, 2q)."""
    np.add(X, Y, out=T)  # X + Y < 4q
    np.subtract(X, Y, out=S)
    np.add(S, q2, out=Y)  # X - Y + 2q in (0, 4q)
    np.subtract(T, q2, out=S)
    np.minimum(T, S, out=X)  # X' in [0, 2q)
    _shoup(Y, w, wp, q, T, S)
    np.copyto(Y, T)  # Y' in [0, 2q)


def _gs_exact(X, Y, w, wp, q, q2, T, S):
    """Gentleman–Sande butterfly; X, Y in [0, q) -> [0, q)."""
    np.add(X, Y, out=T)
    np.subtract(X, Y, out=S)  # wraps when X < Y
    np.add(S, q, out=Y)
    np.minimum(S, Y, out=Y)
    np.subtract(T, q, out=S)
    np.minimum(T, S, out=X)
    _shoup(Y, w, wp, q, T, S)
    np.subtract(T, q, out=S)
    np.minimum(T, S, out=Y)


def _reduce(x: np.ndarray, q: np.ndarray, bound: int, tmp: np.ndarray) -> None:
    """In place: values below bound·q -> [0, q) (bound is 1, 2 or 4)."""
    if bound >= 4:
        np.subtract(x, q * U64(2), out=tmp)
        np.minimum(x, tmp, out=x)
    if bound >= 2:
        np.subtract(x, q, out=tmp)
        np.minimum(x, tmp, out=x)


def _check(a: np.ndarray, ring: RingSpec) -> tuple[int, int]:
    if a.ndim != 2 or a.shape != (ring.limbs, ring.N):
        raise ValueError(f"expected a ({ring.limbs}, {ring.N}) array, got shape {a.shape}")
    return a.shape


def _natural_stage(fly, x: np.ndarray, h: int, w, wp, q, q2, T, S) -> None:
    """One stage of butterflies `fly` on x (L, N) in the natural layout: partners h apart in
    blocks of 2h, which are long runs while h > T0."""
    L, N = x.shape
    m = N // (2 * h)
    v = x.reshape(L, m, 2, h)
    fly(v[:, :, 0, :], v[:, :, 1, :], w, wp, q, q2, T.reshape(L, m, h), S.reshape(L, m, h))


def _transposed_stage(fly, y: np.ndarray, T0: int, m0: int, h: int, w, wp, q, q2, T, S
                      ) -> None:
    """One stage on y in the transposed layout (L, 2·T0, m0): the block index is the (long)
    inner axis, partners h rows apart."""
    L = y.shape[0]
    v = y.reshape(L, T0 // h, 2, h, m0)
    shape = (L, T0 // h, h, m0)
    fly(v[:, :, 0], v[:, :, 1], w, wp, q, q2, T.reshape(shape), S.reshape(shape))


def ntt(a: np.ndarray, ring: RingSpec, out: np.ndarray | None = None) -> np.ndarray:
    """Forward negacyclic NTT of every limb of `a` ((L, N) residues in [0, q)); returns u32."""
    L, N = _check(a, ring)
    tables = get_tables(ring)
    plan = tables.ntt_plan
    lazy = tables.lazy_ntt
    fly = _ct_lazy if lazy else _ct_exact
    T0, m0 = plan.T0, plan.m0
    x, y, z, T, S = _buffers(L, N)
    np.copyto(x, a, casting="unsafe")
    q3 = tables.q64.reshape(L, 1, 1)
    q2 = q3 * U64(2)
    h = N // 2
    while h > T0:  # natural layout: blocks of 2h are long runs
        w, wp, _, _ = plan.early[h]
        _natural_stage(fly, x, h, w, wp, q3, q2, T, S)
        h //= 2
    yv = y.reshape(L, 2 * T0, m0)
    np.copyto(yv, x.reshape(L, m0, 2 * T0).transpose(0, 2, 1))
    q4 = tables.q64.reshape(L, 1, 1, 1)
    q2 = q4 * U64(2)
    while h >= 1:  # transposed layout: the block index is the (long) inner axis
        w, wp, _, _ = plan.late[h]
        _transposed_stage(fly, y, T0, m0, h, w, wp, q4, q2, T, S)
        h //= 2
    _reduce(y, tables.q64, 4 if lazy else 1, z)
    if out is None:
        out = np.empty((L, N), U32)
    np.copyto(out.reshape(L, m0, 2 * T0), yv.transpose(0, 2, 1), casting="unsafe")
    return out


def intt(a: np.ndarray, ring: RingSpec, out: np.ndarray | None = None) -> np.ndarray:
    """Inverse negacyclic NTT (includes the 1/N scaling); returns u32 residues in [0, q)."""
    L, N = _check(a, ring)
    tables = get_tables(ring)
    plan = tables.ntt_plan
    lazy = tables.lazy_ntt
    fly = _gs_lazy if lazy else _gs_exact
    T0, m0 = plan.T0, plan.m0
    x, y, z, T, S = _buffers(L, N)
    yv = y.reshape(L, 2 * T0, m0)
    np.copyto(yv, a.reshape(L, m0, 2 * T0).transpose(0, 2, 1), casting="unsafe")
    q4 = tables.q64.reshape(L, 1, 1, 1)
    q2 = q4 * U64(2)
    h = 1
    while h <= T0 and h < N:
        _, _, iw, iwp = plan.late[h]
        _transposed_stage(fly, y, T0, m0, h, iw, iwp, q4, q2, T, S)
        h *= 2
    np.copyto(x.reshape(L, m0, 2 * T0), yv.transpose(0, 2, 1))
    q3 = tables.q64.reshape(L, 1, 1)
    q2 = q3 * U64(2)
    while h < N:
        _, _, iw, iwp = plan.early[h]
        _natural_stage(fly, x, h, iw, iwp, q3, q2, T, S)
        h *= 2
    # scale by N^-1 (Shoup; x < 2q < 2^32 keeps it exact), then reduce [0, 2q) -> [0, q)
    _shoup(x, plan.ninv, plan.ninv_shoup, tables.q64, y, z)
    _reduce(y, tables.q64, 2, z)
    if out is None:
        out = np.empty((L, N), U32)
    np.copyto(out, y, casting="unsafe")
    return out
