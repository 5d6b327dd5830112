"""Host-side work shared over REN_CPU_THREADS (issue 42 §4): the CKKS decoder's CRT lift runs in
pieces of `ren.ckks.lift.LIFT_PIECE` columns on a thread pool, and gives
`ren.ring.rns.centered_floats`'s floats — checked against Python big integers and against the
whole-array lift, at 1 and 2 threads, also where the prefix lift falls back to the whole basis."""

from __future__ import annotations

import random

import numpy as np
import pytest

import ren
from ren.ckks import lift
from ren.ring import RingSpec, rns
from ren.ring.modarith import to_mont
from ren.ring.rns import centered_floats
from ren.ring.tables import get_tables


def _residues(values: list[int], ring: RingSpec) -> np.ndarray:
    return np.array([[v % q for v in values] for q in ring.moduli], dtype=np.uint32)


@pytest.mark.parametrize("big", [False, True])
def test_decoder_lift_in_pieces_gives_centered_floats_words(big):
    N = 4 * lift.LIFT_PIECE
    ring = RingSpec.generate(N, 5)
    bits = 40  # the prefix lift covers |x| < 2^(bits+1); `big` puts one value far above it
    rnd = random.Random(7)
    values = [rnd.randrange(-(1 << bits), 1 << bits) for _ in range(N)]
    if big:
        values[3 * lift.LIFT_PIECE + 5] = -(1 << 120) + 12345
    res = _residues(values, ring)
    want = centered_floats(res, ring, 0, bits=bits)
    assert np.array_equal(want, np.array([float(v) for v in values]))  # the lift is exact here
    for t in (1, 2):
        with ren.settings.override(REN_CPU_THREADS=t):
            got = lift.lift(to_mont(res, get_tables(ring)), ring, 0, bits)
        assert np.array_equal(got.view(np.int64), want.view(np.int64)), f"{t} threads"


def test_decode_is_the_same_at_one_and_two_threads():
    from ren.ckks import CKKSParams, Decryptor, Encoder, Encryptor, KeyGenerator

    params = CKKSParams(N=2 * lift.LIFT_PIECE, depth=1, scale_bits=30, first_bits=40,
                        insecure=True)
    with ren.random.seeded(1):
        kg = KeyGenerator(params)
        enc = Encoder(params)
        ct = Encryptor(params, kg.public_key()).encrypt(enc.encode(np.linspace(-1, 1, 64)))
        pt = Decryptor(params, kg.secret_key()).decrypt(ct)
    out = {}
    for t in (1, 2):
        with ren.settings.override(REN_CPU_THREADS=t):
            out[t] = enc.decode(pt)
    assert np.array_equal(out[1].view(np.float64), out[2].view(np.float64))
    assert np.max(np.abs(out[1][:64].real - np.linspace(-1, 1, 64))) < 1e-3


def _lift_case(limbs: int, bits: int, seed: int) -> tuple[RingSpec, list[int], np.ndarray]:
    ring = RingSpec.generate(64, limbs)
    rnd = random.Random(seed)
    values = [rnd.randrange(-(1 << bits), 1 << bits) for _ in range(ring.N)]
    values[:4] = [0, -1, (1 << bits) - 1, -(1 << bits) + 1]
    return ring, values, _residues(values, ring)


