"""The decoder's fused lift and embedding on the "cpu" device (`Encoder._decode_fused`, issue 42
§4): pieces of `ren.ckks.lift.LIFT_PIECE` columns each run the compiled prefix lift
(`ren.ckks.lift.PrefixLift`), the scaling and both quarter transforms' inputs
(`ren.ckks.embedding.quarter_inputs`) on the host pool, then the two transforms
(`embed_quarters`).  Checked bit for bit against the unfused path (`lift`, then `embed`) at 1,
2 and 3 threads, and where a value needs the whole basis (the fused path declines)."""

from __future__ import annotations

import random
import shutil
import threading
import time

import numpy as np
import pytest

import ren
from ren.ckks import embedding, lift
from ren.ckks import encoder as encoder_mod
from ren.ring import RingSpec
from ren.ring.modarith import to_mont
from ren.ring.tables import get_tables

_CC = shutil.which("cc") is not None or shutil.which("gcc") is not None
needs_cc = pytest.mark.skipif(not _CC, reason="the compiled lift needs a C compiler")


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.int64)


@pytest.mark.parametrize("log_n", [14, 16])
def test_quarter_inputs_in_pieces_give_embeds_floats(log_n):
    """`quarter_inputs` over LIFT_PIECE / 4 columns at a time, then `embed_quarters`, is
    `embed` bit for bit at 1 and 2 threads (at N = 2^16 NumPy would elide `embed`'s temporary
    and swap the complex product's operands: `_twisted` fixes the order for both)."""
    N = 1 << log_n
    q, w = N // 4, lift.LIFT_PIECE // 4
    m = np.random.default_rng(log_n).uniform(-1e9, 1e9, N)
    for t in (1, 2):
        want = embedding.embed(m, N, t)
        b = np.empty((2, q), dtype=np.complex128)
        for r in range(0, q, w):
            embedding.quarter_inputs(tuple(m[r + i * q:r + i * q + w] for i in range(4)), N, r,
                                     b)
        assert np.array_equal(_bits(embedding.embed_quarters(b, N, t)), _bits(want)), t


