"""Samplers behind RANDOM nodes: a RandomSpec and a ring → standard-form residues (L, N).

The value of a RANDOM node is *defined* by this module: every consumer (backends, the reference
evaluator) calls `sample`, so all of them agree.  Randomness is expanded from the node's seed with
SHAKE (cryptographic XOFs: SHAKE-128 for uniform residues, SHAKE-256 for the rest), independent
streams per purpose.

Small-coefficient streams come in parts.  A purpose's words are indexed by coefficient (by rank
for the sparse secret's signs): ``rows`` words each (2 for ``gauss``, 1 otherwise), for n indices.
The indices are cut into parts of `PART` (1024) consecutive indices (the last one shorter), and
part k's words are the first ``rows·m`` little-endian u64 words of its own stream,
SHAKE-256(``ren-sample\0 purpose \0`` || k as 4 little-endian bytes || seed) (`stream_input`),
row-major: row r's m words, then row r+1's.  The number of parts depends on n only, never on a
thread count, so a device may squeeze the parts in any order, on any threads, in the lanes of a
vector permutation, and get the same words (the "cpu" device does, in C: a lone leaf or a
Gaussian's long stream no longer runs on one thread).

Distributions:

* ``uniform``: every residue uniform in [0, q_i) independently (i.e. uniform mod Q), exactly:
  rejection sampling of 32-bit words from one SHAKE-128 stream per limb (a word w is kept when
  w < k·q_i, k = floor(2^32/q_i), and gives w mod q_i; at least 2/3 of the words are kept).
  About 4 stream bytes per residue, a quarter of a 128-bit reduction's (this is most of the
  work of key generation).
* ``uniform_on_interval(lo, hi)``: integer coefficients uniform in [lo, hi] (both inclusive),
  reduced mod each q_i: coefficient i is lo + (hi_i·2^64 + lo_i) mod (hi - lo + 1), hi_i and
  lo_i the words of purposes ``hi`` and ``lo``.
* ``ternary``: coefficients uniform in {-1, 0, 1} (``uniform_on_interval(-1, 1)``).
* ``sparse_ternary(h)``: exactly h nonzero coefficients, each ±1 with equal probability, at a
  uniformly random set of positions: the h smallest ``positions`` words (ties: lower index
  first), the j-th of them taking the sign of the j-th ``signs`` word's low bit.
* ``gaussian(sigma)``: rounded normal samples (Box–Muller from the two ``gauss`` words of the
  coefficient), clipped to ±ceil(6·sigma).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import threading
from collections.abc import Iterator

import numpy as np

from ren.errors import ParameterError, is_int
from ren.random import RandomSpec
from ren.ring import RingSpec

_here = threading.local()


@contextlib.contextmanager
def side_by_side_here() -> Iterator[None]:
    """Inside the block this thread draws random leaves side by side with others (a
    realization's caller taking leaves beside its sampling pool): a device's sampler called on
    it then shares the device's threads with the other samplers running, as a pool thread's
    does, instead of starting a team of all of them.  The words never depend on it."""
    before = getattr(_here, "on", False)
    _here.on = True
    try:
        yield
    finally:
        _here.on = before


def drawing_side_by_side() -> bool:
    """Whether this thread is inside `side_by_side_here`."""
    return bool(getattr(_here, "on", False))


def gaussian_bound(sigma: float) -> int:
    """The largest magnitude a ``gaussian(sigma)`` coefficient takes (samples are clipped to it)."""
    return math.ceil(6 * sigma)


U64 = np.uint64
KINDS = ("uniform", "uniform_on_interval", "ternary", "sparse_ternary", "gaussian")


#: indices (coefficients) a part of a small-coefficient purpose's words (module docstring)
PART = 1024
#: words an index of the purposes that take more than one (the Gaussian's u1 and u2)
ROWS = {"gauss": 2}


def stream_prefix(purpose: str) -> bytes:
    """What every part's SHAKE-256 input of `purpose` starts with: ``ren-sample\\0 purpose \\0``."""
    return b"ren-sample\0" + purpose.encode() + b"\0"


def stream_input(seed: bytes, purpose: str, part: int) -> bytes:
    """The SHAKE-256 input of part `part` of the small-coefficient purpose `purpose`:
    `stream_prefix` || part (4 bytes, little endian) || seed (the "cpu" device squeezes the
    same streams in C)."""
    return stream_prefix(purpose) + part.to_bytes(4, "little") + bytes(seed)


#: what a uniform limb's SHAKE-128 input starts with: UNIFORM_PREFIX || limb (4 bytes, little
#: endian) || seed.  The "cpu" device samples the same streams in C (cpu_ring_sample.c)
UNIFORM_PREFIX = b"ren-sample\0uniform\0"


def _uniform_row(seed: bytes, limb: int, q: int, n: int) -> np.ndarray:
    """n residues uniform in [0, q), by rejection from a SHAKE-128 stream of 32-bit words."""
    bound = ((1 << 32) // q) * q
    keep = bound / float(1 << 32)  # the chance a word is kept
    count = int(n / keep * 1.02) + 64
    while True:
        raw = hashlib.shake_128(UNIFORM_PREFIX + limb.to_bytes(4, "little")
                                + seed).digest(4 * count)
        words = np.frombuffer(raw, dtype="<u4")
        kept = words[words < np.uint32(bound)] if bound < 1 << 32 else words
        if len(kept) >= n:  # otherwise the same stream, read further
            return (kept[:n] % np.uint32(q)).astype(np.uint32)
        count *= 2


def _u64(seed: bytes, purpose: str, count: int) -> np.ndarray:
    """`purpose`'s `count` words (rows · n: row r of index i at r·n + i) from its parts."""
    rows = ROWS.get(purpose, 1)
    if count % rows:
        raise ValueError(f"{purpose!r} takes {rows} words an index, not {count} words in all")
    n = count // rows
    out = np.empty((rows, n), dtype=U64)
    for part, start in enumerate(range(0, n, PART)):
        m = min(PART, n - start)
        raw = hashlib.shake_256(stream_input(seed, purpose, part)).digest(8 * rows * m)
        out[:, start:start + m] = np.frombuffer(raw, dtype="<u8").reshape(rows, m)
    return out.reshape(-1)


def stream_words(seed: bytes, purpose: str, count: int) -> np.ndarray:
    """`purpose`'s `count` little-endian u64 words, from its parts' SHAKE-256 streams (module
    docstring; ``ROWS[purpose]`` words an index, row-major: for the Gaussian's N coefficients,
    every u1 word, then every u2 word): what the small-coefficient samplers map."""
    return _u64(seed, purpose, count)


def _mod_u128(hi: np.ndarray, lo: np.ndarray, m: np.ndarray | np.uint64) -> np.ndarray:
    """(hi·2^64 + lo) mod m for m < 2^32, an array or one u64 (u64 arithmetic, no overflow)."""
    two64 = (U64(2**63) % m) * U64(2) % m
    return ((hi % m) * two64 % m + lo % m) % m


def validate(kind: str, params: tuple, ring: RingSpec) -> None:
    """Raise ParameterError when a sampler request cannot be honoured."""
    if kind not in KINDS:
        raise ParameterError(f"unknown random kind {kind!r}; expected one of {KINDS}")
    if kind == "uniform_on_interval":
        lo, hi = params
        if not (is_int(lo) and is_int(hi)) or lo > hi:
            raise ParameterError(
                f"uniform_on_interval: need ints lo <= hi, got lo={lo!r}, hi={hi!r}")
        if hi - lo >= 1 << 32:
            raise ParameterError(
                f"uniform_on_interval: the interval [{lo}, {hi}] is wider than 2^32 values; "
                "use Poly.uniform for uniform residues mod Q"
            )
        if max(abs(lo), abs(hi)) >= 1 << 62:
            raise ParameterError("uniform_on_interval: bounds must be below 2^62 in magnitude")
    elif kind == "sparse_ternary":
        (h,) = params
        if not is_int(h) or not 0 <= h <= ring.N:
            raise ParameterError(
                f"sparse_ternary: hamming_weight must be an int in [0, N={ring.N}], got {h!r}"
            )
    elif kind == "gaussian":
        (sigma,) = params
        if (not isinstance(sigma, int | float) or isinstance(sigma, bool)
                or not 0 < sigma < 1e6 or math.isnan(sigma)):
            raise ParameterError(
                f"gaussian: sigma must be a positive number below 10^6, got {sigma!r}")


def gaussian_from_words(w1: np.ndarray, w2: np.ndarray, sigma: float) -> np.ndarray:
    """``gaussian(sigma)``'s coefficients from the "gauss" words: coefficient i from w1[i] (its
    row 0, `stream_words`) and w2[i] (its row 1), int64."""
    u1 = ((w1 >> U64(11)).astype(np.float64) + 1.0) / float(1 << 53)  # 53 bits, in (0, 1]
    u2 = (w2 >> U64(11)).astype(np.float64) / float(1 << 53)
    normal = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
    bound = gaussian_bound(sigma)
    return np.clip(np.rint(normal * sigma), -bound, bound).astype(np.int64)


def sample_signed(spec: RandomSpec, N: int) -> np.ndarray:
    """The N signed integer coefficients of a small-coefficient RANDOM node (int64)."""
    kind, params, seed = spec.kind, spec.params, spec.seed
    if kind == "ternary":
        params, kind = (-1, 1), "uniform_on_interval"
    if kind == "uniform_on_interval":
        lo, hi = params
        width = U64(hi - lo + 1)
        hi64, lo64 = _u64(seed, "hi", N), _u64(seed, "lo", N)
        return _mod_u128(hi64, lo64, width).astype(np.int64) + np.int64(lo)
    if kind == "sparse_ternary":
        (h,) = params
        keys = _u64(seed, "positions", N)
        positions = np.argsort(keys, kind="stable")[:h]
        signs = (_u64(seed, "signs", h) & U64(1)).astype(np.int64) * 2 - 1
        out = np.zeros(N, dtype=np.int64)
        out[positions] = signs
        return out
    if kind == "gaussian":
        (sigma,) = params
        u = _u64(seed, "gauss", 2 * N)
        return gaussian_from_words(u[:N], u[N:], sigma)
    raise ParameterError(f"{kind!r} is not a small-coefficient distribution")


def sample(spec: RandomSpec, ring: RingSpec) -> np.ndarray:
    """Standard-form residues (L, N) u32 of the RANDOM node `spec` in `ring`."""
    validate(spec.kind, spec.params, ring)
    q = np.array(ring.moduli, dtype=U64).reshape(-1, 1)
    if spec.kind == "uniform":
        return np.stack([_uniform_row(spec.seed, i, qi, ring.N)
                         for i, qi in enumerate(ring.moduli)])
    coeffs = sample_signed(spec, ring.N)
    if len(coeffs) and int(np.max(np.abs(coeffs))) < min(ring.moduli):  # small: no division
        # c mod q_i is c, or c + q_i for c < 0; in u32 a negative c wraps to 2^32 + c and adding
        # q_i wraps back to c + q_i: two u32 passes over the (L, N) rows, no int64 temporaries
        # (what a key ring of ~50 limbs spent most of its small-coefficient sampling on)
        neg = np.where(coeffs < 0, np.uint32(0xFFFFFFFF), np.uint32(0))
        q32 = np.array(ring.moduli, dtype=np.uint32)[:, None]
        return coeffs.astype(np.uint32)[None, :] + (q32 & neg[None, :])
    return (coeffs[None, :] % q.astype(np.int64)).astype(np.uint32)
