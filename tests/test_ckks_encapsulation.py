"""Sparse-secret encapsulation (`ren.ckks.encapsulation`): bootstrapping under a dense ternary
secret through an ephemeral sparse one, at N = 256 (insecure, seconds).  The two key switches
against the plaintext, the bound on I they buy (against the dense secret's), the whole
bootstrapping and computing after it, its JIT replay, the small ring's primes and the keys'
rings, and bad inputs."""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import pytest
from ckks_helpers import precision_bits

import ren
from ren.ckks import (
    Decryptor,
    Encoder,
    Encryptor,
    Evaluator,
    InsecureParametersWarning,
    KeyGenerator,
    MissingKeyError,
    OutOfLevelsError,
)
from ren.ckks.ciphertext import Ciphertext
from ren.ckks.circuits.bootstrap import Bootstrapper, bootstrap_params_small, bound_K
from ren.ckks.embedding import embed_inverse
from ren.ckks.encapsulation import DEFAULT_WEIGHT, Encapsulation, EncapsulationKeys
from ren.ckks.params import CKKSParams
from ren.errors import ParameterError


@pytest.fixture(scope="module", autouse=True)
def _python_run_only(request):
    """Bootstrappings take seconds: this module runs once, in the "python" run."""
    if request.config.getoption("--ren-backend") != "python":
        pytest.skip("bootstrapping runs in the python run only")


def dense_params(N: int = 256) -> CKKSParams:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureParametersWarning)
        return CKKSParams(N=N, depth=14, scale_bits=60, first_bits=62, secret="ternary",
                          insecure=True)


@pytest.fixture(scope="module")
def dense():
    params = dense_params()
    bt = Bootstrapper(params)
    with ren.random.seeded(11):
        kg = KeyGenerator(params)
        ev = Evaluator(params, kg.relin_key(), bt.keys(kg))
        ek = bt.encapsulation_keys(kg)
        encryptor = Encryptor(params, kg.public_key())
    return params, bt, kg, ev, ek, Encoder(params), encryptor, Decryptor(params, kg.secret_key())


def test_a_dense_secret_encapsulates_by_default_and_saves_a_level(dense):
    params, bt, *_ = dense
    assert params.hamming_weight is None  # dense ternary: what the HE standard assumes
    assert bt.ephemeral_weight == DEFAULT_WEIGHT == 32 and bt.encapsulation is not None
    # I is bounded by the ephemeral secret's weight, not the dense one's
    assert bt.K == bound_K(params, 32) == 13 < bound_K(params) == 28
    assert bt.double_angles == 4 and bt.levels_used == 2 + (5 + 4) + 2 == 13
    without = Bootstrapper(params, ephemeral_weight=0)
    assert without.encapsulation is None and without.K == 28 and without.double_angles == 5
    # a sparse secret does not encapsulate unless asked
    small = bootstrap_params_small()
    assert Bootstrapper(small).encapsulation is None
    assert Bootstrapper(small, ephemeral_weight=8).K == bound_K(small, 8) == 7


def test_the_small_ring_and_the_keys(dense):
    params, bt, _kg, _ev, ek, *_ = dense
    enc = bt.encapsulation
    q0 = params.ring(0).moduli
    assert enc.small.chain == q0 and enc.small.depth == 0 and enc.small.dnum == 1
    assert len(enc.small.special_moduli) == len(q0)  # P' as large as Q_0: a tiny key-switch error
    assert not set(enc.small.special_moduli) & set(params.key_ring.moduli)  # fresh primes
    assert all(p % (2 * params.N) == 1 and p.bit_length() == 31
               for p in enc.small.special_moduli)
    assert enc.small.hamming_weight == 32 and enc.small.log2_QP < 125
    assert isinstance(ek, EncapsulationKeys) and ek.weight == 32
    assert ek.to_sparse.params == enc.small and ek.to_dense.params == params
    assert ek.to_sparse.b[0].ring == enc.small.key_ring
    assert ek.to_dense.b[0].ring == params.key_ring
    assert ek.nbytes == ek.to_sparse.nbytes + ek.to_dense.nbytes
    assert ek.to_sparse.nbytes * 4 < ek.to_dense.nbytes  # the dense-to-sparse key is small
    assert "weight 32" in repr(ek)


