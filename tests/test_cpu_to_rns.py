"""The "cpu" device's native TO_RNS (ren/backend/cpu_ring_to_rns.c through
`ren.backend.cpu.library_call`): packed two's-complement words of any width W to Montgomery
residues, checked word for word against Python big integers ([c]_q · 2^32 mod q), the NumPy
backend and the hosted `ren.backend.ring_c` program the device ran before (a thread per
residue), at the two's-complement edges, odd N and odd limb counts, on 1, 2 and 3 threads."""

from __future__ import annotations

import random

import numpy as np
import pytest

import ren
from ren.backend import cpu, cpu_calls
from ren.backend.numpy_backend import _to_rns
from ren.backend.ring_c import render_ring_call
from ren.device import get_device
from ren.kernel import RingCall
from ren.ring import RingKernel, RingSpec

R = 1 << 32


def _moduli(count: int, bits: int, n: int) -> tuple[int, ...]:
    """`count` NTT primes below 2^bits for the power of two >= n (a RingSpec for NumPy)."""
    return tuple(RingSpec.generate(1 << max(1, (n - 1).bit_length()), count, bits=bits).moduli)


def _pack(values: list[int], W: int) -> np.ndarray:
    """(N, W) u32 little-endian two's-complement words of `values`."""
    out = np.empty((len(values), W), np.uint32)
    for j, c in enumerate(values):
        u = c % (1 << (32 * W))
        for k in range(W):
            out[j, k] = (u >> (32 * k)) & 0xFFFFFFFF
    return out


def _values(words: np.ndarray) -> list[int]:
    """The signed integers of (N, W) two's-complement words (Python integers)."""
    W = words.shape[1]
    out = []
    for row in words.tolist():
        u = sum(w << (32 * k) for k, w in enumerate(row))
        out.append(u - (1 << (32 * W)) if row[-1] >> 31 else u)
    return out


def _reference(values: list[int], moduli: tuple[int, ...]) -> np.ndarray:
    """Montgomery residues [c]_q · 2^32 mod q with Python integers."""
    return np.array([[c % q * R % q for c in values] for q in moduli], np.uint32)


def _edge_values(W: int, n: int, rng: random.Random, moduli: tuple[int, ...]) -> list[int]:
    """The two's-complement edges of W words, values around them, around ±q and 0, then
    random values over the whole range (both signs)."""
    top = 1 << (32 * W - 1)
    edges = [0, 1, -1, top - 1, -top, -top + 1, top - 2, R - 1, -R, R, -(R - 1)]
    for q in moduli:
        edges += [q, -q, q - 1, -q + 1, q + 1, q * q, -(q * q)]
    edges = [c for c in edges if -top <= c < top]
    rest = [rng.randrange(-top, top) for _ in range(n - len(edges))]
    return (edges + rest)[:n]


def _hosted(call: RingCall, words: np.ndarray) -> np.ndarray:
    """The words of the hosted ring_c TO_RNS program (the device's kernel before the library's)."""
    program = render_ring_call(call, "to_rns_hosted")
    dev = get_device("cpu")
    dev._load([program])
    out = np.empty((len(call.dst), call.n), np.uint32)
    cpu._HostRunner(program, dev.hosted, ())([out, words])
    return out


def _run(call: RingCall, words: np.ndarray) -> np.ndarray:
    fn = cpu.library_call(call)
    assert isinstance(fn, cpu.CpuCall) and fn.name == "to_rns"
    out = np.full((len(call.dst), call.n), 0xDEADBEEF, np.uint32)
    fn([out, words])
    return out


@pytest.mark.parametrize(("W", "n", "limbs", "bits"), [
    (1, 1, 1, 31), (1, 300, 2, 31), (2, 4096, 3, 30), (2, 1023, 5, 31), (3, 2500, 4, 31),
    (3, 1025, 1, 20), (4, 777, 3, 30), (5, 1500, 2, 31), (7, 333, 3, 24), (9, 1029, 2, 31)])
