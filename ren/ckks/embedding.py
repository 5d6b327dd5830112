"""The canonical embedding of CKKS: a real polynomial's N coefficients <-> its N/2 complex slots.

Slot j is the evaluation m(ζ^(5^j)) with ζ = exp(iπ/N) (`slot_powers`).  All evaluations at the
odd powers ζ^(2t+1) are one length-N FFT of the twisted coefficients m_i·ζ^i, so both directions
(`embed`, `embed_inverse`) cost O(N log N) with NumPy's FFT; from moderate N each is split once
into two independent halves that run side by side on the host pool (`ren.ckks.hostpool`), the
same floats at any thread count.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ren.ckks.hostpool import side_by_side
from ren.errors import ShapeError, check_int_range


@lru_cache(maxsize=16)
def slot_powers(N: int) -> np.ndarray:
    """e_j = 5^j mod 2N for the N/2 slots: slot j is the evaluation at ζ^(e_j) (read-only)."""
    e = np.empty(N // 2, dtype=np.int64)
    g = 1
    for j in range(N // 2):
        e[j] = g
        g = g * 5 % (2 * N)
    e.flags.writeable = False
    return e


@lru_cache(maxsize=16)
def _tables(N: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t_j, t'_j, ζ^i): slot j sits at odd power 2t_j+1 = 5^j mod 2N, its conjugate at 2t'_j+1
    = -5^j mod 2N; ζ^i are the twist factors."""
    e = slot_powers(N)
    t = (e - 1) // 2
    tc = (2 * N - e - 1) // 2
    twist = np.exp(1j * np.pi * np.arange(N) / N)
    for a in (t, tc, twist):
        a.flags.writeable = False
    return t, tc, twist


@lru_cache(maxsize=16)
def _untwist(N: int) -> np.ndarray:
    """ζ^-i = conj(ζ^i) (exact), kept instead of conjugated at every encoding (read-only)."""
    u = np.conj(_tables(N)[2])
    u.flags.writeable = False
    return u


#: from this ring degree up `embed_inverse` takes its length-N transform as two independent
#: halves (below it one length-N FFT, as before): the same floats at every thread count
_INVERSE_SPLIT_MIN = 1 << 14


@lru_cache(maxsize=16)
def _inverse_tables(N: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`embed_inverse`'s split: exp(−2πi·n/N) for n < N/2 (the odd half's twiddles), and
    ζ^-k/N for the even and for the odd k (read-only; 1/N is a power of two, so scaling the
    untwist by it is exact)."""
    u = _untwist(N) / N
    out = (np.exp(-2j * np.pi * np.arange(N // 2) / N), np.ascontiguousarray(u[0::2]),
           np.ascontiguousarray(u[1::2]))
    for a in out:
        a.flags.writeable = False
    return out


def _inverse_half(v: np.ndarray, N: int, which: int, out: np.ndarray) -> None:
    """One half of `embed_inverse`'s length-N transform (decimation in frequency): which = 0
    the even outputs, the N/2 transform of v_n + v_(n+N/2); 1 the odd ones, that of
    (v_n − v_(n+N/2))·exp(−2πi·n/N); untwisted, their real parts to out[which::2].  NumPy's
    FFT releases the GIL, so the halves run side by side, each the same floats on any thread."""
    out[which::2] = _half_values(v, N, which)


def _half_values(v: np.ndarray, N: int, which: int) -> np.ndarray:
    """The real values of one half of `embed_inverse`'s transform (`_inverse_half`), new."""
    h = N // 2
    twiddle, even, odd = _inverse_tables(N)
    a = v[:h] + v[h:] if which == 0 else (v[:h] - v[h:]) * twiddle
    return (np.fft.fft(a) * (odd if which else even)).real


def _slot_vector(z: np.ndarray, N: int) -> np.ndarray:
    """v of `embed_inverse`: z at the slots' odd powers, conj(z) at their conjugates'."""
    t, tc, _ = _tables(N)
    v = np.empty(N, dtype=np.complex128)  # (t and tc hold every index once: all written)
    v[t] = z
    v[tc] = np.conj(z)
    return v