@pytest.mark.parametrize("montgomery", [False, True])
def test_prefix_check_in_floats_accepts_the_lift_and_refuses_any_other_residue(montgomery):
    """The prefix lift's check (`_matches`, one exact float64 matrix product) against the
    integers themselves: it passes for the residues of the values and fails when any one residue
    of a checked row is off by one — at the first, a middle and the last row, positive and
    negative values; the u64 check says the same."""
    ring, _, res = _lift_case(12, 100, 3)
    k = rns._prefix_for(ring, 100)
    assert k < ring.limbs
    digits, above = rns._garner_digits(res[:k], ring.sub(0, k))
    words = to_mont(res, get_tables(ring)) if montgomery else res
    check = rns._matches_float
    assert check(words, ring, k, digits, above, montgomery=montgomery)
    if not montgomery:
        assert rns._matches(res, ring, k, digits, above)
    for row, col in [(k, 0), (k, 1), ((k + ring.limbs) // 2, 7), (ring.limbs - 1, ring.N - 1)]:
        bad = words.copy()
        bad[row, col] = (int(bad[row, col]) + 1) % ring.moduli[row]
        assert not check(bad, ring, k, digits, above, montgomery=montgomery), (row, col)
        if not montgomery:
            assert not rns._matches(bad, ring, k, digits, above)
    # a digit of the prefix off by one is refused too (the check is not only of the residues)
    off = digits.copy()
    off[0, 5] = (int(off[0, 5]) + 1) % ring.moduli[0]
    assert not check(words, ring, k, off, above, montgomery=montgomery)


@pytest.mark.parametrize("bits,limbs", [(100, 12), (70, 12), (1020, 40)])
def test_montgomery_lift_gives_the_standard_lift_floats(bits, limbs):
    """centered_floats(montgomery=True) of the Montgomery words gives the very floats of the
    standard residues' lift: values below the prefix bound, one far above it (the whole basis),
    and a prefix longer than the float check takes (k > 32: the u64 check)."""
    ring, values, res = _lift_case(limbs, min(bits, 60), 5)
    if bits == 70:
        values[9] = (1 << 300) + 7
        res = _residues(values, ring)
    words = to_mont(res, get_tables(ring))
    want = centered_floats(res, ring, 0, bits=bits)
    got = centered_floats(words, ring, 0, bits=bits, montgomery=True)
    assert np.array_equal(got.view(np.int64), want.view(np.int64))
    assert abs(got[9] - values[9]) <= abs(values[9]) * 2.0 ** -48 and got[1] == -1.0  # ints
    if bits == 1020:
        assert rns._prefix_for(ring, bits) > rns._FLOAT_CHECK_MAX_K


def _has_cc() -> bool:
    from ren.backend import cpu

    try:
        cpu.cpu_flags()
    except ren.RenError:
        return False
    return True


@pytest.mark.skipif(not _has_cc(), reason="the compiled lift needs a C compiler")
@pytest.mark.parametrize("big", [False, True])
def test_compiled_lift_gives_the_numpy_lift_words(big):
    """The compiled prefix lift (digits, sign and check in C over OpenMP threads) gives the
    NumPy lift's floats word for word at 1 and 2 threads, for the Python ints' values; a value
    past the prefix bound makes it decline (None), and `_lift` then gives the whole-basis lift."""
    N = 2 * lift.LIFT_PIECE
    ring = RingSpec.generate(N, 9)
    bits = 70
    rnd = random.Random(11)
    values = [rnd.randrange(-(1 << bits), 1 << bits) for _ in range(N)]
    values[:3] = [0, -1, (1 << bits) - 1]
    if big:
        values[N - 2] = -(1 << 200) + 3
    words = to_mont(_residues(values, ring), get_tables(ring))
    want = lift.lift(words, ring, 0, bits)
    assert abs(want[N - 2] - values[N - 2]) <= abs(values[N - 2]) * 2.0 ** -48
    for t in (1, 2):
        with ren.settings.override(REN_CPU_THREADS=t):
            ren.backend.cpu.CpuDevice("cpu").set_threads(t)
            got = lift.lift_compiled(words, ring, 0, bits)
            whole = lift.lift(words, ring, 0, bits, compiled=True)
        assert np.array_equal(whole.view(np.int64), want.view(np.int64)), t
        if big:
            assert got is None
        else:
            assert got is not None and np.array_equal(got.view(np.int64), want.view(np.int64))
    ren.backend.cpu.CpuDevice("cpu").set_threads(None)


@pytest.mark.skipif(not _has_cc(), reason="the cpu device needs a C compiler")
def test_decode_on_the_cpu_device_is_the_same_at_one_and_two_threads():
    from ren.backend import backend_override, cpu
    from ren.ckks import CKKSParams, Decryptor, Encoder, Encryptor, KeyGenerator

    params = CKKSParams(N=2 * lift.LIFT_PIECE, depth=2, scale_bits=30, first_bits=40,
                        insecure=True)
    x = np.linspace(-1, 1, 64)
    with backend_override("python", cpu.open_device), ren.random.seeded(2):
        kg = KeyGenerator(params)
        enc = Encoder(params)
        ct = Encryptor(params, kg.public_key()).encrypt(enc.encode(x))
        pt = Decryptor(params, kg.secret_key()).decrypt(ct)
        out = {}
        for t in (1, 2):
            with ren.settings.override(REN_CPU_THREADS=t):
                cpu.CpuDevice("cpu").set_threads(t)
                out[t] = enc.decode(pt)
        cpu.CpuDevice("cpu").set_threads(None)
    ref = Encoder(params).decode(pt)  # the "python" device's plaintext words, NumPy lift
    assert np.array_equal(out[1].view(np.float64), out[2].view(np.float64))
    assert np.array_equal(out[1].view(np.float64), ref.view(np.float64))
    assert np.max(np.abs(out[1][:64].real - x)) < 1e-3