@needs_cc
@pytest.mark.parametrize("big", [False, True])
def test_prefix_lift_pieces_give_the_lifts_floats(big):
    """`PrefixLift.floats` of four ranges N/4 apart (one C call, one `_to_floats`) gives
    `lift_compiled`'s floats of those columns; a value past the prefix declines (None)."""
    N = 2 * lift.LIFT_PIECE
    ring = RingSpec.generate(N, 9)
    bits = 70
    rnd = random.Random(5)
    values = [rnd.randrange(-(1 << bits), 1 << bits) for _ in range(N)]
    values[:3] = [0, -1, (1 << bits) - 1]

    def words_of(vals: list[int]) -> np.ndarray:
        return to_mont(np.array([[v % qq for v in vals] for qq in ring.moduli],
                                dtype=np.uint32), get_tables(ring))

    want = lift.lift(words_of(values), ring, 0, bits)  # the prefix lift's floats: no value past
    if big:  # one value past the prefix, in the first piece's second range
        values[N // 4 + 7] = (1 << 200) - 5
    pl = lift.prefix_lift(words_of(values), ring, 0, bits)
    assert pl is not None
    q, w = N // 4, lift.LIFT_PIECE // 4
    for r in range(0, q, w):
        got = pl.floats(r, w, 4, q)
        cols = np.concatenate([np.arange(r + i * q, r + i * q + w) for i in range(4)])
        if big and r == 0:
            assert got is None
        else:
            assert got is not None and np.array_equal(_bits(got), _bits(want[cols])), r


@needs_cc
@pytest.mark.filterwarnings("ignore::ren.rlwe.errors.InsecureParametersWarning")
def test_fused_decode_is_the_unfused_decode_at_every_thread_count(monkeypatch):
    """A decryption's decode on the "cpu" device at 1, 2 and 3 threads: the fused path runs
    (its pieces are counted) and gives the unfused path's floats bit for bit."""
    from ren.backend import backend_override, cpu
    from ren.ckks import CKKSParams, Decryptor, Encoder, Encryptor, KeyGenerator

    params = CKKSParams(N=2 * lift.LIFT_PIECE, depth=6, scale_bits=30, first_bits=40,
                        insecure=True)
    x = np.random.default_rng(3).uniform(-1, 1, params.N // 2)
    pieces: list[int] = []
    real_floats = lift.PrefixLift.floats

    def counted(self, *a):
        pieces.append(1)
        return real_floats(self, *a)

    monkeypatch.setattr(lift.PrefixLift, "floats", counted)
    fused = encoder_mod.Encoder._decode_fused
    out = {}
    with backend_override("python", cpu.open_device), ren.random.seeded(4):
        kg = KeyGenerator(params)
        enc = Encoder(params)
        pt = Decryptor(params, kg.secret_key()).decrypt(
            Encryptor(params, kg.public_key()).encrypt(enc.encode(x)))
        try:
            for t in (1, 2, 3):
                with ren.settings.override(REN_CPU_THREADS=t):
                    cpu.CpuDevice("cpu").set_threads(t)
                    pieces.clear()
                    out[t, True] = enc.decode(pt)
                    assert len(pieces) == params.N // lift.LIFT_PIECE, t
                    monkeypatch.setattr(encoder_mod.Encoder, "_decode_fused",
                                        lambda *a, **k: None)
                    out[t, False] = enc.decode(pt)
                    monkeypatch.setattr(encoder_mod.Encoder, "_decode_fused", fused)
        finally:
            cpu.CpuDevice("cpu").set_threads(None)
    ref = _bits(out[1, False])
    for key, z in out.items():
        assert np.array_equal(_bits(z), ref), key
    assert np.max(np.abs(out[1, True] - x)) < 1e-3


@needs_cc
@pytest.mark.filterwarnings("ignore::ren.rlwe.errors.InsecureParametersWarning")
def test_fused_decode_declines_a_value_past_the_prefix_and_the_unfused_path_lifts_it():
    """A plaintext with one coefficient far past the prefix bound: the fused path returns None
    (a piece's check fails) and `decode` gives the whole-basis lift's slots, the same at 1 and
    2 threads as the unfused path's."""
    from ren.backend import backend_override, cpu
    from ren.ckks import CKKSParams, Encoder
    from ren.ckks.ciphertext import Plaintext
    from ren.poly import Poly

    params = CKKSParams(N=2 * lift.LIFT_PIECE, depth=6, scale_bits=30, first_bits=40,
                        insecure=True)
    coeffs = [0] * params.N
    coeffs[5] = 1 << 30
    coeffs[params.N // 2 + 3] = -(1 << 150)  # past the prefix (bits = 30 + 64)
    out = {}
    with backend_override("python", cpu.open_device):
        enc = Encoder(params)
        pt0 = enc.encode(np.zeros(params.N // 2))
        ring = pt0.poly.ring
        coeff_poly = Poly.from_coefficients(coeffs, ring).realize()
        pt = Plaintext(coeff_poly.ntt(), pt0.scale, pt0.level, params)
        words = encoder_mod._host_words(coeff_poly)
        shift = max(0, ring.Q.bit_length() - 1000)
        bits = 30 + 64
        try:
            for t in (1, 2):
                with ren.settings.override(REN_CPU_THREADS=t):
                    cpu.CpuDevice("cpu").set_threads(t)
                    assert enc._decode_fused(words, ring, shift, bits, 1.0, pt0.scale, t) is None
                    out[t] = enc.decode(pt)
        finally:
            cpu.CpuDevice("cpu").set_threads(None)
    assert np.array_equal(_bits(out[1]), _bits(out[2]))
    assert np.all(np.isfinite(out[1]))


@needs_cc
@pytest.mark.filterwarnings("ignore::ren.rlwe.errors.InsecureParametersWarning")
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_pieces_error_reaches_the_caller_and_no_transform_waits_for_ever(monkeypatch,
                                                                           threads):
    """A piece that raises: `decode` re-raises it at 1, 2 and 3 threads; a thread that took a
    transform (waiting for the pieces) is released instead of waiting for pieces nobody runs."""
    from ren.backend import backend_override, cpu
    from ren.ckks import CKKSParams, Encoder
    from ren.ckks.ciphertext import Plaintext

    params = CKKSParams(N=2 * lift.LIFT_PIECE, depth=6, scale_bits=30, first_bits=40,
                        insecure=True)
    calls: list[int] = []
    real_floats = lift.PrefixLift.floats

    def failing(self, *a):
        calls.append(1)
        if len(calls) == 2:  # (the last of the 2 pieces at N = 2^14)
            time.sleep(0.05)  # long enough for the other threads to take the transforms
            raise RuntimeError("piece 2")
        return real_floats(self, *a)

    with backend_override("python", cpu.open_device):
        enc = Encoder(params)
        kept = enc.encode(np.linspace(-1, 1, params.N // 2))
        pt = Plaintext(kept.poly, kept.scale, kept.level, params)  # (no values kept to return)
        monkeypatch.setattr(lift.PrefixLift, "floats", failing)
        try:
            with ren.settings.override(REN_CPU_THREADS=threads):
                cpu.CpuDevice("cpu").set_threads(threads)
                got: list[BaseException] = []

                def run() -> None:
                    try:
                        enc.decode(pt)
                    except BaseException as e:
                        got.append(e)

                t = threading.Thread(target=run, daemon=True)  # (a hang must not hang pytest)
                t.start()
                t.join(20)
                assert not t.is_alive(), "decode hangs after a piece's error"
                assert len(got) == 1 and "piece 2" in str(got[0])
        finally:
            cpu.CpuDevice("cpu").set_threads(None)