def embed_inverse(z: np.ndarray, N: int, threads: int = 1) -> np.ndarray:
    """The real coefficients m (float) whose slots are z (N/2 complex values), on up to two
    `threads` (the lift pool's), the same floats at any count.

    m is the real part of ζ^-k/N times output k of the length-N FFT of v (v at the slots' odd
    powers: z, and conj(z) at their conjugates').  From N = _INVERSE_SPLIT_MIN up that FFT is
    split once by decimation in frequency into its even outputs (the N/2 transform of
    v_n + v_(n+N/2)) and its odd ones (that of (v_n − v_(n+N/2))·exp(−2πi·n/N)), two
    independent transforms, one a thread where a helper is free in time (`side_by_side`; about
    as fast as the one long FFT on one thread).  Those floats are not the single length-N FFT's bit
    for bit (a last-bit difference in most coefficients; `tests` bound it against exact
    evaluation), but they are the same at every thread count."""
    threads = check_int_range(threads, "embed_inverse: threads", 1, 256,
                              hint="REN_CPU_THREADS's range; 1 runs both halves on the caller")
    v = _slot_vector(z, N)
    if N < _INVERSE_SPLIT_MIN:
        return (np.fft.fft(v) / N * _untwist(N)).real
    out = np.empty(N)
    side_by_side(lambda which: _inverse_half(v, N, which, out), (0, 1), threads)
    return out


def _rounded_half(v: np.ndarray, N: int, which: int, scale: float, out: np.ndarray,
                  tops: np.ndarray) -> None:
    """`_inverse_half` followed, in the same task, by the encoder's pass over its coefficients:
    rint(m·scale) to int64 in out[which::2] (garbage where |m·scale| passes int64: the caller
    checks `tops`) and max |m| in tops[which].  Each value is `embed_inverse`'s float times
    `scale`, rounded as NumPy rounds it there: the same integers."""
    m = _half_values(v, N, which)
    tops[which] = np.max(np.abs(m), initial=0.0)
    with np.errstate(over="ignore", invalid="ignore"):  # (out of int64: the caller's check;
        m *= scale                                      # the state is per thread)
        out[which::2] = np.rint(m, out=m)  # (float -> int64 in the store, as astype does)


def embed_inverse_rounded(z: np.ndarray, N: int, scale: float, threads: int = 1
                          ) -> tuple[np.ndarray, float] | None:
    """(rint(m·scale) as int64, max |m|) for m = `embed_inverse(z, N, threads)`: the same
    integers, with the scaling and rounding done inside the two half transforms' tasks (in
    cache, on both threads) instead of in serial passes over m afterwards.  Where max |m|·scale
    reaches 2^63 the integers are not defined (the caller takes `embed_inverse` then).  None
    below `_INVERSE_SPLIT_MIN` (one transform: no halves to put the pass in)."""
    if N < _INVERSE_SPLIT_MIN:
        return None
    threads = check_int_range(threads, "embed_inverse_rounded: threads", 1, 256,
                              hint="REN_CPU_THREADS's range; 1 runs both halves on the caller")
    v = _slot_vector(z, N)
    out = np.empty(N, dtype=np.int64)
    tops = np.zeros(2)
    side_by_side(lambda which: _rounded_half(v, N, which, scale, out, tops), (0, 1), threads)
    return out, float(np.max(tops))


#: below this ring degree `embed` takes one length-N transform (the quarter split needs N/4 >= 2)
EMBED_SPLIT_MIN = 16


@lru_cache(maxsize=16)
def _embed_tables(N: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`embed`'s constants: ζ^i for i < N/2, exp(2πi·n/(N/2)) for n < N/4 (the odd quarter's
    twiddles) and the slot each output of [E, O] is (read-only)."""
    t, _, twist = _tables(N)
    k = t // 2  # slot j is output k = t_j/2 of the half-length transform (every t_j is even)
    where = np.where(k % 2 == 0, k // 2, N // 4 + k // 2)  # slot j's place in [E, O]
    odd = np.exp(2j * np.pi * np.arange(N // 4) / (N // 2))
    out = (np.ascontiguousarray(twist[: N // 2]), odd, np.argsort(where))
    for a in out:
        a.flags.writeable = False
    return out


def _twisted(re: np.ndarray, im: np.ndarray, twist: np.ndarray) -> np.ndarray:
    """(re + i·im)·twist, the operands in this order at every length: NumPy's complex product
    uses FMA, so a·b and b·a differ in the last bit, and `twist * (re + 1j * im)` was computed
    as the latter only where NumPy elides the temporary (arrays of 256 KiB and up, N >= 2^16):
    so this order keeps N = 2^16's floats, and a piece's floats are the whole array's."""
    t = re + 1j * im
    np.multiply(t, twist, out=t)
    return t