def test_the_key_switches_round_trip_and_bound_I(dense):
    """to_sparse then to_dense at level 0 decrypts to the message (both switches against the
    plaintext); after to_sparse, ModRaise gives t = m + Q_0·I with |I| <= K for the ephemeral
    weight, where the dense secret's own I is larger."""
    params, bt, _kg, _ev, ek, encoder, encryptor, dec = dense
    enc = bt.encapsulation
    x = np.random.default_rng(5).uniform(-1, 1, params.slots)
    with ren.random.seeded(6):
        ct = encryptor.encrypt(encoder.encode(x, level=0, scale=bt.input_scale))
    back = enc.to_dense(enc.to_sparse(ct, ek), ek)
    assert back.level == 0 and back.scale == ct.scale
    assert precision_bits(encoder.decode(dec.decrypt(back)), x) > 35
    m = embed_inverse(x.astype(complex), params.N)

    def largest_I(raised) -> float:
        t = embed_inverse(encoder.decode(dec.decrypt(raised)), params.N)
        return float(np.max(np.abs(np.round((t - m) / bt.K0))))

    sparse_I = largest_I(enc.to_dense(bt.mod_raise(enc.to_sparse(ct, ek)), ek))
    dense_I = largest_I(bt.mod_raise(ct))
    # about 3 standard deviations √(h/12) over 256 coefficients: ~5 for h = 32, ~12 for h ≈ 170;
    # the maxima of one draw vary (6 and 11 with this seed since the bootstrapper draws fewer
    # Galois keys before the ephemeral secret), so only the order is asserted beside the bounds
    assert 0 < sparse_I <= bt.K and sparse_I < dense_I <= bound_K(params)


def test_bootstrapping_a_dense_secret_and_computing_after_it(dense):
    params, bt, _kg, ev, ek, encoder, encryptor, dec = dense
    x = np.random.default_rng(7).uniform(-1, 1, params.slots)
    y = np.random.default_rng(8).uniform(-1, 1, params.slots)
    with ren.random.seeded(9):
        cx, cy = (encryptor.encrypt(encoder.encode(v, level=1)) for v in (x, y))
    fn = ren.jit(lambda c: bt.bootstrap(ev, c, ek))
    bx, by = fn(cx), fn(cy)  # the second is a replay
    assert fn.hits == 1 and bx.level == by.level == bt.output_level == 1
    assert precision_bits(encoder.decode(dec.decrypt(bx)), x) > 24
    eager = bt.bootstrap(ev, cy, ek)
    assert all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(by.parts, eager.parts))
    prod = ev.rescale(ev.multiply(bx, by))
    assert prod.level == 0 and precision_bits(encoder.decode(dec.decrypt(prod)), x * y) > 22


