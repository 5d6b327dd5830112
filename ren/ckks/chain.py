"""Building a CKKS modulus chain from NTT-friendly u32 primes.

Every prime is q ≡ 1 (mod 2N) with q < 2^31.  A scale wider than one prime is *composite*: each
level owns two primes whose product is close to 2^scale_bits.  Near 2^20 such primes are scarce
at large N (2N = 2^15 at N = 2^14 leaves only a handful below 2^20.5), and each pair needs one
prime at most about 2^(scale_bits/2), so the pairs are chosen by a small matching heuristic and a
chain that cannot be built is reported with what to change.

Scales stay near the target because the pairs are ordered bottom-up: with δ_l = log2(Δ_l) −
scale_bits and ε_l = log2(P_l) − scale_bits, a rescale gives δ_{l−1} = 2δ_l − ε_l, which is
unstable top-down but stable bottom-up (δ_l = (δ_{l−1} + ε_l)/2), so |δ_l| ≤ max |ε_l|.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator

import numpy as np

from ren.errors import ParameterError
from ren.ring import is_prime

MAX_PRIME = (1 << 31) - 1  # limbs are u32: every modulus is below 2^31
#: How far (in bits) a level's prime product may be from 2^scale_bits (1.5 lets N = 2^14 reach
#: depth 7 at a 40-bit scale: only seven primes ≡ 1 mod 2^15 lie below 2^20.75).
PAIR_TOLERANCE_BITS = 1.5


def primes_from(step: int, start: float, up: bool, used: set[int]) -> Iterator[int]:
    """Primes q ≡ 1 (mod step), step+1 <= q <= MAX_PRIME, not in `used`, walking from `start`
    upwards or downwards."""
    k = math.ceil((start - 1) / step) if up else math.floor((start - 1) / step)
    k = max(k, 1)
    while True:
        q = k * step + 1
        if q > MAX_PRIME or k < 1:
            return
        if q not in used and is_prime(q):
            yield q
        k += 1 if up else -1


def nearest_primes(step: int, target: float, used: set[int], count: int,
                   lo: float = 0.0) -> list[int]:
    """Up to `count` unused primes ≡ 1 (mod step), >= lo, in order of |log2(q / target)|."""
    up = primes_from(step, max(target, lo), True, used)
    down = primes_from(step, target, False, used) if target > lo else iter(())
    out: list[int] = []
    a, b = next(up, None), next(down, None)
    while len(out) < count and (a is not None or b is not None):
        if b is not None and b < lo:
            b = None
            continue
        if a is not None and (b is None or math.log2(a / target) <= math.log2(target / b)):
            out.append(a)
            a = next(up, None)
        else:
            assert b is not None  # the loop runs while a or b is left
            out.append(b)
            b = next(down, None)
    return out


def _err(product: int, bits: float) -> float:
    return math.log2(product) - bits


def single_primes(N: int, bits: float, count: int, used: set[int],
                  tol: float = PAIR_TOLERANCE_BITS) -> list[int]:
    """`count` primes within `tol` bits of 2^bits, the closest first."""
    got = [q for q in nearest_primes(2 * N, 2.0 ** bits, used, count) if abs(_err(q, bits)) <= tol]
    return got


def max_level_groups(N: int, bits: float, limit: int, tol: float = PAIR_TOLERANCE_BITS) -> int:
    """An upper bound (capped at `limit`) on how many level groups `single_primes` or
    `prime_pairs` can ever find, from a count of primes, before any search.

    One prime per level (bits <= 31) must lie within `tol` bits of 2^bits.  A pair p <= q with
    p·q within `tol` bits of 2^bits has p <= 2^((bits+tol)/2) and p >= 2^(bits-tol) / 2^31
    (q < 2^31); disjoint pairs use distinct such p, so there are at most as many pairs as primes
    in that range.  Counting stops at `limit`, so the cost is about 11·limit primality tests (the
    density of primes ≡ 1 mod 2N below 2^31) or the whole range when it is shorter.
    """
    step = 2 * N
    if bits <= 31:
        lo, hi = 2.0 ** (bits - tol), 2.0 ** (bits + tol)
    else:
        lo, hi = 2.0 ** (bits - tol - 31), 2.0 ** ((bits + tol) / 2)
    hi = min(hi, MAX_PRIME)
    count = 0
    k0, k1 = max(math.ceil((lo - 1) / step), 1), math.floor((hi - 1) / step)
    for start in range(k0, k1 + 1, 1 << 14):
        q = np.arange(start, min(start + (1 << 14), k1 + 1), dtype=np.int64) * step + 1
        count += int(np.count_nonzero(_are_primes(q)))
        if count >= limit:
            return limit
    return count


def _are_primes(q: np.ndarray) -> np.ndarray:
    """`is_prime` for each odd q in 9 <= q < 2^31 (int64), vectorized: Miller–Rabin with bases
    2, 3, 5, 7 (exact below 3.2·10^9), where a product of two residues stays below 2^62."""
    d, s = q - 1, np.zeros_like(q)
    while True:
        even = (d & 1) == 0
        if not even.any():
            break
        d, s = np.where(even, d >> 1, d), s + even
    prime = np.ones(q.size, dtype=bool)
    for a in (2, 3, 5, 7):
        x, base, e = np.ones_like(q), np.full_like(q, a), d.copy()
        while (e > 0).any():  # x = a^d mod q
            x = np.where((e & 1) == 1, x * base % q, x)
            base, e = base * base % q, e >> 1
        passed = (x == 1) | (x == q - 1)
        for r in range(1, int(s.max())):
            x = x * x % q
            passed |= (x == q - 1) & (r < s)
        prime &= passed
    return prime


def _greedy(candidates: list[tuple[float, int, int]], count: int,
            refill) -> list[tuple[int, int]]:
    """Disjoint pairs by increasing |ε|; a pair whose plentiful partner was taken is re-offered
    with the next partner (`refill(p)`)."""
    heap = list(candidates)
    heapq.heapify(heap)
    taken: set[int] = set()
    pairs: list[tuple[int, int]] = []
    while heap and len(pairs) < count:
        _, p, q = heapq.heappop(heap)
        if p in taken:
            continue
        if q in taken:
            nxt = refill(p, taken)
            if nxt is not None:
                heapq.heappush(heap, nxt)
            continue
        taken |= {p, q}
        pairs.append((p, q))
    return pairs


def prime_pairs(N: int, bits: float, count: int, used: set[int],
                tol: float = PAIR_TOLERANCE_BITS) -> list[tuple[int, int]]:
    """`count` disjoint prime pairs (p, q) with |log2(p·q) − bits| <= tol, or as many as exist.

    Each pair needs one prime of at most about 2^((bits + tol)/2): those are the scarce ones.
    First the closest pairs are taken greedily (enough when primes are dense); otherwise a
    maximum matching (networkx) pairs every scarce prime it can, preferring small |ε|.
    """
    step = 2 * N
    half = 2.0 ** (bits / 2)
    mid_top = 2.0 ** ((bits + tol) / 2)
    width = 4 * count + 8
    small = [q for q in _take(primes_from(step, half, False, used), width) if q < half]
    mid = [q for q in _take(primes_from(step, half, True, used), width) if q < mid_top]

    def partners(p: int, taken: set[int], lo: float, n: int) -> list[tuple[float, int, int]]:
        got = nearest_primes(step, max(2.0 ** bits / p, lo), used | taken | {p}, n, lo=lo)
        return [(abs(_err(p * q, bits)), p, q) for q in got if abs(_err(p * q, bits)) <= tol]

    cands = [c for p in small + mid for c in partners(p, set(), p + 1, 1)]
    cands += [(abs(_err(p * q, bits)), p, q) for i, p in enumerate(mid) for q in mid[i + 1:]
              if abs(_err(p * q, bits)) <= tol]
    pairs = _greedy(cands, count, lambda p, taken: next(iter(partners(p, taken, p + 1, 1)), None))
    if len(pairs) >= count:
        return pairs
    import networkx as nx  # only when primes are scarce

    scarce = small + mid
    g = nx.Graph()
    edges = [c for p in scarce for c in partners(p, set(), mid_top, min(len(scarce), 16) + 2)]
    edges += [(abs(_err(p * q, bits)), p, q) for i, p in enumerate(scarce) for q in scarce[i + 1:]
              if abs(_err(p * q, bits)) <= tol]
    for e, p, q in edges:
        g.add_edge(p, q, weight=2 * tol - e)  # max cardinality first, then the smallest errors
    matching = nx.max_weight_matching(g, maxcardinality=True)
    found = sorted((abs(_err(p * q, bits)), min(p, q), max(p, q)) for p, q in matching)
    return [(p, q) for _, p, q in found[:count]]


def _take(it: Iterator[int], n: int) -> list[int]:
    out = []
    for q in it:
        out.append(q)
        if len(out) >= n:
            break
    return out


def order_levels(groups: list[tuple[int, ...]], bits: float) -> list[tuple[int, ...]]:
    """Order the level groups bottom-up so the scale's drift δ_l = (δ_{l−1} + ε_l)/2 stays near
    0 (δ_0 = 0)."""
    left = list(groups)
    out: list[tuple[int, ...]] = []
    delta = 0.0
    while left:
        g = min(left, key=lambda g: (abs(delta + _err(math.prod(g), bits)), g))
        left.remove(g)
        delta = (delta + _err(math.prod(g), bits)) / 2
        out.append(g)
    return out


def top_scale(groups: list[tuple[int, ...]], bits: float) -> int:
    """The integer top-level scale Δ_L ≈ 2^(bits + δ_L) of the bottom-up recurrence."""
    delta = 0.0
    for g in groups:
        delta = (delta + _err(math.prod(g), bits)) / 2
    return round(2.0 ** (bits + delta))


def largest_primes(N: int, bits: float, count: int, used: set[int]) -> list[int]:
    """`count` unused primes ≡ 1 (mod 2N) just below 2^bits (capped at 2^31), largest first."""
    got = _take(primes_from(2 * N, min(2.0 ** bits, MAX_PRIME), False, used), count)
    if len(got) < count:
        raise ParameterError(
            f"only {len(got)} NTT-friendly primes below 2^{bits:.1f} are left for N={N}; "
            "lower N or the number of primes asked for")
    return got
