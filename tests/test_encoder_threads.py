"""The encoder's host work, the serial part of encrypt and decrypt (issue 42 §4).

Decode: `embed` as two quarter-length transforms, side by side on the "cpu" device's threads.
Checked: the same floats at one and two threads; the error against exact evaluation no larger
than the single length-N FFT's (a NumPy reference); the second quarter really runs on another
thread; bad thread counts refused.  Encode: fewer passes over the coefficients, the same words
as the plain NumPy recipe (the length-N FFT, untwist, scale, round) bit for bit; from N = 2^14
up that FFT's two halves side by side, the same words at one, two and three threads."""

from __future__ import annotations

import contextlib
import dataclasses
import pickle
import shutil
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ren
from ren.ckks import embedding, hostpool
from ren.ckks.embedding import embed, slot_powers
from ren.errors import ParameterError


def numpy_embed(m: np.ndarray, N: int) -> np.ndarray:
    """The reference: slot j is output (5^j − 1)/2 of one length-N inverse FFT of m_i·ζ^i."""
    t = (slot_powers(N) - 1) // 2
    return np.fft.ifft(m * np.exp(1j * np.pi * np.arange(N) / N))[t] * N


def exact_embed(m: np.ndarray, N: int) -> np.ndarray:
    """z_j = Σ_i m_i ζ^(i·e_j) by direct evaluation in long double (the exponent reduced mod 2N
    first, so the angles are exact multiples of π/N)."""
    k = np.outer(slot_powers(N), np.arange(N)) % (2 * N)
    angle = np.pi * k.astype(np.longdouble) / N
    ml = m.astype(np.longdouble)
    return (np.cos(angle) @ ml).astype(np.float64) + 1j * (np.sin(angle) @ ml).astype(np.float64)