def _embed_quarter(m: np.ndarray, N: int, which: int, out: np.ndarray) -> None:
    """One half of `embed`'s half-length transform, written to its slots of `out`: which = 0
    the even outputs E, 1 the odd ones O (module docstring of `embed`).  NumPy's FFT releases
    the GIL, so the two run side by side on two threads, each the same floats on either."""
    q = N // 4
    twist, odd, slot = _embed_tables(N)
    lo = _twisted(m[:q], m[2 * q:3 * q], twist[:q])  # a_n = ζ^n (m_n + i m_(n+N/2)), n < N/4
    hi = _twisted(m[q:2 * q], m[3 * q:], twist[q:2 * q])  # a_(n+N/4)
    b = lo + hi if which == 0 else (lo - hi) * odd
    # Σ b_n e^(2πi nk/(N/4)), put straight into its slots (the halves' slots are disjoint)
    out[slot[which * q:(which + 1) * q]] = np.fft.ifft(b, norm="forward")


def quarter_inputs(parts: tuple[np.ndarray, ...], N: int, r: int, b: np.ndarray) -> None:
    """Columns [r, r + w) of both quarter transforms' inputs (`_embed_quarter`'s b for which =
    0 and 1, to b[0] and b[1]) from m's four ranges of w coefficients at r, r + N/4, r + N/2 and
    r + 3N/4 (`parts`): the same elementwise floats as `_embed_quarter`'s whole-array ones, for a
    caller that makes m in pieces (the decoder's fused lift) and so needs no pass over all of m
    before the transforms (`embed_quarters`)."""
    q, w = N // 4, len(parts[0])
    twist, odd, _ = _embed_tables(N)
    lo = _twisted(parts[0], parts[2], twist[r:r + w])
    hi = _twisted(parts[1], parts[3], twist[q + r:q + r + w])
    b[0, r:r + w] = lo + hi
    b[1, r:r + w] = (lo - hi) * odd[r:r + w]


def embed_quarters(b: np.ndarray, N: int, threads: int) -> np.ndarray:
    """`embed`'s slots from both quarter transforms' inputs b (2 × N/4, `quarter_inputs`), the
    two transforms side by side on up to two `threads`: `embed(m, N, threads)`'s floats."""
    out = np.empty(N // 2, dtype=np.complex128)
    side_by_side(lambda which: quarter_fft(b, N, which, out), (0, 1), threads)
    return out


def quarter_fft(b: np.ndarray, N: int, which: int, out: np.ndarray) -> None:
    """One quarter transform of `embed_quarters` (which = 0: E, 1: O), into its slots of out."""
    q = N // 4
    out[_embed_tables(N)[2][which * q:(which + 1) * q]] = np.fft.ifft(b[which], norm="forward")


def embed(m: np.ndarray, N: int, threads: int = 1) -> np.ndarray:
    """The N/2 slots of the real coefficient vector m, z_j = Σ_i m_i ζ^(i·e_j), on up to two
    `threads` (the lift pool's), the same floats at any count.

    Every e_j = 5^j mod 2N is 1 mod 4, so slot j is output t_j = (e_j − 1)/2 (even) of the
    length-N transform of m_i·ζ^i, and the even outputs of that are one length-N/2 transform
    of a_n = ζ^n·(m_n + i·m_(n+N/2)) (ζ^(N/2) = i).  That one splits once more into its even
    outputs E = the N/4 transform of a_n + a_(n+N/4) and its odd ones O = that of
    (a_n − a_(n+N/4))·exp(2πi·n/(N/2)): two independent transforms of a quarter of the length,
    one a thread.  The floats are not the single length-N FFT's bit for bit (`tests` bound the
    difference: the same error against exact evaluation)."""
    threads = check_int_range(threads, "embed: threads", 1, 256,
                              hint="REN_CPU_THREADS's range; 1 runs both halves on the caller")
    m = np.asarray(m)
    if m.shape != (N,):
        raise ShapeError(f"embed: expected the N = {N} coefficients of one polynomial, got "
                         f"shape {m.shape}")
    if N < EMBED_SPLIT_MIN or np.iscomplexobj(m):  # (complex m: the general transform)
        t, _, twist = _tables(N)
        return np.fft.ifft(m * twist)[t] * N
    m = m.astype(np.float64, copy=False)
    out = np.empty(N // 2, dtype=np.complex128)
    side_by_side(lambda which: _embed_quarter(m, N, which, out), (0, 1), threads)
    return out