def test_words_match_big_integers_and_numpy(W, n, limbs, bits):
    """Every W (the diagonals' 2 and 3, and 1 and widths past one 4-word chunk), odd N (a
    partial last block), moduli up to 2^31: Python's [c]_q·2^32 mod q, the hosted program's
    words and (N a power of two: its RingSpec) the NumPy backend's."""
    rng = random.Random(W * 1000 + n)
    moduli = _moduli(limbs, bits, n)
    values = _edge_values(W, n, rng, moduli)
    words = _pack(values, W)
    call = RingCall(RingKernel.TO_RNS, n, (), moduli, words=W)
    got = _run(call, words)
    want = _reference(values, moduli)
    assert np.array_equal(got, want)
    assert _values(words) == values
    assert np.array_equal(got, _hosted(call, words))
    if n >= 2 and n & (n - 1) == 0:
        numpy_words = np.empty_like(got)
        _to_rns(call)([numpy_words, words])
        assert np.array_equal(got, numpy_words)


def test_all_negative_and_all_positive_blocks():
    """Whole blocks of one sign (the wrap applied or skipped over a full vector loop)."""
    moduli = _moduli(2, 31, 4096)
    top = 1 << 63
    values = [-top + j for j in range(2048)] + [top - 1 - j for j in range(2048)]
    words = _pack(values, 2)
    got = _run(RingCall(RingKernel.TO_RNS, 4096, (), moduli, words=2), words)
    assert np.array_equal(got, _reference(values, moduli))


@pytest.mark.parametrize(("n", "limbs", "W"), [(4096, 3, 3), (1 << 15, 1, 2), (8191, 7, 2),
                                               (2048, 20, 3)])
def test_bit_identical_at_one_two_three_threads(n, limbs, W):
    """Above the OpenMP threshold: blocks, limb groups (few blocks for the threads) and a
    single limb split into blocks give the same words on 1, 2 and 3 threads."""
    rng = np.random.default_rng(n + limbs)
    moduli = _moduli(limbs, 31, n)
    words = rng.integers(0, R, size=(n, W), dtype=np.uint64).astype(np.uint32)
    call = RingCall(RingKernel.TO_RNS, n, (), moduli, words=W)
    want = _reference(_values(words), moduli)
    dev = get_device("cpu")
    got = {}
    try:
        for t in (3, 2, 1):
            dev.set_threads(t)
            got[t] = _run(call, words)
    finally:
        dev.set_threads(None)
    for t in (1, 2, 3):
        assert np.array_equal(got[t], want), t


def test_from_coefficients_on_cpu_runs_the_library_kernel():
    """A device realization goes through the library call (no hosted TO_RNS program is
    compiled) and gives the "python" device's words, for 2- and 3-word coefficients."""
    ring = RingSpec.generate(1 << 10, 4)
    rng = random.Random(5)
    dev = get_device("cpu")
    before = set(dev.hosted)
    for bits in (62, 90):
        values = [rng.randrange(-(1 << bits), 1 << bits) for _ in range(ring.N)]
        got = ren.Poly.from_coefficients(values, ring, device="cpu").numpy()
        want = ren.Poly.from_coefficients(values, ring, device="python").numpy()
        assert np.array_equal(got, want)
        # numpy() leaves Montgomery form: the residues themselves
        assert got.tolist() == [[c % q for c in values] for q in ring.moduli]
    assert not any("to_rns" in name for name in set(dev.hosted) - before)


def test_strided_input_is_copied_first():
    """The device wraps ring calls so that a strided words view is made contiguous."""
    moduli = _moduli(2, 30, 512)
    rng = np.random.default_rng(3)
    wide = rng.integers(0, R, size=(512, 4), dtype=np.uint64).astype(np.uint32)
    view = wide[:, 1:3]
    call = RingCall(RingKernel.TO_RNS, 512, (), moduli, words=2)
    fn = cpu_calls.RingInput(cpu.library_call(call))
    out = np.empty((2, 512), np.uint32)
    fn([out, view])
    want = np.empty_like(out)
    _to_rns(call)([want, np.ascontiguousarray(view)])
    assert np.array_equal(out, want)