def numpy_coefficients(z: np.ndarray, N: int, scale: float) -> np.ndarray:
    """The encoder's words by the plain recipe: z and conj(z) at the odd powers 5^j and −5^j,
    one length-N FFT (from N = 2^14 up: its even and odd outputs as two N/2 transforms, one
    split by decimation in frequency), divided by N, untwisted by conj(ζ^i), real part, scaled,
    rounded."""
    e = slot_powers(N)
    v = np.zeros(N, dtype=np.complex128)
    v[(e - 1) // 2] = z
    v[(2 * N - e - 1) // 2] = np.conj(z)
    untwist = np.conj(np.exp(1j * np.pi * np.arange(N) / N))
    if N < 1 << 14:
        m = (np.fft.fft(v) / N * untwist).real
    else:
        h, m = N // 2, np.empty(N)
        m[0::2] = (np.fft.fft(v[:h] + v[h:]) * (untwist[0::2] / N)).real
        twiddle = np.exp(-2j * np.pi * np.arange(h) / N)
        m[1::2] = (np.fft.fft((v[:h] - v[h:]) * twiddle) * (untwist[1::2] / N)).real
    return np.rint(m * scale).astype(np.int64)


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view(np.int64)


@settings(max_examples=30, deadline=None)
@given(log_n=st.integers(1, 11), seed=st.integers(0, 2**32 - 1),
       magnitude=st.sampled_from([1e-3, 1.0, 1e6, 2.0**60]))
def test_embed_is_the_same_at_one_and_two_threads_and_matches_numpy(log_n, seed, magnitude):
    N = 1 << log_n
    m = np.random.default_rng(seed).uniform(-magnitude, magnitude, N)
    one, two = embed(m, N), embed(m, N, threads=2)
    assert np.array_equal(_bits(one), _bits(two))
    ref = numpy_embed(m, N)
    assert np.max(np.abs(one - ref)) <= 1e-13 * max(1, log_n) * np.sum(np.abs(m)), (N, magnitude)


@pytest.mark.parametrize("N", [16, 64, 256, 512])
def test_embed_error_is_no_larger_than_the_length_n_transforms(N):
    """Against exact evaluation: the quarter-length transforms lose no more than the one
    length-N FFT the encoder used before (a few ulps of the largest slot either way)."""
    for seed in range(3):
        m = np.random.default_rng(seed).normal(size=N) * 1e4
        exact = exact_embed(m, N)
        new = np.max(np.abs(embed(m, N, threads=2) - exact))
        old = np.max(np.abs(numpy_embed(m, N) - exact))
        assert new <= 1.5 * old + 1e-15 * np.max(np.abs(exact)), (N, seed, new, old)


def _on_pool() -> bool:
    return threading.current_thread().name.startswith(hostpool.POOL_PREFIX)


def _waiting_for_a_helper(waits: bool):
    """For a recorder: a function the caller's first part calls, which (with `waits`) returns
    once another part has started on a pool thread, or after 5 s, so that a helper's part runs
    on the pool however late the helper wakes (`_side_by_side` lets the caller take a part a
    helper has not started); and the one the pool's part calls."""
    started = threading.Event()

    def first() -> None:
        if waits and not _on_pool():
            started.wait(5.0)

    def other() -> None:
        if _on_pool():
            started.set()
    return first, other


@contextlib.contextmanager
def recording_quarters(waits: bool = False):
    """A recorder of the threads `embed`'s quarters run on, installed for the test only
    (`_embed_quarter` wrapped; the production code counts nothing): yields a list of
    (which quarter, whether it ran on a lift-pool thread).  `waits`: quarter 0 on the caller
    waits for quarter 1 to start on the pool (`_waiting_for_a_helper`)."""
    ran: list[tuple[int, bool]] = []
    quarter = embedding._embed_quarter
    first, other = _waiting_for_a_helper(waits)

    def recorded(m, N, which, out):
        ran.append((which, _on_pool()))
        (first if which == 0 else other)()
        quarter(m, N, which, out)

    embedding._embed_quarter = recorded
    try:
        yield ran
    finally:
        embedding._embed_quarter = quarter


def test_the_odd_quarter_runs_on_a_pool_thread_at_two_threads():
    m = np.random.default_rng(5).normal(size=1 << 12)
    with recording_quarters() as ran:
        one = embed(m, 1 << 12)
        assert sorted(ran) == [(0, False), (1, False)]  # one thread: both on the caller
    with recording_quarters(waits=True) as ran:
        two = embed(m, 1 << 12, threads=2)
        assert sorted(ran) == [(0, False), (1, True)]  # the odd one on the pool
        ran.clear()
        embed(m[:8], 8, threads=2)  # too short to split: one transform on the caller
        assert ran == []
    assert np.array_equal(_bits(one), _bits(two))


def test_embed_takes_integer_and_complex_coefficients_and_refuses_wrong_lengths():
    from ren.errors import ShapeError

    N = 64
    ints = np.arange(N) - 20
    assert np.array_equal(_bits(embed(ints, N, threads=2)), _bits(embed(ints.astype(float), N)))
    z = np.random.default_rng(2).normal(size=N) + 1j * np.random.default_rng(3).normal(size=N)
    assert np.allclose(embed(z, N), numpy_embed(z, N), atol=1e-12)  # complex: not split
    with pytest.raises(ShapeError, match="embed: expected the N = 64 coefficients"):
        embed(np.zeros(32), N)


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_bad_thread_counts_are_refused(bad):
    with pytest.raises(ParameterError, match="embed: threads"):
        embed(np.zeros(64), 64, threads=bad)


def test_a_bad_device_thread_count_is_refused_by_the_setting():
    with pytest.raises(ren.RenError, match="REN_CPU_THREADS"), \
            ren.settings.override(REN_CPU_THREADS=0):
        ren.settings.get("REN_CPU_THREADS")


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                    reason="the cpu device needs a C compiler")
@pytest.mark.filterwarnings("ignore::ren.rlwe.errors.InsecureParametersWarning")
@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_decode_on_the_cpu_device_splits_and_agrees_at_one_and_two_threads(seed):
    """A random vector through encode → decode on the "cpu" device: the same slots at 1 and 2
    REN_CPU_THREADS (the 2-thread decode used the pool), equal to NumPy's length-N embedding
    of the same plaintext within a few ulps, and the encoded words do not depend on threads."""
    from ren.backend import backend_override, cpu
    from ren.ckks import CKKSParams, Encoder

    params = CKKSParams(N=1 << 10, depth=1, scale_bits=30, first_bits=40, insecure=True)
    x = np.random.default_rng(seed).uniform(-1, 1, 512) + 1j * np.random.default_rng(
        seed + 1).uniform(-1, 1, 512)
    out, words = {}, {}
    with backend_override("python", cpu.open_device):
        enc = Encoder(params)
        try:
            for t in (1, 2):
                with ren.settings.override(REN_CPU_THREADS=t):
                    cpu.CpuDevice("cpu").set_threads(t)
                    pt = enc.encode(x)
                    words[t] = pt.poly.intt().numpy()
                    with recording_quarters(waits=t == 2) as ran:
                        out[t] = enc.decode(pt)
                    assert sorted(ran) == [(0, False), (1, t == 2)]
        finally:
            cpu.CpuDevice("cpu").set_threads(None)
    assert np.array_equal(words[1], words[2])
    assert np.array_equal(_bits(out[1]), _bits(out[2]))
    coeffs = np.array(enc.coefficients(x, params.scale(params.depth)), dtype=np.float64)
    ref = numpy_embed(coeffs / float(params.scale(params.depth)), params.N)
    assert np.max(np.abs(out[1] - ref)) < 1e-12
    assert np.max(np.abs(out[1] - x)) < 1e-6


@settings(max_examples=40, deadline=None)
@given(log_n=st.integers(2, 15), seed=st.integers(0, 2**32 - 1),
       magnitude=st.sampled_from([1e-6, 1.0, 1e3]), scale_bits=st.integers(10, 50),
       count=st.floats(0, 1))
def test_encoded_words_are_the_numpy_recipes_bit_for_bit(log_n, seed, magnitude, scale_bits,
                                                        count):
    """`_coefficients` (and so every encoding) gives the plain recipe's words, and its bound
    (taken from max |m| instead of another pass) is their largest magnitude exactly."""
    from ren.ckks import Encoder

    N = 1 << log_n
    rng = np.random.default_rng(seed)
    k = int(count * N // 2)
    z = np.zeros(N // 2, complex)
    z[:k] = rng.uniform(-magnitude, magnitude, k) + 1j * rng.uniform(-magnitude, magnitude, k)
    enc = Encoder.__new__(Encoder)  # the arithmetic only: a stand-in for the parameters
    enc.params = SimpleNamespace(slots=N // 2, N=N, device="python")
    words, bound = enc._coefficients(z, 1 << scale_bits)
    want = numpy_coefficients(z, N, float(1 << scale_bits))
    assert isinstance(words, np.ndarray) and np.array_equal(words, want)
    assert bound == int(np.max(np.abs(want), initial=0))


@pytest.mark.filterwarnings("ignore::ren.rlwe.errors.InsecureParametersWarning")
def test_decrypt_and_decode_realize_once_and_give_the_same_slots():
    """`Decryptor.decrypt` realizes the plaintext's coefficient form with it: decrypt + decode
    is one realization (it was two), and the slots are those of a decoding that computes the
    coefficient form itself (a second decode of the same plaintext, and one of a plaintext
    whose poly was replaced, which must not use the kept form)."""
    from ren.ckks import CKKSParams, Decryptor, Encoder, Encryptor, KeyGenerator, Plaintext
    from ren.realization import Recorder, recording

    class Count(Recorder):
        def __init__(self) -> None:
            self.realizations = 0

        def on_realize(self, nodes) -> None:
            self.realizations += 1

    params = CKKSParams(N=64, depth=1, scale_bits=30, first_bits=40, insecure=True)
    with ren.random.seeded(3):
        kg = KeyGenerator(params)
        enc = Encoder(params)
        x = np.linspace(-1, 1, 32)
        ct = Encryptor(params, kg.public_key()).encrypt(enc.encode(x))
        ct.c0.realize(), ct.c1.realize()
        y = Encryptor(params, kg.public_key()).encrypt(enc.encode(x[::-1]))
        dec = Decryptor(params, kg.secret_key())
        with recording(Count()) as count:
            pt = dec.decrypt(ct)
            first = enc.decode(pt)
        assert count.realizations == 1
        assert pt.coefficient_form is not None and pt.coefficient_form.is_realized
        # a plaintext without the form (the same poly, built anew) computes it: the same slots
        fresh = Plaintext(pt.poly, pt.scale, pt.level, params)
        assert fresh.coefficient_form is None
        assert np.array_equal(_bits(first), _bits(enc.decode(fresh)))
        assert np.array_equal(_bits(first), _bits(enc.decode(pt)))  # decoding again: the same
        other = dec.decrypt(y)
        swapped = Plaintext(other.poly, pt.scale, pt.level, params)
        pt2 = dec.decrypt(ct)
        pt2.poly = other.poly  # a plaintext whose poly changed: its kept form is not used
        assert pt2.coefficient_form is None
        assert np.array_equal(_bits(enc.decode(pt2)), _bits(enc.decode(swapped)))
        # not a dataclass field: not in the JIT's tree, nor in a pickle, nor in the repr
        pt3 = dec.decrypt(ct)
        assert "coefficient_form" not in {f.name for f in dataclasses.fields(pt3)}
        assert "_coefficient_form" not in vars(pickle.loads(pickle.dumps(pt3)))
        assert pickle.loads(pickle.dumps(pt3)).coefficient_form is None
        with pytest.raises(ParameterError, match="keep_coefficient_form: coeffs must be"):
            fresh.keep_coefficient_form(pt.poly)  # the NTT domain: not a coefficient form
        with pytest.raises(ParameterError, match="keep_coefficient_form: coeffs"):
            fresh.keep_coefficient_form(np.zeros(64))
    assert np.max(np.abs(first.real[:32] - x)) < 1e-4


@pytest.mark.parametrize("workers", [1, 2, 3, 5])
@pytest.mark.parametrize("count", [1, 2, 7, 8])
def test_side_by_side_keeps_the_order_and_the_helpers_take_parts(workers, count):
    """The lift's pieces: every start computed once, the results in order, the first on the
    calling thread; while the caller is held in its first piece, the helpers (one task each)
    take the others from the pool."""
    ran: dict[int, list[str]] = {}
    first, other = _waiting_for_a_helper(workers > 1 and count > 1)

    def fn(c):
        ran.setdefault(c, []).append(threading.current_thread().name)
        (first if c == 0 else other)()
        return c * c

    starts = range(0, 10 * count, 10)
    assert hostpool.side_by_side(fn, starts, workers) == [c * c for c in starts]
    assert sorted(ran) == list(starts) and all(len(v) == 1 for v in ran.values())
    assert ran[0] == [threading.current_thread().name]
    helped = [c for c in starts if ran[c][0].startswith(hostpool.POOL_PREFIX)]
    assert (len(helped) > 0) == (workers > 1 and count > 1)


def test_side_by_side_does_not_wait_for_a_helper_that_has_not_started():
    """A helper that is late (here: the pool's only thread busy for 3 s) holds nothing: the
    caller takes every piece and returns at once, its task cancelled."""
    busy, release = threading.Event(), threading.Event()

    def block() -> None:
        busy.set()
        release.wait(3.0)

    blocker = hostpool.pool(1).submit(block)
    assert busy.wait(5.0)
    ran: list[bool] = []
    try:
        t0 = time.perf_counter()
        out = hostpool.side_by_side(lambda c: ran.append(_on_pool()) or c + 1, range(6), 2)
        took = time.perf_counter() - t0
    finally:
        release.set()
        blocker.result()
    assert out == [1, 2, 3, 4, 5, 6] and ran == [False] * 6
    assert took < 1.0


def test_side_by_side_passes_a_pool_groups_error_on():
    def fn(c):
        if c == 3:
            raise ValueError("piece 3")
        return c

    with pytest.raises(ValueError, match="piece 3"):
        hostpool.side_by_side(fn, range(4), 2)


@pytest.mark.parametrize("log_n", [14, 15, 16])
def test_embed_inverse_splits_into_halves_the_same_at_every_thread_count(log_n):
    """From N = 2^14 up `embed_inverse` runs the odd half of its transform on a lift-pool
    thread at two threads and more: the same floats at 1, 2 and 3 threads, as close to the
    values' exact coefficients as the single length-N FFT (an independent reference: the
    coefficients of a slot vector made from known real coefficients by exact evaluation would
    cost N^2; instead the round trip through NumPy's length-N embedding), and the odd half
    really runs elsewhere."""
    N = 1 << log_n
    rng = np.random.default_rng(log_n)
    m = rng.uniform(-1, 1, N)
    z = numpy_embed(m, N)  # the slots of known coefficients m
    out, ran = {}, []
    half = embedding._inverse_half

    def spy(v, n, which, o):
        ran.append((which, _on_pool()))
        (first if which == 0 else other)()
        half(v, n, which, o)

    embedding._inverse_half = spy
    try:
        for t in (1, 2, 3):
            ran.clear()
            first, other = _waiting_for_a_helper(t > 1)
            out[t] = embedding.embed_inverse(z, N, t)
            assert sorted(ran) == [(0, False), (1, t > 1)]
    finally:
        embedding._inverse_half = half
    assert np.array_equal(_bits(out[1]), _bits(out[2]))
    assert np.array_equal(_bits(out[1]), _bits(out[3]))
    v = np.zeros(N, complex)
    e = slot_powers(N)
    v[(e - 1) // 2], v[(2 * N - e - 1) // 2] = z, np.conj(z)
    single = (np.fft.fft(v) / N * np.conj(np.exp(1j * np.pi * np.arange(N) / N))).real
    err, err_single = np.max(np.abs(out[1] - m)), np.max(np.abs(single - m))
    assert err < 1e-13 and err <= 2 * err_single
    assert 0 < np.max(np.abs(out[1] - single)) < 1e-14  # another recipe, barely other floats
    with pytest.raises(ParameterError, match="embed_inverse: threads"):
        embedding.embed_inverse(z, N, 0)


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                    reason="the cpu device needs a C compiler")
@pytest.mark.filterwarnings("ignore::ren.rlwe.errors.InsecureParametersWarning")
def test_encode_on_the_cpu_device_at_n_2_14_gives_the_recipes_words_at_one_and_two_threads():
    """Encoding on the "cpu" device takes its threads for the split transform: the words at 1
    and 2 REN_CPU_THREADS are the plain recipe's (`numpy_coefficients`) both times."""
    from ren.backend import cpu
    from ren.ckks import CKKSParams, Encoder

    params = CKKSParams(N=1 << 14, depth=1, scale_bits=30, first_bits=40, insecure=True,
                        device="cpu")
    x = np.random.default_rng(5).uniform(-1, 1, params.slots)
    want = numpy_coefficients(x.astype(complex), params.N, float(params.scale(params.depth)))
    enc = Encoder(params)
    try:
        for t in (1, 2):
            with ren.settings.override(REN_CPU_THREADS=t):
                cpu.CpuDevice("cpu").set_threads(t)
                words, _ = enc._coefficients(x, params.scale(params.depth))
                assert np.array_equal(words, want)
    finally:
        cpu.CpuDevice("cpu").set_threads(None)