def test_bad_inputs(dense):
    params, bt, kg, ev, ek, encoder, encryptor, _dec = dense
    ct = encryptor.encrypt(encoder.encode([0.5], level=1))
    with pytest.raises(MissingKeyError, match=r"encapsulation keys \(to_sparse, to_dense\).*"
                                              r"weight 32.*encapsulation_keys\(keygen\)"):
        bt.bootstrap(ev, ct)
    plain = Bootstrapper(params, ephemeral_weight=0)
    with pytest.raises(ParameterError, match="does not encapsulate"):
        plain.bootstrap(ev, ct, ek)
    with pytest.raises(ParameterError, match="does not encapsulate"):
        plain.encapsulation_keys(kg)
    for bad in (-1, params.N + 1, 2.5, "32", True):
        with pytest.raises(ParameterError, match="ephemeral_weight must be an int"):
            Bootstrapper(params, ephemeral_weight=bad)
    for bad in (0, params.N + 1, True):
        with pytest.raises(ParameterError, match=r"sparse secret weight must be an int in "
                                                 r"\[1, 256\]"):
            Encapsulation(params, bad)
    with pytest.raises(ParameterError, match="needs CKKSParams"):
        Encapsulation(params.key_ring, 32)
    enc = bt.encapsulation
    with pytest.raises(OutOfLevelsError, match="level-0"):
        enc.to_sparse(ct, ek)
    with pytest.raises(ParameterError, match="expected EncapsulationKeys"):
        enc.to_sparse(ct, ev.relin_key)
    other = Encapsulation(params, 16)  # another ephemeral ring: another small parameter set
    with pytest.raises(ParameterError, match="belong to other parameters"):
        other.to_dense(ct, ek)
    with pytest.raises(ParameterError, match="same parameters"):
        enc.keys(KeyGenerator(bootstrap_params_small()))
    cube = Ciphertext((*ct.parts, ct.c1), ct.scale, ct.level, params)  # relinearize first
    for bad in (cube, encryptor.encrypt(encoder.encode([0.5], level=0)).c0):
        with pytest.raises(ParameterError, match="two-part ciphertext"):
            enc.to_dense(bad, ek)
    with pytest.raises(ParameterError, match="two-part ciphertext"):  # other parameters
        small = bootstrap_params_small()
        enc.to_dense(Encryptor(small, KeyGenerator(small).public_key()).encrypt(
            Encoder(small).encode([0.5])), ek)
    # the small ring of insecure parameters is insecure too, without a second warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Encapsulation(params, 32)


def test_the_example_runs_with_a_dense_secret(capsys):
    import runpy
    from pathlib import Path

    assert bootstrap_params_small(secret="ternary").depth == 15  # 13 used, 2 left
    example = Path(__file__).resolve().parent.parent / "examples" / "ckks_bootstrap.py"
    res = runpy.run_path(str(example), run_name="example")["main"](["--small", "--dense"])
    out = capsys.readouterr().out
    assert "encapsulation: an ephemeral sparse secret of weight 32" in out
    assert "uses 13 of 15 levels" in out and "level 2 regained" in out
    assert res["levels"] == 2 and res["after"] > 25 and res["again"] > 23


def test_the_keys_serialize_and_travel(dense):
    """dumps/loads (full and compact) give keys that bootstrap bit for bit like the originals,
    the ren.distributed wire carries them, and bad containers are refused."""
    from ren.ckks import dumps, loads
    from ren.ckks.serialize import serialized_size
    from ren.distributed.wire import Codec
    from ren.errors import SerializationError

    params, bt, kg, _ev, ek, encoder, encryptor, _dec = dense
    assert ek.params is params
    with ren.random.seeded(12):
        ct = encryptor.encrypt(encoder.encode([0.25, -0.5], level=0, scale=bt.input_scale))
    enc = bt.encapsulation
    want = enc.to_dense(enc.to_sparse(ct, ek), ek)
    full, compact = dumps(ek), dumps(ek, compact=True)
    assert len(compact) < len(full) / 1.8 and serialized_size(ek) == len(full)
    for blob in (full, compact, dumps(ek, form="montgomery")):
        back = loads(blob, params)
        assert isinstance(back, EncapsulationKeys) and back.weight == 32
        assert back.to_sparse.params == enc.small and back.to_dense.params == params
        got = enc.to_dense(enc.to_sparse(ct, back), back)
        assert all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(got.parts, want.parts))
    codec = Codec()
    wire = codec.encode({"ek": ek}, "keys")
    assert dumps(Codec(codec.params).decode(wire)["ek"]) == full
    def resealed(blob: bytes, old: bytes, new: bytes) -> bytes:  # a forged, valid container
        body = blob[:-16].replace(old, new)
        return body + hashlib.sha256(body).digest()[:16]

    with pytest.raises(SerializationError, match=r"'weight' must be an int in \[1, 256\]"):
        loads(resealed(full, b'"weight":32', b'"weight":-1'), params)
    with pytest.raises(SerializationError, match="checksum mismatch"):
        loads(full.replace(b'"weight":32', b'"weight":16'), params)
    other = dumps(Bootstrapper(params, ephemeral_weight=16).encapsulation_keys(kg))
    assert loads(other, params).to_sparse.params.hamming_weight == 16
